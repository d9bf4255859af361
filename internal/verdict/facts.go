package verdict

import (
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/membership"
	"github.com/vmobs/vmobs/internal/netstatus"
)

// Paused condition reasons virt-handler writes (kv:pkg/virt-handler/vm.go:
// 848-859, 1196-1236); other libvirt pause reasons add no condition. The API
// module has no constants for them.
const (
	pausedByUser             = "PausedByUser"
	pausedIOError            = "PausedIOError"
	pausedByMigrationMonitor = "PausedByMigrationMonitor"
)

// lifecycle is where the VM stands as a whole; each layer first asks it
// whether it has anything live to judge.
type lifecycle int

const (
	lcMissing    lifecycle = iota // neither VM nor VMI
	lcInvalid                     // the VM contradicts itself and has no VMI
	lcStopped                     // stopped as declared
	lcStarting                    // the VM should run and has no VMI yet
	lcPreRunning                  // VMI Pending, Scheduling, Scheduled, WaitingForSync
	lcRunning                     // VMI Running
	lcSucceeded                   // VMI Succeeded and not stopped as declared
	lcFailed                      // VMI Failed and not stopped as declared
	lcUnknown                     // VMI phase unknown or status missing
	lcVMIUnseen                   // the VM says its VMI exists, but the input has none
)

// facts is the input, indexed once: every rule reads from here.
type facts struct {
	// in is a copy, not a pointer, so that Evaluate's argument stays on the
	// stack.
	in   Input
	now  time.Time // in.Now in UTC, truncated to seconds
	pol  Policy
	name string

	vm         *kubevirtv1.VirtualMachine
	runStrat   kubevirtv1.VirtualMachineRunStrategy
	runStratOK bool

	vmi   *kubevirtv1.VirtualMachineInstance
	phase kubevirtv1.VirtualMachineInstancePhase
	// inferredFrom names the field the phase was inferred from when the VMI
	// carries none (a partial paste, a stale cache); empty otherwise.
	inferredFrom string
	phaseSince   time.Time
	created      time.Time
	lc           lifecycle

	pods  []*corev1.Pod // launcher pods of the VMI, by name
	roles []v1alpha1.LauncherPodRole

	// podSides caches podSide for the first interfaces.
	podSides [8]podSideInfo
	active   *corev1.Pod // the pod that runs (or last ran) the VM on its node

	mig migration

	nodeName string
	node     *corev1.Node
	hb       heartbeat

	netStatus    []netstatus.Status
	netStatusRaw string
	netStatusErr error

	// prevAgent is true when the previous status, for this same VMI, saw
	// the guest agent connected.
	prevAgent bool

	// frozenSince is when the guest's filesystems were first seen frozen,
	// zero while they are not (readRuntime); hp is a memory or CPU hotplug
	// requested and not applied.
	frozenSince time.Time
	hp          hotplug
	// agentLost is when the guest agent, connected before, was first seen
	// disconnected, zero while it is connected or never was (readRuntime).
	agentLost time.Time
}

type heartbeat struct {
	present bool
	raw     string
	t       time.Time
	err     error
	// deadline is t + HeartbeatTimeout: when the node's reports stop being
	// trustworthy.
	deadline time.Time
	// read is the heartbeat as the rules on a Node read it (noderules.go).
	read Heartbeat
}

