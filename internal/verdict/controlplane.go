package verdict

import (
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/api/v1alpha1"
)

// Synchronized=False reasons that virt-controller writes while it creates
// the launcher pod (kv:pkg/controller/controller.go:57-120). The API module
// has no constants for them.
const (
	syncErrImagePull       = "ErrImagePull"
	syncImagePullBackOff   = "ImagePullBackOff"
	syncFailedPvcNotFound  = "FailedPvcNotFound"
	syncFailedCreate       = "FailedCreate"
	nodeUnresponsiveReason = "NodeUnresponsive" // kv:pkg/virt-controller/watch/node/node.go
)

// controlPlane judges what virt-controller and virt-handler say in the VM,
// VMI and VMIM objects.
func (e *engine) controlPlane() {
	f := &e.f
	l := &e.cp
	if f.vm != nil {
		l.context(kindVM, f.vm.Name, f.runStrategyField(), f.runStrategyValue(), time.Time{})
	}
	if f.vmi != nil {
		l.context(kindVMI, f.vmi.Name, "status.phase", string(f.phase), f.phaseSince)
	}
	switch f.lc {
	case lcMissing:
		l.add(v1alpha1.VerdictUnknown, v1alpha1.ReasonVMMissing,
			"neither VirtualMachine nor VirtualMachineInstance "+quote(f.name)+" exists", time.Time{})
		l.cite(kindVM, f.name, "metadata.name", "not found", time.Time{})
	case lcInvalid:
		_, err := f.vm.RunStrategy()
		msg := "the VirtualMachine's run strategy cannot be read"
		if err != nil {
			msg += ": " + err.Error()
		}
		l.add(v1alpha1.VerdictUnknown, v1alpha1.ReasonInvalidInput, msg, time.Time{})
		l.cite(kindVM, f.vm.Name, "spec.running", "set together with spec.runStrategy", time.Time{})
	case lcStopped:
		e.cpStopped(l)
	case lcStarting:
		e.cpStarting(l)
	case lcSucceeded:
		if f.vm != nil && f.runStratOK && f.runStrat == kubevirtv1.RunStrategyAlways {
			l.add(v1alpha1.VerdictProgressing, v1alpha1.ReasonRestarting,
				"the guest shut down and run strategy Always starts a new VMI", f.phaseSince)
		} else {
			l.add(v1alpha1.VerdictSuspended, v1alpha1.ReasonVMISucceeded,
				"the guest shut down; the VMI is Succeeded", f.phaseSince)
		}
		l.cite(kindVMI, f.vmi.Name, "status.phase", string(f.phase), f.phaseSince)
	case lcFailed:
		if f.vmi.Status.Reason == nodeUnresponsiveReason {
			l.add(v1alpha1.VerdictFailed, v1alpha1.ReasonNodeUnresponsive,
				"the VMI failed: virt-controller found node "+orUnknown(f.vmi.Status.NodeName)+
					" unresponsive (stale virt-handler heartbeat, no live launcher pod)", f.phaseSince)
			l.cite(kindVMI, f.vmi.Name, "status.reason", f.vmi.Status.Reason, f.phaseSince)
		} else {
			msg := "the VMI failed on " + orUnknown(f.vmi.Status.NodeName)
			if f.vmi.Status.Reason != "" {
				msg += ": " + f.vmi.Status.Reason
			}
			l.add(v1alpha1.VerdictFailed, v1alpha1.ReasonVMIFailed, msg, f.phaseSince)
		}
		l.cite(kindVMI, f.vmi.Name, "status.phase", string(f.phase), f.phaseSince)
	case lcUnknown:
		if f.phase == kubevirtv1.VmPhaseUnset {
			l.add(v1alpha1.VerdictUnknown, v1alpha1.ReasonStatusMissing,
				"the VMI has no status.phase since "+rfc(f.created)+": its status is missing or virt-controller is not processing it", time.Time{})
			l.cite(kindVMI, f.vmi.Name, "status.phase", "", f.created)
		} else {
			l.add(v1alpha1.VerdictUnknown, v1alpha1.ReasonUnknownPhase,
				"the VMI reports phase "+quote(bound(string(f.phase), 64))+", which says nothing about whether the VM runs", f.phaseSince)
			l.cite(kindVMI, f.vmi.Name, "status.phase", string(f.phase), f.phaseSince)
		}
	case lcPreRunning:
		e.cpPreRunning(l)
	case lcRunning:
		e.cpRunning(l)
	}
	if f.vmi != nil && (f.future(f.phaseSince) || f.future(f.created)) {
		t := f.phaseSince
		if !f.future(t) {
			t = f.created
		}
		e.futureEnds(t)
		l.add(v1alpha1.VerdictUnknown, v1alpha1.ReasonFutureTimestamp,
			"the VMI carries a timestamp in the future ("+rfc(t)+"); how long it has been in phase "+
				string(f.phase)+" cannot be judged", time.Time{})
		l.cite(kindVMI, f.vmi.Name, "status.phaseTransitionTimestamps", string(f.phase), t)
	}
}

