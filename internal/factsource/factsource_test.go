package factsource

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/types"
)

// Availability: failures in a row below the threshold keep the source
// available; at the threshold the facts say why, and only a new cause is
// news; a success ends it and dates the last success. The gauges say the
// same, 1 from the start.
func TestAvailability(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	available := prometheus.NewGauge(prometheus.GaugeOpts{Name: "available"})
	last := prometheus.NewGauge(prometheus.GaugeOpts{Name: "last_success"})
	a := NewAvailability(3, available, last)
	if got := testutil.ToFloat64(available); got != 1 {
		t.Fatalf("available %v before the first round, want 1", got)
	}
	type step struct {
		fail        string // "" succeeds
		why         string
		changed     bool
		gauge       float64
		wasReported string
	}
	for i, s := range []step{
		{fail: "down", gauge: 1},
		{fail: "down", gauge: 1},
		{fail: "down", why: "down", changed: true, gauge: 0},
		{fail: "down", why: "down", gauge: 0},
		{fail: "refused", why: "refused", changed: true, gauge: 0},
		{gauge: 1, wasReported: "refused"},
		{fail: "down", gauge: 1},
		{gauge: 1},
	} {
		if s.fail == "" {
			at := t0.Add(time.Duration(i) * time.Minute)
			if was := a.Succeeded(at); was != s.wasReported {
				t.Errorf("step %d: Succeeded returned %q, want %q", i, was, s.wasReported)
			}
			if got := testutil.ToFloat64(last); got != float64(at.Unix()) || !a.LastSuccess().Equal(at) {
				t.Errorf("step %d: last success %v (%v), want %v", i, got, a.LastSuccess(), at)
			}
		} else {
			why, changed := a.Failed(s.fail)
			if why != s.why || changed != s.changed {
				t.Errorf("step %d: Failed(%q) = %q, %v; want %q, %v", i, s.fail, why, changed, s.why, s.changed)
			}
		}
		if got := testutil.ToFloat64(available); got != s.gauge {
			t.Errorf("step %d: available %v, want %v", i, got, s.gauge)
		}
		if a.Unavailable() != s.why {
			t.Errorf("step %d: Unavailable() %q, want %q", i, a.Unavailable(), s.why)
		}
	}
}

// Options take the source's defaults where they are not positive.
func TestOptionsWithDefaults(t *testing.T) {
	d := Options{Interval: time.Minute, Timeout: 10 * time.Second, UnavailableAfter: 3}
	if got := (Options{}).WithDefaults(d); got != d {
		t.Errorf("zero options: %+v, want %+v", got, d)
	}
	set := Options{Interval: time.Second, Timeout: time.Second, UnavailableAfter: 1}
	if got := set.WithDefaults(d); got != set {
		t.Errorf("set options: %+v, want them kept", got)
	}
}

// Notify goes to Deps.Notify when set, else to the event source's
// channel, and stops once ctx has ended.
func TestNotify(t *testing.T) {
	a, b := types.NamespacedName{Namespace: "ns", Name: "a"}, types.NamespacedName{Namespace: "ns", Name: "b"}
	var got []types.NamespacedName
	k := NewKit(Options{}, Deps{Notify: func(key types.NamespacedName) { got = append(got, key) }})
	k.Notify(t.Context(), a, b)
	if len(got) != 2 || got[0] != a || got[1] != b {
		t.Errorf("Deps.Notify told %v, want [a b]", got)
	}

	k = NewKit(Options{}, Deps{})
	k.Notify(t.Context(), a)
	select {
	case ev := <-k.changes:
		if ev.Object.GetNamespace() != "ns" || ev.Object.GetName() != "a" {
			t.Errorf("event for %s/%s, want ns/a", ev.Object.GetNamespace(), ev.Object.GetName())
		}
	default:
		t.Fatal("no event on the channel")
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	k.Notify(ctx, b)
	select {
	case ev := <-k.changes:
		t.Errorf("an ended context still sent %v", ev)
	default:
	}
	if k.Changes() == nil {
		t.Error("no event source")
	}
}
