package guestprobe

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/vmobs/vmobs/internal/vmifacts"
)

func TestClean(t *testing.T) {
	long := strings.Repeat("é", 200) // 400 bytes
	for _, tc := range []struct {
		name, in, want string
	}{
		{"plain", "web-1.example.com", "web-1.example.com"},
		{"trimmed", "  web-1 ", "web-1"},
		{"control characters dropped", "web\x00-1\n\t\x1b[31m", "web-1[31m"},
		{"C1 and DEL dropped", "a\u0085b\x7fc", "abc"},
		{"bidirectional controls dropped", "evil\u202etxt.exe", "eviltxt.exe"},
		{"invalid UTF-8 dropped", "a\xff\xfeb", "ab"},
		{"cut on a character boundary", long, strings.Repeat("é", vmifacts.MaxGuestString/2)},
		{"cut at the bound", strings.Repeat("x", 300), strings.Repeat("x", vmifacts.MaxGuestString)},
		{"empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := clean(tc.in)
			if got != tc.want {
				t.Fatalf("clean(%q) = %q, want %q", tc.in, got, tc.want)
			}
			if len(got) > vmifacts.MaxGuestString || !utf8.ValidString(got) {
				t.Fatalf("clean(%q) = %q: over the bound or invalid UTF-8", tc.in, got)
			}
		})
	}
}

// fsJSON writes a filesystemlist answer; sizes are written as given, so
// that a test can send numbers no Go integer holds.
func fsJSON(entries ...string) []byte {
	return []byte(`{"kind":"VirtualMachineInstanceFileSystemList","apiVersion":"v1","metadata":{},"items":[` + strings.Join(entries, ",") + `]}`)
}