func (e *engine) cpStopped(l *layer) {
	f := &e.f
	since := vmConditionSince(f.vm)
	if f.vmi != nil {
		since = f.phaseSince
		l.add(v1alpha1.VerdictSuspended, v1alpha1.ReasonStopped,
			"the VM is stopped as declared (run strategy "+string(f.runStrat)+"); its last VMI ended "+string(f.phase), since)
	} else {
		l.add(v1alpha1.VerdictSuspended, v1alpha1.ReasonStopped,
			"the VM is stopped as declared (run strategy "+string(f.runStrat)+")", since)
	}
	l.cite(kindVM, f.vm.Name, f.runStrategyField(), f.runStrategyValue(), time.Time{})
}

// vmConditionSince is the newest lastTransitionTime among the VM's
// conditions: the last time its state changed, for want of a phase clock.
func vmConditionSince(vm *kubevirtv1.VirtualMachine) time.Time {
	if vm == nil {
		return time.Time{}
	}
	var t time.Time
	for i := range vm.Status.Conditions {
		if c := mt(vm.Status.Conditions[i].LastTransitionTime); c.After(t) {
			t = c
		}
	}
	return t
}

func (e *engine) cpStarting(l *layer) {
	f := &e.f
	vm := f.vm
	if vm.Status.PrintableStatus != "" {
		l.context(kindVM, vm.Name, "status.printableStatus", string(vm.Status.PrintableStatus), time.Time{})
	}
	if crashLooping(vm, f.runStrat) {
		msg := "the VM's VMIs keep failing; virt-controller backs off before the next start"
		l.add(v1alpha1.VerdictDegraded, v1alpha1.ReasonCrashLoopBackOff, msg, vmConditionSince(vm))
		if sf := vm.Status.StartFailure; sf != nil {
			l.cite(kindVM, vm.Name, "status.startFailure.consecutiveFailCount", strconv.Itoa(sf.ConsecutiveFailCount), mtp(sf.RetryAfterTimestamp))
		} else {
			l.cite(kindVM, vm.Name, "status.printableStatus", string(vm.Status.PrintableStatus), time.Time{})
		}
		return
	}
	if f.runStrat == kubevirtv1.RunStrategyWaitAsReceiver {
		l.add(v1alpha1.VerdictProgressing, v1alpha1.ReasonWaitingForSync,
			"the VM waits as the receiver of a decentralized migration", vmConditionSince(vm))
		l.cite(kindVM, vm.Name, f.runStrategyField(), f.runStrategyValue(), time.Time{})
		return
	}
	// The VM has no phase clock: its last condition change (or its
	// creation) is when it started to wait for a VMI.
	since := vmConditionSince(vm)
	if c := mt(vm.CreationTimestamp); c.After(since) {
		since = c
	}
	e.timedProgress(l, since, f.pol.SchedulingTimeout,
		v1alpha1.ReasonStarting, "the VM should run and waits for virt-controller to create its VMI",
		v1alpha1.ReasonStuckStarting, "the VM should run but has no VMI")
	l.cite(kindVM, vm.Name, f.runStrategyField(), f.runStrategyValue(), since)
}

