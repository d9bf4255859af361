package verdict

import (
	"slices"
	"strconv"
	"strings"
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
	syncInvalidImageName   = "InvalidImageName"
	nodeUnresponsiveReason = "NodeUnresponsive" // kv:pkg/virt-controller/watch/node/node.go
	// syncDomainFailed is the reason virt-handler gives every
	// Synchronized=False it writes (kv:pkg/virt-handler/vm.go
	// handleSyncError → CheckFailure).
	syncDomainFailed = "Synchronizing with the Domain failed."
)

// stopMargin is added to the termination grace period before a VMI that is
// being deleted counts as stuck; with KubeVirt's default grace of 180s the
// deadline is 5 minutes, as in KubeVirt's VirtualMachineStuckOnNode alert
// (kv:pkg/monitoring/rules/alerts/vms.go).
const (
	stopMargin         = 2 * time.Minute
	defaultStopGrace   = 180 * time.Second
	vmFailureCondition = "Failure" // kv:pkg/virt-controller/watch/vm/vm.go processFailureCondition
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
		if f.inferredFrom != "" {
			l.context(kindVMI, f.vmi.Name, "status.phase", "absent; "+string(f.phase)+" inferred from "+f.inferredFrom, f.phaseSince)
		} else {
			l.context(kindVMI, f.vmi.Name, "status.phase", string(f.phase), f.phaseSince)
		}
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
	case lcVMIUnseen:
		e.cpVMIUnseen(l)
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
		e.syncFailure(l)
		if f.phase == kubevirtv1.VmPhaseUnset {
			l.add(v1alpha1.VerdictUnknown, v1alpha1.ReasonStatusMissing,
				"the VMI has no status.phase since "+rfc(f.created)+", longer than "+f.pol.SchedulingTimeout.String()+
					": its status is missing or virt-controller is not processing it", f.unsetPhaseDeadline())
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
	e.stuckDeletion(l)
	e.targetPodFailed(l)
	e.phaseBehindLauncher(l)
	e.cpAcrossPhases(l)
}

// cpAcrossPhases runs the control-plane rules that do not depend on the
// lifecycle branch: the objects they read decide whether they apply.
func (e *engine) cpAcrossPhases(l *layer) {
	f := &e.f
	switch f.lc {
	case lcPreRunning, lcRunning, lcFailed, lcUnknown:
		// Rules whose objects exist whatever the phase says: a failed
		// migration next to a VMI that shows only metadata is still a
		// failed migration.
		e.migrationRules(l)
		e.evictionRules(l)
		if f.lc != lcFailed {
			e.launcherCountRules(l)
		}
		e.vmiRuntimeRules(l)
		e.vmiStateNotes(l)
	}
	if f.vm != nil {
		e.vmFailure(l)
		e.vmStateNotes(l)
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
	if e.cpManualRecovery(l) {
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
	// virt-controller creates the VMI once the VM's DataVolumes are ready
	// (kv:pkg/virt-controller/watch/vm/vm.go handleDataVolumes): while CDI
	// reports an import on its way the VM waits for it, however long.
	if f.dvImporting() {
		l.add(v1alpha1.VerdictProgressing, v1alpha1.ReasonProvisioning,
			"the VM should run and waits for its DataVolumes before virt-controller creates its VMI (CDI reports the import on its way)", since)
		l.cite(kindVM, vm.Name, f.runStrategyField(), f.runStrategyValue(), since)
		return
	}
	e.timedProgress(l, since, f.pol.SchedulingTimeout,
		v1alpha1.ReasonStarting, "the VM should run and waits for virt-controller to create its VMI",
		v1alpha1.ReasonStuckStarting, "the VM should run but has no VMI")
	l.cite(kindVM, vm.Name, f.runStrategyField(), f.runStrategyValue(), since)
}

// provisioning times a wait for the VM's volumes with
// Policy.UnhealthyStateTimeout, unless the storage facts show a DataVolume
// that CDI reports on its way and none failing: an import lasts as long as
// its data does, and the storage layer says how far it is
// (DataVolumeImporting).
func (e *engine) provisioning(l *layer, since time.Time, okReason, okMsg, stuckReason, stuckMsg string) {
	if e.f.dvImporting() {
		l.add(v1alpha1.VerdictProgressing, okReason, okMsg+" (CDI reports the import on its way)", since)
		return
	}
	e.timedProgress(l, since, e.f.pol.UnhealthyStateTimeout, okReason, okMsg, stuckReason, stuckMsg)
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
	if f.phase == kubevirtv1.WaitingForSync {
		l.add(v1alpha1.VerdictProgressing, v1alpha1.ReasonWaitingForSync,
			"the VMI waits for the source of a decentralized migration", f.phaseSince)
		return
	}
	e.syncFailure(l)
	defer e.vmPrintableCause(l)
	if c := f.vmiCond(kubevirtv1.VirtualMachineInstanceConditionType(corev1.PodScheduled)); c != nil &&
		c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable && f.active != nil && podPastScheduling(f.active) {
		// virt-controller copies PodScheduled from the pod on its next
		// sync (kv:pkg/virt-controller/watch/vmi/lifecycle.go): a pod
		// bound to a node makes the copy stale, not the start blocked.
		field, value := "spec.nodeName", f.active.Spec.NodeName
		if value == "" {
			field, value = "status.containerStatuses", "reported by a kubelet"
		}
		l.context(kindPod, f.active.Name, field, value+" (the VMI's PodScheduled=False is stale)", time.Time{})
	} else if c != nil && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
		msg := withDetail("the launcher pod cannot be scheduled", c.Message)
		l.add(v1alpha1.VerdictDegraded, v1alpha1.ReasonUnschedulable, msg, mt(c.LastTransitionTime))
		l.cite(kindVMI, vmi.Name, "status.conditions[PodScheduled].reason", c.Reason, mt(c.LastTransitionTime))
	}
	if f.phase == kubevirtv1.VmPhaseUnset {
		// KubeVirt counts an unprocessed VMI as starting; past the
		// scheduling deadline its status counts as missing.
		msg := "the VMI has no status yet: virt-controller has not processed it"
		if !f.created.IsZero() {
			e.deadline(f.unsetPhaseDeadline())
			l.stale(f.unsetPhaseDeadline())
			msg += " (created " + rfc(f.created) + ")"
		}
		l.add(v1alpha1.VerdictProgressing, v1alpha1.ReasonScheduling, msg, f.created)
		l.cite(kindVMI, vmi.Name, "status.phase", "", f.created)
		return
	}
	// DataVolume imports take as long as the data does, but KubeVirt's
	// VirtualMachineStuckInUnhealthyState alert calls a VM Provisioning for
	// 10 minutes stuck (kv:pkg/monitoring/rules/alerts/vms.go:136-152):
	// past Policy.UnhealthyStateTimeout it is StuckProvisioning.
	if c := f.vmiCondTrue(kubevirtv1.VirtualMachineInstanceProvisioning); c != nil {
		since := mt(c.LastTransitionTime)
		e.provisioning(l, since,
			v1alpha1.ReasonProvisioning, "the VMI waits for its DataVolumes to be provisioned",
			v1alpha1.ReasonStuckProvisioning, "the VMI has waited for its DataVolumes to be provisioned")
		l.cite(kindVMI, vmi.Name, "status.conditions[Provisioning].status", string(c.Status), since)
		return
	}
	if c := f.vmiCond(kubevirtv1.VirtualMachineInstanceDataVolumesReady); c != nil && c.Status == corev1.ConditionFalse {
		since := mt(c.LastTransitionTime)
		e.provisioning(l, since,
			v1alpha1.ReasonProvisioning, withDetail("the VMI waits for its DataVolumes", c.Message),
			v1alpha1.ReasonStuckProvisioning, withDetail("the VMI has waited for its DataVolumes", c.Message))
		l.cite(kindVMI, vmi.Name, "status.conditions[DataVolumesReady].reason", c.Reason, since)
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

// syncCondition is Synchronized=False, which KubeVirt only ever sets False
// and removes when things are fine (kv:pkg/controller/conditions.go), and
// whether virt-handler wrote it. virt-controller writes it only while it
// creates the launcher pod: on its update path a Scheduled or Running VMI
// returns early (kv:pkg/virt-controller/watch/vmi/lifecycle.go
// prepareVMIPatch), so there any Synchronized=False is virt-handler's, as is
// every one with handleSyncError's reason (kv:pkg/virt-handler/vm.go).
func (f *facts) syncCondition() (c *kubevirtv1.VirtualMachineInstanceCondition, byHandler bool) {
	c = f.vmiCond(kubevirtv1.VirtualMachineInstanceSynchronized)
	if c == nil || c.Status != corev1.ConditionFalse {
		return nil, false
	}
	switch c.Reason {
	case syncDomainFailed:
		return c, true
	case syncErrImagePull, syncImagePullBackOff, syncInvalidImageName, syncFailedPvcNotFound, syncFailedCreate:
		return c, false
	}
	return c, f.phase == kubevirtv1.Scheduled || f.phase == kubevirtv1.Running
}

// syncFailure reads the Synchronized=False that virt-controller wrote; the
// node layer reads virt-handler's (domainSync).
func (e *engine) syncFailure(l *layer) {
	f := &e.f
	c, byHandler := f.syncCondition()
	if c == nil || byHandler {
		return
	}
	var reason, what string
	switch c.Reason {
	case syncErrImagePull, syncImagePullBackOff, syncInvalidImageName:
		reason, what = v1alpha1.ReasonImagePullFailed, "an image of the launcher pod cannot be pulled"
	case syncFailedPvcNotFound:
		reason, what = v1alpha1.ReasonPVCNotFound, "a PersistentVolumeClaim the VMI uses does not exist"
	case syncFailedCreate:
		reason, what = v1alpha1.ReasonLauncherCreateFailed, "virt-controller cannot create the launcher pod"
	default:
		reason, what = v1alpha1.ReasonSyncFailed, "virt-controller cannot synchronize the VMI"
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
		e.stopping(l, kindVMI, vmi.Name, "the VMI is being deleted", mt(*vmi.DeletionTimestamp))
	case f.vm != nil && f.vm.DeletionTimestamp != nil:
		e.stopping(l, kindVM, f.vm.Name, "the VM is being deleted", mt(*f.vm.DeletionTimestamp))
	case f.vm != nil && f.runStratOK && f.runStrat == kubevirtv1.RunStrategyHalted:
		// The VM has no stop clock: no deadline.
		l.add(v1alpha1.VerdictProgressing, v1alpha1.ReasonStopping,
			"the VM is Halted and its VMI is shutting down", vmConditionSince(f.vm))
		l.cite(kindVM, f.vm.Name, f.runStrategyField(), f.runStrategyValue(), time.Time{})
	}
	if c := f.paused(); c != nil && c.Reason == pausedByUser {
		l.add(v1alpha1.VerdictSuspended, v1alpha1.ReasonPausedByUser, "the VM is paused by its user", mt(c.LastTransitionTime))
		l.cite(kindVMI, vmi.Name, "status.conditions[Paused].reason", c.Reason, mt(c.LastTransitionTime))
	}
	e.syncFailure(l)
	e.activePodsRules(l)
	e.domainMigration(l)
	// Always added: notes never outrank it, worse findings always do.
	l.add(v1alpha1.VerdictHealthy, v1alpha1.ReasonRunning, "the VMI runs on "+orUnknown(vmi.Status.NodeName), f.phaseSince)
}

// stopGrace is a termination grace period as KubeVirt applies it:
// KubeVirt's default when unset (or negative, which the API rejects).
func stopGrace(g *int64) time.Duration {
	if g != nil && *g >= 0 {
		return time.Duration(*g) * time.Second
	}
	return defaultStopGrace
}

// stopping is a deletion in progress, stuck once it outlives the
// termination grace period plus stopMargin.
func (e *engine) stopping(l *layer, kind, name, msg string, since time.Time) {
	f := &e.f
	grace := stopGrace(f.vmi.Spec.TerminationGracePeriodSeconds)
	deadline := ceilSec(since.Add(grace + stopMargin))
	if !since.IsZero() && crossed(f.now, deadline) {
		holders := ""
		if kind == kindVMI {
			holders = e.deletionHolders()
		}
		l.add(v1alpha1.VerdictDegraded, v1alpha1.ReasonStuckStopping,
			msg+" since "+rfc(since)+", longer than its grace period "+grace.String()+" plus "+stopMargin.String()+holders, deadline)
		l.cite(kind, name, "metadata.deletionTimestamp", rfc(since), since)
		if kind == kindVMI {
			e.citeDeletionHolders(l)
		}
		return
	}
	if !since.IsZero() {
		e.deadline(deadline)
		l.stale(deadline)
	}
	l.add(v1alpha1.VerdictProgressing, v1alpha1.ReasonStopping, msg, since)
	l.cite(kind, name, "metadata.deletionTimestamp", rfc(since), since)
}

// stuckDeletion judges the deletion of a VMI that is not Running (cpRunning
// judges that one): a final VMI, or one whose phase is absent, keeps its
// deletionTimestamp for as long as virt-controller's finalizer holds it, and
// virt-controller removes the finalizer only once every launcher pod is
// deleted (kv:pkg/virt-controller/watch/vmi/lifecycle.go:459-475,
// allPodsDeleted). A launcher pod on an unreachable node never is: the VM
// is stuck terminating and cannot get a new VMI. Until the deadline the
// lifecycle's own verdict stands.
func (e *engine) stuckDeletion(l *layer) {
	f := &e.f
	if f.vmi == nil || f.vmi.DeletionTimestamp == nil || f.lc == lcRunning {
		return
	}
	since := mt(*f.vmi.DeletionTimestamp)
	if since.IsZero() {
		return
	}
	grace := stopGrace(f.vmi.Spec.TerminationGracePeriodSeconds)
	deadline := ceilSec(since.Add(grace + stopMargin))
	if !crossed(f.now, deadline) {
		e.deadline(deadline)
		l.stale(deadline)
		return
	}
	phase := string(f.phase)
	if f.vmi.Status.Phase == kubevirtv1.VmPhaseUnset {
		phase = "without a phase"
	}
	l.add(v1alpha1.VerdictDegraded, v1alpha1.ReasonStuckStopping,
		"the VMI ("+phase+") is being deleted since "+rfc(since)+", longer than its grace period "+grace.String()+
			" plus "+stopMargin.String()+e.deletionHolders(), deadline)
	l.cite(kindVMI, f.vmi.Name, "metadata.deletionTimestamp", rfc(since), since)
	e.citeDeletionHolders(l)
}

// targetPodFailed judges a failed launcher pod labelled
// kubevirt.io/migrationJobUID: virt-controller creates such a pod only as a
// migration's target (kv:pkg/virt-controller/watch/migration/migration.go),
// so its failure is the migration's, which KubeVirt then fails, never the
// VM's own launcher failing. It speaks when the migration's own objects do
// not say so yet: the VMIM and the VMI's migrationState lag the pod, or the
// input has neither. Only the newest migration's target counts (an older
// one is history), and like a failed migration only for
// MigrationFailureTTL.
func (e *engine) targetPodFailed(l *layer) {
	f := &e.f
	m := &f.mig
	if f.vmi == nil || (m.present && !m.inProgress) {
		return
	}
	for _, p := range f.pods {
		uid := p.Labels[kubevirtv1.MigrationJobLabel]
		if uid == "" || p == f.active || (m.present && m.uid != "" && uid != string(m.uid)) {
			continue
		}
		term := computeTermination(p)
		failed := p.Status.Phase == corev1.PodFailed ||
			(term != nil && (term.ExitCode != 0 || term.Reason == "OOMKilled" || term.Reason == "Error"))
		if !failed {
			continue
		}
		end := podEnd(p, term)
		if ttl := ceilSec(end.Add(f.pol.MigrationFailureTTL)); !end.IsZero() {
			if crossed(f.now, ttl) {
				continue
			}
			e.deadline(ttl)
		}
		label := "the migration"
		if m.name != "" {
			label = "migration " + m.name
		}
		msg := label + " failed: its target pod " + p.Name + " on " + orUnknown(p.Spec.NodeName) + " is Failed"
		switch {
		case p.Status.Reason != "":
			msg += " (" + p.Status.Reason + ")"
		case term != nil && term.Reason != "":
			msg += " (compute " + term.Reason + ")"
		}
		if f.vmi.Status.NodeName != "" {
			msg += "; the VM still runs on " + f.vmi.Status.NodeName
		}
		l.add(v1alpha1.VerdictDegraded, v1alpha1.ReasonMigrationFailed, msg, end)
		l.cite(kindPod, p.Name, "metadata.labels["+kubevirtv1.MigrationJobLabel+"]", uid, time.Time{})
		l.cite(kindPod, p.Name, "status.phase", string(p.Status.Phase), end)
		return
	}
}

// phaseBehindLauncher judges a VMI whose phase says it is still starting
// while its launcher has ended: virt-controller fails such a VMI on its next
// sync (kv:pkg/virt-controller/watch/vmi/lifecycle.go:370-457), so a phase
// that stays is a lifecycle that no longer matches the pod. The node layer
// names the launcher's end; this is the status that trails it, judged past
// the lag grace from the pod's end.
func (e *engine) phaseBehindLauncher(l *layer) {
	f := &e.f
	p := f.active
	if f.lc != lcPreRunning || f.vmi.Status.Phase == kubevirtv1.VmPhaseUnset || p == nil ||
		p.Labels[kubevirtv1.MigrationJobLabel] != "" || p.Status.Phase == corev1.PodSucceeded {
		return
	}
	term := computeTermination(p)
	if term == nil && p.Status.Phase != corev1.PodFailed {
		return
	}
	t := podEnd(p, term)
	// Within the lag grace the phase's own verdict stands: the layer
	// already says the VMI is on its way.
	if end := ceilSec(t.Add(f.pol.LagGrace)); !t.IsZero() && !f.future(t) && !crossed(f.now, end) {
		e.deadline(end)
		l.stale(end)
		return
	}
	l.add(v1alpha1.VerdictDegraded, v1alpha1.ReasonStatusLagging,
		"the VMI is still "+string(f.phase)+" but its launcher pod "+p.Name+" has ended: the VMI's phase trails the pod", t)
	if term != nil {
		l.cite(kindPod, p.Name, "status.containerStatuses[compute].state.terminated.reason", term.Reason, t)
	} else {
		l.cite(kindPod, p.Name, "status.phase", string(p.Status.Phase), t)
	}
}

// deletionHolders says what keeps a VMI that is being deleted: the launcher
// pods that still exist, which virt-controller waits for before it removes
// its finalizer.
func (e *engine) deletionHolders() string {
	f := &e.f
	if len(f.pods) == 0 {
		if len(f.vmi.Finalizers) == 0 {
			return ""
		}
		return "; finalizers " + joinReasons(f.vmi.Finalizers) + " remain"
	}
	msg := "; virt-controller removes its finalizer only once every launcher pod is deleted, and " +
		strconv.Itoa(len(f.pods)) + " still exist:"
	for i, p := range f.pods {
		if i == maxHolders {
			msg += " …"
			break
		}
		if i > 0 {
			msg += ","
		}
		msg += " " + p.Name + " on " + orUnknown(p.Spec.NodeName) + " (" + f.nodeReadiness(p.Spec.NodeName) + ")"
	}
	return msg
}

// maxHolders bounds the pods a stuck deletion names and cites.
const maxHolders = 3

// citeDeletionHolders cites the VMI's finalizers and its launcher pods that
// still exist, with their node's readiness.
func (e *engine) citeDeletionHolders(l *layer) {
	f := &e.f
	if len(f.vmi.Finalizers) > 0 {
		l.cite(kindVMI, f.vmi.Name, "metadata.finalizers", joinReasons(f.vmi.Finalizers), time.Time{})
	}
	for i, p := range f.pods {
		if i == maxHolders {
			break
		}
		if p.DeletionTimestamp != nil {
			l.cite(kindPod, p.Name, "metadata.deletionTimestamp", rfc(mt(*p.DeletionTimestamp)), mt(*p.DeletionTimestamp))
		} else {
			l.cite(kindPod, p.Name, "status.phase", string(p.Status.Phase), time.Time{})
		}
		if n := f.in.Nodes[p.Spec.NodeName]; n != nil {
			if c := nodeCond(n, corev1.NodeReady); c != nil {
				l.cite(kindNode, n.Name, "status.conditions[Ready].status", string(c.Status), mt(c.LastTransitionTime))
			}
		}
	}
}

// nodeReadiness words a node's Ready condition as far as the input tells.
func (f *facts) nodeReadiness(name string) string {
	n := f.in.Nodes[name]
	switch {
	case name == "":
		return "not scheduled"
	case n == nil && f.in.Uncaptured.Nodes:
		return "node not in the input"
	case n == nil:
		return "node not found"
	}
	c := nodeCond(n, corev1.NodeReady)
	switch {
	case c == nil:
		return "node without a Ready condition"
	case c.Status == corev1.ConditionTrue:
		return "node Ready"
	case c.Status == corev1.ConditionFalse:
		return "node not Ready"
	}
	return "node readiness " + string(c.Status)
}

// vmiRuntimeRules reads the VMI's conditions about changes applied to a
// live VMI: memory and CPU hotplug that failed (written by virt-handler) or
// is still to be applied (hotplugRules). Hotplugged volumes are the storage
// layer's (hotplugVolumeRules).
func (e *engine) vmiRuntimeRules(l *layer) {
	f := &e.f
	vmi := f.vmi
	for _, t := range [...]kubevirtv1.VirtualMachineInstanceConditionType{
		kubevirtv1.VirtualMachineInstanceMemoryChange, kubevirtv1.VirtualMachineInstanceVCPUChange,
	} {
		c := f.vmiCond(t)
		if c == nil || c.Status != corev1.ConditionFalse || !failureWord(c.Reason+" "+c.Message) {
			continue
		}
		msg := string(t) + " failed"
		if c.Reason != "" {
			msg += ": " + c.Reason
		}
		if c.Message != "" {
			msg += " (" + c.Message + ")"
		}
		l.add(v1alpha1.VerdictDegraded, v1alpha1.ReasonHotplugFailed, msg, mt(c.LastTransitionTime))
		l.cite(kindVMI, vmi.Name, "status.conditions["+string(t)+"].reason", c.Reason, mt(c.LastTransitionTime))
	}
	e.hotplugRules(l)
}

// failureWord says whether a reason or message reports a failure rather
// than a step ("Memory Hotplug Failed", "FailedAttachVolume", "...Error").
func failureWord(s string) bool {
	s = strings.ToLower(s)
	return strings.Contains(s, "fail") || strings.Contains(s, "error")
}

// vmFailure reads the VM's own Failure condition, which exists only on the
// VM (kv:pkg/virt-controller/watch/vm/vm.go processFailureCondition):
// virt-controller could not create, delete or update the VMI, or hotplug.
func (e *engine) vmFailure(l *layer) {
	f := &e.f
	if f.vm == nil {
		return
	}
	for i := range f.vm.Status.Conditions {
		c := &f.vm.Status.Conditions[i]
		if string(c.Type) != vmFailureCondition || c.Status != corev1.ConditionTrue {
			continue
		}
		reason := v1alpha1.ReasonVMFailure
		if strings.HasPrefix(c.Reason, "HotPlug") {
			reason = v1alpha1.ReasonHotplugFailed
		}
		msg := "virt-controller reports a failure on the VM"
		if c.Reason != "" {
			msg += ": " + c.Reason
		}
		if c.Message != "" {
			msg += " (" + c.Message + ")"
		}
		// virt-controller retries and clears the condition: a failure
		// counts once it outlives the lag grace (kubevirt#7339).
		e.contradiction(l, mt(c.LastTransitionTime), v1alpha1.VerdictDegraded, reason, msg)
		l.cite(kindVM, f.vm.Name, "status.conditions[Failure].reason", c.Reason, mt(c.LastTransitionTime))
	}
}

// printableCause maps the error states of the VM's printableStatus, which
// virt-controller computes from the VMI, its pod, DataVolumes and PVCs
// (kv:pkg/virt-controller/watch/vm/vm.go setPrintableStatus), to a reason.
func printableCause(ps kubevirtv1.VirtualMachinePrintableStatus) (string, string) {
	switch ps {
	case kubevirtv1.VirtualMachineStatusUnschedulable:
		return v1alpha1.ReasonUnschedulable, "the launcher pod cannot be scheduled"
	case kubevirtv1.VirtualMachineStatusErrImagePull, kubevirtv1.VirtualMachineStatusImagePullBackOff:
		return v1alpha1.ReasonImagePullFailed, "an image of the launcher pod cannot be pulled"
	case kubevirtv1.VirtualMachineStatusPvcNotFound:
		return v1alpha1.ReasonPVCNotFound, "a PersistentVolumeClaim the VM uses does not exist"
	case kubevirtv1.VirtualMachineStatusDataVolumeError:
		return v1alpha1.ReasonDataVolumeError, "a DataVolume the VM uses failed or does not exist"
	case kubevirtv1.VirtualMachineStatusCrashLoopBackOff:
		return v1alpha1.ReasonCrashLoopBackOff, "the VM's VMIs keep failing; virt-controller backs off before the next start"
	}
	return "", ""
}

// vmPrintableCause names the cause the VM's printableStatus gives a VMI
// that has not started, when the VMI has no cause of its own.
func (e *engine) vmPrintableCause(l *layer) {
	f := &e.f
	if f.vm == nil || l.severest() >= v1alpha1.VerdictDegraded.Severity() {
		return
	}
	reason, what := printableCause(f.vm.Status.PrintableStatus)
	if reason == "" || l.has(reason) {
		return
	}
	since := vmConditionSince(f.vm)
	l.add(v1alpha1.VerdictDegraded, reason, what+" (the VM's printableStatus is "+string(f.vm.Status.PrintableStatus)+")", since)
	l.cite(kindVM, f.vm.Name, "status.printableStatus", string(f.vm.Status.PrintableStatus), since)
}

// cpVMIUnseen judges a VM whose status says its VMI exists when the input
// has none: the VM's printableStatus and conditions are all there is.
func (e *engine) cpVMIUnseen(l *layer) {
	f := &e.f
	vm := f.vm
	ps := vm.Status.PrintableStatus
	since := vmConditionSince(vm)
	l.context(kindVM, vm.Name, "status.created", strconv.FormatBool(vm.Status.Created), time.Time{})
	if f.runStratOK && f.runStrat == kubevirtv1.RunStrategyHalted && !isVMErrorStatus(ps) {
		e.unseenStopping(l, "the VM is Halted and its VMI, not in the input, is shutting down")
		l.cite(kindVM, vm.Name, f.runStrategyField(), f.runStrategyValue(), time.Time{})
		return
	}
	if reason, what := printableCause(ps); reason != "" {
		l.add(v1alpha1.VerdictDegraded, reason, what+" (the VM's printableStatus is "+string(ps)+")", since)
		l.cite(kindVM, vm.Name, "status.printableStatus", string(ps), since)
		return
	}
	switch ps {
	// Waits with no VMI to time: past Policy.UnhealthyStateTimeout from the
	// VM's last condition change they are stuck, as KubeVirt's
	// VirtualMachineStuckInUnhealthyState alert says of a VM Provisioning
	// or Starting with no VMI for 10 minutes
	// (kv:pkg/monitoring/rules/alerts/vms.go:136-152).
	case kubevirtv1.VirtualMachineStatusProvisioning, kubevirtv1.VirtualMachineStatusWaitingForVolumeBinding:
		e.provisioning(l, since,
			v1alpha1.ReasonProvisioning, "the VM's volumes are being provisioned (printableStatus "+string(ps)+")",
			v1alpha1.ReasonStuckProvisioning, "the VM has waited for its volumes (printableStatus "+string(ps)+")")
	case kubevirtv1.VirtualMachineStatusStarting:
		e.timedProgress(l, since, f.pol.UnhealthyStateTimeout,
			v1alpha1.ReasonStarting, "the VM is starting (printableStatus Starting)",
			v1alpha1.ReasonStuckStarting, "the VM has been starting (printableStatus Starting)")
	case kubevirtv1.VirtualMachineStatusStopping, kubevirtv1.VirtualMachineStatusTerminating:
		e.unseenStopping(l, "the VM is stopping (printableStatus "+string(ps)+")")
	case kubevirtv1.VirtualMachineStatusStopped:
		if f.runStrat != kubevirtv1.RunStrategyAlways {
			l.add(v1alpha1.VerdictUnknown, v1alpha1.ReasonVMINotObserved,
				"the VM says its VMI exists (status.created) and is Stopped, but the VMI is not in the input", since)
			break
		}
		// Run strategy Always replaces a final VMI: its deletion and the
		// new VMI's creation are one sync apart.
		l.add(v1alpha1.VerdictProgressing, v1alpha1.ReasonRestarting,
			"the VM's last VMI stopped and run strategy Always starts a new one", since)
	case kubevirtv1.VirtualMachineStatusMigrating:
		l.add(v1alpha1.VerdictProgressing, v1alpha1.ReasonMigrating, "the VM is migrating (printableStatus Migrating)", since)
	case kubevirtv1.VirtualMachineStatusRunning:
		if c := vmReady(vm); c != nil {
			l.add(v1alpha1.VerdictHealthy, v1alpha1.ReasonRunning,
				"the VM reports its VMI Running and Ready (printableStatus Running, Ready=True); the VMI is not in the input", mt(c.LastTransitionTime))
			l.cite(kindVM, vm.Name, "status.conditions[Ready].status", string(c.Status), mt(c.LastTransitionTime))
			break
		}
		fallthrough
	default:
		l.add(v1alpha1.VerdictUnknown, v1alpha1.ReasonVMINotObserved,
			"the VM says its VMI exists (status.created) but the VMI is not in the input; printableStatus is "+orUnknown(string(ps)), since)
	}
	l.cite(kindVM, vm.Name, "status.printableStatus", string(ps), since)
}

// unseenStopping times the stop of a VMI the input lacks. The VM's clock is
// its own deletionTimestamp, else its last condition change (virt-controller
// turns the VM's Ready False when the stop begins); the grace is the
// template's, which virt-controller copies into the VMI. Without a clock it
// stays Progressing.
func (e *engine) unseenStopping(l *layer, msg string) {
	f := &e.f
	vm := f.vm
	since := vmConditionSince(vm)
	if vm.DeletionTimestamp != nil {
		since = mt(*vm.DeletionTimestamp)
	}
	var g *int64
	if t := vm.Spec.Template; t != nil {
		g = t.Spec.TerminationGracePeriodSeconds
	}
	e.timedProgress(l, since, stopGrace(g)+stopMargin,
		v1alpha1.ReasonStopping, msg, v1alpha1.ReasonStuckStopping, "the VM has been stopping")
}

func isVMErrorStatus(ps kubevirtv1.VirtualMachinePrintableStatus) bool {
	r, _ := printableCause(ps)
	return r != ""
}

// vmReady is the VM's Ready condition when it is True: virt-controller's
// copy of the VMI's, itself the launcher pod's readiness.
func vmReady(vm *kubevirtv1.VirtualMachine) *kubevirtv1.VirtualMachineCondition {
	if c := vmCond(vm, kubevirtv1.VirtualMachineReady); c != nil && c.Status == corev1.ConditionTrue {
		return c
	}
	return nil
}

func vmCond(vm *kubevirtv1.VirtualMachine, t kubevirtv1.VirtualMachineConditionType) *kubevirtv1.VirtualMachineCondition {
	return findCond(vm.Status.Conditions, func(c *kubevirtv1.VirtualMachineCondition) bool { return c.Type == t })
}

// evictionRules follow the VMI's eviction strategy as KubeVirt's eviction
// admitter does (kv:pkg/virt-api/webhooks/validating-webhook/admitters/
// pod-eviction-admitter.go): under LiveMigrate the eviction of a VMI that
// cannot migrate is refused and nothing is written on it; under
// LiveMigrateIfPossible it is marked only when it can migrate; under
// External it is always marked and never migrated, an external controller
// (cluster-api-provider-kubevirt) stops it. So a marked VMI that cannot
// migrate was marked under External, or lost migratability after it was
// marked; and the drain that is really stuck leaves no mark at all — the
// case of KubeVirt's VMCannotBeEvicted alert, which NotEvictable repeats.
func (e *engine) evictionRules(l *layer) {
	f := &e.f
	vmi := f.vmi
	lm := e.lm
	strategy := evictionStrategy(vmi)
	if !f.evicting() {
		if strategy == kubevirtv1.EvictionStrategyLiveMigrate && lm != nil && lm.Status == "False" {
			msg := "evictionStrategy is LiveMigrate but the VMI cannot be live-migrated, so a drain of " +
				orUnknown(vmi.Status.NodeName) + " will be refused"
			if len(lm.Reasons) > 0 {
				msg += ": " + joinReasons(lm.Reasons)
			}
			l.note(v1alpha1.ReasonNotEvictable, msg, time.Time{})
			l.cite(kindVMI, vmi.Name, "spec.evictionStrategy", string(strategy), time.Time{})
			if c := f.vmiCond(kubevirtv1.VirtualMachineInstanceIsMigratable); c != nil {
				l.cite(kindVMI, vmi.Name, "status.conditions[LiveMigratable].reason", c.Reason, mt(c.LastTransitionTime))
			}
		}
		return
	}
	from := vmi.Status.EvacuationNodeName
	if from == "" {
		from = vmi.Status.NodeName
	}
	ev := f.vmiCondTrue(kubevirtv1.VirtualMachineInstanceEvictionRequested)
	var since time.Time
	if ev != nil {
		since = mt(ev.LastTransitionTime)
	}
	switch {
	case strategy == kubevirtv1.EvictionStrategyExternal:
		l.add(v1alpha1.VerdictProgressing, v1alpha1.ReasonEvictionExternal,
			"eviction from "+orUnknown(from)+" is requested; with evictionStrategy External KubeVirt does not migrate the VMI and an external controller is expected to stop or replace it", since)
		l.cite(kindVMI, vmi.Name, "spec.evictionStrategy", string(strategy), time.Time{})
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

// evictionStrategy is the VMI's spec.evictionStrategy, which is the
// effective one: the VMI mutating webhook copies the cluster's default from
// the KubeVirt CR into it when the VMI is created
// (kv:pkg/defaults/defaults.go:208-212 setDefaultEvictionStrategy, called
// from kv:pkg/virt-api/webhooks/mutating-webhook/mutators/
// vmi-mutator.go:57). It is empty only when no cluster default existed at
// creation; KubeVirt then takes the cluster's current default
// (kv:pkg/util/migrations/migrations.go:116-122 VMIEvictionStrategy), which
// the engine does not read, so it judges no strategy.
func evictionStrategy(vmi *kubevirtv1.VirtualMachineInstance) kubevirtv1.EvictionStrategy {
	if vmi.Spec.EvictionStrategy == nil {
		return ""
	}
	return *vmi.Spec.EvictionStrategy
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
	if len(ap) == 0 || f.lc != lcRunning {
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
			l.note(v1alpha1.ReasonStaleActivePods,
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
