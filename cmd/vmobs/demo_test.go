//go:build !release

package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// The demo itself runs in internal/demo's tests; these check the flags.
func TestDemoFlags(t *testing.T) {
	code, out, _ := runCmd(t, "help", "demo")
	if code != exitOK || !strings.Contains(out, "Usage: vmobs demo") || !strings.Contains(out, "stuck-scheduling") ||
		!strings.Contains(out, "filesystem-nearly-full") || !strings.Contains(out, "guest-info-unreachable") || !strings.Contains(out, "-non-interactive") {
		t.Errorf("help demo: exit %d:\n%s", code, out)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"demo", "--scenario", "nope"}, `--scenario "nope" is not a scripted scenario`},
		{[]string{"demo", "--vms", "-1"}, "--vms must be 0 or more"},
		{[]string{"demo", "--duration", "-1s"}, "--duration must not be negative"},
		{[]string{"demo", "extra"}, `unexpected argument "extra"`},
		{[]string{"demo", "--frobnicate"}, "flag provided but not defined"},
	} {
		code, _, errOut := runCmd(t, tc.args...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want exit %d and %q", tc.args, code, errOut, exitUsage, tc.want)
		}
	}
}

// A domain-stats scenario asked for by name fails, before anything
// starts, when there is no Prometheus to read them through.
func TestDemoDomainStatsScenarioWithoutPrometheus(t *testing.T) {
	t.Setenv("PROMETHEUS", filepath.Join(t.TempDir(), "prometheus"))
	code, _, errOut := runCmd(t, "demo", "--scenario", "guest-cpu-stalled", "--non-interactive")
	want := "scenario guest-cpu-stalled reads domain stats through Prometheus: bin/prometheus not built (make prometheus)"
	if code != exitFail || !strings.Contains(errOut, want) {
		t.Errorf("exit %d, stderr %q, want exit %d and %q", code, errOut, exitFail, want)
	}
}
