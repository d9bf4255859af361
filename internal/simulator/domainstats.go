package simulator

import (
	"hash/fnv"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// Domain stats are what virt-handler exports on each node about the domains
// running there: libvirt's counters for each VMI, read through the
// virt-launcher's socket at scrape time. The simulator computes them from
// the VMI as the API server has it and from a per-VMI fault history kept
// here, as pure functions of Simulator.Clock: a counter is the integral of
// a rate over the time the domain has run on its node, the rate depending
// on the faults in force in each interval, so a Prometheus scraping the
// endpoint sees counters advance, stop or speed up as the faults say.
//
// Metric names, types and labels are KubeVirt v1.9.0's
// (kv:pkg/monitoring/metrics/virt-handler/domainstats/*.go and
// migrationdomainstats/migrationstats_collector.go; listed in
// kubevirt/monitoring docs/metrics.md). The help texts are KubeVirt's.

// domainMetric is one metric virt-handler declares.
type domainMetric struct {
	name, help string
	counter    bool
}

// The domain stats metrics, kv:pkg/monitoring/metrics/virt-handler/domainstats
// memory_metrics.go, cpu_metrics.go, node_cpu_affinity_metrics.go,
// vcpu_metrics.go, block_metrics.go and network_metrics.go. The swap
// traffic metrics are gauges there although they only grow. Left out: the
// guest load and filesystem metrics (they need the guest agent's data) and
// the dirty rate collector's kubevirt_vmi_dirty_rate_bytes_per_second.
var (
	mMemoryResident   = &domainMetric{name: "kubevirt_vmi_memory_resident_bytes", help: "Resident set size of the process running the domain."}
	mMemoryAvailable  = &domainMetric{name: "kubevirt_vmi_memory_available_bytes", help: "Amount of usable memory as seen by the domain. This value may not be accurate if a balloon driver is in use or if the guest OS does not initialize all assigned pages"}
	mMemoryUnused     = &domainMetric{name: "kubevirt_vmi_memory_unused_bytes", help: "The amount of memory left completely unused by the system. Memory that is available but used for reclaimable caches should NOT be reported as free."}
	mMemoryCached     = &domainMetric{name: "kubevirt_vmi_memory_cached_bytes", help: "The amount of memory that is being used to cache I/O and is available to be reclaimed, corresponds to the sum of `Buffers` + `Cached` + `SwapCached` in `/proc/meminfo`."}
	mMemorySwapIn     = &domainMetric{name: "kubevirt_vmi_memory_swap_in_traffic_bytes", help: "The total amount of data read from swap space of the guest in bytes."}
	mMemorySwapOut    = &domainMetric{name: "kubevirt_vmi_memory_swap_out_traffic_bytes", help: "The total amount of memory written out to swap space of the guest in bytes."}
	mMemoryPgmajfault = &domainMetric{name: "kubevirt_vmi_memory_pgmajfault_total", counter: true, help: "The number of page faults when disk IO was required. Page faults occur when a process makes a valid access to virtual memory that is not available. When servicing the page fault, if disk IO is required, it is considered as major fault."}
	mMemoryPgminfault = &domainMetric{name: "kubevirt_vmi_memory_pgminfault_total", counter: true, help: "The number of other page faults, when disk IO was not required. Page faults occur when a process makes a valid access to virtual memory that is not available. When servicing the page fault, if disk IO is NOT required, it is considered as minor fault."}
	mMemoryBalloon    = &domainMetric{name: "kubevirt_vmi_memory_actual_balloon_bytes", help: "Current balloon size in bytes."}
	mMemoryUsable     = &domainMetric{name: "kubevirt_vmi_memory_usable_bytes", help: "The amount of memory which can be reclaimed by balloon without pushing the guest system to swap, corresponds to 'Available' in /proc/meminfo."}
	mMemoryDomain     = &domainMetric{name: "kubevirt_vmi_memory_domain_bytes", help: "The amount of memory in bytes allocated to the domain. The `memory` value in domain xml file."}

	mCPUUsage  = &domainMetric{name: "kubevirt_vmi_cpu_usage_seconds_total", counter: true, help: "Total CPU time spent in all modes (sum of both vcpu and hypervisor usage)."}
	mCPUUser   = &domainMetric{name: "kubevirt_vmi_cpu_user_usage_seconds_total", counter: true, help: "Total CPU time spent in user mode."}
	mCPUSystem = &domainMetric{name: "kubevirt_vmi_cpu_system_usage_seconds_total", counter: true, help: "Total CPU time spent in system mode."}

	mNodeCPUAffinity = &domainMetric{name: "kubevirt_vmi_node_cpu_affinity", help: "Number of VMI CPU affinities to node physical cores."}

	mVCPUSeconds = &domainMetric{name: "kubevirt_vmi_vcpu_seconds_total", counter: true, help: "Total amount of time spent in each state by each vcpu (cpu_time excluding hypervisor time). Where `id` is the vcpu identifier and `state` can be one of the following: [`OFFLINE`, `RUNNING`, `BLOCKED`]."}
	mVCPUWait    = &domainMetric{name: "kubevirt_vmi_vcpu_wait_seconds_total", counter: true, help: "Amount of time spent by each vcpu while waiting on I/O."}
	mVCPUDelay   = &domainMetric{name: "kubevirt_vmi_vcpu_delay_seconds_total", counter: true, help: "Amount of time spent by each vcpu waiting in the queue instead of running."}

	mStorageIopsRead   = &domainMetric{name: "kubevirt_vmi_storage_iops_read_total", counter: true, help: "Total number of I/O read operations."}
	mStorageIopsWrite  = &domainMetric{name: "kubevirt_vmi_storage_iops_write_total", counter: true, help: "Total number of I/O write operations."}
	mStorageReadBytes  = &domainMetric{name: "kubevirt_vmi_storage_read_traffic_bytes_total", counter: true, help: "Total number of bytes read from storage."}
	mStorageWriteBytes = &domainMetric{name: "kubevirt_vmi_storage_write_traffic_bytes_total", counter: true, help: "Total number of written bytes."}
	mStorageReadTimes  = &domainMetric{name: "kubevirt_vmi_storage_read_times_seconds_total", counter: true, help: "Total time spent on read operations."}
	mStorageWriteTimes = &domainMetric{name: "kubevirt_vmi_storage_write_times_seconds_total", counter: true, help: "Total time spent on write operations."}
	mStorageFlushReqs  = &domainMetric{name: "kubevirt_vmi_storage_flush_requests_total", counter: true, help: "Total storage flush requests."}
	mStorageFlushTimes = &domainMetric{name: "kubevirt_vmi_storage_flush_times_seconds_total", counter: true, help: "Total time spent on cache flushing."}

	mNetworkTrafficDeprecated = &domainMetric{name: "kubevirt_vmi_network_traffic_bytes_total", counter: true, help: "[Deprecated] Total number of bytes sent and received."}
	mNetworkReceiveBytes      = &domainMetric{name: "kubevirt_vmi_network_receive_bytes_total", counter: true, help: "Total network traffic received in bytes."}
	mNetworkTransmitBytes     = &domainMetric{name: "kubevirt_vmi_network_transmit_bytes_total", counter: true, help: "Total network traffic transmitted in bytes."}
	mNetworkReceivePackets    = &domainMetric{name: "kubevirt_vmi_network_receive_packets_total", counter: true, help: "Total network traffic received packets."}
	mNetworkTransmitPackets   = &domainMetric{name: "kubevirt_vmi_network_transmit_packets_total", counter: true, help: "Total network traffic transmitted packets."}
	mNetworkReceiveErrors     = &domainMetric{name: "kubevirt_vmi_network_receive_errors_total", counter: true, help: "Total network received error packets."}
	mNetworkTransmitErrors    = &domainMetric{name: "kubevirt_vmi_network_transmit_errors_total", counter: true, help: "Total network transmitted error packets."}
	mNetworkReceiveDropped    = &domainMetric{name: "kubevirt_vmi_network_receive_packets_dropped_total", counter: true, help: "The total number of rx packets dropped on vNIC interfaces."}
	mNetworkTransmitDropped   = &domainMetric{name: "kubevirt_vmi_network_transmit_packets_dropped_total", counter: true, help: "The total number of tx packets dropped on vNIC interfaces."}
)

// The migration metrics, kv:pkg/monitoring/metrics/virt-handler/
// migrationdomainstats/migrationstats_collector.go, labelled with node,
// namespace and name only (no VMI labels). Names moved between releases:
// KubeVirt v1.1 to v1.6 export the memory transfer rate (libvirt's
// memory_bps) as kubevirt_vmi_migration_disk_transfer_rate_bytes (v1.1 also
// had the two names swapped, the disk rate under the memory name), v1.7 on
// as kubevirt_vmi_migration_memory_transfer_rate_bytes; the total was
// kubevirt_vmi_migration_data_total_bytes from v1.5 to v1.7 and is
// kubevirt_vmi_migration_data_bytes_total from v1.8 on (the old name lives
// on as a recording rule). These are v1.9's.
var (
	mMigrationDataTotal     = &domainMetric{name: "kubevirt_vmi_migration_data_bytes_total", counter: true, help: "The total Guest OS data to be migrated to the new VM."}
	mMigrationDataRemaining = &domainMetric{name: "kubevirt_vmi_migration_data_remaining_bytes", help: "The remaining guest OS data to be migrated to the new VM."}
	mMigrationDataProcessed = &domainMetric{name: "kubevirt_vmi_migration_data_processed_bytes", help: "The total Guest OS data processed and migrated to the new VM."}
	mMigrationDirtyRate     = &domainMetric{name: "kubevirt_vmi_migration_dirty_memory_rate_bytes", help: "The rate of memory being dirty in the Guest OS."}
	mMigrationTransferRate  = &domainMetric{name: "kubevirt_vmi_migration_memory_transfer_rate_bytes", help: "The rate at which the memory is being transferred."}
)

// DomainFault is a way the domain stats of one VMI go wrong. Faults are
// switched on and off with SetDomainFault and may be combined.
type DomainFault uint16

const (
	// DomainNotExported: virt-handler serves the node's other domains but
	// not this one, as when the VMI's virt-launcher does not answer on its
	// socket (kv:pkg/monitoring/metrics/virt-handler/collector/collector.go
	// skips a VMI whose socket it cannot find, domainstats/scrapper.go one
	// whose stats fail or come too late). Its migration metrics go too.
	DomainNotExported DomainFault = 1 << iota
	// DomainVCPUFrozen: the vCPUs' time stops advancing (a hung guest or
	// a stalled host): kubevirt_vmi_vcpu_seconds_total, the wait and delay
	// counters stay where they are and the CPU usage counters grow only by
	// QEMU's own overhead. The vCPUs' state stays "running".
	DomainVCPUFrozen
	// DomainMemoryPressure: the guest runs out of memory: usable memory
	// falls to about 4% of available memory (under the 5% of KubeVirt's
	// KubeVirtVMGuestMemoryPressure) and unused memory to 1%, the cache to
	// 3%, the resident set grows to 98% of the domain, swap
	// traffic grows by 2 MiB/s in and 4 MiB/s out and major page faults
	// by 400/s.
	DomainMemoryPressure
	// DomainStorageSlow: every drive's read, write and flush times grow 50
	// times as fast for the same number of operations.
	DomainStorageSlow
	// DomainNetworkErrors: every interface counts 6 receive and 2 transmit
	// errors and 25 received and 10 transmitted packets dropped a second.
	DomainNetworkErrors
	// DomainMigrationNotConverging: during a live migration the guest
	// dirties memory faster (96 MiB/s) than it is sent (64 MiB/s), so the
	// data remaining grows back to the guest's memory size and stays
	// there. Without it a migration converges: 128 MiB/s sent, 16 MiB/s
	// dirtied, the data remaining shrinking by 112 MiB/s.
	DomainMigrationNotConverging
	// DomainUnnamedSeries: the VMI's series lack the name label, as from
	// a broken exporter (virt-handler always sets it).
	DomainUnnamedSeries
	// DomainOddValues: values no healthy exporter sends:
	// kubevirt_vmi_vcpu_seconds_total is NaN,
	// kubevirt_vmi_memory_available_bytes is +Inf,
	// kubevirt_vmi_memory_usable_bytes is -1024 and
	// kubevirt_vmi_network_receive_errors_total is -1.
	DomainOddValues
)

// faultChange is the set of faults in force for a VMI from at on.
type faultChange struct {
	at     time.Time
	faults DomainFault
}

// domainState is what the simulator keeps for the domain stats: each VMI's
// fault history and the nodes whose metrics endpoint is down. The zero
// value is ready to use.
type domainState struct {
	mu      sync.Mutex
	history map[types.NamespacedName][]faultChange
	down    map[string]bool
	// lists are the nodes' VMI lists the exporter answers from
	// (virthandler_metrics.go).
	lists map[string]*nodeVMIList
}

// SetDomainFault switches fault f on (or off) for the VMI ns/name from the
// clock's now on; the counters keep what they counted before. Faults are
// kept by VMI name: they follow the VMI through a migration and apply to a
// VMI created again under the same name. The VMI need not exist yet.
func (s *Simulator) SetDomainFault(ns, name string, f DomainFault, on bool) {
	now := s.Clock()
	d := &s.domains
	d.mu.Lock()
	defer d.mu.Unlock()
	k := types.NamespacedName{Namespace: ns, Name: name}
	h := d.history[k]
	var cur DomainFault
	if len(h) > 0 {
		last := h[len(h)-1]
		cur = last.faults
		// The history must not go back in time, or a counter computed
		// over it could shrink.
		if now.Before(last.at) {
			now = last.at
		}
	}
	next := cur &^ f
	if on {
		next = cur | f
	}
	if next == cur {
		return
	}
	if d.history == nil {
		d.history = map[types.NamespacedName][]faultChange{}
	}
	d.history[k] = append(h, faultChange{at: now, faults: next})
}

// SetVirtHandlerMetricsDown makes node's virt-handler metrics endpoint
// answer 503 Service Unavailable (down) or serve again: Prometheus then
// records up == 0 for the target and marks its series stale.
func (s *Simulator) SetVirtHandlerMetricsDown(node string, down bool) {
	d := &s.domains
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.down == nil {
		d.down = map[string]bool{}
	}
	d.down[node] = down
}

func (s *Simulator) virtHandlerDown(node string) bool {
	d := &s.domains
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.down[node]
}

// faultHistory returns a copy of the VMI's fault history.
func (s *Simulator) faultHistory(ns, name string) []faultChange {
	d := &s.domains
	d.mu.Lock()
	defer d.mu.Unlock()
	h := d.history[types.NamespacedName{Namespace: ns, Name: name}]
	return append([]faultChange(nil), h...)
}

// faultsAt is the set of faults in force at t.
func faultsAt(h []faultChange, t time.Time) DomainFault {
	var f DomainFault
	for _, c := range h {
		if c.at.After(t) {
			break
		}
		f = c.faults
	}
	return f
}

// segment is a stretch of time, in seconds, with one set of faults.
type segment struct {
	faults DomainFault
	secs   float64
}

// segments cuts [from, to] where the fault set changes; nothing when to is
// not after from.
func segments(h []faultChange, from, to time.Time) []segment {
	if !to.After(from) {
		return nil
	}
	var out []segment
	cur, t := DomainFault(0), from
	for _, c := range h {
		if !c.at.After(from) {
			cur = c.faults
			continue
		}
		if !c.at.Before(to) {
			break
		}
		out = append(out, segment{faults: cur, secs: c.at.Sub(t).Seconds()})
		cur, t = c.faults, c.at
	}
	return append(out, segment{faults: cur, secs: to.Sub(t).Seconds()})
}

// integrate is the integral of rate over the segments.
func integrate(segs []segment, rate func(DomainFault) float64) float64 {
	var sum float64
	for _, sg := range segs {
		sum += rate(sg.faults) * sg.secs
	}
	return sum
}

// domainProfile is the steady behaviour of one VMI's guest, from its spec
// and a hash of its name, so the same VMI always looks the same.
type domainProfile struct {
	vcpuUsage []float64 // share of wall time each vCPU runs, 0.1 to 0.6
	memKiB    float64   // guest memory
	drives    []string  // disk names: libvirt's user aliases
	ifaces    []string  // interface names: libvirt's user aliases
	load      float64   // scale of disk and network traffic, 0.5 to 1.5
}

// unit hashes the VMI and a salt to a number in [0, 1).
func unit(vmi *kubevirtv1.VirtualMachineInstance, salt string) float64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(vmi.Namespace + "/" + vmi.Name + "/" + salt))
	return float64(h.Sum64()>>11) / (1 << 53)
}

