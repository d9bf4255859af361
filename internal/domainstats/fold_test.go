package domainstats

import (
	"math"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/vmobs/vmobs/internal/factsource"
	"github.com/vmobs/vmobs/internal/verdict"
	"github.com/vmobs/vmobs/internal/vmifacts"
)

var t0 = time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)

var vm1 = factsource.Target{Key: types.NamespacedName{Namespace: "ns", Name: "vm1"}, UID: "uid-1", Node: "node-a"}

// healthy is one round in which vm1 runs on node-a beside vm2.
func healthy(at time.Time) *answers {
	a := newAnswers(at)
	a.memory = verdict.DefaultPolicy().MemoryThresholds()
	for _, name := range []string{"vm1", "vm2"} {
		a.add(sigPresent, []Sample{smp(name, "node-a", 1)})
		a.add(sigVCPU, []Sample{smp(name, "node-a", 0.37)})
		a.add(sigMemDomain, []Sample{smp(name, "node-a", 4<<30)})
		a.add(sigMemAvailable, []Sample{smp(name, "node-a", 3.9*(1<<30))})
		a.add(sigMemUsable, []Sample{smp(name, "node-a", 2.5*(1<<30))})
		a.add(sigSwap, []Sample{smp(name, "node-a", 0)})
		a.add(sigStorageLatency, []Sample{smp(name, "node-a", 0.002)})
		a.add(sigNetErrors, []Sample{smp(name, "node-a", 0)})
	}
	return a
}

func smp(name, node string, v float64) Sample {
	l := map[string]string{"namespace": "ns", "name": name}
	if node != "" {
		l["node"] = node
	}
	return Sample{Labels: l, Value: v}
}

func TestFoldUnchangedDomainKeepsItsFacts(t *testing.T) {
	st := &vmiState{}
	if !fold(st, &vm1, healthy(t0)) {
		t.Fatal("the first round must change the facts")
	}
	if f := st.facts; !f.Exported || f.Node != "node-a" || !f.NodeExports || f.SampledAt != t0 {
		t.Fatalf("facts %+v", f)
	}
	// The storage baseline is known after a few samples: one change.
	for i := 1; i < baselineSamples; i++ {
		fold(st, &vm1, healthy(t0.Add(time.Duration(i)*time.Minute)))
	}
	first := st.facts
	if !first.StorageBaseline.OK {
		t.Fatalf("no baseline after %d samples", baselineSamples)
	}
	for i := baselineSamples; i <= 12; i++ {
		a := healthy(t0.Add(time.Duration(i) * time.Minute))
		// Noise within the buckets.
		a.vals[sigVCPU][vm1.Key][0].v = 0.37 + 0.05*math.Sin(float64(i))
		a.vals[sigMemUsable][vm1.Key][0].v = 2.5*(1<<30) + float64(i)*(1<<20)
		if fold(st, &vm1, a) {
			t.Fatalf("round %d: noise changed the facts: %+v → %+v", i, first, st.facts)
		}
	}
	if st.facts != first {
		t.Fatalf("facts moved: %+v → %+v", first, st.facts)
	}
}

func TestFoldStates(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(a *answers)
		check func(t *testing.T, f vmifacts.DomainFacts)
	}{
		{"not exported, node exports others", func(a *answers) {
			for s := range a.vals {
				delete(a.vals[s], vm1.Key)
			}
			a.perNode["node-a"]--
		}, func(t *testing.T, f vmifacts.DomainFacts) {
			if f.Exported || !f.NodeExports || f.MissingSince.IsZero() {
				t.Errorf("%+v", f)
			}
		}},
		{"vCPU stalled", func(a *answers) { a.vals[sigVCPU][vm1.Key][0].v = 0 }, func(t *testing.T, f vmifacts.DomainFacts) {
			if f.VCPUStalledSince.IsZero() || f.VCPUUsage != (vmifacts.Value{V: 0, OK: true}) {
				t.Errorf("%+v", f)
			}
		}},
		{"NaN, Inf and negative values are absent", func(a *answers) {
			a.vals[sigVCPU][vm1.Key][0].v = math.NaN()
			a.vals[sigMemAvailable][vm1.Key][0].v = math.Inf(1)
			a.vals[sigMemUsable][vm1.Key][0].v = -5
		}, func(t *testing.T, f vmifacts.DomainFacts) {
			if f.VCPUUsage.OK || f.MemoryAvailable.OK || f.MemoryUsable.OK || !f.VCPUStalledSince.IsZero() {
				t.Errorf("%+v", f)
			}
		}},
		{"a guest without the usable statistic has no headroom value", func(a *answers) {
			delete(a.vals[sigMemUsable], vm1.Key)
		}, func(t *testing.T, f vmifacts.DomainFacts) {
			if f.MemoryUsable.OK || !f.MemoryAvailable.OK {
				t.Errorf("usable %+v available %+v", f.MemoryUsable, f.MemoryAvailable)
			}
		}},
		{"the VMI's own node wins", func(a *answers) {
			a.add(sigVCPU, []Sample{smp("vm1", "node-0", 3)})
		}, func(t *testing.T, f vmifacts.DomainFacts) {
			if f.VCPUUsage.V != 0.5 {
				t.Errorf("%+v", f.VCPUUsage)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &vmiState{}
			a := healthy(t0)
			tc.edit(a)
			fold(st, &vm1, a)
			tc.check(t, st.facts)
		})
	}
}

