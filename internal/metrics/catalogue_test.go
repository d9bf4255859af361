package metrics

import (
	"bytes"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/golden"
	"github.com/vmobs/vmobs/internal/version"
)

var update = flag.Bool("update", false, "rewrite docs/metrics.md from the catalogue (make update-golden)")

// repoRoot is the module's root, relative to this package.
var repoRoot = filepath.Join("..", "..")

// referencePage is the generated metrics reference, relative to the root.
const referencePage = "docs/metrics.md"

func catalogued(name string) (Family, bool) {
	i := slices.IndexFunc(Catalogue, func(f Family) bool { return f.Name == name })
	if i < 0 {
		return Family{}, false
	}
	return Catalogue[i], true
}

// registered returns every collector internal/app registers, the optional
// sources' included, with one VM in the cache that has every per-VM series.
func registered(t *testing.T) []prometheus.Collector {
	t.Helper()
	store := toolscache.NewStore(toolscache.MetaNamespaceKeyFunc)
	at := metav1.NewTime(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	node := v1alpha1.LayerStatus{Verdict: v1alpha1.VerdictHealthy, Reason: v1alpha1.ReasonLauncherRunning,
		EvidenceTime: &at, StaleAt: ptr.To(metav1.NewTime(at.Add(time.Minute)))}
	if err := store.Add(observation("vm", v1alpha1.VMObservationStatus{
		Verdict: v1alpha1.VerdictHealthy, Reason: v1alpha1.ReasonRunning,
		VMI:      &v1alpha1.VMISummary{Name: "vm", NodeName: "node-a"},
		Incident: &v1alpha1.IncidentRef{Kind: "VMIncident", Name: "storageclass-ceph-rbd"},
		VM:       &v1alpha1.VMLife{Restarts: 2, LastRestart: &v1alpha1.Restart{Time: at, Layer: v1alpha1.LayerGuest}},
		Layers: &v1alpha1.Layers{
			ControlPlane: layer(v1alpha1.VerdictHealthy, v1alpha1.ReasonRunning),
			Node:         node,
			Guest:        layer(v1alpha1.VerdictHealthy, v1alpha1.ReasonGuestAgentConnected),
		},
	})); err != nil {
		t.Fatal(err)
	}
	cs := append(NewTransitions().Collectors(), NewLiveness().Collectors()...)
	cs = append(cs, BuildInfo(version.Get()), &Collector{Observations: store})
	cs = append(cs, NewFactSources().Collectors()...)
	// The sources' own families, as internal/domainstats and
	// internal/guestprobe make them (their tests count through them).
	cs = append(cs, NewSet(SourceDomainStats).Collectors()...)
	cs = append(cs, NewSet(SourceGuestProbe).Collectors()...)
	cs = append(cs, NewIncidents(func() ([]v1alpha1.VMIncident, error) {
		return []v1alpha1.VMIncident{{
			ObjectMeta: metav1.ObjectMeta{Name: "storageclass-ceph-rbd"},
			Status: v1alpha1.VMIncidentStatus{State: v1alpha1.IncidentOpen, Reason: v1alpha1.ReasonVolumeAttachFailed, MemberCount: 3,
				Cause: &v1alpha1.IncidentCause{Kind: v1alpha1.CauseStorageClass, Name: "ceph-rbd"}},
		}}, nil
	}).Collectors()...)
	return append(cs, NewNodeObservations(func() ([]v1alpha1.NodeObservation, error) {
		return []v1alpha1.NodeObservation{{
			ObjectMeta: metav1.ObjectMeta{Name: "node-a"},
			Status: v1alpha1.NodeObservationStatus{Verdict: v1alpha1.VerdictHealthy, Reason: v1alpha1.ReasonKubeletReady,
				VMs:      &v1alpha1.VMCounts{Total: 1, Healthy: 1},
				Incident: &v1alpha1.NodeIncident{State: v1alpha1.IncidentOpen, Cause: v1alpha1.ReasonNodeNotReady, MemberCount: 3}},
		}}, nil
	}).Collectors()...)
}

var fqNameRe = regexp.MustCompile(`fqName: "([^"]+)"`)

// withSeries gives a vector one series, labelled as the catalogue says:
// a vector gathers nothing until it has one, and a label name the code
// does not declare is an error here.
func withSeries(c prometheus.Collector) error {
	descs := make(chan *prometheus.Desc, 1)
	c.Describe(descs)
	close(descs)
	m := fqNameRe.FindStringSubmatch((<-descs).String())
	if m == nil {
		return fmt.Errorf("no name in the description of %T", c)
	}
	f, ok := catalogued(m[1])
	if !ok {
		return fmt.Errorf("%s is registered but not in the catalogue", m[1])
	}
	labels := prometheus.Labels{}
	for _, l := range f.Labels {
		labels[l] = "x"
	}
	var err error
	switch v := c.(type) {
	case *prometheus.CounterVec:
		_, err = v.GetMetricWith(labels)
	case *prometheus.GaugeVec:
		_, err = v.GetMetricWith(labels)
	case *prometheus.HistogramVec:
		_, err = v.GetMetricWith(labels)
	}
	if err != nil {
		return fmt.Errorf("%s: labels %v: %w", f.Name, f.Labels, err)
	}
	return nil
}

// The catalogue is what a registry gathers from the registration code:
// the same families, help, types and label names, none missing on either
// side.
func TestCatalogueIsWhatIsRegistered(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	for _, c := range registered(t) {
		reg.MustRegister(c)
		switch c.(type) {
		case *Collector, listCollector[v1alpha1.NodeObservation], listCollector[v1alpha1.VMIncident]:
			// Scrape-time collectors: their series come from the list.
			continue
		}
		if err := withSeries(c); err != nil {
			t.Error(err)
		}
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	gathered := map[string]bool{}
	for _, mf := range mfs {
		name := mf.GetName()
		gathered[name] = true
		f, ok := catalogued(name)
		if !ok {
			t.Errorf("%s is registered but not in the catalogue", name)
			continue
		}
		if mf.GetHelp() != f.Help {
			t.Errorf("%s: help %q, the catalogue says %q", name, mf.GetHelp(), f.Help)
		}
		if mf.GetType() != f.Type {
			t.Errorf("%s: type %s, the catalogue says %s", name, mf.GetType(), f.Type)
		}
		want := slices.Sorted(slices.Values(f.Labels))
		for _, m := range mf.GetMetric() {
			var got []string
			for _, l := range m.GetLabel() {
				got = append(got, l.GetName())
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s: labels %v, the catalogue says %v", name, got, want)
			}
		}
	}
	for _, f := range Catalogue {
		if !gathered[f.Name] {
			t.Errorf("%s is in the catalogue but not registered", f.Name)
		}
	}
	if len(gathered) != len(Catalogue) {
		t.Errorf("gathered %d families, the catalogue has %d", len(gathered), len(Catalogue))
	}
}

// A metric defined or counted anywhere in the Go (a Set's series named
// by a source), even in a source this package's tests do not register, is
// in the catalogue, and every family of the catalogue is defined or
// counted somewhere.
func TestCatalogueNamesEveryDefinition(t *testing.T) {
	defRe := regexp.MustCompile(`(?:Name:\s*|NewDesc\(|\b(?:desc|counterVec|newGauge)\(|\.(?:Counter|Gauge|Histogram)\()"(vmobs_[a-z0-9_]+)"`)
	found := map[string]bool{}
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != repoRoot && (strings.HasPrefix(n, ".") || n == "bin" || n == "dist" || n == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || filepath.Base(path) == "catalogue.go" {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range defRe.FindAllStringSubmatch(string(src), -1) {
			found[m[1]] = true
			if _, ok := catalogued(m[1]); !ok {
				t.Errorf("%s defines %s, which is not in the catalogue", path, m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range Catalogue {
		if !found[f.Name] {
			t.Errorf("%s is in the catalogue, but no Go defines or counts it", f.Name)
		}
	}
}

// section introduces a source's families on the reference page.
type section struct {
	source      Source
	title, when string
}

var sections = []section{
	{SourceController, "Controller", "Always registered. The per-VM series are computed at scrape time from the cache, so a deleted VM leaves none behind; the meaning of each label and how many series a VM has: [controller.md](controller.md#metrics)."},
	{SourceFactSources, "Fact sources", "Always registered, shared by every source of facts outside the cluster's objects (internal/factsource), with one series per source that runs: `source` is `domain_stats` ([domain-stats.md](domain-stats.md)) or `guest_probe` ([guest-probe.md](guest-probe.md))."},
	{SourceDomainStats, "Domain stats", "Registered with `--prometheus-url` only ([domain-stats.md](domain-stats.md)). None has a per-VM label."},
	{SourceGuestProbe, "Guest probe", "Registered with a `--guest-probe-interval` above 0 only ([guest-probe.md](guest-probe.md)). None has a per-VM label."},
	{SourceNodes, "Node observations", "Registered unless `--node-observations=false` ([nodeobservation.md](nodeobservation.md)). The per-node series are computed at scrape time from the cache, so a deleted node leaves none behind."},
	{SourceIncidents, "Incidents", "Registered unless `--incidents=false` ([incidents.md](incidents.md)). The per-incident series are computed at scrape time from the cache, so a deleted VMIncident leaves none behind."},
}

// removedWhen introduces the families that are gone (Removed).
const removedWhen = "Families earlier versions exported, and what to query instead. The alerts, recording rules and dashboards of this version use the new names; a dashboard, alert or query of your own that names an old one finds no series. The alerts `VMObservationDomainStatsUnavailable` and `VMObservationGuestProbeUnavailable` went with them: `VMObservationFactSourceUnavailable` fires for any source, labelled with it ([runbook](runbooks/VMObservationFactSourceUnavailable.md))."

func reference() []byte {
	var b bytes.Buffer
	b.WriteString("# Metrics\n\n")
	b.WriteString("<!-- Generated from internal/metrics/catalogue.go by `go test ./internal/metrics -update` (`make update-golden`); do not edit. -->\n\n")
	b.WriteString("Every metric vmobs exports on `/metrics`, besides controller-runtime's own. Alerts and recording\n")
	b.WriteString("rules on them: [monitoring.md](monitoring.md). A histogram `h` is scraped as `h_bucket`, `h_sum`\nand `h_count`.\n")
	for _, s := range sections {
		fmt.Fprintf(&b, "\n## %s\n\n%s\n\n", s.title, s.when)
		b.WriteString("| metric | type | labels | help |\n|---|---|---|---|\n")
		for _, f := range Catalogue {
			if f.Source != s.source {
				continue
			}
			labels := "—"
			if len(f.Labels) > 0 {
				labels = "`" + strings.Join(f.Labels, "`, `") + "`"
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", f.Name, strings.ToLower(f.Type.String()), labels, f.Help)
		}
	}
	fmt.Fprintf(&b, "\n## Removed\n\n%s\n\n| metric | replaced by |\n|---|---|\n", removedWhen)
	for _, r := range Removed {
		fmt.Fprintf(&b, "| `%s` | `%s` |\n", r.Name, r.ReplacedBy)
	}
	return b.Bytes()
}

// docs/metrics.md is generated from the catalogue: change the
// catalogue, then run this test with -update (make update-golden).
func TestReferencePage(t *testing.T) {
	for _, f := range Catalogue {
		if !slices.ContainsFunc(sections, func(s section) bool { return s.source == f.Source }) {
			t.Errorf("%s: source %q has no section on the reference page", f.Name, f.Source)
		}
	}
	for _, r := range Removed {
		if _, ok := catalogued(r.Name); ok {
			t.Errorf("%s is both in the catalogue and removed", r.Name)
		}
	}
	golden.Check(t, filepath.Join(repoRoot, referencePage), reference(), *update, "`go test ./internal/metrics -update` (make update-golden)")
}

// Where the docs, rules and dashboards name metrics, relative to the root.
var namingFiles = []string{
	"README.md", "docs/*.md", "docs/*.yaml", "docs/runbooks/*.md",
	"config/prometheus/*.yaml", "config/prometheus/tests/*.yaml", "config/openshift-user-workload/*.yaml", "config/openshift-user-workload/tests/*.yaml",
	"charts/vmobs/files/*.yaml",
	"config/grafana/*.json", "internal/dashboards/*.go",
}

// ruleFiles hold the PrometheusRules, whose recording rules the docs may
// name too.
var ruleFiles = []string{"config/prometheus/prometheusrule.yaml", "charts/vmobs/files/prometheusrule.yaml"}

// recordingRules reads the names the rule files record, each of the form
// level:metric:operation after a catalogued metric.
func recordingRules(t *testing.T) map[string]bool {
	t.Helper()
	var rule struct {
		Spec struct {
			Groups []struct {
				Rules []struct {
					Record string `json:"record"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	recorded := map[string]bool{}
	for _, file := range ruleFiles {
		src, err := os.ReadFile(filepath.Join(repoRoot, file))
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(src, &rule); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for _, g := range rule.Spec.Groups {
			for _, r := range g.Rules {
				if r.Record == "" {
					continue
				}
				recorded[r.Record] = true
				parts := strings.Split(r.Record, ":")
				if _, ok := catalogued(parts[len(parts)/2]); len(parts) != 3 || !ok {
					t.Errorf("%s: recording rule %s is not named level:metric:operation after a catalogued metric", file, r.Record)
				}
			}
		}
	}
	if len(recorded) == 0 {
		t.Fatalf("no recording rule in %v", ruleFiles)
	}
	return recorded
}

// metricRef finds what may name a vmobs metric: a name, a recording rule
// (with colons), or a prefix pattern (vmobs_layer_*), with what precedes
// it so that file names (kubectl-vmobs_..., dist/vmobs_...) can be told apart.
var metricRef = regexp.MustCompile(`([\w./-]*?)((?:\w+:)?vmobs_\w*(?::\w+)?)(\*?)`)

// Every vmobs_ metric the docs, runbooks, rules and dashboards name is in
// the catalogue (a histogram's with its _bucket, _sum or _count), or is a
// recording rule the PrometheusRule defines, and a selector after a metric
// names only its labels: a renamed metric or label cannot leave a stale
// doc, alert or panel behind.
func TestDocsNameCataloguedMetrics(t *testing.T) {
	recorded := recordingRules(t)
	checked := 0
	for _, pattern := range namingFiles {
		files, err := filepath.Glob(filepath.Join(repoRoot, pattern))
		if err != nil {
			t.Fatal(err)
		}
		if len(files) == 0 {
			t.Errorf("no file matches %s", pattern)
		}
		for _, file := range files {
			if strings.HasSuffix(file, "_test.go") {
				continue
			}
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			for i, line := range strings.Split(string(src), "\n") {
				for _, idx := range metricRef.FindAllStringSubmatchIndex(line, -1) {
					before, name, star := line[idx[2]:idx[3]], line[idx[4]:idx[5]], line[idx[6]:idx[7]]
					if strings.ContainsAny(before, "-./") || (before != "" && !strings.Contains(name, ":")) {
						continue // part of a file or binary name
					}
					if name == "vmobs_" && star == "" {
						continue // the prefix itself, as in "every vmobs_ metric"
					}
					checked++
					where := fmt.Sprintf("%s:%d", strings.TrimPrefix(file, repoRoot+string(filepath.Separator)), i+1)
					if file == filepath.Join(repoRoot, referencePage) && slices.ContainsFunc(Removed, func(r Removal) bool { return r.Name == name }) {
						continue // the reference page's list of removed families
					}
					if err := knownMetric(name, star != "", recorded); err != nil {
						t.Errorf("%s: %v", where, err)
					}
					if err := knownLabels(name, line[idx[1]:]); err != nil {
						t.Errorf("%s: %v", where, err)
					}
				}
			}
		}
	}
	if checked < len(Catalogue) {
		t.Errorf("only %d metric names found in %v", checked, namingFiles)
	}
}

var histogramSuffix = regexp.MustCompile(`_(bucket|sum|count)$`)

func knownMetric(name string, prefix bool, recorded map[string]bool) error {
	switch {
	case strings.Contains(name, ":"):
		if !recorded[name] {
			return fmt.Errorf("%s is no recording rule of %v", name, ruleFiles)
		}
	case prefix:
		if !slices.ContainsFunc(Catalogue, func(f Family) bool { return strings.HasPrefix(f.Name, name) }) {
			return fmt.Errorf("%s* matches no metric in the catalogue", name)
		}
	default:
		if _, ok := catalogued(name); ok {
			return nil
		}
		if f, ok := catalogued(histogramSuffix.ReplaceAllString(name, "")); ok && f.Type == dto.MetricType_HISTOGRAM {
			return nil
		}
		return fmt.Errorf("%s is not a metric vmobs exports (internal/metrics/catalogue.go)", name)
	}
	return nil
}

// scrapeLabels are the labels Prometheus adds to every series it scrapes
// from vmobs (the ServiceMonitor's target labels).
var scrapeLabels = []string{"job", "instance", "pod", "namespace", "service", "endpoint", "container"}

var (
	// selector is what may follow a metric's name: a PromQL selector
	// ({layer="node", verdict=~"..."}) or the docs' list of label names
	// ({signal,kind}, {state=running|exported}).
	selector      = regexp.MustCompile(`^\{([^{}]*)\}`)
	matcherLabel  = regexp.MustCompile(`(\w+)\s*(?:=~|!~|!=|=)`)
	bareLabelList = regexp.MustCompile(`^\s*\w+(\s*,\s*\w+)*\s*$`)
)

// knownLabels checks the label names a selector after a catalogued metric
// names: a renamed label must not leave a stale alert or doc behind.
func knownLabels(name, rest string) error {
	m := selector.FindStringSubmatch(rest)
	if m == nil {
		return nil
	}
	f, ok := catalogued(name)
	if !ok {
		base, suffix := histogramSuffix.ReplaceAllString(name, ""), histogramSuffix.FindString(name)
		if f, ok = catalogued(base); !ok {
			return nil // knownMetric says what is wrong with the name
		}
		if suffix == "_bucket" {
			f.Labels = append(slices.Clone(f.Labels), "le")
		}
	}
	var labels []string
	if bareLabelList.MatchString(m[1]) {
		for _, l := range strings.Split(m[1], ",") {
			labels = append(labels, strings.TrimSpace(l))
		}
	} else {
		for _, l := range matcherLabel.FindAllStringSubmatch(m[1], -1) {
			labels = append(labels, l[1])
		}
	}
	for _, l := range labels {
		// A scrape that does not honour the metric's own namespace label
		// (OpenShift's user-workload monitoring) keeps it as
		// exported_namespace (config/openshift-user-workload).
		if l == "exported_namespace" && slices.Contains(f.Labels, "namespace") {
			continue
		}
		if !slices.Contains(f.Labels, l) && !slices.Contains(scrapeLabels, l) {
			return fmt.Errorf("%s has no label %s (its labels: %v)", name, l, f.Labels)
		}
	}
	return nil
}
