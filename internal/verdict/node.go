package verdict

import (
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/membership"
)

// nodeLayer judges the virt-launcher pods, the Node and virt-handler's
// heartbeat. (What libvirt says of the disks through the VMI, PausedIOError,
// is the storage layer's.)
func (e *engine) nodeLayer() {
	f := &e.f
	l := &e.node
	if l.judgeNothingRuns(f.lc, "there is no VMI, so no node to judge", "the VM is stopped as declared; nothing runs on a node") {
		return
	}
	switch f.lc {
	case lcStarting:
		if crashLooping(f.vm, f.runStrat) {
			l.add(v1alpha1.VerdictUnknown, v1alpha1.ReasonNotRunning, "the VM's VMIs keep failing and virt-controller backs off: nothing runs on a node", time.Time{})
			return
		}
		l.add(v1alpha1.VerdictProgressing, v1alpha1.ReasonNotScheduled, "the VM has no VMI yet, so no node", time.Time{})
	case lcVMIUnseen:
		e.unseenVMILayer(l, v1alpha1.ReasonNotScheduled, "its launcher pod")
	case lcSucceeded:
		l.add(v1alpha1.VerdictSuspended, v1alpha1.ReasonVMISucceeded, "the guest shut down; nothing runs on a node", f.phaseSince)
	case lcUnknown:
		e.domainSync(l)
		e.launcherContainerError(l)
		e.launcherDied(l)
		e.launcherSidecarExited(l)
		l.add(v1alpha1.VerdictUnknown, v1alpha1.ReasonNotRunning, "the VMI's phase does not say whether anything runs on a node", time.Time{})
	case lcPreRunning:
		e.domainSync(l)
		e.launcherContainerError(l)
		e.launcherDied(l)
		e.launcherSidecarExited(l)
		if f.vmi.Status.NodeName == "" {
			l.add(v1alpha1.VerdictProgressing, v1alpha1.ReasonNotScheduled, "the VMI is not scheduled to a node yet", f.phaseSince)
			if f.active != nil {
				l.context(kindPod, f.active.Name, "status.phase", string(f.active.Status.Phase), time.Time{})
			}
			return
		}
		e.judgeNode(l)
		e.judgeFinishedPod(l)
		if f.node == nil && f.active == nil && f.in.Uncaptured.Nodes {
			// A dump with neither the Node nor the pod: nothing to judge.
			l.nothingToJudge("neither Node " + f.nodeName + " nor the launcher pod is in the input")
			return
		}
		l.add(v1alpha1.VerdictHealthy, v1alpha1.ReasonLauncherRunning,
			"the launcher pod is on "+f.nodeName+f.nodeSuffix(), f.phaseSince)
	case lcFailed:
		if f.vmi.Status.Reason == nodeUnresponsiveReason {
			// virt-controller's node controller fails the VMIs of a node
			// whose heartbeat is stale (or that is gone) once no live
			// launcher remains there (kv:pkg/virt-controller/watch/node/
			// node.go): a statement about the node.
			l.add(v1alpha1.VerdictFailed, v1alpha1.ReasonNodeUnresponsive,
				"virt-controller found node "+orUnknown(f.vmi.Status.NodeName)+
					" unresponsive (virt-handler's heartbeat stale or the node gone, no live launcher pod) and failed the VMI", f.phaseSince)
			l.cite(kindVMI, f.vmi.Name, "status.reason", f.vmi.Status.Reason, f.phaseSince)
		}
		e.domainSync(l)
		if f.nodeName == "" {
			l.add(v1alpha1.VerdictUnknown, v1alpha1.ReasonNotRunning, "the VMI failed before it reached a node", f.phaseSince)
			return
		}
		e.judgeNode(l)
		e.judgeFinishedPod(l)
		l.add(v1alpha1.VerdictUnknown, v1alpha1.ReasonNotRunning,
			"the VMI is Failed; nothing runs on "+f.nodeName+" (the node itself looks fine)", f.phaseSince)
	case lcRunning:
		e.judgeNode(l)
		e.judgeRunningPod(l)
		e.launcherSidecarExited(l)
		e.judgeTargetPod(l)
		e.domainSync(l)
		e.domainNode(l)
		e.probePath(l)
		// A node that cannot report explains its pods' state: the node
		// lifecycle controller marks them not Ready and evicts them, and a
		// kubelet that does not report cannot say they finished. The
		// node's finding is the cause; these stay in the message.
		if f.nodeNotReady() || f.hbStale() {
			l.explainedBy(v1alpha1.ReasonLauncherPodNotReady, v1alpha1.ReasonLauncherPodTerminating,
				v1alpha1.ReasonLauncherPodMissing, v1alpha1.ReasonStatusLagging)
		}
		l.add(v1alpha1.VerdictHealthy, v1alpha1.ReasonLauncherRunning,
			"launcher pod "+activeName(f)+" runs on "+orUnknown(f.nodeName)+f.nodeSuffix(), f.phaseSince)
	}
}

