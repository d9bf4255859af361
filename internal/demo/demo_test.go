package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/simulator"
)

// TestPlanSkipsDomainStatsScenarios checks that the director plans the
// domain-stats scenarios only when Prometheus runs, in a full run and for
// --scenario.
func TestPlanSkipsDomainStatsScenarios(t *testing.T) {
	all, withoutDS := ScenarioNames(), []string{}
	for _, sc := range Catalogue() {
		if !sc.DomainStats {
			withoutDS = append(withoutDS, sc.Name)
		}
	}
	if len(withoutDS) == len(all) {
		t.Fatal("no scenario needs domain stats")
	}
	for _, tc := range []struct {
		name        string
		scenario    string
		domainStats bool
		want        []string
	}{
		{"full run with Prometheus", "", true, all},
		{"full run without", "", false, withoutDS},
		{"one domain-stats scenario", "guest-cpu-stalled", true, []string{"guest-cpu-stalled"}},
		{"another scenario without", "stopped", false, []string{"stopped"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDirector(nil, nil, FastPace(), Options{Scenario: tc.scenario}, func(t Tool) bool { return t == ToolPrometheus && !tc.domainStats })
			var got []string
			for _, p := range d.scenarios {
				got = append(got, p.sc.Name)
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("planned %v, want %v", got, tc.want)
			}
		})
	}
}

// TestRenderViewFits checks that a frame of a big fleet fits the screen
// and keeps the worst verdicts on it.
func TestRenderViewFits(t *testing.T) {
	var s snapshot
	for i := range 120 {
		v := vmState{Namespace: "prod", Name: fmt.Sprintf("web-%d", i), HasStatus: true,
			Overall: state{"Healthy", "Running"}, Layers: [4]state{{"Healthy", "Running"}, {"Healthy", "LauncherRunning"}, {"Healthy", "GuestAgentConnected"}, {"Healthy", "NoPersistentVolumes"}}}
		if i%10 == 0 {
			v.Overall = state{"Degraded", "MigrationFailed"}
			v.Layers[0] = v.Overall
		}
		s.VMs = append(s.VMs, v)
	}
	start := time.Now()
	for i := range 30 {
		s.Recent = append(s.Recent, Change{At: start.Add(time.Duration(i) * time.Second), Namespace: "prod", Name: "web-1", Layer: v1alpha1.LayerControlPlane,
			From: state{"Progressing", "Migrating"}, To: state{"Healthy", "Running"}, Overall: state{"Healthy", "Running"}})
	}
	for _, size := range [][2]int{{80, 24}, {120, 40}, {200, 60}, {40, 10}} {
		w, h := size[0], size[1]
		lines := renderView([]string{"head 1", "head 2"}, s, start, w, h)
		if len(lines) > h {
			t.Errorf("%dx%d: %d lines", w, h, len(lines))
		}
		joined := strings.Join(lines, "\n")
		if h >= 24 && !strings.Contains(joined, "Degraded (12)") {
			t.Errorf("%dx%d: no Degraded group:\n%s", w, h, joined)
		}
		for _, l := range lines {
			if n := len([]rune(truncate(l, w))); n > w {
				t.Errorf("%dx%d: line of %d runes after truncate", w, h, n)
			}
		}
	}
	if got := colorize("a Degraded/MigrationFailed → Healthy/Running b"); !strings.Contains(got, "\x1b[33mDegraded\x1b[0m/MigrationFailed") || !strings.Contains(got, "\x1b[32mHealthy\x1b[0m/Running") {
		t.Errorf("colorize: %q", got)
	}
}

// TestVerdictOrder keeps the view's order of verdicts that of
// Verdict.Severity, worst first, with every verdict once.
func TestVerdictOrder(t *testing.T) {
	seen := map[string]bool{}
	for i, v := range verdictOrder {
		seen[v] = true
		if i > 0 && v1alpha1.Verdict(verdictOrder[i-1]).Severity() <= v1alpha1.Verdict(v).Severity() {
			t.Errorf("%s is listed before %s but is not worse", verdictOrder[i-1], v)
		}
	}
	for _, v := range []v1alpha1.Verdict{v1alpha1.VerdictHealthy, v1alpha1.VerdictProgressing, v1alpha1.VerdictSuspended,
		v1alpha1.VerdictDegraded, v1alpha1.VerdictFailed, v1alpha1.VerdictUnknown} {
		if !seen[string(v)] {
			t.Errorf("%s is not in verdictOrder", v)
		}
	}
}

