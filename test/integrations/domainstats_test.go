package integrations

import (
	"context"
	"fmt"
	"math"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/internal/simulator"
	"github.com/vmobs/vmobs/internal/testenv"
)

// virtHandlerJob is the scrape job KubeVirt's ServiceMonitor makes of the
// simulated virt-handlers, over the listener at addr.
func virtHandlerJob(addr string, nodes ...string) testenv.ScrapeJob {
	job := testenv.ScrapeJob{Name: simulator.VirtHandlerJob, HonorLabels: simulator.VirtHandlerHonorLabels}
	for _, tg := range simulator.VirtHandlerTargets(addr, nodes...) {
		job.Targets = append(job.Targets, testenv.ScrapeTarget{Address: tg.Address, MetricsPath: tg.MetricsPath, Labels: tg.Labels})
	}
	return job
}

// promQuery runs an instant query at the present and returns its vector.
func promQuery(ctx context.Context, prom *testenv.Prometheus, expr string) (model.Vector, error) {
	v, warnings, err := prom.API().Query(ctx, expr, time.Now())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", expr, err)
	}
	if len(warnings) > 0 {
		return nil, fmt.Errorf("%s: warnings %v", expr, warnings)
	}
	vec, ok := v.(model.Vector)
	if !ok {
		return nil, fmt.Errorf("%s: a %s, not a vector", expr, v.Type())
	}
	return vec, nil
}