// unseenVMILayer judges the node or guest layer of a VM whose VMI is not in
// the input. When the input holds no VMI at all (a pasted VM), the VM's
// status is virt-controller's copy of the VMI's: Ready=True with
// printableStatus Running is the launcher's readiness passed up twice, and
// a VM that is starting has nothing running yet. Otherwise (the controller,
// whose cache has every VMI) the VMI was just deleted or not seen yet.
func (e *engine) unseenVMILayer(l *layer, progressReason, what string) {
	f := &e.f
	vm := f.vm
	ps := vm.Status.PrintableStatus
	switch {
	case f.runStratOK && f.runStrat == kubevirtv1.RunStrategyHalted && !isVMErrorStatus(ps):
		l.add(v1alpha1.VerdictProgressing, v1alpha1.ReasonStopping, "the VM is Halted and its VMI is shutting down", time.Time{})
	case ps == kubevirtv1.VirtualMachineStatusProvisioning || ps == kubevirtv1.VirtualMachineStatusWaitingForVolumeBinding ||
		ps == kubevirtv1.VirtualMachineStatusStarting:
		l.add(v1alpha1.VerdictProgressing, progressReason, "the VM is starting (printableStatus "+string(ps)+")", time.Time{})
	case f.in.Uncaptured.VMIs && ps == kubevirtv1.VirtualMachineStatusRunning:
		if c := vmReady(vm); c != nil {
			l.add(v1alpha1.VerdictHealthy, v1alpha1.ReasonVMINotObserved,
				"the input holds no VMI; the VM's Ready=True is virt-controller's copy of its launcher's readiness", mt(c.LastTransitionTime))
			l.cite(kindVM, vm.Name, "status.conditions[Ready].status", string(c.Status), mt(c.LastTransitionTime))
			return
		}
		fallthrough
	default:
		l.add(v1alpha1.VerdictUnknown, v1alpha1.ReasonVMINotObserved,
			"the VM says its VMI exists but the VMI is not in the input, so "+what+" cannot be judged", time.Time{})
	}
}

// nodeSuffix says what the node layer knows of the node itself.
func (f *facts) nodeSuffix() string {
	if f.node == nil && f.in.Uncaptured.Nodes {
		return " (the Node is not in the input: its readiness and virt-handler's heartbeat are not judged)"
	}
	return ", a Ready node with a fresh virt-handler heartbeat"
}

// containerErrorReasons are the kubelet's waiting reasons of a container
// that cannot be created or started on the node (image pulls are
// virt-controller's to report: ImagePullFailed).
var containerErrorReasons = [...]string{"CreateContainerError", "CreateContainerConfigError", "RunContainerError", "StartError", "CrashLoopBackOff"}

// launcherContainerError reads a compute container the kubelet cannot
// create or start (a device file that is not a device node after a
// reboot, a mount that fails): the VMI stays before Running and nothing of
// KubeVirt's reports it.
func (e *engine) launcherContainerError(l *layer) {
	f := &e.f
	p := f.active
	if p == nil || podFinished(p) {
		return
	}
	cs := computeStatus(p)
	if cs == nil || cs.State.Waiting == nil || !slices.Contains(containerErrorReasons[:], cs.State.Waiting.Reason) {
		return
	}
	w := cs.State.Waiting
	msg := "the kubelet cannot start the compute container of " + p.Name + ": " + w.Reason
	if w.Message != "" {
		msg += " (" + w.Message + ")"
	}
	l.add(v1alpha1.VerdictDegraded, v1alpha1.ReasonLauncherContainerError, msg, time.Time{})
	l.cite(kindPod, p.Name, "status.containerStatuses[compute].state.waiting.reason", w.Reason, time.Time{})
}