// fakeBuilder can build the tools it holds.
type fakeBuilder map[Tool]bool

func (b fakeBuilder) CanBuild(t Tool) bool { return b[t] }

func (b fakeBuilder) Build(context.Context, Tool, io.Writer) error { return nil }

// TestPlanLateness checks which missing tools the demo builds while it
// plays and which it leaves out, and that a scenario asked for by name
// whose tool can be neither found nor built fails before anything starts.
func TestPlanLateness(t *testing.T) {
	notBuilt := errors.New("not built")
	all := map[Tool]error{ToolControllerManager: notBuilt, ToolPrometheus: notBuilt, ToolKubectl: notBuilt}
	for _, tc := range []struct {
		name     string
		why      map[Tool]error
		builder  Builder
		scenario string
		build    []Tool
		skipped  []Tool
		err      string
	}{
		{name: "everything built", why: nil, builder: fakeBuilder{ToolPrometheus: true}},
		{name: "nothing built, a checkout", why: all, builder: fakeBuilder{ToolControllerManager: true, ToolPrometheus: true, ToolKubectl: true},
			build: lateTools},
		{name: "nothing built, no builder", why: all, skipped: lateTools},
		{name: "Prometheus elsewhere", why: all, builder: fakeBuilder{ToolControllerManager: true, ToolKubectl: true},
			build: []Tool{ToolControllerManager, ToolKubectl}, skipped: []Tool{ToolPrometheus}},
		{name: "a domain-stats scenario that joins later", why: all, builder: fakeBuilder{ToolPrometheus: true}, scenario: "guest-cpu-stalled",
			build: []Tool{ToolPrometheus}, skipped: []Tool{ToolControllerManager, ToolKubectl}},
		{name: "a domain-stats scenario that cannot play", why: all, builder: fakeBuilder{ToolControllerManager: true}, scenario: "guest-cpu-stalled",
			err: "scenario guest-cpu-stalled reads domain stats through Prometheus: not built"},
		{name: "a storage scenario that cannot play", why: all, scenario: "volume-not-bound",
			err: "scenario volume-not-bound plays on kube-controller-manager: not built"},
		{name: "a scenario that needs neither", why: all, scenario: "stopped", skipped: lateTools},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := planLateness(tc.why, tc.builder, tc.scenario)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(l.build) != fmt.Sprint(tc.build) {
				t.Errorf("built while playing: %v, want %v", l.build, tc.build)
			}
			var skipped []Tool
			for _, tool := range lateTools {
				if l.skipped[tool] != nil {
					skipped = append(skipped, tool)
				}
				if want := slices.Contains(tc.build, tool) || slices.Contains(tc.skipped, tool); l.missing(tool) != want {
					t.Errorf("missing(%s) = %v, want %v", tool, l.missing(tool), want)
				}
			}
			if fmt.Sprint(skipped) != fmt.Sprint(tc.skipped) {
				t.Errorf("left out: %v, want %v", skipped, tc.skipped)
			}
		})
	}
}

