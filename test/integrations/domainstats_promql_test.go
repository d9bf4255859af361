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
	q := domainstats.Queries(2 * time.Minute)
	dir := t.TempDir()
	var rules []map[string]string
	for _, name := range []string{"swap", "guest_panics", "network_errors", "network_receive_drops", "migration_timestamp"} {
		rules = append(rules, map[string]string{"record": name, "expr": q[name]})
	}
	write := func(file string, v any) {
		t.Helper()
		b, err := yaml.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, file), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("rules.yml", map[string]any{"groups": []any{map[string]any{"name": "domainstats", "rules": rules}}})

	const vm = `namespace="ns",node="node-a",`
	sample := func(metric, labels string, value float64) map[string]any {
		return map[string]any{"labels": metric + "{" + labels + "}", "value": value}
	}
	write("test.yml", map[string]any{
		"rule_files":          []string{"rules.yml"},
		"evaluation_interval": "30s",
		// Rates over float samples are not exact to the last bit.
		"fuzzy_compare": true,
		"tests": []any{map[string]any{
			"interval": "30s",
			"input_series": []any{
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
			"promql_expr_test": []any{
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
			},
		}},
	})
	runPromtool(t, dir, "test", "rules", "test.yml")
}
