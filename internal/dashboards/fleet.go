// Package dashboards builds vmobs' Grafana dashboards as code, with the
// Grafana Foundation SDK's builders. The JSON committed under
// config/grafana is their output (`make dashboards` writes it, a test
// compares it), and every PromQL expression in them is parsed and run
// against a real Prometheus scraping a real manager by
// test/integrations/dashboard_test.go.
package dashboards

import (
	"bytes"
	"encoding/json"

	"github.com/grafana/grafana-foundation-sdk/go/bargauge"
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/variants"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"

	"github.com/vmobs/vmobs/api/v1alpha1"
)

// FleetUID is the fleet overview's uid: links to it keep working across
// imports.
const FleetUID = "vmobs-fleet"

// Grafana's variables, as the expressions name them. The namespace and
// node variables' "All" is the regular expression .*, which also matches
// the empty node of a VM without a VMI.
const (
	dsVar        = "datasource"
	namespaceSel = `namespace=~"$namespace"`
	nodeSel      = `node=~"$node"`
	vmSel        = namespaceSel + ", " + nodeSel
	// The controller's own series: the ServiceMonitor's job (its jobLabel
	// is the Service's app.kubernetes.io/name).
	controllerSel = `job="vmobs"`
)

// verdictColors are the colours of the verdicts, Argo CD's health colours
// where it has them.
var verdictColors = map[v1alpha1.Verdict]string{
	v1alpha1.VerdictHealthy:     "green",
	v1alpha1.VerdictProgressing: "blue",
	v1alpha1.VerdictSuspended:   "text",
	v1alpha1.VerdictDegraded:    "orange",
	v1alpha1.VerdictFailed:      "red",
	v1alpha1.VerdictUnknown:     "purple",
}

var verdicts = []v1alpha1.Verdict{
	v1alpha1.VerdictHealthy, v1alpha1.VerdictProgressing, v1alpha1.VerdictSuspended,
	v1alpha1.VerdictDegraded, v1alpha1.VerdictFailed, v1alpha1.VerdictUnknown,
}

func ds() common.DataSourceRef {
	return common.DataSourceRef{Type: cog.ToPtr("prometheus"), Uid: cog.ToPtr("${" + dsVar + "}")}
}

// query is a range query; instant is one at the dashboard's end time.
func query(expr, legend string) *prometheus.DataqueryBuilder {
	return prometheus.NewDataqueryBuilder().Datasource(ds()).Expr(expr).LegendFormat(legend).Range()
}

func instant(expr, legend string) *prometheus.DataqueryBuilder {
	return prometheus.NewDataqueryBuilder().Datasource(ds()).Expr(expr).LegendFormat(legend).Instant()
}

func tableQuery(expr string) *prometheus.DataqueryBuilder {
	return prometheus.NewDataqueryBuilder().Datasource(ds()).Expr(expr).Instant().Format(prometheus.PromQueryFormatTable)
}

// vmsBy counts VMs (not series: the inner max merges the replicas' copies
// of a VM's series) by the given labels of metric, among the VMs the
// namespace and node variables select.
func vmsBy(by, metric, match string) string {
	sel := vmSel
	if match != "" {
		sel += ", " + match
	}
	inner := "namespace, name"
	if by != "" {
		inner += ", " + by
	}
	return "count by (" + by + ") (max by (" + inner + ") (" + metric + "{" + sel + "}))"
}

// verdictOverrides colour each verdict's series or field by its name.
func verdictOverrides() []cog.Builder[dashboard.DashboardFieldConfigSourceOverrides] {
	var out []cog.Builder[dashboard.DashboardFieldConfigSourceOverrides]
	for _, v := range verdicts {
		out = append(out, dashboard.NewDashboardFieldConfigSourceOverridesBuilder().
			Matcher(dashboard.MatcherConfig{Id: "byName", Options: string(v)}).
			Properties([]dashboard.DynamicConfigValue{{Id: "color", Value: map[string]any{"mode": "fixed", "fixedColor": verdictColors[v]}}}))
	}
	return out
}

// thresholds is a green base with a step to color at value 1: a count of
// VMs in trouble.
func thresholds(color string) *dashboard.ThresholdsConfigBuilder {
	return dashboard.NewThresholdsConfigBuilder().Mode(dashboard.ThresholdsModeAbsolute).Steps([]dashboard.Threshold{
		{Color: "green"}, {Value: cog.ToPtr[float64](1), Color: color},
	})
}

