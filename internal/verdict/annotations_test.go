package verdict

import (
	"strings"
	"testing"
	"time"
)

func TestParseHeartbeat(t *testing.T) {
	want := time.Date(2026, 11, 30, 11, 59, 13, 0, time.UTC)
	for _, c := range []struct {
		in string
		ok bool
	}{
		{"2026-11-30T11:59:13Z", true}, // what virt-handler writes
		{`"2026-11-30T11:59:13Z"`, true},
		{" 2026-11-30T11:59:13Z\n", true},
		{"2026-11-30T12:59:13+01:00", true},
		{"2026-11-30T11:59:13.734Z", true},
		{"", false},
		{`""`, false},
		{"yesterday", false},
		{"2026-11-30 11:59:13", false},
		{"1733000000", false},
		{"2026-13-30T11:59:13Z", false},
		{"2026-11-30T11:59:13Z" + strings.Repeat(" ", 100) + "x", false},
	} {
		got, err := ParseHeartbeat(c.in)
		if c.ok != (err == nil) {
			t.Errorf("ParseHeartbeat(%q) err = %v", c.in, err)
			continue
		}
		if c.ok && !got.Equal(want) {
			t.Errorf("ParseHeartbeat(%q) = %v, want %v", c.in, got, want)
		}
		if c.ok && (got.Location() != time.UTC || got.Nanosecond() != 0) {
			t.Errorf("ParseHeartbeat(%q) = %v, not UTC seconds", c.in, got)
		}
	}
}

func FuzzParseHeartbeat(f *testing.F) {
	for _, s := range []string{"2026-11-30T11:59:13Z", `"2026-11-30T11:59:13Z"`, "2026-11-30T12:59:13+01:00",
		"2026-11-30T11:59:13.999999999Z", "", "yesterday", "9999-12-31T23:59:59Z", "0000-01-01T00:00:00Z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseHeartbeat(s)
		if err != nil {
			return
		}
		if got.Location() != time.UTC || got.Nanosecond() != 0 {
			t.Fatalf("ParseHeartbeat(%q) = %v, not UTC seconds", s, got)
		}
		// What it returns survives the way virt-handler writes it.
		again, err := ParseHeartbeat(got.Format(time.RFC3339))
		if err != nil || !again.Equal(got) {
			t.Fatalf("round trip of %q: %v, %v", s, again, err)
		}
	})
}
