package domainstats

import (
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/vmobs/vmobs/internal/factsource"
	"github.com/vmobs/vmobs/internal/vmifacts"
)

// series is one VMI's value of a signal, on one node.
type series struct {
	node string
	v    float64
}

// answers is one round's query results, indexed by VMI.
type answers struct {
	at   time.Time
	vals [numSignals]map[types.NamespacedName][]series
	// perNode counts the VMIs each node exports.
	perNode map[string]int
	// running counts the Running VMIs (targets) that name each node.
	running map[string]int
	// maxAge is how old a timestamped sample may be and still count (0:
	// any age).
	maxAge time.Duration
	// memory holds the thresholds the fold keeps the onset of memory
	// pressure with (Config.MemoryPressure).
	memory vmifacts.MemoryThresholds
}

func newAnswers(at time.Time) *answers {
	a := &answers{at: at, perNode: map[string]int{}, running: map[string]int{}}
	for i := range a.vals {
		a.vals[i] = map[types.NamespacedName][]series{}
	}
	return a
}

// add records a signal's samples; it returns how many it dropped for
// lacking the labels that name a VMI.
func (a *answers) add(s signal, samples []Sample) (dropped int) {
	for _, smp := range samples {
		ns, name, node := smp.Labels["namespace"], smp.Labels["name"], smp.Labels["node"]
		if ns == "" || name == "" {
			dropped++
			continue
		}
		k := types.NamespacedName{Namespace: ns, Name: name}
		a.vals[s][k] = append(a.vals[s][k], series{node: node, v: smp.Value})
		if s == sigPresent && node != "" {
			a.perNode[node]++
		}
	}
	return dropped
}

// pick is the VMI's value of a signal: the series from its own node, else
// (a migration's handoff, a series without a node label) the one of the
// lowest node name, so the choice does not depend on answer order.
func (a *answers) pick(s signal, t *factsource.Target) (series, bool) {
	ss := a.vals[s][t.Key]
	if len(ss) == 0 {
		return series{}, false
	}
	best := -1
	for i := range ss {
		if ss[i].node == t.Node {
			return ss[i], true
		}
		if best < 0 || ss[i].node < ss[best].node {
			best = i
		}
	}
	return ss[best], true
}

// vmiState is what the fold remembers of one VMI between rounds.
type vmiState struct {
	// facts are the last facts folded from answers (never Unavailable).
	facts vmifacts.DomainFacts
	// baseline is the VM's usual time per I/O operation, an exponential
	// average of its samples; baselineN counts them.
	baseline  float64
	baselineN int
	// remaining is the last sample of a migration's data remaining, and
	// remainingAt its time (virt-handler's poll), zero when the answer
	// carried none.
	remaining    float64
	remainingAt  float64
	hasRemaining bool
}

// Baseline: the average follows latency while it stays under slowRatio ×
// baseline; above it the baseline only creeps up (1% a sample), so a slow
// spell does not become the norm, but a lasting change of storage does:
// ten times slower is the new norm after about 230 samples (4 hours at
// one a minute).
const (
	baselineSamples = 3
	slowRatio       = 3
	alphaNormal     = 0.2
	creepSlow       = 1.01
	// maxNotShrinking caps the counter; the threshold is far below.
	maxNotShrinking = 1 << 10
)

