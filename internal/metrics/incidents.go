package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/vmobs/vmobs/api/v1alpha1"
)

// Incidents are the VMIncident controller's families: its writes, and, at
// scrape time from the cache, each incident, so that a deleted incident
// leaves no series behind. The members' own series,
// vmobs_incident_member, come from their VMObservations (Collector).
type Incidents struct {
	// List returns the cached VMIncidents; an error makes the scrape say
	// so (vmobs_incident_collector_errors).
	List   func() ([]v1alpha1.VMIncident, error)
	writes *prometheus.CounterVec
}

var (
	incidentOpenDesc    = desc("vmobs_incident_open")
	incidentMembersDesc = desc("vmobs_incident_members")
	incidentErrorsDesc  = desc("vmobs_incident_collector_errors")
)

// NewIncidents makes the families; list reads the cache at scrape.
func NewIncidents(list func() ([]v1alpha1.VMIncident, error)) *Incidents {
	return &Incidents{List: list, writes: counterVec("vmobs_incident_writes_total")}
}

// Wrote counts a write of op (create, status, delete).
func (n *Incidents) Wrote(op string) {
	if n != nil {
		n.writes.WithLabelValues(op).Inc()
	}
}

// Collectors returns what to register.
func (n *Incidents) Collectors() []prometheus.Collector {
	return []prometheus.Collector{n.writes, listCollector[v1alpha1.VMIncident]{
		list: n.List, errors: incidentErrorsDesc, descs: []*prometheus.Desc{incidentOpenDesc, incidentMembersDesc},
		each: collectIncident,
	}}
}

func collectIncident(ch chan<- prometheus.Metric, o *v1alpha1.VMIncident) {
	st := &o.Status
	if st.State == "" || st.Cause == nil {
		return
	}
	if st.State == v1alpha1.IncidentOpen {
		ch <- prometheus.MustNewConstMetric(incidentOpenDesc, prometheus.GaugeValue, 1, o.Name, string(st.Cause.Kind), st.Cause.Name, st.Reason)
	}
	ch <- prometheus.MustNewConstMetric(incidentMembersDesc, prometheus.GaugeValue, float64(st.MemberCount), o.Name, string(st.State))
}