// domainSync reads the Synchronized=False that virt-handler wrote: libvirt
// or QEMU refused the domain (kv:pkg/virt-handler/vm.go handleSyncError,
// the message is theirs: no /dev/kvm, a disk image that cannot be opened,
// a host disk that cannot be chowned, an invalid device).
func (e *engine) domainSync(l *layer) {
	f := &e.f
	c, byHandler := f.syncCondition()
	if c == nil || !byHandler {
		return
	}
	msg := withDetail("virt-handler cannot synchronize the domain on "+orUnknown(f.vmi.Status.NodeName), c.Message)
	since := mt(c.LastTransitionTime)
	l.add(v1alpha1.VerdictDegraded, v1alpha1.ReasonDomainSyncFailed, msg, since)
	l.cite(kindVMI, f.vmi.Name, "status.conditions[Synchronized].reason", c.Reason, since)
	if c.Message != "" {
		l.cite(kindVMI, f.vmi.Name, "status.conditions[Synchronized].message", c.Message, since)
	}
}

// contradiction adds a finding that rests on objects disagreeing with each
// other since a known instant. Status lags reality by design: at a
// migration's handoff the source launcher completes before the VMI names the
// target node; a pod is ready before the VMI's condition follows. Within
// Policy.LagGrace of since the layer keeps its previous verdict for the
// same VMI, or says Progressing; the verdict comes at since + LagGrace.
func (e *engine) contradiction(l *layer, since time.Time, v v1alpha1.Verdict, reason, msg string) {
	e.contradictionWithin(l, since, e.f.pol.LagGrace, v, reason, msg)
}

// contradictionWithin is contradiction with a grace of its own, for a lag
// known to take longer than LagGrace.
func (e *engine) contradictionWithin(l *layer, since time.Time, grace time.Duration, v v1alpha1.Verdict, reason, msg string) {
	f := &e.f
	end := ceilSec(since.Add(grace))
	if since.IsZero() || f.future(since) || crossed(f.now, end) {
		l.add(v, reason, msg, since)
		return
	}
	e.deadline(end)
	l.stale(end)
	// The previous verdict is kept, unless it is this same wait (then it
	// is said again, with its evidence, so that the status does not change
	// between two reconciles of an unchanged world).
	if p := l.prev; p != nil && p.Verdict != "" && p.Reason != "" && p.Verdict.Severity() < v.Severity() &&
		(p.Verdict != v1alpha1.VerdictProgressing || p.Reason != reason) {
		l.add(p.Verdict, p.Reason, p.Message, mtp(p.LastTransitionTime))
		if l.cur >= 0 {
			l.findings[l.cur].kept = true
		}
		// The evidence the caller cites next is of the contradiction,
		// not of the verdict kept.
		l.cur = unheard
		return
	}
	l.add(v1alpha1.VerdictProgressing, reason,
		msg+" (the objects disagree since "+rfc(since)+"; status lags, so this is judged at "+rfc(end)+")", since)
}

