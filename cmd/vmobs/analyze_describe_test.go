package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vmobs/vmobs/internal/analyze"
	"github.com/vmobs/vmobs/internal/kubectlvmobs"
	"github.com/vmobs/vmobs/internal/verdict"
)

// TestAnalyzeDescribe: `vmobs analyze -o describe` prints what `kubectl
// vmobs describe -A` prints of the VMObservations the analysis computes:
// the same tree and timeline offline as on a cluster.
func TestAnalyzeDescribe(t *testing.T) {
	dir := filepath.Join(testdata, "mustgather-migration-failed", "input")
	code, out, errOut := runCmd(t, "analyze", "--now", fixedNow, "-o", "describe", dir)
	if code != exitOK {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	now, _ := time.Parse(time.RFC3339, fixedNow)
	objs, _ := analyze.Load([]string{dir}, analyze.Options{})
	want := kubectlvmobs.RenderDescribe(analyze.Analyze(objs, now, verdict.DefaultPolicy()), kubectlvmobs.RenderOptions{Now: now, AllNamespaces: true})
	if out != want {
		t.Errorf("analyze -o describe differs from the plugin's tree:\n--- got\n%s\n--- want\n%s", out, want)
	}
	if !strings.Contains(out, "└─ history") || !strings.Contains(out, "MigrationFailed") {
		t.Errorf("no history in:\n%s", out)
	}
}
