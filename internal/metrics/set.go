package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Set is the families the catalogue gives one source, made from their
// entries alone (name, help, type, labels, buckets): a part of vmobs that
// registers families of its own (a source of facts) names them where it
// counts, and writes no second definition of them.
type Set struct {
	vecs       map[string]vec
	collectors []prometheus.Collector
}

type vec struct {
	*prometheus.MetricVec
	typ dto.MetricType
}

// NewSet makes the catalogue's families of source. A family without
// labels has its one series from the start, as a plain counter, gauge or
// histogram would: it is scraped at 0 before its first use.
func NewSet(source Source) *Set {
	s := &Set{vecs: map[string]vec{}}
	for _, f := range Catalogue {
		if f.Source != source {
			continue
		}
		var c prometheus.Collector
		var v *prometheus.MetricVec
		switch f.Type {
		case counter:
			cv := prometheus.NewCounterVec(prometheus.CounterOpts{Name: f.Name, Help: f.Help}, f.Labels)
			c, v = cv, cv.MetricVec
		case gauge:
			gv := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: f.Name, Help: f.Help}, f.Labels)
			c, v = gv, gv.MetricVec
		case histogram:
			hv := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: f.Name, Help: f.Help, Buckets: f.Buckets}, f.Labels)
			c, v = hv, hv.MetricVec
		default:
			continue
		}
		if len(f.Labels) == 0 {
			_, _ = v.GetMetricWithLabelValues()
		}
		s.vecs[f.Name] = vec{MetricVec: v, typ: f.Type}
		s.collectors = append(s.collectors, c)
	}
	return s
}

// Collectors returns what to register.
func (s *Set) Collectors() []prometheus.Collector { return s.collectors }

// Discarded series stand for a name the set does not hold as that type,
// or label values of the wrong number: a mistake of the code that counts
// (the catalogue's tests and the source's own find it), which costs the
// count rather than a panic.
var (
	discardedCounter   = prometheus.NewCounter(prometheus.CounterOpts{Name: "discarded"})
	discardedGauge     = prometheus.NewGauge(prometheus.GaugeOpts{Name: "discarded"})
	discardedHistogram = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "discarded"})
)

// series is the series of the family name of type typ with label values,
// as an M; discarded when the set holds no such series.
func series[M any](s *Set, name string, typ dto.MetricType, values []string, discarded M) M {
	v, ok := s.vecs[name]
	if !ok || v.typ != typ {
		return discarded
	}
	m, err := v.GetMetricWithLabelValues(values...)
	if err != nil {
		return discarded
	}
	if out, ok := m.(M); ok {
		return out
	}
	return discarded
}

// Counter is the series of the counter family name with label values (in
// the catalogue's order).
func (s *Set) Counter(name string, values ...string) prometheus.Counter {
	return series(s, name, counter, values, discardedCounter)
}

// Gauge is the series of the gauge family name with label values.
func (s *Set) Gauge(name string, values ...string) prometheus.Gauge {
	return series(s, name, gauge, values, discardedGauge)
}

// Histogram is the series of the histogram family name with label values.
func (s *Set) Histogram(name string, values ...string) prometheus.Observer {
	return series(s, name, histogram, values, discardedHistogram)
}