// judgeNode reads the Node: its existence, Ready condition, virt-handler's
// heartbeat (kv:pkg/virt-handler/heartbeat/heartbeat.go) and the
// kubevirt.io/schedulable label (kv:pkg/virt-controller/watch/node/node.go).
func (e *engine) judgeNode(l *layer) {
	f := &e.f
	if f.nodeName == "" && f.in.Uncaptured.Nodes {
		return
	}
	if f.nodeName == "" {
		l.add(v1alpha1.VerdictUnknown, v1alpha1.ReasonNodeMissing,
			"the VMI is "+string(f.phase)+" but names no node and no launcher pod tells one", time.Time{})
		l.cite(kindVMI, f.vmi.Name, "status.nodeName", "", time.Time{})
		return
	}
	if f.vmi.Status.NodeName == "" {
		l.context(kindPod, f.active.Name, "spec.nodeName", f.nodeName, time.Time{})
	}
	n := f.node
	if n == nil && f.in.Uncaptured.Nodes {
		if f.nodeName == "" {
			return
		}
		// A dump without Nodes: the node's own signals have no basis here;
		// the launcher pod and the VMI still speak for the node layer.
		l.context(kindNode, f.nodeName, "metadata.name", "not in the input", time.Time{})
		return
	}
	if n == nil {
		l.add(v1alpha1.VerdictUnknown, v1alpha1.ReasonNodeMissing,
			"Node "+f.nodeName+" does not exist (or was not captured): its health and virt-handler's heartbeat are unknown", time.Time{})
		l.cite(kindNode, f.nodeName, "metadata.name", "not found", time.Time{})
		return
	}
	l.apply(NodeReadyFinding(n), n.Name)
	switch hb := &f.hb.read; hb.State {
	case HeartbeatFuture:
		e.futureEnds(hb.T)
		l.apply(hb.Finding(n.Name, f.pol.HeartbeatTimeout), n.Name)
	case HeartbeatFresh:
		e.freshHeartbeat(l, n.Name)
	default:
		l.apply(hb.Finding(n.Name, f.pol.HeartbeatTimeout), n.Name)
	}
	if s, ok := NodeSchedulableFinding(n); ok {
		s.Message += "; this VM keeps running"
		l.apply(s, n.Name)
	}
}

// hbField is where virt-handler's heartbeat is cited.
const hbField = "metadata.annotations[kubevirt.io/heartbeat]"

// heartbeatFresh is how a fresh heartbeat is cited: by its state, not its
// value, which moves every minute.
const heartbeatFresh = "fresh"

// freshHeartbeat cites the node's fresh heartbeat on l. virt-handler renews
// it every minute, so its value and its deadline enter the status only with
// Policy.RenewingEvidence (a status rewritten to keep them true). Otherwise
// the heartbeat is cited as fresh and its deadline is only looked at again
// (NextDeadline): the verdict changes when it passes, and nothing stored
// moves before that.
func (e *engine) freshHeartbeat(l *layer, node string) {
	hb := &e.f.hb
	if e.f.pol.RenewingEvidence {
		l.stale(hb.deadline)
		l.context(kindNode, node, hbField, hb.raw, hb.t)
		return
	}
	l.renews(hb.deadline)
	e.renewsOn, e.renewedAt = node, hb.t
	l.context(kindNode, node, hbField, heartbeatFresh, time.Time{})
}

// judgeFinishedPod names the compute container's death when it explains a
// VMI that is not running (or not yet).
func (e *engine) judgeFinishedPod(l *layer) {
	p := e.f.active
	if p == nil || !podFinished(p) || l.has(v1alpha1.ReasonComputeContainerOOMKilled) {
		return
	}
	term := computeTermination(p)
	if oomKilled(l, p, term, "") {
		return
	}
	switch {
	case p.Status.Phase == corev1.PodFailed && e.f.lc == lcFailed && p.Status.Reason != "":
		// The kubelet or the node lifecycle controller failed the launcher
		// (Evicted, NodeShutdown, Terminated, NodeLost): the node's doing,
		// and nothing restarts it. A Failed pod without a reason cannot be
		// told from the end of a guest that crashed.
		t := podEnd(p, term)
		msg := "launcher pod " + p.Name + " is Failed"
		if p.Status.Reason != "" {
			msg += " (" + p.Status.Reason + ")"
		}
		l.add(v1alpha1.VerdictFailed, v1alpha1.ReasonLauncherPodFailed, msg+": the VM process is gone", t)
		l.cite(kindPod, p.Name, "status.phase", string(p.Status.Phase), t)
	}
}