// timedProgress adds Progressing until start+timeout, Degraded after; the
// deadline is the layer's staleAt.
func (e *engine) timedProgress(l *layer, start time.Time, timeout time.Duration, okReason, okMsg, stuckReason, stuckMsg string) {
	f := &e.f
	if start.IsZero() {
		l.add(v1alpha1.VerdictProgressing, okReason, okMsg, time.Time{})
		return
	}
	deadline := ceilSec(start.Add(timeout))
	l.stale(deadline)
	if crossed(f.now, deadline) {
		l.add(v1alpha1.VerdictDegraded, stuckReason,
			stuckMsg+" since "+rfc(start)+", longer than "+timeout.String(), deadline)
		return
	}
	e.deadline(deadline)
	l.add(v1alpha1.VerdictProgressing, okReason, okMsg+" (since "+rfc(start)+")", start)
}

func (e *engine) cpPreRunning(l *layer) {
	f := &e.f
	vmi := f.vmi
	if f.phase == kubevirtv1.VmPhaseUnset && !f.created.IsZero() {
		// Without a phase after the grace, the status counts as missing.
		e.deadline(ceilSec(f.created.Add(unsetPhaseGrace)))
	}
	if f.phase == kubevirtv1.WaitingForSync {
		l.add(v1alpha1.VerdictProgressing, v1alpha1.ReasonWaitingForSync,
			"the VMI waits for the source of a decentralized migration", f.phaseSince)
		return
	}
	e.syncFailure(l)
	if c := f.vmiCond(kubevirtv1.VirtualMachineInstanceConditionType(corev1.PodScheduled)); c != nil &&
		c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
		msg := "the launcher pod cannot be scheduled"
		if c.Message != "" {
			msg += ": " + c.Message
		}
		l.add(v1alpha1.VerdictDegraded, v1alpha1.ReasonUnschedulable, msg, mt(c.LastTransitionTime))
		l.cite(kindVMI, vmi.Name, "status.conditions[PodScheduled].reason", c.Reason, mt(c.LastTransitionTime))
	}
	if c := f.vmiCondTrue(kubevirtv1.VirtualMachineInstanceProvisioning); c != nil {
		// DataVolume imports take as long as the data does: no timeout.
		l.add(v1alpha1.VerdictProgressing, v1alpha1.ReasonProvisioning,
			"the VMI waits for its DataVolumes to be provisioned", mt(c.LastTransitionTime))
		l.cite(kindVMI, vmi.Name, "status.conditions[Provisioning].status", string(c.Status), mt(c.LastTransitionTime))
		return
	}
	// The timeout covers the whole road to Running, measured from the
	// first pre-running phase (or creation), so that a VMI cannot reset it
	// by moving from Pending to Scheduling.
	start := earliest(vmiPhaseSince(vmi, kubevirtv1.Pending), vmiPhaseSince(vmi, kubevirtv1.Scheduling),
		vmiPhaseSince(vmi, kubevirtv1.Scheduled))
	if start.IsZero() {
		start = f.created
	}
	phase := string(f.phase)
	if phase == "" {
		phase = "(unset)"
	}
	if f.phase == kubevirtv1.Scheduled {
		e.timedProgress(l, start, f.pol.SchedulingTimeout,
			v1alpha1.ReasonStarting, "the launcher pod runs on "+orUnknown(vmi.Status.NodeName)+" and virt-handler is starting the domain",
			v1alpha1.ReasonStuckStarting, "the VMI has not reached Running")
	} else {
		e.timedProgress(l, start, f.pol.SchedulingTimeout,
			v1alpha1.ReasonScheduling, "the VMI is "+phase,
			v1alpha1.ReasonStuckScheduling, "the VMI has been "+phase)
	}
	l.cite(kindVMI, vmi.Name, "status.phase", phase, f.phaseSince)
}

// syncFailure reads Synchronized, which KubeVirt only ever sets False and
// removes when things are fine (kv:pkg/controller/conditions.go:143-164).
func (e *engine) syncFailure(l *layer) {
	f := &e.f
	c := f.vmiCond(kubevirtv1.VirtualMachineInstanceSynchronized)
	if c == nil || c.Status != corev1.ConditionFalse {
		return
	}
	var reason, what string
	switch c.Reason {
	case syncErrImagePull, syncImagePullBackOff:
		reason, what = v1alpha1.ReasonImagePullFailed, "an image of the launcher pod cannot be pulled"
	case syncFailedPvcNotFound:
		reason, what = v1alpha1.ReasonPVCNotFound, "a PersistentVolumeClaim the VMI uses does not exist"
	case syncFailedCreate:
		reason, what = v1alpha1.ReasonLauncherCreateFailed, "virt-controller cannot create the launcher pod"
	default:
		reason, what = v1alpha1.ReasonSyncFailed, "KubeVirt cannot synchronize the VMI"
	}
	msg := what
	if c.Message != "" {
		msg += ": " + c.Message
	} else if c.Reason != "" {
		msg += ": " + c.Reason
	}
	since := mt(c.LastTransitionTime)
	l.add(v1alpha1.VerdictDegraded, reason, msg, since)
	l.cite(kindVMI, f.vmi.Name, "status.conditions[Synchronized].reason", c.Reason, since)
}

