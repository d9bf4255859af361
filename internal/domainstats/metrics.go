package domainstats

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the source's own: how its queries fare, without a per-VM
// label. Whether it is available is in the families every source shares
// (metrics.FactSources).
type Metrics struct {
	duration    *prometheus.HistogramVec
	bytes       *prometheus.HistogramVec
	errors      *prometheus.CounterVec
	annotations *prometheus.CounterVec
	dropSeries  prometheus.Counter
	vmis        *prometheus.GaugeVec
}

// NewMetrics makes the metrics; register Collectors.
func NewMetrics() *Metrics {
	m := &Metrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "vmobs_domain_stats_query_duration_seconds",
			Help:    "Time an instant query for domain stats took, per signal, failed ones included.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 12),
		}, []string{"signal"}),
		bytes: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "vmobs_domain_stats_response_bytes",
			Help:    "Size of Prometheus' answer to a domain stats query, per signal.",
			Buckets: prometheus.ExponentialBuckets(256, 4, 10),
		}, []string{"signal"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vmobs_domain_stats_query_errors_total",
			Help: "Domain stats queries that failed, per signal and kind (unreachable, timeout, refused, http, bad_response, query, partial).",
		}, []string{"signal", "kind"}),
		annotations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vmobs_domain_stats_query_annotations_total",
			Help: "PromQL annotations (\"PromQL info: ...\", \"PromQL warning: ...\") in the answers to domain stats queries, per signal; the answers are used.",
		}, []string{"signal"}),
		dropSeries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vmobs_domain_stats_series_dropped_total",
			Help: "Series in Prometheus' answers that name no VMI (no namespace or name label).",
		}),
		vmis: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "vmobs_domain_stats_vmis",
			Help: "Running VMIs in the last round (state running) and those among them virt-handler exports (state exported).",
		}, []string{"state"}),
	}
	return m
}

// Collectors returns what to register.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.duration, m.bytes, m.errors, m.annotations, m.dropSeries, m.vmis}
}

func (m *Metrics) queried(s signal, d time.Duration, n int, err error) {
	if m == nil {
		return
	}
	m.duration.WithLabelValues(s.String()).Observe(d.Seconds())
	if n > 0 {
		m.bytes.WithLabelValues(s.String()).Observe(float64(n))
	}
	if err != nil {
		kind := "unreachable"
		var qe *QueryError
		if asQueryError(err, &qe) {
			kind = qe.Kind
		}
		m.errors.WithLabelValues(s.String(), kind).Inc()
	}
}

func (m *Metrics) annotated(s signal, n int) {
	if m != nil {
		m.annotations.WithLabelValues(s.String()).Add(float64(n))
	}
}

func (m *Metrics) dropped(n int) {
	if m != nil {
		m.dropSeries.Add(float64(n))
	}
}

func (m *Metrics) folded(running, exported int) {
	if m != nil {
		m.vmis.WithLabelValues("running").Set(float64(running))
		m.vmis.WithLabelValues("exported").Set(float64(exported))
	}
}

func asQueryError(err error, qe **QueryError) bool { return errors.As(err, qe) }
