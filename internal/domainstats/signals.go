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
// metricLabels).
type signal int

const (
	sigPresent signal = iota
	sigVCPU
	sigMemDomain
	sigMemAvailable
	sigMemUsable
	sigMemUnused
	sigSwap
	sigStorageLatency
	sigStorageRead
	sigStorageWrite
	sigNetReceive
	sigNetTransmit
	sigNetErrors
	sigMigRemaining
	sigMigDirty
	sigMigTransfer
	numSignals
)

// by is the grouping of every query: one result per VMI and node.
const by = "sum by (namespace, name, node) "

// signals holds each query, with WINDOW standing for the rate window. The
// metric names are virt-handler's domainstats collector's
// (kv:pkg/monitoring/metrics/virt-handler/domainstats): vcpu_metrics.go,
// memory_metrics.go, block_metrics.go, network_metrics.go,
// migration_metrics.go.
var signals = [numSignals]struct {
	name, query string
}{
	// Every running domain has vCPU and memory series; a domain with none
	// of them is not exported.
	sigPresent: {"present", `group by (namespace, name, node) ({__name__=~"kubevirt_vmi_vcpu_seconds_total|kubevirt_vmi_memory_domain_bytes|kubevirt_vmi_memory_resident_bytes"})`},
	// vCPU time in every state (running, blocked, offline): time a vCPU
	// spends halted while idle is not counted, so a guest that runs
	// anything advances it.
	sigVCPU:         {"vcpu", by + `(rate(kubevirt_vmi_vcpu_seconds_total[WINDOW]))`},
	sigMemDomain:    {"memory_domain", `max by (namespace, name, node) (kubevirt_vmi_memory_domain_bytes)`},
	sigMemAvailable: {"memory_available", `max by (namespace, name, node) (kubevirt_vmi_memory_available_bytes)`},
	sigMemUsable:    {"memory_usable", `max by (namespace, name, node) (kubevirt_vmi_memory_usable_bytes)`},
	sigMemUnused:    {"memory_unused", `max by (namespace, name, node) (kubevirt_vmi_memory_unused_bytes)`},
	// The swap traffic gauges are totals since boot (libvirt's swap_in and
	// swap_out balloon statistics), so their rate is the traffic.
	sigSwap: {"swap", by + `(rate({__name__=~"kubevirt_vmi_memory_swap_(in|out)_traffic_bytes"}[WINDOW]))`},
	// Seconds spent per operation over all drives; NaN (no operation in
	// the window) is dropped by the fold.
	sigStorageLatency: {"storage_latency", by + `(rate({__name__=~"kubevirt_vmi_storage_(read|write)_times_seconds_total"}[WINDOW])) / ` +
		by + `(rate({__name__=~"kubevirt_vmi_storage_iops_(read|write)_total"}[WINDOW]))`},
	sigStorageRead:  {"storage_read", by + `(rate(kubevirt_vmi_storage_read_traffic_bytes_total[WINDOW]))`},
	sigStorageWrite: {"storage_write", by + `(rate(kubevirt_vmi_storage_write_traffic_bytes_total[WINDOW]))`},
	sigNetReceive:   {"network_receive", by + `(rate(kubevirt_vmi_network_receive_bytes_total[WINDOW]))`},
	sigNetTransmit:  {"network_transmit", by + `(rate(kubevirt_vmi_network_transmit_bytes_total[WINDOW]))`},
	sigNetErrors:    {"network_errors", by + `(rate({__name__=~"kubevirt_vmi_network_(receive|transmit)_(errors|packets_dropped)_total"}[WINDOW]))`},
	// The migration job exists on the source's domain only, while it runs.
	sigMigRemaining: {"migration_remaining", `max by (namespace, name, node) (kubevirt_vmi_migration_data_remaining_bytes)`},
	sigMigDirty:     {"migration_dirty_rate", `max by (namespace, name, node) (kubevirt_vmi_migration_dirty_memory_rate_bytes)`},
	// KubeVirt exported the memory transfer rate under a disk name before
	// it was renamed; the memory name wins where both exist.
	sigMigTransfer: {"migration_transfer_rate", `max by (namespace, name, node) (kubevirt_vmi_migration_memory_transfer_rate_bytes) or max by (namespace, name, node) (kubevirt_vmi_migration_disk_transfer_rate_bytes)`},
}

// query is the PromQL of s with the rate window filled in.
func (s signal) query(window time.Duration) string {
	return strings.ReplaceAll(signals[s].query, "WINDOW", promDuration(window))
}

func (s signal) String() string { return signals[s].name }

// promDuration writes d in whole seconds, as PromQL reads durations.
func promDuration(d time.Duration) string {
	return strconv.FormatInt(max(int64(d/time.Second), 1), 10) + "s"
}
