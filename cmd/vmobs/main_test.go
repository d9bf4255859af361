package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// runCmd runs vmobs with args and returns the exit status and the output.
func runCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(withStreams(context.Background(), &out, &errOut), args)
	return code, out.String(), errOut.String()
}

func TestUsage(t *testing.T) {
	// Commands other files register show up, sorted.
	for _, n := range []string{"zz-test", "aa-test"} {
		register(n, command{summary: n + " summary", run: func(context.Context, []string) int { return 0 }})
	}
	t.Cleanup(func() { delete(commands, "zz-test"); delete(commands, "aa-test") })

	code, out, errOut := runCmd(t, "help")
	if code != exitOK || errOut != "" {
		t.Fatalf("help: exit %d, stderr %q", code, errOut)
	}
	iAA, iAnalyze, iZZ, iHelp := strings.Index(out, "  aa-test"), strings.Index(out, "  analyze "), strings.Index(out, "  zz-test"), strings.Index(out, "  help ")
	if iAA < 0 || iAnalyze < iAA || iZZ < iAnalyze || iHelp < iZZ {
		t.Errorf("commands not listed in order:\n%s", out)
	}
	if !strings.Contains(out, "aa-test summary") {
		t.Errorf("no summary:\n%s", out)
	}
	for _, h := range []string{"-h", "--help"} {
		if code, out2, _ := runCmd(t, h); code != exitOK || out2 != out {
			t.Errorf("%s: exit %d", h, code)
		}
	}

	// No command: usage on stderr, exit 2.
	code, out, errOut = runCmd(t)
	if code != exitUsage || out != "" || !strings.Contains(errOut, "Commands:") {
		t.Errorf("no args: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, _, errOut = runCmd(t, "frobnicate")
	if code != exitUsage || !strings.Contains(errOut, `unknown command "frobnicate"`) {
		t.Errorf("unknown command: exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = runCmd(t, "help", "frobnicate")
	if code != exitUsage || !strings.Contains(errOut, `unknown command "frobnicate"`) {
		t.Errorf("help unknown: exit %d, stderr %q", code, errOut)
	}
}

func TestRegisterTwicePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("registering analyze twice did not panic")
		}
	}()
	register("analyze", command{})
}

func TestStreamsDefault(t *testing.T) {
	ctx := context.Background()
	if stdout(ctx) == nil || stderr(ctx) == nil {
		t.Error("no default streams")
	}
}

func TestManagerRejectsNegativeRateLimit(t *testing.T) {
	for _, args := range [][]string{
		{"--kube-api-qps=-1"}, {"--kube-api-burst=-5"}, {"--evidence-refresh-qps=-2"}, {"--startup-gc-percent=-1"},
		// With the guest probes on, their budget must be positive.
		{"--guest-probe-interval=-1m"}, {"--guest-probe-qps=0"}, {"--guest-probe-workers=0"}, {"--guest-probe-timeout=0s"},
	} {
		var out, errOut bytes.Buffer
		ctx := withStreams(context.Background(), &out, &errOut)
		if code := runManager(ctx, args); code != 2 {
			t.Errorf("%v: exit code %d, want 2", args, code)
		}
		if !strings.Contains(errOut.String(), "must not be negative") {
			t.Errorf("%v: stderr %q does not say why", args, errOut.String())
		}
	}
}
