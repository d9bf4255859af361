package kubectlvmobs

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/vmobs/vmobs/api/v1alpha1"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/ from the current output")

// fixtureNow is when the analyze engine computed the fixtures' statuses.
var fixtureNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// loadFixtures reads testdata/fixtures.yaml: VMObservation Lists, one YAML
// document each. Every object gets generation 1 (observed) and a creation
// time three days before fixtureNow.
func loadFixtures(t *testing.T) []v1alpha1.VMObservation {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "fixtures.yaml"))
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
			o.CreationTimestamp = metav1.NewTime(fixtureNow.Add(-72 * time.Hour))
			out = append(out, o)
		}
	}
	if len(out) < 8 {
		t.Fatalf("fixtures: %d VMObservations, want at least 8", len(out))
	}
	return out
}

func inNamespace(objs []v1alpha1.VMObservation, ns string) []v1alpha1.VMObservation {
	var out []v1alpha1.VMObservation
	for _, o := range objs {
		if o.Namespace == ns {
			out = append(out, o)
		}
	}
	return out
}

func named(t *testing.T, objs []v1alpha1.VMObservation, name string) v1alpha1.VMObservation {
	t.Helper()
	for _, o := range objs {
		if o.Name == name {
			return o
		}
	}
	t.Fatalf("no fixture %s", name)
	return v1alpha1.VMObservation{}
}

// ageRE matches the ages the renderers print (kubectl's HumanDuration:
// 12s, 3m, 5m10s, 2d16h, 3y) after a blank, "(" or "+".
var ageRE = regexp.MustCompile(`([\s(+])\d+[smhdy](\d+[smhd])?\b`)

// normalizeAges replaces every age with <age>, so output rendered at
// different times compares equal.
func normalizeAges(s string) string {
	return ageRE.ReplaceAllString(s, "${1}<age>")
}

// golden compares got, ages normalised, with testdata/name.golden, or
// rewrites the file with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	got = normalizeAges(got)
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file (go test -run %s -update rewrites it)\n--- got\n%s\n--- want\n%s", path, t.Name(), got, want)
	}
}

// goldenDescribes are the fixtures each with a describe golden file.
var goldenDescribes = []struct{ namespace, name string }{
	{"finance", "win2k22-app"},
	{"finance", "ledger-01"},
	{"vms-prod", "archive-01"},
	{"vms-prod", "rhel9-db"},
	{"web", "fedora-web"},
	{"lab", "build-runner"},
	{"lab", "scratch-vmi"},
	{"lab", "ubuntu-dev"},
}

