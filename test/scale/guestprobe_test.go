package scale

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/app"
	"github.com/vmobs/vmobs/internal/factsource"
	"github.com/vmobs/vmobs/internal/guestprobe"
	"github.com/vmobs/vmobs/internal/scheme"
	"github.com/vmobs/vmobs/internal/simulator"
	"github.com/vmobs/vmobs/internal/testenv"
)

var (
	flagProbeN        = flag.Int("scale.guest-probe-n", 0, "VMs for TestScaleGuestProbe; 0 runs its smoke version (N=50); see docs/scale.md")
	flagProbeInterval = flag.Duration("scale.guest-probe-interval", 0, "the manager's --guest-probe-interval (default: the manager's, 5m; smoke 5s)")
	flagProbeQPS      = flag.Float64("scale.guest-probe-qps", 0, "the manager's --guest-probe-qps (default: the manager's, 5; smoke 20)")
	flagProbeWindow   = flag.Duration("scale.guest-probe-window", 0, "how long the probes are measured once every VM was probed (default: one interval)")
)

// guestProbeFigures is the row TestScaleGuestProbe adds to
// bin/scale-results.json.
type guestProbeFigures struct {
	N               int     `json:"n"`
	Smoke           bool    `json:"smoke"`
	IntervalSeconds float64 `json:"interval_seconds"`
	QPSBudget       float64 `json:"qps_budget"`
	Workers         int     `json:"workers"`
	WindowSeconds   float64 `json:"window_seconds"`
	// FirstRoundSeconds is how long it took from the manager's start until
	// every VM's status carried what its guest agent answered.
	FirstRoundSeconds float64 `json:"first_round_seconds"`
	// Probes and ProbesPerSecond count the probes (three GETs each) in the
	// window, from the manager's vmobs_guest_probes_total; Failed those
	// that did not end "ok".
	Probes          int     `json:"probes"`
	ProbesPerSecond float64 `json:"probes_per_second"`
	Failed          int     `json:"failed"`
	// A probe's time, its three GETs through kube-apiserver and virt-api
	// one after another, as the manager's transport saw them.
	LatencyMSP50 float64 `json:"latency_ms_p50"`
	LatencyMSP99 float64 `json:"latency_ms_p99"`
	LatencyMSMax float64 `json:"latency_ms_max"`
	// StatusWrites is the manager's VMObservation writes in the window: an
	// unchanging guest must cost none.
	StatusWrites int `json:"status_writes"`
}

// probeTimer records when each GET of a guest agent subresource went out
// and when its answer was in, per VMI.
type probeTimer struct {
	mu    sync.Mutex
	calls []probeCall
}

type probeCall struct {
	vmi, sub   string
	start, end time.Time
}

func (p *probeTimer) wrap(cfg *rest.Config) *rest.Config {
	return testenv.Intercept(cfg, func(req *http.Request, next http.RoundTripper) (*http.Response, error) {
		// /apis/subresources.kubevirt.io/v1/namespaces/NS/virtualmachineinstances/NAME/SUB
		parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
		if len(parts) != 8 || parts[1] != "subresources.kubevirt.io" {
			return next.RoundTrip(req)
		}
		start := time.Now()
		resp, err := next.RoundTrip(req)
		p.mu.Lock()
		p.calls = append(p.calls, probeCall{vmi: parts[4] + "/" + parts[6], sub: parts[7], start: start, end: time.Now()})
		p.mu.Unlock()
		return resp, err
	})
}

