package demo

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/simulator"
	"github.com/vmobs/vmobs/internal/testenv"
)

// TestDemo runs the demo as `vmobs demo --non-interactive --fast --vms 8
// --duration 80s --until-settled` would, on the real control plane, and
// checks that vmobs diagnosed every scripted scenario with the layer,
// verdict and reason it is built to produce. It ends once every scenario
// is diagnosed or past its deadline (about 45 seconds, Prometheus and the
// domain-stats scenarios included); 80s only caps it on a machine too
// loaded to play the scenarios in time.
func TestDemo(t *testing.T) {
	if err := testenv.CheckAssets(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out testenv.LockedBuffer
	start := time.Now()
	res, err := Run(ctx, Options{
		VMs: 8, Duration: 80 * time.Second, Seed: 1,
		NonInteractive: true, Fast: true, UntilSettled: true,
		Out: &out, Err: &out,
	})
	took := time.Since(start)
	text := out.String()
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, text)
	}
	t.Logf("demo ran %s (%s); control plane up in %s; first VM Healthy at +%s",
		took.Round(100*time.Millisecond), res.StopReason, res.ControlPlaneUp.Round(100*time.Millisecond), res.FirstHealthy.Round(100*time.Millisecond))

	// Without bin/prometheus the domain-stats scenarios are skipped.
	want := len(simulator.Scenarios)
	if prometheusBuilt() != nil {
		want -= len(domainStatsScenarios())
	} else if !strings.Contains(text, "domain stats: Prometheus at http://") {
		t.Errorf("the output does not say Prometheus scrapes the virt-handlers")
	}
	if len(res.Scenarios) != want {
		t.Errorf("%d scenarios in the result, want %d of the catalogue's %d", len(res.Scenarios), want, len(simulator.Scenarios))
	}
	for _, s := range res.Scenarios {
		if s.Outcome != OutcomeDiagnosed {
			t.Errorf("scenario %s: not diagnosed as built (%s; played at +%s, deadline +%s, the demo ended at +%s): expected %s, seen %s %s (VM %s)%s",
				s.Name, s.Outcome, s.PlayedAt.Round(100*time.Millisecond), s.Due.Round(100*time.Millisecond), res.Elapsed.Round(100*time.Millisecond),
				s.Expected(), s.Layer, s.Now, s.Overall, playErr(s.PlayErr))
			continue
		}
		// The summary says so too.
		if !strings.Contains(text, "✓ "+s.Name+" ") {
			t.Errorf("the summary has no ✓ line for %s", s.Name)
		}
	}
	ok, total := res.Diagnosed()
	if want := fmt.Sprintf("Scripted scenarios: %d of %d diagnosed", ok, total); !strings.Contains(text, want) {
		t.Errorf("the summary does not say %q", want)
	}
	if res.FirstHealthy == 0 || res.Verdicts["Healthy"] == 0 {
		t.Errorf("no VM was Healthy: %v", res.Verdicts)
	}
	for _, want := range []string{"control plane up at", "kubectl --kubeconfig ", " get vmobs -A -o wide", "VERDICT", "REASONS"} {
		if !strings.Contains(text, want) {
			t.Errorf("the output has no %q", want)
		}
	}
	if _, err := os.Stat(res.TempDir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the temporary directory %s is still there (%v)", res.TempDir, err)
	}
	if len(res.Errors) > 0 {
		t.Errorf("problems on the way: %v", res.Errors)
	}
	if t.Failed() {
		t.Logf("output:\n%s", text)
	}
}

// TestDemoGuestProbeScenarios runs `vmobs demo --scenario NAME
// --non-interactive --fast --until-settled` for the scenarios read from
// the guest agent through the simulator's virt-api, an aggregated API of
// the demo's kube-apiserver: each ends diagnosed as built, with its ✓ line.
func TestDemoGuestProbeScenarios(t *testing.T) {
	if err := testenv.CheckAssets(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"filesystem-nearly-full", "guest-info-unreachable"} {
		t.Run(name, func(t *testing.T) {
			sc, ok := simulator.ScenarioByName(name)
			if !ok || !sc.GuestProbe {
				t.Fatalf("%s is not a guest probe scenario of the catalogue", name)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			var out testenv.LockedBuffer
			res, err := Run(ctx, Options{
				Scenario: name, Duration: 2 * time.Minute, Seed: 1,
				NonInteractive: true, Fast: true, UntilSettled: true,
				Out: &out, Err: &out,
			})
			text := out.String()
			if err != nil {
				t.Fatalf("demo: %v\n%s", err, text)
			}
			if len(res.Scenarios) != 1 || res.Scenarios[0].Outcome != OutcomeDiagnosed {
				t.Fatalf("not diagnosed as built: %+v\n%s", res.Scenarios, text)
			}
			for _, want := range []string{"virt-api: the simulator's subresources.kubevirt.io/v1 registered as an APIService", "✓ " + name + " "} {
				if !strings.Contains(text, want) {
					t.Errorf("the output has no %q:\n%s", want, text)
				}
			}
			t.Logf("%s diagnosed at +%s (played at +%s); the demo ran %s", name,
				res.Scenarios[0].SeenAt.Round(100*time.Millisecond), res.Scenarios[0].PlayedAt.Round(100*time.Millisecond), res.Elapsed.Round(100*time.Millisecond))
		})
	}
}

// TestPlanSkipsDomainStatsScenarios checks that the director plans the
// domain-stats scenarios only when Prometheus runs, in a full run and for
// --scenario.
func TestPlanSkipsDomainStatsScenarios(t *testing.T) {
	all, withoutDS := ScenarioNames(), []string{}
	for _, sc := range simulator.Scenarios {
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
			Overall: state{"Healthy", "Running"}, Layers: [3]state{{"Healthy", "Running"}, {"Healthy", "LauncherRunning"}, {"Healthy", "GuestAgentConnected"}}}
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

func playErr(e string) string {
	if e == "" {
		return ""
	}
	return "; playing it failed: " + e
}