// renderTable is RenderTable for tests.
func renderTable(t *testing.T, objs []v1alpha1.VMObservation, opts RenderOptions) string {
	t.Helper()
	out, err := RenderTable(objs, opts)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestRenderTable(t *testing.T) {
	objs := sortObservations(loadFixtures(t))
	golden(t, "get-finance", renderTable(t, inNamespace(objs, "finance"), RenderOptions{Now: fixtureNow}))
	golden(t, "get-all", renderTable(t, objs, RenderOptions{Now: fixtureNow, AllNamespaces: true}))
	golden(t, "get-all-wide", renderTable(t, objs, RenderOptions{Now: fixtureNow, AllNamespaces: true, Wide: true}))
}

func TestRenderDescribe(t *testing.T) {
	objs := loadFixtures(t)
	for _, d := range goldenDescribes {
		t.Run(d.name, func(t *testing.T) {
			o := named(t, objs, d.name)
			golden(t, "describe-"+d.name, RenderDescribe([]v1alpha1.VMObservation{o}, RenderOptions{Now: fixtureNow}))
		})
	}
}

func TestRenderColor(t *testing.T) {
	objs := sortObservations(loadFixtures(t))
	o := named(t, objs, "win2k22-app")
	out := RenderDescribe([]v1alpha1.VMObservation{o}, RenderOptions{Now: fixtureNow, Color: true})
	golden(t, "describe-win2k22-app-color", out)
	for _, want := range []string{sgrYellow + "Degraded" + sgrReset, sgrGreen + "Healthy" + sgrReset} {
		if !strings.Contains(out, want) {
			t.Errorf("coloured describe lacks %q", want)
		}
	}
	table := renderTable(t, objs, RenderOptions{Now: fixtureNow, AllNamespaces: true, Color: true})
	golden(t, "get-all-color", table)
	// Colour must not change the layout: without the escape codes each
	// table is the plain one.
	sgr := regexp.MustCompile("\x1b\\[[0-9;]*m")
	for _, opts := range []RenderOptions{
		{Now: fixtureNow, AllNamespaces: true},
		{Now: fixtureNow, Wide: true},
		{Now: fixtureNow, NoHeaders: true},
		{Now: fixtureNow, AllNamespaces: true, ShowLabels: true, LabelColumns: []string{"tier"}},
	} {
		plain := renderTable(t, objs, opts)
		opts.Color = true
		colored := renderTable(t, objs, opts)
		if stripped := sgr.ReplaceAllString(colored, ""); stripped != plain {
			t.Errorf("coloured table %+v without colours differs from the plain table:\n%s\n---\n%s", opts, stripped, plain)
		}
		if strings.Count(colored, sgrGreen+"Healthy"+sgrReset) < 2 {
			t.Errorf("coloured table %+v has too few green Healthy verdicts:\n%s", opts, colored)
		}
		if bytes.Contains([]byte(plain), []byte("\x1b[")) {
			t.Errorf("uncoloured table %+v has escape codes", opts)
		}
	}
}

func TestRenderEdgeCases(t *testing.T) {
	// A VMObservation the controller has not observed yet.
	empty := v1alpha1.VMObservation{
		ObjectMeta: metav1.ObjectMeta{Name: "fresh", Namespace: "ns", CreationTimestamp: metav1.NewTime(fixtureNow.Add(-5 * time.Second))},
		Spec:       v1alpha1.VMObservationSpec{VMName: "fresh"},
	}
	if got, want := renderTable(t, []v1alpha1.VMObservation{empty}, RenderOptions{Now: fixtureNow}),
		"NAME    VERDICT   CONTROL-PLANE   NODE     GUEST    REASON   AGE\n"+
			"fresh   <none>    <none>          <none>   <none>   <none>   5s\n"; got != want {
		t.Errorf("table of an empty status:\n%s\nwant\n%s", got, want)
	}
	if got, want := RenderDescribe([]v1alpha1.VMObservation{empty}, RenderOptions{Now: fixtureNow}),
		"fresh  <none>\n└─ no status yet: the vmobs controller has not observed this VM\n"; got != want {
		t.Errorf("describe of an empty status:\n%s\nwant\n%s", got, want)
	}

	// Ages in the past, the future, and a status for an older generation.
	ts := func(d time.Duration) *metav1.Time { x := metav1.NewTime(fixtureNow.Add(d)); return &x }
	o := v1alpha1.VMObservation{
		ObjectMeta: metav1.ObjectMeta{Name: "vm1", Namespace: "ns", Generation: 3},
		Status: v1alpha1.VMObservationStatus{
			ObservedGeneration: 2, Verdict: v1alpha1.VerdictFailed, Reason: "CrashLoop",
			Layers: &v1alpha1.Layers{
				ControlPlane: v1alpha1.LayerStatus{Verdict: v1alpha1.VerdictFailed, Reason: "CrashLoop", LastTransitionTime: ts(-3 * time.Minute), StaleAt: ts(-time.Minute),
					Evidence: []v1alpha1.Evidence{{Kind: "Pod", Name: "p", Field: "status.message", Value: `back-off "x"`, Time: ts(2 * time.Minute)}}},
				Node:  v1alpha1.LayerStatus{Verdict: v1alpha1.VerdictProgressing, Reason: "Scheduling", LastTransitionTime: ts(90 * time.Second)},
				Guest: v1alpha1.LayerStatus{Verdict: v1alpha1.VerdictSuspended},
			},
			LiveMigratable: &v1alpha1.LiveMigratability{Status: metav1.ConditionFalse, Reasons: []string{"DisksNotLiveMigratable", "HostDeviceNotLiveMigratable"}},
		},
	}
	want := `vm1  Failed  CrashLoop  (observed generation 2, current 3)
├─ control plane  Failed       CrashLoop   since 3m, stale since 60s
│   evidence: Pod/p status.message="back-off \"x\"" (in 2m)
├─ node           Progressing  Scheduling  since +90s
├─ guest          Suspended    <none>
└─ live-migratable  False: DisksNotLiveMigratable, HostDeviceNotLiveMigratable
`
	if got := RenderDescribe([]v1alpha1.VMObservation{o}, RenderOptions{Now: fixtureNow}); got != want {
		t.Errorf("describe:\n%s\nwant\n%s", got, want)
	}
}

func TestNormalizeAges(t *testing.T) {
	for in, want := range map[string]string{
		"since 3m, stale in 4m30s":           "since <age>, stale in <age>",
		"x (12s ago) y":                      "x (<age> ago) y",
		"since +2d16h":                       "since +<age>",
		"vm-3  node-b  restarts=0  10.0.2.2": "vm-3  node-b  restarts=0  10.0.2.2",
		"\x1b[32mHealthy\x1b[0m  3y":         "\x1b[32mHealthy\x1b[0m  <age>",
	} {
		if got := normalizeAges(in); got != want {
			t.Errorf("normalizeAges(%q) = %q, want %q", in, got, want)
		}
	}
}
