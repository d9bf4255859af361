package scale

import (
	"context"
	"flag"
	"fmt"
	"testing"
	"time"

	"github.com/vmobs/vmobs/internal/app"
)

var flagLatencyAB = flag.Int("scale.latency-ab", 0, "after the overload phase, this many pairs of latency phases, one with the managers' --incidents off and one with it on (off, on, on, off, ...), each with a manager of its own started for it; 0 skips them")

// latencyRound is one latency phase of the A/B rounds.
type latencyRound struct {
	Incidents bool   `json:"incidents"`
	LoadAvg   string `json:"loadavg"`
	Changes   int    `json:"changes"`
	Missed    int    `json:"missed"`
	// P50, P99: source change → VMObservation, as latency_p50_ms and
	// latency_p99_ms.
	P50 float64 `json:"latency_p50_ms"`
	P99 float64 `json:"latency_p99_ms"`
	// FloorPath is latency_floor_p50_ms: two watch deliveries and one
	// write at that moment; P99Ratio is P99 over it.
	FloorPath float64 `json:"latency_floor_p50_ms"`
	P99Ratio  float64 `json:"latency_p99_over_floor"`
	// Reconciles are the phase's reconciles, CPU the manager's CPU per
	// reconcile (µs, its pprof label).
	Reconciles int     `json:"reconciles"`
	CPUPerRec  float64 `json:"cpu_us_per_reconcile"`
}

// latencyAB measures the latency phase -scale.latency-ab times with
// incidents off and as many with them on, interleaved so that a drift of
// the machine's load weighs on both alike: off, on, on, off, off, on, ...
// Each round starts a manager of its own with the round's options on the
// run's connection, waits until it has reconciled every VM once (the
// VMObservations already carry its answer: nothing is written), runs the
// latency phase and stops it.
func (r *run) latencyAB(ctx context.Context, t *testing.T, mc *managerConn) {
	pairs := *flagLatencyAB
	for i := range 2 * pairs {
		on := i%4 == 1 || i%4 == 2
		cfg := r.cfg
		cfg.NoIncidents = !on
		baseline, _, err := expected(ctx, r.w.c, r.policy, time.Now(), isVMNamespace)
		if err != nil {
			t.Fatal(err)
		}
		rec0 := readReconcileStats()
		var m *app.InProcess
		withCPULabel(ctx, cpuLabelManager, func(ctx context.Context) {
			m, err = app.StartInProcess(ctx, mc.cfg, managerOptions(cfg))
		})
		if err != nil {
			t.Fatal(err)
		}
		// Every VM reconciled once, then a few quiet seconds.
		deadline := time.Now().Add(cfg.Converge)
		for readReconcileStats().minus(rec0).total < float64(len(baseline)) {
			if time.Now().After(deadline) {
				stopManager(t, m)
				t.Fatalf("latency round %d: the manager did not reconcile the %d VMs within %s", i+1, len(baseline), cfg.Converge)
			}
			time.Sleep(100 * time.Millisecond)
		}
		sleepUntil(ctx, time.Now().Add(3*time.Second))

		round := latencyRound{Incidents: on, LoadAvg: loadavg()}
		lat, rec, cpu := r.profiledLatency(ctx, t, m, baseline, fmt.Sprintf("cpu-changes-ab-%d.pb.gz", i+1))
		var fig results
		fig.setLatency(lat, r.w)
		round.Changes, round.Missed = fig.LatencyChanges, fig.LatencyMissed
		round.P50, round.P99, round.FloorPath = fig.LatencyP50, fig.LatencyP99, fig.LatencyFloorP50
		if fig.LatencyFloorP50 > 0 {
			round.P99Ratio = fig.LatencyP99 / fig.LatencyFloorP50
		}
		round.Reconciles = int(rec.total)
		if cpu != nil {
			round.CPUPerRec = cpu.USPerUnit
		}
		r.res.LatencyAB = append(r.res.LatencyAB, round)
		t.Logf("latency round %d, incidents %v (load %s): %d changes (%d missed), p50 %.1f ms, p99 %.1f ms, floor path %.1f ms, p99 %.2f× it; %d reconciles, %.0f µs CPU each",
			i+1, on, round.LoadAvg, round.Changes, round.Missed, round.P50, round.P99, round.FloorPath, round.P99Ratio, round.Reconciles, round.CPUPerRec)
		if lat.Missed > 0 {
			t.Errorf("latency round %d: %d of %d source changes never showed in their VMObservation", i+1, lat.Missed, lat.Changes)
		}
		if _, err := r.tr.waitMatch(ctx, baseline, nil, cfg.Converge); err != nil {
			t.Errorf("after latency round %d: %v", i+1, err)
		}
		stopManager(t, m)
	}
}
