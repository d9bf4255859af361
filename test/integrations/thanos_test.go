package integrations

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/internal/domainstats"
	"github.com/vmobs/vmobs/internal/factsource"
	"github.com/vmobs/vmobs/internal/metrics"
	"github.com/vmobs/vmobs/internal/simulator"
	"github.com/vmobs/vmobs/internal/testenv"
	"github.com/vmobs/vmobs/internal/verdict"
	"github.com/vmobs/vmobs/internal/vmifacts"
)

// The VMs of TestDomainStatsThroughThanos with a fault, each feeding one
// domain-stats rule; vm-00, vm-07 and vm-08 are healthy. vm-NN runs on
// node-a, node-b or node-c as NN mod 3 says.
const (
	thanosHidden    = "vm-01" // DomainStatsMissing
	thanosFrozen    = "vm-02" // GuestCPUStalled
	thanosPressure  = "vm-03" // GuestMemoryPressure
	thanosSlowDisk  = "vm-04" // StorageSlow, once the baseline is learnt
	thanosNetErr    = "vm-05" // NetworkErrors
	thanosMigrating = "vm-06" // MigrationNotConverging
)

// TestDomainStatsThroughThanos runs the domain-stats source against a real
// Thanos Querier, as on OpenShift, where --prometheus-url is
// thanos-querier: simulated virt-handlers on 3 nodes, the test Prometheus
// scraping them every second (with the external labels of a replica of
// OpenShift's prometheus-k8s), `thanos sidecar` serving its samples over
// the StoreAPI, and `thanos query` in front of the sidecar, deduplicating
// along prometheus_replica as thanos-querier does. Every guest is a Linux
// guest with a balloon driver, so virt-handler exports its swap traffic
// gauges, and one of them swaps.
//
// rate() over those gauges draws Prometheus' "PromQL info: metric might
// not be a counter" annotation, and Thanos Querier returns every
// annotation, infos included, in the answer's warnings (it has no infos
// field). The test requires every round of the source to succeed (no query
// counted as partial, vmobs_fact_source_available{source="domain_stats"} 1) and the fold to hold
// the inputs of every domain-stats rule: DomainStatsMissing,
// GuestCPUStalled, GuestMemoryPressure, StorageSlow, NetworkErrors and
// MigrationNotConverging. It also asks the querier itself, to prove the
// annotation is there: the source's swap query, or, should that query
// draw none, a plain rate() of a swap gauge, must come back with a
// "PromQL info" warning.
//
// Thanos is not part of `make test`: built from the Go module proxy from a
// cold Go build cache it took 35 minutes (11 CPU-minutes, 2.5 GB of
// module and build cache) on the shared 2-core machine, 32 s warm, where
// the test takes about 20 s (docs/domain-stats.md, "Thanos Querier"). `make test-thanos` builds
// bin/thanos (hack/build-tool.sh), sets THANOS and runs this test; CI
// (.ci/run) runs it after `make test`. Without THANOS and without
// bin/thanos the test skips; with THANOS naming a missing file it fails.
func TestDomainStatsThroughThanos(t *testing.T) {
	if _, err := os.Stat(testenv.ThanosBinary()); err != nil {
		if os.Getenv("THANOS") == "" {
			t.Skipf("no Thanos at %s: `make test-thanos` builds it and runs this test", testenv.ThanosBinary())
		}
		t.Fatalf("THANOS: %v", err)
	}
	start := time.Now()
	_, admin := testenv.StartForTest(t, testenv.Options{})
	ctx := context.Background()
	const ns = "vms"
	nodes := []string{"node-a", "node-b", "node-c"}
	sim := simulatedCluster(ctx, t, admin, []string{ns}, nodes)
	const vms = 9
	var specs []simulator.VMSpec
	for i := range vms {
		specs = append(specs, simulator.VMSpec{Namespace: ns, Name: fmt.Sprintf("vm-%02d", i)})
	}
	if err := sim.CreateRunningVMs(ctx, specs, simulator.BulkOptions{Node: func(i int) string { return nodes[i%len(nodes)] }}); err != nil {
		t.Fatal(err)
	}
	sim.SetDomainFault(ns, thanosHidden, simulator.DomainNotExported, true)
	sim.SetDomainFault(ns, thanosFrozen, simulator.DomainVCPUFrozen, true)
	sim.SetDomainFault(ns, thanosPressure, simulator.DomainMemoryPressure, true)
	sim.SetDomainFault(ns, thanosNetErr, simulator.DomainNetworkErrors, true)
	sim.SetDomainFault(ns, thanosMigrating, simulator.DomainMigrationNotConverging, true)
	m, err := sim.StartMigration(ctx, ns, thanosMigrating, simulator.MigrationOptions{
		TargetNode: "node-b", Outcome: simulator.MigrationStuck, At: kubevirtv1.MigrationRunning,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Run(ctx); err != nil {
		t.Fatal(err)
	}
	var vmis kubevirtv1.VirtualMachineInstanceList
	if err := admin.List(ctx, &vmis); err != nil {
		t.Fatal(err)
	}
	var targets []factsource.Target
	for i := range vmis.Items {
		v := &vmis.Items[i]
		targets = append(targets, factsource.Target{Key: types.NamespacedName{Namespace: v.Namespace, Name: v.Name}, UID: v.UID, Node: v.Status.NodeName})
	}
	if len(targets) != vms {
		t.Fatalf("%d VMIs, want %d", len(targets), vms)
	}

	srv := httptest.NewServer(sim.VirtHandlerMetrics())
	t.Cleanup(srv.Close)
	prom, err := testenv.StartPrometheus(testenv.PrometheusOptions{
		ScrapeInterval: time.Second,
		Jobs:           []testenv.ScrapeJob{virtHandlerJob(strings.TrimPrefix(srv.URL, "http://"), nodes...)},
		// OpenShift's prometheus-k8s replicas carry these.
		ExternalLabels: map[string]string{"prometheus": "openshift-monitoring/k8s", testenv.ThanosReplicaLabel: "prometheus-k8s-0"},
	})
	if err != nil {
		t.Fatal(err)
	}
	stopOnCleanup(t, "prometheus", prom.Stop, prom.Log)
	sidecar, err := testenv.StartThanosSidecar(prom)
	if err != nil {
		t.Fatal(err)
	}
	stopOnCleanup(t, "thanos sidecar", sidecar.Stop, sidecar.Log)
	querier, err := testenv.StartThanosQuery(sidecar.GRPCAddress)
	if err != nil {
		t.Fatal(err)
	}
	stopOnCleanup(t, "thanos query", querier.Stop, querier.Log)
	t.Logf("%d VMs, prometheus, thanos sidecar and thanos query up in %s", vms, time.Since(start).Round(time.Millisecond))

	// The source's rounds start once the querier sees, through the
	// sidecar, a vCPU rate for every exported VMI: two scrapes in the
	// window.
	const window = 4 * time.Second
	eventually(t, "vCPU rates through the querier", func() error {
		a, err := queryAPI(ctx, querier.URL, `count(sum by (namespace, name, node) (rate(kubevirt_vmi_vcpu_seconds_total[4s])))`)
		if err != nil {
			return err
		}
		if got := a.scalar(); got != vms-1 {
			return fmt.Errorf("%v VMIs with a vCPU rate, want %d", got, vms-1)
		}
		return nil
	})

	client, err := domainstats.NewClient(querier.URL, "", "")
	if err != nil {
		t.Fatal(err)
	}
	rq := &recordingQuerier{q: client}
	queryMetrics, shared := domainstats.NewMetrics(), metrics.NewFactSources()
	reg := prometheus.NewRegistry()
	reg.MustRegister(append(queryMetrics.Collectors(), shared.Collectors()...)...)
	available, lastSuccess := shared.For(domainstats.Name)
	src := domainstats.NewSource(domainstats.Config{Options: factsource.Options{Interval: time.Second}, Window: window}, rq, queryMetrics, factsource.Deps{
		Targets: func() []factsource.Target { return targets }, Notify: func(types.NamespacedName) {}, Log: testr.New(t),
		Available: available, LastSuccess: lastSuccess,
	})
	facts := func(name string) vmifacts.DomainFacts {
		f := src.Facts(types.NamespacedName{Namespace: ns, Name: name})
		if f == nil {
			return vmifacts.DomainFacts{}
		}
		return *f
	}

	// round runs one round and fails the test unless every query of it
	// succeeded. On a failure it first runs the rounds it takes the source
	// to give up (UnavailableAfter), so the message says what the VMs'
	// status would.
	rounds := 0
	round := func() {
		t.Helper()
		rounds++
		rq.reset()
		src.Round(ctx)
		failed := rq.failures()
		if len(failed) == 0 && gauge(t, reg, "vmobs_fact_source_available") == 1 {
			return
		}
		for range domainstats.Defaults.UnavailableAfter {
			src.Round(ctx)
		}
		t.Fatalf("round %d of the domain-stats source through Thanos Querier failed: %d of its queries failed:\n  %s\n"+
			"vmobs_fact_source_available{source=\"domain_stats\"} %v, vmobs_domain_stats_query_errors_total %v; every VMI's facts now say %q, so no domain-stats rule runs",
			rounds, len(failed), strings.Join(failed, "\n  "), gauge(t, reg, "vmobs_fact_source_available"),
			counters(t, reg, "vmobs_domain_stats_query_errors_total"), facts(specs[0].Name).Unavailable)
	}

	// The annotation is really there: the querier answers the source's
	// own swap query, or a plain rate() of a swap gauge, with a "PromQL
	// info" warning. A stack that did not would let this test pass
	// without exercising it.
	round()
	swapQuery := rq.sent("kubevirt_vmi_memory_swap_in_traffic_bytes")
	if swapQuery == "" {
		t.Fatalf("the source sent no query of the swap traffic gauges; it sent:\n%s", strings.Join(rq.all(), "\n"))
	}
	annotated := func(expr string) (bool, error) {
		a, err := queryAPI(ctx, querier.URL, expr)
		if err != nil {
			return false, err
		}
		if len(a.Data.Result) == 0 {
			return false, fmt.Errorf("%s: no series", expr)
		}
		t.Logf("the querier answers %d series to %s, with warnings %q and infos %q", len(a.Data.Result), expr, a.Warnings, a.Infos)
		return slices.ContainsFunc(a.Warnings, func(w string) bool { return strings.Contains(w, "PromQL info") }), nil
	}
	ok, err := annotated(swapQuery)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		plain := `rate(kubevirt_vmi_memory_swap_in_traffic_bytes[4s])`
		t.Logf("the source's swap query draws no annotation; checking that %s does", plain)
		if ok, err = annotated(plain); err != nil {
			t.Fatal(err)
		}
		if !ok {
			t.Fatalf("Thanos Querier answers %s without a \"PromQL info\" warning: the test no longer exercises the annotation", plain)
		}
	}

	// Rounds every second. The storage baseline is learnt from the first
	// rounds; then the slow disk's latency must stand out from it.
	var missing error
	deadline := time.Now().Add(45 * time.Second)
	for {
		time.Sleep(time.Second)
		round()
		if rounds == 4 {
			sim.SetDomainFault(ns, thanosSlowDisk, simulator.DomainStorageSlow, true)
		}
		if missing = ruleInputs(facts, specs, nodes); missing == nil && rounds > 6 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %d rounds through Thanos Querier, all successful: %v", rounds, missing)
		}
	}
	t.Logf("%d rounds through Thanos Querier, all successful, with every rule's inputs; done in %s", rounds, time.Since(start).Round(time.Millisecond))
}

