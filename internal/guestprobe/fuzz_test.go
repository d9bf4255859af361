package guestprobe

import (
	"testing"
	"unicode/utf8"

	"github.com/vmobs/vmobs/internal/vmifacts"
)

// FuzzDecodeAnswer feeds the decoders anything a guest (through virt-api)
// could answer: they must return bounded facts or an error, never panic.
// The seeds are in testdata/fuzz/FuzzDecodeAnswer: KubeVirt's answers,
// hostile ones, and broken JSON.
func FuzzDecodeAnswer(f *testing.F) {
	f.Fuzz(func(t *testing.T, sub uint8, body []byte) {
		switch sub % 3 {
		case 0:
			info, err := decodeGuestOSInfo(body)
			if err != nil {
				checkError(t, err)
				return
			}
			for _, s := range []string{info.Hostname, info.OSName, info.KernelRelease, info.Timezone} {
				checkString(t, s)
			}
		case 1:
			users, skipped, err := decodeUserList(body)
			if err != nil {
				checkError(t, err)
				return
			}
			if users < 0 || users > vmifacts.MaxGuestUsers || skipped < 0 {
				t.Fatalf("users %d, skipped %d", users, skipped)
			}
		case 2:
			fs, skipped, err := decodeFilesystemList(body)
			if err != nil {
				checkError(t, err)
				return
			}
			if len(fs) > vmifacts.MaxGuestFilesystems || skipped < 0 {
				t.Fatalf("%d filesystems, skipped %d", len(fs), skipped)
			}
			seen := map[string]bool{}
			for i, g := range fs {
				checkString(t, g.MountPoint)
				checkString(t, g.Type)
				if g.MountPoint == "" || seen[g.MountPoint] || g.UsedPercent < 0 || g.UsedPercent > 100 || g.UsedPercent%5 != 0 {
					t.Fatalf("filesystem %+v", g)
				}
				seen[g.MountPoint] = true
				if i > 0 && fs[i-1].UsedPercent < g.UsedPercent {
					t.Fatalf("not fullest first: %+v", fs)
				}
			}
		}
	})
}

func checkString(t *testing.T, s string) {
	t.Helper()
	if len(s) > vmifacts.MaxGuestString || !utf8.ValidString(s) {
		t.Fatalf("string of %d bytes, valid UTF-8 %v", len(s), utf8.ValidString(s))
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			t.Fatalf("control character %U kept in %q", r, s)
		}
	}
}

func checkError(t *testing.T, err *Error) {
	t.Helper()
	if err.Kind != KindBadAnswer {
		t.Fatalf("decode error of kind %s", err.Kind)
	}
	checkString(t, err.Msg)
}
