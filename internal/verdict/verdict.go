// Package verdict folds everything KubeVirt says about one VM into the
// VMObservation status: a verdict per layer with reasons, evidence and the
// deadline at which the verdict could change with no object changing. It is
// pure: no client, no clock, no globals. The controller and `vmobs analyze`
// call the same Evaluate.
package verdict

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/storagefacts"
	"github.com/vmobs/vmobs/internal/vmifacts"
)

// Policy holds the thresholds of the rules. A zero or negative duration
// takes its DefaultPolicy value, so a Policy built field by field cannot turn
// a threshold into "immediately".
type Policy struct {
	// SchedulingTimeout: Pending/Scheduling longer than this is StuckScheduling.
	SchedulingTimeout time.Duration
	// MigrationPhaseTimeout: a migration in one phase longer than this is stuck.
	MigrationPhaseTimeout time.Duration
	// HeartbeatTimeout: a kubevirt.io/heartbeat older than this is stale.
	HeartbeatTimeout time.Duration
	// AgentGracePeriod: time after Running for the guest agent to connect.
	AgentGracePeriod time.Duration
	// GuestDataMaxAge: how long guest data is trusted (the agent polls every 120s).
	// The engine does not turn it into a deadline: the VMI is written only on
	// change, so the age of guest data says nothing; the guest layer goes
	// stale with the node's heartbeat instead (docs/verdicts.md).
	GuestDataMaxAge time.Duration
	// StalledAfter: Degraded for longer than this sets Stalled=True.
	StalledAfter time.Duration
	// GuestAgentExpected: a missing agent is Degraded rather than a note.
	GuestAgentExpected bool
	// LagGrace: how long objects may contradict each other (status lags
	// reality by design) before the contradiction becomes a verdict.
	LagGrace time.Duration
	// MigrationFailureTTL: how long a failed migration keeps the VM
	// Degraded when nothing requires the VMI to move (no eviction, no
	// MigrationRequired); after it the failure is a note
	// (LastMigrationFailed). It has no spec override yet.
	MigrationFailureTTL time.Duration
	// RenewingEvidence puts what renewing sources say now (virt-handler's
	// heartbeat) into the status: the heartbeat's value and time as
	// evidence, and its deadline as staleAt. Such a status is true only
	// while it is rewritten (the controller's opt-in evidence refresh).
	// Off, a renewing source is cited by its state ("fresh"), its deadline
	// is only Result.NextDeadline, and the status changes only when the
	// evidence of a verdict does (docs/verdicts.md, Freshness).
	RenewingEvidence bool

	// HotplugTimeout: a memory or CPU hotplug requested and not applied
	// for longer than this is HotplugStuck.
	HotplugTimeout time.Duration
	// FilesystemsFrozenAfter: filesystems frozen longer than this are
	// FilesystemsFrozen.
	FilesystemsFrozenAfter time.Duration

	// DomainStatsInterval is how often domain stats are read from
	// Prometheus (the controller's --domain-stats-interval; no spec
	// override). With DomainStatsGrace it says when a Running VMI must
	// have been sampled.
	DomainStatsInterval time.Duration
	// DomainStatsGrace is added to two intervals: a VMI Running longer than
	// that with no series is DomainStatsMissing.
	DomainStatsGrace time.Duration
	// GuestCPUStalledAfter: vCPU time standing still longer than this is
	// GuestCPUStalled.
	GuestCPUStalledAfter time.Duration
	// GuestMemoryAvailablePercent: usable memory under this share of the
	// guest's memory is low headroom (a note; with thrashing,
	// GuestMemoryPressure).
	GuestMemoryAvailablePercent int32
	// GuestSwapRate: with low headroom, swap traffic at or above this many
	// bytes per second is thrashing (GuestMemoryPressure).
	GuestSwapRate float64
	// StorageSlowFactor and StorageSlowLatency: the time per I/O operation
	// at or above both factor × the VM's baseline and the latency is
	// StorageSlow.
	StorageSlowFactor  int32
	StorageSlowLatency time.Duration
	// NetworkErrorRate: errors and transmit drops at or above this many per
	// second are NetworkErrors; receive drops at this rate are a note
	// (GuestNetworkDrops).
	NetworkErrorRate float64
	// MigrationNotConvergingSamples: remaining data that has not shrunk
	// over this many samples is MigrationNotConverging.
	MigrationNotConvergingSamples int32

	// FilesystemUsedPercent: a guest filesystem used at or above this
	// share for FilesystemFullFor is FilesystemNearlyFull (KubeVirt's
	// GuestFilesystemAlmostOutOfSpace warning: 85% for 10m).
	FilesystemUsedPercent int32
	// AgentUnresponsiveProbes: this many failed probes in a row of a VMI
	// whose agent it calls connected is GuestInfoUnreachable (node layer;
	// the name is kept from the AgentUnresponsive reason it replaced).
	AgentUnresponsiveProbes int32

	// GuestMajorFaultRate: major page faults above this many per second,
	// with low memory headroom, are thrashing (GuestMemoryPressure), as in
	// KubeVirt's KubeVirtVMGuestMemoryPressure alert (> 5/s).
	GuestMajorFaultRate float64
	// GuestMemoryPressureAfter: low headroom and thrashing must last this
	// long to be GuestMemoryPressure (the alert's "for: 5m").
	GuestMemoryPressureAfter time.Duration
	// MigrationPendingPodTimeout: a migration in Scheduling (its target
	// pod pending) longer than this is MigrationStuck, unless the VMIM's
	// kubevirt.io/migrationPendingPodTimeoutSeconds annotation says
	// otherwise. KubeVirt's catch-all for a pending target pod is 15
	// minutes (kv:pkg/virt-controller/watch/migration/migration.go
	// defaultCatchAllPendingTimeoutSeconds).
	MigrationPendingPodTimeout time.Duration
	// UnhealthyStateTimeout: a VM that waits for its volumes (Provisioning,
	// WaitingForVolumeBinding) or, with its VMI not in the input, for a
	// start longer than this is stuck. KubeVirt's
	// VirtualMachineStuckInUnhealthyState alert waits 10 minutes
	// (kv:pkg/monitoring/rules/alerts/vms.go).
	UnhealthyStateTimeout time.Duration
	// HotplugVolumeTimeout: a hotplugged volume that is not Ready for
	// longer than this (since vmobs first saw it so) is HotplugVolumeStuck.
	HotplugVolumeTimeout time.Duration
	// FilesystemCriticalPercent: a guest filesystem used at or above this
	// share is FilesystemNearlyFull at once (KubeVirt's critical
	// GuestFilesystemAlmostOutOfSpace: 95%, no duration). No spec override.
	FilesystemCriticalPercent int32
	// FilesystemFullFor: how long a guest filesystem must stay at or above
	// FilesystemUsedPercent to be FilesystemNearlyFull. No spec override.
	FilesystemFullFor time.Duration
	// HistoryLimit: how many entries status.history keeps (internal/history).
	HistoryLimit int32
	// VolumeBindingTimeout: a claim Pending longer than this since its
	// creation (one whose StorageClass binds at once, or a
	// WaitForFirstConsumer one whose node is chosen) is VolumeNotBound and
	// Degraded. KubeVirt's VirtualMachineStuckInUnhealthyState alert waits
	// 10 minutes for a VM WaitingForVolumeBinding.
	VolumeBindingTimeout time.Duration
}