func (e *engine) cpRunning(l *layer) {
	f := &e.f
	vmi := f.vmi
	switch {
	case vmi.DeletionTimestamp != nil:
		l.add(v1alpha1.VerdictProgressing, v1alpha1.ReasonStopping, "the VMI is being deleted", mt(*vmi.DeletionTimestamp))
		l.cite(kindVMI, vmi.Name, "metadata.deletionTimestamp", rfc(mt(*vmi.DeletionTimestamp)), mt(*vmi.DeletionTimestamp))
	case f.vm != nil && f.vm.DeletionTimestamp != nil:
		l.add(v1alpha1.VerdictProgressing, v1alpha1.ReasonStopping, "the VM is being deleted", mt(*f.vm.DeletionTimestamp))
		l.cite(kindVM, f.vm.Name, "metadata.deletionTimestamp", rfc(mt(*f.vm.DeletionTimestamp)), mt(*f.vm.DeletionTimestamp))
	case f.vm != nil && f.runStratOK && f.runStrat == kubevirtv1.RunStrategyHalted:
		l.add(v1alpha1.VerdictProgressing, v1alpha1.ReasonStopping,
			"the VM is Halted and its VMI is shutting down", vmConditionSince(f.vm))
		l.cite(kindVM, f.vm.Name, f.runStrategyField(), f.runStrategyValue(), time.Time{})
	}
	if c := f.paused(); c != nil && c.Reason == pausedByUser {
		l.add(v1alpha1.VerdictSuspended, v1alpha1.ReasonPausedByUser, "the VM is paused by its user", mt(c.LastTransitionTime))
		l.cite(kindVMI, vmi.Name, "status.conditions[Paused].reason", c.Reason, mt(c.LastTransitionTime))
	}
	e.syncFailure(l)
	e.migrationRules(l)
	e.evictionRules(l)
	e.launcherCountRules(l)
	e.activePodsRules(l)
	if l.nf == 0 {
		l.add(v1alpha1.VerdictHealthy, v1alpha1.ReasonRunning, "the VMI runs on "+orUnknown(vmi.Status.NodeName), f.phaseSince)
	}
}

func (e *engine) evictionRules(l *layer) {
	f := &e.f
	if !f.evicting() {
		return
	}
	vmi := f.vmi
	from := vmi.Status.EvacuationNodeName
	if from == "" {
		from = vmi.Status.NodeName
	}
	ev := f.vmiCondTrue(kubevirtv1.VirtualMachineInstanceEvictionRequested)
	var since time.Time
	if ev != nil {
		since = mt(ev.LastTransitionTime)
	}
	lm := e.lm
	switch {
	case lm.Status != "True":
		msg := "eviction from " + orUnknown(from) + " is requested but the VMI cannot be live-migrated"
		if len(lm.Reasons) > 0 {
			msg += ": " + joinReasons(lm.Reasons)
		} else if lm.Status != "False" {
			msg += ": it has no LiveMigratable condition"
		}
		l.add(v1alpha1.VerdictDegraded, v1alpha1.ReasonEvictionBlocked, msg, since)
	case !f.mig.inProgress:
		l.add(v1alpha1.VerdictProgressing, v1alpha1.ReasonEvictionPending,
			"eviction from "+orUnknown(from)+" is requested; the VMI waits for its evacuation migration", since)
	default:
		return
	}
	if vmi.Status.EvacuationNodeName != "" {
		l.cite(kindVMI, vmi.Name, "status.evacuationNodeName", vmi.Status.EvacuationNodeName, since)
	} else {
		l.cite(kindVMI, vmi.Name, "status.conditions[EvictionRequested].status", "True", since)
	}
	if c := f.vmiCond(kubevirtv1.VirtualMachineInstanceIsMigratable); c != nil {
		l.cite(kindVMI, vmi.Name, "status.conditions[LiveMigratable].reason", c.Reason, mt(c.LastTransitionTime))
	}
	if c := f.vmiCond(kubevirtv1.VirtualMachineInstanceIsStorageLiveMigratable); c != nil && c.Status == corev1.ConditionFalse {
		l.cite(kindVMI, vmi.Name, "status.conditions[StorageLiveMigratable].message", c.Message, mt(c.LastTransitionTime))
	}
}