func (f *facts) init(in *Input) {
	f.in = *in
	f.now = trunc(in.Now)
	f.pol = in.Policy.withDefaults()
	f.vm, f.vmi = in.VM, in.VMI
	f.name = in.Name
	if f.name == "" && f.vmi != nil {
		f.name = f.vmi.Name
	}
	if f.name == "" && f.vm != nil {
		f.name = f.vm.Name
	}
	f.runStratOK = true
	if f.vm != nil {
		rs, err := f.vm.RunStrategy()
		f.runStrat, f.runStratOK = rs, err == nil
	}
	// The pods come first: a migration's target pod tells the phase of a
	// VMI that carries none.
	f.collectPods()
	if f.vmi != nil {
		f.phase = f.vmi.Status.Phase
		if f.phase == kubevirtv1.VmPhaseUnset {
			f.phase, f.inferredFrom = f.inferPhase()
		}
		f.created = mt(f.vmi.CreationTimestamp)
		f.phaseSince = vmiPhaseSince(f.vmi, f.phase)
		if f.phaseSince.IsZero() && (f.phase == kubevirtv1.Pending || f.phase == kubevirtv1.VmPhaseUnset) {
			f.phaseSince = f.created
		}
		f.nodeName = f.vmi.Status.NodeName
	}
	f.lc = f.lifecycle()
	f.selectMigration()
	f.selectActive()
	f.assignRoles()
	if f.nodeName == "" && f.active != nil && f.lc != lcPreRunning {
		f.nodeName = f.active.Spec.NodeName
	}
	if f.nodeName != "" {
		f.node = in.Nodes[f.nodeName]
	}
	f.readHeartbeat()
	if f.active != nil {
		// An empty annotation is absent, as KubeVirt reads it
		// (kv:pkg/network/multus/status.go NetworkStatusesFromPod).
		if raw, ok := f.active.Annotations[membership.NetworkStatusAnnotation]; ok && strings.TrimSpace(raw) != "" {
			f.netStatusRaw = raw
			f.netStatus, f.netStatusErr = netstatus.Parse(raw)
		}
	}
	// The previous status of this same VMI saw the agent connected, or
	// already said it disconnected: a disconnection stays one until the
	// agent is back (else the next reconcile, whose previous status no
	// longer shows the agent, would call the guest Healthy).
	if p := in.Previous; p != nil && p.VMI != nil && f.vmi != nil && f.vmi.UID != "" && p.VMI.UID == f.vmi.UID &&
		(p.Guest != nil && p.Guest.AgentConnected ||
			p.Layers != nil && p.Layers.Guest.Reason == v1alpha1.ReasonAgentDisconnected) {
		f.prevAgent = true
	}
	f.readRuntime(in)
}

func (f *facts) lifecycle() lifecycle {
	if f.vmi == nil {
		switch {
		case f.vm == nil:
			return lcMissing
		case !f.runStratOK:
			return lcInvalid
		case (f.vm.Status.Created || printableImpliesVMI(f.vm.Status.PrintableStatus) || failedDelete(f.vm)) &&
			!(f.runStrat == kubevirtv1.RunStrategyHalted && f.vm.Status.PrintableStatus == kubevirtv1.VirtualMachineStatusStopped):
			// virt-controller sets created from the VMI it sees
			// (kv:pkg/virt-controller/watch/vm/vm.go updateStatus): the VMI
			// exists and the input lacks it. A Halted VM whose status says
			// Stopped is stopped: created lags the deletion of its final VMI
			// by one sync.
			return lcVMIUnseen
		case f.vmShouldRun():
			return lcStarting
		}
		return lcStopped
	}
	switch f.phase {
	case kubevirtv1.Succeeded, kubevirtv1.Failed:
		// A stop whose guest ignores ACPI ends in Failed (destroyed after
		// the grace period): with the VM Halted that is still the stop the
		// user asked for.
		if f.vm != nil && f.runStratOK && f.runStrat == kubevirtv1.RunStrategyHalted {
			return lcStopped
		}
		if f.phase == kubevirtv1.Succeeded {
			return lcSucceeded
		}
		return lcFailed
	case kubevirtv1.Running:
		return lcRunning
	case kubevirtv1.Pending, kubevirtv1.Scheduling, kubevirtv1.Scheduled, kubevirtv1.WaitingForSync:
		return lcPreRunning
	case kubevirtv1.VmPhaseUnset:
		// KubeVirt counts a VMI it has not processed yet as starting
		// (IsUnprocessed in kv:pkg/virt-controller/watch/vm/vm.go
		// setPrintableStatus); it stays so until the scheduling deadline,
		// or for good when its age cannot be measured.
		if f.created.IsZero() || f.now.Before(f.unsetPhaseDeadline()) {
			return lcPreRunning
		}
	}
	return lcUnknown
}