func countStat(title, description, expr, color string) *stat.PanelBuilder {
	return stat.NewPanelBuilder().Title(title).Description(description).Datasource(ds()).
		WithTarget(instant(expr, title)).Height(4).Span(4).
		Thresholds(thresholds(color)).ColorMode(common.BigValueColorModeBackground).
		GraphMode(common.BigValueGraphModeNone).NoValue("0")
}

func variables() []cog.Builder[dashboard.VariableModel] {
	label := func(name, title, expr string) cog.Builder[dashboard.VariableModel] {
		return dashboard.NewQueryVariableBuilder(name).Label(title).Datasource(ds()).
			Query(dashboard.StringOrMap{String: cog.ToPtr("label_values(" + expr + ", " + name + ")")}).
			Refresh(dashboard.VariableRefreshOnTimeRangeChanged).Sort(dashboard.VariableSortAlphabeticalAsc).
			Multi(true).IncludeAll(true).AllValue(".*").
			Current(dashboard.VariableOption{Text: dashboard.StringOrArrayOfString{String: cog.ToPtr("All")}, Value: dashboard.StringOrArrayOfString{String: cog.ToPtr("$__all")}})
	}
	return []cog.Builder[dashboard.VariableModel]{
		dashboard.NewDatasourceVariableBuilder(dsVar).Label("Prometheus").Type("prometheus"),
		label("namespace", "Namespace", "vmobs_verdict"),
		label("node", "Node", `vmobs_verdict{namespace=~"$namespace"}`),
	}
}