// TestLateJoinSettles follows a run whose storage scenarios wait for
// kube-controller-manager and whose domain-stats scenarios are skipped:
// it is not settled while a tool is awaited, even with every planned
// scenario diagnosed; once the tool joins, its scenarios are planned from
// the join, and the result says which joined late and which were skipped.
func TestLateJoinSettles(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pace := FastPace()
	tr := newTracker(start)
	storage, domain := scenariosNeeding(ToolControllerManager, ""), scenariosNeeding(ToolPrometheus, "")
	if len(storage) == 0 || len(domain) == 0 {
		t.Fatalf("storage scenarios %v, domain-stats scenarios %v", storage, domain)
	}
	tr.waitTool(ToolControllerManager, storage, "")
	tr.waitTool(ToolPrometheus, domain, "bin/prometheus not built")
	tr.waitTool(ToolKubectl, nil, "")

	missing := func(t Tool) bool { return t != ToolKubectl }
	d := newDirector(nil, tr, pace, Options{}, missing)
	for _, p := range d.scenarios {
		if needs(p.sc) != "" {
			t.Fatalf("planned %s, which needs %s", p.sc.Name, needs(p.sc))
		}
	}
	tr.setPlan(d.scenarios, pace, start)
	// Every planned scenario played and diagnosed.
	for _, p := range d.scenarios {
		tr.played(p.ns, p.vm, start.Add(time.Second), nil, pace)
		tr.byVM[p.ns+"/"+p.vm].Seen = true
	}
	now := start.Add(time.Minute)
	if settled, _ := tr.settled(now); settled {
		t.Fatal("settled while kube-controller-manager is awaited")
	}

	// kube-controller-manager joins at +2m; the director plans its
	// scenarios from then (as run does on a join).
	joinAt := start.Add(2 * time.Minute)
	var scs []simulator.Scenario
	for _, sc := range Catalogue() {
		if needs(sc) == ToolControllerManager {
			scs = append(scs, sc)
		}
	}
	tr.setPlan(plan(scs, pace), pace, joinAt)
	tr.joinedTool(ToolControllerManager, joinAt)
	if settled, _ := tr.settled(joinAt); settled {
		t.Fatal("settled before the joined scenarios played")
	}
	for i, name := range storage {
		r := tr.byVM[scenarioNamespace+"/"+name]
		if r == nil {
			t.Fatalf("joined scenario %s not tracked", name)
		}
		if want := joinAt.Add(pace.ScenarioStart + time.Duration(i)*pace.ScenarioEvery).Sub(start); r.PlayAt != want {
			t.Errorf("%s planned at +%s, want +%s", name, r.PlayAt, want)
		}
		tr.played(r.Namespace, r.VM, joinAt.Add(r.PlayAt), nil, pace)
		r.Seen = true
	}
	// kubectl, awaited with no scenario, does not hold the run.
	if settled, allSeen := tr.settled(joinAt.Add(time.Minute)); !settled || !allSeen {
		t.Fatalf("settled = %v, allSeen = %v once every scenario is diagnosed", settled, allSeen)
	}

	res := tr.result(joinAt.Add(time.Minute))
	if fmt.Sprint(res.Skipped) != fmt.Sprint(domain) {
		t.Errorf("skipped %v, want the domain-stats scenarios %v", res.Skipped, domain)
	}
	byTool := map[Tool]LateTool{}
	for _, l := range res.Late {
		byTool[l.Tool] = l
	}
	if l := byTool[ToolControllerManager]; !l.Joined || l.JoinedAt != 2*time.Minute {
		t.Errorf("kube-controller-manager: %+v, want joined at +2m", l)
	}
	if l := byTool[ToolKubectl]; l.Joined || l.Skipped != "the demo ended before kubectl was built" {
		t.Errorf("kubectl: %+v, want the demo ended before it was built", l)
	}
	var out strings.Builder
	writeSummary(&out, res, pace, nil, "")
	for _, want := range []string{
		"joined late, once kube-controller-manager was built (+2m0s): " + strings.Join(storage, ", "),
		"skipped, as they need Prometheus (bin/prometheus not built): " + strings.Join(domain, ", "),
		"kubectl: the demo ended before kubectl was built",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the summary does not say %q:\n%s", want, out.String())
		}
	}
}

// TestCheckoutBuilderBuildsOnlyWhereTheDemoLooks checks that the
// checkout's recipes are offered only for the paths they build: a
// Prometheus or a control plane the environment points elsewhere is the
// user's to build.
func TestCheckoutBuilderBuildsOnlyWhereTheDemoLooks(t *testing.T) {
	b := CheckoutBuilder()
	t.Setenv("KUBEBUILDER_ASSETS", "")
	t.Setenv("PROMETHEUS", "")
	if !b.CanBuild(ToolControllerManager) || !b.CanBuild(ToolKubectl) {
		t.Error("cannot build kube-controller-manager and kubectl into bin/k8s")
	}
	if _, err := exec.LookPath("make"); err == nil && !b.CanBuild(ToolPrometheus) {
		t.Error("cannot build bin/prometheus")
	}
	t.Setenv("KUBEBUILDER_ASSETS", t.TempDir())
	t.Setenv("PROMETHEUS", filepath.Join(t.TempDir(), "prometheus"))
	for _, tool := range lateTools {
		if b.CanBuild(tool) {
			t.Errorf("offers to build %s where the checkout's recipe does not put it", tool)
		}
	}
}
