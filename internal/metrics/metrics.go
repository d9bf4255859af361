// Package metrics exports vmobs' view of the fleet to Prometheus: per-object
// gauges computed at scrape time from the cache (so a deleted VM leaves no
// series behind) and transition counters without per-object labels.
package metrics

import (
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/projection"
	"github.com/vmobs/vmobs/internal/version"
)

// Verdicts lists the six verdicts, the values of the verdict label.
var Verdicts = []v1alpha1.Verdict{
	v1alpha1.VerdictHealthy, v1alpha1.VerdictProgressing, v1alpha1.VerdictSuspended,
	v1alpha1.VerdictDegraded, v1alpha1.VerdictFailed, v1alpha1.VerdictUnknown,
}

// Every per-VM series carries the VM's namespace and name (a
// VMObservation shares its VM's name) and the node its VMI runs on
// (status.vmi.nodeName; no label for a VM without a VMI), so alerts can be
// grouped and inhibited per node. The verdict and reason labels take values
// from fixed lists (Verdicts, v1alpha1.AllReasons) and only the current
// one is exported: a VM has 1 overall series, 3 layer verdicts, at most 3
// layer reasons and at most 6 evidence timestamps, 13 at most. A series
// whose verdict, reason or node changes is not exported at the next scrape
// and Prometheus marks it stale, so no series is ever 0.
var vmLabels = []string{"namespace", "name", "node"}

func withVM(extra ...string) []string { return append(slices.Clone(vmLabels), extra...) }

var (
	verdictDesc        = desc("vmobs_verdict")
	layerVerdictDesc   = desc("vmobs_layer_verdict")
	layerReasonDesc    = desc("vmobs_layer_reason")
	incidentMemberDesc = desc("vmobs_incident_member")
	evidenceTimeDesc   = desc("vmobs_layer_evidence_timestamp_seconds")
	staleDesc          = desc("vmobs_layer_stale_timestamp_seconds")
	restartsDesc       = desc("vmobs_vm_restarts")
	lastRestartDesc    = desc("vmobs_vm_last_restart_timestamp_seconds")
	scrapeErrorsDesc   = desc("vmobs_collector_errors")
)

// Collector reads VMObservations from the cache at scrape time: their
// projections, which keep each layer's verdict, reason and evidence times.
type Collector struct {
	Observations interface{ List() []any }
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- verdictDesc
	ch <- layerVerdictDesc
	ch <- layerReasonDesc
	ch <- incidentMemberDesc
	ch <- evidenceTimeDesc
	ch <- staleDesc
	ch <- restartsDesc
	ch <- lastRestartDesc
	ch <- scrapeErrorsDesc
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	if c.Observations == nil {
		ch <- prometheus.MustNewConstMetric(scrapeErrorsDesc, prometheus.GaugeValue, 1)
		return
	}
	failed := 0.0
	for _, item := range c.Observations.List() {
		o, ok := item.(*projection.Observation)
		if !ok {
			failed = 1
			continue
		}
		ns, node := o.GetNamespace(), o.NodeName.String()
		if v := o.Verdict.String(); v != "" {
			ch <- prometheus.MustNewConstMetric(verdictDesc, prometheus.GaugeValue, 1, ns, o.Name, node, v, o.Reason.String())
			ch <- prometheus.MustNewConstMetric(restartsDesc, prometheus.GaugeValue, float64(o.Restarts), ns, o.Name, node)
		}
		if inc := o.Incident.String(); inc != "" {
			ch <- prometheus.MustNewConstMetric(incidentMemberDesc, prometheus.GaugeValue, 1, ns, o.Name, node, inc)
		}
		if r := o.LastRestart(); r != nil {
			ch <- prometheus.MustNewConstMetric(lastRestartDesc, prometheus.GaugeValue, float64(r.Time.Unix()), ns, o.Name, node)
		}
		if !o.HasLayers {
			continue
		}
		for i, name := range v1alpha1.LayerNames {
			l := &o.Layers[i]
			if v := l.Verdict.String(); v != "" {
				ch <- prometheus.MustNewConstMetric(layerVerdictDesc, prometheus.GaugeValue, 1, ns, o.Name, node, name, v)
			}
			if r := l.Reason.String(); r != "" {
				ch <- prometheus.MustNewConstMetric(layerReasonDesc, prometheus.GaugeValue, 1, ns, o.Name, node, name, r)
			}
			if t := l.EvidenceTime.Ptr(); t != nil {
				ch <- prometheus.MustNewConstMetric(evidenceTimeDesc, prometheus.GaugeValue, float64(t.Unix()), ns, o.Name, node, name)
			}
			if t := l.StaleAt.Ptr(); t != nil {
				ch <- prometheus.MustNewConstMetric(staleDesc, prometheus.GaugeValue, float64(t.Unix()), ns, o.Name, node, name)
			}
		}
	}
	ch <- prometheus.MustNewConstMetric(scrapeErrorsDesc, prometheus.GaugeValue, failed)
}

// Transitions counts verdict changes per layer, with no per-object label so
// the series stay few however large the fleet.
type Transitions struct {
	counter *prometheus.CounterVec
}

// NewTransitions makes the counter; register it with Register.
func NewTransitions() *Transitions {
	return &Transitions{counter: counterVec("vmobs_verdict_transitions_total")}
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
	return &Liveness{last: newGauge("vmobs_last_reconcile_timestamp_seconds")}
}

// Reconciled records a finished reconcile.
func (l *Liveness) Reconciled(at time.Time) {
	if l != nil {
		l.last.Set(float64(at.Unix()))
	}
}

// Collectors returns what to register.
func (l *Liveness) Collectors() []prometheus.Collector { return []prometheus.Collector{l.last} }

// BuildInfo is vmobs_build_info, the version of the running binary as a
// constant 1 with labels, the way Prometheus' own build_info metrics are:
// `* on (pod) group_left (version) vmobs_build_info` adds the version to
// any of the controller's series.
func BuildInfo(v version.Info) prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "vmobs_build_info",
		Help:        "The version, commit and Go version the running vmobs binary was built from; always 1.",
		ConstLabels: prometheus.Labels{"version": v.Version, "commit": v.Commit, "goversion": v.GoVersion},
	})
	g.Set(1)
	return g
}
