package domainstats

import (
	"strconv"
	"strings"
	"time"
)

// signal is one fleet-wide instant query: every series it returns is one
// VMI's (summed over vCPUs, drives or interfaces by the labels
// virt-handler puts on every domain series: namespace, name, node;
// kv:pkg/monitoring/metrics/virt-handler/domainstats/domainstats.go
// newCollectorResultWithLabels).
type signal int

const (
	sigPresent signal = iota
	sigVCPU
	sigMemDomain
	sigMemAvailable
	sigMemUsable
	sigSwap
	sigMajorFaults
	sigStorageLatency
	sigStorageRead
	sigStorageWrite
	sigNetReceive
	sigNetTransmit
	sigNetErrors
	sigNetRxDrops
	sigGuestPanics
	sigMigRemaining
	sigMigTimestamp
	sigMigDirty
	sigMigTransfer
	numSignals
)

// by is the grouping of every query: one result per VMI and node.
const by = "sum by (namespace, name, node) "

// A domain series reaches Prometheus from virt-handler, whose
// ServiceMonitor honours its labels (namespace is the VMI's), or, from
// KubeVirt v1.9 with the VMStatsCollector gate, from KubeVirt's
// observability controller, whose ServiceMonitor does not: there the VMI's
// namespace arrives as exported_namespace and namespace is the
// controller's (kubevirt/kubevirt-observability-controller
// pkg/controller/metricsresources_controller.go; docs/compatibility.md).
// Where both export one domain, each series comes twice, with other
// target labels. So every per-VMI series is read through vmiSeries, and
// those that are summed through oneExporter.

// vmiSeries is expr with namespace set to exported_namespace where the
// scrape renamed it.
func vmiSeries(expr string) string {
	return `label_replace(` + expr + `, "namespace", "$1", "exported_namespace", "(.+)")`
}

// oneExporter keeps one series of each domain series that several
// exporters give, the largest: two exporters of one counter count the
// same thing, and a cache that repeats its last values reads lower. The
// labels dropped are the target's, as prometheus-operator and a plain
// kubernetes_sd scrape set them.
func oneExporter(expr string) string {
	return `max without (job, instance, pod, service, endpoint, container, exported_namespace) (` + vmiSeries(expr) + `)`
}

// sumOf is the per-VMI sum of expr's series.
func sumOf(expr string) string { return by + "(" + oneExporter(expr) + ")" }

// maxOf is the per-VMI largest of expr's series (a gauge of the domain).
func maxOf(expr string) string { return "max by (namespace, name, node) (" + vmiSeries(expr) + ")" }