// ruleInputs says what the fold lacks of the inputs each domain-stats rule
// judges on, for the faults TestDomainStatsThroughThanos sets, under the
// default policy; nil when nothing.
func ruleInputs(facts func(string) vmifacts.DomainFacts, specs []simulator.VMSpec, nodes []string) error {
	pol := verdict.DefaultPolicy()
	var errs []string
	check := func(name string, ok bool, what string, f vmifacts.DomainFacts) {
		if !ok {
			errs = append(errs, fmt.Sprintf("%s: %s (facts %+v)", name, what, f))
		}
	}
	for i, sp := range specs {
		f := facts(sp.Name)
		if f.Unavailable != "" {
			check(sp.Name, false, "unavailable: "+f.Unavailable, f)
			continue
		}
		switch sp.Name {
		case thanosHidden: // DomainStatsMissing
			check(sp.Name, !f.Exported && f.NodeExports && !f.MissingSince.IsZero(), "not exported from a node that exports others", f)
			continue
		case thanosFrozen: // GuestCPUStalled
			check(sp.Name, f.VCPUUsage.OK && f.VCPUUsage.V == 0 && !f.VCPUStalledSince.IsZero(), "vCPU time standing still", f)
		case thanosPressure: // GuestMemoryPressure
			check(sp.Name, f.MemoryAvailable.OK && f.MemoryUsable.OK && f.MemoryUsable.V*100 < f.MemoryAvailable.V*float64(pol.GuestMemoryAvailablePercent),
				fmt.Sprintf("usable memory under %d%% of available", pol.GuestMemoryAvailablePercent), f)
			check(sp.Name, f.SwapRate.OK && f.SwapRate.V >= pol.GuestSwapRate, fmt.Sprintf("swapping at %v B/s or more", pol.GuestSwapRate), f)
		case thanosSlowDisk: // StorageSlow
			check(sp.Name, f.StorageLatency.OK && f.StorageBaseline.OK && f.StorageLatency.V >= float64(pol.StorageSlowFactor)*f.StorageBaseline.V,
				fmt.Sprintf("a time per operation %d times its baseline", pol.StorageSlowFactor), f)
		case thanosNetErr: // NetworkErrors
			check(sp.Name, f.NetworkErrorRate.OK && f.NetworkErrorRate.V >= pol.NetworkErrorRate, fmt.Sprintf("%v errors a second or more", pol.NetworkErrorRate), f)
		case thanosMigrating: // MigrationNotConverging
			check(sp.Name, f.MigrationDataRemaining.OK && f.MigrationDirtyRate.OK && f.MigrationTransferRate.OK &&
				f.MigrationDirtyRate.V >= f.MigrationTransferRate.V && f.MigrationNotShrinking >= pol.MigrationNotConvergingSamples,
				fmt.Sprintf("a migration job dirtying faster than it copies, not shrinking over %d samples", pol.MigrationNotConvergingSamples), f)
		default: // healthy: every signal of the guest read, none alarming
			check(sp.Name, f.VCPUUsage.OK && f.VCPUUsage.V > 0 && f.VCPUStalledSince.IsZero(), "running vCPUs", f)
			check(sp.Name, f.MemoryUsable.OK && f.MemoryUsable.V*100 >= f.MemoryAvailable.V*float64(pol.GuestMemoryAvailablePercent), "usable memory", f)
			check(sp.Name, f.NetworkErrorRate.OK && f.NetworkErrorRate.V == 0, "no network errors", f)
			check(sp.Name, !f.MigrationDataRemaining.OK, "no migration job", f)
		}
		// The swap series of a Linux guest are there for every exported
		// VMI, swapping or not: the answer to the swap query was read.
		check(sp.Name, f.SwapRate.OK, "a swap rate", f)
		check(sp.Name, f.Exported && f.Node == nodes[i%len(nodes)], "exported from its node "+nodes[i%len(nodes)], f)
		check(sp.Name, f.StorageLatency.OK && f.StorageReadRate.OK && f.NetworkReceiveRate.OK && f.MemoryDomain.OK, "storage, network and memory series", f)
	}
	if len(errs) > 0 {
		return fmt.Errorf("the fold lacks inputs of rules:\n  %s", strings.Join(errs, "\n  "))
	}
	return nil
}