// oomKilled adds the compute container's OOM kill when its termination says
// so (suffix ends the message) and reports whether it did.
func oomKilled(l *layer, p *corev1.Pod, term *corev1.ContainerStateTerminated, suffix string) bool {
	if term == nil || term.Reason != "OOMKilled" {
		return false
	}
	t := mt(term.FinishedAt)
	l.add(v1alpha1.VerdictFailed, v1alpha1.ReasonComputeContainerOOMKilled,
		"the compute container of "+p.Name+" was OOM-killed"+suffix, t)
	l.cite(kindPod, p.Name, "status.containerStatuses[compute].state.terminated.reason", term.Reason, t)
	return true
}

// judgeRunningPod checks that a VMI that says Running has a live launcher.
// VMI status trails the pod (kubevirt#6685): virt-controller marks the VMI
// Failed only on its next sync, so the pod is the sharper witness.
func (e *engine) judgeRunningPod(l *layer) {
	f := &e.f
	p := f.active
	if p == nil {
		e.launcherFromReady(l)
		return
	}
	term := computeTermination(p)
	if oomKilled(l, p, term, " while the VMI still says Running") {
		return
	}
	switch {
	case p.Status.Phase == corev1.PodFailed:
		t := podEnd(p, term)
		msg := "launcher pod " + p.Name + " is Failed while the VMI still says Running"
		if p.Status.Reason != "" {
			msg += " (" + p.Status.Reason + ")"
		}
		l.add(v1alpha1.VerdictFailed, v1alpha1.ReasonLauncherPodFailed, msg, t)
		l.cite(kindPod, p.Name, "status.phase", string(p.Status.Phase), t)
	case p.Status.Phase == corev1.PodSucceeded:
		t := podEnd(p, term)
		e.contradiction(l, t, v1alpha1.VerdictDegraded, v1alpha1.ReasonStatusLagging,
			"launcher pod "+p.Name+" has Succeeded but the VMI still says Running: the VMI status trails the pod")
		l.cite(kindPod, p.Name, "status.phase", string(p.Status.Phase), t)
	case term != nil:
		t := mt(term.FinishedAt)
		msg := "the compute container of " + p.Name + " terminated"
		if term.Reason != "" {
			msg += " (" + term.Reason + ")"
		}
		l.add(v1alpha1.VerdictFailed, v1alpha1.ReasonComputeContainerTerminated, msg+" while the VMI still says Running", t)
		l.cite(kindPod, p.Name, "status.containerStatuses[compute].state.terminated.reason", term.Reason, t)
	case p.DeletionTimestamp != nil:
		t := mt(*p.DeletionTimestamp)
		l.add(v1alpha1.VerdictProgressing, v1alpha1.ReasonLauncherPodTerminating, "launcher pod "+p.Name+" is being deleted", t)
		l.cite(kindPod, p.Name, "metadata.deletionTimestamp", rfc(t), t)
	default:
		ready, known, field, readyT := podReadiness(p)
		// The pod's readiness follows the VM's readiness gate (paused) and
		// the VMI's readiness probe, which the guest layer judges.
		if known && !ready && f.paused() == nil && f.vmi.Spec.ReadinessProbe == nil {
			status := "absent"
			if c := podCond(p, corev1.PodReady); c != nil {
				status = string(c.Status)
			} else if field != "status.conditions[Ready].status" {
				status = "false"
			}
			// After an unpause the pod turns Ready in steps: virt-handler
			// removes the VMI's Paused condition, virt-controller then
			// flips the pod's kubevirt.io/virtual-machine-unpaused
			// readiness gate (kv:pkg/virt-controller/watch/vmi/
			// lifecycle.go:926-953 syncPausedConditionToPod), and the
			// kubelet re-evaluates Ready after that. Ready's transition is
			// the pause, long past; the gate's is the unpause, so the lag
			// grace runs from the later of the two. A gate still False is
			// virt-controller not caught up with the unpause yet.
			since, grace := readyT, f.pol.LagGrace
			if g := podCond(p, kubevirtv1.VirtualMachineUnpaused); g != nil {
				gt := mt(g.LastTransitionTime)
				if g.Status != corev1.ConditionTrue {
					l.add(v1alpha1.VerdictProgressing, v1alpha1.ReasonLauncherPodNotReady,
						"launcher pod "+p.Name+" is not Ready: its unpause readiness gate is still "+orUnknown(string(g.Status))+
							" while the VMI is no longer paused; virt-controller flips it next", gt)
					l.cite(kindPod, p.Name, "status.conditions["+string(kubevirtv1.VirtualMachineUnpaused)+"].status", string(g.Status), gt)
					return
				}
				if gt.After(since) {
					// The kubelet recomputes Ready when it reconciles
					// the pod's status change (k8s:pkg/kubelet/
					// kubelet.go HandlePodReconcile,
					// status.NeedToReconcilePodReadiness), a sync that
					// queues behind the pod's other work in its pod
					// worker: on a busy node it comes some seconds
					// after the gate, so the unpause's wait is twice
					// the lag grace (a pause ends with no fault).
					since, grace = gt, 2*f.pol.LagGrace
				}
			}
			e.contradictionWithin(l, since, grace, v1alpha1.VerdictDegraded, v1alpha1.ReasonLauncherPodNotReady,
				"launcher pod "+p.Name+" is "+string(p.Status.Phase)+" but not Ready")
			l.cite(kindPod, p.Name, field, status, readyT)
			return
		}
		l.context(kindPod, p.Name, "status.phase", string(p.Status.Phase), readyT)
	}
}