// signals holds each query, with WINDOW standing for the rate window and
// WSECONDS for it in seconds. The metric names are virt-handler's domain
// stats collector's (kv:pkg/monitoring/metrics/virt-handler/domainstats):
// vcpu_metrics.go, memory_metrics.go, block_metrics.go,
// network_metrics.go; the migration's are its migration collector's
// (kv:pkg/monitoring/metrics/virt-handler/migrationdomainstats/migrationstats_collector.go),
// the guest panic counter virt-handler's own
// (kv:pkg/monitoring/metrics/virt-handler/guest_metrics.go).
//
// No query may draw a PromQL annotation from a healthy fleet: Prometheus
// 2.50-2.53 and Thanos Querier return annotations in the answer's
// warnings, and although decode tells them from a partial answer, an
// answer that is clean is one less thing to explain.
var signals = [numSignals]struct {
	name, query string
}{
	// Every running domain has vCPU and memory series; a domain with none
	// of them is not exported.
	sigPresent: {"present", "group by (namespace, name, node) (" + vmiSeries(`{__name__=~"kubevirt_vmi_vcpu_seconds_total|kubevirt_vmi_memory_domain_bytes|kubevirt_vmi_memory_resident_bytes"}`) + ")"},
	// vCPU time (libvirt's cpu_time of each vCPU thread). The state label
	// is always "running" for QEMU: libvirt reports every online vCPU as
	// running (qemuDomainHelperGetVcpus); time a vCPU spends halted while
	// idle is not counted, so a guest that runs anything advances it.
	sigVCPU:         {"vcpu", sumOf(`rate(kubevirt_vmi_vcpu_seconds_total[WINDOW])`)},
	sigMemDomain:    {"memory_domain", maxOf(`kubevirt_vmi_memory_domain_bytes`)},
	sigMemAvailable: {"memory_available", maxOf(`kubevirt_vmi_memory_available_bytes`)},
	sigMemUsable:    {"memory_usable", maxOf(`kubevirt_vmi_memory_usable_bytes`)},
	// The swap traffic series are gauges holding totals since the guest
	// booted (libvirt's swap_in and swap_out balloon statistics,
	// memory_metrics.go). rate() on them draws "PromQL info: metric might
	// not be a counter" (Prometheus 2.50 on), so the traffic is their
	// delta over the window: they fall only when the guest reboots, and a
	// window holding a reboot counts 0 (clamp_min) rather than a negative
	// traffic. delta() extrapolates like rate(); deriv() would fit a slope
	// through every sample, which a reboot within the window bends.
	sigSwap: {"swap", "(" + sumDeltas("kubevirt_vmi_memory_swap_in_traffic_bytes", "kubevirt_vmi_memory_swap_out_traffic_bytes") + ") / WSECONDS"},
	// Major page faults, a true counter (memory_metrics.go), the other half
	// of KubeVirt's thrashing test (recordingrules/vmi.go
	// vmi:kubevirt_vmi_pgmajfaults:rate5m).
	sigMajorFaults: {"major_faults", sumOf(`rate(kubevirt_vmi_memory_pgmajfault_total[WINDOW])`)},
	// Seconds spent per operation over all drives; NaN (no operation in
	// the window) is dropped by the fold.
	sigStorageLatency: {"storage_latency", "(" + sumRates("kubevirt_vmi_storage_read_times_seconds_total", "kubevirt_vmi_storage_write_times_seconds_total") +
		") / (" + sumRates("kubevirt_vmi_storage_iops_read_total", "kubevirt_vmi_storage_iops_write_total") + ")"},
	sigStorageRead:  {"storage_read", sumOf(`rate(kubevirt_vmi_storage_read_traffic_bytes_total[WINDOW])`)},
	sigStorageWrite: {"storage_write", sumOf(`rate(kubevirt_vmi_storage_write_traffic_bytes_total[WINDOW])`)},
	sigNetReceive:   {"network_receive", sumOf(`rate(kubevirt_vmi_network_receive_bytes_total[WINDOW])`)},
	sigNetTransmit:  {"network_transmit", sumOf(`rate(kubevirt_vmi_network_transmit_bytes_total[WINDOW])`)},
	// Errors both ways and transmit drops (the host dropping what the
	// guest sends: libvirt reports a tap's counters swapped into the
	// guest's view) are the node's; receive drops, packets the guest did
	// not take, are read apart.
	sigNetErrors: {"network_errors", sumRates("kubevirt_vmi_network_receive_errors_total", "kubevirt_vmi_network_transmit_errors_total",
		"kubevirt_vmi_network_transmit_packets_dropped_total")},
	sigNetRxDrops: {"network_receive_drops", sumOf(`rate(kubevirt_vmi_network_receive_packets_dropped_total[WINDOW])`)},
	// Guest OS panics within the window. The counter carries namespace,
	// name, type and bugcheck_code and no node (it is virt-handler's own,
	// not a domain series), and virt-handler creates a series at its first
	// panic, at 1: increase() sees only later ones, so a series that
	// appeared within the window counts its whole value. A series lives
	// as long as its virt-handler, so after a panic the VMI of the same
	// name, recreated or moved, still shows it; only its increase counts.
	sigGuestPanics: {"guest_panics", by + `((kubevirt_vmi_guest_os_panic_total + 0 unless kubevirt_vmi_guest_os_panic_total offset WINDOW) or increase(kubevirt_vmi_guest_os_panic_total[WINDOW]))`},
	// The migration job exists on the source's domain only, while it runs.
	sigMigRemaining: {"migration_remaining", `max by (namespace, name, node) (kubevirt_vmi_migration_data_remaining_bytes)`},
	// The migration series carry the time virt-handler polled libvirt
	// (migrationstats_collector.go newCR: Timestamp), and Prometheus marks
	// no timestamped series stale: a series no longer polled keeps its
	// last sample for 5 minutes. Its time tells the fold whether a sample
	// is new.
	sigMigTimestamp: {"migration_timestamp", `max by (namespace, name, node) (timestamp(kubevirt_vmi_migration_data_remaining_bytes))`},
	sigMigDirty:     {"migration_dirty_rate", `max by (namespace, name, node) (kubevirt_vmi_migration_dirty_memory_rate_bytes)`},
	// KubeVirt exported the memory transfer rate under a disk name before
	// it was renamed; the memory name wins where both exist.
	sigMigTransfer: {"migration_transfer_rate", `max by (namespace, name, node) (kubevirt_vmi_migration_memory_transfer_rate_bytes) or max by (namespace, name, node) (kubevirt_vmi_migration_disk_transfer_rate_bytes)`},
}

// sumRates adds the per-VMI rates of several counters. Each is summed on
// its own before they are added: rate() drops the metric name, so the
// rates of two counters of one drive or interface would collide in one
// vector (Prometheus rejects a vector with two equal label sets).
// virt-handler exports such counters together (each group of a drive or
// an interface comes from one libvirt stats record), so a sum of sums
// loses no VMI.
func sumRates(metrics ...string) string {
	terms := make([]string, len(metrics))
	for i, m := range metrics {
		terms[i] = sumOf("rate(" + m + "[WINDOW])")
	}
	return strings.Join(terms, " + ")
}

// sumDeltas adds the per-VMI increases over the window of several gauges
// that only grow while the guest runs, each clamped at 0 per series.
func sumDeltas(metrics ...string) string {
	terms := make([]string, len(metrics))
	for i, m := range metrics {
		terms[i] = sumOf("clamp_min(delta(" + m + "[WINDOW]), 0)")
	}
	return strings.Join(terms, " + ")
}

// query is the PromQL of s with the rate window filled in.
func (s signal) query(window time.Duration) string {
	q := strings.ReplaceAll(signals[s].query, "WINDOW", promDuration(window))
	return strings.ReplaceAll(q, "WSECONDS", strconv.FormatInt(max(int64(window/time.Second), 1), 10))
}

func (s signal) String() string { return signals[s].name }

// promDuration writes d in whole seconds, as PromQL reads durations.
func promDuration(d time.Duration) string {
	return strconv.FormatInt(max(int64(d/time.Second), 1), 10) + "s"
}

// Queries returns the PromQL of every signal by its name, with the rate
// window filled in: the queries a round runs, for tests that evaluate them
// with a real PromQL engine.
func Queries(window time.Duration) map[string]string {
	out := make(map[string]string, numSignals)
	for s := range numSignals {
		out[s.String()] = s.query(window)
	}
	return out
}