// stopOnCleanup stops a process started for the test when it ends, and
// shows its log if the test failed.
func stopOnCleanup(t *testing.T, name string, stop func() error, log func() string) {
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("stopping %s: %v", name, err)
		}
		if t.Failed() {
			t.Logf("%s's log:\n%s", name, log())
		}
	})
}

// recordingQuerier passes the source's queries on and records them, and
// the errors of the current round.
type recordingQuerier struct {
	q domainstats.Querier

	mu      sync.Mutex
	queries []string
	errs    []string
}

func (r *recordingQuerier) Query(ctx context.Context, q string, at time.Time) ([]domainstats.Sample, int, error) {
	samples, n, err := r.q.Query(ctx, q, at)
	r.mu.Lock()
	defer r.mu.Unlock()
	if !slices.Contains(r.queries, q) {
		r.queries = append(r.queries, q)
	}
	if err != nil {
		r.errs = append(r.errs, fmt.Sprintf("%s: %v", q, err))
	}
	return samples, n, err
}

func (r *recordingQuerier) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = nil
}

func (r *recordingQuerier) failures() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.errs)
}

func (r *recordingQuerier) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.queries)
}

// sent is the query sent that names metric, "" when none did.
func (r *recordingQuerier) sent(metric string) string {
	for _, q := range r.all() {
		if strings.Contains(q, metric) {
			return q
		}
	}
	return ""
}

