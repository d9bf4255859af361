// Package metrics exports vmobs' view of the fleet to Prometheus: per-object
// gauges computed at scrape time from the cache (so a deleted VM leaves no
// series behind) and transition counters without per-object labels.
package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/api/v1alpha1"
)

// Verdicts lists the six verdicts in the order the gauges emit them.
var Verdicts = []v1alpha1.Verdict{
	v1alpha1.VerdictHealthy, v1alpha1.VerdictProgressing, v1alpha1.VerdictSuspended,
	v1alpha1.VerdictDegraded, v1alpha1.VerdictFailed, v1alpha1.VerdictUnknown,
}

var (
	layerVerdictDesc = prometheus.NewDesc("vmobs_layer_verdict",
		"Verdict of one layer of a VM: 1 for the current verdict, 0 for the others.",
		[]string{"namespace", "name", "layer", "verdict"}, nil)
	layerReasonDesc = prometheus.NewDesc("vmobs_layer_reason",
		"Reason of the current verdict of one layer of a VM (always 1).",
		[]string{"namespace", "name", "layer", "reason"}, nil)
	evidenceTimeDesc = prometheus.NewDesc("vmobs_layer_evidence_timestamp_seconds",
		"Newest timestamp among the evidence a layer's verdict rests on, as stored in the VMObservation.",
		[]string{"namespace", "name", "layer"}, nil)
	staleAtDesc = prometheus.NewDesc("vmobs_layer_stale_at_seconds",
		"When a layer's evidence stops being trustworthy, as stored in the VMObservation.",
		[]string{"namespace", "name", "layer"}, nil)
	scrapeErrorsDesc = prometheus.NewDesc("vmobs_collector_errors",
		"1 when the last scrape could not list VMObservations from the cache.", nil, nil)
)

// Collector reads VMObservations from the cache at scrape time.
type Collector struct {
	Reader client.Reader
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- layerVerdictDesc
	ch <- layerReasonDesc
	ch <- evidenceTimeDesc
	ch <- staleAtDesc
	ch <- scrapeErrorsDesc
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	list := &v1alpha1.VMObservationList{}
	// A scrape reads every VMObservation once and keeps nothing: copying
	// them all out of the cache would double the heap for a moment.
	if err := c.Reader.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		ch <- prometheus.MustNewConstMetric(scrapeErrorsDesc, prometheus.GaugeValue, 1)
		return
	}
	ch <- prometheus.MustNewConstMetric(scrapeErrorsDesc, prometheus.GaugeValue, 0)
	for i := range list.Items {
		o := &list.Items[i]
		if o.Status.Layers == nil {
			continue
		}
		for name, l := range o.Status.Layers.All() {
			for _, v := range Verdicts {
				val := 0.0
				if l.Verdict == v {
					val = 1
				}
				ch <- prometheus.MustNewConstMetric(layerVerdictDesc, prometheus.GaugeValue, val, o.Namespace, o.Name, name, string(v))
			}
			if l.Reason != "" {
				ch <- prometheus.MustNewConstMetric(layerReasonDesc, prometheus.GaugeValue, 1, o.Namespace, o.Name, name, l.Reason)
			}
			if l.EvidenceTime != nil {
				ch <- prometheus.MustNewConstMetric(evidenceTimeDesc, prometheus.GaugeValue, float64(l.EvidenceTime.Unix()), o.Namespace, o.Name, name)
			}
			if l.StaleAt != nil {
				ch <- prometheus.MustNewConstMetric(staleAtDesc, prometheus.GaugeValue, float64(l.StaleAt.Unix()), o.Namespace, o.Name, name)
			}
		}
	}
}

// Transitions counts verdict changes per layer, with no per-object label so
// the series stay few however large the fleet.
type Transitions struct {
	counter *prometheus.CounterVec
}

// NewTransitions makes the counter; register it with Register.
func NewTransitions() *Transitions {
	return &Transitions{counter: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "vmobs_verdict_transitions_total",
		Help: "Verdict transitions written, per layer (controlPlane, node, guest, overall) and from/to verdict. From is None for a new VMObservation.",
	}, []string{"layer", "from", "to"})}
}

// Observe counts one transition.
func (t *Transitions) Observe(layer, from, to string) {
	if from == "" {
		from = "None"
	}
	t.counter.WithLabelValues(layer, from, to).Inc()
}

// Collectors returns what to register.
func (t *Transitions) Collectors() []prometheus.Collector { return []prometheus.Collector{t.counter} }

// Liveness is the controller's own heartbeat, kept in one place instead of
// in every VMObservation: the time of the last reconcile it finished. The
// controller reconciles a liveness tick of its own every LivenessTick, so
// the gauge moves even when no VM changes; it stops when the controller
// stops working (no leader, workers stuck, the API server unreachable).
// Only the leader reconciles: a standby replica reports 0, and alerts take
// the max over replicas.
type Liveness struct {
	last prometheus.Gauge
}

// NewLiveness makes the gauge; register it with Collectors.
func NewLiveness() *Liveness {
	return &Liveness{last: prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "vmobs_last_reconcile_timestamp_seconds",
		Help: "Unix time of the last reconcile the controller finished, its own liveness tick (every 30s) included. It stops moving when the controller stops working; 0 on a replica that is not the leader.",
	})}
}

// Reconciled records a finished reconcile.
func (l *Liveness) Reconciled(at time.Time) {
	if l != nil {
		l.last.Set(float64(at.Unix()))
	}
}

// Collectors returns what to register.
func (l *Liveness) Collectors() []prometheus.Collector { return []prometheus.Collector{l.last} }