// probesMS are the durations of the probes that began in [from, to): from
// a guestosinfo GET to the end of the same VMI's next filesystemlist GET.
func (p *probeTimer) probesMS(from, to time.Time) []float64 {
	p.mu.Lock()
	calls := slices.Clone(p.calls)
	p.mu.Unlock()
	open := map[string]time.Time{}
	var out []float64
	for _, c := range calls {
		switch c.sub {
		case simulator.SubresourceGuestOSInfo:
			if !c.start.Before(from) && c.start.Before(to) {
				open[c.vmi] = c.start
			} else {
				delete(open, c.vmi)
			}
		case simulator.SubresourceFilesystemList:
			if s, ok := open[c.vmi]; ok {
				out = append(out, float64(c.end.Sub(s).Microseconds())/1000)
				delete(open, c.vmi)
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestScaleGuestProbe measures what probing the guest agents costs: N
// Running VMs with a connected agent, the simulator's virt-api served
// through kube-apiserver's aggregator, and the manager, as a user bound to
// its ClusterRole, probing every agent on its budget. Once every VM's
// status carries its guest's answers, it measures for a window: probes
// per second, a probe's latency, and the status writes (none: the guests
// do not change).
func TestScaleGuestProbe(t *testing.T) {
	n, smoke := *flagProbeN, false
	if n <= 0 {
		n, smoke = 50, true
	}
	def := app.Defaults().GuestProbe
	interval, qps := def.Interval, def.QPS
	if smoke {
		interval, qps = 5*time.Second, 20
	}
	if *flagProbeInterval > 0 {
		interval = *flagProbeInterval
	}
	if *flagProbeQPS > 0 {
		qps = *flagProbeQPS
	}
	window := interval
	if *flagProbeWindow > 0 {
		window = *flagProbeWindow
	}
	env := controlPlane(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	admin, err := client.New(env.Config, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	// As the harness's world: the VMs booted -scale.age ago, so no grace
	// period ends in the window; the nodes beat with the real clock.
	age := *flagAge
	sim := simulator.New(admin, simulator.WithSeed(13), simulator.WithClock(func() time.Time { return time.Now().Add(-age) }))
	hb := simulator.New(admin, simulator.WithSeed(14))
	const perNode, perNS = 50, 100
	var nodeNames []string
	for i := range (n + perNode - 1) / perNode {
		name := fmt.Sprintf("gp-node-%03d", i)
		if err := hb.AddNode(ctx, name); err != nil {
			t.Fatal(err)
		}
		nodeNames = append(nodeNames, name)
	}
	go hb.RunHeartbeats(ctx, simulator.Heartbeats{Every: 30 * time.Second, Nodes: func() []string { return nodeNames }})
	specs := make([]simulator.VMSpec, n)
	var namespaces []string
	for i := range specs {
		ns := fmt.Sprintf("gp-%03d", i/perNS)
		if i%perNS == 0 {
			if err := sim.EnsureNamespace(ctx, ns); err != nil {
				t.Fatal(err)
			}
			namespaces = append(namespaces, ns)
		}
		specs[i] = simulator.VMSpec{Namespace: ns, Name: fmt.Sprintf("vm-%05d", i), GuestAgent: true}
	}
	if err := sim.CreateRunningVMs(ctx, specs, simulator.BulkOptions{Workers: *flagWorkers, Node: func(i int) string { return nodeNames[i/perNode] }}); err != nil {
		t.Fatal(err)
	}
	virtAPI, err := sim.ServeVirtAPI(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := virtAPI.Close(); err != nil {
			t.Errorf("closing virt-api: %v", err)
		}
	}()
	id, err := addIdentity(ctx, env, admin, "vmobs-scale-guest-probe", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	writes := &writeLog{}
	timer := &probeTimer{}
	opts := app.InProcessOptions()
	reg := prometheus.NewRegistry()
	opts.Registry = reg
	// The other tests of the package leave their VMs on the shared control
	// plane: this manager observes only this test's namespaces.
	opts.Namespaces = namespaces
	opts.GuestProbe = guestprobe.Config{Options: factsource.Options{Interval: interval, Timeout: def.Timeout}, QPS: qps, Workers: def.Workers}
	start := time.Now()
	mgr, err := app.StartInProcess(ctx, timer.wrap(writes.Wrap(id.cfg)), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := mgr.Stop(); err != nil {
			t.Errorf("stopping the manager: %v", err)
		}
	}()

	// Every VM probed once: at most an interval, or N/QPS when the budget
	// is the bound, plus the cold start.
	firstRound := max(interval, time.Duration(float64(n)/qps*float64(time.Second))) + 2*time.Minute + time.Duration(n)*40*time.Millisecond
	probed := 0
	err = wait.PollUntilContextTimeout(ctx, time.Second, firstRound, true, func(ctx context.Context) (bool, error) {
		var list v1alpha1.VMObservationList
		if err := admin.List(ctx, &list); err != nil {
			return false, nil
		}
		probed = 0
		for i := range list.Items {
			if g := list.Items[i].Status.Guest; slices.Contains(namespaces, list.Items[i].Namespace) && g != nil && g.Hostname != "" && len(g.Filesystems) > 0 {
				probed++
			}
		}
		return probed == n, nil
	})
	if err != nil {
		t.Fatalf("after %s, %d of %d VMs show their guest agent's answers: %v", firstRound, probed, n, err)
	}
	fig := guestProbeFigures{
		N: n, Smoke: smoke, IntervalSeconds: interval.Seconds(), QPSBudget: qps, Workers: def.Workers,
		WindowSeconds: window.Seconds(), FirstRoundSeconds: time.Since(start).Seconds(),
	}
	// A write in flight lands before the window opens.
	time.Sleep(2 * time.Second)
	okBefore, allBefore := probeCounts(t, reg)
	from := time.Now()
	time.Sleep(window)
	to := time.Now()
	okAfter, allAfter := probeCounts(t, reg)
	fig.Probes = int(allAfter - allBefore)
	fig.Failed = fig.Probes - int(okAfter-okBefore)
	fig.ProbesPerSecond = float64(fig.Probes) / to.Sub(from).Seconds()
	ms := timer.probesMS(from, to)
	if len(ms) > 0 {
		fig.LatencyMSP50, fig.LatencyMSP99, fig.LatencyMSMax = pct(ms, 0.5), pct(ms, 0.99), ms[len(ms)-1]
	}
	total, _, unexplained := writes.policyCheck(from, to, 0)
	fig.StatusWrites = total
	t.Logf("guest probes at N=%d (interval %s, %.0f QPS, %d workers): every VM probed %.1fs after the start; in %s: %d probes (%.2f/s, %d failed), latency p50 %.1f ms p99 %.1f ms max %.1f ms; %d status writes",
		n, interval, qps, def.Workers, fig.FirstRoundSeconds, window, fig.Probes, fig.ProbesPerSecond, fig.Failed,
		fig.LatencyMSP50, fig.LatencyMSP99, fig.LatencyMSMax, fig.StatusWrites)
	if fig.StatusWrites > 0 {
		t.Errorf("%d VMObservation writes while no guest changed: %v", fig.StatusWrites, unexplained)
	}
	if fig.Failed > 0 {
		t.Errorf("%d of %d probes failed in the window", fig.Failed, fig.Probes)
	}
	if fig.Probes == 0 || len(ms) == 0 {
		t.Errorf("no probe in the window of %s", window)
	}
	// The budget holds: never more than QPS probes a second (a second's
	// burst aside).
	if limit := qps*to.Sub(from).Seconds() + qps; float64(fig.Probes) > limit {
		t.Errorf("%d probes in %s, over the budget of %.0f QPS", fig.Probes, window, qps)
	}

	if err := mergeGuestProbe(resultsPath(t, smoke), fig); err != nil {
		t.Fatal(err)
	}
}

// probeCounts reads vmobs_guest_probes_total: the probes that ended "ok"
// and all of them.
func probeCounts(t *testing.T, reg *prometheus.Registry) (ok, all float64) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "vmobs_guest_probes_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			v := m.GetCounter().GetValue()
			all += v
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" && l.GetValue() == "ok" {
					ok += v
				}
			}
		}
	}
	return ok, all
}

// mergeGuestProbe adds the figures to the results file, keyed by N, and
// the two headline keys of the largest N measured.
func mergeGuestProbe(path string, fig guestProbeFigures) error {
	return mergeFigures(path, "guest_probe", fig.N, fig, map[string]any{
		"guest_probe_qps":            fig.ProbesPerSecond,
		"guest_probe_latency_p99_ms": fig.LatencyMSP99,
	})
}
