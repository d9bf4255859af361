package v1alpha1

// Verdict reasons. Each is a stable CamelCase word that a layer (and the
// overall status, which copies the worst layer's) carries. Alerts, Argo CD
// health scripts and runbooks key on them, so renaming one is a breaking
// change. docs/verdicts.md has one row per reason and layer with the trigger,
// the evidence cited and the KubeVirt source that makes the rule true; a test
// keeps this list, the engine and that table in step.
const (
	// ReasonRunning: the VMI is Running and the control plane reports
	// nothing wrong.
	ReasonRunning = "Running"

	// ReasonStopped: the VM is stopped as declared (runStrategy Halted, or
	// Manual/Once with no VMI), or a VMI that ended while the VM is Halted.
	ReasonStopped = "Stopped"

	// ReasonVMISucceeded: the guest shut down and the VMI is Succeeded, and
	// the run strategy does not restart it.
	ReasonVMISucceeded = "VMISucceeded"

	// ReasonPausedByUser: the VMI carries Paused=True with reason
	// PausedByUser (virtctl pause).
	ReasonPausedByUser = "PausedByUser"

	// ReasonStarting: the VM should run but has no VMI yet, or the VMI is
	// Scheduled and virt-handler has not started the domain yet.
	ReasonStarting = "Starting"

	// ReasonScheduling: the VMI is Pending or Scheduling, within the
	// scheduling timeout.
	ReasonScheduling = "Scheduling"

	// ReasonProvisioning: the VMI waits for its DataVolumes
	// (Provisioning=True); no timeout applies while imports run.
	ReasonProvisioning = "Provisioning"

	// ReasonStuckScheduling: the VMI has been Pending or Scheduling longer
	// than the scheduling timeout.
	ReasonStuckScheduling = "StuckScheduling"

	// ReasonStuckStarting: the VMI has been Scheduled, or the VM has waited
	// for a VMI, longer than the scheduling timeout.
	ReasonStuckStarting = "StuckStarting"

	// ReasonUnschedulable: the VMI carries PodScheduled=False with reason
	// Unschedulable, copied from its launcher pod.
	ReasonUnschedulable = "Unschedulable"

	// ReasonImagePullFailed: Synchronized=False with reason ErrImagePull or
	// ImagePullBackOff.
	ReasonImagePullFailed = "ImagePullFailed"

	// ReasonPVCNotFound: Synchronized=False with reason FailedPvcNotFound.
	ReasonPVCNotFound = "PVCNotFound"

	// ReasonLauncherCreateFailed: Synchronized=False with reason
	// FailedCreate: virt-controller could not create the launcher pod.
	ReasonLauncherCreateFailed = "LauncherCreateFailed"

	// ReasonSyncFailed: Synchronized=False with any other reason, e.g.
	// virt-handler's "Synchronizing with the Domain failed.".
	ReasonSyncFailed = "SyncFailed"

	// ReasonCrashLoopBackOff: the VM's VMIs keep failing and virt-controller
	// backs off before the next start.
	ReasonCrashLoopBackOff = "CrashLoopBackOff"

	// ReasonRestarting: the VMI ended and the run strategy (Always) makes
	// virt-controller start a new one.
	ReasonRestarting = "Restarting"

	// ReasonVMIFailed: the VMI is Failed (crash, panic, launcher gone).
	ReasonVMIFailed = "VMIFailed"

	// ReasonNodeUnresponsive: the VMI is Failed with status.reason
	// NodeUnresponsive: virt-controller gave up on a node whose virt-handler
	// stopped beating and whose launcher pod is gone (control plane and
	// node layer).
	ReasonNodeUnresponsive = "NodeUnresponsive"

	// ReasonStopping: the VMI or VM is being deleted, or the VM is Halted
	// while its VMI still runs.
	ReasonStopping = "Stopping"

	// ReasonWaitingForSync: a decentralized-migration receiver waits for
	// its source (phase WaitingForSync or runStrategy WaitAsReceiver).
	ReasonWaitingForSync = "WaitingForSync"

	// ReasonUnknownPhase: the VMI or migration reports a phase this engine
	// does not know (including KubeVirt's unused Unknown phase).
	ReasonUnknownPhase = "UnknownPhase"

	// ReasonStatusMissing: the VMI has no status.phase a minute after it was
	// created (a partial dump, or virt-controller is not running).
	ReasonStatusMissing = "StatusMissing"

	// ReasonVMMissing: neither the VM nor the VMI exists.
	ReasonVMMissing = "VMMissing"

	// ReasonInvalidInput: an object contradicts itself (e.g. a VM with both
	// spec.running and spec.runStrategy).
	ReasonInvalidInput = "InvalidInput"

	// ReasonMigrating: the newest migration is in progress, within the
	// migration phase timeout.
	ReasonMigrating = "Migrating"

	// ReasonMigrationStuck: the newest migration has stayed in one phase
	// longer than the migration phase timeout.
	ReasonMigrationStuck = "MigrationStuck"

	// ReasonMigrationFailed: the newest migration failed, recently or while
	// the VMI still has to move; the VM still runs on its source.
	ReasonMigrationFailed = "MigrationFailed"

	// ReasonMigrationAborted: the newest migration was aborted on request
	// (abortStatus Succeeded); a note, the VM runs on its source.
	ReasonMigrationAborted = "MigrationAborted"

	// ReasonLastMigrationFailed: the newest migration failed longer ago
	// than the failure window and nothing needs the VMI to move; a note.
	ReasonLastMigrationFailed = "LastMigrationFailed"

	// ReasonEvictionBlocked: the VMI is marked for eviction but cannot be
	// live-migrated; liveMigratable.reasons lists every blocker.
	ReasonEvictionBlocked = "EvictionBlocked"

	// ReasonEvictionPending: the VMI is marked for eviction, can be
	// live-migrated, and waits for its evacuation migration.
	ReasonEvictionPending = "EvictionPending"

	// ReasonMultipleLaunchers: more than one live launcher pod outside a
	// migration (kubevirt#18320).
	ReasonMultipleLaunchers = "MultipleLaunchers"

	// ReasonStaleActivePods: status.activePods lists pods that finished or
	// no longer exist (kubevirt#12773); a note while the VM runs.
	ReasonStaleActivePods = "StaleActivePods"

	// ReasonFutureTimestamp: a timestamp a rule depends on lies more than
	// the allowed clock skew in the future, so durations cannot be judged.
	ReasonFutureTimestamp = "FutureTimestamp"

	// ReasonLauncherRunning: the launcher pod runs on a Ready node whose
	// virt-handler heartbeat is fresh.
	ReasonLauncherRunning = "LauncherRunning"

	// ReasonNotScheduled: the VMI has no node yet.
	ReasonNotScheduled = "NotScheduled"

	// ReasonNodeMissing: the VMI names no node, or the Node object it names
	// does not exist.
	ReasonNodeMissing = "NodeMissing"

	// ReasonNodeNotReady: the Node's Ready condition is False (Degraded) or
	// Unknown or absent (Unknown).
	ReasonNodeNotReady = "NodeNotReady"

	// ReasonHeartbeatMissing: the Node has no kubevirt.io/heartbeat
	// annotation, so virt-handler's liveness cannot be judged.
	ReasonHeartbeatMissing = "HeartbeatMissing"

	// ReasonMalformedHeartbeat: the kubevirt.io/heartbeat annotation is not
	// an RFC 3339 time.
	ReasonMalformedHeartbeat = "MalformedHeartbeat"

	// ReasonNodeAgentStale: virt-handler's heartbeat is older than the
	// heartbeat timeout: nothing on the node reports any more.
	ReasonNodeAgentStale = "NodeAgentStale"

	// ReasonNodeNotSchedulable: the Node carries kubevirt.io/schedulable
	// "false" while its heartbeat is fresh; a note, running VMs are not
	// affected.
	ReasonNodeNotSchedulable = "NodeNotSchedulable"

	// ReasonLauncherPodMissing: the VMI says Running but no live launcher
	// pod on its node is known.
	ReasonLauncherPodMissing = "LauncherPodMissing"

	// ReasonLauncherPodFailed: the VMI's launcher pod is Failed while the
	// VMI still says Running.
	ReasonLauncherPodFailed = "LauncherPodFailed"

	// ReasonComputeContainerOOMKilled: the launcher's compute container was
	// OOM-killed.
	ReasonComputeContainerOOMKilled = "ComputeContainerOOMKilled"

	// ReasonComputeContainerTerminated: the launcher's compute container
	// terminated while the VMI still says Running.
	ReasonComputeContainerTerminated = "ComputeContainerTerminated"

	// ReasonStatusLagging: the launcher pod is Succeeded while the VMI still
	// says Running: the VMI status trails the pod.
	ReasonStatusLagging = "StatusLagging"

	// ReasonLauncherPodNotReady: the running launcher pod is not Ready while
	// the VM is neither paused nor guarded by a readiness probe.
	ReasonLauncherPodNotReady = "LauncherPodNotReady"

	// ReasonLauncherPodTerminating: the launcher pod is being deleted.
	ReasonLauncherPodTerminating = "LauncherPodTerminating"

	// ReasonPausedIOError: libvirt paused the domain on an I/O error
	// (Paused=True, reason PausedIOError).
	ReasonPausedIOError = "PausedIOError"

	// ReasonTargetPodUnschedulable: the migration target pod cannot be
	// scheduled (PodScheduled=False, reason Unschedulable).
	ReasonTargetPodUnschedulable = "TargetPodUnschedulable"

	// ReasonGuestAgentConnected: the guest agent is connected and reports
	// consistent data.
	ReasonGuestAgentConnected = "GuestAgentConnected"

	// ReasonNoGuestAgent: no guest agent has connected after the grace
	// period and none is expected: Healthy when the launcher says the
	// domain runs (Ready), Unknown when nothing does.
	ReasonNoGuestAgent = "NoGuestAgent"

	// ReasonAgentConnecting: the guest runs and the agent has not connected
	// yet, within the agent grace period.
	ReasonAgentConnecting = "AgentConnecting"

	// ReasonAgentNeverConnected: a guest agent is expected but has not
	// connected within the agent grace period.
	ReasonAgentNeverConnected = "AgentNeverConnected"

	// ReasonAgentDisconnected: the guest agent was connected before and is
	// not now.
	ReasonAgentDisconnected = "AgentDisconnected"

	// ReasonAgentVersionNotSupported: KubeVirt reports the guest agent
	// version as not supported.
	ReasonAgentVersionNotSupported = "AgentVersionNotSupported"

	// ReasonGuestInterfaceDataMissing: the agent is connected but some
	// interfaces carry no guest-agent data after the grace period.
	ReasonGuestInterfaceDataMissing = "GuestInterfaceDataMissing"

	// ReasonGuestIPMismatch: the guest reports IPs on a bridge or SR-IOV
	// interface that differ from the pod or Multus IPs.
	ReasonGuestIPMismatch = "GuestIPMismatch"

	// ReasonMalformedNetworkStatus: the launcher pod's
	// k8s.v1.cni.cncf.io/network-status annotation is not valid JSON of the
	// expected shape; a note, as KubeVirt ignores it too.
	ReasonMalformedNetworkStatus = "MalformedNetworkStatus"

	// ReasonGuestStarting: the guest does not run yet (the VMI is not
	// Running).
	ReasonGuestStarting = "GuestStarting"

	// ReasonNotRunning: the VMI is Failed or in a state this engine cannot
	// read, so the layer has nothing live to judge.
	ReasonNotRunning = "NotRunning"

	// ReasonGuestPaused: the domain is paused by something other than the
	// user (the migration monitor: Progressing; an I/O error or other:
	// Unknown).
	ReasonGuestPaused = "GuestPaused"

	// ReasonEvidenceStale: the node's heartbeat is stale, or the node layer
	// says the path that refreshes guest data (launcher, domain) is broken,
	// so what the VMI says about the guest can no longer be trusted.
	ReasonEvidenceStale = "EvidenceStale"

	// ReasonGuestNotReady: the VMI's readiness probe fails (Ready=False on a
	// running, unpaused VMI that has a readinessProbe).
	ReasonGuestNotReady = "GuestNotReady"

	// ReasonDomainSyncFailed: virt-handler cannot synchronize the domain
	// (Synchronized=False with its reason "Synchronizing with the Domain
	// failed.", or on a Scheduled or Running VMI): libvirt or QEMU refused
	// it (no /dev/kvm, a disk image it may not open, ...). Node layer.
	ReasonDomainSyncFailed = "DomainSyncFailed"

	// ReasonVMINotObserved: the VM says its VMI exists (status.created) but
	// the input has no VMI; the layers that live in the VMI are unknown.
	ReasonVMINotObserved = "VMINotObserved"

	// ReasonDataVolumeError: the VM's printableStatus says a DataVolume it
	// uses failed or does not exist.
	ReasonDataVolumeError = "DataVolumeError"

	// ReasonVMFailure: the VM's own Failure condition: virt-controller cannot
	// apply the VM to its VMI (create, delete or update failed).
	ReasonVMFailure = "VMFailure"

	// ReasonHotplugFailed: a hotplug of a volume, memory or CPUs failed (the
	// VM's Failure condition with a HotPlug reason, HotMemoryChange or
	// HotVCPUChange False with a failure, a hotplug volume that reports a
	// failure).
	ReasonHotplugFailed = "HotplugFailed"

	// ReasonStuckStopping: the VMI (or VM) has been terminating for longer
	// than its termination grace period plus a margin (KubeVirt's
	// VirtualMachineStuckOnNode alert).
	ReasonStuckStopping = "StuckStopping"

	// ReasonReadyConditionMissing: a Running VMI without a Ready condition,
	// which virt-controller writes on every sync: the status is partial.
	ReasonReadyConditionMissing = "ReadyConditionMissing"

	// ReasonAccessCredentialsFailed: virt-handler could not propagate the
	// VM's access credentials through the guest agent.
	ReasonAccessCredentialsFailed = "AccessCredentialsFailed"

	// ReasonEvictionExternal: eviction requested under evictionStrategy
	// External: KubeVirt marks the VMI and leaves it to an external
	// controller, which is expected to stop or replace the VM.
	ReasonEvictionExternal = "EvictionExternal"

	// ReasonLauncherContainerError: the kubelet cannot create or start the
	// launcher's compute container (CreateContainerError, RunContainerError,
	// ...): a node-side fault no KubeVirt condition reports.
	ReasonLauncherContainerError = "LauncherContainerError"

	// ReasonLauncherSidecarExited: a container of the launcher pod other
	// than compute (the guest-console-log tail, a hook sidecar) exited: the
	// pod is not ready while the domain may still run.
	ReasonLauncherSidecarExited = "LauncherSidecarExited"

	// ReasonNotInInput: the input carries nothing this layer can be judged
	// on (vmobs analyze on a paste without the launcher pod and the Node,
	// or a VMI whose conditions were cut). The layer is Unknown and the
	// overall verdict is taken from the layers that have a basis.
	ReasonNotInInput = "NotInInput"

	// ReasonMigrationBlocked: the migration object says it cannot proceed
	// until something else changes (rejected by a resource quota, blocked
	// by utility volumes or a decentralized migration).
	ReasonMigrationBlocked = "MigrationBlocked"

	// ReasonMigrationWaitingForBackup: the migration waits for a backup of
	// the VMI to complete, or aborts it for a system-critical migration
	// (the VMIM's migrationBlockedByBackup condition).
	ReasonMigrationWaitingForBackup = "MigrationWaitingForBackup"

	// ReasonStuckProvisioning: the VM has waited for its volumes
	// (Provisioning, WaitingForVolumeBinding) longer than
	// UnhealthyStateTimeout.
	ReasonStuckProvisioning = "StuckProvisioning"

	// ReasonManualRecoveryRequired: the VM's ManualRecoveryRequired
	// condition, set after a volume migration failed: virt-controller does
	// not start the VM until its volumes are fixed by hand.
	ReasonManualRecoveryRequired = "ManualRecoveryRequired"

	// ReasonHotplugVolumePending: a hotplugged volume is not Ready yet,
	// within HotplugVolumeTimeout.
	ReasonHotplugVolumePending = "HotplugVolumePending"

	// ReasonHotplugVolumeStuck: a hotplugged volume has not been Ready for
	// longer than HotplugVolumeTimeout.
	ReasonHotplugVolumeStuck = "HotplugVolumeStuck"

	// ReasonVolumeMigration: a note: a storage migration of the VMI's
	// volumes is under way or was cancelled (VolumesChange, the VM's
	// status.volumeUpdateState).
	ReasonVolumeMigration = "VolumeMigration"

	// ReasonDecentralizedMigrationFailure: a note: the VMI's
	// DecentralizedLiveMigrationFailure condition.
	ReasonDecentralizedMigrationFailure = "DecentralizedMigrationFailure"

	// ReasonRestartRequired: a note: changes to the VM wait for a restart
	// (the VM's RestartRequired condition).
	ReasonRestartRequired = "RestartRequired"

	// ReasonSoftwareEmulation: a note: the VM runs with software emulation
	// of another architecture (the VMI's SoftwareEmulation condition).
	ReasonSoftwareEmulation = "SoftwareEmulation"

	// ReasonMemoryDump: a note: a memory dump of the VM is in progress or
	// failed (the VM's status.memoryDumpRequest).
	ReasonMemoryDump = "MemoryDump"

	// ReasonBackup: a note: a backup of the VMI is in progress or failed
	// (the VMI's status.changedBlockTracking.backupStatus).
	ReasonBackup = "Backup"

	// ReasonNotEvictable: a note: evictionStrategy LiveMigrate on a VMI that
	// cannot be live-migrated, so a drain of its node will be refused
	// (KubeVirt's VMCannotBeEvicted alert).
	ReasonNotEvictable = "NotEvictable"

	// ReasonMemoryHotplugPending: memory or CPU hotplug is requested
	// (status.memory.guestRequested, spec CPU sockets) and not yet applied,
	// within the hotplug timeout.
	ReasonMemoryHotplugPending = "MemoryHotplugPending"

	// ReasonHotplugStuck: a memory or CPU hotplug has been requested and not
	// applied for longer than the hotplug timeout.
	ReasonHotplugStuck = "HotplugStuck"

	// ReasonFilesystemsFrozen: the guest's filesystems have been frozen
	// (status.fsFreezeStatus) for longer than the threshold.
	ReasonFilesystemsFrozen = "FilesystemsFrozen"

	// ReasonHotplugVolumeFailed: a hotplugged volume reports a failure
	// (status.volumeStatus).
	ReasonHotplugVolumeFailed = "HotplugVolumeFailed"

	// ReasonDomainStatsMissing: the VMI has been Running long enough to be
	// sampled, yet virt-handler exports no series for its domain.
	ReasonDomainStatsMissing = "DomainStatsMissing"

	// ReasonGuestCPUStalled: the vCPU time of a running, unpaused domain has
	// not advanced for longer than the threshold.
	ReasonGuestCPUStalled = "GuestCPUStalled"

	// ReasonGuestMemoryPressure: the guest has almost no memory left to use
	// and thrashes (swaps or takes major page faults) for minutes (balloon
	// driver statistics).
	ReasonGuestMemoryPressure = "GuestMemoryPressure"

	// ReasonGuestMemoryAvailableLow: a note: the guest has almost no memory
	// left to use but does not thrash (or not for long yet).
	ReasonGuestMemoryAvailableLow = "GuestMemoryAvailableLow"

	// ReasonGuestOSPanic: the guest OS panicked (a pvpanic or Hyper-V crash
	// report, counted by virt-handler) within the domain-stats window.
	ReasonGuestOSPanic = "GuestOSPanic"

	// ReasonStorageSlow: the time per I/O operation is far above the VM's
	// own baseline.
	ReasonStorageSlow = "StorageSlow"

	// ReasonNetworkErrors: the domain's interfaces report receive or
	// transmit errors, or the host drops what the guest sends.
	ReasonNetworkErrors = "NetworkErrors"

	// ReasonGuestNetworkDrops: a note: packets arrive for the guest that it
	// does not take (an interface down or unconfigured in the guest, or its
	// receive ring full).
	ReasonGuestNetworkDrops = "GuestNetworkDrops"

	// ReasonMigrationNotConverging: during a live migration the data
	// remaining does not shrink, or the guest dirties memory at least as
	// fast as it is copied: the migration will not finish by itself.
	ReasonMigrationNotConverging = "MigrationNotConverging"

	// ReasonDomainStatsUnavailable: a note: the controller cannot read
	// domain stats from Prometheus; the verdict rests on the other sources.
	ReasonDomainStatsUnavailable = "DomainStatsUnavailable"

	// ReasonFilesystemNearlyFull: a guest filesystem is used at or above
	// the threshold, as the guest agent reports it (subresource
	// filesystemlist).
	ReasonFilesystemNearlyFull = "FilesystemNearlyFull"

	// ReasonGuestInfoUnreachable: on the node layer: the VMI says the guest
	// agent is connected, but the controller's last probes of its guest
	// information failed or timed out. virt-launcher answers them from its
	// cache of the agent's data, so the failing part is the path virt-api →
	// virt-handler on the VMI's node → virt-launcher, not the agent. It
	// replaces AgentUnresponsive (guest layer), which blamed the agent.
	ReasonGuestInfoUnreachable = "GuestInfoUnreachable"

	// ReasonGuestProbeUnavailable: a note: the controller cannot probe
	// guest agents through virt-api (the subresource API is down, refuses
	// or throttles it); the verdict rests on the other sources.
	ReasonGuestProbeUnavailable = "GuestProbeUnavailable"

	// ReasonNoPersistentVolumes: the VM has no volume a claim backs
	// (container disks, cloud-init and the like live and die with the
	// launcher pod): the storage layer has nothing that can fail apart
	// from the VM.
	ReasonNoPersistentVolumes = "NoPersistentVolumes"

	// ReasonVolumesReady: the VM's claims are bound (and, with the launcher
	// pod Ready, attached and mounted), no DataVolume is on its way or
	// failing and the domain reports no I/O error.
	ReasonVolumesReady = "VolumesReady"

	// ReasonVolumeNotBound: a claim of the VM is Pending (or does not
	// exist), with its cause: a StorageClass that does not exist, one
	// without a provisioner, the provisioner's ProvisioningFailed events,
	// or a WaitForFirstConsumer class waiting, as designed, for the
	// launcher pod to be scheduled. Progressing within
	// VolumeBindingTimeout, Degraded after.
	ReasonVolumeNotBound = "VolumeNotBound"

	// ReasonDataVolumeImporting: a CDI DataVolume of the VM is on its way
	// (importing, cloning, uploading, waiting for its first consumer), with
	// its progress. No timeout: an import lasts as long as its data does.
	ReasonDataVolumeImporting = "DataVolumeImporting"

	// ReasonDataVolumeFailed: a CDI DataVolume of the VM is Failed, or its
	// importer, cloner or uploader pod restarted more than three times
	// (CDI's CDIDataVolumeUnusualRestartCount alert).
	ReasonDataVolumeFailed = "DataVolumeFailed"

	// ReasonVolumeAttachFailed: a volume of the VM cannot be attached to
	// the launcher's node: the CSI driver's attach error on the
	// VolumeAttachment, or the attach-detach controller's
	// FailedAttachVolume event on a launcher pod that is not Ready.
	ReasonVolumeAttachFailed = "VolumeAttachFailed"

	// ReasonVolumeMultiAttach: a ReadWriteOnce volume of the VM is still
	// attached to another node (the attach-detach controller's
	// Multi-Attach error on a launcher pod that is not Ready).
	ReasonVolumeMultiAttach = "VolumeMultiAttach"

	// ReasonVolumeMountFailed: the kubelet cannot mount or map a volume of
	// the VM into a launcher pod that is not Ready (FailedMount,
	// FailedMapVolume events).
	ReasonVolumeMountFailed = "VolumeMountFailed"

	// ReasonVolumeAttachmentStale: a VolumeAttachment of a volume of the VM
	// is held for a node that is gone or NotReady while the VM is not
	// there: the volume cannot attach anywhere else until it is released.
	ReasonVolumeAttachmentStale = "VolumeAttachmentStale"

	// ReasonPVCLost: a claim of the VM is Lost: its PersistentVolume is
	// gone.
	ReasonPVCLost = "PVCLost"
)