// launcherFromReady judges a Running VMI whose launcher pod is not in the
// input. The VMI's Ready condition is virt-controller's copy of the pod's
// readiness (kv:pkg/virt-controller/watch/vmi/lifecycle.go
// syncReadyConditionFromPod): PodNotExists and PodTerminating describe the
// pod, ContainersNotReady its compute container (unless a readiness probe,
// which the guest layer judges, explains it), ReadinessGatesNotReady the
// unpause gate (Paused says more).
func (e *engine) launcherFromReady(l *layer) {
	f := &e.f
	vmi := f.vmi
	const readyField = "status.conditions[Ready].reason"
	if c := f.vmiCond(kubevirtv1.VirtualMachineInstanceReady); c != nil && c.Status == corev1.ConditionFalse {
		since := mt(c.LastTransitionTime)
		switch {
		case c.Reason == kubevirtv1.PodNotExistsReason:
			e.contradiction(l, since, v1alpha1.VerdictDegraded, v1alpha1.ReasonLauncherPodMissing,
				"the VMI says Running on "+orUnknown(f.nodeName)+" but its Ready condition says the launcher pod does not exist")
			l.cite(kindVMI, vmi.Name, readyField, c.Reason, since)
			return
		case c.Reason == kubevirtv1.PodTerminatingReason:
			l.add(v1alpha1.VerdictProgressing, v1alpha1.ReasonLauncherPodTerminating,
				"the VMI's Ready condition says its launcher pod is going down", since)
			l.cite(kindVMI, vmi.Name, readyField, c.Reason, since)
			return
		case c.Reason == kubevirtv1.GuestNotRunningReason, c.Reason == "ReadinessGatesNotReady", f.paused() != nil,
			vmi.Spec.ReadinessProbe != nil:
			// A phase the condition has not caught up with, the unpause
			// gate, or the readiness probe: not the launcher's fault.
		default:
			msg := "the VMI's Ready condition says its launcher pod is not ready"
			if c.Reason != "" {
				msg += " (" + c.Reason + ")"
			}
			e.contradiction(l, since, v1alpha1.VerdictDegraded, v1alpha1.ReasonLauncherPodNotReady, msg)
			l.cite(kindVMI, vmi.Name, readyField, c.Reason, since)
			return
		}
	}
	if f.in.Uncaptured.Pods {
		// A dump without pods: the VMI's Ready condition is virt-controller's
		// copy of the pod's readiness at its last sync.
		if c := f.vmiCondTrue(kubevirtv1.VirtualMachineInstanceReady); c != nil {
			l.context(kindVMI, vmi.Name, "status.conditions[Ready].status", string(c.Status), mt(c.LastTransitionTime))
			return
		}
		if f.vmiCond(kubevirtv1.VirtualMachineInstanceReady) == nil {
			// virt-controller writes Ready on every sync of every VMI
			// (kv:pkg/virt-controller/watch/vmi/lifecycle.go updateStatus →
			// syncReadyConditionFromPod): a paste without it lost the one
			// word on the launcher. That is missing evidence about the
			// launcher, not about the VMI's lifecycle, which the control
			// plane judges on its own fields.
			msg := "the VMI says Running but has no Ready condition, virt-controller's copy of the launcher pod's readiness, and the pod is not in the input: whether a launcher runs cannot be told"
			if f.node == nil {
				// Nor is the Node there: the layer has no basis at all.
				l.nothingToJudge(msg)
			} else {
				l.add(v1alpha1.VerdictUnknown, v1alpha1.ReasonReadyConditionMissing, msg, time.Time{})
			}
			l.cite(kindVMI, vmi.Name, "status.conditions[Ready]", "absent", time.Time{})
			return
		}
		if f.node == nil {
			l.nothingToJudge("the input holds neither the launcher pod nor the Node, and the VMI has no Ready condition to say whether a launcher runs")
		}
		return
	}
	msg := "the VMI says Running on " + orUnknown(f.nodeName) + " but no launcher pod on that node is known"
	// At a migration's handoff the source launcher exits before the VMI
	// names the target node: measured from the migration's end.
	var since time.Time
	if m := &f.mig; m.present && (m.succeeded || (m.state != nil && m.state.Completed)) {
		since = m.endTime()
	}
	e.contradiction(l, since, v1alpha1.VerdictUnknown, v1alpha1.ReasonLauncherPodMissing, msg)
	l.cite(kindVMI, vmi.Name, "status.phase", string(f.phase), f.phaseSince)
	for uid, node := range vmi.Status.ActivePods {
		if node == f.nodeName && len(vmi.Status.ActivePods) == 1 {
			l.cite(kindVMI, vmi.Name, "status.activePods["+string(uid)+"]", node+" (pod not found)", time.Time{})
		}
	}
}

