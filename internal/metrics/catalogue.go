package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Family is one metric family vmobs exports, as a Prometheus scrape shows
// it: the contract that docs, alerts, recording rules and dashboards rely on.
type Family struct {
	Name string
	Type dto.MetricType
	// Labels are the family's label names, constant ones included, in the
	// order the code declares them.
	Labels []string
	Help   string
	Source Source
	// Buckets are a histogram's upper bounds (nil: Prometheus' default).
	Buckets []float64
}

// Source says which part of vmobs registers a family, and so when it is
// there at all.
type Source string

// The sources of vmobs' metrics.
const (
	// SourceController is the controller itself: always registered.
	SourceController Source = "controller"
	// SourceFactSources is internal/factsource's shared families, one
	// series per source that runs (label source): always registered.
	SourceFactSources Source = "fact sources"
	// SourceDomainStats is internal/domainstats: registered only with
	// --prometheus-url.
	SourceDomainStats Source = "domain stats"
	// SourceGuestProbe is internal/guestprobe: registered only with a
	// --guest-probe-interval above 0.
	SourceGuestProbe Source = "guest probe"
	// SourceNodes is the NodeObservation controller: registered unless
	// --node-observations=false.
	SourceNodes Source = "node observations"
	// SourceIncidents is the VMIncident controller: registered unless
	// --incidents=false.
	SourceIncidents Source = "incidents"
)

var (
	counter   = dto.MetricType_COUNTER
	gauge     = dto.MetricType_GAUGE
	histogram = dto.MetricType_HISTOGRAM
)