// AllReasons lists every verdict reason, in declaration order. Tests use it
// to check that docs/verdicts.md documents each one.
var AllReasons = []string{
	ReasonRunning,
	ReasonStopped,
	ReasonVMISucceeded,
	ReasonPausedByUser,
	ReasonStarting,
	ReasonScheduling,
	ReasonProvisioning,
	ReasonStuckScheduling,
	ReasonStuckStarting,
	ReasonUnschedulable,
	ReasonImagePullFailed,
	ReasonPVCNotFound,
	ReasonLauncherCreateFailed,
	ReasonSyncFailed,
	ReasonCrashLoopBackOff,
	ReasonRestarting,
	ReasonVMIFailed,
	ReasonNodeUnresponsive,
	ReasonStopping,
	ReasonWaitingForSync,
	ReasonUnknownPhase,
	ReasonStatusMissing,
	ReasonVMMissing,
	ReasonInvalidInput,
	ReasonMigrating,
	ReasonMigrationStuck,
	ReasonMigrationFailed,
	ReasonMigrationAborted,
	ReasonLastMigrationFailed,
	ReasonEvictionBlocked,
	ReasonEvictionPending,
	ReasonMultipleLaunchers,
	ReasonStaleActivePods,
	ReasonFutureTimestamp,
	ReasonLauncherRunning,
	ReasonNotScheduled,
	ReasonNodeMissing,
	ReasonNodeNotReady,
	ReasonHeartbeatMissing,
	ReasonMalformedHeartbeat,
	ReasonNodeAgentStale,
	ReasonNodeNotSchedulable,
	ReasonLauncherPodMissing,
	ReasonLauncherPodFailed,
	ReasonComputeContainerOOMKilled,
	ReasonComputeContainerTerminated,
	ReasonStatusLagging,
	ReasonLauncherPodNotReady,
	ReasonLauncherPodTerminating,
	ReasonPausedIOError,
	ReasonTargetPodUnschedulable,
	ReasonGuestAgentConnected,
	ReasonNoGuestAgent,
	ReasonAgentConnecting,
	ReasonAgentNeverConnected,
	ReasonAgentDisconnected,
	ReasonAgentVersionNotSupported,
	ReasonGuestInterfaceDataMissing,
	ReasonGuestIPMismatch,
	ReasonMalformedNetworkStatus,
	ReasonGuestStarting,
	ReasonNotRunning,
	ReasonGuestPaused,
	ReasonEvidenceStale,
	ReasonGuestNotReady,
	ReasonDomainSyncFailed,
	ReasonVMINotObserved,
	ReasonDataVolumeError,
	ReasonVMFailure,
	ReasonHotplugFailed,
	ReasonStuckStopping,
	ReasonReadyConditionMissing,
	ReasonAccessCredentialsFailed,
	ReasonEvictionExternal,
	ReasonNotEvictable,
	ReasonMigrationBlocked,
	ReasonMigrationWaitingForBackup,
	ReasonStuckProvisioning,
	ReasonManualRecoveryRequired,
	ReasonHotplugVolumePending,
	ReasonHotplugVolumeStuck,
	ReasonVolumeMigration,
	ReasonDecentralizedMigrationFailure,
	ReasonRestartRequired,
	ReasonSoftwareEmulation,
	ReasonMemoryDump,
	ReasonBackup,
	ReasonNotInInput,
	ReasonLauncherContainerError,
	ReasonLauncherSidecarExited,
	ReasonMemoryHotplugPending,
	ReasonHotplugStuck,
	ReasonFilesystemsFrozen,
	ReasonHotplugVolumeFailed,
	ReasonDomainStatsMissing,
	ReasonGuestCPUStalled,
	ReasonGuestMemoryPressure,
	ReasonGuestMemoryAvailableLow,
	ReasonGuestOSPanic,
	ReasonStorageSlow,
	ReasonNetworkErrors,
	ReasonGuestNetworkDrops,
	ReasonMigrationNotConverging,
	ReasonDomainStatsUnavailable,
	ReasonFilesystemNearlyFull,
	ReasonGuestInfoUnreachable,
	ReasonGuestProbeUnavailable,
	ReasonNoPersistentVolumes,
	ReasonVolumesReady,
	ReasonVolumeNotBound,
	ReasonDataVolumeImporting,
	ReasonDataVolumeFailed,
	ReasonVolumeAttachFailed,
	ReasonVolumeMultiAttach,
	ReasonVolumeMountFailed,
	ReasonVolumeAttachmentStale,
	ReasonPVCLost,
}
