package guestprobe

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the source's own: how its probes fare, without a per-VM
// label. Whether it is available is in the families every source shares
// (metrics.FactSources).
type Metrics struct {
	requests        *prometheus.CounterVec
	requestDuration *prometheus.HistogramVec
	probes          *prometheus.CounterVec
	probeDuration   prometheus.Histogram
	inFlight        prometheus.Gauge
	targets         prometheus.Gauge
	skipped         *prometheus.CounterVec
}

// NewMetrics makes the metrics; register Collectors.
func NewMetrics() *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vmobs_guest_probe_requests_total",
			Help: "GETs of virt-api's guest agent subresources, per subresource and result (ok, throttled, unavailable, unreachable, refused, not_served, gone, not_supported, no_handler, agent_error, timeout, bad_answer).",
		}, []string{"subresource", "result"}),
		requestDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "vmobs_guest_probe_request_duration_seconds",
			Help:    "Time a GET of a guest agent subresource took, failed ones included.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 12),
		}, []string{"subresource"}),
		probes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vmobs_guest_probes_total",
			Help: "Probes of a guest agent (up to three GETs), per result: ok, failed (charged to the agent), gone (VMI not running or agent not connected), unavailable (the API cannot be used), excused (failed alike across the fleet, not charged), canceled.",
		}, []string{"result"}),
		probeDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "vmobs_guest_probe_duration_seconds",
			Help:    "Time a probe of a guest agent took, its GETs together.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
		}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vmobs_guest_probes_in_flight",
			Help: "Probes running now (at most --guest-probe-workers).",
		}),
		targets: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vmobs_guest_probe_targets",
			Help: "Running VMIs whose guest agent is connected: the VMs probed once per --guest-probe-interval.",
		}),
		skipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vmobs_guest_probe_entries_skipped_total",
			Help: "Entries of a guest's answer dropped for not making sense (sizes negative, past int64, used over total, total 0; no name or mount point), per subresource.",
		}, []string{"subresource"}),
	}
	return m
}

// Collectors returns what to register.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.requests, m.requestDuration, m.probes, m.probeDuration, m.inFlight, m.targets, m.skipped}
}

func (m *Metrics) called(sub string, err *Error, d time.Duration) {
	if m == nil {
		return
	}
	result := "ok"
	if err != nil {
		result = string(err.Kind)
	}
	m.requests.WithLabelValues(sub, result).Inc()
	m.requestDuration.WithLabelValues(sub).Observe(d.Seconds())
}

func (m *Metrics) started() {
	if m != nil {
		m.inFlight.Inc()
	}
}

func (m *Metrics) probed(result string, d time.Duration) {
	if m == nil {
		return
	}
	m.inFlight.Dec()
	m.probes.WithLabelValues(result).Inc()
	if result != "canceled" {
		m.probeDuration.Observe(d.Seconds())
	}
}

func (m *Metrics) targeted(n int) {
	if m != nil {
		m.targets.Set(float64(n))
	}
}

func (m *Metrics) skippedEntries(sub string, n int) {
	if m != nil && n > 0 {
		m.skipped.WithLabelValues(sub).Add(float64(n))
	}
}