// unsetPhaseDeadline is when a VMI without a phase stops counting as not
// processed yet.
func (f *facts) unsetPhaseDeadline() time.Time {
	return ceilSec(f.created.Add(f.pol.SchedulingTimeout))
}

// inferPhase reads the phase off the other fields of a VMI that carries
// none, where KubeVirt's own code makes it certain, and names the field:
//   - the newest phaseTransitionTimestamps entry is the phase it entered last;
//   - Ready=True is written only for a Running VMI (syncReadyConditionFromPod,
//     kv:pkg/virt-controller/watch/vmi/lifecycle.go); Paused exists only
//     while a domain is paused (kv:pkg/virt-handler/vm.go); the agent, and
//     interfaces it reported, need a running domain; a migration is admitted
//     and runs only for a Running VMI (migration-create-admitter.go,
//     kv:pkg/virt-controller/watch/migration/migration.go);
//   - so do fsFreezeStatus (the agent's) and two activePods (a migration's
//     target);
//   - virt-handler's Synchronized=False, LiveMigratable and
//     StorageLiveMigratable need a VMI that is Scheduled or later (it writes
//     them all in the update that records a failed start);
//   - PodScheduled and Provisioning are mirrored while it is Pending or Scheduling;
//   - a migration's target pod exists only for a running VMI.
func (f *facts) inferPhase() (kubevirtv1.VirtualMachineInstancePhase, string) {
	vmi := f.vmi
	var newest time.Time
	var last kubevirtv1.VirtualMachineInstancePhase
	for i := range vmi.Status.PhaseTransitionTimestamps {
		ts := &vmi.Status.PhaseTransitionTimestamps[i]
		if t := mt(ts.PhaseTransitionTimestamp); ts.Phase != "" && (last == "" || t.After(newest)) {
			newest, last = t, ts.Phase
		}
	}
	if last != "" {
		return last, "status.phaseTransitionTimestamps"
	}
	for _, t := range [...]kubevirtv1.VirtualMachineInstanceConditionType{
		kubevirtv1.VirtualMachineInstanceReady, kubevirtv1.VirtualMachineInstancePaused,
		kubevirtv1.VirtualMachineInstanceAgentConnected,
	} {
		if f.vmiCondTrue(t) != nil {
			return kubevirtv1.Running, "status.conditions[" + string(t) + "]"
		}
	}
	if vmi.Status.MigrationState != nil {
		return kubevirtv1.Running, "status.migrationState"
	}
	// virt-handler copies fsFreezeStatus from the running domain
	// (kv:pkg/virt-handler/vm.go:931-941 updateFSFreezeStatus).
	// activePods lists every pod the VMI owns
	// (kv:pkg/virt-controller/watch/vmi/lifecycle.go:1030-1049), and a VMI
	// only ever gets a second launcher pod as a migration's target, which
	// needs a running domain.
	if vmi.Status.FSFreezeStatus != "" {
		return kubevirtv1.Running, "status.fsFreezeStatus"
	}
	if len(vmi.Status.ActivePods) >= 2 {
		return kubevirtv1.Running, "status.activePods"
	}
	for _, m := range f.in.Migrations {
		if m != nil && f.migrationOfVMI(m) {
			return kubevirtv1.Running, "VirtualMachineInstanceMigration " + m.Name
		}
	}
	// virt-controller creates a migration's target pod only for a running
	// VMI, and labels it with the migration (kv:pkg/virt-controller/watch/
	// migration/migration.go).
	for _, p := range f.pods {
		if p.Labels[kubevirtv1.MigrationJobLabel] != "" {
			return kubevirtv1.Running, "Pod " + p.Name + " metadata.labels[" + kubevirtv1.MigrationJobLabel + "]"
		}
	}
	for i := range vmi.Status.Interfaces {
		if hasInfoSource(vmi.Status.Interfaces[i].InfoSource, infoSourceGuestAgent) {
			return kubevirtv1.Running, "status.interfaces[" + vmi.Status.Interfaces[i].Name + "].infoSource"
		}
	}
	// Volumes are hotplugged only into a running VMI
	// (kv:pkg/virt-controller/watch/vmi/storage.go).
	for i := range vmi.Status.VolumeStatus {
		if vmi.Status.VolumeStatus[i].HotplugVolume != nil {
			return kubevirtv1.Running, "status.volumeStatus[" + vmi.Status.VolumeStatus[i].Name + "].hotplugVolume"
		}
	}
	if c := f.vmiCond(kubevirtv1.VirtualMachineInstanceSynchronized); c != nil && c.Status == corev1.ConditionFalse && c.Reason == syncDomainFailed {
		return kubevirtv1.Scheduled, "status.conditions[Synchronized].reason"
	}
	// virt-handler adds LiveMigratable (and StorageLiveMigratable) in every
	// updateVMIStatus, for a Scheduled VMI whose domain is not up yet too,
	// in the same update that records a failed start
	// (kv:pkg/virt-handler/vm.go:747-765, 1084-1088, 1586-1592), and they
	// stay on a VMI that went final: Scheduled or later, never proof of a
	// running domain.
	for _, t := range [...]kubevirtv1.VirtualMachineInstanceConditionType{
		kubevirtv1.VirtualMachineInstanceIsMigratable, kubevirtv1.VirtualMachineInstanceIsStorageLiveMigratable,
	} {
		if f.vmiCond(t) != nil {
			return kubevirtv1.Scheduled, "status.conditions[" + string(t) + "]"
		}
	}
	for _, t := range [...]kubevirtv1.VirtualMachineInstanceConditionType{
		kubevirtv1.VirtualMachineInstanceConditionType(corev1.PodScheduled), kubevirtv1.VirtualMachineInstanceProvisioning,
	} {
		if f.vmiCond(t) != nil {
			return kubevirtv1.Scheduling, "status.conditions[" + string(t) + "]"
		}
	}
	// A live launcher pod is not read as a phase: with the VMI's status
	// gone its phase is not known (Running for hours, or still starting);
	// the node layer judges the pod itself (launcherDied).
	return kubevirtv1.VmPhaseUnset, ""
}

