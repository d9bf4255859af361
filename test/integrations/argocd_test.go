package integrations

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/testsupport"
	"github.com/vmobs/vmobs/test/support"
)

// The Argo CD health check (config/argocd/.../VMObservation: health.lua,
// health_test.yaml, testdata/) is run by Argo CD's own code in hack/argocd,
// a module of its own built with the Go its Argo CD needs (`make
// test-argocd`; docs/argocd.md, "How it is tested"). The tests here keep
// what it runs honest: health_test.yaml covers every testdata object and
// every status, the testdata objects are what the verdict engine writes
// today, and health_test.yaml expects for each of them the mapping of
// docs/argocd.md.

var update = flag.Bool("update", false,
	"rewrite config/argocd/.../testdata/*.yaml from the verdict engine's scenarios (make update-golden)")

const argoDir = "config/argocd/observability.vmobs.io/VMObservation"

// argoHealth is gitops-engine's HealthStatus as health_test.yaml gives it.
type argoHealth struct {
	Status  string `json:"status,omitempty"`
	Message string `json:"message,omitempty"`
}

// argoTests reads health_test.yaml, in Argo CD's format, into its expected
// health by input path.
func argoTests(t *testing.T) map[string]argoHealth {
	t.Helper()
	var tests struct {
		Tests []struct {
			HealthStatus argoHealth `json:"healthStatus"`
			InputPath    string     `json:"inputPath"`
		} `json:"tests"`
	}
	raw, err := os.ReadFile(filepath.Join(support.RepoRoot(t), argoDir, "health_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(raw, &tests); err != nil {
		t.Fatalf("health_test.yaml: %v", err)
	}
	out := map[string]argoHealth{}
	for _, tc := range tests.Tests {
		path := filepath.Clean(tc.InputPath)
		if _, dup := out[path]; dup {
			t.Errorf("health_test.yaml has two cases for %s", path)
		}
		out[path] = tc.HealthStatus
	}
	return out
}

// TestArgoCDHealthTests checks that health_test.yaml has a case for every
// testdata object and only for those, and covers every Argo CD status
// vmobs can produce.
func TestArgoCDHealthTests(t *testing.T) {
	root := support.RepoRoot(t)
	tests := argoTests(t)
	statuses := map[string]bool{}
	for path, want := range tests {
		statuses[want.Status] = true
		if _, err := os.Stat(filepath.Join(root, argoDir, path)); err != nil {
			t.Errorf("health_test.yaml: %v", err)
		}
	}
	files, err := filepath.Glob(filepath.Join(root, argoDir, "testdata", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		rel := filepath.Join("testdata", filepath.Base(f))
		if _, ok := tests[rel]; !ok {
			t.Errorf("%s is not referenced by health_test.yaml", rel)
		}
	}
	for _, s := range []string{"Healthy", "Progressing", "Suspended", "Degraded", "Unknown"} {
		if !statuses[s] {
			t.Errorf("health_test.yaml has no case for %s", s)
		}
	}
}

// TestArgoCDHealthOnEngineOutput checks that each scenario's testdata
// object is what the verdict engine produces today (-update rewrites them),
// and that health_test.yaml expects for it the mapping of docs/argocd.md:
// same words, Failed → Degraded, stopped as declared → Healthy, stale
// generation → Progressing, message = status.message. hack/argocd checks
// that Argo CD's code returns what health_test.yaml expects.
func TestArgoCDHealthOnEngineOutput(t *testing.T) {
	if *update {
		writeArgoTestdata(t)
	}
	root := support.RepoRoot(t)
	tests := argoTests(t)
	for _, sc := range scenarios(t) {
		t.Run(sc.name, func(t *testing.T) {
			path := filepath.Join("testdata", sc.name+".yaml")
			committed, err := os.ReadFile(filepath.Join(root, argoDir, path))
			if err != nil {
				t.Fatalf("%v (make update-golden writes it)", err)
			}
			if want := argoTestdata(t, sc); string(committed) != string(want) {
				t.Errorf("%s is not what the verdict engine writes today: run make update-golden and review the diff", path)
			}
			got, ok := tests[path]
			if !ok {
				t.Fatalf("health_test.yaml has no case for %s", path)
			}
			want := argoHealth{Status: sc.argo, Message: sc.obs.Status.Message}
			if sc.obs.Status.ObservedGeneration < sc.obs.Generation {
				want.Message = fmt.Sprintf("Waiting for vmobs to observe generation %d", sc.obs.Generation)
			}
			if sc.argo == "Healthy" && sc.verdict == v1alpha1.VerdictSuspended {
				// Stopped as declared: the message says so, and carries
				// the engine's.
				if !strings.Contains(got.Message, "stopped as declared") || !strings.HasSuffix(got.Message, sc.obs.Status.Message) {
					t.Errorf("health_test.yaml: the message %q of %s should say the VM is stopped as declared and end with the engine's %q", got.Message, path, sc.obs.Status.Message)
				}
				want.Message = got.Message
			}
			if got != want {
				t.Errorf("health_test.yaml expects %+v for %s, the mapping %+v", got, path, want)
			}
		})
	}
}

// argoTestdata is a scenario's testdata object: the VMObservation as YAML,
// without the uid the fixtures make up. health_test.yaml is kept by hand
// (its messages are the objects' status.message).
func argoTestdata(t *testing.T, sc scenario) []byte {
	t.Helper()
	u := toUnstructured(t, sc.obs)
	unstructured.RemoveNestedField(u.Object, "metadata", "uid")
	b, err := yaml.Marshal(u.Object)
	if err != nil {
		t.Fatal(err)
	}
	header := "# Produced by the verdict engine (test/integrations, scenario " + sc.name + ");\n" +
		"# regenerate with: go test ./test/integrations -run TestArgoCDHealthOnEngineOutput -update\n"
	return append([]byte(header), b...)
}

// writeArgoTestdata snapshots the scenarios into testdata/.
func writeArgoTestdata(t *testing.T) {
	dir := filepath.Join(support.RepoRoot(t), argoDir, "testdata")
	var names []string
	for _, sc := range scenarios(t) {
		if err := os.WriteFile(filepath.Join(dir, sc.name+".yaml"), argoTestdata(t, sc), 0o644); err != nil {
			t.Fatal(err)
		}
		names = append(names, sc.name)
	}
	sort.Strings(names)
	t.Logf("wrote %s", strings.Join(names, ", "))
}

// TestArgoCDDocSnippet checks that docs/argocd.md gives health.lua verbatim
// in each of its three install forms: the argocd-cm ConfigMap, the
// argocd-operator's ArgoCD resource (spec.resourceHealthChecks, which the
// operator writes into argocd-cm) and the Argo CD Helm chart's configs.cm.
func TestArgoCDDocSnippet(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(support.RepoRoot(t), "docs", "argocd.md"))
	if err != nil {
		t.Fatal(err)
	}
	const key = "resource.customizations.health.observability.vmobs.io_VMObservation"
	script, err := os.ReadFile(filepath.Join(support.RepoRoot(t), argoDir, "health.lua"))
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, block := range testsupport.CodeBlocks(string(doc), "yaml") {
		var snippet struct {
			APIVersion string            `json:"apiVersion"`
			Kind       string            `json:"kind"`
			Data       map[string]string `json:"data"`
			Spec       struct {
				ResourceHealthChecks []struct {
					Group string `json:"group"`
					Kind  string `json:"kind"`
					Check string `json:"check"`
				} `json:"resourceHealthChecks"`
			} `json:"spec"`
			Configs struct {
				CM map[string]string `json:"cm"`
			} `json:"configs"`
		}
		if err := yaml.Unmarshal([]byte(block), &snippet); err != nil {
			continue // a multi-document example
		}
		var form, got string
		switch {
		case snippet.Kind == "ConfigMap" && snippet.Data[key] != "":
			form, got = "argocd-cm", snippet.Data[key]
		case snippet.APIVersion == "argoproj.io/v1beta1" && snippet.Kind == "ArgoCD":
			form = "ArgoCD.spec.resourceHealthChecks"
			for _, c := range snippet.Spec.ResourceHealthChecks {
				// The operator's key is group + "_" + kind.
				if c.Group+"_"+c.Kind == "observability.vmobs.io_VMObservation" {
					got = c.Check
				}
			}
		case snippet.Configs.CM[key] != "":
			form, got = "Helm configs.cm", snippet.Configs.CM[key]
		default:
			continue
		}
		found[form] = true
		if got != string(script) {
			t.Errorf("the %s snippet of docs/argocd.md differs from health.lua:\n%s", form, got)
		}
	}
	for _, form := range []string{"argocd-cm", "ArgoCD.spec.resourceHealthChecks", "Helm configs.cm"} {
		if !found[form] {
			t.Errorf("docs/argocd.md has no %s snippet", form)
		}
	}
}

// TestArgoCDDocSyncWaves checks the example of docs/argocd.md against the
// rule it states: the VirtualMachine in the same sync wave as its
// VMObservation or an earlier one (a VMObservation without its VM reads
// Unknown, which never ends a sync step), and ignore-healthcheck on the VM.
func TestArgoCDDocSyncWaves(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(support.RepoRoot(t), "docs", "argocd.md"))
	if err != nil {
		t.Fatal(err)
	}
	wave := func(u *unstructured.Unstructured) int {
		w := 0 // Argo CD's default wave
		if s, ok := u.GetAnnotations()["argocd.argoproj.io/sync-wave"]; ok {
			if _, err := fmt.Sscan(s, &w); err != nil {
				t.Fatalf("%s %s: sync-wave %q: %v", u.GetKind(), u.GetName(), s, err)
			}
		}
		return w
	}
	checked := 0
	for _, block := range testsupport.CodeBlocks(string(doc), "yaml") {
		vms := map[string]*unstructured.Unstructured{}
		var obs []*unstructured.Unstructured
		for _, part := range strings.Split(block, "\n---\n") {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(part), &u.Object); err != nil || u.Object == nil {
				continue
			}
			switch u.GetKind() {
			case "VirtualMachine":
				vms[u.GetNamespace()+"/"+u.GetName()] = u
			case "VMObservation":
				obs = append(obs, u)
			}
		}
		for _, o := range obs {
			vm := vms[o.GetNamespace()+"/"+o.GetName()]
			if vm == nil {
				continue
			}
			checked++
			if wave(vm) > wave(o) {
				t.Errorf("VM %s is in sync wave %d, after its VMObservation's %d", vm.GetName(), wave(vm), wave(o))
			}
			if vm.GetAnnotations()["argocd.argoproj.io/ignore-healthcheck"] != "true" {
				t.Errorf("VM %s lacks argocd.argoproj.io/ignore-healthcheck: \"true\"", vm.GetName())
			}
		}
	}
	if checked == 0 {
		t.Error("docs/argocd.md has no example with a VirtualMachine and its VMObservation")
	}
}
