package scale

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/app"
	"github.com/vmobs/vmobs/internal/testenv"
)

var (
	flagShards      = flag.Bool("scale.shards", false, "after the benchmarks at N, measure the cold start of 2 shards × N/2 VMs (--vm-selector, one in-process manager each) next to 1 × N, in the same phase (off unless set, also in the smoke)")
	flagShardRounds = flag.Int("scale.shard-rounds", 3, "with -scale.shards: cold starts of each kind, alternating which goes first; the figures are their medians")
)

// shardLabel is the recipe's label (config/shards); the phase puts it on
// the VMs themselves, the even ones in shard a, the odd ones in b.
const shardLabel = "observability.vmobs.io/shard"

// shardResults is the shard phase's part of the results file ("shard").
type shardResults struct {
	Shards int `json:"shards"`
	// VMs per shard, in shard order (a, b).
	VMsPerShard []int `json:"vms_per_shard"`
	// SingleSeconds is the median cold-start convergence of one unsharded
	// manager over all N VMs, measured in this phase (labels on the VMs),
	// in turns with the shards, so the two are comparable; SingleRounds
	// are the rounds'.
	SingleSeconds float64   `json:"single_convergence_seconds"`
	SingleRounds  []float64 `json:"single_convergence_seconds_rounds"`
	// ShardedSeconds is the median cold-start convergence of the shards
	// started together: until the last VMObservation of either arrived.
	ShardedSeconds float64   `json:"sharded_convergence_seconds"`
	ShardedRounds  []float64 `json:"sharded_convergence_seconds_rounds"`
	// PerShardRounds is, per round, each shard's own convergence (its
	// last VMObservation), in shard order.
	PerShardRounds [][]float64 `json:"per_shard_convergence_seconds_rounds"`
	// Ratio is ShardedSeconds over SingleSeconds.
	Ratio float64 `json:"sharded_over_single"`
	// WritesPerShard counts each shard's VMObservation writes in its last
	// cold start (creates, status applies, metadata patches, deletes);
	// SingleWrites the single manager's.
	WritesPerShard []map[string]int `json:"writes_per_shard"`
	SingleWrites   map[string]int   `json:"single_writes"`
	// WrittenByBoth counts VMObservations that two shards wrote in one
	// cold start (must be 0); WrongShardLabel those whose shard label was
	// not their VM's after one (must be 0). Summed over the rounds.
	WrittenByBoth   int     `json:"written_by_both"`
	WrongShardLabel int     `json:"wrong_shard_label"`
	LabelSeconds    float64 `json:"vm_labelling_seconds"`
}

// shards is the shard phase: it labels the VMs, then, in rounds, cold-
// starts one manager over all of them and two shards over half each, and
// checks that every VM was observed by exactly one shard. The population, the
// API server and the harness's watch are the benchmarks'; the managers
// run without leader election, as the benchmarks' do.
func (r *run) shards(ctx context.Context, t *testing.T) {
	if !*flagShards {
		return
	}
	w, cfg := r.w, r.cfg
	vms := w.vmList()
	values := []string{"a", "b"}
	shardOf := func(i int) string { return values[i%len(values)] }

	res := &shardResults{Shards: len(values), VMsPerShard: make([]int, len(values))}
	r.res.Shard = res
	start := time.Now()
	if err := labelVMs(ctx, w.c, vms, shardOf, cfg.Workers); err != nil {
		t.Fatal(err)
	}
	res.LabelSeconds = time.Since(start).Seconds()
	wantShard := map[string]string{}
	for i, v := range vms {
		wantShard[v.key()] = shardOf(i)
		res.VMsPerShard[i%len(values)]++
	}

	rounds := max(1, *flagShardRounds)
	for round := range rounds {
		// Alternate which kind goes first: the machine's load drifts.
		kinds := [][]string{{""}, values}
		if round%2 == 1 {
			kinds[0], kinds[1] = kinds[1], kinds[0]
		}
		for _, kind := range kinds {
			r.res.LoadAvg[fmt.Sprintf("shards: %d managers, round %d", len(kind), round+1)] = loadavg()
			cs, err := r.shardColdStart(ctx, t, kind)
			if err != nil {
				t.Fatalf("shards: %d managers, round %d: %v", len(kind), round+1, err)
			}
			if len(kind) == 1 {
				res.SingleRounds = append(res.SingleRounds, cs.took.Seconds())
				res.SingleWrites = cs.writes[0]
				continue
			}
			res.ShardedRounds = append(res.ShardedRounds, cs.took.Seconds())
			res.WritesPerShard = cs.writes
			res.PerShardRounds = append(res.PerShardRounds, r.perShard(ctx, t, cs, values, wantShard))
			r.checkShards(ctx, t, res, cs, wantShard)
		}
	}
	res.SingleSeconds, res.ShardedSeconds = median(res.SingleRounds), median(res.ShardedRounds)
	res.Ratio = res.ShardedSeconds / res.SingleSeconds
	r.verify(ctx, t, "after the sharded cold starts")
	t.Logf("shards: labelled %d VMs in %.1fs; cold start of 1 × %d: %.2fs (rounds %v), of %d × %v: %.2fs (rounds %v; per shard %v), %.2f×; writes %v vs %v",
		len(vms), res.LabelSeconds, len(vms), res.SingleSeconds, res.SingleRounds, len(values), res.VMsPerShard, res.ShardedSeconds, res.ShardedRounds, res.PerShardRounds, res.Ratio, res.WritesPerShard, res.SingleWrites)
}

