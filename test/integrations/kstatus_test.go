package integrations

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/vmobs/vmobs/internal/testsupport"
	"github.com/vmobs/vmobs/internal/testsupport/kstatus"
	"github.com/vmobs/vmobs/test/support"
)

// TestKstatus checks design.md's kstatus mapping on objects as the engine
// produces them: Healthy and Suspended are Current, Progressing is
// InProgress, Failed and Degraded past the stalled threshold are Failed,
// Degraded before it and Unknown are InProgress, and a status older than the
// spec is InProgress.
func TestKstatus(t *testing.T) {
	for _, sc := range scenarios(t) {
		t.Run(sc.name, func(t *testing.T) {
			// As Flux reads the object a client lists (no empty status).
			res := kstatus.Of(t, toUnstructured(t, sc.obs).Object)
			if string(res.Status) != sc.kstatus {
				t.Errorf("kstatus says %s (%q), want %s", res.Status, res.Message, sc.kstatus)
			}
			if res.Status == status.FailedStatus && res.Message == "" {
				t.Error("a Failed status should carry the Stalled condition's message")
			}
		})
	}
}

// Flux's reading of the VMObservations (the recipes' healthCheckExprs with
// Flux's own evaluator, and the recipes played through Flux's health-check
// code on a real API server) is tested in hack/flux, a module of its own.

// TestFluxDocSnippet checks that docs/flux.md shows the recipe files
// verbatim.
func TestFluxDocSnippet(t *testing.T) {
	root := support.RepoRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "flux.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := testsupport.CodeBlocks(string(doc), "yaml")
	for _, name := range []string{"flux-healthcheck.yaml", "flux-helmrelease.yaml"} {
		file, err := os.ReadFile(filepath.Join(root, "docs", name))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(blocks, string(file)) {
			t.Errorf("docs/flux.md does not show docs/%s as it is", name)
		}
	}
}