func profileOf(vmi *kubevirtv1.VirtualMachineInstance) domainProfile {
	p := domainProfile{load: 0.5 + unit(vmi, "load")}
	vcpus := 1
	if t := vmi.Status.CurrentCPUTopology; t != nil && t.Cores*t.Sockets*t.Threads > 0 {
		vcpus = int(t.Cores * t.Sockets * t.Threads)
	} else if c := vmi.Spec.Domain.CPU; c != nil {
		vcpus = int(max(c.Cores, 1) * max(c.Sockets, 1) * max(c.Threads, 1))
	}
	for i := range vcpus {
		p.vcpuUsage = append(p.vcpuUsage, 0.1+0.5*unit(vmi, "vcpu"+strconv.Itoa(i)))
	}
	p.memKiB = 2 << 20 // 2 GiB
	if m := vmi.Spec.Domain.Memory; m != nil && m.Guest != nil {
		p.memKiB = float64(m.Guest.Value() / 1024)
	} else if q, ok := vmi.Spec.Domain.Resources.Requests[corev1.ResourceMemory]; ok {
		p.memKiB = float64(q.Value() / 1024)
	}
	for _, d := range vmi.Spec.Domain.Devices.Disks {
		p.drives = append(p.drives, d.Name)
	}
	for _, i := range vmi.Spec.Domain.Devices.Interfaces {
		p.ifaces = append(p.ifaces, i.Name)
	}
	return p
}