// vmShouldRun says whether virt-controller is expected to create a VMI for
// a VM that has none (kv:pkg/virt-controller/watch/vm/vm.go).
func (f *facts) vmShouldRun() bool {
	vm := f.vm
	if vm.DeletionTimestamp != nil {
		return false
	}
	if crashLooping(vm, f.runStrat) {
		return true
	}
	switch f.runStrat {
	case kubevirtv1.RunStrategyAlways, kubevirtv1.RunStrategyWaitAsReceiver:
		return true
	case kubevirtv1.RunStrategyHalted:
		return false
	}
	// Manual, Once and RerunOnFailure start only on request or on first
	// creation; the VM says so in a pending start request or in its
	// printableStatus.
	for _, r := range vm.Status.StateChangeRequests {
		if r.Action == kubevirtv1.StartRequest {
			return true
		}
	}
	// Provisioning and WaitingForVolumeBinding come before Stopped in
	// setPrintableStatus's precedence and are computed from the
	// DataVolumes and PVCs, so a stopped VM shows them too
	// (kv:pkg/virt-controller/watch/vm/vm.go, kubevirt#12544): only
	// Starting says a start is under way.
	return vm.Status.PrintableStatus == kubevirtv1.VirtualMachineStatusStarting
}

// failedDelete says virt-controller failed to delete the VM's VMI
// (the VM-only Failure condition, reason FailedDelete): the VMI exists.
func failedDelete(vm *kubevirtv1.VirtualMachine) bool {
	for i := range vm.Status.Conditions {
		c := &vm.Status.Conditions[i]
		if string(c.Type) == "Failure" && c.Status == corev1.ConditionTrue && c.Reason == "FailedDelete" {
			return true
		}
	}
	return false
}

