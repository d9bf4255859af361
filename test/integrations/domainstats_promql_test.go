package integrations

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/vmobs/vmobs/internal/domainstats"
)

// TestDomainStatsQueriesInPromQL evaluates the domain stats source's own
// queries with Prometheus' engine (promtool test rules) on series shaped as
// KubeVirt exports them: the swap gauges read without rate() (a guest
// reboot counts 0, not a negative traffic), a guest panic counter whose
// series appears at 1 (virt-handler's first panic) or grows, and errors
// apart from receive drops.
func TestDomainStatsQueriesInPromQL(t *testing.T) {
	const vm = `namespace="ns",node="node-a",`
	sample := func(metric, labels string, value float64) map[string]any {
		return map[string]any{"labels": metric + "{" + labels + "}", "value": value}
	}
	evalQueriesInPromtool(t, []string{"swap", "guest_panics", "network_errors", "network_receive_drops", "migration_timestamp"},
		[]any{
			// 1 MiB swapped in every 30 s.
			map[string]string{"series": `kubevirt_vmi_memory_swap_in_traffic_bytes{` + vm + `name="swapping"}`, "values": "0+1048576x20"},
			map[string]string{"series": `kubevirt_vmi_memory_swap_out_traffic_bytes{` + vm + `name="swapping"}`, "values": "0x20"},
			// The guest reboots at 5m: its totals start again from 0.
			map[string]string{"series": `kubevirt_vmi_memory_swap_in_traffic_bytes{` + vm + `name="rebooted"}`, "values": "1e9+1048576x9 0+0x10"},
			map[string]string{"series": `kubevirt_vmi_memory_swap_out_traffic_bytes{` + vm + `name="rebooted"}`, "values": "0x20"},
			// The first panic since virt-handler started (at 5m), a
			// second panic (at 5m), an old one.
			map[string]string{"series": `kubevirt_vmi_guest_os_panic_total{namespace="ns",name="first",type="hyperv",bugcheck_code="0x9f"}`, "values": "_x9 1x10"},
			map[string]string{"series": `kubevirt_vmi_guest_os_panic_total{namespace="ns",name="again",type="pvpanic",bugcheck_code="unknown"}`, "values": "1x9 2x10"},
			map[string]string{"series": `kubevirt_vmi_guest_os_panic_total{namespace="ns",name="old",type="pvpanic",bugcheck_code="unknown"}`, "values": "1x20"},
			// 2 errors and 30 receive drops a second.
			map[string]string{"series": `kubevirt_vmi_network_receive_errors_total{` + vm + `name="net",interface="default"}`, "values": "0+60x20"},
			map[string]string{"series": `kubevirt_vmi_network_transmit_errors_total{` + vm + `name="net",interface="default"}`, "values": "0x20"},
			map[string]string{"series": `kubevirt_vmi_network_transmit_packets_dropped_total{` + vm + `name="net",interface="default"}`, "values": "0x20"},
			map[string]string{"series": `kubevirt_vmi_network_receive_packets_dropped_total{` + vm + `name="net",interface="default"}`, "values": "0+900x20"},
		},
		[]any{
			map[string]any{"expr": "swap", "eval_time": "4m30s", "exp_samples": []any{
				sample("swap", vm+`name="swapping"`, 1048576.0/30),
				sample("swap", vm+`name="rebooted"`, 1048576.0/30),
			}},
			map[string]any{"expr": "swap", "eval_time": "6m", "exp_samples": []any{
				sample("swap", vm+`name="swapping"`, 1048576.0/30),
				sample("swap", vm+`name="rebooted"`, 0),
			}},
			map[string]any{"expr": "guest_panics", "eval_time": "5m", "exp_samples": []any{
				sample("guest_panics", `namespace="ns",name="first"`, 1),
				sample("guest_panics", `namespace="ns",name="again"`, 4.0/3),
				sample("guest_panics", `namespace="ns",name="old"`, 0),
			}},
			map[string]any{"expr": "network_errors", "eval_time": "5m", "exp_samples": []any{
				sample("network_errors", vm+`name="net"`, 2),
			}},
			map[string]any{"expr": "network_receive_drops", "eval_time": "5m", "exp_samples": []any{
				sample("network_receive_drops", vm+`name="net"`, 30),
			}},
		})
}

