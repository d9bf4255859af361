package flux

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"github.com/fluxcd/pkg/apis/kustomize"
	"github.com/fluxcd/pkg/runtime/cel"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/vmobs/vmobs/internal/testenv"
)

// observationExprs returns every healthCheckExprs entry for VMObservation
// in the recipes; they must all be the same.
func observationExprs(t *testing.T) kustomize.HealthCheckExpressions {
	t.Helper()
	var found []kustomize.HealthCheckExpressions
	for _, o := range recipes(t) {
		for _, hc := range o.Spec.HealthCheckExprs {
			if hc.APIVersion == "observability.vmobs.io/v1alpha1" && hc.Kind == "VMObservation" {
				if hc.Current == "" || hc.InProgress == "" || hc.Failed == "" {
					t.Fatalf("%s: the VMObservation health check needs current, inProgress and failed: %+v", o, hc)
				}
				found = append(found, hc.HealthCheckExpressions)
			}
		}
	}
	if len(found) < 3 {
		t.Fatalf("found %d healthCheckExprs entries for VMObservation in the recipes, want one per waiting Kustomization or HelmRelease", len(found))
	}
	for _, e := range found[1:] {
		if e != found[0] {
			t.Errorf("the recipes' VMObservation healthCheckExprs differ:\n%+v\n%+v", found[0], e)
		}
	}
	return found[0]
}

// TestHealthCheckExprsOnEngineOutput evaluates the recipes' expressions
// with Flux's own evaluator (runtime/cel NewStatusEvaluator, what
// kustomize-controller and helm-controller build from healthCheckExprs) on
// the VMObservations of config/argocd/.../testdata, snapshots of what the
// verdict engine writes (test/integrations regenerates them), and compares
// with kstatus (Flux's fork of cli-utils, status.Compute) on the same
// objects. They agree on every object vmobs writes; they differ only where
// the expressions are meant to do better: an object without conditions
// (just applied, vmobs has not written it yet) waits instead of being
// Current.
func TestHealthCheckExprsOnEngineOutput(t *testing.T) {
	ev, err := cel.NewStatusEvaluator(ptrTo(observationExprs(t)))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(testenv.RepoRoot(), "config", "argocd", "observability.vmobs.io", "VMObservation", "testdata")
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no VMObservation snapshots in %s (%v)", dir, err)
	}
	// What the file names promise (their prefix is Argo CD's health).
	want := map[string]status.Status{
		"healthy":                            status.CurrentStatus,
		"healthy-stopped-as-declared":        status.CurrentStatus,
		"healthy-succeeded-once":             status.CurrentStatus,
		"suspended-paused":                   status.CurrentStatus,
		"progressing-scheduling":             status.InProgressStatus,
		"progressing-migrating":              status.InProgressStatus,
		"progressing-stale-generation":       status.InProgressStatus,
		"degraded-migration-failed":          status.InProgressStatus, // not yet past stalledAfter
		"degraded-stalled-migration-stuck":   status.FailedStatus,
		"failed-vmi-failed":                  status.FailedStatus,
		"unknown-node-agent-stale":           status.InProgressStatus,
		"healthy-succeeded-rerun-on-failure": status.CurrentStatus,
	}
	seen := 0
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			// As a client decodes it: JSON integers are int64.
			j, err := yaml.YAMLToJSON(b)
			if err != nil {
				t.Fatal(err)
			}
			u := &unstructured.Unstructured{}
			if err := u.UnmarshalJSON(j); err != nil {
				t.Fatal(err)
			}
			ks, err := status.Compute(u)
			if err != nil {
				t.Fatal(err)
			}
			res, celErr := ev.Evaluate(context.Background(), u)
			_, hasStatus := u.Object["status"]
			_, hasConds, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			switch {
			case !hasStatus:
				// The expressions cannot read `status`: Flux reports the
				// object as Unknown and keeps polling.
				if celErr == nil {
					t.Errorf("no status: Flux's evaluator says %s, want an evaluation error (Flux waits)", res.Status)
				}
			case celErr != nil:
				t.Fatalf("evaluating: %v", celErr)
			case !hasConds:
				// kstatus calls an object without conditions Current.
				if res.Status != status.InProgressStatus {
					t.Errorf("no conditions: Flux's evaluator says %s, want InProgress", res.Status)
				}
			case res.Status != ks.Status:
				t.Errorf("Flux's evaluator says %s, kstatus %s (%s)", res.Status, ks.Status, ks.Message)
			}
			if w, ok := want[name]; ok {
				seen++
				if celErr != nil || res.Status != w {
					t.Errorf("want %s, Flux's evaluator says %v (%v)", w, res, celErr)
				}
			}
		})
	}
	if seen != len(want) {
		t.Errorf("found %d of the %d snapshots the test names: a scenario was renamed?", seen, len(want))
	}
}