// apiAnswer is an instant query's answer as the HTTP API writes it, its
// warnings and infos included.
type apiAnswer struct {
	Status   string   `json:"status"`
	Error    string   `json:"error"`
	Warnings []string `json:"warnings"`
	Infos    []string `json:"infos"`
	Data     struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Value [2]any `json:"value"`
		} `json:"result"`
	} `json:"data"`
}

// scalar is the value of a one-series answer, -1 when it has another
// number of series or an unreadable value.
func (a *apiAnswer) scalar() float64 {
	if len(a.Data.Result) != 1 {
		return -1
	}
	s, ok := a.Data.Result[0].Value[1].(string)
	if !ok {
		return -1
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return -1
	}
	return v
}

// queryAPI runs an instant query at the present on the HTTP API at base,
// reading the answer as it comes, warnings and all.
func queryAPI(ctx context.Context, base, expr string) (*apiAnswer, error) {
	resp, err := httpGet(ctx, base+"/api/v1/query?"+url.Values{"query": {expr}}.Encode())
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	var a apiAnswer
	if err := json.Unmarshal(body, &a); err != nil {
		return nil, fmt.Errorf("%s: %s: %w", expr, resp.Status, err)
	}
	if a.Status != "success" || a.Data.ResultType != "vector" {
		return nil, fmt.Errorf("%s: %s %s %s", expr, resp.Status, a.Status, a.Error)
	}
	return &a, nil
}

// httpGet GETs target, bound to ctx; the caller closes the body.
func httpGet(ctx context.Context, target string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, err
	}
	return http.DefaultClient.Do(req)
}

// gauge is the value of an unlabelled gauge of reg.
func gauge(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no gauge %s", name)
	return 0
}

// counters are a counter vector's values by their labels' values.
func counters(t *testing.T, reg *prometheus.Registry, name string) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetValue())
			}
			out[strings.Join(ls, "/")] = m.GetCounter().GetValue()
		}
	}
	return out
}