// printableImpliesVMI says whether virt-controller computes this
// printableStatus only from an existing VMI or its pod
// (kv:pkg/virt-controller/watch/vm/vm.go setPrintableStatus): a paste that
// lost status.created (or the spec) still shows that a VMI exists.
func printableImpliesVMI(ps kubevirtv1.VirtualMachinePrintableStatus) bool {
	switch ps {
	case kubevirtv1.VirtualMachineStatusRunning, kubevirtv1.VirtualMachineStatusPaused,
		kubevirtv1.VirtualMachineStatusMigrating, kubevirtv1.VirtualMachineStatusStopping,
		kubevirtv1.VirtualMachineStatusUnschedulable, kubevirtv1.VirtualMachineStatusErrImagePull,
		kubevirtv1.VirtualMachineStatusImagePullBackOff:
		return true
	}
	return false
}

func crashLooping(vm *kubevirtv1.VirtualMachine, rs kubevirtv1.VirtualMachineRunStrategy) bool {
	if vm.Status.PrintableStatus == kubevirtv1.VirtualMachineStatusCrashLoopBackOff {
		return true
	}
	if vm.Status.StartFailure == nil || vm.Status.StartFailure.ConsecutiveFailCount <= 0 {
		return false
	}
	switch rs {
	case kubevirtv1.RunStrategyAlways, kubevirtv1.RunStrategyRerunOnFailure, kubevirtv1.RunStrategyOnce:
		return true
	}
	return false
}

// vmiPhaseSince is when the VMI entered phase; KubeVirt appends one entry
// per phase value, the newest wins if a dump carries several.
func vmiPhaseSince(vmi *kubevirtv1.VirtualMachineInstance, phase kubevirtv1.VirtualMachineInstancePhase) time.Time {
	return phaseSince(vmi.Status.PhaseTransitionTimestamps, func(ts *kubevirtv1.VirtualMachineInstancePhaseTransitionTimestamp) (bool, metav1.Time) {
		return ts.Phase == phase, ts.PhaseTransitionTimestamp
	})
}

// phaseSince is the newest of the transition timestamps that at says are
// of the phase sought (true), for the VMI's and the migration's lists.
func phaseSince[T any](stamps []T, at func(*T) (bool, metav1.Time)) time.Time {
	var t time.Time
	for i := range stamps {
		if ok, ts := at(&stamps[i]); ok {
			if c := mt(ts); c.After(t) {
				t = c
			}
		}
	}
	return t
}

// collectPods keeps the launcher pods of this VMI, sorted by name. The
// caller hands the pods the VMI controls, but an offline dump may mix in pods
// of an earlier VMI of the same VM, hotplug attachment pods or WFFC
// provisioning pods; those say nothing about this VMI.
func (f *facts) collectPods() {
	n := 0
	for _, p := range f.in.Pods {
		if f.ownPod(p) {
			n++
		}
	}
	if n == 0 {
		return
	}
	// Not a buffer inside facts: a slice into the engine itself would make
	// the engine escape to the heap.
	f.pods = make([]*corev1.Pod, 0, n)
	for _, p := range f.in.Pods {
		if f.ownPod(p) {
			f.pods = append(f.pods, p)
		}
	}
	slices.SortFunc(f.pods, func(a, b *corev1.Pod) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(string(a.UID), string(b.UID))
	})
}

func (f *facts) ownPod(p *corev1.Pod) bool {
	return membership.IsLauncherOf(p, f.vmi)
}

// podFinished says the pod runs nothing any more: its phase is final, or
// every container has terminated although the phase still says otherwise
// (virt-controller's node controller counts such a pod as not alive,
// kv:pkg/virt-controller/watch/node/node.go alivePodsOnNode).
func podFinished(p *corev1.Pod) bool {
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return true
	}
	cs := p.Status.ContainerStatuses
	if len(cs) == 0 {
		return false
	}
	for i := range cs {
		if cs[i].State.Terminated == nil {
			return false
		}
	}
	return true
}

