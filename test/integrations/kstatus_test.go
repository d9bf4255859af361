package integrations

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/ext"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/yaml"
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

// fluxHealthCheck is one entry of a Kustomization's spec.healthCheckExprs.
type fluxHealthCheck struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Current    string `json:"current"`
	InProgress string `json:"inProgress,omitempty"`
	Failed     string `json:"failed,omitempty"`
}

func readFluxHealthCheck(t *testing.T) fluxHealthCheck {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "flux-healthcheck.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var ks struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Spec       struct {
			HealthCheckExprs []fluxHealthCheck `json:"healthCheckExprs"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(b, &ks); err != nil {
		t.Fatal(err)
	}
	if ks.APIVersion != "kustomize.toolkit.fluxcd.io/v1" || ks.Kind != "Kustomization" {
		t.Fatalf("docs/flux-healthcheck.yaml is a %s %s, want a Flux Kustomization", ks.APIVersion, ks.Kind)
	}
	for _, hc := range ks.Spec.HealthCheckExprs {
		if hc.APIVersion == "observability.vmobs.io/v1alpha1" && hc.Kind == "VMObservation" {
			if hc.Current == "" || hc.InProgress == "" || hc.Failed == "" {
				t.Fatalf("the VMObservation health check needs current, inProgress and failed: %+v", hc)
			}
			return hc
		}
	}
	t.Fatal("docs/flux-healthcheck.yaml has no healthCheckExprs entry for observability.vmobs.io/v1alpha1 VMObservation")
	return fluxHealthCheck{}
}

// celProgram builds an expression the way Flux's runtime/cel does for
// health checks: parsed, not compiled (CRDs need not have the usual five
// top-level fields), in an environment with its options and extensions,
// and evaluated with the object's top-level fields as variables.
func celProgram(t *testing.T, expr string) cel.Program {
	t.Helper()
	env, err := cel.NewEnv(
		cel.HomogeneousAggregateLiterals(),
		cel.EagerlyValidateDeclarations(true),
		cel.DefaultUTCTimeZone(true),
		cel.CrossTypeNumericComparisons(true),
		cel.OptionalTypes(),
		ext.Strings(),
		ext.Sets(),
		ext.Encoders(),
	)
	if err != nil {
		t.Fatal(err)
	}
	ast, iss := env.Parse(expr)
	if iss != nil && iss.Err() != nil {
		t.Fatalf("parsing %q: %v", expr, iss.Err())
	}
	prg, err := env.Program(ast, cel.EvalOptions(cel.OptOptimize), cel.InterruptCheckFrequency(100))
	if err != nil {
		t.Fatal(err)
	}
	return prg
}

// fluxEvaluate mirrors Flux's StatusEvaluator.Evaluate (RFC 0009): the
// observedGeneration check, then inProgress, failed, current; none true is
// InProgress. An evaluation error is what cli-utils' generic status reader
// reports as Unknown.
func fluxEvaluate(t *testing.T, hc fluxHealthCheck, u *unstructured.Unstructured) (string, error) {
	obj := u.UnstructuredContent()
	if og, ok, err := unstructured.NestedInt64(obj, "status", "observedGeneration"); err == nil && ok {
		if g, ok, _ := unstructured.NestedInt64(obj, "metadata", "generation"); ok && g != og {
			return string(status.InProgressStatus), nil
		}
	}
	for _, e := range []struct {
		expr string
		st   status.Status
	}{{hc.InProgress, status.InProgressStatus}, {hc.Failed, status.FailedStatus}, {hc.Current, status.CurrentStatus}} {
		if e.expr == "" {
			continue
		}
		val, _, err := celProgram(t, e.expr).ContextEval(context.Background(), obj)
		if err != nil {
			return string(status.UnknownStatus), fmt.Errorf("evaluating %q: %w", e.expr, err)
		}
		b, ok := val.(types.Bool)
		if !ok {
			return string(status.UnknownStatus), fmt.Errorf("%q is not a boolean: %v", e.expr, val)
		}
		if b {
			return string(e.st), nil
		}
	}
	return string(status.InProgressStatus), nil
}

// TestFluxHealthCheckExprs evaluates docs/flux-healthcheck.yaml on the same
// objects and expects kstatus' answers, except where the expressions are
// meant to do better (no status yet: wait instead of Current).
func TestFluxHealthCheckExprs(t *testing.T) {
	hc := readFluxHealthCheck(t)
	for _, sc := range scenarios(t) {
		t.Run(sc.name, func(t *testing.T) {
			res, u := kstatusOf(t, sc)
			want := string(res.Status)
			if sc.cel != "" {
				want = sc.cel
			}
			got, err := fluxEvaluate(t, hc, u)
			if got != want {
				t.Errorf("the CEL health check says %s (err %v), kstatus %s, want %s", got, err, res.Status, want)
			}
			if err != nil && sc.cel != "Unknown" {
				t.Errorf("unexpected evaluation error: %v", err)
			}
		})
	}
}

// TestKstatusOnArgoTestdata runs kstatus and the CEL check over the snapshot
// objects of the Argo CD testdata too, so the three tools are compared on
// the very same files.
func TestKstatusOnArgoTestdata(t *testing.T) {
	hc := readFluxHealthCheck(t)
	files, err := filepath.Glob(filepath.Join(repoRoot(t), argoDir, "testdata", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no Argo CD testdata (%v)", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
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
			obj := u.Object
			res, err := status.Compute(u)
			if err != nil {
				t.Fatal(err)
			}
			got, celErr := fluxEvaluate(t, hc, u)
			_, hasStatus := obj["status"]
			_, hasConds, _ := unstructured.NestedSlice(obj, "status", "conditions")
			switch {
			case !hasStatus:
				if got != "Unknown" || celErr == nil {
					t.Errorf("no status: CEL says %s (%v), want an evaluation error (Flux waits)", got, celErr)
				}
			case !hasConds:
				// kstatus calls an object without conditions Current;
				// the CEL check waits for vmobs' conditions.
				if got != "InProgress" {
					t.Errorf("no conditions: CEL says %s (%v), want InProgress", got, celErr)
				}
			case got != string(res.Status):
				t.Errorf("CEL says %s (%v), kstatus %s (%s)", got, celErr, res.Status, res.Message)
			}
		})
	}
}

// TestFluxDocSnippet checks that docs/flux.md shows docs/flux-healthcheck.yaml
// verbatim.
func TestFluxDocSnippet(t *testing.T) {
	root := repoRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "flux.md"))
	if err != nil {
		t.Fatal(err)
	}
	file, err := os.ReadFile(filepath.Join(root, "docs", "flux-healthcheck.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range codeBlocks(string(doc), "yaml") {
		if b == string(file) {
			return
		}
	}
	t.Error("docs/flux.md does not show docs/flux-healthcheck.yaml as it is")
}