// Catalogue lists every metric family vmobs registers. The tests prove it
// equal to what a registry gathers from the registration code, generate
// docs/metrics.md from it, and check that every vmobs_ name in
// the docs, rules and dashboards is in it: change a metric here and in
// its code together.
var Catalogue = []Family{
	{Name: "vmobs_verdict", Type: gauge, Labels: withVM("verdict", "reason"), Source: SourceController,
		Help: "Overall verdict of a VM (its worst layer's) and its reason; always 1, one series per VM."},
	{Name: "vmobs_layer_verdict", Type: gauge, Labels: withVM("layer", "verdict"), Source: SourceController,
		Help: "Current verdict of one layer of a VM; always 1, one series per layer."},
	{Name: "vmobs_layer_reason", Type: gauge, Labels: withVM("layer", "reason"), Source: SourceController,
		Help: "Reason of the current verdict of one layer of a VM; always 1."},
	{Name: "vmobs_incident_member", Type: gauge, Labels: withVM("incident"), Source: SourceController,
		Help: "The incident a VM is a member of (status.incident.name: a VMIncident, or its node's NodeObservation); always 1, only for a member. The per-VM alerts take its incident label, which the Alertmanager inhibition matches."},
	{Name: "vmobs_layer_evidence_timestamp_seconds", Type: gauge, Labels: withVM("layer"), Source: SourceController,
		Help: "Newest timestamp among the evidence a layer's verdict rests on, as stored in the VMObservation (status.layers.*.evidenceTime)."},
	{Name: "vmobs_layer_stale_timestamp_seconds", Type: gauge, Labels: withVM("layer"), Source: SourceController,
		Help: "When a layer's evidence stops being trustworthy, as stored in the VMObservation (status.layers.*.staleAt); only for a layer with a fixed deadline to come."},
	{Name: "vmobs_vm_restarts", Type: gauge, Labels: withVM(), Source: SourceController,
		Help: "VMIs of a VM that replaced another since its VMObservation was created (status.vm.restarts)."},
	{Name: "vmobs_vm_last_restart_timestamp_seconds", Type: gauge, Labels: withVM(), Source: SourceController,
		Help: "When a VM last restarted: its new VMI's creation (status.vm.lastRestart.time); only for a VM that restarted."},
	{Name: "vmobs_collector_errors", Type: gauge, Source: SourceController,
		Help: "1 when the last scrape could not read the VMObservations in the cache."},
	{Name: "vmobs_verdict_transitions_total", Type: counter, Labels: []string{"layer", "from", "to"}, Source: SourceController,
		Help: "Verdict transitions written, per layer (controlPlane, node, guest, storage, overall) and from/to verdict. From is None for a new VMObservation."},
	{Name: "vmobs_last_reconcile_timestamp_seconds", Type: gauge, Source: SourceController,
		Help: "Unix time of the last reconcile the controller finished, its own liveness tick (every 30s) included. It stops moving when the controller stops working; 0 on a replica that is not the leader."},
	{Name: "vmobs_build_info", Type: gauge, Labels: []string{"version", "commit", "goversion"}, Source: SourceController,
		Help: "The version, commit and Go version the running vmobs binary was built from; always 1."},

	{Name: "vmobs_fact_source_available", Type: gauge, Labels: []string{"source"}, Source: SourceFactSources,
		Help: "0 once a source of facts has failed several times in a row (the VMs' facts then say it is unavailable, and their verdicts rest on their other sources); 1 otherwise, also before its first round and on a standby replica, which runs no source. One series per source: domain_stats, guest_probe."},
	{Name: "vmobs_fact_source_last_success_timestamp_seconds", Type: gauge, Labels: []string{"source"}, Source: SourceFactSources,
		Help: "Unix time of a source's last success: the last round of domain stats queries that all succeeded, the last guest agent probe that was answered; 0 before the first."},

	{Name: "vmobs_domain_stats_query_duration_seconds", Type: histogram, Labels: []string{"signal"}, Source: SourceDomainStats, Buckets: prometheus.ExponentialBuckets(0.005, 2, 12),
		Help: "Time an instant query for domain stats took, per signal, failed ones included."},
	{Name: "vmobs_domain_stats_response_bytes", Type: histogram, Labels: []string{"signal"}, Source: SourceDomainStats, Buckets: prometheus.ExponentialBuckets(256, 4, 10),
		Help: "Size of Prometheus' answer to a domain stats query, per signal."},
	{Name: "vmobs_domain_stats_query_errors_total", Type: counter, Labels: []string{"signal", "kind"}, Source: SourceDomainStats,
		Help: "Domain stats queries that failed, per signal and kind (unreachable, timeout, refused, http, bad_response, query, partial)."},
	{Name: "vmobs_domain_stats_query_annotations_total", Type: counter, Labels: []string{"signal"}, Source: SourceDomainStats,
		Help: "PromQL annotations (\"PromQL info: ...\", \"PromQL warning: ...\") in the answers to domain stats queries, per signal; the answers are used."},
	{Name: "vmobs_domain_stats_series_dropped_total", Type: counter, Source: SourceDomainStats,
		Help: "Series in Prometheus' answers that name no VMI (no namespace or name label)."},
	{Name: "vmobs_domain_stats_vmis", Type: gauge, Labels: []string{"state"}, Source: SourceDomainStats,
		Help: "Running VMIs in the last round (state running) and those among them virt-handler exports (state exported)."},

	{Name: "vmobs_guest_probe_requests_total", Type: counter, Labels: []string{"subresource", "result"}, Source: SourceGuestProbe,
		Help: "GETs of virt-api's guest agent subresources, per subresource and result (ok, throttled, unavailable, unreachable, refused, not_served, gone, not_supported, no_handler, agent_error, timeout, bad_answer)."},
	{Name: "vmobs_guest_probe_request_duration_seconds", Type: histogram, Labels: []string{"subresource"}, Source: SourceGuestProbe, Buckets: prometheus.ExponentialBuckets(0.005, 2, 12),
		Help: "Time a GET of a guest agent subresource took, failed ones included."},
	{Name: "vmobs_guest_probes_total", Type: counter, Labels: []string{"result"}, Source: SourceGuestProbe,
		Help: "Probes of a guest agent (up to three GETs), per result: ok, failed (charged to the agent), gone (VMI not running or agent not connected), unavailable (the API cannot be used), excused (failed alike across the fleet, not charged), canceled."},
	{Name: "vmobs_guest_probe_duration_seconds", Type: histogram, Source: SourceGuestProbe, Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
		Help: "Time a probe of a guest agent took, its GETs together."},
	{Name: "vmobs_guest_probes_in_flight", Type: gauge, Source: SourceGuestProbe,
		Help: "Probes running now (at most --guest-probe-workers)."},
	{Name: "vmobs_guest_probe_targets", Type: gauge, Source: SourceGuestProbe,
		Help: "Running VMIs whose guest agent is connected: the VMs probed once per --guest-probe-interval."},
	{Name: "vmobs_guest_probe_entries_skipped_total", Type: counter, Labels: []string{"subresource"}, Source: SourceGuestProbe,
		Help: "Entries of a guest's answer dropped for not making sense (sizes negative, past int64, used over total, total 0; no name or mount point), per subresource."},

	{Name: "vmobs_node_verdict", Type: gauge, Labels: []string{"node", "verdict", "reason"}, Source: SourceNodes,
		Help: "Overall verdict of a node that runs VMs or virt-handler (its NodeObservation's) and its reason; always 1, one series per node."},
	{Name: "vmobs_node_vms", Type: gauge, Labels: []string{"node", "verdict"}, Source: SourceNodes,
		Help: "VMs on a node by their VMObservation's verdict (Unobserved: no VMObservation or no verdict yet), as its NodeObservation counts them (status.vms)."},
	{Name: "vmobs_node_incident_members", Type: gauge, Labels: []string{"node", "cause", "state"}, Source: SourceNodes,
		Help: "VMs of a node's incident (status.incident.memberCount), labelled with its cause and state (Open, Resolved); only while the NodeObservation holds one."},
	{Name: "vmobs_node_collector_errors", Type: gauge, Source: SourceNodes,
		Help: "1 when the last scrape could not read the NodeObservations in the cache."},
	{Name: "vmobs_node_observation_writes_total", Type: counter, Labels: []string{"op"}, Source: SourceNodes,
		Help: "Writes of NodeObservations, per op (create, status, delete); none while no node changes."},
	{Name: "vmobs_drain_outcomes_total", Type: counter, Labels: []string{"predicted", "observed"}, Source: SourceNodes,
		Help: "VMs of ended drains by predicted and observed outcome (a NodeObservation's status.drain, counted once when the drain ends); predicted equal to observed is a right prediction."},
	{Name: "vmobs_incident_open", Type: gauge, Labels: []string{"incident", "cause", "source", "reason"}, Source: SourceIncidents,
		Help: "An open VMIncident: its name, cause kind (StorageClass, CSIDriver, VirtAPI, DomainStats, VirtHandlerRollout), the cause's name (source) and the members' reason; always 1, only while it is Open."},
	{Name: "vmobs_incident_members", Type: gauge, Labels: []string{"incident", "state"}, Source: SourceIncidents,
		Help: "VMs of a VMIncident (status.memberCount), labelled with its state (Open, Resolved); only while the VMIncident exists."},
	{Name: "vmobs_incident_collector_errors", Type: gauge, Source: SourceIncidents,
		Help: "1 when the last scrape could not read the VMIncidents in the cache."},
	{Name: "vmobs_incident_writes_total", Type: counter, Labels: []string{"op"}, Source: SourceIncidents,
		Help: "Writes of VMIncidents, per op (create, status, delete); none while no incident changes."},
}

