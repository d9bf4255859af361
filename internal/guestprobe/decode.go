package guestprobe

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/internal/vmifacts"
)

// Everything below is decoded from what the guest agent said, and the
// guest's owner controls that: the lists may be huge, the strings long or
// odd, the numbers negative or past int64. The decoders keep what the
// facts hold, bounded, and fail only when an answer is not KubeVirt's JSON
// at all; a bad entry is skipped and counted.

// osInfo is what the fold keeps of guestosinfo.
type osInfo struct {
	Hostname, OSName, KernelRelease, Timezone string
}

// guestAgentInfo is the part of kubevirtv1.VirtualMachineInstanceGuestAgentInfo
// the fold reads. Its user and filesystem lists (virt-launcher's copies of
// userlist and filesystemlist, capped at ten) are not decoded: a hostile
// size in them must not make the OS info unreadable. Its fsFreezeStatus
// is not read either: it is the agent's raw answer ("frozen" or "thawed",
// kv:pkg/virt-launcher/virtwrap/manager.go:2558-2568), from the same poller
// whose changes virt-handler copies into the VMI's status.fsFreezeStatus at
// once (kv:pkg/virt-handler/vm.go:931-942), so the VMI is at least as fresh
// as a probe and the engine reads only the VMI.
type guestAgentInfo struct {
	Hostname string                                       `json:"hostname"`
	OS       kubevirtv1.VirtualMachineInstanceGuestOSInfo `json:"os"`
	Timezone string                                       `json:"timezone"`
}

// list is a KubeVirt list answer (VirtualMachineInstanceGuestOSUserList,
// VirtualMachineInstanceFileSystemList) with its items left raw, so that
// one bad item is skipped rather than failing the answer.
type list struct {
	Items []json.RawMessage `json:"items"`
}

// decodeGuestOSInfo reads guestosinfo.
func decodeGuestOSInfo(body []byte) (osInfo, *Error) {
	var a guestAgentInfo
	if err := json.Unmarshal(body, &a); err != nil {
		return osInfo{}, badAnswer(SubGuestOSInfo, err)
	}
	name := a.OS.PrettyName
	if clean(name) == "" {
		name = a.OS.Name
	}
	return osInfo{
		Hostname: clean(a.Hostname), OSName: clean(name), KernelRelease: clean(a.OS.KernelRelease), Timezone: clean(a.Timezone),
	}, nil
}

// decodeUserList counts userlist's users with a name, up to
// vmifacts.MaxGuestUsers; skipped counts the items that are not a user.
func decodeUserList(body []byte) (users int32, skipped int, err *Error) {
	var l list
	if err := json.Unmarshal(body, &l); err != nil {
		return 0, 0, badAnswer(SubUserList, err)
	}
	for _, raw := range l.Items {
		if users == vmifacts.MaxGuestUsers {
			break
		}
		var u kubevirtv1.VirtualMachineInstanceGuestOSUser
		if json.Unmarshal(raw, &u) != nil || clean(u.UserName) == "" {
			skipped++
			continue
		}
		users++
	}
	return users, skipped, nil
}

// decodeFilesystemList keeps filesystemlist's filesystems, fullest first
// (then by mount point), one per mount point, at most
// vmifacts.MaxGuestFilesystems, their use rounded down to 5 points. An
// entry that is not a filesystem, has no mount point, or whose sizes do
// not make sense (not integers of int64, negative, total 0, used over
// total) is skipped and counted. A filesystem KubeVirt's own space alerts
// leave out (vmifacts.FilesystemIgnored: ISO, squashfs, pseudo filesystems,
// "System Reserved") is dropped before the cap, uncounted: a guest with
// dozens of snap loops, each 100% used, must not push its real disks out.
func decodeFilesystemList(body []byte) (fs []vmifacts.GuestFilesystem, skipped int, err *Error) {
	var l list
	if err := json.Unmarshal(body, &l); err != nil {
		return nil, 0, badAnswer(SubFilesystemList, err)
	}
	all := make([]vmifacts.GuestFilesystem, 0, min(len(l.Items), 4*vmifacts.MaxGuestFilesystems))
	for _, raw := range l.Items {
		var f kubevirtv1.VirtualMachineInstanceFileSystem
		if json.Unmarshal(raw, &f) != nil {
			skipped++
			continue
		}
		mp := clean(f.MountPoint)
		if mp == "" || f.TotalBytes <= 0 || f.UsedBytes < 0 || f.UsedBytes > f.TotalBytes {
			skipped++
			continue
		}
		typ := clean(f.FileSystemType)
		if vmifacts.FilesystemIgnored(typ, mp) {
			continue
		}
		all = append(all, vmifacts.GuestFilesystem{MountPoint: mp, Type: typ, UsedPercent: usedPercent(f.UsedBytes, f.TotalBytes)})
	}
	// The same mount point twice (a bind mount, btrfs subvolumes): the
	// fullest stays.
	slices.SortFunc(all, func(a, b vmifacts.GuestFilesystem) int {
		return cmp.Or(strings.Compare(a.MountPoint, b.MountPoint), cmp.Compare(b.UsedPercent, a.UsedPercent), strings.Compare(a.Type, b.Type))
	})
	all = slices.CompactFunc(all, func(a, b vmifacts.GuestFilesystem) bool { return a.MountPoint == b.MountPoint })
	slices.SortStableFunc(all, func(a, b vmifacts.GuestFilesystem) int { return cmp.Compare(b.UsedPercent, a.UsedPercent) })
	if len(all) == 0 {
		return nil, skipped, nil
	}
	if len(all) > vmifacts.MaxGuestFilesystems {
		all = all[:vmifacts.MaxGuestFilesystems]
	}
	return slices.Clip(all), skipped, nil
}

// usedPercent is used/total in percent rounded down to a multiple of 5,
// exact for any sizes with 0 ≤ used ≤ total, total > 0 (used × 100 is
// computed in 128 bits).
func usedPercent(used, total int) int32 {
	hi, lo := bits.Mul64(uint64(used), 100)
	q, _ := bits.Div64(hi, lo, uint64(total))
	return int32(q / 5 * 5)
}

func badAnswer(sub string, err error) *Error {
	return &Error{Kind: KindBadAnswer, Sub: sub, Msg: clean(fmt.Sprintf("%s: the answer is not KubeVirt's JSON: %v", sub, err))}
}

// clean makes a guest's string safe to keep and show: control and
// bidirectional-control characters and invalid UTF-8 dropped, spaces
// trimmed, cut at vmifacts.MaxGuestString bytes on a character boundary.
func clean(s string) string {
	plain := len(s) <= vmifacts.MaxGuestString
	for i := 0; plain && i < len(s); i++ {
		plain = s[i] >= 0x20 && s[i] < 0x7f
	}
	if plain {
		return strings.TrimSpace(s)
	}
	var b strings.Builder
	b.Grow(min(len(s), vmifacts.MaxGuestString))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if (r == utf8.RuneError && size == 1) || unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
			continue
		}
		if b.Len()+size > vmifacts.MaxGuestString {
			break
		}
		b.WriteRune(r)
	}
	return strings.TrimSpace(b.String())
}
