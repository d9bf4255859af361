package scale

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/app"
	"github.com/vmobs/vmobs/internal/scheme"
	"github.com/vmobs/vmobs/internal/testenv"
	"github.com/vmobs/vmobs/internal/verdict"
)

// run is one harness run.
type run struct {
	cfg config
	env *testenv.Env
	dir string
	// kubeconfig is the manager's identity's, for child processes and the
	// built binary.
	kubeconfig string
	c          client.WithWatch
	w          *world
	tr         *tracker
	policy     verdict.Policy
	refresh    time.Duration
	res        *results
	// mgr is the manager's identity, floor the floor's (identity_test.go).
	mgr, floorID *identity
	floorC       client.Client
	apiMetrics   *apiServerMetrics
}

// TestScale runs the harness: the smoke version by default, the full one
// with -scale.n (make bench-scale). It asserts correctness only: every
// VMObservation equal to the engine's answer after the cold start, after the
// idle period, after the latency phase and after the overload phase; no
// write at idle or across the restarts (beyond the refresh policy when
// evidence refreshes are on); every source change reflected; the results
// file complete. The figures are reported, never asserted.
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

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r.c, err = e.Client()
	if err != nil {
		t.Fatal(err)
	}
	if r.apiMetrics, err = newAPIServerMetrics(e.Config); err != nil {
		t.Fatal(err)
	}
	if r.mgr, err = addIdentity(ctx, e, r.c, managerUser, r.dir); err != nil {
		t.Fatal(err)
	}
	if r.floorID, err = addIdentity(ctx, e, r.c, floorUser, r.dir); err != nil {
		t.Fatal(err)
	}
	if r.floorC, err = client.New(r.floorID.cfg, client.Options{Scheme: scheme.New()}); err != nil {
		t.Fatal(err)
	}
	r.kubeconfig = r.mgr.kubeconfig
	opts := managerOptions(cfg)
	r.policy, r.refresh = opts.Policy, opts.EvidenceRefreshInterval
	r.res.RefreshSeconds = r.refresh.Seconds()
	r.res.RefreshOff = r.refresh <= 0
	r.res.Workers = opts.MaxConcurrentReconciles

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
			for rep := range cfg.MemRepeats {
				pt, err := measureChild(ctx, t, r, level, rep)
				if err != nil {
					t.Fatal(err)
				}
				r.res.MemoryPoints = append(r.res.MemoryPoints, pt)
			}
			// The figures so far, in case a long run is stopped before
			// its end.
			r.res.finish(r.w, r.tr, time.Since(started))
			if err := r.res.write(cfg.Out); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A failed correctness check does not stop the measurements: the
	// figures are reported with it.
	if cfg.Binary && len(cfg.MemPoints) > 0 {
		b, err := measureBinary(ctx, t, r, cfg.levels()[len(cfg.levels())-1], 0)
		if err != nil {
			t.Error(err)
		} else {
			r.res.Binary = &b
		}
		if cfg.MemLimit > 0 {
			b, err := measureBinary(ctx, t, r, cfg.levels()[len(cfg.levels())-1], cfg.MemLimit)
			if err != nil {
				t.Error(err)
			} else {
				r.res.BinaryMemLimit = &b
			}
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

// managerConn is one in-process manager's connection to the API server:
// the manager's identity, its requests counted, its VMObservation writes
// logged and its responses counted by code.
type managerConn struct {
	cfg     *rest.Config
	counter *testenv.RequestCounter
	wl      *writeLog
	resp    *respCounter
}

func (r *run) newManagerConn() *managerConn {
	mc := &managerConn{counter: testenv.NewRequestCounter(), wl: &writeLog{dropEvents: r.cfg.NoEvents}, resp: newRespCounter()}
	mc.cfg = mc.wl.Wrap(mc.counter.Wrap(mc.resp.Wrap(r.mgr.cfg)))
	return mc
}

// startManager starts an in-process manager as `vmobs manager` would run,
// its goroutines labelled for the CPU profiles (cpu_test.go).
func (r *run) startManager(ctx context.Context, t *testing.T, mc *managerConn) *app.InProcess {
	t.Helper()
	var (
		m   *app.InProcess
		err error
	)
	withCPULabel(ctx, cpuLabelManager, func(ctx context.Context) {
		m, err = app.StartInProcess(ctx, mc.cfg, managerOptions(r.cfg))
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func stopManager(t *testing.T, m *app.InProcess) {
	t.Helper()
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
}

// profilePath is where a CPU profile of the run goes: -scale.profile-dir,
// or the run's temp dir (the profiles are read for the CPU figures either
// way).
func (r *run) profilePath(name string) string {
	if r.cfg.ProfileDir != "" {
		return filepath.Join(r.cfg.ProfileDir, name)
	}
	return filepath.Join(r.dir, name)
}

// benchmarks measures, at N VMs: the floor and the cold start (interleaved,
// cfg.ConvergenceRuns times), idle with a forced resync and a restart,
// latency, overload, and the latency phases with incidents off and on.
func (r *run) benchmarks(ctx context.Context, t *testing.T) {
	cfg, res, w := r.cfg, r.res, r.w
	res.Nodes = len(w.nodeList())
	res.Namespaces = len(w.nsList())
	for _, v := range w.vmList() {
		if v.migrated {
			res.MigratedVMs++
		}
	}
	if cfg.ProfileDir != "" {
		if err := os.MkdirAll(cfg.ProfileDir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	m, mc := r.coldStarts(ctx, t)
	r.verify(ctx, t, "after the cold start")
	m = r.idle(ctx, t, m, mc)
	r.verify(ctx, t, "after the idle period")
	r.latency(ctx, t, m)
	r.verify(ctx, t, "after the latency phase")
	ov, err := r.overloadPhase(ctx, t, m, mc.resp)
	if ov != nil {
		res.Overload = ov
		res.OverloadCatchUpSeconds, res.OverloadRequests, res.Overload429s = ov.CatchUpSeconds, ov.Requests, ov.TooManyRequests
	}
	if err != nil {
		t.Error(err)
	}
	stopManager(t, m)
	r.verify(ctx, t, "after the overload phase")
	r.latencyAB(ctx, t, mc) // -scale.latency-ab (latencyab_test.go)
	hs, err := historyFigures(ctx, r.w.c)
	if err != nil {
		t.Fatal(err)
	}
	res.History = hs
	t.Logf("history after the benchmarks: %d of %d VMObservations have one, %d entries (at most %d, %.0f B on average, at most %d B): %v",
		hs.WithHistory, hs.VMObservations, hs.Entries, hs.EntriesMax, hs.BytesMean, hs.BytesMax, hs.ByEvent)
}

// coldStarts measures the floor and the cold start cfg.ConvergenceRuns
// times, interleaved (floor, cold start, floor, cold start, ...), each run
// from a cluster without VMObservations, so that each cold start has a
// floor measured just before it under the same load. It returns the last
// cold start's manager, still running, and its connection.
func (r *run) coldStarts(ctx context.Context, t *testing.T) (*app.InProcess, *managerConn) {
	cfg, res, w, tr := r.cfg, r.res, r.w, r.tr
	var floorProfiles, coldProfiles []*profiledPhase
	var floorVMs, coldReconciles int
	var coldRec reconcileStats
	for i := range cfg.ConvergenceRuns {
		suffix := ""
		if i > 0 {
			suffix = fmt.Sprintf(" %d", i+1)
		}
		// Cold means cold: no VMObservation left from a memory point
		// below N or from the previous run.
		if err := deleteObservations(ctx, w.c, append(w.nsList(), floorNamespaces(w.nsList())...)); err != nil {
			t.Fatal(err)
		}
		if err := tr.waitGone(ctx, func(ns string) bool { return isVMNamespace(ns) || isFloorNamespace(ns) }, 2*time.Minute); err != nil {
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
		res.LoadAvg["floor"+suffix] = loadavg()
		prof, err := startCPUProfile(r.profilePath(fmt.Sprintf("cpu-floor-%d.pb.gz", i+1)))
		if err != nil {
			t.Fatal(err)
		}
		var (
			floorDur, listed time.Duration
			n                int
		)
		withCPULabel(ctx, cpuLabelFloor, func(ctx context.Context) {
			floorDur, listed, n, err = floor(ctx, r.floorC, tr, r.policy, res.Workers, cfg.Converge)
		})
		pp, perr := prof.stop()
		if err != nil {
			t.Fatal(err)
		}
		if perr != nil {
			t.Fatal(perr)
		}
		floorProfiles = append(floorProfiles, pp)
		floorVMs += n
		if n != cfg.N {
			t.Fatalf("the floor wrote %d VMObservations, want %d", n, cfg.N)
		}
		res.FloorListSeconds = listed.Seconds()
		res.FloorSecondsRuns = append(res.FloorSecondsRuns, floorDur.Seconds())
		if err := deleteObservations(ctx, w.c, floorNamespaces(w.nsList())); err != nil {
			t.Fatal(err)
		}
		if err := tr.waitGone(ctx, isFloorNamespace, 2*time.Minute); err != nil {
			t.Fatal(err)
		}
		t.Logf("floor %d: %d VMObservations created and written in %.2fs", i+1, n, floorDur.Seconds())

		// The cold start.
		mc := r.newManagerConn()
		res.LoadAvg["cold start"+suffix] = loadavg()
		prof, err = startCPUProfile(r.profilePath(fmt.Sprintf("cpu-cold-start-%d.pb.gz", i+1)))
		if err != nil {
			t.Fatal(err)
		}
		rec0 := readReconcileStats()
		atStart, err := r.apiMetrics.scrape(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		m := r.startManager(ctx, t, mc)
		last, err := tr.waitMatch(ctx, want, nil, cfg.Converge)
		rec := readReconcileStats().minus(rec0)
		pp, perr = prof.stop()
		if err != nil {
			stopManager(t, m)
			t.Fatalf("cold start %d: %v", i+1, err)
		}
		if perr != nil {
			t.Fatal(perr)
		}
		coldProfiles = append(coldProfiles, pp)
		coldReconciles += int(rec.total)
		coldRec = coldRec.plus(rec)
		conv := last.Sub(t0).Seconds()
		res.ConvergenceSecondsRuns = append(res.ConvergenceSecondsRuns, conv)
		res.ConvergenceRatioRuns = append(res.ConvergenceRatioRuns, conv/floorDur.Seconds())
		if e := mc.wl.snapshot(); len(e) > 0 {
			res.ColdFirstWriteSeconds = e[0].at.Sub(t0).Seconds()
		}
		// The manager's count first, then the API server's once the
		// writes in flight at the last arrival have landed: the manager
		// runs on and may write again meanwhile, which the server's count
		// may then include but the manager's must not.
		res.ColdWrites = mc.counter.Writes("vmobservations")
		res.ColdCreates = mc.counter.Get("create vmobservations")
		res.ColdStatusWrites = mc.counter.Get("apply vmobservations/status")
		res.ColdEvents = mc.counter.Writes("events")
		time.Sleep(time.Second)
		atEnd, err := r.apiMetrics.scrape(ctx)
		if err != nil {
			t.Fatal(err)
		}
		res.ColdWritesAtServer = int(atEnd.writesTo("vmobservations") - atStart.writesTo("vmobservations"))
		mc.wl.mu.Lock()
		res.ColdEventsDropped = mc.wl.dropped
		mc.wl.mu.Unlock()
		res.WritesPerVMCold = float64(res.ColdWrites) / float64(cfg.N)
		res.EventsPerVMCold = float64(res.ColdEvents) / float64(cfg.N)
		t.Logf("cold start %d: converged in %.2fs (%.2f× the floor), first write after %.2fs (the floor's after %.2fs); %d reconciles; %d VMObservation writes (%d creates, %d status), %d event writes",
			i+1, conv, conv/floorDur.Seconds(), res.ColdFirstWriteSeconds, res.FloorListSeconds, int(rec.total), res.ColdWrites, res.ColdCreates, res.ColdStatusWrites, res.ColdEvents)
		// The API server's count is the one the idle period relies on:
		// it must see at least what the manager's transport saw succeed
		// (it also counts the failed ones).
		if res.ColdWritesAtServer < res.ColdWrites {
			t.Errorf("cold start %d: the API server counted %d VMObservation writes, the manager's transport %d", i+1, res.ColdWritesAtServer, res.ColdWrites)
		}
		if i == cfg.ConvergenceRuns-1 {
			res.FloorSeconds = median(res.FloorSecondsRuns)
			res.ConvergenceSeconds = median(res.ConvergenceSecondsRuns)
			res.ConvergenceRatio = median(res.ConvergenceRatioRuns)
			res.CPU = map[string]*cpuFigures{}
			res.CPU["floor"] = r.cpuFigures(t, floorProfiles, cpuLabelFloor, floorVMs, "VMs", reconcileStats{})
			res.CPU["cold_start"] = r.cpuFigures(t, coldProfiles, cpuLabelManager, coldReconciles, "reconciles", coldRec)
			return m, mc
		}
		stopManager(t, m)
	}
	t.Fatal("no cold start: -scale.convergence-runs must be at least 1")
	return nil, nil
}

// cpuFigures attributes the CPU of merged phase profiles to label.
func (r *run) cpuFigures(t *testing.T, phases []*profiledPhase, label string, units int, unitsName string, rec reconcileStats) *cpuFigures {
	t.Helper()
	f, err := attributePhases(phases, label, units, unitsName)
	if err != nil {
		t.Error(err)
		return nil
	}
	f.ReconcileWallSeconds, f.ReconcileErrors = rec.seconds, int(rec.errors)
	if r.cfg.ProfileDir == "" {
		f.Profiles = nil // in the run's temp dir, gone after the run
	}
	return f
}

// idle runs the idle period over the running manager m: heartbeats on
// every node, a forced resync (a new manager at once) at a third and a
// restart (stopped for 10s) at two thirds. The writes are counted by the
// API server (apiserver_request_total for vmobservations, any verb that
// writes, any code) and seen on the harness's watch. It returns the
// manager running at the end.
func (r *run) idle(ctx context.Context, t *testing.T, m *app.InProcess, mc *managerConn) *app.InProcess {
	cfg, res, tr := r.cfg, r.res, r.tr
	scrape := func() metricSet {
		ms, err := r.apiMetrics.scrape(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return ms
	}
	res.LoadAvg["idle"] = loadavg()
	res.IdleWindowSeconds = cfg.Idle.Seconds()
	atStart := scrape()
	idleStart := time.Now()
	changes, events := tr.changeCount(), tr.eventCount()
	sleepUntil(ctx, idleStart.Add(cfg.Idle/3))
	atResync := scrape()
	resyncAt := time.Now()
	stopManager(t, m)
	m = r.startManager(ctx, t, mc)
	sleepUntil(ctx, idleStart.Add(2*cfg.Idle/3))
	atRestart := scrape()
	restartAt := time.Now()
	stopManager(t, m)
	sleepUntil(ctx, restartAt.Add(min(10*time.Second, cfg.Idle/10)))
	m = r.startManager(ctx, t, mc)
	sleepUntil(ctx, idleStart.Add(cfg.Idle))
	atEnd := scrape()
	idleEnd := time.Now()
	res.IdleSeconds = idleEnd.Sub(idleStart).Seconds()
	writes := func(a, b metricSet) int { return int(b.writesTo("vmobservations") - a.writesTo("vmobservations")) }
	res.IdleWrites, res.ResyncWrites, res.RestartWrites = writes(atStart, atEnd), writes(atResync, atRestart), writes(atRestart, atEnd)
	res.IdleWatchEvents = tr.eventCount() - events
	res.IdleNodeObservationWrites = int(atEnd.writesTo("nodeobservations") - atStart.writesTo("nodeobservations"))
	var nobs v1alpha1.NodeObservationList
	if err := r.c.List(ctx, &nobs); err != nil {
		t.Fatal(err)
	}
	// Every node runs VMs: a zero above says something only if they
	// have their NodeObservations.
	if len(nobs.Items) == 0 {
		t.Errorf("no NodeObservation after the idle period")
	}
	t.Logf("idle %.0fs: the API server counted %d writes of the %d NodeObservations", res.IdleSeconds, res.IdleNodeObservationWrites, len(nobs.Items))
	if res.IdleNodeObservationWrites != 0 {
		// A node's status rests on no renewing evidence: no refresh
		// policy allows its writes.
		t.Errorf("the API server counted %d NodeObservation writes at idle, where no node changed", res.IdleNodeObservationWrites)
	}
	var unexplained []string
	res.IdleWritesManagerTransport, res.IdleRefreshWrites, unexplained = mc.wl.policyCheck(idleStart, idleEnd, r.refresh)
	res.IdleUnexplained = len(unexplained)
	var u2, u3 []string
	_, _, u2 = mc.wl.policyCheck(resyncAt, restartAt, r.refresh)
	_, _, u3 = mc.wl.policyCheck(restartAt, idleEnd, r.refresh)
	res.ResyncUnexplained, res.RestartUnexplained = len(u2), len(u3)
	res.IdleVerdictChanges = tr.changeCount() - changes
	t.Logf("idle %.0fs: the API server counted %d VMObservation writes (resync %d, restart %d), its watch showed %d changes; the manager's transport %d (%d evidence refreshes allowed by the %s policy, %d beyond it); %d verdict changes",
		res.IdleSeconds, res.IdleWrites, res.ResyncWrites, res.RestartWrites, res.IdleWatchEvents, res.IdleWritesManagerTransport, res.IdleRefreshWrites, r.refresh, res.IdleUnexplained, res.IdleVerdictChanges)
	if r.refresh <= 0 {
		// Evidence refreshes off: an unchanging fleet writes nothing,
		// across a resync and a restart too.
		if res.IdleWrites != 0 || res.RestartWrites != 0 {
			t.Errorf("evidence refreshes off, yet the API server counted %d VMObservation writes at idle (%d after the restart); the manager's transport logged e.g. %v",
				res.IdleWrites, res.RestartWrites, unexplained[:min(5, len(unexplained))])
		}
	} else if len(unexplained) > 0 {
		t.Errorf("writes at idle beyond the refresh policy: %d, e.g. %v", len(unexplained), unexplained[:min(5, len(unexplained))])
	}
	if res.IdleVerdictChanges > 0 {
		t.Errorf("%d verdict changes at idle, where nothing changed", res.IdleVerdictChanges)
	}
	return m
}

// latency runs the latency phase over the running manager m, with a CPU
// profile of it.
func (r *run) latency(ctx context.Context, t *testing.T, m *app.InProcess) {
	cfg, res, w, tr := r.cfg, r.res, r.w, r.tr
	baseline, _, err := expected(ctx, w.c, r.policy, time.Now(), isVMNamespace)
	if err != nil {
		t.Fatal(err)
	}
	res.LoadAvg["latency"] = loadavg()
	lat, rec, cpu := r.profiledLatency(ctx, t, m, baseline, "cpu-changes.pb.gz")
	res.CPU["changes"] = cpu
	res.setLatency(lat, w)
	t.Logf("latency: %d changes at %.1f/s (%d skipped, %d missed): status p50 %.1fms p99 %.1fms; watch p50 %.1fms p99 %.1fms; %d reconciles",
		lat.Changes, lat.Rate, lat.Skipped, lat.Missed, res.LatencyP50, res.LatencyP99, res.FloorWatchP50, res.FloorWatchP99, int(rec.total))
	if lat.Missed > 0 {
		t.Errorf("%d of %d source changes never showed in their VMObservation", lat.Missed, lat.Changes)
	}
	if _, err := tr.waitMatch(ctx, baseline, nil, cfg.Converge); err != nil {
		t.Errorf("after the latency phase: %v", err)
	}
}

// profiledLatency runs the latency phase from baseline over the running
// manager m with a CPU profile (written to profile, under profilePath),
// and returns it, its reconciles and the manager's CPU figures; a failed
// phase stops m and the test.
func (r *run) profiledLatency(ctx context.Context, t *testing.T, m *app.InProcess, baseline map[string]summary, profile string) (*latencyResult, reconcileStats, *cpuFigures) {
	t.Helper()
	prof, err := startCPUProfile(r.profilePath(profile))
	if err != nil {
		t.Fatal(err)
	}
	rec0 := readReconcileStats()
	lat, err := latencyPhase(ctx, r.c, r.c, r.tr, r.w.vmList(), baseline, r.cfg.Rate, r.cfg.Latency, r.policy.LagGrace)
	rec := readReconcileStats().minus(rec0)
	pp, perr := prof.stop()
	if err != nil {
		stopManager(t, m)
		t.Fatal(err)
	}
	if perr != nil {
		t.Fatal(perr)
	}
	return lat, rec, r.cpuFigures(t, []*profiledPhase{pp}, cpuLabelManager, int(rec.total), "reconciles", rec)
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