// podPastScheduling says the pod was bound to a node: it names one, the
// scheduler's PodScheduled is True, or a kubelet reports its containers
// (only the kubelet of the node it is bound to does).
func podPastScheduling(p *corev1.Pod) bool {
	if p.Spec.NodeName != "" || len(p.Status.ContainerStatuses) > 0 || len(p.Status.InitContainerStatuses) > 0 {
		return true
	}
	switch p.Status.Phase {
	case corev1.PodRunning, corev1.PodSucceeded, corev1.PodFailed:
		return true
	}
	c := podCond(p, corev1.PodScheduled)
	return c != nil && c.Status == corev1.ConditionTrue
}

// isTarget says whether p is the target pod of the migration in progress.
// The kubevirt.io/migrationJobUID label stays on the pod after the migration
// (kv:pkg/virt-controller/watch/migration/migration.go sets it, nothing
// removes it), so it only marks a target while that migration runs.
func (f *facts) isTarget(p *corev1.Pod) bool {
	m := &f.mig
	if !m.inProgress {
		return false
	}
	if m.uid != "" && p.Labels[kubevirtv1.MigrationJobLabel] == string(m.uid) {
		return true
	}
	return m.state != nil && m.state.TargetPod != "" && p.Name == m.state.TargetPod
}

// selectActive follows virt-controller's CurrentVMIPod
// (kv:pkg/controller/controller.go): the newest pod on the VMI's node, or
// the newest pod when the VMI has no node yet. Live pods come first so that
// a finished predecessor on the same node does not hide the running one,
// and the target of a running migration is never the active pod.
func (f *facts) selectActive() {
	var best *corev1.Pod
	bestLive, bestTarget := false, false
	for _, p := range f.pods {
		// The target of a migration in progress is not the active pod,
		// until the handoff: once the VMI names the target's node, the
		// target runs the VM (a finished pod of an earlier stay on that
		// node must not stand in for it).
		if f.isTarget(p) && (f.nodeName == "" || p.Spec.NodeName != f.nodeName) {
			continue
		}
		// A pod that was bound but shows no node lost spec.nodeName in a
		// paste: it stands for the VMI's node, unless it is some
		// migration's target.
		cut := p.Spec.NodeName == "" && podPastScheduling(p) && p.Labels[kubevirtv1.MigrationJobLabel] == ""
		if f.nodeName != "" && p.Spec.NodeName != f.nodeName && !cut {
			continue
		}
		live := !podFinished(p)
		// Without a node to go by (a VMI whose status is absent or cut), a
		// pod labelled as some migration's target comes last: the VM's own
		// launcher is the one that was not created for a migration.
		target := f.nodeName == "" && p.Labels[kubevirtv1.MigrationJobLabel] != ""
		switch {
		case best == nil, target != bestTarget && !target:
		case target != bestTarget:
			continue
		case live != bestLive && live:
		case live != bestLive, !newerPod(p, best):
			continue
		}
		best, bestLive, bestTarget = p, live, target
	}
	f.active = best
}

func newerPod(a, b *corev1.Pod) bool {
	ta, tb := a.CreationTimestamp.Time, b.CreationTimestamp.Time
	if !ta.Equal(tb) {
		return ta.After(tb)
	}
	return a.Name > b.Name
}

func (f *facts) assignRoles() {
	if len(f.pods) == 0 {
		return
	}
	f.roles = make([]v1alpha1.LauncherPodRole, len(f.pods))
	for i, p := range f.pods {
		switch {
		case podFinished(p):
			f.roles[i] = v1alpha1.RoleStale
		case f.isTarget(p):
			f.roles[i] = v1alpha1.RoleMigrationTarget
		case p == f.active && f.mig.inProgress:
			f.roles[i] = v1alpha1.RoleMigrationSource
		case p == f.active:
			f.roles[i] = v1alpha1.RoleActive
		default:
			f.roles[i] = v1alpha1.RoleStale
		}
	}
}

func (f *facts) readHeartbeat() {
	if f.node == nil {
		return
	}
	hb := ReadHeartbeat(f.node, f.pol.HeartbeatTimeout, f.now)
	if hb.State == HeartbeatAbsent {
		return
	}
	f.hb = heartbeat{present: true, raw: hb.Raw, t: hb.T, deadline: hb.Deadline, read: hb}
	if hb.State == HeartbeatMalformed {
		f.hb.err = errHeartbeatTime
	}
}

