package argocd

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argoproj/argo-cd/gitops-engine/v3/pkg/health"
	"github.com/argoproj/argo-cd/v3/util/lua"
	"github.com/argoproj/argo-cd/v3/util/settings"
	log "github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/yaml"
)

// root is the repository's root: this module lives in hack/argocd.
const root = "../.."

var checkDir = filepath.Join(root, "config", "argocd", "observability.vmobs.io", "VMObservation")

// healthTests is health_test.yaml, in the format of Argo CD's
// resource_customizations tests (util/lua's TestLuaHealthScript).
type healthTests struct {
	Tests []struct {
		HealthStatus health.HealthStatus `json:"healthStatus"`
		InputPath    string              `json:"inputPath"`
	} `json:"tests"`
}

// TestHealthLua assesses every object of health_test.yaml as Argo CD's
// application controller does with the argocd-cm of docs/argocd.md, once as
// the docs give it (Argo CD opens only a few Lua libraries for a
// customization from argocd-cm) and once with
// resource.customizations.useOpenLibs set for the kind (all of them, as for
// a built-in check), and compares with the expected status and message.
func TestHealthLua(t *testing.T) {
	script := read(t, filepath.Join(checkDir, "health.lua"))
	var tests healthTests
	if err := yaml.UnmarshalStrict([]byte(read(t, filepath.Join(checkDir, "health_test.yaml"))), &tests); err != nil {
		t.Fatalf("health_test.yaml: %v", err)
	}
	if len(tests.Tests) == 0 {
		t.Fatal("health_test.yaml has no tests")
	}
	cm := docsArgoCDCM(t)
	// The argocd-cm key of the script, resource.customizations.health.
	// <group>_<kind>, is left for Argo CD to parse: the test reads its
	// <group>_<kind> only to name the same kind's useOpenLibs.
	var groupKind string
	for key := range cm.Data {
		if gk, ok := strings.CutPrefix(key, "resource.customizations.health."); ok {
			groupKind = gk
		}
	}
	if groupKind == "" {
		t.Fatal("the argocd-cm of docs/argocd.md has no resource.customizations.health key")
	}
	for _, openLibs := range []bool{false, true} {
		cm := cm.DeepCopy()
		if openLibs {
			cm.Data["resource.customizations.useOpenLibs."+groupKind] = "true"
		}
		overrides := resourceOverrides(t, cm)
		for _, tc := range tests.Tests {
			t.Run(fmt.Sprintf("%s/openLibs=%v", tc.InputPath, openLibs), func(t *testing.T) {
				obj := &unstructured.Unstructured{}
				if err := yaml.Unmarshal([]byte(read(t, filepath.Join(checkDir, tc.InputPath))), &obj.Object); err != nil {
					t.Fatalf("%s: %v", tc.InputPath, err)
				}
				// The script Argo CD picks for the object is health.lua, with
				// the libraries asked for: not a built-in check, not nothing.
				got, gotOpenLibs, err := lua.VM{ResourceOverrides: overrides}.GetHealthScript(obj)
				if err != nil {
					t.Fatal(err)
				}
				if got != script || gotOpenLibs != openLibs {
					t.Fatalf("Argo CD picks for %s, with useOpenLibs=%v, a health script other than health.lua with useOpenLibs=%v:\n%s",
						obj.GroupVersionKind(), gotOpenLibs, openLibs, got)
				}
				hs, err := health.GetResourceHealth(obj, lua.ResourceHealthOverrides(overrides))
				if err != nil {
					t.Fatal(err)
				}
				if hs == nil {
					t.Fatal("Argo CD assessed no health")
				}
				if *hs != tc.HealthStatus {
					t.Errorf("Argo CD assesses\n  %+v\nhealth_test.yaml expects\n  %+v", *hs, tc.HealthStatus)
				}
			})
		}
	}
}

// resourceOverrides is what Argo CD's SettingsManager reads from an
// argocd-cm: the resource customizations the application controller
// assesses health with.
func resourceOverrides(t *testing.T, cm *corev1.ConfigMap) lua.ResourceHealthOverrides {
	t.Helper()
	mgr := settings.NewSettingsManager(t.Context(), fake.NewClientset(cm), cm.Namespace)
	overrides, err := mgr.GetResourceOverrides()
	if err != nil {
		t.Fatalf("Argo CD's settings from the argocd-cm of docs/argocd.md: %v", err)
	}
	return overrides
}

// docsArgoCDCM is the argocd-cm ConfigMap docs/argocd.md tells a plain
// install to apply.
func docsArgoCDCM(t *testing.T) *corev1.ConfigMap {
	t.Helper()
	doc := read(t, filepath.Join(root, "docs", "argocd.md"))
	var found *corev1.ConfigMap
	for _, block := range strings.Split(doc, "```yaml\n")[1:] {
		block, _, _ = strings.Cut(block, "\n```")
		block += "\n" // the newline that ends the block's last line
		cm := &corev1.ConfigMap{}
		if err := yaml.Unmarshal([]byte(block), cm); err != nil || cm.Kind != "ConfigMap" || cm.Name != "argocd-cm" {
			continue // another example, or several documents
		}
		if found != nil {
			t.Fatal("docs/argocd.md has more than one argocd-cm")
		}
		found = cm
	}
	if found == nil {
		t.Fatal("docs/argocd.md has no argocd-cm ConfigMap")
	}
	return found
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestMain quiets Argo CD's settings, which log what they read through
// logrus at info level: a test's output is for its failures.
func TestMain(m *testing.M) {
	log.SetLevel(log.WarnLevel)
	os.Exit(m.Run())
}
