package integrations

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/rest"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/yaml"

	"github.com/vmobs/vmobs/internal/app"
	"github.com/vmobs/vmobs/internal/simulator"
	"github.com/vmobs/vmobs/internal/testenv"
	"github.com/vmobs/vmobs/test/support"
)

// forScale divides every alert's `for` in the pages test: the shipped
// rules wait minutes (3m for a lost node, 5m to 15m per VM), the test
// seconds. The rules keep their order: the node alert still fires before
// the per-VM alerts it inhibits, by the same ratio.
const forScale = 60

// scaledRules is the PrometheusRule's spec as a rules file, with every
// alert's `for` divided by forScale.
func scaledRules(t *testing.T) []byte {
	t.Helper()
	spec, _ := readPrometheusRule(t)
	var rules struct {
		Groups []map[string]any `json:"groups"`
	}
	if err := yaml.Unmarshal(spec, &rules); err != nil {
		t.Fatal(err)
	}
	for _, g := range rules.Groups {
		if _, ok := g["interval"]; ok {
			t.Fatalf("group %v has an interval of its own; scale it too", g["name"])
		}
		rs, _ := g["rules"].([]any)
		for _, r := range rs {
			rule, _ := r.(map[string]any)
			for _, key := range []string{"for", "keep_firing_for"} {
				s, ok := rule[key].(string)
				if !ok {
					continue
				}
				d, err := time.ParseDuration(s)
				if err != nil {
					t.Fatalf("alert %v: %s %q: %v", rule["alert"], key, s, err)
				}
				rule[key] = (d / forScale).String()
			}
		}
	}
	b, err := yaml.Marshal(rules)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// pagerConfig is an Alertmanager configuration that sends every alert to
// the webhook at url as a notification of its own (group_by '...': one
// alert, one page), at once (group_wait 1s) and not again within the test
// (repeat_interval 1h), with the inhibition rules of
// docs/alertmanager-inhibition.yaml as users merge them.
func pagerConfig(t *testing.T, url string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(support.RepoRoot(t), "docs", "alertmanager-inhibition.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{
		"route": map[string]any{
			"receiver":        "pager",
			"group_by":        []string{"..."},
			"group_wait":      "1s",
			"group_interval":  "1s",
			"repeat_interval": "1h",
		},
		"receivers": []any{map[string]any{
			"name":            "pager",
			"webhook_configs": []any{map[string]any{"url": url, "send_resolved": false}},
		}},
		"inhibit_rules": doc["inhibit_rules"],
	}
	out, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// page is one alert of one notification the webhook received.
type page struct {
	at     time.Time
	labels map[string]string
}

func (p page) String() string {
	keys := []string{"alertname", "node", "namespace", "vm", "layer"}
	var parts []string
	for _, k := range keys {
		if v := p.labels[k]; v != "" {
			parts = append(parts, k+"="+v)
		}
	}
	return "{" + strings.Join(parts, " ") + "}"
}

// pager is the webhook receiver: it keeps every alert of every
// notification, in order.
type pager struct {
	mu            sync.Mutex
	pages         []page
	notifications int
}

func (p *pager) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var msg struct {
		Alerts []struct {
			Status string            `json:"status"`
			Labels map[string]string `json:"labels"`
		} `json:"alerts"`
	}
	body, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(body, &msg); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.notifications++
	for _, a := range msg.Alerts {
		if a.Status == "firing" {
			p.pages = append(p.pages, page{at: time.Now(), labels: a.Labels})
		}
	}
}

// since are the pages received from i on.
func (p *pager) since(i int) []page {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.pages[min(i, len(p.pages)):])
}

func (p *pager) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.pages)
}

