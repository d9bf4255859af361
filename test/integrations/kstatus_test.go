package integrations

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/vmobs/vmobs/internal/testsupport"
	"github.com/vmobs/vmobs/test/support"
)

// kstatusOf reads a VMObservation the way Flux (wait/healthChecks),
// cli-utils' apply --wait and kpt do: through JSON, as an unstructured
// object, with kstatus' Compute.
func kstatusOf(t *testing.T, sc scenario) (*status.Result, *unstructured.Unstructured) {
	t.Helper()
	b, err := json.Marshal(toUnstructured(t, sc.obs).Object)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(b); err != nil {
		t.Fatal(err)
	}
	res, err := status.Compute(u)
	if err != nil {
		t.Fatalf("kstatus: %v", err)
	}
	return res, u
}

// TestKstatus checks design.md's kstatus mapping on objects as the engine
// produces them: Healthy and Suspended are Current, Progressing is
// InProgress, Failed and Degraded past the stalled threshold are Failed,
// Degraded before it and Unknown are InProgress, and a status older than the
// spec is InProgress.
func TestKstatus(t *testing.T) {
	for _, sc := range scenarios(t) {
		t.Run(sc.name, func(t *testing.T) {
			res, _ := kstatusOf(t, sc)
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