// TestDomainStatsQueriesReadTheObservabilityController evaluates the
// queries on series as KubeVirt's observability controller (VEP 143,
// KubeVirt v1.9's VMStatsCollector gate) puts them in Prometheus: its
// ServiceMonitor does not honour labels, so the VMI's namespace is
// exported_namespace and namespace is the controller's. A VMI exported by
// virt-handler alone, by the controller alone, and by both (the
// controller's cache repeating a last value while virt-handler's counter
// moves) must each read as one domain of its own namespace, counted once
// (docs/compatibility.md).
func TestDomainStatsQueriesReadTheObservabilityController(t *testing.T) {
	// The target labels of each exporter, as prometheus-operator sets them.
	const (
		handler    = `job="kubevirt-prometheus-metrics",instance="10.0.0.1:8443",pod="virt-handler-x7k2p",service="kubevirt-prometheus-metrics",endpoint="metrics",container="virt-handler",`
		controller = `job="virt-observability-controller-metrics",instance="10.0.0.9:8443",pod="virt-observability-controller-5f6d8",service="virt-observability-controller-metrics",endpoint="metrics",container="manager",namespace="virt-observability-controller-system",`
	)
	in := func(metric, exporter, vmi, extra, values string) map[string]string {
		ns := `namespace="vms",`
		if exporter == controller {
			ns = `exported_namespace="vms",`
		}
		return map[string]string{"series": metric + "{" + exporter + ns + `node="node-a",name="` + vmi + `"` + extra + "}", "values": values}
	}
	var series []any
	for _, e := range []struct{ exporter, vmi, vcpu, rx string }{
		{handler, "by-handler", "0+30x20", "0+3000x20"},
		{controller, "by-controller", "0+15x20", "0+1500x20"},
		// Both: virt-handler's counters move, the controller's cache
		// repeats a value.
		{handler, "by-both", "0+30x20", "0+3000x20"},
		{controller, "by-both", "600x20", "60000x20"},
	} {
		series = append(series,
			in("kubevirt_vmi_vcpu_seconds_total", e.exporter, e.vmi, `,id="0",state="running"`, e.vcpu),
			in("kubevirt_vmi_memory_domain_bytes", e.exporter, e.vmi, "", "2147483648x20"),
			in("kubevirt_vmi_network_receive_bytes_total", e.exporter, e.vmi, `,interface="default"`, e.rx),
			in("kubevirt_vmi_network_receive_errors_total", e.exporter, e.vmi, `,interface="default"`, "0+60x20"),
			in("kubevirt_vmi_network_transmit_errors_total", e.exporter, e.vmi, `,interface="default"`, "0x20"),
			in("kubevirt_vmi_network_transmit_packets_dropped_total", e.exporter, e.vmi, `,interface="default"`, "0x20"),
			in("kubevirt_vmi_storage_read_times_seconds_total", e.exporter, e.vmi, `,drive="rootdisk"`, "0+3x20"),
			in("kubevirt_vmi_storage_write_times_seconds_total", e.exporter, e.vmi, `,drive="rootdisk"`, "0x20"),
			in("kubevirt_vmi_storage_iops_read_total", e.exporter, e.vmi, `,drive="rootdisk"`, "0+300x20"),
			in("kubevirt_vmi_storage_iops_write_total", e.exporter, e.vmi, `,drive="rootdisk"`, "0x20"),
		)
	}
	const vmi = `namespace="vms",node="node-a",`
	sample := func(metric, name string, value float64) map[string]any {
		return map[string]any{"labels": metric + "{" + vmi + `name="` + name + `"}`, "value": value}
	}
	each := func(metric string, byHandler, byController, byBoth float64) map[string]any {
		return map[string]any{"expr": metric, "eval_time": "5m", "exp_samples": []any{
			sample(metric, "by-handler", byHandler), sample(metric, "by-controller", byController), sample(metric, "by-both", byBoth),
		}}
	}
	evalQueriesInPromtool(t, []string{"present", "vcpu", "memory_domain", "network_receive", "network_errors", "storage_latency"}, series, []any{
		each("present", 1, 1, 1),
		// One vCPU busy a second by virt-handler's counter, half
		// of one by the controller's, and by both the moving one.
		each("vcpu", 1, 0.5, 1),
		each("memory_domain", 2147483648, 2147483648, 2147483648),
		each("network_receive", 100, 50, 100),
		// Two errors a second by each exporter, never four.
		each("network_errors", 2, 2, 2),
		// 10 ms per read where the counters move; for the VMI
		// exported by both, virt-handler's.
		each("storage_latency", 0.01, 0.01, 0.01),
	})
}

// evalQueriesInPromtool has promtool (test rules) evaluate the domain stats
// source's queries named in names, each recorded under its name, on series
// (promtool's input_series, sampled every 30 s), and check them against
// exprTests (its promql_expr_test cases).
func evalQueriesInPromtool(t *testing.T, names []string, series, exprTests []any) {
	t.Helper()
	q := domainstats.Queries(2 * time.Minute)
	dir := t.TempDir()
	var rules []map[string]string
	for _, name := range names {
		rules = append(rules, map[string]string{"record": name, "expr": q[name]})
	}
	writeYAML(t, filepath.Join(dir, "rules.yml"), map[string]any{"groups": []any{map[string]any{"name": "domainstats", "rules": rules}}})
	writeYAML(t, filepath.Join(dir, "test.yml"), map[string]any{
		"rule_files":          []string{"rules.yml"},
		"evaluation_interval": "30s",
		// Rates over float samples are not exact to the last bit.
		"fuzzy_compare": true,
		"tests": []any{map[string]any{
			"interval":         "30s",
			"input_series":     series,
			"promql_expr_test": exprTests,
		}},
	})
	runPromtool(t, dir, "test", "rules", "test.yml")
}

// writeYAML writes v as YAML to path: promtool's rule and test files.
func writeYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
