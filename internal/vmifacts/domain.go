// Package vmifacts holds what the fact sources outside the cluster's
// objects (internal/domainstats, internal/guestprobe) fold for one VMI and
// hand to the engine (internal/verdict): the types they exchange, and the
// few judgements both sides make alike. It imports neither side, so the
// sources never import the engine.
package vmifacts

import (
	"math"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// DomainFacts is what virt-handler's domain stats (libvirt's view of the
// running domain, kv:pkg/monitoring/metrics/virt-handler/domainstats) say of
// one VMI, read from Prometheus with fleet-wide queries and folded by
// internal/domainstats. The fold rounds every value to a bucket and keeps
// the times at which a state began, so the facts change only when a bucket
// or a state does, and the engine turns the states into deadlines like any
// other evidence.
type DomainFacts struct {
	// Unavailable, when not empty, says why domain stats cannot be read
	// (Prometheus down, refused, or holding no KubeVirt series at all).
	// Every other field is then zero: no rule judges on them, and the node
	// layer notes it (DomainStatsUnavailable).
	Unavailable string
	// VMIUID is the VMI the facts were folded for. Facts for another UID
	// (a VMI recreated under the same name) are not this VMI's.
	VMIUID types.UID
	// SampledAt is the evaluation time of the query that put the values in
	// their current buckets.
	SampledAt time.Time

	// Exported says virt-handler exports series for the domain.
	Exported bool
	// Node is the node label of the domain's series.
	Node string
	// NodeExports says virt-handler on the VMI's node exports series for
	// other VMIs: a domain missing from a node that exports others is one
	// virt-handler cannot read from its virt-launcher.
	NodeExports bool
	// NodeRunsOthers says other Running VMIs name the VMI's node: only then
	// does a node that exports nothing say its exporter (or its scrape) is
	// down, rather than that its one domain cannot be read.
	NodeRunsOthers bool
	// MissingSince is the first sample without the domain's series, while
	// it has none.
	MissingSince time.Time

	// VCPUUsage is vCPU time per second, in cores.
	VCPUUsage Value
	// VCPUStalledSince is the first sample whose window saw no vCPU time
	// at all, while that lasts; zero while the vCPUs run or it is not known.
	VCPUStalledSince time.Time

	// MemoryDomain is the memory the domain was given (the domain XML's
	// memory), MemoryAvailable the memory the guest sees, MemoryUsable
	// what the guest can still use without swapping (the balloon's
	// "usable" statistic, /proc/meminfo's MemAvailable; absent when the
	// guest's driver does not report it: MemFree, the "unused" statistic,
	// is no substitute, since the page cache keeps it low on a healthy
	// guest).
	MemoryDomain, MemoryAvailable, MemoryUsable Value
	// SwapRate is swap traffic, in and out, in bytes per second.
	SwapRate Value
	// MajorFaultRate is the guest's major page faults per second (page
	// faults that needed disk I/O).
	MajorFaultRate Value
	// MemoryPressureSince is the first sample, while it lasts, at which the
	// guest had little memory headroom and thrashed (MemoryThresholds.Pressure
	// with the controller's thresholds); zero otherwise.
	MemoryPressureSince time.Time
	// GuestPanics is the guest OS panics virt-handler counted within the
	// rate window (kubevirt_vmi_guest_os_panic_total, KubeVirt v1.9 and
	// later); absent on older KubeVirt and for guests that never panicked.
	GuestPanics Value

	// StorageLatency is the time per I/O operation over all drives in
	// seconds, StorageBaseline the VM's usual time per operation, kept by
	// the fold from earlier samples that were not slow.
	StorageLatency, StorageBaseline Value
	// StorageReadRate and StorageWriteRate are bytes per second.
	StorageReadRate, StorageWriteRate Value

	// NetworkReceiveRate and NetworkTransmitRate are bytes per second;
	// NetworkErrorRate is receive and transmit errors and transmit drops
	// (packets the host dropped on their way out of the guest) per second;
	// NetworkReceiveDropRate is receive drops per second: packets the
	// guest did not take (its NIC down or unconfigured, its ring full).
	NetworkReceiveRate, NetworkTransmitRate, NetworkErrorRate, NetworkReceiveDropRate Value

	// MigrationDataRemaining, MigrationDirtyRate and MigrationTransferRate
	// are the source domain's migration job (bytes, bytes per second);
	// present only while a live migration runs.
	MigrationDataRemaining, MigrationDirtyRate, MigrationTransferRate Value
	// MigrationNotShrinking counts the consecutive samples of this
	// migration, each newer than the one before, in which the data
	// remaining did not shrink.
	MigrationNotShrinking int32
}

// Valid is v when it is a number the rules can judge; a value that is not
// finite or is negative is absent, whatever OK says.
func (v Value) Valid() (float64, bool) {
	if !v.OK || !(v.V >= 0) || math.IsInf(v.V, 1) {
		return 0, false
	}
	return v.V, true
}

// MemoryThresholds judge a domain's memory: the controller's
// --guest-memory-available-percent, --guest-swap-rate and
// --guest-major-fault-rate. The domain stats fold keeps the onset of
// pressure with the controller's (DomainFacts.MemoryPressureSince); the
// engine judges the same facts with the VM's.
type MemoryThresholds struct {
	// AvailablePercent: usable memory under this share of the guest's
	// memory is low headroom.
	AvailablePercent int32
	// SwapRate: swap traffic at or above this many bytes per second is
	// thrashing.
	SwapRate float64
	// MajorFaultRate: major page faults above this many per second are
	// thrashing.
	MajorFaultRate float64
}

// MemoryState is a domain's memory judged by MemoryThresholds.
type MemoryState struct {
	Available, Usable, Swap, Faults float64
	// Low: usable memory under AvailablePercent of available.
	Low bool
	// Swapping and Faulting: swap or major faults at or above their rate.
	Swapping, Faulting bool
}

// Thrashing says the guest swaps or faults at its rate.
func (m MemoryState) Thrashing() bool { return m.Swapping || m.Faulting }

// State judges d's memory.
func (t MemoryThresholds) State(d *DomainFacts) MemoryState {
	var m MemoryState
	var okAvail, okUsable, okSwap, okFaults bool
	m.Available, okAvail = d.MemoryAvailable.Valid()
	m.Usable, okUsable = d.MemoryUsable.Valid()
	m.Swap, okSwap = d.SwapRate.Valid()
	m.Faults, okFaults = d.MajorFaultRate.Valid()
	m.Low = okAvail && m.Available > 0 && okUsable && m.Usable*100 < m.Available*float64(t.AvailablePercent)
	m.Swapping = okSwap && m.Swap >= t.SwapRate
	// KubeVirt's alert: rate(pgmajfault) > 5, strictly above.
	m.Faulting = okFaults && m.Faults > t.MajorFaultRate
	return m
}

// Pressure says whether d's memory is under pressure: low headroom and
// thrashing.
func (t MemoryThresholds) Pressure(d *DomainFacts) bool {
	m := t.State(d)
	return m.Low && m.Thrashing()
}

// Value is one folded sample; OK is false when the series is absent or its
// value is not a finite, non-negative number.
type Value struct {
	V  float64
	OK bool
}

// Scoped is what every source's facts of a VMI say besides what they
// hold: the VMI they were folded for and, when the source cannot be read,
// why; and whether they hold data at all. The engine reads facts only
// through this gate (verdict's vmiFacts and vmiData), so a new source's
// facts type implements it.
type Scoped interface {
	Scope() (vmi types.UID, unavailable string)
	// HasData says the source has something of the VMI to report: virt-
	// handler exports its domain's series, a probe of it was answered.
	HasData() bool
}

// Scope implements Scoped.
func (d *DomainFacts) Scope() (types.UID, string) { return d.VMIUID, d.Unavailable }

// HasData implements Scoped: virt-handler exports the domain's series.
func (d *DomainFacts) HasData() bool { return d.Exported }

// Scope implements Scoped.
func (g *GuestFacts) Scope() (types.UID, string) { return g.VMIUID, g.Unavailable }

// HasData implements Scoped: a probe was answered at least once.
func (g *GuestFacts) HasData() bool { return g.Answered }