// hbStale says whether the node's heartbeat is known and past its timeout.
func (f *facts) hbStale() bool {
	return f.hb.read.State == HeartbeatStale
}

// future says whether t lies beyond the tolerated clock skew.
func (f *facts) future(t time.Time) bool {
	return !t.IsZero() && t.After(f.now.Add(clockSkew))
}

func (f *facts) vmiCond(t kubevirtv1.VirtualMachineInstanceConditionType) *kubevirtv1.VirtualMachineInstanceCondition {
	if f.vmi == nil {
		return nil
	}
	return findCond(f.vmi.Status.Conditions, func(c *kubevirtv1.VirtualMachineInstanceCondition) bool { return c.Type == t })
}

func (f *facts) vmiCondTrue(t kubevirtv1.VirtualMachineInstanceConditionType) *kubevirtv1.VirtualMachineInstanceCondition {
	if c := f.vmiCond(t); c != nil && c.Status == corev1.ConditionTrue {
		return c
	}
	return nil
}

func podCond(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	return findCond(p.Status.Conditions, func(c *corev1.PodCondition) bool { return c.Type == t })
}

// findCond is the first condition of a list that is; the condition types
// of pods, nodes, VMs and VMIs share no interface.
func findCond[C any](conds []C, is func(*C) bool) *C {
	for i := range conds {
		if is(&conds[i]) {
			return &conds[i]
		}
	}
	return nil
}

// podReadiness is the launcher pod's readiness and the field it was read
// from. The kubelet writes the Ready condition with the container statuses;
// a pod that carries container statuses and no condition at all lost them
// in a paste (a `kubectl get pods` row), so the compute container's own
// ready flag stands in. known is false when neither is there.
func podReadiness(p *corev1.Pod) (ready, known bool, field string, t time.Time) {
	if c := podCond(p, corev1.PodReady); c != nil {
		return c.Status == corev1.ConditionTrue, true, "status.conditions[Ready].status", mt(c.LastTransitionTime)
	}
	if len(p.Status.Conditions) == 0 {
		if cs := computeStatus(p); cs != nil {
			return cs.Ready, true, "status.containerStatuses[compute].ready", time.Time{}
		}
		return false, false, "", time.Time{}
	}
	return false, true, "status.conditions[Ready].status", time.Time{}
}

func nodeCond(n *corev1.Node, t corev1.NodeConditionType) *corev1.NodeCondition {
	return findCond(n.Status.Conditions, func(c *corev1.NodeCondition) bool { return c.Type == t })
}

// computeStatus is the status of the launcher's compute container, the only
// container virt-controller inspects (kv:pkg/controller/controller.go).
func computeStatus(p *corev1.Pod) *corev1.ContainerStatus {
	for i := range p.Status.ContainerStatuses {
		if p.Status.ContainerStatuses[i].Name == "compute" {
			return &p.Status.ContainerStatuses[i]
		}
	}
	return nil
}

// computeTermination is how the compute container ended, nil while it has
// not.
func computeTermination(p *corev1.Pod) *corev1.ContainerStateTerminated {
	if cs := computeStatus(p); cs != nil {
		return cs.State.Terminated
	}
	return nil
}

func podRestarts(p *corev1.Pod) int32 {
	var n int32
	for i := range p.Status.ContainerStatuses {
		n += max(p.Status.ContainerStatuses[i].RestartCount, 0)
	}
	// guest-console-log is a native sidecar: its restarts show in the init
	// container statuses.
	for i := range p.Status.InitContainerStatuses {
		n += max(p.Status.InitContainerStatuses[i].RestartCount, 0)
	}
	return max(n, 0)
}

func (f *facts) paused() *kubevirtv1.VirtualMachineInstanceCondition {
	return f.vmiCondTrue(kubevirtv1.VirtualMachineInstancePaused)
}

func (f *facts) livePods() int {
	n := 0
	for _, p := range f.pods {
		if !podFinished(p) && p.DeletionTimestamp == nil {
			n++
		}
	}
	return n
}
