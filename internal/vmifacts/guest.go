package vmifacts

import (
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// GuestFacts is what the guest agent answered the controller's probes
// through virt-api's subresources (the path of virtctl guestosinfo,
// userlist and fslist: kv:pkg/virt-api/rest/subresource.go → virt-handler →
// virt-launcher → the QEMU guest agent), folded by internal/guestprobe.
// Everything in it comes from inside the guest, so the fold bounds it
// (at most MaxGuestFilesystems filesystems, strings cut at MaxGuestString
// bytes) and rounds it (UsedPercent to 5-point buckets), so the facts change
// only when what they say does.
type GuestFacts struct {
	// Unavailable, when not empty, says why guest agents cannot be probed
	// at all (virt-api down, refusing or throttling the controller). Every
	// other field is then zero: no rule judges on them, and the guest layer
	// notes it (GuestProbeUnavailable).
	Unavailable string
	// VMIUID is the VMI the facts were folded for. Facts for another UID
	// (a VMI recreated under the same name) are not this VMI's.
	VMIUID types.UID
	// ProbedAt is when the probe that last changed the facts answered.
	ProbedAt time.Time

	// Failures counts the probes in a row that failed or timed out, up to
	// MaxGuestProbeFailures; FailingSince is the first of them and
	// LastError what the newest said (bounded). Zero while probes succeed.
	Failures     int32
	FailingSince time.Time
	LastError    string

	// Answered says a probe succeeded at least once for this VMI: the
	// fields below are what it answered.
	Answered bool
	// Hostname, OSName (os.prettyName, else os.name), KernelRelease and
	// Timezone are guestosinfo's.
	Hostname, OSName, KernelRelease, Timezone string
	// Users is userlist's number of logged-in users, at most
	// MaxGuestUsers (which reads "that many or more"); UsersKnown is false
	// when the call failed or the agent does not support it.
	Users      int32
	UsersKnown bool
	// Filesystems are filesystemlist's, fullest first (then by mount
	// point), at most MaxGuestFilesystems.
	Filesystems []GuestFilesystem
}

// GuestFilesystem is one filesystem of the guest as the fold keeps it.
type GuestFilesystem struct {
	MountPoint, Type string
	// UsedPercent is rounded down to a multiple of 5 (0-100).
	UsedPercent int32
	// Since is the first probe of the current run in which this filesystem
	// has been in its current 5-point bucket or higher.
	Since time.Time
	// Steps date the run at each level from MinFilesystemStep up to
	// UsedPercent, ascending: the filesystem has been at Steps[i].Percent
	// or more, without a probe below, since Steps[i].Since (the last step
	// is UsedPercent and Since). AtLeastSince reads them; nil below
	// MinFilesystemStep.
	Steps []FilesystemStep
}

// FilesystemStep is one level of a filesystem's run: at Percent or more
// since Since.
type FilesystemStep struct {
	Percent int32
	Since   time.Time
}

// MinFilesystemStep is the lowest level the fold dates (the lowest
// threshold --filesystem-used-percent takes).
const MinFilesystemStep = 50

// AtLeastSince is since when the filesystem has been used at p percent or
// more without a probe below; ok is false when it is below p now. The time
// is zero when the facts do not date it.
func (fs *GuestFilesystem) AtLeastSince(p int32) (since time.Time, ok bool) {
	if fs.UsedPercent < p {
		return time.Time{}, false
	}
	for _, s := range fs.Steps {
		if s.Percent >= p {
			return s.Since, true
		}
	}
	return fs.Since, true
}

// FilesystemIgnored says whether a filesystem is full by design or not a
// guest disk, so its use says nothing of the guest's space: the types and
// the mount point KubeVirt's GuestFilesystemAlmostOutOfSpace alerts leave
// out (kv:pkg/monitoring/rules/alerts/vms.go:29-36, 195-228, v1.9.0:
// file_system_type!~"CDFS|iso9660|udf|squashfs|cramfs|tmpfs|devtmpfs|proc|
// sysfs|selinuxfs|securityfs|pstore|debugfs|tracefs|configfs|binfmt_misc|
// bpf|devpts|mqueue|nsfs|rpc_pipefs|ramfs|rootfs|overlay|cgroup.*|fuse\..*|
// fusectl", mount_point!="System Reserved"): ISO and config drives, snap
// squashfs loops (always 100%), pseudo and in-memory filesystems, Windows'
// System Reserved volume. Types are matched without regard to case
// (Windows' agent reports "UDF" and "CDFS" in capitals).
func FilesystemIgnored(fsType, mountPoint string) bool {
	if mountPoint == "System Reserved" {
		return true
	}
	for _, t := range ignoredFilesystemTypes {
		if strings.EqualFold(fsType, t) {
			return true
		}
	}
	return hasPrefixFold(fsType, "cgroup") || hasPrefixFold(fsType, "fuse.")
}

var ignoredFilesystemTypes = [...]string{
	"CDFS", "iso9660", "udf", "squashfs", "cramfs", "tmpfs", "devtmpfs", "proc", "sysfs", "selinuxfs", "securityfs", "pstore",
	"debugfs", "tracefs", "configfs", "binfmt_misc", "bpf", "devpts", "mqueue", "nsfs", "rpc_pipefs", "ramfs", "rootfs", "overlay",
	"fusectl",
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// Bounds on what the fold keeps of a guest's answers.
const (
	MaxGuestFilesystems   = 16
	MaxGuestUsers         = 16
	MaxGuestString        = 253
	MaxGuestProbeFailures = 10
)
