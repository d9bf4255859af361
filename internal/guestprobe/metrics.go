package guestprobe

import (
	"time"

	"github.com/vmobs/vmobs/internal/metrics"
)

// Metrics are the source's own families (metrics.SourceGuestProbe in the
// catalogue, which defines them): how its probes fare, without a per-VM
// label. Whether it is available is in the families every source shares
// (metrics.FactSources). Register Collectors.
type Metrics struct{ *metrics.Set }

// NewMetrics makes the metrics.
func NewMetrics() *Metrics { return &Metrics{metrics.NewSet(metrics.SourceGuestProbe)} }

func (m *Metrics) called(sub string, err *Error, d time.Duration) {
	if m == nil {
		return
	}
	result := "ok"
	if err != nil {
		result = string(err.Kind)
	}
	m.Counter("vmobs_guest_probe_requests_total", sub, result).Inc()
	m.Histogram("vmobs_guest_probe_request_duration_seconds", sub).Observe(d.Seconds())
}

func (m *Metrics) started() {
	if m != nil {
		m.Gauge("vmobs_guest_probes_in_flight").Inc()
	}
}

func (m *Metrics) probed(result string, d time.Duration) {
	if m == nil {
		return
	}
	m.Gauge("vmobs_guest_probes_in_flight").Dec()
	m.Counter("vmobs_guest_probes_total", result).Inc()
	if result != "canceled" {
		m.Histogram("vmobs_guest_probe_duration_seconds").Observe(d.Seconds())
	}
}

func (m *Metrics) targeted(n int) {
	if m != nil {
		m.Gauge("vmobs_guest_probe_targets").Set(float64(n))
	}
}

func (m *Metrics) skippedEntries(sub string, n int) {
	if m != nil && n > 0 {
		m.Counter("vmobs_guest_probe_entries_skipped_total", sub).Add(float64(n))
	}
}
