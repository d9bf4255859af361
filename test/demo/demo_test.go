// Package demo_test runs `vmobs demo` on the real control plane.
package demo_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vmobs/vmobs/internal/demo"
	"github.com/vmobs/vmobs/internal/simulator"
	"github.com/vmobs/vmobs/internal/testenv"
)

// TestDemo runs the demo as `vmobs demo --non-interactive --fast --vms 8
// --duration 150s --until-settled` would, on the real control plane, and
// checks that vmobs diagnosed every scripted scenario with the layer,
// verdict and reason it is built to produce. It ends once every scenario
// is diagnosed or past its deadline (about 45 seconds on an idle machine,
// Prometheus and the domain-stats scenarios included); 150s only caps it
// on a machine so loaded (make test runs it with -race beside other
// control planes) that the director plays the last scenarios a minute
// late: each scenario's deadline counts from when it is played.
func TestDemo(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var out testenv.LockedBuffer
	start := time.Now()
	res, err := demo.Run(ctx, demo.Options{
		VMs: 8, Duration: 150 * time.Second, Seed: 1,
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
	want := len(demo.Catalogue())
	if _, err := os.Stat(testenv.PrometheusBinary()); err != nil {
		for _, sc := range demo.Catalogue() {
			if sc.DomainStats {
				want--
			}
		}
	} else if !strings.Contains(text, "domain stats: Prometheus at http://") {
		t.Errorf("the output does not say Prometheus scrapes the virt-handlers")
	}
	if len(res.Scenarios) != want {
		t.Errorf("%d scenarios in the result, want %d of the catalogue's %d", len(res.Scenarios), want, len(demo.Catalogue()))
	}
	for _, s := range res.Scenarios {
		if s.Outcome != demo.OutcomeDiagnosed {
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
	// The node-lost scenario's node is in `kubectl get nodeobservations`,
	// Unknown for the node it is, with the incident of its three VMs (the
	// scenario's and its two neighbours), and the summary names it.
	lost := ""
	for n, v := range res.NodeObservations {
		if strings.Contains(n, "-node-lost-") {
			lost = n
			if v != "Unknown/NodeNotReady" {
				t.Errorf("the NodeObservation of the lost node %s says %s, want Unknown/NodeNotReady", n, v)
			}
		}
	}
	if lost == "" {
		t.Errorf("no NodeObservation of the node-lost scenario's node among %v", res.NodeObservations)
	} else if members := res.NodeIncidents[lost]; members != 3 {
		t.Errorf("the NodeObservation of the lost node %s holds an incident of %d VMs, want 3 (open incidents: %v)", lost, members, res.NodeIncidents)
	} else if !strings.Contains(text, lost+" Unknown NodeNotReady, an incident of 3 VMs") {
		t.Errorf("the summary does not name the lost node %s with its incident", lost)
	}
	if !strings.Contains(text, " get nodeobservations") {
		t.Errorf("the output does not say how to list the NodeObservations")
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
	for _, name := range []string{"filesystem-nearly-full", "guest-info-unreachable"} {
		t.Run(name, func(t *testing.T) {
			sc, ok := simulator.ScenarioByName(name)
			if !ok || !sc.GuestProbe {
				t.Fatalf("%s is not a guest probe scenario of the catalogue", name)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			var out testenv.LockedBuffer
			res, err := demo.Run(ctx, demo.Options{
				Scenario: name, Duration: 2 * time.Minute, Seed: 1,
				NonInteractive: true, Fast: true, UntilSettled: true,
				Out: &out, Err: &out,
			})
			text := out.String()
			if err != nil {
				t.Fatalf("demo: %v\n%s", err, text)
			}
			if len(res.Scenarios) != 1 || res.Scenarios[0].Outcome != demo.OutcomeDiagnosed {
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

func playErr(e string) string {
	if e == "" {
		return ""
	}
	return "; playing it failed: " + e
}

// lateBuilder "builds" a late tool by linking the real binary, built by
// make, where the demo looks for it, and tells the test each one it did.
type lateBuilder struct {
	real  map[demo.Tool]string
	built chan demo.Tool
}

func (b lateBuilder) CanBuild(t demo.Tool) bool { return b.real[t] != "" }

func (b lateBuilder) Build(_ context.Context, t demo.Tool, _ io.Writer) error {
	var dst string
	switch t {
	case demo.ToolPrometheus:
		dst = testenv.PrometheusBinary()
	case demo.ToolControllerManager:
		dst = testenv.ControllerManagerBinary()
	default:
		dst = filepath.Join(testenv.AssetsDir(), string(t))
	}
	b.built <- t
	return os.Symlink(b.real[t], dst)
}

// TestDemoLateTools runs the demo of a first run: kube-apiserver and etcd
// only, with kube-controller-manager, Prometheus and kubectl missing and
// built (here: linked) once the first verdict is in. The demo starts
// without them, says they join later, starts kube-controller-manager
// against its control plane and Prometheus for the manager as each
// appears, and plays their scenarios then: every scripted scenario ends
// diagnosed as built, and the summary says which joined late.
func TestDemoLateTools(t *testing.T) {
	built := map[demo.Tool]string{
		demo.ToolControllerManager: testenv.ControllerManagerBinary(),
		demo.ToolPrometheus:        testenv.PrometheusBinary(),
		demo.ToolKubectl:           filepath.Join(testenv.AssetsDir(), "kubectl"),
	}
	for _, p := range built {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%v: run make envtest-bin prometheus", err)
		}
	}
	assets := t.TempDir()
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if err := os.Symlink(filepath.Join(testenv.AssetsDir(), bin), filepath.Join(assets, bin)); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("KUBEBUILDER_ASSETS", assets)
	t.Setenv("PROMETHEUS", filepath.Join(t.TempDir(), "prometheus"))

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var out testenv.LockedBuffer
	b := lateBuilder{real: built, built: make(chan demo.Tool, len(built))}
	res, err := demo.Run(ctx, demo.Options{
		VMs: 4, Duration: 200 * time.Second, Seed: 1,
		NonInteractive: true, Fast: true, UntilSettled: true,
		Builder: b, Out: &out, Err: &out,
	})
	text := out.String()
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, text)
	}
	close(b.built)
	var order []demo.Tool
	for tool := range b.built {
		order = append(order, tool)
	}
	if want := []demo.Tool{demo.ToolControllerManager, demo.ToolPrometheus, demo.ToolKubectl}; fmt.Sprint(order) != fmt.Sprint(want) {
		t.Errorf("built %v, want %v, one at a time", order, want)
	}
	for _, want := range []string{
		"kube-controller-manager is not built yet: built in the background once the first verdict is in",
		"Prometheus is not built yet: built in the background once the first verdict is in",
		"domain stats: Prometheus at http://",
		"joined late, once kube-controller-manager was built",
		"joined late, once Prometheus was built",
		"kubectl was built while the demo played",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the output has no %q", want)
		}
	}
	if !res.Prometheus || len(res.Skipped) > 0 {
		t.Errorf("Prometheus = %v, skipped %v: want every tool joined", res.Prometheus, res.Skipped)
	}
	if len(res.Scenarios) != len(demo.Catalogue()) {
		t.Errorf("%d scenarios in the result, want the catalogue's %d", len(res.Scenarios), len(demo.Catalogue()))
	}
	for _, s := range res.Scenarios {
		if s.Outcome != demo.OutcomeDiagnosed {
			t.Errorf("scenario %s: not diagnosed as built (%s; played at +%s, deadline +%s): expected %s, seen %s %s (VM %s)%s",
				s.Name, s.Outcome, s.PlayedAt.Round(100*time.Millisecond), s.Due.Round(100*time.Millisecond),
				s.Expected(), s.Layer, s.Now, s.Overall, playErr(s.PlayErr))
		}
	}
	if len(res.Errors) > 0 {
		t.Errorf("problems on the way: %v", res.Errors)
	}
	if t.Failed() {
		t.Logf("output:\n%s", text)
	}
}