// names are the series' name labels, sorted and joined.
func names(vec model.Vector) string {
	var out []string
	for _, s := range vec {
		out = append(out, string(s.Metric["name"]))
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}

// eventually retries check until it returns nil, for up to 30 s: a
// scrape a second makes each answer a second or two late.
func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// TestDomainStatsThroughPrometheus runs the chain the vmobs domain-stats
// reader sits at the end of: simulated virt-handlers on 3 nodes, a real
// Prometheus scraping them every second as KubeVirt's ServiceMonitor has it
// (honor_labels), and instant queries on its HTTP API. 50 VMs run, a few of
// them with a fault each.
func TestDomainStatsThroughPrometheus(t *testing.T) {
	start := time.Now()
	_, admin := testenv.StartForTest(t, testenv.Options{})
	ctx := context.Background()
	const ns = "vms"
	nodes := []string{"node-a", "node-b", "node-c"}
	sim := simulatedCluster(ctx, t, admin, []string{ns}, nodes) // the real clock: Prometheus scrapes in real time
	var specs []simulator.VMSpec
	for i := range 50 {
		specs = append(specs, simulator.VMSpec{Namespace: ns, Name: fmt.Sprintf("vm-%02d", i)})
	}
	nodeOf := func(i int) string { return nodes[i%len(nodes)] }
	if err := sim.CreateRunningVMs(ctx, specs, simulator.BulkOptions{Node: nodeOf}); err != nil {
		t.Fatal(err)
	}
	// vm-00 stops; the others below each get a fault.
	if err := sim.Stop(ctx, ns, "vm-00"); err != nil {
		t.Fatal(err)
	}
	const (
		hidden   = "vm-01" // node-b
		frozen   = "vm-02" // node-c
		pressure = "vm-03" // node-a
		slowDisk = "vm-04" // node-b
		netErr   = "vm-05" // node-c
		odd      = "vm-06" // node-a
	)
	sim.SetDomainFault(ns, hidden, simulator.DomainNotExported, true)
	sim.SetDomainFault(ns, frozen, simulator.DomainVCPUFrozen, true)
	sim.SetDomainFault(ns, pressure, simulator.DomainMemoryPressure, true)
	sim.SetDomainFault(ns, slowDisk, simulator.DomainStorageSlow, true)
	sim.SetDomainFault(ns, netErr, simulator.DomainNetworkErrors, true)
	sim.SetDomainFault(ns, odd, simulator.DomainUnnamedSeries, true)
	sim.SetDomainFault(ns, odd, simulator.DomainOddValues, true)
	t.Logf("50 VMs on 3 nodes in %s", time.Since(start).Round(time.Millisecond))

	srv := httptest.NewServer(sim.VirtHandlerMetrics())
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "http://")
	promStart := time.Now()
	prom, err := testenv.StartPrometheus(testenv.PrometheusOptions{
		ScrapeInterval: time.Second,
		Jobs:           []testenv.ScrapeJob{virtHandlerJob(addr, nodes...)},
	})
	if err != nil {
		t.Fatal(err)
	}
	stopOnCleanup(t, "prometheus", prom.Stop, prom.Log)
	t.Logf("prometheus ready in %s", time.Since(promStart).Round(time.Millisecond))

	// vCPU rate per VMI: > 0 for each running VMI, 0 for the frozen one,
	// none for the stopped and the unexported one; each on its node, in
	// its own namespace (honor_labels), with the ServiceMonitor's job.
	const vcpuRate = `sum by (namespace, name, node, job) (rate(kubevirt_vmi_vcpu_seconds_total[5s]))`
	eventually(t, "vCPU rates", func() error {
		vec, err := promQuery(ctx, prom, vcpuRate)
		if err != nil {
			return err
		}
		got := map[string]model.Sample{}
		for _, s := range vec {
			got[string(s.Metric["name"])] = *s
		}
		for i, sp := range specs {
			s, ok := got[sp.Name]
			switch {
			case sp.Name == "vm-00" || sp.Name == hidden:
				if ok {
					return fmt.Errorf("%s has a vCPU rate: %v", sp.Name, s)
				}
			case sp.Name == odd:
				// NaN counters: rate() of NaN is NaN; its series have
				// no name label anyway.
			case !ok:
				return fmt.Errorf("%s has no vCPU rate yet (%d series)", sp.Name, len(vec))
			case s.Metric["node"] != model.LabelValue(nodeOf(i)) || s.Metric["namespace"] != ns || s.Metric["job"] != simulator.VirtHandlerJob:
				return fmt.Errorf("%s: labels %v", sp.Name, s.Metric)
			case sp.Name == frozen && s.Value != 0:
				return fmt.Errorf("frozen %s: rate %v", sp.Name, s.Value)
			case sp.Name != frozen && !(s.Value > 0):
				return fmt.Errorf("%s: rate %v", sp.Name, s.Value)
			}
		}
		return nil
	})
	t.Logf("vCPU rates as expected %s after prometheus started", time.Since(promStart).Round(time.Millisecond))

	// Every target up and scraped well within the interval.
	vec, err := promQuery(ctx, prom, `max(scrape_duration_seconds{job="`+simulator.VirtHandlerJob+`"}) and on() count(up == 1) == 3`)
	if err != nil || len(vec) != 1 {
		t.Fatalf("targets: %v %v", vec, err)
	}
	t.Logf("slowest scrape of a node with ~16 VMIs: %.1f ms", 1000*float64(vec[0].Value))

	expect := func(what, expr, want string) {
		t.Helper()
		eventually(t, what, func() error {
			vec, err := promQuery(ctx, prom, expr)
			if err != nil {
				return err
			}
			if got := names(vec); got != want {
				return fmt.Errorf("%s: got %q, want %q", expr, got, want)
			}
			return nil
		})
	}
	expect("memory pressure", `kubevirt_vmi_memory_usable_bytes{name!=""} / kubevirt_vmi_memory_available_bytes < 0.1`, pressure)
	expect("swap traffic", `rate(kubevirt_vmi_memory_swap_out_traffic_bytes[5s]) > 0`, pressure)
	expect("slow storage", `sum by (name) (rate(kubevirt_vmi_storage_read_times_seconds_total{drive="rootdisk"}[5s]))
		/ sum by (name) (rate(kubevirt_vmi_storage_iops_read_total{drive="rootdisk"}[5s])) > 0.01`, slowDisk)
	expect("network errors", `sum by (name) (rate(kubevirt_vmi_network_receive_errors_total[5s])) > 0`, netErr)
	expect("packets dropped", `sum by (name) (rate(kubevirt_vmi_network_transmit_packets_dropped_total[5s])) > 0`, netErr)

	// The odd VMI's series arrive without a name, with NaN and +Inf.
	eventually(t, "odd values", func() error {
		vec, err := promQuery(ctx, prom, `kubevirt_vmi_vcpu_seconds_total{name=""}`)
		if err != nil {
			return err
		}
		if len(vec) != 1 || !math.IsNaN(float64(vec[0].Value)) || vec[0].Metric["node"] != "node-a" {
			return fmt.Errorf("unnamed NaN vCPU series: %v", vec)
		}
		if vec, err = promQuery(ctx, prom, `kubevirt_vmi_memory_available_bytes{name=""}`); err != nil {
			return err
		}
		if len(vec) != 1 || !math.IsInf(float64(vec[0].Value), 1) {
			return fmt.Errorf("unnamed +Inf memory series: %v", vec)
		}
		return nil
	})

	// Two live migrations held in Running: on the source only, one
	// converging, one not.
	migrate := func(name, target string) {
		t.Helper()
		m, err := sim.StartMigration(ctx, ns, name, simulator.MigrationOptions{
			TargetNode: target, Outcome: simulator.MigrationStuck, At: kubevirtv1.MigrationRunning,
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Run(ctx); err != nil {
			t.Fatal(err)
		}
	}
	sim.SetDomainFault(ns, "vm-08", simulator.DomainMigrationNotConverging, true)
	migrate("vm-07", "node-c") // from node-b
	migrate("vm-08", "node-a") // from node-c
	eventually(t, "migration metrics", func() error {
		vec, err := promQuery(ctx, prom, `kubevirt_vmi_migration_data_remaining_bytes`)
		if err != nil {
			return err
		}
		if got := names(vec); got != "vm-07,vm-08" {
			return fmt.Errorf("migrating: %q", got)
		}
		for _, s := range vec {
			if want := map[model.LabelValue]model.LabelValue{"vm-07": "node-b", "vm-08": "node-c"}[s.Metric["name"]]; s.Metric["node"] != want {
				return fmt.Errorf("%s reported by %s, not its source %s", s.Metric["name"], s.Metric["node"], want)
			}
		}
		return nil
	})
	expect("converging migration", `kubevirt_vmi_migration_memory_transfer_rate_bytes > kubevirt_vmi_migration_dirty_memory_rate_bytes
		and kubevirt_vmi_migration_data_remaining_bytes < kubevirt_vmi_migration_data_bytes_total`, "vm-07")
	expect("migration not converging", `kubevirt_vmi_migration_dirty_memory_rate_bytes >= kubevirt_vmi_migration_memory_transfer_rate_bytes
		and kubevirt_vmi_migration_data_remaining_bytes == kubevirt_vmi_migration_data_bytes_total`, "vm-08")

	// A node's exporter down (503): its target is down and its series go
	// stale; back up, they return.
	const nodeC = `count by (node) (kubevirt_vmi_memory_domain_bytes{node="node-c"})`
	sim.SetVirtHandlerMetricsDown("node-c", true)
	eventually(t, "node-c down", func() error {
		up, err := promQuery(ctx, prom, `up{instance="node-c:8443"} == 0`)
		if err != nil {
			return err
		}
		if len(up) != 1 {
			return fmt.Errorf("node-c's target is not down: %v", up)
		}
		vec, err := promQuery(ctx, prom, nodeC)
		if err != nil {
			return err
		}
		if len(vec) != 0 {
			return fmt.Errorf("node-c's series are not stale: %v", vec)
		}
		return nil
	})
	sim.SetVirtHandlerMetricsDown("node-c", false)
	eventually(t, "node-c back", func() error {
		vec, err := promQuery(ctx, prom, nodeC)
		if err != nil {
			return err
		}
		if len(vec) != 1 {
			return fmt.Errorf("node-c's series are not back: %v", vec)
		}
		return nil
	})

	// A node's target removed (its virt-handler pod gone from the
	// Service's endpoints): its series go stale, the others stay.
	if err := prom.SetJobs(ctx, []testenv.ScrapeJob{virtHandlerJob(addr, "node-a", "node-c")}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "node-b's target removed", func() error {
		vec, err := promQuery(ctx, prom, `count by (node) (kubevirt_vmi_memory_domain_bytes)`)
		if err != nil {
			return err
		}
		var got []string
		for _, s := range vec {
			got = append(got, string(s.Metric["node"]))
		}
		slices.Sort(got)
		if strings.Join(got, ",") != "node-a,node-c" {
			return fmt.Errorf("nodes with series: %v", got)
		}
		return nil
	})
	t.Logf("done in %s", time.Since(start).Round(time.Millisecond))
}
