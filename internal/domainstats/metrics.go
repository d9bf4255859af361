package domainstats

import (
	"time"

	"github.com/vmobs/vmobs/internal/metrics"
)

// Metrics are the source's own families (metrics.SourceDomainStats in the
// catalogue, which defines them): how its queries fare, without a per-VM
// label. Whether it is available is in the families every source shares
// (metrics.FactSources). Register Collectors.
type Metrics struct{ *metrics.Set }

// NewMetrics makes the metrics.
func NewMetrics() *Metrics { return &Metrics{metrics.NewSet(metrics.SourceDomainStats)} }

func (m *Metrics) queried(s signal, d time.Duration, n int, err error) {
	if m == nil {
		return
	}
	m.Histogram("vmobs_domain_stats_query_duration_seconds", s.String()).Observe(d.Seconds())
	if n > 0 {
		m.Histogram("vmobs_domain_stats_response_bytes", s.String()).Observe(float64(n))
	}
	if err != nil {
		kind := "unreachable"
		var qe *QueryError
		if asQueryError(err, &qe) {
			kind = qe.Kind
		}
		m.Counter("vmobs_domain_stats_query_errors_total", s.String(), kind).Inc()
	}
}

func (m *Metrics) annotated(s signal, n int) {
	if m != nil {
		m.Counter("vmobs_domain_stats_query_annotations_total", s.String()).Add(float64(n))
	}
}

func (m *Metrics) dropped(n int) {
	if m != nil {
		m.Counter("vmobs_domain_stats_series_dropped_total").Add(float64(n))
	}
}

func (m *Metrics) folded(running, exported int) {
	if m != nil {
		m.Gauge("vmobs_domain_stats_vmis", "running").Set(float64(running))
		m.Gauge("vmobs_domain_stats_vmis", "exported").Set(float64(exported))
	}
}
