package scale

import (
	"bufio"
	"context"
	"flag"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"testing"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/vmobs/vmobs/internal/app"
	"github.com/vmobs/vmobs/internal/testenv"
	"github.com/vmobs/vmobs/internal/verdict"
)

// run is one harness run.
type run struct {
	cfg        config
	env        *testenv.Env
	dir        string
	kubeconfig string
	c          client.WithWatch
	w          *world
	tr         *tracker
	policy     verdict.Policy
	refresh    time.Duration
	res        *results
}

// TestScale runs the harness: the smoke version by default, the full one
// with -scale.n (make bench-scale). It asserts correctness only: every
// VMObservation equal to the engine's answer after the cold start, after the
// idle period and after the latency phase; no write at idle or across the
// restarts beyond the refresh policy; every source change reflected; the
// results file complete. The figures are reported, never asserted.
func TestScale(t *testing.T) {
	cfg := loadConfig(t)
	e := controlPlane(t)
	started := time.Now()
	r := &run{cfg: cfg, env: e, dir: t.TempDir(), res: newResults(cfg)}
	logFile := filepath.Join(r.dir, "manager.log")
	lf, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	setErrorLogger(lf)
	defer reportLog(t, logFile)

	r.kubeconfig = filepath.Join(r.dir, "kubeconfig")
	if err := e.Kubeconfig(r.kubeconfig); err != nil {
		t.Fatal(err)
	}
	r.c, err = e.Client()
	if err != nil {
		t.Fatal(err)
	}
	opts := managerOptions(cfg, true)
	r.policy, r.refresh = opts.Policy, opts.EvidenceRefreshInterval
	r.res.RefreshSeconds = r.refresh.Seconds()
	r.res.Workers = opts.MaxConcurrentReconciles

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r.tr = newTracker(r.c)
	synced := make(chan struct{})
	go r.tr.run(ctx, synced)
	<-synced

	r.w = newWorld(t, cfg, e.Config)
	r.w.grow(ctx, t, 0) // the first nodes
	if err := r.w.addBystander(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.w.heartbeatAll(ctx); err != nil {
		t.Fatal(err)
	}
	go r.w.heartbeats(ctx, cfg.Heartbeat)

	for _, level := range cfg.levels() {
		r.w.grow(ctx, t, level)
		if level == cfg.N {
			r.benchmarks(ctx, t)
			r.shards(ctx, t) // -scale.shards (shard_test.go)
		}
		if slices.Contains(cfg.MemPoints, level) {
			for _, trim := range []bool{true, false} {
				pt, err := measureChild(ctx, t, r, level, trim)
				if err != nil {
					t.Fatal(err)
				}
				r.res.MemoryPoints = append(r.res.MemoryPoints, pt)
			}
		}
	}
	// A failed correctness check does not stop the measurements: the
	// figures are reported with it.
	if cfg.Binary && len(cfg.MemPoints) > 0 {
		b, err := measureBinary(ctx, t, r, cfg.levels()[len(cfg.levels())-1])
		if err != nil {
			t.Error(err)
		} else {
			r.res.Binary = &b
		}
	}
	r.res.finish(r.w, r.tr, time.Since(started))
	if err := r.res.write(cfg.Out); err != nil {
		t.Fatal(err)
	}
	r.res.printTable(os.Stdout)
	t.Logf("results written to %s", cfg.Out)
	if cfg.Smoke {
		checkKeys(t, cfg.Out)
	}
}

// benchmarks measures, at N VMs: the floor, the cold start, idle with a
// forced resync and a restart, and latency.
func (r *run) benchmarks(ctx context.Context, t *testing.T) {
	cfg, res, w, tr := r.cfg, r.res, r.w, r.tr
	res.Nodes = len(w.nodeList())
	res.Namespaces = len(w.nsList())
	for _, v := range w.vmList() {
		if v.migrated {
			res.MigratedVMs++
		}
	}
	// Cold means cold: no VMObservation left from a memory point below N.
	if err := deleteObservations(ctx, w.c, w.nsList()); err != nil {
		t.Fatal(err)
	}
	if err := tr.waitGone(ctx, isVMNamespace, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	want, _, err := expected(ctx, w.c, r.policy, time.Now(), isVMNamespace)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != cfg.N {
		t.Fatalf("the engine sees %d VMs, want %d", len(want), cfg.N)
	}

	// The floor, then its VMObservations go away.
	res.LoadAvg["floor"] = loadavg()
	floorDur, listed, n, err := floor(ctx, w.c, tr, r.policy, res.Workers, cfg.Converge)
	if err != nil {
		t.Fatal(err)
	}
	res.FloorListSeconds = listed.Seconds()
	if n != cfg.N {
		t.Fatalf("the floor wrote %d VMObservations, want %d", n, cfg.N)
	}
	res.FloorSeconds = floorDur.Seconds()
	if err := deleteObservations(ctx, w.c, floorNamespaces(w.nsList())); err != nil {
		t.Fatal(err)
	}
	if err := tr.waitGone(ctx, isFloorNamespace, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	t.Logf("floor: %d VMObservations created and written in %.2fs", n, res.FloorSeconds)

	// The cold start.
	counter := testenv.NewRequestCounter()
	wl := &writeLog{dropEvents: cfg.NoEvents}
	mcfg := wl.Wrap(counter.Wrap(r.env.Config))
	start := func() *app.InProcess {
		m, err := app.StartInProcess(ctx, mcfg, managerOptions(cfg, true))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	stop := func(m *app.InProcess) {
		if err := m.Stop(); err != nil {
			t.Fatal(err)
		}
	}
	if cfg.ProfileDir != "" {
		if err := os.MkdirAll(cfg.ProfileDir, 0o755); err != nil {
			t.Fatal(err)
		}
		f, err := os.Create(filepath.Join(cfg.ProfileDir, "cpu-cold-start.pb.gz"))
		if err != nil {
			t.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			t.Fatal(err)
		}
		defer f.Close()
	}
	res.LoadAvg["cold start"] = loadavg()
	t0 := time.Now()
	m := start()
	last, err := tr.waitMatch(ctx, want, nil, cfg.Converge)
	if cfg.ProfileDir != "" {
		pprof.StopCPUProfile()
	}
	if err != nil {
		stop(m)
		t.Fatalf("cold start: %v", err)
	}
	res.ConvergenceSeconds = last.Sub(t0).Seconds()
	res.ConvergenceRatio = res.ConvergenceSeconds / res.FloorSeconds
	if e := wl.snapshot(); len(e) > 0 {
		res.ColdFirstWriteSeconds = e[0].at.Sub(t0).Seconds()
	}
	// Let the writes in flight at the last arrival land before counting.
	time.Sleep(time.Second)
	res.ColdWrites = counter.Writes("vmobservations")
	res.ColdCreates = counter.Get("create vmobservations")
	res.ColdStatusWrites = counter.Get("apply vmobservations/status")
	res.ColdEvents = counter.Writes("events")
	wl.mu.Lock()
	res.ColdEventsDropped = wl.dropped
	wl.mu.Unlock()
	res.WritesPerVMCold = float64(res.ColdWrites) / float64(cfg.N)
	res.EventsPerVMCold = float64(res.ColdEvents) / float64(cfg.N)
	t.Logf("cold start: converged in %.2fs (%.2f× the floor), first write after %.2fs (the floor's after %.2fs); %d VMObservation writes (%d creates, %d status), %d event writes",
		res.ConvergenceSeconds, res.ConvergenceRatio, res.ColdFirstWriteSeconds, res.FloorListSeconds, res.ColdWrites, res.ColdCreates, res.ColdStatusWrites, res.ColdEvents)
	r.verify(ctx, t, "after the cold start")

	// Idle, with heartbeats, a forced resync at a third and a restart at
	// two thirds.
	res.LoadAvg["idle"] = loadavg()
	idleStart := time.Now()
	changes := tr.changeCount()
	sleepUntil(ctx, idleStart.Add(cfg.Idle/3))
	resyncAt := time.Now()
	stop(m)
	m = start()
	sleepUntil(ctx, idleStart.Add(2*cfg.Idle/3))
	restartAt := time.Now()
	stop(m)
	sleepUntil(ctx, restartAt.Add(min(10*time.Second, cfg.Idle/10)))
	m = start()
	sleepUntil(ctx, idleStart.Add(cfg.Idle))
	idleEnd := time.Now()
	res.IdleSeconds = idleEnd.Sub(idleStart).Seconds()
	var unexplained []string
	res.IdleWrites, res.IdleRefreshWrites, unexplained = wl.policyCheck(idleStart, idleEnd, r.refresh)
	res.IdleUnexplained = len(unexplained)
	var u2, u3 []string
	res.ResyncWrites, _, u2 = wl.policyCheck(resyncAt, restartAt, r.refresh)
	res.RestartWrites, _, u3 = wl.policyCheck(restartAt, idleEnd, r.refresh)
	res.ResyncUnexplained, res.RestartUnexplained = len(u2), len(u3)
	res.IdleVerdictChanges = tr.changeCount() - changes
	t.Logf("idle %.0fs: %d VMObservation writes (%d evidence refreshes allowed by the %s policy, %d unexplained); resync %d, restart %d; %d verdict changes",
		res.IdleSeconds, res.IdleWrites, res.IdleRefreshWrites, r.refresh, res.IdleUnexplained, res.ResyncWrites, res.RestartWrites, res.IdleVerdictChanges)
	if len(unexplained) > 0 {
		t.Errorf("writes at idle beyond the refresh policy: %d, e.g. %v", len(unexplained), unexplained[:min(5, len(unexplained))])
	}
	if res.IdleVerdictChanges > 0 {
		t.Errorf("%d verdict changes at idle, where nothing changed", res.IdleVerdictChanges)
	}
	r.verify(ctx, t, "after the idle period")

	// Latency.
	baseline, _, err := expected(ctx, w.c, r.policy, time.Now(), isVMNamespace)
	if err != nil {
		t.Fatal(err)
	}
	res.LoadAvg["latency"] = loadavg()
	lat, err := latencyPhase(ctx, r.c, r.c, tr, w.vmList(), baseline, cfg.Rate, cfg.Latency)
	if err != nil {
		stop(m)
		t.Fatal(err)
	}
	res.setLatency(lat, w)
	t.Logf("latency: %d changes at %.1f/s (%d skipped, %d missed): status p50 %.1fms p99 %.1fms; watch p50 %.1fms p99 %.1fms",
		lat.Changes, lat.Rate, lat.Skipped, lat.Missed, res.LatencyP50, res.LatencyP99, res.FloorWatchP50, res.FloorWatchP99)
	if lat.Missed > 0 {
		t.Errorf("%d of %d source changes never showed in their VMObservation", lat.Missed, lat.Changes)
	}
	if _, err := tr.waitMatch(ctx, baseline, nil, cfg.Converge); err != nil {
		t.Errorf("after the latency phase: %v", err)
	}
	stop(m)
	r.verify(ctx, t, "after the latency phase")
}

// verify is the correctness check against the engine on a fresh LIST.
func (r *run) verify(ctx context.Context, t *testing.T, when string) {
	t.Helper()
	n, bad, err := check(ctx, r.w.c, r.policy, isVMNamespace)
	if err != nil {
		t.Fatal(err)
	}
	r.res.Checks++
	if n > 0 {
		r.res.Mismatches += n
		t.Errorf("%s: %d VMObservations differ from the engine's answer: %v", when, n, bad)
	}
}

func floorNamespaces(ns []string) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = floorNamespace(n)
	}
	return out
}

func sleepUntil(ctx context.Context, at time.Time) {
	select {
	case <-ctx.Done():
	case <-time.After(time.Until(at)):
	}
}

// setErrorLogger logs the managers' errors to w (through the flag, so that
// this module needs no direct dependency on zap).
func setErrorLogger(w io.Writer) {
	opts := zap.Options{DestWriter: w}
	fs := flag.NewFlagSet("zap", flag.ContinueOnError)
	opts.BindFlags(fs)
	_ = fs.Parse([]string{"--zap-log-level=error"})
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
}

// reportLog shows the manager's error log, if it has anything.
func reportLog(t *testing.T, path string) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	n := 0
	for sc.Scan() {
		if strings.Contains(sc.Text(), "context canceled") {
			continue // a manager stopped mid-request: the restarts do that
		}
		if n < 10 {
			t.Logf("manager log: %s", sc.Text())
		}
		n++
	}
	if n > 0 {
		t.Logf("manager log: %d error lines", n)
	}
}
