package vmifacts

import (
	"math"
	"testing"
)

// A value the rules can judge is present, finite and not negative.
func TestValueValid(t *testing.T) {
	for _, tc := range []struct {
		v    Value
		ok   bool
		want float64
	}{
		{Value{V: 2, OK: true}, true, 2},
		{Value{V: 0, OK: true}, true, 0},
		{Value{V: 2}, false, 0},
		{Value{V: -1, OK: true}, false, 0},
		{Value{V: math.NaN(), OK: true}, false, 0},
		{Value{V: math.Inf(1), OK: true}, false, 0},
	} {
		got, ok := tc.v.Valid()
		if ok != tc.ok || got != tc.want {
			t.Errorf("%+v.Valid() = %v, %v; want %v, %v", tc.v, got, ok, tc.want, tc.ok)
		}
	}
}

// Pressure is low headroom and thrashing, as KubeVirt's
// KubeVirtVMGuestMemoryPressure: swap at or above its rate, major faults
// strictly above theirs.
func TestMemoryPressure(t *testing.T) {
	th := MemoryThresholds{AvailablePercent: 5, SwapRate: 1 << 20, MajorFaultRate: 5}
	facts := func(usable, swap, faults float64) *DomainFacts {
		return &DomainFacts{
			MemoryAvailable: Value{V: 4 << 30, OK: true}, MemoryUsable: Value{V: usable, OK: true},
			SwapRate: Value{V: swap, OK: true}, MajorFaultRate: Value{V: faults, OK: true},
		}
	}
	low, plenty := float64(100<<20), float64(2<<30)
	for _, tc := range []struct {
		name string
		d    *DomainFacts
		want bool
	}{
		{"low headroom, swapping at the rate", facts(low, 1<<20, 0), true},
		{"low headroom, faulting above the rate", facts(low, 0, 6), true},
		{"low headroom, faulting at the rate", facts(low, 0, 5), false},
		{"low headroom, quiet", facts(low, 0, 0), false},
		{"plenty of headroom, thrashing", facts(plenty, 8<<20, 50), false},
		{"no usable statistic", &DomainFacts{MemoryAvailable: Value{V: 4 << 30, OK: true}, SwapRate: Value{V: 8 << 20, OK: true}}, false},
	} {
		if got := th.Pressure(tc.d); got != tc.want {
			t.Errorf("%s: Pressure = %v, want %v (%+v)", tc.name, got, tc.want, th.State(tc.d))
		}
	}
}
