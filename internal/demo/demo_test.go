package demo

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vmobs/vmobs/api/v1alpha1"
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
			d := newDirector(nil, nil, FastPace(), Options{Scenario: tc.scenario}, tc.domainStats)
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