// waitFor waits up to timeout for a page from i on that match accepts.
func (p *pager) waitFor(t *testing.T, what string, i int, timeout time.Duration, match func(page) bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		for _, pg := range p.since(i) {
			if match(pg) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no page for %s within %s; pages: %v", what, timeout, p.since(i))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// amAlert is an alert as Alertmanager's API lists it.
type amAlert struct {
	Labels map[string]string `json:"labels"`
	Status struct {
		State       string   `json:"state"`
		InhibitedBy []string `json:"inhibitedBy"`
	} `json:"status"`
}

func alertmanagerAlerts(ctx context.Context, am *testenv.Alertmanager) ([]amAlert, error) {
	resp, err := httpGet(ctx, am.URL+"/api/v2/alerts")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /api/v2/alerts: %s", resp.Status)
	}
	var out []amAlert
	return out, json.NewDecoder(resp.Body).Decode(&out)
}

// TestAlertmanagerPages runs the alerting chain a cluster runs, with real
// parts: the manager on the test control plane judging a simulated fleet,
// a real Prometheus scraping its /metrics and evaluating the shipped rules
// (their `for` divided by forScale), a real Alertmanager with the
// documented inhibition, and a webhook receiver in the test that counts
// the pages. 20 VMs run on node-a and 3 on node-b:
//   - a fleet that boots and runs pages no one;
//   - node-a lost under its 20 VMs pages once, for the node: the per-VM
//     alerts of its VMs fire in Prometheus, labelled with the node's
//     incident, and Alertmanager holds them back (inhibited by the node
//     alert);
//   - a VM failing on node-b, a single VM fault, still pages, alone.
func TestAlertmanagerPages(t *testing.T) {
	support.BuiltTool(t, "alertmanager", "ALERTMANAGER")
	start := time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)

	// The fleet, and the manager judging it (no domain stats: they play
	// no part in these alerts). virt-handler's heartbeat turns stale 5s
	// after it stops.
	env, admin := testenv.StartForTest(t, testenv.Options{})
	sim := simulatedCluster(ctx, t, admin, []string{"prod"}, []string{"node-a", "node-b"})
	var specs []simulator.VMSpec
	for i := range 23 {
		specs = append(specs, simulator.VMSpec{Namespace: "prod", Name: fmt.Sprintf("vm-%02d", i)})
	}
	nodeOf := func(i int) string {
		if i < 20 {
			return "node-a"
		}
		return "node-b"
	}
	if err := sim.CreateRunningVMs(ctx, specs, simulator.BulkOptions{Node: nodeOf}); err != nil {
		t.Fatal(err)
	}
	go sim.RunHeartbeats(ctx, simulator.Heartbeats{Every: time.Second})
	opts := app.InProcessOptions()
	opts.Policy.HeartbeatTimeout = 5 * time.Second
	pg, am, prom := alertingChain(ctx, t, env.Config, opts)

	// The fleet runs: every VM Healthy in Prometheus, then quiet for the
	// longest scaled `for` and a notification's wait.
	eventually(t, "23 Healthy VMs in Prometheus", func() error {
		vec, err := promQuery(ctx, prom, `sum(verdict:vmobs_verdict:count{verdict="Healthy"})`)
		if err != nil {
			return err
		}
		if sumOf(vec) != 23 {
			return fmt.Errorf("%v Healthy", sumOf(vec))
		}
		return nil
	})
	time.Sleep(15*time.Minute/forScale + 3*time.Second)
	if pages := pg.since(0); len(pages) > 0 {
		t.Fatalf("a fleet that boots and runs paged: %v", pages)
	}
	t.Logf("fleet up, Healthy and quiet in %s", time.Since(start).Round(time.Millisecond))

	// node-a is lost: one page, for the node.
	mark := pg.count()
	lost := time.Now()
	if err := sim.LoseNode(ctx, "node-a"); err != nil {
		t.Fatal(err)
	}
	isNodeAlert := func(p page) bool {
		return p.labels["alertname"] == "VMObservationNodeUnknown" && p.labels["node"] == "node-a"
	}
	pg.waitFor(t, "the lost node", mark, time.Minute, isNodeAlert)
	t.Logf("node-a paged %s after it was lost", time.Since(lost).Round(time.Millisecond))
	// The per-VM alerts of its VMs fire, and are held back.
	var held []string
	eventually(t, "the per-VM alerts of node-a's 20 VMs held back by the node alert", func() error {
		alerts, err := alertmanagerAlerts(ctx, am)
		if err != nil {
			return err
		}
		vms := map[string]bool{}
		held = held[:0]
		for _, a := range alerts {
			if a.Labels["node"] != "node-a" || a.Labels["vm"] == "" {
				continue
			}
			if a.Status.State != "suppressed" || len(a.Status.InhibitedBy) == 0 {
				return fmt.Errorf("%s of %s is %s, not inhibited", a.Labels["alertname"], a.Labels["vm"], a.Status.State)
			}
			// Each is a member of the node's incident, and says so.
			if a.Labels["incident"] != "node-a" {
				return fmt.Errorf("%s of %s has incident %q, want node-a", a.Labels["alertname"], a.Labels["vm"], a.Labels["incident"])
			}
			vms[a.Labels["vm"]] = true
			held = append(held, a.Labels["alertname"]+"/"+a.Labels["vm"])
		}
		if len(vms) != 20 {
			return fmt.Errorf("per-VM alerts for %d of node-a's 20 VMs in Alertmanager", len(vms))
		}
		return nil
	})
	slices.Sort(held)
	t.Logf("held back by the node alert: %d per-VM alerts (%s … %s)", len(held), held[0], held[len(held)-1])
	time.Sleep(3 * time.Second) // past group_wait, had anything escaped
	if pages := pg.since(mark); len(pages) != 1 || !isNodeAlert(pages[0]) {
		t.Fatalf("node-a lost under 20 VMs paged %d times, want once, for the node: %v", len(pages), pages)
	}

	// A single VM fault on node-b pages, alone.
	mark = pg.count()
	if err := sim.FailVMI(ctx, "prod", "vm-21"); err != nil {
		t.Fatal(err)
	}
	pg.waitFor(t, "the failed VM", mark, time.Minute, func(p page) bool { return p.labels["vm"] == "vm-21" })
	time.Sleep(3 * time.Second)
	for _, p := range pg.since(mark) {
		if p.labels["vm"] != "vm-21" {
			t.Errorf("a page that is not the failed VM's: %v", p)
		}
	}
	t.Logf("pages: %v", pg.since(0))
}

