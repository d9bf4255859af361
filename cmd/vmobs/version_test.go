package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/vmobs/vmobs/internal/version"
)

func TestVersion(t *testing.T) {
	line := "vmobs " + version.Get().String() + "\n"
	for _, tc := range []struct {
		args     []string
		code     int
		out, err string
		wantJSON bool
	}{
		{args: []string{"--version"}, out: line},
		{args: []string{"-version"}, out: line},
		{args: []string{"version"}, out: line},
		{args: []string{"version", "-o", "json"}, wantJSON: true},
		{args: []string{"help", "version"}, out: "Usage: vmobs version"},
		{args: []string{"version", "-o", "yaml"}, code: exitUsage, err: `unknown output format "yaml"`},
		{args: []string{"version", "extra"}, code: exitUsage, err: `unexpected argument "extra"`},
		{args: []string{"version", "--frobnicate"}, code: exitUsage, err: "flag provided but not defined"},
	} {
		code, out, errOut := runCmd(t, tc.args...)
		if code != tc.code || !strings.HasPrefix(out, tc.out) || !strings.Contains(errOut, tc.err) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d, stdout starting %q, stderr with %q", tc.args, code, out, errOut, tc.code, tc.out, tc.err)
		}
		if tc.wantJSON {
			var got version.Info
			if err := json.Unmarshal([]byte(out), &got); err != nil || got != version.Get() {
				t.Errorf("%v: %q does not decode to %+v: %v", tc.args, out, version.Get(), err)
			}
		}
	}
}