// DefaultPolicy returns the documented defaults.
func DefaultPolicy() Policy {
	return Policy{
		SchedulingTimeout:     10 * time.Minute,
		MigrationPhaseTimeout: 5 * time.Minute,
		HeartbeatTimeout:      5 * time.Minute,
		AgentGracePeriod:      5 * time.Minute,
		GuestDataMaxAge:       10 * time.Minute,
		StalledAfter:          15 * time.Minute,
		GuestAgentExpected:    false,
		MigrationFailureTTL:   time.Hour,
		LagGrace:              10 * time.Second,

		HotplugTimeout:         5 * time.Minute,
		FilesystemsFrozenAfter: 10 * time.Minute,

		DomainStatsInterval:           time.Minute,
		DomainStatsGrace:              time.Minute,
		GuestCPUStalledAfter:          3 * time.Minute,
		GuestMemoryAvailablePercent:   5,
		GuestSwapRate:                 1 << 20,
		StorageSlowFactor:             10,
		StorageSlowLatency:            50 * time.Millisecond,
		NetworkErrorRate:              1,
		MigrationNotConvergingSamples: 3,
		FilesystemUsedPercent:         85,
		AgentUnresponsiveProbes:       3,
		GuestMajorFaultRate:           5,
		GuestMemoryPressureAfter:      5 * time.Minute,

		MigrationPendingPodTimeout: 15 * time.Minute,
		UnhealthyStateTimeout:      10 * time.Minute,
		HotplugVolumeTimeout:       10 * time.Minute,
		FilesystemCriticalPercent:  95,
		FilesystemFullFor:          10 * time.Minute,
		HistoryLimit:               20,
		VolumeBindingTimeout:       10 * time.Minute,
	}
}