func fsEntry(mount, typ, used, total string) string {
	return fmt.Sprintf(`{"diskName":"vda1","mountPoint":%s,"fileSystemType":%s,"usedBytes":%s,"totalBytes":%s,"disk":[{"busType":"virtio"}]}`, jsonString(mount), jsonString(typ), used, total)
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestDecodeFilesystemList(t *testing.T) {
	many := make([]string, 0, 40)
	for i := range 40 {
		many = append(many, fsEntry(fmt.Sprintf("/data/%02d", i), "xfs", fmt.Sprint(i), "40"))
	}
	for _, tc := range []struct {
		name    string
		body    []byte
		want    []vmifacts.GuestFilesystem
		skipped int
		err     bool
	}{
		{"fullest first, rounded down to 5", fsJSON(
			fsEntry("/", "xfs", "899", "1000"), fsEntry("/boot", "ext4", "100", "1000"), fsEntry("/var", "xfs", "900", "1000"), fsEntry("/full", "xfs", "7", "7")),
			[]vmifacts.GuestFilesystem{{MountPoint: "/full", Type: "xfs", UsedPercent: 100}, {MountPoint: "/var", Type: "xfs", UsedPercent: 90},
				{MountPoint: "/", Type: "xfs", UsedPercent: 85}, {MountPoint: "/boot", Type: "ext4", UsedPercent: 10}}, 0, false},
		{"sizes that make no sense are skipped and counted", fsJSON(
			fsEntry("/neg", "xfs", "-1", "10"), fsEntry("/over", "xfs", "11", "10"), fsEntry("/zero", "xfs", "0", "0"),
			fsEntry("/negtotal", "xfs", "0", "-10"), fsEntry("/huge", "xfs", "1", "99999999999999999999999"),
			fsEntry("/float", "xfs", "1.5", "10"), fsEntry("/exp", "xfs", "1e30", "1e31"), fsEntry("/text", "xfs", `"1"`, "10"),
			fsEntry("", "xfs", "1", "10"), `"not an object"`, `null`, fsEntry("/ok", "xfs", "0", "10")),
			[]vmifacts.GuestFilesystem{{MountPoint: "/ok", Type: "xfs", UsedPercent: 0}}, 11, false},
		{"sizes near int64's end are exact", fsJSON(fsEntry("/big", "xfs", "9223372036854775806", "9223372036854775807")),
			[]vmifacts.GuestFilesystem{{MountPoint: "/big", Type: "xfs", UsedPercent: 95}}, 0, false},
		{"at most 16, the fullest", fsJSON(many...), func() []vmifacts.GuestFilesystem {
			var out []vmifacts.GuestFilesystem
			for i := 39; len(out) < vmifacts.MaxGuestFilesystems; i-- {
				out = append(out, vmifacts.GuestFilesystem{MountPoint: fmt.Sprintf("/data/%02d", i), Type: "xfs", UsedPercent: int32(i * 100 / 40 / 5 * 5)})
			}
			// Equal buckets are ordered by mount point.
			for i := 0; i+1 < len(out); i++ {
				if out[i].UsedPercent == out[i+1].UsedPercent && out[i].MountPoint > out[i+1].MountPoint {
					out[i], out[i+1] = out[i+1], out[i]
				}
			}
			return out
		}(), 0, false},
		{"a mount point twice keeps the fullest", fsJSON(fsEntry("/", "btrfs", "10", "100"), fsEntry("/", "btrfs", "50", "100")),
			[]vmifacts.GuestFilesystem{{MountPoint: "/", Type: "btrfs", UsedPercent: 50}}, 0, false},
		{"hostile strings", fsJSON(fsEntry("/mnt/\u202eevil\x00"+strings.Repeat("a", 400), "x\nfs", "1", "2")),
			[]vmifacts.GuestFilesystem{{MountPoint: "/mnt/evil" + strings.Repeat("a", vmifacts.MaxGuestString-len("/mnt/evil")), Type: "xfs", UsedPercent: 50}}, 0, false},
		{"no items", []byte(`{"items":null}`), nil, 0, false},
		{"empty object", []byte(`{}`), nil, 0, false},
		{"malformed JSON", []byte(`{"items":[`), nil, 0, true},
		{"items not a list", []byte(`{"items":{"a":1}}`), nil, 0, true},
		{"not an object", []byte(`[1,2]`), nil, 0, true},
		{"empty answer", nil, nil, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, skipped, err := decodeFilesystemList(tc.body)
			if (err != nil) != tc.err {
				t.Fatalf("err = %v, want error %v", err, tc.err)
			}
			if err != nil {
				if err.Kind != KindBadAnswer {
					t.Fatalf("err kind %s", err.Kind)
				}
				return
			}
			if skipped != tc.skipped {
				t.Errorf("skipped %d, want %d", skipped, tc.skipped)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d filesystems %+v, want %+v", len(got), got, tc.want)
			}
			for i := range got {
				if !sameFilesystem(got[i], tc.want[i]) {
					t.Errorf("[%d] = %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestDecodeUserList(t *testing.T) {
	users := func(n int) []byte {
		items := make([]string, n)
		for i := range items {
			items[i] = fmt.Sprintf(`{"userName":"user%d","domain":"","loginTime":1.7e9}`, i)
		}
		return []byte(`{"items":[` + strings.Join(items, ",") + `]}`)
	}
	for _, tc := range []struct {
		name    string
		body    []byte
		want    int32
		skipped int
		err     bool
	}{
		{"none", []byte(`{"items":[]}`), 0, 0, false},
		{"two", users(2), 2, 0, false},
		{"counted up to 16", users(5000), vmifacts.MaxGuestUsers, 0, false},
		{"entries without a user skipped", []byte(`{"items":[{"userName":""},{"userName":"\u0000"},{"userName":7},"x",{"userName":"root","loginTime":1e999},{"userName":"root"}]}`), 1, 5, false},
		{"malformed", []byte(`{"items":[{"userName":"root"}`), 0, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, skipped, err := decodeUserList(tc.body)
			if (err != nil) != tc.err || got != tc.want || skipped != tc.skipped {
				t.Fatalf("decodeUserList = %d, %d, %v; want %d, %d, error %v", got, skipped, err, tc.want, tc.skipped, tc.err)
			}
		})
	}
}

func TestDecodeGuestOSInfo(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string
		want osInfo
		err  bool
	}{
		{"KubeVirt's answer", `{"guestAgentVersion":"8.2.0","hostname":"web-1","os":{"name":"Fedora Linux","prettyName":"Fedora Linux 40 (Cloud Edition)","kernelRelease":"6.8.5-301.fc40.x86_64","id":"fedora"},"timezone":"UTC, 0","userList":[{"userName":"root"}],"fsInfo":{"disks":[{"diskName":"vda1","mountPoint":"/","fileSystemType":"xfs","usedBytes":1,"totalBytes":2}]}}`,
			osInfo{Hostname: "web-1", OSName: "Fedora Linux 40 (Cloud Edition)", KernelRelease: "6.8.5-301.fc40.x86_64", Timezone: "UTC, 0"}, false},
		{"no pretty name", `{"os":{"name":"Linux"}}`, osInfo{OSName: "Linux"}, false},
		// The freeze is the VMI's to say (status.fsFreezeStatus).
		{"frozen is not read", `{"hostname":"h","fsFreezeStatus":"frozen"}`, osInfo{Hostname: "h"}, false},
		// The OS info must stay readable whatever the capped copies of the
		// lists carry.
		{"hostile lists ignored", `{"hostname":"h","userList":[{"loginTime":1e999}],"fsInfo":{"disks":[{"usedBytes":1e400,"totalBytes":"x"}]}}`, osInfo{Hostname: "h"}, false},
		{"hostile strings", `{"hostname":"h\u0007\u202e` + strings.Repeat("x", 1000) + `"}`, osInfo{Hostname: "h" + strings.Repeat("x", vmifacts.MaxGuestString-1)}, false},
		{"wrong type", `{"hostname":5}`, osInfo{}, true},
		{"malformed", `{"hostname":`, osInfo{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodeGuestOSInfo([]byte(tc.body))
			if (err != nil) != tc.err || got != tc.want {
				t.Fatalf("decodeGuestOSInfo = %+v, %v; want %+v, error %v", got, err, tc.want, tc.err)
			}
		})
	}
}

func TestUsedPercent(t *testing.T) {
	for _, tc := range []struct {
		used, total int
		want        int32
	}{
		{0, 1, 0}, {1, 1, 100}, {9, 10, 90}, {8999, 10000, 85}, {4, 100, 0}, {5, 100, 5},
		{1<<62 + 1, 1<<63 - 1, 50},
	} {
		if got := usedPercent(tc.used, tc.total); got != tc.want {
			t.Errorf("usedPercent(%d, %d) = %d, want %d", tc.used, tc.total, got, tc.want)
		}
	}
}