// Fleet is the fleet overview: VMs by verdict, layer and reason, per node,
// verdict transitions over time, stale evidence, migrations, domain stats,
// and the controller's own health.
//
//nolint:staticcheck // The classic dashboard JSON model, not dashboardv2: every Grafana release, grafana.com and grafana-operator import it; v2 needs Grafana 12's schema v2 feature.
func Fleet() (dashboard.Dashboard, error) {
	b := dashboard.NewDashboardBuilder("vmobs / Fleet").
		Uid(FleetUID).
		Description("The health vmobs derives for every KubeVirt VM, across the fleet: verdicts, reasons, nodes, stale evidence, migrations, and vmobs' own health.").
		Tags([]string{"vmobs", "kubevirt"}).
		Refresh("1m").
		Time("now-6h", "now").
		Timezone(common.TimeZoneBrowser).
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		Variables(variables()).
		Link(dashboard.NewDashboardLinkBuilder("Runbooks").Type(dashboard.DashboardLinkTypeLink).
			Url("https://github.com/vmobs/vmobs/tree/main/docs/runbooks").TargetBlank(true).Icon("doc"))

	// Fleet at a glance.
	b.WithRow(dashboard.NewRowBuilder("Fleet"))
	b.WithPanel(stat.NewPanelBuilder().Title("VMs by verdict").
		Description("VMs whose overall verdict (their worst layer's) is each of the six, among the selected namespaces and nodes.").
		Datasource(ds()).WithTarget(instant(vmsBy("verdict", "vmobs_verdict", ""), "{{verdict}}")).
		Height(5).Span(16).ColorMode(common.BigValueColorModeBackground).GraphMode(common.BigValueGraphModeNone).
		TextMode(common.BigValueTextModeValueAndName).Overrides(verdictOverrides()).
		ReduceOptions(common.NewReduceDataOptionsBuilder().Calcs([]string{"lastNotNull"})))
	b.WithPanel(stat.NewPanelBuilder().Title("VMs observed").Description("VMs with a verdict.").
		Datasource(ds()).WithTarget(instant("count(max by (namespace, name) (vmobs_verdict{"+vmSel+"})) or vector(0)", "VMs")).
		Height(5).Span(8).GraphMode(common.BigValueGraphModeArea).ColorMode(common.BigValueColorModeNone))
	b.WithPanel(timeseries.NewPanelBuilder().Title("VMs by verdict over time").
		Datasource(ds()).WithTarget(query(vmsBy("verdict", "vmobs_verdict", ""), "{{verdict}}")).
		Height(8).Span(12).Unit("short").Min(0).FillOpacity(20).
		Stacking(common.NewStackingConfigBuilder().Mode(common.StackingModeNormal)).Overrides(verdictOverrides()))
	b.WithPanel(bargauge.NewPanelBuilder().Title("Layers by verdict").
		Description("For each layer (controlPlane, node, guest, storage), how many VMs have it at each verdict.").
		Datasource(ds()).WithTarget(instant(vmsBy("layer, verdict", "vmobs_layer_verdict", ""), "{{layer}} {{verdict}}")).
		Height(8).Span(12).Orientation(common.VizOrientationHorizontal).DisplayMode(common.BarGaugeDisplayModeBasic).
		Min(0).Thresholds(dashboard.NewThresholdsConfigBuilder().Mode(dashboard.ThresholdsModeAbsolute).Steps([]dashboard.Threshold{{Color: "blue"}})))

	// Why: the reasons and where they are.
	b.WithRow(dashboard.NewRowBuilder("Reasons and nodes"))
	b.WithPanel(table.NewPanelBuilder().Title("Top reasons").
		Description("The ten most frequent reasons of VMs that are not Healthy, with their verdict. docs/verdicts.md explains each.").
		Datasource(ds()).WithTarget(tableQuery("topk(10, " + vmsBy("verdict, reason", "vmobs_verdict", `verdict!="Healthy"`) + ")")).
		WithTransformation(organize(map[string]string{"Value": "VMs", "verdict": "Verdict", "reason": "Reason"})).
		Height(9).Span(12))
	b.WithPanel(table.NewPanelBuilder().Title("VMs not Healthy, per node").
		Description("One line per node, verdict and reason: a lost node reads as one line (node-b: 14 Unknown, NodeAgentStale), not as 14 VMs. From the recording rule node_verdict_reason:vmobs_verdict:count; VMs without a node (stopped, not scheduled) are in no line.").
		Datasource(ds()).WithTarget(tableQuery(`sort_desc(sum by (node, verdict, reason) (node_verdict_reason:vmobs_verdict:count{verdict!="Healthy", ` + nodeSel + `}))`)).
		WithTransformation(organize(map[string]string{"Value": "VMs", "node": "Node", "verdict": "Verdict", "reason": "Reason"})).
		Height(9).Span(12))
	b.WithPanel(timeseries.NewPanelBuilder().Title("Verdict transitions").
		Description("Verdicts written per minute, by layer (overall included) and the verdict moved to. vmobs_verdict_transitions_total has no per-VM label.").
		Datasource(ds()).WithTarget(query(`sum by (layer, to) (rate(vmobs_verdict_transitions_total{`+controllerSel+`}[$__rate_interval])) * 60`, "{{layer}} → {{to}}")).
		Height(8).Span(12).Unit("short").Min(0))
	b.WithPanel(timeseries.NewPanelBuilder().Title("Layers by reason over time (not Healthy)").
		Description("VMs by layer and reason, for the layers that are not Healthy.").
		Datasource(ds()).WithTarget(query(`count by (layer, reason) (max by (namespace, name, layer, reason) (vmobs_layer_reason{`+vmSel+`})`+
		` unless on (namespace, name, layer) vmobs_layer_verdict{verdict="Healthy"})`, "{{layer}} {{reason}}")).
		Height(8).Span(12).Unit("short").Min(0))

	// Evidence and migrations.
	b.WithRow(dashboard.NewRowBuilder("Evidence and migrations"))
	b.WithPanel(countStat("VMs with stale evidence",
		"VMs whose node agent (virt-handler) stopped beating, so what KubeVirt says of them cannot be trusted (NodeAgentStale, EvidenceStale).",
		`count(max by (namespace, name) (vmobs_layer_reason{`+vmSel+`, reason=~"NodeAgentStale|EvidenceStale"})) or vector(0)`, "purple"))
	b.WithPanel(countStat("Layers past their deadline",
		"Layers whose stored staleAt has passed: the controller should have judged them again. Above 0 for long, it is behind (see Controller).",
		`count(max by (namespace, name, layer) (vmobs_layer_stale_timestamp_seconds{`+vmSel+`}) < time()) or vector(0)`, "orange"))
	b.WithPanel(countStat("Migrations in trouble",
		"VMs whose newest migration is stuck or failed, or that must move and cannot (MigrationStuck, MigrationFailed, MigrationNotConverging, EvictionBlocked).",
		`count(max by (namespace, name) (vmobs_layer_reason{`+vmSel+`, reason=~"MigrationStuck|MigrationFailed|MigrationNotConverging|EvictionBlocked"})) or vector(0)`, "orange"))
	b.WithPanel(timeseries.NewPanelBuilder().Title("Migrations").
		Description("VMs by migration reason: in progress (Migrating), waiting to be evacuated (EvictionPending), and the troubles above.").
		Datasource(ds()).WithTarget(query(vmsBy("reason", "vmobs_layer_reason",
		`reason=~"Migrating|MigrationStuck|MigrationFailed|MigrationAborted|MigrationNotConverging|EvictionPending|EvictionBlocked"`), "{{reason}}")).
		Height(8).Span(12).Unit("short").Min(0))
	b.WithPanel(timeseries.NewPanelBuilder().Title("Oldest evidence, by layer").
		Description("How old the oldest evidence a layer's verdict rests on is, across the selected VMs: time() - vmobs_layer_evidence_timestamp_seconds.").
		Datasource(ds()).WithTarget(query(`max by (layer) (time() - vmobs_layer_evidence_timestamp_seconds{`+vmSel+`})`, "{{layer}}")).
		Height(8).Span(12).Unit("s").Min(0))
	b.WithPanel(timeseries.NewPanelBuilder().Title("Most restarted VMs").
		Description("The ten VMs with the most restarts (a new VMI that replaced another, status.vm.restarts): a restart loop is a rising line. kubectl vmobs history names each restart's cause (docs/history.md).").
		Datasource(ds()).WithTarget(query(`topk(10, max by (namespace, name) (vmobs_vm_restarts{`+vmSel+`}))`, "{{namespace}}/{{name}}")).
		Height(8).Span(12).Unit("short").Min(0))

	// The sources of facts outside the cluster's objects: the hypervisor's
	// view through Prometheus, the guest agents through virt-api.
	b.WithRow(dashboard.NewRowBuilder("Sources of facts"))
	b.WithPanel(stat.NewPanelBuilder().Title("Sources of facts readable").
		Description("Whether the leader could read each source of facts (vmobs_fact_source_available{source}: domain_stats with --prometheus-url, guest_probe with a --guest-probe-interval above 0; 0 once several rounds or probes in a row failed; the min over replicas, since a standby reports 1).").
		Datasource(ds()).WithTarget(instant(`min by (source) (vmobs_fact_source_available{`+controllerSel+`})`, "{{source}}")).
		Height(6).Span(6).ColorMode(common.BigValueColorModeBackground).GraphMode(common.BigValueGraphModeNone).
		Mappings([]dashboard.ValueMapping{{ValueMap: &dashboard.ValueMap{Type: dashboard.MappingTypeValueToText, Options: map[string]dashboard.ValueMappingResult{
			"0": {Text: cog.ToPtr("No"), Color: cog.ToPtr("red")}, "1": {Text: cog.ToPtr("Yes"), Color: cog.ToPtr("green")},
		}}}}))
	b.WithPanel(timeseries.NewPanelBuilder().Title("Domain stats: VMIs covered and query errors").
		Datasource(ds()).
		WithTarget(query(`max(vmobs_domain_stats_vmis{`+controllerSel+`})`, "VMIs with domain stats")).
		// No error is no series at all: 0 then, by on().
		WithTarget(query(`(sum by (kind) (rate(vmobs_domain_stats_query_errors_total{`+controllerSel+`}[$__rate_interval])) * 60) or on() vector(0)`, "errors/min {{kind}}")).
		Height(6).Span(9).Unit("short").Min(0))
	b.WithPanel(timeseries.NewPanelBuilder().Title("Sources of facts: time since the last success").
		Description("Since each source's last success (vmobs_fact_source_last_success_timestamp_seconds{source}): the last round of domain stats queries that all succeeded, the last guest agent probe that was answered.").
		Datasource(ds()).WithTarget(query(`time() - max by (source) (vmobs_fact_source_last_success_timestamp_seconds{`+controllerSel+`} > 0)`, "{{source}}")).
		Height(6).Span(9).Unit("s").Min(0))

	// vmobs itself.
	b.WithRow(dashboard.NewRowBuilder("Controller"))
	b.WithPanel(stat.NewPanelBuilder().Title("Since the last reconcile").
		Description("The leader reconciles a liveness tick every 30 s: above a minute, it has stopped (VMObservationControllerStalled fires at 5 minutes).").
		Datasource(ds()).WithTarget(instant(`time() - max(vmobs_last_reconcile_timestamp_seconds{`+controllerSel+`})`, "since last reconcile")).
		Height(6).Span(4).Unit("s").ColorMode(common.BigValueColorModeBackground).GraphMode(common.BigValueGraphModeNone).
		Thresholds(dashboard.NewThresholdsConfigBuilder().Mode(dashboard.ThresholdsModeAbsolute).Steps([]dashboard.Threshold{
			{Color: "green"}, {Value: cog.ToPtr[float64](60), Color: "orange"}, {Value: cog.ToPtr[float64](300), Color: "red"},
		})))
	b.WithPanel(stat.NewPanelBuilder().Title("Replicas scraped").
		Description("Replicas Prometheus scrapes (up), and those whose collector cannot read VMObservations (vmobs_collector_errors).").
		Datasource(ds()).
		WithTarget(instant(`sum(up{`+controllerSel+`})`, "up")).
		WithTarget(instant(`sum(vmobs_collector_errors{`+controllerSel+`})`, "collector errors")).
		Height(6).Span(4).ColorMode(common.BigValueColorModeNone).GraphMode(common.BigValueGraphModeNone).TextMode(common.BigValueTextModeValueAndName))
	b.WithPanel(timeseries.NewPanelBuilder().Title("Reconciles").
		Description("Reconciles per second by result, and the work queue's depth.").
		Datasource(ds()).
		WithTarget(query(`sum by (result) (rate(controller_runtime_reconcile_total{`+controllerSel+`, controller="vmobservation"}[$__rate_interval]))`, "{{result}}/s")).
		WithTarget(query(`max(workqueue_depth{`+controllerSel+`, name="vmobservation"})`, "queue depth")).
		Height(6).Span(8).Unit("short").Min(0))
	b.WithPanel(timeseries.NewPanelBuilder().Title("Reconcile time (p99) and memory").
		Datasource(ds()).
		WithTarget(query(`histogram_quantile(0.99, sum by (le) (rate(controller_runtime_reconcile_time_seconds_bucket{`+controllerSel+`, controller="vmobservation"}[$__rate_interval])))`, "p99 reconcile")).
		WithTarget(query(`max by (pod) (process_resident_memory_bytes{`+controllerSel+`})`, "RSS {{pod}}")).
		OverrideByName("p99 reconcile", []dashboard.DynamicConfigValue{{Id: "unit", Value: "s"}}).
		Height(6).Span(8).Unit("bytes").Min(0))
	b.WithPanel(table.NewPanelBuilder().Title("Versions").
		Description("The version each replica runs (vmobs_build_info).").
		Datasource(ds()).WithTarget(tableQuery(`max by (pod, version, commit, goversion) (vmobs_build_info{` + controllerSel + `})`)).
		WithTransformation(organize(map[string]string{"pod": "Pod", "version": "Version", "commit": "Commit", "goversion": "Go", "Value": ""})).
		Height(5).Span(24))

	return b.Build()
}