// domainOrigin is when the domain started on the VMI's current node: the
// end of the migration that brought it there (its counters start again in
// the new QEMU process), else its Running phase transition.
func domainOrigin(vmi *kubevirtv1.VirtualMachineInstance) time.Time {
	if ms := vmi.Status.MigrationState; ms != nil && ms.Completed && !ms.Failed &&
		ms.TargetNode == vmi.Status.NodeName && ms.EndTimestamp != nil {
		return ms.EndTimestamp.Time
	}
	for _, ts := range vmi.Status.PhaseTransitionTimestamps {
		if ts.Phase == kubevirtv1.Running {
			return ts.PhaseTransitionTimestamp.Time
		}
	}
	return vmi.CreationTimestamp.Time
}

// sample is one series of the exposition.
type sample struct {
	metric *domainMetric
	labels [][2]string // name, value; in the order given
	value  float64
}

// vmiLabelFormatter and vmiLabelPrefix turn VMI labels into series labels,
// as kv:pkg/monitoring/metrics/virt-handler/domainstats/domainstats.go
// buildRuntimeLabels does.
var vmiLabelFormatter = strings.NewReplacer(".", "_", "/", "_", "-", "_")

const vmiLabelPrefix = "kubernetes_vmi_label_"

// seriesLabels are the labels every domain stats series of the VMI carries
// (newCollectorResultWithLabels): node (the VMI's status.nodeName),
// namespace, name and the VMI's labels, sorted by name.
func seriesLabels(vmi *kubevirtv1.VirtualMachineInstance, named bool) [][2]string {
	out := [][2]string{{"node", vmi.Status.NodeName}, {"namespace", vmi.Namespace}}
	if named {
		out = append(out, [2]string{"name", vmi.Name})
	}
	keys := make([]string, 0, len(vmi.Labels))
	for k := range vmi.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, [2]string{vmiLabelPrefix + vmiLabelFormatter.Replace(k), vmi.Labels[k]})
	}
	return out
}

