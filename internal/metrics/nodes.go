package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/vmobs/vmobs/api/v1alpha1"
)

// NodeObservations are the NodeObservation controller's families: its
// writes, and, at scrape time from the cache, each node's verdict and its
// VMs by verdict, so that a deleted node leaves no series behind.
type NodeObservations struct {
	// List returns the cached NodeObservations; an error makes the scrape
	// say so (vmobs_node_collector_errors).
	List   func() ([]v1alpha1.NodeObservation, error)
	writes *prometheus.CounterVec
	drains *prometheus.CounterVec
}

var (
	nodeVerdictDesc  = desc("vmobs_node_verdict")
	nodeVMsDesc      = desc("vmobs_node_vms")
	nodeIncidentDesc = desc("vmobs_node_incident_members")
	nodeErrorsDesc   = desc("vmobs_node_collector_errors")
)

// NewNodeObservations makes the families; list reads the cache at scrape.
func NewNodeObservations(list func() ([]v1alpha1.NodeObservation, error)) *NodeObservations {
	return &NodeObservations{List: list,
		writes: counterVec("vmobs_node_observation_writes_total"),
		drains: counterVec("vmobs_drain_outcomes_total")}
}

// DrainEnded counts the VMs of an ended drain, n for each predicted and
// observed outcome.
func (n *NodeObservations) DrainEnded(predicted, observed string, count int) {
	if n != nil {
		n.drains.WithLabelValues(predicted, observed).Add(float64(count))
	}
}

// Wrote counts a write of op (create, status, delete).
func (n *NodeObservations) Wrote(op string) {
	if n != nil {
		n.writes.WithLabelValues(op).Inc()
	}
}

// Collectors returns what to register.
func (n *NodeObservations) Collectors() []prometheus.Collector {
	return []prometheus.Collector{n.writes, n.drains, listCollector[v1alpha1.NodeObservation]{
		list: n.List, errors: nodeErrorsDesc, descs: []*prometheus.Desc{nodeVerdictDesc, nodeVMsDesc, nodeIncidentDesc},
		each: collectNode,
	}}
}

func collectNode(ch chan<- prometheus.Metric, o *v1alpha1.NodeObservation) {
	st := &o.Status
	if st.Verdict != "" {
		ch <- prometheus.MustNewConstMetric(nodeVerdictDesc, prometheus.GaugeValue, 1, o.Name, string(st.Verdict), st.Reason)
	}
	if i := st.Incident; i != nil {
		ch <- prometheus.MustNewConstMetric(nodeIncidentDesc, prometheus.GaugeValue, float64(i.MemberCount), o.Name, i.Cause, string(i.State))
	}
	vms := st.VMs
	if vms == nil {
		return
	}
	for _, v := range [...]struct {
		verdict v1alpha1.Verdict
		n       int32
	}{
		{v1alpha1.VerdictHealthy, vms.Healthy}, {v1alpha1.VerdictProgressing, vms.Progressing},
		{v1alpha1.VerdictSuspended, vms.Suspended}, {v1alpha1.VerdictDegraded, vms.Degraded},
		{v1alpha1.VerdictFailed, vms.Failed}, {v1alpha1.VerdictUnknown, vms.Unknown}, {"Unobserved", vms.Unobserved},
	} {
		ch <- prometheus.MustNewConstMetric(nodeVMsDesc, prometheus.GaugeValue, float64(v.n), o.Name, string(v.verdict))
	}
}
