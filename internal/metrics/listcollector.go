package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// listCollector emits, at scrape time, the series of each object a list
// of the cache returns, so that a deleted object leaves no series behind,
// and a gauge that says whether the list failed: the one shape of the
// cluster-scoped resources' families (NodeObservations, VMIncidents).
type listCollector[T any] struct {
	// list reads the cache; nil counts as a failed list.
	list func() ([]T, error)
	// errors is the collector's error gauge: 1 when the list failed.
	errors *prometheus.Desc
	// descs are the families each emits.
	descs []*prometheus.Desc
	each  func(ch chan<- prometheus.Metric, o *T)
}

func (c listCollector[T]) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
	ch <- c.errors
}

func (c listCollector[T]) Collect(ch chan<- prometheus.Metric) {
	var items []T
	failed := 1.0
	if c.list != nil {
		var err error
		if items, err = c.list(); err == nil {
			failed = 0
		}
	}
	ch <- prometheus.MustNewConstMetric(c.errors, prometheus.GaugeValue, failed)
	for i := range items {
		c.each(ch, &items[i])
	}
}
