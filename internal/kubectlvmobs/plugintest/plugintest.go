// Package plugintest holds the plugin's test fixtures for its unit tests
// (internal/kubectlvmobs) and for its test on a real kube-apiserver
// (test/plugin): the VMObservations of testdata/fixtures.yaml, the time
// their statuses were computed at, and the age normalisation the golden
// files are written with.
package plugintest

import (
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/vmobs/vmobs/api/v1alpha1"
)

// FixtureNow is when the analyze engine computed the fixtures' statuses.
var FixtureNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// Testdata is the path of name in internal/kubectlvmobs/testdata, found
// from this source file so that tests in any package read the same files.
func Testdata(name string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "testdata", name)
}

// LoadFixtures reads testdata/fixtures.yaml: VMObservation Lists, one YAML
// document each. Every object gets generation 1 (observed) and a creation
// time three days before FixtureNow.
func LoadFixtures(t testing.TB) []v1alpha1.VMObservation {
	t.Helper()
	data, err := os.ReadFile(Testdata("fixtures.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var out []v1alpha1.VMObservation
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var list v1alpha1.VMObservationList
		if err := yaml.UnmarshalStrict([]byte(doc), &list); err != nil {
			t.Fatalf("fixtures: %v", err)
		}
		for _, o := range list.Items {
			o.OwnerReferences = nil
			o.Generation = 1
			o.Status.ObservedGeneration = 1
			o.CreationTimestamp = metav1.NewTime(FixtureNow.Add(-72 * time.Hour))
			out = append(out, o)
		}
	}
	if len(out) < 8 {
		t.Fatalf("fixtures: %d VMObservations, want at least 8", len(out))
	}
	return out
}

// ageRE matches the ages the renderers print (kubectl's HumanDuration:
// 12s, 3m, 5m10s, 2d16h, 3y) after a blank, "(" or "+".
var ageRE = regexp.MustCompile(`([\s(+])\d+[smhdy](\d+[smhd])?\b`)

// NormalizeAges replaces every age with <age>, so output rendered at
// different times compares equal.
func NormalizeAges(s string) string {
	return ageRE.ReplaceAllString(s, "${1}<age>")
}