// withDefaults fills zero or negative durations from DefaultPolicy.
func (p Policy) withDefaults() Policy {
	d := DefaultPolicy()
	for _, f := range [...]struct{ v, def *time.Duration }{
		{&p.SchedulingTimeout, &d.SchedulingTimeout},
		{&p.MigrationPhaseTimeout, &d.MigrationPhaseTimeout},
		{&p.HeartbeatTimeout, &d.HeartbeatTimeout},
		{&p.AgentGracePeriod, &d.AgentGracePeriod},
		{&p.GuestDataMaxAge, &d.GuestDataMaxAge},
		{&p.StalledAfter, &d.StalledAfter},
		{&p.MigrationFailureTTL, &d.MigrationFailureTTL},
		{&p.LagGrace, &d.LagGrace},
		{&p.HotplugTimeout, &d.HotplugTimeout},
		{&p.FilesystemsFrozenAfter, &d.FilesystemsFrozenAfter},
		{&p.DomainStatsInterval, &d.DomainStatsInterval},
		{&p.DomainStatsGrace, &d.DomainStatsGrace},
		{&p.GuestCPUStalledAfter, &d.GuestCPUStalledAfter},
		{&p.StorageSlowLatency, &d.StorageSlowLatency},
		{&p.GuestMemoryPressureAfter, &d.GuestMemoryPressureAfter},
		{&p.MigrationPendingPodTimeout, &d.MigrationPendingPodTimeout},
		{&p.UnhealthyStateTimeout, &d.UnhealthyStateTimeout},
		{&p.HotplugVolumeTimeout, &d.HotplugVolumeTimeout},
		{&p.FilesystemFullFor, &d.FilesystemFullFor},
		{&p.VolumeBindingTimeout, &d.VolumeBindingTimeout},
	} {
		if *f.v <= 0 {
			*f.v = *f.def
		}
	}
	for _, f := range [...]struct{ v, def *int32 }{
		{&p.GuestMemoryAvailablePercent, &d.GuestMemoryAvailablePercent},
		{&p.StorageSlowFactor, &d.StorageSlowFactor},
		{&p.MigrationNotConvergingSamples, &d.MigrationNotConvergingSamples},
		{&p.FilesystemUsedPercent, &d.FilesystemUsedPercent},
		{&p.AgentUnresponsiveProbes, &d.AgentUnresponsiveProbes},
		{&p.FilesystemCriticalPercent, &d.FilesystemCriticalPercent},
		{&p.HistoryLimit, &d.HistoryLimit},
	} {
		if *f.v <= 0 {
			*f.v = *f.def
		}
	}
	// A rate that is not a positive number (NaN included) takes its default.
	for _, f := range [...]struct{ v, def *float64 }{
		{&p.GuestSwapRate, &d.GuestSwapRate},
		{&p.NetworkErrorRate, &d.NetworkErrorRate},
		{&p.GuestMajorFaultRate, &d.GuestMajorFaultRate},
	} {
		if !(*f.v > 0) {
			*f.v = *f.def
		}
	}
	return p
}

