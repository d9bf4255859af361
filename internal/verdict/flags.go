package verdict

import (
	"flag"
	"fmt"
)

// PolicyFlags hold a Policy's flags on a command line (Policy.BindFlags):
// Validate checks what they were given and completes the Policy. The
// int32 thresholds are read as int, as the flag package has no int32, and
// range checked.
type PolicyFlags struct {
	ints []intFlag
}

// intFlag is an int32 threshold read as int: the flag's value, its range
// and where it goes.
type intFlag struct {
	name     string
	v        int
	min, max int
	dst      *int32
}

// BindFlags defines the flags of p's thresholds on fs, defaulting to p's
// values; the returned PolicyFlags' Validate must run after the parse.
func (p *Policy) BindFlags(fs *flag.FlagSet) *PolicyFlags {
	fs.DurationVar(&p.SchedulingTimeout, "scheduling-timeout", p.SchedulingTimeout, "Pending/Scheduling longer than this is StuckScheduling.")
	fs.DurationVar(&p.MigrationPhaseTimeout, "migration-phase-timeout", p.MigrationPhaseTimeout, "A migration in one phase longer than this is stuck.")
	fs.DurationVar(&p.HeartbeatTimeout, "heartbeat-timeout", p.HeartbeatTimeout, "virt-handler heartbeat older than this makes the node layer Unknown.")
	fs.DurationVar(&p.AgentGracePeriod, "agent-grace-period", p.AgentGracePeriod, "Time after Running for the guest agent to connect.")
	fs.DurationVar(&p.StalledAfter, "stalled-after", p.StalledAfter, "A layer Degraded longer than this sets Stalled=True.")
	fs.DurationVar(&p.LagGrace, "lag-grace", p.LagGrace, "How long KubeVirt's objects may contradict each other (status lags reality: a migration's handoff, a pod Ready before the VMI follows) before the contradiction becomes a verdict.")
	fs.BoolVar(&p.GuestAgentExpected, "guest-agent-expected", p.GuestAgentExpected, "A missing guest agent is Degraded rather than a note.")
	fs.DurationVar(&p.HotplugTimeout, "hotplug-timeout", p.HotplugTimeout, "A memory or CPU hotplug requested and not applied for longer than this is HotplugStuck (before: MemoryHotplugPending).")
	fs.DurationVar(&p.MigrationPendingPodTimeout, "migration-pending-pod-timeout", p.MigrationPendingPodTimeout, "A migration in Scheduling (target pod pending) longer than this is MigrationStuck, unless the migration's kubevirt.io/migrationPendingPodTimeoutSeconds annotation says otherwise (KubeVirt's catch-all is 15m).")
	fs.DurationVar(&p.UnhealthyStateTimeout, "unhealthy-state-timeout", p.UnhealthyStateTimeout, "A VM waiting for its volumes (Provisioning, WaitingForVolumeBinding), or starting with its VMI not seen, longer than this is StuckProvisioning or StuckStarting (KubeVirt's VirtualMachineStuckInUnhealthyState alert waits 10m).")
	fs.DurationVar(&p.VolumeBindingTimeout, "volume-binding-timeout", p.VolumeBindingTimeout, "A claim Pending longer than this since its creation (a WaitForFirstConsumer claim only once its node is chosen) is VolumeNotBound and Degraded (KubeVirt's VirtualMachineStuckInUnhealthyState alert waits 10m).")
	fs.DurationVar(&p.HotplugVolumeTimeout, "hotplug-volume-timeout", p.HotplugVolumeTimeout, "A hotplugged volume not Ready for longer than this (since vmobs first saw it so) is HotplugVolumeStuck (before: HotplugVolumePending).")
	fs.DurationVar(&p.FilesystemsFrozenAfter, "filesystems-frozen-after", p.FilesystemsFrozenAfter, "Guest filesystems frozen (a snapshot or backup) for longer than this make the guest layer Degraded (FilesystemsFrozen; before, a note).")
	fs.DurationVar(&p.DomainStatsGrace, "domain-stats-grace", p.DomainStatsGrace, "A VMI Running longer than two domain-stats intervals plus this with no series from virt-handler is DomainStatsMissing.")
	fs.DurationVar(&p.GuestCPUStalledAfter, "guest-cpu-stalled-after", p.GuestCPUStalledAfter, "vCPU time standing still this long in a running, unpaused domain is GuestCPUStalled.")
	fs.Float64Var(&p.GuestSwapRate, "guest-swap-rate", p.GuestSwapRate, "With low headroom, guest swap traffic, in and out, at or above this many bytes per second is thrashing (GuestMemoryPressure).")
	fs.Float64Var(&p.GuestMajorFaultRate, "guest-major-fault-rate", p.GuestMajorFaultRate, "With low headroom, guest major page faults above this many per second are thrashing (GuestMemoryPressure), as in KubeVirt's KubeVirtVMGuestMemoryPressure alert.")
	fs.DurationVar(&p.GuestMemoryPressureAfter, "guest-memory-pressure-after", p.GuestMemoryPressureAfter, "Low headroom and thrashing lasting this long are GuestMemoryPressure (KubeVirt's alert waits 5m).")
	fs.DurationVar(&p.StorageSlowLatency, "storage-slow-latency", p.StorageSlowLatency, "Time per I/O operation under which storage never counts as slow.")
	fs.Float64Var(&p.NetworkErrorRate, "network-error-rate", p.NetworkErrorRate, "Network errors both ways and transmit drops at or above this many per second are NetworkErrors; receive drops at this rate are a note (GuestNetworkDrops).")
	fs.DurationVar(&p.FilesystemFullFor, "filesystem-full-for", p.FilesystemFullFor, "How long a guest filesystem must stay at or above --filesystem-used-percent to be FilesystemNearlyFull.")

	f := &PolicyFlags{ints: []intFlag{
		{name: "guest-memory-available-percent", min: 1, max: 99, dst: &p.GuestMemoryAvailablePercent},
		{name: "storage-slow-factor", min: 2, max: 1 << 20, dst: &p.StorageSlowFactor},
		{name: "migration-not-converging-samples", min: 2, max: 1 << 10, dst: &p.MigrationNotConvergingSamples},
		{name: "filesystem-used-percent", min: 50, max: 100, dst: &p.FilesystemUsedPercent},
		{name: "filesystem-critical-percent", min: 50, max: 100, dst: &p.FilesystemCriticalPercent},
		{name: "agent-unresponsive-probes", min: 1, max: 10, dst: &p.AgentUnresponsiveProbes},
		{name: "history-limit", min: 1, max: 100, dst: &p.HistoryLimit},
	}}
	usage := map[string]string{
		"guest-memory-available-percent":   "Guest memory the guest can still use under this share (%) of its memory is low headroom: a note (GuestMemoryAvailableLow), and with thrashing GuestMemoryPressure.",
		"storage-slow-factor":              "Time per I/O operation at least this many times the VM's own baseline (and above --storage-slow-latency) is StorageSlow.",
		"migration-not-converging-samples": "A live migration whose remaining data has not shrunk over this many domain-stats samples is MigrationNotConverging.",
		"filesystem-used-percent":          "A guest filesystem used at or above this share (%) for --filesystem-full-for is FilesystemNearlyFull (KubeVirt's GuestFilesystemAlmostOutOfSpace warning).",
		"filesystem-critical-percent":      "A guest filesystem used at or above this share (%) is FilesystemNearlyFull at once (KubeVirt's critical GuestFilesystemAlmostOutOfSpace).",
		"agent-unresponsive-probes":        "A VMI whose guest agent it calls connected and whose last this many probes failed is GuestInfoUnreachable (node layer): virt-api cannot read its guest information through virt-handler and virt-launcher.",
		"history-limit":                    "Keep this many entries in each VMObservation's status.history, the VM's flight recorder, newest first; older ones are dropped and counted (docs/history.md).",
	}
	for i := range f.ints {
		n := &f.ints[i]
		fs.IntVar(&n.v, n.name, int(*n.dst), usage[n.name])
	}
	return f
}

// Validate checks the int32 thresholds' ranges and puts them in the
// Policy.
func (f *PolicyFlags) Validate() error {
	for _, n := range f.ints {
		if n.v < n.min || n.v > n.max {
			return fmt.Errorf("--%s must be between %d and %d", n.name, n.min, n.max)
		}
		*n.dst = int32(n.v)
	}
	return nil
}