// fold computes the VMI's facts from one round's answers and what it
// remembers, and says whether they changed. SampledAt moves only with a
// change, so an unchanged domain gives equal facts.
func fold(st *vmiState, t *factsource.Target, a *answers) bool {
	if st.facts.VMIUID != t.UID {
		// A new VMI (or one recreated under the same name): nothing of the
		// earlier one's history applies.
		*st = vmiState{}
	}
	prev := &st.facts
	f := vmifacts.DomainFacts{VMIUID: t.UID}

	if p, ok := a.pick(sigPresent, t); ok {
		f.Exported, f.Node = true, p.node
	}
	others := a.perNode[t.Node]
	if f.Exported && f.Node == t.Node {
		others--
	}
	f.NodeExports = others > 0
	f.NodeRunsOthers = a.running[t.Node] > 1
	if !f.Exported {
		f.MissingSince = since(prev.MissingSince, a.at)
	}

	v, ok := a.value(sigVCPU, t)
	f.VCPUUsage = bucket(prev.VCPUUsage, v, ok, scaleCores)
	if ok && v == 0 {
		// Not a vCPU-second in the whole window: no state of a running
		// guest does that (idle guests take timer interrupts).
		f.VCPUStalledSince = since(prev.VCPUStalledSince, a.at)
	}

	for _, g := range gauges {
		v, ok := a.value(g.sig, t)
		*g.of(&f) = bucket(*g.of(prev), v, ok, g.scale)
	}
	if a.memory.Pressure(&f) {
		f.MemoryPressureSince = since(prev.MemoryPressureSince, a.at)
	}
	v, ok = a.value(sigStorageLatency, t)
	f.StorageLatency = bucket(prev.StorageLatency, v, ok, scaleLatency)
	if ok && valid(v) {
		st.learn(v)
	}
	if st.baselineN >= baselineSamples {
		f.StorageBaseline = bucket(prev.StorageBaseline, st.baseline, true, scaleLatency)
	}

	v, ok = a.value(sigMigRemaining, t)
	ts, okTS := a.value(sigMigTimestamp, t)
	okTS = okTS && valid(ts)
	if ok && okTS && a.maxAge > 0 && float64(a.at.Unix())-ts > a.maxAge.Seconds() {
		// A sample virt-handler stopped renewing: no staleness marker ends
		// a timestamped series, so it lingers for Prometheus' lookback.
		ok = false
	}
	if ok && valid(v) {
		switch {
		case okTS && st.hasRemaining && ts <= st.remainingAt:
			// The same poll as the last round's: no news, the count stands.
			f.MigrationNotShrinking = prev.MigrationNotShrinking
		case st.hasRemaining && v >= st.remaining:
			f.MigrationNotShrinking = min(prev.MigrationNotShrinking+1, maxNotShrinking)
		}
		f.MigrationDataRemaining = bucket(prev.MigrationDataRemaining, v, true, scaleBytes)
		st.remaining, st.hasRemaining = v, true
		st.remainingAt = 0
		if okTS {
			st.remainingAt = ts
		}
		v, ok = a.value(sigMigDirty, t)
		f.MigrationDirtyRate = bucket(prev.MigrationDirtyRate, v, ok, scaleFine)
		v, ok = a.value(sigMigTransfer, t)
		f.MigrationTransferRate = bucket(prev.MigrationTransferRate, v, ok, scaleFine)
	} else {
		st.hasRemaining = false
	}

	f.SampledAt = prev.SampledAt
	changed := f != *prev
	if changed {
		f.SampledAt = a.at
	}
	st.facts = f
	return changed
}

// gauges are the signals kept as a value each, bucketed and nothing more.
// A guest whose balloon driver has no "usable" statistic has no headroom
// value: "unused" (MemFree) is low on every guest whose page cache fills
// its memory, and KubeVirt's alerts never read it.
var gauges = []struct {
	sig   signal
	of    func(*vmifacts.DomainFacts) *vmifacts.Value
	scale scale
}{
	{sigMemDomain, func(f *vmifacts.DomainFacts) *vmifacts.Value { return &f.MemoryDomain }, scaleBytes},
	{sigMemAvailable, func(f *vmifacts.DomainFacts) *vmifacts.Value { return &f.MemoryAvailable }, scaleBytes},
	{sigMemUsable, func(f *vmifacts.DomainFacts) *vmifacts.Value { return &f.MemoryUsable }, scaleBytes},
	{sigSwap, func(f *vmifacts.DomainFacts) *vmifacts.Value { return &f.SwapRate }, scaleRate},
	{sigMajorFaults, func(f *vmifacts.DomainFacts) *vmifacts.Value { return &f.MajorFaultRate }, scaleEvents},
	{sigGuestPanics, func(f *vmifacts.DomainFacts) *vmifacts.Value { return &f.GuestPanics }, scaleEvents},
	{sigStorageRead, func(f *vmifacts.DomainFacts) *vmifacts.Value { return &f.StorageReadRate }, scaleRate},
	{sigStorageWrite, func(f *vmifacts.DomainFacts) *vmifacts.Value { return &f.StorageWriteRate }, scaleRate},
	{sigNetReceive, func(f *vmifacts.DomainFacts) *vmifacts.Value { return &f.NetworkReceiveRate }, scaleRate},
	{sigNetTransmit, func(f *vmifacts.DomainFacts) *vmifacts.Value { return &f.NetworkTransmitRate }, scaleRate},
	{sigNetErrors, func(f *vmifacts.DomainFacts) *vmifacts.Value { return &f.NetworkErrorRate }, scaleEvents},
	{sigNetRxDrops, func(f *vmifacts.DomainFacts) *vmifacts.Value { return &f.NetworkReceiveDropRate }, scaleEvents},
}

func (a *answers) value(s signal, t *factsource.Target) (float64, bool) {
	p, ok := a.pick(s, t)
	return p.v, ok
}

// learn moves the storage baseline towards a latency sample.
func (st *vmiState) learn(v float64) {
	if st.baselineN == 0 || st.baseline <= 0 {
		st.baseline, st.baselineN = v, st.baselineN+1
		return
	}
	if v >= slowRatio*st.baseline {
		st.baseline *= creepSlow
	} else {
		st.baseline += alphaNormal * (v - st.baseline)
	}
	st.baselineN = min(st.baselineN+1, baselineSamples)
}

// since keeps the start of a state that lasts, or starts it now.
func since(prev, now time.Time) time.Time {
	if prev.IsZero() {
		return now
	}
	return prev
}