// alertingChain starts the chain a cluster runs: a real Alertmanager with
// the documented inhibition, sending to a webhook receiver in the test
// (the pager); the manager with opts on the control plane at cfg; and a
// real Prometheus scraping its /metrics and evaluating the shipped rules,
// their `for` divided by forScale.
func alertingChain(ctx context.Context, t *testing.T, cfg *rest.Config, opts app.Options) (*pager, *testenv.Alertmanager, *testenv.Prometheus) {
	t.Helper()
	pg := &pager{}
	hook := httptest.NewServer(pg)
	t.Cleanup(hook.Close)
	am, err := testenv.StartAlertmanager(pagerConfig(t, hook.URL))
	if err != nil {
		t.Fatal(err)
	}
	stopOnCleanup(t, "alertmanager", am.Stop, am.Log)

	reg := opts.Registry.(*prometheus.Registry)
	mgr, err := app.StartInProcess(ctx, cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	stopOnCleanup(t, "the manager", mgr.Stop, func() string { return "" })
	metricsSrv := httptest.NewServer(promhttp.HandlerFor(prometheus.Gatherers{reg, ctrlmetrics.Registry}, promhttp.HandlerOpts{}))
	t.Cleanup(metricsSrv.Close)

	rulesFile := filepath.Join(t.TempDir(), "vmobs.rules.yaml")
	if err := os.WriteFile(rulesFile, scaledRules(t), 0o600); err != nil {
		t.Fatal(err)
	}
	prom, err := testenv.StartPrometheus(testenv.PrometheusOptions{
		ScrapeInterval: time.Second,
		RuleFiles:      []string{rulesFile},
		Alertmanagers:  []string{am.Address},
		Jobs: []testenv.ScrapeJob{{Name: "vmobs", HonorLabels: true, Targets: []testenv.ScrapeTarget{{
			Address: strings.TrimPrefix(metricsSrv.URL, "http://"),
			Labels:  map[string]string{"namespace": support.SystemNS, "pod": "vmobs-controller-manager-0"},
		}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	stopOnCleanup(t, "prometheus", prom.Stop, prom.Log)
	return pg, am, prom
}

// TestAlertmanagerIncidentPage: a StorageClass fails under VMs on three
// nodes and pages once, for the incident. Nine VMs boot from claims of
// sim-immediate on node-a, node-b and node-c (kube-controller-manager's PV
// binder binds them and finds them Lost); every PV is deleted at once. The
// VMs turn Failed (PVCLost) and their per-VM alerts fire in Prometheus
// labelled with the incident, which Alertmanager holds back behind
// VMObservationIncident: one page.
func TestAlertmanagerIncidentPage(t *testing.T) {
	support.BuiltTool(t, "alertmanager", "ALERTMANAGER")
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	env, admin := testenv.StartForTest(t, testenv.Options{ControllerManager: true})
	nodes := []string{"node-a", "node-b", "node-c"}
	sim := simulatedCluster(ctx, t, admin, []string{"prod"}, nil)
	if err := sim.EnsureStorage(ctx, nodes...); err != nil {
		t.Fatal(err)
	}
	go sim.RunHeartbeats(ctx, simulator.Heartbeats{Every: time.Second})
	opts := app.InProcessOptions()
	// Scaled with the alerts' `for`: the incident is written well before
	// the per-VM alerts' 5s.
	opts.IncidentCoalesce = 100 * time.Millisecond
	pg, am, prom := alertingChain(ctx, t, env.Config, opts)

	const n = 9
	pvs := make([]string, n)
	for i := range n {
		vm := fmt.Sprintf("vm-%02d", i)
		claim := simulator.RootClaim(vm)
		if err := sim.CreateClaim(ctx, simulator.ClaimSpec{Namespace: "prod", Name: claim}); err != nil {
			t.Fatal(err)
		}
		if err := sim.CreateVM(ctx, simulator.VMSpec{Namespace: "prod", Name: vm, RootClaim: claim}); err != nil {
			t.Fatal(err)
		}
		pv, err := sim.AwaitBound(ctx, "prod", claim)
		if err != nil {
			t.Fatal(err)
		}
		pvs[i] = pv
		if err := sim.BootWithVolumes(ctx, "prod", vm, nodes[i%len(nodes)]); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "9 Healthy VMs in Prometheus", func() error {
		vec, err := promQuery(ctx, prom, `sum(verdict:vmobs_verdict:count{verdict="Healthy"})`)
		if err != nil {
			return err
		}
		if sumOf(vec) != n {
			return fmt.Errorf("%v Healthy", sumOf(vec))
		}
		return nil
	})
	time.Sleep(15*time.Minute/forScale + 3*time.Second)
	if pages := pg.since(0); len(pages) > 0 {
		t.Fatalf("a fleet that boots and runs paged: %v", pages)
	}

	lost := time.Now()
	for _, pv := range pvs {
		if err := sim.DeleteVolume(ctx, pv); err != nil {
			t.Fatal(err)
		}
	}
	isIncident := func(p page) bool {
		return p.labels["alertname"] == "VMObservationIncident" && p.labels["incident"] == "storageclass-"+simulator.StorageClassImmediate
	}
	pg.waitFor(t, "the StorageClass's incident", 0, time.Minute, isIncident)
	t.Logf("the incident paged %s after the volumes were lost", time.Since(lost).Round(time.Millisecond))
	eventually(t, "the per-VM alerts of the 9 VMs held back by the incident's", func() error {
		alerts, err := alertmanagerAlerts(ctx, am)
		if err != nil {
			return err
		}
		vms, onNodes := map[string]bool{}, map[string]bool{}
		for _, a := range alerts {
			if a.Labels["vm"] == "" {
				continue
			}
			if a.Status.State != "suppressed" || a.Labels["incident"] == "" {
				return fmt.Errorf("%s of %s (incident %q) is %s", a.Labels["alertname"], a.Labels["vm"], a.Labels["incident"], a.Status.State)
			}
			vms[a.Labels["vm"]], onNodes[a.Labels["node"]] = true, true
		}
		if len(vms) != n || len(onNodes) != len(nodes) {
			return fmt.Errorf("per-VM alerts for %d VMs on %d nodes in Alertmanager", len(vms), len(onNodes))
		}
		return nil
	})
	time.Sleep(3 * time.Second) // past group_wait, had anything escaped
	if pages := pg.since(0); len(pages) != 1 || !isIncident(pages[0]) {
		t.Fatalf("a StorageClass failing under %d VMs on 3 nodes paged %d times, want once, for the incident: %v", n, len(pages), pages)
	}
}