func podEnd(p *corev1.Pod, term *corev1.ContainerStateTerminated) time.Time {
	if term != nil {
		return mt(term.FinishedAt)
	}
	if c := podCond(p, corev1.PodReady); c != nil {
		return mt(c.LastTransitionTime)
	}
	return time.Time{}
}

// judgeTargetPod reports a migration target pod that cannot be scheduled;
// KubeVirt fails the migration after 5 minutes of that
// (kv:pkg/virt-controller/watch/migration/migration.go:86).
func (e *engine) judgeTargetPod(l *layer) {
	f := &e.f
	if !f.mig.inProgress {
		return
	}
	for _, p := range f.pods {
		if !f.isTarget(p) || podFinished(p) {
			continue
		}
		c := podCond(p, corev1.PodScheduled)
		if c == nil || c.Status != corev1.ConditionFalse || c.Reason != corev1.PodReasonUnschedulable {
			continue
		}
		msg := withDetail("migration target pod "+p.Name+" cannot be scheduled", c.Message)
		l.add(v1alpha1.VerdictDegraded, v1alpha1.ReasonTargetPodUnschedulable, msg, mt(c.LastTransitionTime))
		l.cite(kindPod, p.Name, "status.conditions[PodScheduled].reason", c.Reason, mt(c.LastTransitionTime))
	}
}

// nodeNotReady says the VMI's node exists and its Ready condition is not
// True.
func (f *facts) nodeNotReady() bool {
	if f.node == nil {
		return false
	}
	c := nodeCond(f.node, corev1.NodeReady)
	return c == nil || c.Status != corev1.ConditionTrue
}