// perShard is each shard's own convergence in a sharded cold start: the
// arrival of its last VMObservation.
func (r *run) perShard(ctx context.Context, t *testing.T, cs shardRun, values []string, wantShard map[string]string) []float64 {
	out := make([]float64, len(values))
	for i, v := range values {
		want := map[string]summary{}
		for k, s := range cs.want {
			if wantShard[k] == v {
				want[k] = s
			}
		}
		last, err := r.tr.waitMatchSince(ctx, want, nil, cs.t0, time.Second)
		if err != nil {
			t.Errorf("shard %s: %v", v, err)
			continue
		}
		out[i] = last.Sub(cs.t0).Seconds()
	}
	return out
}

// checkShards checks that every VM was observed by exactly one shard: no
// VMObservation written by two, each carrying its VM's shard.
func (r *run) checkShards(ctx context.Context, t *testing.T, res *shardResults, cs shardRun, wantShard map[string]string) {
	written := map[string]int{}
	for _, objs := range cs.objects {
		for o := range objs {
			written[o]++
		}
	}
	for o, n := range written {
		if n > 1 {
			res.WrittenByBoth++
			if res.WrittenByBoth <= 5 {
				t.Errorf("shards: %s written by %d shards", o, n)
			}
		}
	}
	var list v1alpha1.VMObservationList
	if err := r.w.c.List(ctx, &list); err != nil {
		t.Fatal(err)
	}
	seen := 0
	for i := range list.Items {
		o := &list.Items[i]
		want, ok := wantShard[o.Namespace+"/"+o.Name]
		if !ok {
			continue
		}
		seen++
		if o.Labels[shardLabel] != want {
			res.WrongShardLabel++
			if res.WrongShardLabel <= 5 {
				t.Errorf("shards: %s/%s carries shard %q, its VM %q", o.Namespace, o.Name, o.Labels[shardLabel], want)
			}
		}
	}
	if seen != len(wantShard) {
		t.Errorf("shards: %d VMObservations for %d VMs", seen, len(wantShard))
	}
}

// median of a sample; 0 for none.
func median(x []float64) float64 {
	if len(x) == 0 {
		return 0
	}
	s := slices.Clone(x)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// shardRun is one cold start of the shard phase.
type shardRun struct {
	t0, last time.Time
	took     time.Duration
	want     map[string]summary
	// writes counts, per manager, its VMObservation writes by verb;
	// objects lists the VMObservations each wrote.
	writes  []map[string]int
	objects []map[string]bool
}

// shardColdStart deletes every VMObservation, starts one manager per
// value (shardLabel=value; "" is unsharded) at once, waits until every
// VMObservation says what the engine says, and stops them.
func (r *run) shardColdStart(ctx context.Context, t *testing.T, values []string) (shardRun, error) {
	var out shardRun
	w, tr := r.w, r.tr
	if err := deleteObservations(ctx, w.c, w.nsList()); err != nil {
		return out, err
	}
	if err := tr.waitGone(ctx, isVMNamespace, 2*time.Minute); err != nil {
		return out, err
	}
	want, _, err := expected(ctx, w.c, r.policy, time.Now(), isVMNamespace)
	if err != nil {
		return out, err
	}
	out.want = want
	logs := make([]*writeLog, len(values))
	counters := make([]*testenv.RequestCounter, len(values))
	var managers []*app.InProcess
	defer func() {
		for _, m := range managers {
			if err := m.Stop(); err != nil {
				t.Error(err)
			}
		}
	}()
	out.t0 = time.Now()
	for i, v := range values {
		opts := managerOptions(r.cfg)
		if v != "" {
			sel, err := labels.Parse(shardLabel + "=" + v)
			if err != nil {
				return out, err
			}
			opts.VMSelector = sel
		}
		logs[i], counters[i] = &writeLog{}, testenv.NewRequestCounter()
		m, err := app.StartInProcess(ctx, logs[i].Wrap(counters[i].Wrap(r.mgr.cfg)), opts)
		if err != nil {
			return out, err
		}
		managers = append(managers, m)
	}
	out.last, err = tr.waitMatchSince(ctx, want, nil, out.t0, r.cfg.Converge)
	if err != nil {
		return out, err
	}
	out.took = out.last.Sub(out.t0)
	// Let the writes in flight at the last arrival land before counting.
	time.Sleep(time.Second)
	for i := range values {
		n := map[string]int{}
		for _, k := range []string{"create vmobservations", "apply vmobservations/status", "patch vmobservations", "delete vmobservations"} {
			n[k] = counters[i].Get(k)
		}
		out.writes = append(out.writes, n)
		objs := map[string]bool{}
		for _, e := range logs[i].snapshot() {
			if e.key != "create vmobservations" {
				objs[e.obj] = true
			}
		}
		out.objects = append(out.objects, objs)
	}
	return out, nil
}

// labelVMs puts the shard label on each VM itself, as `kubectl label vm`
// does, with workers in parallel; the VMs' templates (so their VMIs and
// pods) keep theirs.
func labelVMs(ctx context.Context, c client.Client, vms []vmRef, shardOf func(int) string, workers int) error {
	var (
		next    atomic.Int64
		wg      sync.WaitGroup
		errOnce sync.Once
		first   error
	)
	for range max(1, min(workers, len(vms))) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(vms) || ctx.Err() != nil {
					return
				}
				v := vms[i]
				patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, shardLabel, shardOf(i))
				vm := &kubevirtv1.VirtualMachine{}
				vm.Namespace, vm.Name = v.ns, v.name
				if err := c.Patch(ctx, vm, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
					errOnce.Do(func() { first = fmt.Errorf("labelling VM %s: %w", v.key(), err) })
					return
				}
			}
		})
	}
	wg.Wait()
	return first
}
