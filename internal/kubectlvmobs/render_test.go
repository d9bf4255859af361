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

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/kubectlvmobs/plugintest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/ from the current output")

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

// golden compares got, ages normalised, with testdata/name.golden, or
// rewrites the file with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	got = plugintest.NormalizeAges(got)
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
	objs := sortObservations(plugintest.LoadFixtures(t))
	golden(t, "get-finance", renderTable(t, inNamespace(objs, "finance"), RenderOptions{Now: plugintest.FixtureNow}))
	golden(t, "get-all", renderTable(t, objs, RenderOptions{Now: plugintest.FixtureNow, AllNamespaces: true}))
	golden(t, "get-all-wide", renderTable(t, objs, RenderOptions{Now: plugintest.FixtureNow, AllNamespaces: true, Wide: true}))
}

func TestRenderDescribe(t *testing.T) {
	objs := plugintest.LoadFixtures(t)
	for _, d := range goldenDescribes {
		t.Run(d.name, func(t *testing.T) {
			o := named(t, objs, d.name)
			golden(t, "describe-"+d.name, RenderDescribe([]v1alpha1.VMObservation{o}, RenderOptions{Now: plugintest.FixtureNow}))
		})
	}
}

func TestRenderColor(t *testing.T) {
	objs := sortObservations(plugintest.LoadFixtures(t))
	o := named(t, objs, "win2k22-app")
	out := RenderDescribe([]v1alpha1.VMObservation{o}, RenderOptions{Now: plugintest.FixtureNow, Color: true})
	golden(t, "describe-win2k22-app-color", out)
	for _, want := range []string{sgrYellow + "Degraded" + sgrReset, sgrGreen + "Healthy" + sgrReset} {
		if !strings.Contains(out, want) {
			t.Errorf("coloured describe lacks %q", want)
		}
	}
	table := renderTable(t, objs, RenderOptions{Now: plugintest.FixtureNow, AllNamespaces: true, Color: true})
	golden(t, "get-all-color", table)
	// Colour must not change the layout: without the escape codes each
	// table is the plain one.
	sgr := regexp.MustCompile("\x1b\\[[0-9;]*m")
	for _, opts := range []RenderOptions{
		{Now: plugintest.FixtureNow, AllNamespaces: true},
		{Now: plugintest.FixtureNow, Wide: true},
		{Now: plugintest.FixtureNow, NoHeaders: true},
		{Now: plugintest.FixtureNow, AllNamespaces: true, ShowLabels: true, LabelColumns: []string{"tier"}},
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
		ObjectMeta: metav1.ObjectMeta{Name: "fresh", Namespace: "ns", CreationTimestamp: metav1.NewTime(plugintest.FixtureNow.Add(-5 * time.Second))},
		Spec:       v1alpha1.VMObservationSpec{VMName: "fresh"},
	}
	if got, want := renderTable(t, []v1alpha1.VMObservation{empty}, RenderOptions{Now: plugintest.FixtureNow}),
		"NAME    VERDICT   CONTROL-PLANE   NODE     GUEST    STORAGE   REASON   AGE\n"+
			"fresh   <none>    <none>          <none>   <none>   <none>    <none>   5s\n"; got != want {
		t.Errorf("table of an empty status:\n%s\nwant\n%s", got, want)
	}
	if got, want := RenderDescribe([]v1alpha1.VMObservation{empty}, RenderOptions{Now: plugintest.FixtureNow}),
		"fresh  <none>\n└─ no status yet: the vmobs controller has not observed this VM\n"; got != want {
		t.Errorf("describe of an empty status:\n%s\nwant\n%s", got, want)
	}

	// Ages in the past, the future, and a status for an older generation.
	ts := func(d time.Duration) *metav1.Time { x := metav1.NewTime(plugintest.FixtureNow.Add(d)); return &x }
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
	if got := RenderDescribe([]v1alpha1.VMObservation{o}, RenderOptions{Now: plugintest.FixtureNow}); got != want {
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
		if got := plugintest.NormalizeAges(in); got != want {
			t.Errorf("plugintest.NormalizeAges(%q) = %q, want %q", in, got, want)
		}
	}
}

// The engine's fixtures carry no incident (the controller's incident
// tracker sets status.incident, `vmobs analyze` does not), so the wide
// table's INCIDENT cell is checked on a member of a node's incident here.
func TestRenderTableIncident(t *testing.T) {
	o := named(t, plugintest.LoadFixtures(t), "ledger-01")
	o.Status.Incident = &v1alpha1.IncidentRef{Kind: v1alpha1.IncidentKindNodeObservation, Name: "node-b"}
	out := renderTable(t, []v1alpha1.VMObservation{o}, RenderOptions{Now: plugintest.FixtureNow, Wide: true})
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("want a header and one row, got:\n%s", out)
	}
	header, row := strings.Fields(lines[0]), strings.Fields(lines[1])
	if header[len(header)-1] != "INCIDENT" || row[len(row)-1] != "node-b" {
		t.Errorf("want INCIDENT node-b in the last column, got:\n%s", out)
	}
}