// WithOverrides returns p with the VMObservation's spec overrides applied.
func (p Policy) WithOverrides(o *v1alpha1.PolicyOverrides) Policy {
	if o == nil {
		return p
	}
	set := func(dst *time.Duration, d interface{ Nanoseconds() int64 }, ok bool) {
		if ok && d.Nanoseconds() > 0 {
			*dst = time.Duration(d.Nanoseconds())
		}
	}
	if o.SchedulingTimeout != nil {
		set(&p.SchedulingTimeout, o.SchedulingTimeout.Duration, true)
	}
	if o.MigrationPhaseTimeout != nil {
		set(&p.MigrationPhaseTimeout, o.MigrationPhaseTimeout.Duration, true)
	}
	if o.HeartbeatTimeout != nil {
		set(&p.HeartbeatTimeout, o.HeartbeatTimeout.Duration, true)
	}
	if o.AgentGracePeriod != nil {
		set(&p.AgentGracePeriod, o.AgentGracePeriod.Duration, true)
	}
	if o.StalledAfter != nil {
		set(&p.StalledAfter, o.StalledAfter.Duration, true)
	}
	if o.LagGrace != nil {
		set(&p.LagGrace, o.LagGrace.Duration, true)
	}
	if o.GuestAgentExpected != nil {
		p.GuestAgentExpected = *o.GuestAgentExpected
	}
	for _, d := range [...]struct {
		dst *time.Duration
		src *metav1.Duration
	}{
		{&p.HotplugTimeout, o.HotplugTimeout},
		{&p.FilesystemsFrozenAfter, o.FilesystemsFrozenAfter},
		{&p.DomainStatsGrace, o.DomainStatsGrace},
		{&p.GuestCPUStalledAfter, o.GuestCPUStalledAfter},
		{&p.StorageSlowLatency, o.StorageSlowLatency},
		{&p.GuestMemoryPressureAfter, o.GuestMemoryPressureAfter},
		{&p.VolumeBindingTimeout, o.VolumeBindingTimeout},
		{&p.HotplugVolumeTimeout, o.HotplugVolumeTimeout},
	} {
		if d.src != nil {
			set(d.dst, d.src.Duration, true)
		}
	}
	for _, n := range [...]struct {
		dst *int32
		src *int32
	}{
		{&p.GuestMemoryAvailablePercent, o.GuestMemoryAvailablePercent},
		{&p.StorageSlowFactor, o.StorageSlowFactor},
		{&p.MigrationNotConvergingSamples, o.MigrationNotConvergingSamples},
		{&p.FilesystemUsedPercent, o.FilesystemUsedPercent},
		{&p.AgentUnresponsiveProbes, o.AgentUnresponsiveProbes},
		{&p.HistoryLimit, o.HistoryLimit},
	} {
		if n.src != nil && *n.src > 0 {
			*n.dst = *n.src
		}
	}
	for _, q := range [...]struct {
		dst *float64
		src *resource.Quantity
	}{
		{&p.GuestSwapRate, o.GuestSwapRate},
		{&p.NetworkErrorRate, o.NetworkErrorRate},
		{&p.GuestMajorFaultRate, o.GuestMajorFaultRate},
	} {
		if q.src != nil && q.src.Sign() > 0 {
			*q.dst = q.src.AsApproximateFloat64()
		}
	}
	return p
}

