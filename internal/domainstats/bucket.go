package domainstats

import (
	"math"
	"strconv"

	"github.com/vmobs/vmobs/internal/verdict"
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
	// rates); otherwise the 1-2-5 series, kept from 0.8× its bucket to
	// 1.25× the next one, for values shown to people and compared with
	// order-of-magnitude thresholds.
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
func bucket(prev verdict.Value, v float64, ok bool, s scale) verdict.Value {
	if !ok || !valid(v) {
		return verdict.Value{}
	}
	if v < s.floor {
		return verdict.Value{V: 0, OK: true}
	}
	if prev.OK && prev.V > 0 && s.near(prev.V, v) {
		return prev
	}
	return verdict.Value{V: s.round(v), OK: true}
}

func valid(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) && v >= 0 }

func (s scale) near(b, v float64) bool {
	if s.fine {
		return math.Abs(v-b) <= 0.1*b
	}
	return v >= 0.8*b && v < 1.25*next125(b)
}

func (s scale) round(v float64) float64 {
	if s.fine {
		return canonical(v, 2)
	}
	mag := math.Pow(10, math.Floor(math.Log10(v)))
	m := v / mag
	step := 1.0
	switch {
	case m >= 5:
		step = 5
	case m >= 2:
		step = 2
	}
	return canonical(step*mag, 1)
}

// next125 is the bucket above b in the 1-2-5 series.
func next125(b float64) float64 {
	mag := math.Pow(10, math.Floor(math.Log10(b)))
	switch m := canonical(b/mag, 1); {
	case m < 2:
		return canonical(2*mag, 1)
	case m < 5:
		return canonical(5*mag, 1)
	}
	return canonical(10*mag, 1)
}

// canonical rounds v to digits significant digits as a decimal, so that
// equal buckets are equal floats (and render the same).
func canonical(v float64, digits int) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', digits, 64), 64)
	return r
}