func TestFoldKeepsWhenAStateBegan(t *testing.T) {
	st := &vmiState{}
	fold(st, &vm1, healthy(t0))
	for i := 1; i <= 3; i++ {
		a := healthy(t0.Add(time.Duration(i) * time.Minute))
		delete(a.vals[sigStorageLatency], vm1.Key) // no baseline to learn
		a.vals[sigVCPU][vm1.Key][0].v = 0
		changed := fold(st, &vm1, a)
		if want := t0.Add(time.Minute); st.facts.VCPUStalledSince != want {
			t.Fatalf("round %d: stalled since %v, want %v", i, st.facts.VCPUStalledSince, want)
		}
		if changed != (i == 1) {
			t.Fatalf("round %d: changed=%v", i, changed)
		}
	}
	fold(st, &vm1, healthy(t0.Add(4*time.Minute)))
	if !st.facts.VCPUStalledSince.IsZero() {
		t.Fatal("a vCPU that runs again is not stalled")
	}
}

func TestFoldRecreatedVMIStartsOver(t *testing.T) {
	st := &vmiState{}
	for i := range 5 {
		fold(st, &vm1, healthy(t0.Add(time.Duration(i)*time.Minute)))
	}
	if !st.facts.StorageBaseline.OK {
		t.Fatal("five samples make a baseline")
	}
	again := vm1
	again.UID = "uid-2"
	fold(st, &again, healthy(t0.Add(5*time.Minute)))
	if st.facts.VMIUID != "uid-2" || st.facts.StorageBaseline.OK {
		t.Fatalf("the new VMI inherited the old one's history: %+v", st.facts)
	}
}

func TestFoldStorageBaselineIgnoresASlowSpell(t *testing.T) {
	st := &vmiState{}
	at := t0
	step := func(lat float64) {
		at = at.Add(time.Minute)
		a := healthy(at)
		a.vals[sigStorageLatency][vm1.Key][0].v = lat
		fold(st, &vm1, a)
	}
	for range 5 {
		step(0.002)
	}
	for range 10 {
		step(0.2)
	}
	f := st.facts
	if !f.StorageBaseline.OK || f.StorageBaseline.V > 0.005 || f.StorageLatency.V != 0.2 {
		t.Fatalf("baseline %+v latency %+v", f.StorageBaseline, f.StorageLatency)
	}
}

func TestFoldMigration(t *testing.T) {
	st := &vmiState{}
	at := t0
	step := func(remaining float64) {
		at = at.Add(time.Minute)
		a := healthy(at)
		a.add(sigMigRemaining, []Sample{smp("vm1", "node-a", remaining)})
		a.add(sigMigDirty, []Sample{smp("vm1", "node-a", 300<<20)})
		a.add(sigMigTransfer, []Sample{smp("vm1", "node-a", 120<<20)})
		fold(st, &vm1, a)
	}
	step(4 << 30)
	step(3 << 30)
	if st.facts.MigrationNotShrinking != 0 {
		t.Fatalf("shrinking: %d", st.facts.MigrationNotShrinking)
	}
	step(3 << 30)
	step(3.5 * (1 << 30))
	if st.facts.MigrationNotShrinking != 2 || st.facts.MigrationDirtyRate.V != 3.1e8 || st.facts.MigrationTransferRate.V != 1.3e8 {
		t.Fatalf("%+v", st.facts)
	}
	fold(st, &vm1, healthy(at.Add(time.Minute)))
	if st.facts.MigrationNotShrinking != 0 || st.facts.MigrationDataRemaining.OK {
		t.Fatalf("a finished migration leaves nothing: %+v", st.facts)
	}
}

func TestBucket(t *testing.T) {
	for _, tc := range []struct {
		prev vmifacts.Value
		v    float64
		s    scale
		want vmifacts.Value
	}{
		{vmifacts.Value{}, 0.37, scaleCores, vmifacts.Value{V: 0.5, OK: true}},
		{vmifacts.Value{}, 0.3, scaleCores, vmifacts.Value{V: 0.2, OK: true}},
		{vmifacts.Value{}, 0.8, scaleCores, vmifacts.Value{V: 1, OK: true}},
		{vmifacts.Value{}, 0.005, scaleCores, vmifacts.Value{V: 0, OK: true}},
		// 0.2 covers [√0.02, √0.1) = [0.141, 0.316); it moves 25% past
		// an edge.
		{vmifacts.Value{V: 0.2, OK: true}, 0.39, scaleCores, vmifacts.Value{V: 0.2, OK: true}},
		{vmifacts.Value{V: 0.2, OK: true}, 0.4, scaleCores, vmifacts.Value{V: 0.5, OK: true}},
		{vmifacts.Value{V: 0.2, OK: true}, 0.114, scaleCores, vmifacts.Value{V: 0.2, OK: true}},
		{vmifacts.Value{V: 0.2, OK: true}, 0.11, scaleCores, vmifacts.Value{V: 0.1, OK: true}},
		{vmifacts.Value{}, 1234567890, scaleBytes, vmifacts.Value{V: 1.2e9, OK: true}},
		{vmifacts.Value{V: 1.2e9, OK: true}, 1.3e9, scaleBytes, vmifacts.Value{V: 1.2e9, OK: true}},
		{vmifacts.Value{V: 1.2e9, OK: true}, 1.35e9, scaleBytes, vmifacts.Value{V: 1.4e9, OK: true}},
		{vmifacts.Value{V: 1, OK: true}, math.NaN(), scaleEvents, vmifacts.Value{}},
		{vmifacts.Value{V: 1, OK: true}, -1, scaleEvents, vmifacts.Value{}},
	} {
		if got := bucket(tc.prev, tc.v, true, tc.s); got != tc.want {
			t.Errorf("bucket(%+v, %v) = %+v, want %+v", tc.prev, tc.v, got, tc.want)
		}
	}
}