// Input is everything the status depends on, gathered by the caller.
type Input struct {
	// Name and Namespace of the VM (and VMI, and VMObservation).
	Namespace, Name string
	// VM may be nil (a VMI created without a VM).
	VM *kubevirtv1.VirtualMachine
	// VMI is nil when the VM is stopped.
	VMI *kubevirtv1.VirtualMachineInstance
	// Migrations are the VMIMs whose spec.vmiName is the VMI, in any order.
	Migrations []*kubevirtv1.VirtualMachineInstanceMigration
	// Pods are the virt-launcher pods whose controller is the VMI, in any order.
	Pods []*corev1.Pod
	// Nodes by name: the nodes the pods and the VMI name. A missing entry
	// means the Node object does not exist, unless Uncaptured says the
	// input holds no Node at all.
	Nodes map[string]*corev1.Node
	// Uncaptured names the kinds the input holds none of: a dump that left
	// them out (vmobs analyze on a pasted VMI). There an absent launcher
	// pod or Node is not evidence of anything, and the node layer rests on
	// what the VMI says of them. The controller's cache holds every kind:
	// it leaves this zero.
	Uncaptured Uncaptured
	// Policy holds the thresholds.
	Policy Policy
	// Domain is what virt-handler's domain stats say of the VMI's domain,
	// read from Prometheus and folded by internal/domainstats; nil when the
	// controller does not read them (no --prometheus-url) or has not
	// sampled this VMI yet: no rule reads domain stats then.
	Domain *vmifacts.DomainFacts
	// Guest is what the controller's probes of the guest agent through
	// virt-api's subresources returned, folded by internal/guestprobe; nil
	// when the controller does not probe (--guest-probe-interval 0) or has
	// not probed this VMI yet: no rule reads probe results then.
	Guest *vmifacts.GuestFacts
	// Storage is what the VM's claims, DataVolumes, VolumeAttachments and
	// Warning Events say (internal/storagefacts); nil when the caller did
	// not read them: the storage layer then judges only what the VM and
	// VMI say.
	Storage *storagefacts.Facts
	// Previous is the status stored before, if any; it keeps
	// lastTransitionTime stable across evaluations, and a verdict kept
	// through the lag grace. Its layers' messages may be missing: see
	// Result.NeedsMessages.
	Previous *v1alpha1.VMObservationStatus
	// Now is the evaluation time.
	Now time.Time
}

// Uncaptured names the kinds of object the input does not carry at all.
type Uncaptured struct {
	VMIs, Pods, Nodes bool
}

// Result is the computed status and when to look again.
type Result struct {
	// Status is the whole status except observedGeneration, which the
	// caller sets.
	Status v1alpha1.VMObservationStatus
	Deadlines
	// NeedsMessages says a layer kept its previous verdict through the lag
	// grace and Input.Previous did not hold that verdict's message (a
	// previous status read from the manager's cache, which keeps none of
	// the layers' messages): Status carries the verdict without it, and
	// the caller evaluates again with the stored status whole
	// (projection.PreviousOf). A kept verdict is rare, a lag of seconds
	// at a handoff; the read is paid only then.
	NeedsMessages bool
}

// Deadlines say when the verdict could change with no object changing: the
// engine's answer to "when to look again", which the controller turns into
// a requeue or a node's heartbeat timer (controllers/look.go).
type Deadlines struct {
	// NextDeadline is the time until the nearest deadline at which the
	// verdict could change with no object changing; 0 means none.
	NextDeadline time.Duration
	// Renews says that NextDeadline is a renewing source's (virt-handler's
	// heartbeat, renewed every minute): at it the verdict usually does not
	// change, so a look then can wait behind other work.
	Renews bool
	// FixedDeadline is the time until the nearest deadline that is not a
	// renewing source's (a timeout, a lag grace); 0 means none. With
	// Renews, NextDeadline is earlier than it.
	FixedDeadline time.Duration
	// RenewsOn names the node whose virt-handler heartbeat NextDeadline is
	// the deadline of, and RenewedAt is that heartbeat, when Renews: the
	// deadline moves with the next heartbeat, by as much as it does.
	RenewsOn  string
	RenewedAt time.Time
}
