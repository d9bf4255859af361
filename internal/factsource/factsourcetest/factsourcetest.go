// Package factsourcetest helps test a source of facts without a
// controller: a recorder of the keys it notifies (factsource.Deps.Notify)
// and the gauges of its availability.
package factsourcetest

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
)

// Recorder records the keys a source notifies; safe from any goroutine.
type Recorder struct {
	mu   sync.Mutex
	keys []types.NamespacedName
}

// Notify is a factsource.Deps.Notify.
func (r *Recorder) Notify(k types.NamespacedName) {
	r.mu.Lock()
	r.keys = append(r.keys, k)
	r.mu.Unlock()
}

// Take returns the keys notified since the last Take.
func (r *Recorder) Take() []types.NamespacedName {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := r.keys
	r.keys = nil
	return k
}

// Gauges are a source's series of the shared metrics
// (factsource.Deps.Available and LastSuccess), registered nowhere.
type Gauges struct {
	Available, LastSuccess prometheus.Gauge
}

// NewGauges makes the gauges.
func NewGauges() Gauges {
	return Gauges{
		Available:   prometheus.NewGauge(prometheus.GaugeOpts{Name: "available"}),
		LastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{Name: "last_success"}),
	}
}