// Libvirt reports times in nanoseconds, memory in KiB and the rest in
// whole units; virt-handler converts (unit_converter.go). The helpers
// below round the model's values the same way, so the series look like
// libvirt's.
func nanos(secs float64) float64 { return math.Floor(secs*1e9) / 1e9 }
func kib(k float64) float64      { return math.Floor(k) * 1024 }

// The model's rates.
const (
	nodeCores        = 16          // the cores of a node AddNode registers
	qemuOverhead     = 0.02        // CPU seconds a second QEMU spends besides the vCPUs
	readLatency      = 0.0004      // seconds per read
	writeLatency     = 0.0012      // seconds per write
	flushLatency     = 0.002       // seconds per flush
	slowStorage      = 50          // latency factor of DomainStorageSlow
	migrationFastBps = 128 << 20   // transfer rate of a converging migration
	migrationFastDty = 16 << 20    // its dirty rate
	migrationSlowBps = 64 << 20    // transfer rate of DomainMigrationNotConverging
	migrationSlowDty = 96 << 20    // its dirty rate
	swapInKiBps      = 2048        // guest swap-in under memory pressure
	swapOutKiBps     = 4096        // guest swap-out under memory pressure
	networkRxBps     = 40000.0     // received bytes a second on the first interface at load 1
	networkTxBps     = 16000.0     // transmitted bytes a second
	readOpsPerSec    = 30.0        // reads a second on the first drive at load 1
	writeOpsPerSec   = 12.0        // writes a second
	flushOpsPerSec   = 0.5         // flushes a second
	readOpBytes      = 32 * 1024.0 // bytes a read
	writeOpBytes     = 16 * 1024.0 // bytes a write
)