// launcherSidecarExited names a container of the live launcher other than
// compute that exited: the guest-console-log tail (a native sidecar, so an
// init container whose spec restartPolicy is Always) or a hook sidecar (a
// plain container). The pod then turns not ready while compute, and the
// domain in it, may still run; virt-controller inspects only compute
// (kv:pkg/controller/controller.go). The container is the cause, so the
// pod's readiness is its consequence, and the guest keeps what the VMI
// says of it.
func (e *engine) launcherSidecarExited(l *layer) {
	f := &e.f
	p := f.active
	if p == nil || podFinished(p) || p.DeletionTimestamp != nil {
		return
	}
	if cs := computeStatus(p); cs == nil || cs.State.Running == nil {
		return
	}
	added := false
	check := func(cs *corev1.ContainerStatus, field string) {
		var what, value string
		switch {
		case cs.State.Terminated != nil:
			what, value = "exited", cs.State.Terminated.Reason
			if value == "" {
				value = "exit code " + strconv.Itoa(int(cs.State.Terminated.ExitCode))
			}
			field += ".state.terminated.reason"
		case cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff":
			what, value = "keeps exiting", cs.State.Waiting.Reason
			field += ".state.waiting.reason"
		default:
			return
		}
		msg := "container " + cs.Name + " of launcher pod " + p.Name + " " + what + " (" + value +
			"), so the pod is not ready; the compute container, and the domain, still run"
		l.add(v1alpha1.VerdictDegraded, v1alpha1.ReasonLauncherSidecarExited, msg, time.Time{})
		l.cite(kindPod, p.Name, field, value, time.Time{})
		added = true
	}
	for i := range p.Status.ContainerStatuses {
		if cs := &p.Status.ContainerStatuses[i]; cs.Name != "compute" {
			check(cs, "status.containerStatuses["+cs.Name+"]")
		}
	}
	for i := range p.Status.InitContainerStatuses {
		if cs := &p.Status.InitContainerStatuses[i]; membership.IsSidecarInit(p, cs.Name) {
			check(cs, "status.initContainerStatuses["+cs.Name+"]")
		}
	}
	if added {
		l.explainedBy(v1alpha1.ReasonLauncherPodNotReady)
	}
}

// launcherDied judges the launcher of a VMI whose status has not reached
// Running, or is absent: the pod proves virt-controller processed the VMI,
// and its end is the VM's, whatever the VMI still says. virt-controller
// fails a Scheduling VMI whose pod is down only on its next sync
// (kv:pkg/virt-controller/watch/vmi/lifecycle.go:370-457), and a paste or a
// lagging status may show the pod first. A migration's target is not the
// VM's launcher: its end is the migration's (targetPodFailed).
func (e *engine) launcherDied(l *layer) {
	f := &e.f
	p := f.active
	if p == nil || p.Labels[kubevirtv1.MigrationJobLabel] != "" {
		return
	}
	term := computeTermination(p)
	if term == nil && p.Status.Phase != corev1.PodFailed {
		return
	}
	status := "the VMI is " + string(f.phase)
	if f.vmi.Status.Phase == kubevirtv1.VmPhaseUnset {
		status = "the VMI has no phase yet"
	}
	t := podEnd(p, term)
	switch {
	case term != nil && term.Reason == "OOMKilled":
		l.add(v1alpha1.VerdictFailed, v1alpha1.ReasonComputeContainerOOMKilled,
			"the compute container of "+p.Name+" was OOM-killed while "+status, t)
		l.cite(kindPod, p.Name, "status.containerStatuses[compute].state.terminated.reason", term.Reason, t)
	case p.Status.Phase == corev1.PodFailed:
		msg := "launcher pod " + p.Name + " is Failed"
		if p.Status.Reason != "" {
			msg += " (" + p.Status.Reason + ")"
		}
		l.add(v1alpha1.VerdictFailed, v1alpha1.ReasonLauncherPodFailed, msg+" while "+status+": the VM did not start", t)
		l.cite(kindPod, p.Name, "status.phase", string(p.Status.Phase), t)
	case p.Status.Phase == corev1.PodSucceeded:
		// A launcher that ended cleanly before Running is a stop, not a
		// fault of the node.
	default:
		msg := "the compute container of " + p.Name + " terminated"
		if term.Reason != "" {
			msg += " (" + term.Reason + ")"
		}
		l.add(v1alpha1.VerdictFailed, v1alpha1.ReasonComputeContainerTerminated, msg+" while "+status, t)
		l.cite(kindPod, p.Name, "status.containerStatuses[compute].state.terminated.reason", term.Reason, t)
	}
}
