package metrics

import "github.com/prometheus/client_golang/prometheus"

// FactSources are the families every source of facts shares
// (internal/factsource), labelled by source, so that one alert and one
// dashboard panel cover any source, the ones to come included.
type FactSources struct{ set *Set }

// NewFactSources makes the families; register Collectors.
func NewFactSources() *FactSources { return &FactSources{set: NewSet(SourceFactSources)} }

// Collectors returns what to register.
func (m *FactSources) Collectors() []prometheus.Collector { return m.set.Collectors() }

// For returns a source's series (factsource.Deps' Available and
// LastSuccess); a nil m returns nil gauges, which are not set.
func (m *FactSources) For(source string) (available, lastSuccess prometheus.Gauge) {
	if m == nil {
		return nil, nil
	}
	return m.set.Gauge("vmobs_fact_source_available", source), m.set.Gauge("vmobs_fact_source_last_success_timestamp_seconds", source)
}
