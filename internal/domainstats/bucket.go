package domainstats

import (
	"math"
	"strconv"

	"github.com/vmobs/vmobs/internal/vmifacts"
)

// scale says how a signal is rounded. Values move with every sample; the
// facts, and so the status, must move only when something changed that a
// person would notice. A value keeps its bucket while it stays near it
// (hysteresis), so a value on a bucket's edge does not flap.
type scale struct {
	// floor: values under it are 0 (idle noise).
	floor float64
	// fine rounds to two significant digits and keeps the bucket within
	// ±10%, for values a threshold compares as a ratio (memory, migration
	// rates); otherwise the nearest value of the 1-2-5 series (nearest on
	// a log scale), kept until the value passes the bucket's edge by 25%,
	// for values shown to people and compared with order-of-magnitude
	// thresholds. A rate's own noise (±25% from one sample to the next
	// with a short window) does not move it.
	fine bool
}

var (
	scaleCores   = scale{floor: 0.01}
	scaleBytes   = scale{floor: 1 << 20, fine: true}
	scaleRate    = scale{floor: 1 << 10}
	scaleLatency = scale{floor: 1e-4}
	scaleEvents  = scale{floor: 0.01}
	scaleFine    = scale{floor: 1 << 10, fine: true}
)

// bucket rounds v, keeping prev while v stays near it. A value that is not
// a finite, non-negative number is absent.
func bucket(prev vmifacts.Value, v float64, ok bool, s scale) vmifacts.Value {
	if !ok || !valid(v) {
		return vmifacts.Value{}
	}
	if v < s.floor {
		return vmifacts.Value{V: 0, OK: true}
	}
	if prev.OK && prev.V > 0 && s.near(prev.V, v) {
		return prev
	}
	return vmifacts.Value{V: s.round(v), OK: true}
}

func valid(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) && v >= 0 }

func (s scale) near(b, v float64) bool {
	if s.fine {
		return math.Abs(v-b) <= 0.1*b
	}
	below, above := neighbours125(b)
	lower, upper := math.Sqrt(below*b), math.Sqrt(b*above)
	return v >= 0.8*lower && v < 1.25*upper
}

func (s scale) round(v float64) float64 {
	if s.fine {
		return canonical(v, 2)
	}
	// The 1-2-5 value nearest on a log scale: under √2, √10 and √50 of
	// the decade's 1, 2 and 5 respectively.
	mag := math.Pow(10, math.Floor(math.Log10(v)))
	step := 10.0
	switch m := v / mag; {
	case m < math.Sqrt2:
		step = 1
	case m < math.Sqrt(10):
		step = 2
	case m < math.Sqrt(50):
		step = 5
	}
	return canonical(step*mag, 1)
}

// neighbours125 are the buckets below and above b in the 1-2-5 series.
func neighbours125(b float64) (below, above float64) {
	mag := math.Pow(10, math.Floor(math.Log10(b)))
	lo, hi := 2.0, 10.0
	switch m := canonical(b/mag, 1); {
	case m < 2:
		lo, hi = 0.5, 2
	case m < 5:
		lo, hi = 1, 5
	}
	return canonical(lo*mag, 1), canonical(hi*mag, 1)
}

// canonical rounds v to digits significant digits as a decimal, so that
// equal buckets are equal floats (and render the same).
func canonical(v float64, digits int) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', digits, 64), 64)
	return r
}
