package v1alpha1

// Reasons of a NodeObservation's layers that a VMObservation never gives.
// A NodeObservation also gives the VMObservation's reasons on a Node's own
// signals, which the two share (NodeNotReady, HeartbeatMissing,
// MalformedHeartbeat, FutureTimestamp, NodeAgentStale, NodeNotSchedulable).
// docs/nodeobservation.md documents each one.
const (
	// ReasonKubeletReady: kubelet layer: the Node is Ready and under no
	// pressure.
	ReasonKubeletReady = "KubeletReady"

	// ReasonNodePressure: kubelet layer: MemoryPressure, DiskPressure or
	// PIDPressure is True: the kubelet evicts pods, launchers included.
	ReasonNodePressure = "NodePressure"

	// ReasonVirtHandlerReady: virt-handler layer: its heartbeat is fresh
	// and its pod, when seen, is Ready.
	ReasonVirtHandlerReady = "VirtHandlerReady"

	// ReasonVirtHandlerNotReady: virt-handler layer: its pod on the node
	// is not Ready (or not running).
	ReasonVirtHandlerNotReady = "VirtHandlerNotReady"

	// ReasonVirtHandlerPodNotSeen: a note: no virt-handler pod on the node
	// is in the controller's cache (a controller limited to namespaces does
	// not see KubeVirt's); the heartbeat speaks for virt-handler.
	ReasonVirtHandlerPodNotSeen = "VirtHandlerPodNotSeen"

	// ReasonSourceNotConfigured: domainStats or launcherPath layer: the
	// controller does not read this source (no --prometheus-url, or
	// --guest-probe-interval 0); the layer has no basis and does not count
	// in the overall verdict.
	ReasonSourceNotConfigured = "SourceNotConfigured"

	// ReasonNoRunningVMs: domainStats or launcherPath layer: no VM runs
	// on the node, so there is nothing to export or to probe.
	ReasonNoRunningVMs = "NoRunningVMs"

	// ReasonDomainStatsPresent: domainStats layer: the series of the
	// node's running VMs reach Prometheus (no more than some of them are
	// DomainStatsMissing).
	ReasonDomainStatsPresent = "DomainStatsPresent"

	// ReasonDomainStatsMissingOnNode: domainStats layer: every running VM
	// of the node is DomainStatsMissing: the node's exporter (virt-handler's
	// metrics endpoint, or its scrape) is silent, not the VMs.
	ReasonDomainStatsMissingOnNode = "DomainStatsMissingOnNode"

	// ReasonLauncherPathReachable: launcherPath layer: no VM of the node
	// is GuestInfoUnreachable.
	ReasonLauncherPathReachable = "LauncherPathReachable"

	// ReasonLauncherPathUnreachable: launcherPath layer: VMs of the node
	// are GuestInfoUnreachable: the probes through virt-api → virt-handler
	// on this node → virt-launcher fail.
	ReasonLauncherPathUnreachable = "LauncherPathUnreachable"
)

// NodeReasons lists every reason a NodeObservation's layers give, in
// declaration order: its own, then those shared with the VMObservation.
var NodeReasons = []string{
	ReasonKubeletReady,
	ReasonNodePressure,
	ReasonVirtHandlerReady,
	ReasonVirtHandlerNotReady,
	ReasonVirtHandlerPodNotSeen,
	ReasonSourceNotConfigured,
	ReasonNoRunningVMs,
	ReasonDomainStatsPresent,
	ReasonDomainStatsMissingOnNode,
	ReasonLauncherPathReachable,
	ReasonLauncherPathUnreachable,
	ReasonNodeNotReady,
	ReasonHeartbeatMissing,
	ReasonMalformedHeartbeat,
	ReasonFutureTimestamp,
	ReasonNodeAgentStale,
	ReasonNodeNotSchedulable,
}