// domainSamples are the series virt-handler on the VMI's node exports for
// its domain at now (kv:.../domainstats/collector.go: memory, cpu, vcpu,
// CPU affinity, block and network metrics), given the VMI's fault history. The caller
// leaves out a VMI with DomainNotExported.
func domainSamples(vmi *kubevirtv1.VirtualMachineInstance, h []faultChange, now time.Time) []sample {
	p := profileOf(vmi)
	segs := segments(h, domainOrigin(vmi), now)
	f := faultsAt(h, now)
	base := seriesLabels(vmi, f&DomainUnnamedSeries == 0)
	odd := f&DomainOddValues != 0
	var out []sample
	add := func(m *domainMetric, v float64, extra ...[2]string) {
		labels := base
		if len(extra) > 0 {
			labels = append(append(make([][2]string, 0, len(base)+len(extra)), base...), extra...)
		}
		out = append(out, sample{metric: m, labels: labels, value: v})
	}
	elapsed := integrate(segs, func(DomainFault) float64 { return 1 })

	// Memory (memory_metrics.go).
	pressure := f&DomainMemoryPressure != 0
	avail := p.memKiB * 15 / 16
	unused, cached, resident := avail*(0.3+0.1*unit(vmi, "unused")), avail*0.2, p.memKiB*0.6
	if pressure {
		unused, cached, resident = avail*0.01, avail*0.03, p.memKiB*0.98
	}
	usable := unused + cached*0.9
	on := func(fault DomainFault, yes, no float64) func(DomainFault) float64 {
		return func(f DomainFault) float64 {
			if f&fault != 0 {
				return yes
			}
			return no
		}
	}
	add(mMemoryResident, kib(resident))
	availV, usableV := kib(avail), kib(usable)
	if odd {
		availV, usableV = math.Inf(1), -1024
	}
	add(mMemoryAvailable, availV)
	add(mMemoryUnused, kib(unused))
	add(mMemoryCached, kib(cached))
	add(mMemorySwapIn, kib(integrate(segs, on(DomainMemoryPressure|DomainSwapWithHeadroom, swapInKiBps, 0))))
	add(mMemorySwapOut, kib(integrate(segs, on(DomainMemoryPressure|DomainSwapWithHeadroom, swapOutKiBps, 0))))
	add(mMemoryPgmajfault, math.Floor(integrate(segs, on(DomainMemoryPressure, 400, 0.5))))
	add(mMemoryPgminfault, math.Floor(integrate(segs, on(DomainMemoryPressure, 2000, 150))))
	add(mMemoryBalloon, kib(p.memKiB))
	add(mMemoryUsable, usableV)
	add(mMemoryDomain, kib(p.memKiB))

	// vCPUs (vcpu_metrics.go) and the whole domain's CPU (cpu_metrics.go).
	var vcpuTotal float64
	for i, u := range p.vcpuUsage {
		id := [2]string{"id", strconv.Itoa(i)}
		run := integrate(segs, on(DomainVCPUFrozen, 0, u))
		vcpuTotal += run
		v := nanos(run)
		if odd {
			v = math.NaN()
		}
		add(mVCPUSeconds, v, id, [2]string{"state", "running"})
		add(mVCPUWait, nanos(run*0.01), id)
		add(mVCPUDelay, nanos(run*0.03), id)
	}
	// No vCPU is pinned: each may run on every core of the node.
	add(mNodeCPUAffinity, float64(len(p.vcpuUsage)*nodeCores))
	add(mCPUUsage, nanos(vcpuTotal+qemuOverhead*elapsed))
	add(mCPUUser, nanos(vcpuTotal*0.9+qemuOverhead/4*elapsed))
	add(mCPUSystem, nanos(vcpuTotal*0.1+qemuOverhead*3/4*elapsed))

	// Drives (block_metrics.go), labelled with the disk's alias, its name
	// in the VMI spec.
	slow := on(DomainStorageSlow, slowStorage, 1)
	for j, d := range p.drives {
		scale := p.load
		if j > 0 {
			scale *= 0.05
		}
		drive := [2]string{"drive", d}
		add(mStorageIopsRead, math.Floor(readOpsPerSec*scale*elapsed), drive)
		add(mStorageIopsWrite, math.Floor(writeOpsPerSec*scale*elapsed), drive)
		add(mStorageReadBytes, math.Floor(readOpsPerSec*scale*elapsed)*readOpBytes, drive)
		add(mStorageWriteBytes, math.Floor(writeOpsPerSec*scale*elapsed)*writeOpBytes, drive)
		add(mStorageReadTimes, nanos(integrate(segs, func(f DomainFault) float64 { return readOpsPerSec * scale * readLatency * slow(f) })), drive)
		add(mStorageWriteTimes, nanos(integrate(segs, func(f DomainFault) float64 { return writeOpsPerSec * scale * writeLatency * slow(f) })), drive)
		add(mStorageFlushReqs, math.Floor(flushOpsPerSec*scale*elapsed), drive)
		add(mStorageFlushTimes, nanos(integrate(segs, func(f DomainFault) float64 { return flushOpsPerSec * scale * flushLatency * slow(f) })), drive)
	}

	// Interfaces (network_metrics.go), labelled with the interface's
	// alias, its name in the VMI spec.
	for k, name := range p.ifaces {
		scale := p.load
		if k > 0 {
			scale *= 0.3
		}
		iface := [2]string{"interface", name}
		rx, tx := math.Floor(networkRxBps*scale*elapsed), math.Floor(networkTxBps*scale*elapsed)
		add(mNetworkTrafficDeprecated, rx, iface, [2]string{"type", "rx"})
		add(mNetworkReceiveBytes, rx, iface)
		add(mNetworkTrafficDeprecated, tx, iface, [2]string{"type", "tx"})
		add(mNetworkTransmitBytes, tx, iface)
		add(mNetworkReceivePackets, math.Floor(rx/800), iface)
		add(mNetworkTransmitPackets, math.Floor(tx/600), iface)
		rxErrs := math.Floor(integrate(segs, on(DomainNetworkErrors, 6, 0)))
		if odd {
			rxErrs = -1
		}
		add(mNetworkReceiveErrors, rxErrs, iface)
		add(mNetworkTransmitErrors, math.Floor(integrate(segs, on(DomainNetworkErrors, 2, 0))), iface)
		add(mNetworkReceiveDropped, math.Floor(integrate(segs, on(DomainNetworkErrors, 25, 0))), iface)
		add(mNetworkTransmitDropped, math.Floor(integrate(segs, on(DomainNetworkErrors, 10, 0))), iface)
	}
	return out
}