// organize renames table columns and hides Time and those renamed to "".
func organize(rename map[string]string) dashboard.DataTransformerConfig {
	names, exclude := map[string]string{}, map[string]bool{"Time": true}
	for k, v := range rename {
		if v == "" {
			exclude[k] = true
		} else {
			names[k] = v
		}
	}
	return dashboard.DataTransformerConfig{Id: "organize", Options: map[string]any{"renameByName": names, "excludeByName": exclude}}
}

// JSON is d as committed: indented, with a final newline.
//
//nolint:staticcheck // The classic dashboard JSON model, not dashboardv2: every Grafana release, grafana.com and grafana-operator import it; v2 needs Grafana 12's schema v2 feature.
func JSON(d dashboard.Dashboard) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(d); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Query is one PromQL expression of a dashboard and where it is.
type Query struct {
	// Where is the panel's title, or the variable's name.
	Where string
	// Expr is the expression as written, Grafana's variables included.
	Expr string
	// Instant is true for a query Grafana runs at one time only.
	Instant bool
}

// Queries lists every PromQL expression of d: each panel's targets and
// each query variable's label_values() selector.
//
//nolint:staticcheck // The classic dashboard JSON model, not dashboardv2: every Grafana release, grafana.com and grafana-operator import it; v2 needs Grafana 12's schema v2 feature.
func Queries(d dashboard.Dashboard) []Query {
	var out []Query
	add := func(title string, targets []variants.Dataquery) {
		for _, t := range targets {
			switch q := t.(type) {
			case prometheus.Dataquery:
				out = append(out, Query{Where: title, Expr: q.Expr, Instant: q.Instant != nil && *q.Instant})
			case *prometheus.Dataquery:
				out = append(out, Query{Where: title, Expr: q.Expr, Instant: q.Instant != nil && *q.Instant})
			}
		}
	}
	for _, p := range d.Panels {
		if p.Panel != nil {
			add(deref(p.Panel.Title), p.Panel.Targets)
		}
		if p.RowPanel != nil {
			for _, rp := range p.RowPanel.Panels {
				add(deref(rp.Title), rp.Targets)
			}
		}
	}
	for _, v := range d.Templating.List {
		if v.Type == "query" && v.Query != nil && v.Query.String != nil {
			out = append(out, Query{Where: "variable " + v.Name, Expr: *v.Query.String, Instant: true})
		}
	}
	return out
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