// Removal is a family an earlier version exported and this one does not,
// with the query that replaces it.
type Removal struct {
	Name, ReplacedBy string
}

// Removed lists the families that are gone, for the reference page: a
// rename that dashboards, alerts and queries of an earlier version must
// follow.
var Removed = []Removal{
	// One family labelled by source for every source of facts, with the
	// same meaning for each: 1 until the source is known unavailable.
	{Name: "vmobs_domain_stats_available", ReplacedBy: `vmobs_fact_source_available{source="domain_stats"}`},
	{Name: "vmobs_domain_stats_last_success_timestamp_seconds", ReplacedBy: `vmobs_fact_source_last_success_timestamp_seconds{source="domain_stats"}`},
	{Name: "vmobs_guest_probe_available", ReplacedBy: `vmobs_fact_source_available{source="guest_probe"}`},
}

// family is the catalogue's entry of name. A name that is not there is a
// mistake of the code that registers it, which the catalogue's tests
// catch; it is made with no help rather than a panic.
// desc is the Desc of a catalogue family that a collector exports at
// scrape time: its help and labels are the catalogue's, written once.
func desc(name string) *prometheus.Desc {
	f := family(name)
	return prometheus.NewDesc(f.Name, f.Help, f.Labels, nil)
}

// counterVec is a catalogue family's counter, help and labels the
// catalogue's.
func counterVec(name string) *prometheus.CounterVec {
	f := family(name)
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: f.Name, Help: f.Help}, f.Labels)
}

// newGauge is a catalogue family's gauge without labels.
func newGauge(name string) prometheus.Gauge {
	return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: family(name).Help})
}

func family(name string) Family {
	for _, f := range Catalogue {
		if f.Name == name {
			return f
		}
	}
	return Family{Name: name}
}