// migrating says the VMI's live migration is under way with the domain job
// running on its source, the VMI's node: virt-handler polls the job's stats
// from the migration's start (migrationState set, not completed) and only
// the source's virt-handler has the VMI in its informer (kv:cmd/virt-handler
// passes vmiSourceInformer, the VMIs labelled with its node, to
// migrationdomainstats.SetupMigrationStatsCollector); libvirt reports a job
// once the source has started it (startTimestamp).
func migrating(vmi *kubevirtv1.VirtualMachineInstance) bool {
	ms := vmi.Status.MigrationState
	return ms != nil && !ms.Completed && ms.StartTimestamp != nil && ms.SourceNode == vmi.Status.NodeName
}

// migrationSamples are the migration metrics of a migrating VMI at now
// (migrationstats_collector.go parse and newCR): labels node, namespace and
// name. KubeVirt stamps each with the time it polled libvirt (every 5 s,
// kept until the next scrape); the simulator's carry no timestamp, so
// Prometheus stamps them with the scrape's time, as it must for a fake
// clock.
func migrationSamples(vmi *kubevirtv1.VirtualMachineInstance, h []faultChange, now time.Time) []sample {
	if !migrating(vmi) {
		return nil
	}
	p := profileOf(vmi)
	total := p.memKiB * 1024
	processed, remaining := 0.0, total
	for _, sg := range segments(h, vmi.Status.MigrationState.StartTimestamp.Time, now) {
		bps, dirty := rates(sg.faults)
		processed += bps * sg.secs
		remaining = min(max(remaining+(dirty-bps)*sg.secs, 0), total)
	}
	f := faultsAt(h, now)
	bps, dirty := rates(f)
	labels := [][2]string{{"namespace", vmi.Namespace}, {"node", vmi.Status.NodeName}}
	if f&DomainUnnamedSeries == 0 {
		labels = append(labels, [2]string{"name", vmi.Name})
	}
	return []sample{
		{metric: mMigrationDataTotal, labels: labels, value: total},
		{metric: mMigrationDataRemaining, labels: labels, value: math.Floor(remaining)},
		{metric: mMigrationDataProcessed, labels: labels, value: math.Floor(processed)},
		{metric: mMigrationDirtyRate, labels: labels, value: dirty},
		{metric: mMigrationTransferRate, labels: labels, value: bps},
	}
}

// rates are a migration's transfer and dirty rates, in bytes a second.
func rates(f DomainFault) (bps, dirty float64) {
	if f&DomainMigrationNotConverging != 0 {
		return migrationSlowBps, migrationSlowDty
	}
	return migrationFastBps, migrationFastDty
}