func joinReasons(rs []string) string {
	n := 0
	for _, r := range rs {
		n += len(r) + 2
	}
	b := make([]byte, 0, n)
	for i, r := range rs {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, r...)
	}
	return string(b)
}

// launcherCountRules flags more than one live launcher outside a migration
// (kubevirt#18320). The source launcher exits shortly after a migration, so
// a short grace after the last migration ended avoids a false alarm.
func (e *engine) launcherCountRules(l *layer) {
	f := &e.f
	if f.mig.inProgress || f.livePods() < 2 {
		return
	}
	if end := f.migrationEnded(); !end.IsZero() {
		grace := ceilSec(end.Add(launcherCleanupGrace))
		if !crossed(f.now, grace) {
			e.deadline(grace)
			return
		}
	}
	l.add(v1alpha1.VerdictDegraded, v1alpha1.ReasonMultipleLaunchers,
		strconv.Itoa(f.livePods())+" launcher pods are alive outside a migration; only "+activeName(f)+" should run the VM", time.Time{})
	for _, p := range f.pods {
		if !podFinished(p) && p.DeletionTimestamp == nil {
			l.cite(kindPod, p.Name, "status.phase", string(p.Status.Phase), mt(p.CreationTimestamp))
		}
	}
}

func activeName(f *facts) string {
	if f.active == nil {
		return "one"
	}
	return f.active.Name
}

// activePodsRules notes status.activePods entries for pods that finished or
// no longer exist. KubeVirt v1.9 lists every owned pod until it is deleted
// (kv:pkg/virt-controller/watch/vmi/lifecycle.go:1030-1048, kubevirt#12773);
// while the VM runs this is a note, not a fault.
func (e *engine) activePodsRules(l *layer) {
	f := &e.f
	ap := f.vmi.Status.ActivePods
	if len(ap) == 0 {
		return
	}
	var keys [16]types.UID
	uids := keys[:0]
	for uid := range ap {
		uids = append(uids, uid)
	}
	slices.Sort(uids)
	added := false
	for _, uid := range uids {
		var pod *corev1.Pod
		for _, p := range f.pods {
			if p.UID == uid {
				pod = p
			}
		}
		// The active pod's own fate, and a pod missing altogether, are the
		// node layer's to tell.
		if (pod != nil && !podFinished(pod)) || f.active == nil || pod == f.active {
			continue
		}
		if !added {
			l.add(v1alpha1.VerdictHealthy, v1alpha1.ReasonStaleActivePods,
				"the VMI runs on "+orUnknown(f.vmi.Status.NodeName)+"; status.activePods still lists finished or deleted launcher pods (kubevirt#12773)", time.Time{})
			added = true
		}
		if pod != nil {
			l.cite(kindPod, pod.Name, "status.phase", string(pod.Status.Phase), time.Time{})
		} else {
			l.cite(kindVMI, f.vmi.Name, "status.activePods["+string(uid)+"]", ap[uid]+" (pod not found)", time.Time{})
		}
	}
}

// runStrategyField names the field the run strategy was read from:
// spec.running (deprecated, true → Always, false → Halted) when the VM
// still uses it.
func (f *facts) runStrategyField() string {
	if f.vm != nil && f.vm.Spec.RunStrategy == nil && f.vm.Spec.Running != nil {
		return "spec.running"
	}
	return "spec.runStrategy"
}

func (f *facts) runStrategyValue() string {
	if f.vm != nil && f.vm.Spec.RunStrategy == nil && f.vm.Spec.Running != nil {
		return strconv.FormatBool(*f.vm.Spec.Running)
	}
	return string(f.runStrat)
}
