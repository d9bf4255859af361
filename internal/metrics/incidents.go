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
	incidentOpenDesc = prometheus.NewDesc("vmobs_incident_open",
		family("vmobs_incident_open").Help, family("vmobs_incident_open").Labels, nil)
	incidentMembersDesc = prometheus.NewDesc("vmobs_incident_members",
		family("vmobs_incident_members").Help, family("vmobs_incident_members").Labels, nil)
	incidentErrorsDesc = prometheus.NewDesc("vmobs_incident_collector_errors",
		family("vmobs_incident_collector_errors").Help, nil, nil)
)

// NewIncidents makes the families; list reads the cache at scrape.
func NewIncidents(list func() ([]v1alpha1.VMIncident, error)) *Incidents {
	f := family("vmobs_incident_writes_total")
	return &Incidents{List: list, writes: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "vmobs_incident_writes_total", Help: f.Help}, f.Labels)}
}

// Wrote counts a write of op (create, status, delete).
func (n *Incidents) Wrote(op string) {
	if n != nil {
		n.writes.WithLabelValues(op).Inc()
	}
}

// Collectors returns what to register.
func (n *Incidents) Collectors() []prometheus.Collector {
	return []prometheus.Collector{n.writes, incidentCollector{n}}
}

type incidentCollector struct{ n *Incidents }

func (c incidentCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- incidentOpenDesc
	ch <- incidentMembersDesc
	ch <- incidentErrorsDesc
}

func (c incidentCollector) Collect(ch chan<- prometheus.Metric) {
	var items []v1alpha1.VMIncident
	err := error(nil)
	if c.n.List != nil {
		items, err = c.n.List()
	}
	failed := 0.0
	if err != nil || c.n.List == nil {
		failed = 1
	}
	ch <- prometheus.MustNewConstMetric(incidentErrorsDesc, prometheus.GaugeValue, failed)
	for i := range items {
		o := &items[i]
		st := &o.Status
		if st.State == "" || st.Cause == nil {
			continue
		}
		if st.State == v1alpha1.IncidentOpen {
			ch <- prometheus.MustNewConstMetric(incidentOpenDesc, prometheus.GaugeValue, 1, o.Name, string(st.Cause.Kind), st.Cause.Name, st.Reason)
		}
		ch <- prometheus.MustNewConstMetric(incidentMembersDesc, prometheus.GaugeValue, float64(st.MemberCount), o.Name, string(st.State))
	}
}
