package verdict

import (
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/membership"
)

// guestLayer judges what the guest agent reports through the VMI.
//
// Freshness: the VMI has no heartbeat and virt-handler writes it only on
// change (kv:pkg/virt-handler/vm.go:1097-1140), so the age of guest data
// says nothing. What makes it current is that virt-handler is alive to
// report a change: the guest layer's staleAt is the node's heartbeat
// deadline, and past it the guest layer is Unknown (EvidenceStale).
// Policy.GuestDataMaxAge is therefore not used as a deadline: it would flip
// a healthy guest every few minutes while nothing changed.
func (e *engine) guestLayer() {
	f := &e.f
	l := &e.guest
	if l.judgeNothingRuns(f.lc, "there is no VMI, so no guest to judge", "the VM is stopped as declared; the guest does not run") {
		return
	}
	switch f.lc {
	case lcStarting, lcPreRunning:
		if f.vmi == nil && crashLooping(f.vm, f.runStrat) {
			l.add(v1alpha1.VerdictUnknown, v1alpha1.ReasonNotRunning, "the VM's VMIs keep failing and virt-controller backs off: the guest does not run", time.Time{})
			return
		}
		// A node layer that says the domain or its launcher cannot start
		// (DomainSyncFailed, LauncherContainerError) means the guest is not
		// on its way.
		if n := &e.node; f.vmi != nil && n.nf > 0 {
			// A sidecar that exited leaves the domain to start or run.
			if w := n.winner(); n.findings[w].verdict.Severity() >= v1alpha1.VerdictDegraded.Severity() &&
				n.findings[w].reason != v1alpha1.ReasonLauncherSidecarExited {
				nf := &n.findings[w]
				l.add(v1alpha1.VerdictUnknown, v1alpha1.ReasonNotRunning, "the guest cannot start: node: "+nf.message, nf.since)
				return
			}
		}
		l.add(v1alpha1.VerdictProgressing, v1alpha1.ReasonGuestStarting, "the guest does not run yet", f.phaseSince)
	case lcSucceeded:
		l.add(v1alpha1.VerdictSuspended, v1alpha1.ReasonVMISucceeded, "the guest shut down", f.phaseSince)
	case lcFailed:
		l.add(v1alpha1.VerdictUnknown, v1alpha1.ReasonNotRunning, "the VMI is Failed; the guest does not run", f.phaseSince)
	case lcUnknown:
		l.add(v1alpha1.VerdictUnknown, v1alpha1.ReasonNotRunning, "the VMI's phase does not say whether the guest runs", time.Time{})
	case lcVMIUnseen:
		e.unseenVMILayer(l, v1alpha1.ReasonGuestStarting, "the guest")
	case lcRunning:
		if e.guestCeiling(l) {
			return
		}
		e.judgeGuest(l)
		e.domainGuest(l)
	}
}

// guestCeiling caps the guest at Unknown when the node layer says the path
// that refreshes what the VMI says about the guest (virt-handler → launcher
// → domain → agent) is broken: the launcher is dead, missing, not ready or
// going, the domain cannot be synced, or the node stopped reporting.
// AgentConnected and the interfaces are then leftovers that nothing updates
// (KubeVirt fails such a VMI only on its next sync, lifecycle.go). A
// contradiction still within its lag grace does not count.
func (e *engine) guestCeiling(l *layer) bool {
	n := &e.node
	w := n.winner()
	if w < 0 {
		return false
	}
	nf := &n.findings[w]
	if nf.verdict.Severity() < v1alpha1.VerdictUnknown.Severity() {
		return false
	}
	reason := v1alpha1.ReasonEvidenceStale
	what := "what the VMI says about the guest can no longer be refreshed"
	switch nf.reason {
	case v1alpha1.ReasonLauncherPodFailed, v1alpha1.ReasonComputeContainerOOMKilled,
		v1alpha1.ReasonComputeContainerTerminated, v1alpha1.ReasonStatusLagging:
		reason, what = v1alpha1.ReasonNotRunning, "the guest does not run any more"
	case v1alpha1.ReasonLauncherPodMissing:
		// Not in the input while the VMI's Ready=True says virt-controller
		// saw it ready at its last sync: not captured, not gone (a pod that
		// is gone turns Ready to PodNotExists on the next sync).
		if nf.verdict == v1alpha1.VerdictUnknown && e.f.vmiCondTrue(kubevirtv1.VirtualMachineInstanceReady) != nil {
			return false
		}
	case v1alpha1.ReasonLauncherPodNotReady, v1alpha1.ReasonDomainSyncFailed, v1alpha1.ReasonNodeNotReady:
	case v1alpha1.ReasonNodeAgentStale:
		// guestFreshness says it with the heartbeat as evidence.
		return false
	default:
		return false
	}
	l.add(v1alpha1.VerdictUnknown, reason, what+": node: "+nf.message, nf.since)
	for i := 0; i < n.ne; i++ {
		if it := &n.ev[i]; it.owner == w {
			l.cite(it.kind, it.name, it.field, it.value, it.t)
		}
	}
	return true
}

func (e *engine) judgeGuest(l *layer) {
	f := &e.f
	vmi := f.vmi
	if c := f.paused(); c != nil {
		since := mt(c.LastTransitionTime)
		switch c.Reason {
		case pausedByUser:
			l.add(v1alpha1.VerdictSuspended, v1alpha1.ReasonPausedByUser, "the guest is paused by its user", since)
		case pausedByMigrationMonitor:
			// The migration monitor pauses the guest to let a migration
			// converge (kv:pkg/virt-handler/vm.go:848-859); it resumes.
			l.add(v1alpha1.VerdictProgressing, v1alpha1.ReasonGuestPaused, "the guest is paused ("+c.Reason+") and will resume", since)
		default:
			l.add(v1alpha1.VerdictUnknown, v1alpha1.ReasonGuestPaused,
				"the guest is paused ("+bound(c.Reason, 64)+"); what it reports cannot be judged", since)
		}
		l.cite(kindVMI, vmi.Name, "status.conditions[Paused].reason", c.Reason, since)
		return
	}
	e.guestFreshness(l)

	ac := f.vmiCondTrue(kubevirtv1.VirtualMachineInstanceAgentConnected)
	if ac != nil {
		since := agentSince(ac)
		l.context(kindVMI, vmi.Name, "status.conditions[AgentConnected].status", string(ac.Status), since)
		if u := f.vmiCondTrue(kubevirtv1.VirtualMachineInstanceUnsupportedAgent); u != nil {
			msg := "the guest agent is connected but KubeVirt does not support it"
			if u.Reason != "" {
				msg += ": " + u.Reason
			}
			l.add(v1alpha1.VerdictDegraded, v1alpha1.ReasonAgentVersionNotSupported, msg, mt(u.LastTransitionTime))
			l.cite(kindVMI, vmi.Name, "status.conditions[AgentVersionNotSupported].reason", u.Reason, mt(u.LastTransitionTime))
		}
		e.interfaceRules(l, since)
		e.probeGuest(l)
	} else {
		e.agentAbsent(l)
	}
	if f.netStatusErr != nil {
		// KubeVirt itself logs and ignores an annotation it cannot parse
		// (kv:pkg/network/multus/status.go NetworkStatusesFromPod): only the
		// secondary interfaces' comparison is lost.
		l.note(v1alpha1.ReasonMalformedNetworkStatus,
			"launcher pod "+f.active.Name+" has a "+membership.NetworkStatusAnnotation+" annotation that cannot be read ("+
				f.netStatusErr.Error()+"): the pod-side IPs of secondary networks are unknown", time.Time{})
		l.cite(kindPod, f.active.Name, "metadata.annotations["+membership.NetworkStatusAnnotation+"]", f.netStatusRaw, time.Time{})
	}
	if c := f.vmiCond(kubevirtv1.VirtualMachineInstanceAccessCredentialsSynchronized); c != nil && c.Status == corev1.ConditionFalse {
		// virt-handler propagates SSH keys and passwords through the guest
		// agent (kv:pkg/virt-handler/vm.go); its failure is the guest's.
		msg := withDetail("the VM's access credentials could not be propagated to the guest", c.Message)
		l.add(v1alpha1.VerdictDegraded, v1alpha1.ReasonAccessCredentialsFailed, msg, mt(c.LastTransitionTime))
		l.cite(kindVMI, vmi.Name, "status.conditions[AccessCredentialsSynchronized].reason", c.Reason, mt(c.LastTransitionTime))
	}
	e.frozenRule(l)
	if vmi.Spec.ReadinessProbe != nil {
		if c := f.vmiCond(kubevirtv1.VirtualMachineInstanceReady); c != nil && c.Status == corev1.ConditionFalse {
			msg := withDetail("the VMI's readiness probe fails", c.Message)
			l.add(v1alpha1.VerdictDegraded, v1alpha1.ReasonGuestNotReady, msg, mt(c.LastTransitionTime))
			l.cite(kindVMI, vmi.Name, "status.conditions[Ready].status", string(c.Status), mt(c.LastTransitionTime))
		}
	}
	if ac != nil {
		// Always added: notes never outrank it, worse findings always do.
		l.add(v1alpha1.VerdictHealthy, v1alpha1.ReasonGuestAgentConnected,
			"the guest agent is connected"+osSuffix(vmi), agentSince(ac))
	}
}

// agentSince is when the agent connected: the condition's
// lastTransitionTime, else its lastProbeTime (set when it was added).
func agentSince(c *kubevirtv1.VirtualMachineInstanceCondition) time.Time {
	if t := mt(c.LastTransitionTime); !t.IsZero() {
		return t
	}
	return mt(c.LastProbeTime)
}

func osSuffix(vmi *kubevirtv1.VirtualMachineInstance) string {
	if n := vmi.Status.GuestOSInfo.PrettyName; n != "" {
		return " (" + bound(n, 128) + ")"
	}
	return ""
}

// guestFreshness ties the guest's evidence to virt-handler's heartbeat on
// the VMI's node.
func (e *engine) guestFreshness(l *layer) {
	f := &e.f
	if f.node == nil || !f.hb.present || f.hb.err != nil || f.future(f.hb.t) {
		return
	}
	if f.hbStale() {
		l.add(v1alpha1.VerdictUnknown, v1alpha1.ReasonEvidenceStale,
			"virt-handler on "+f.node.Name+" has not reported since "+rfc(f.hb.t)+
				", so what the VMI says about the guest may be out of date", f.hb.deadline)
		l.cite(kindNode, f.node.Name, hbField, f.hb.raw, f.hb.t)
		return
	}
	e.freshHeartbeat(l, f.node.Name)
}

// agentAbsent judges a running guest without AgentConnected. KubeVirt
// removes the condition on disconnect and never sets it False
// (kv:pkg/virt-handler/vm.go:785-846), so absence is all there is; whether
// an agent was there before shows in guestOSInfo (sticky, only ever set by
// the agent), in interfaces the agent reported, or in the previous status
// of this same VMI.
func (e *engine) agentAbsent(l *layer) {
	f := &e.f
	vmi := f.vmi
	const acField = "status.conditions[AgentConnected]"
	if f.vmiCond(kubevirtv1.VirtualMachineInstanceReady) == nil {
		// A status without the Ready condition virt-controller writes on
		// every sync lost its conditions (a partial paste): the absence of
		// AgentConnected says nothing.
		l.nothingToJudge("the VMI's conditions are partial (no Ready condition), so whether the guest agent is connected cannot be told")
		l.cite(kindVMI, vmi.Name, "status.conditions[Ready]", "absent", time.Time{})
		return
	}
	if hint, field, value := f.agentHint(); hint {
		// A guest reboot closes the agent's virtio-serial port and
		// virt-handler removes the condition (kv:pkg/virt-handler/
		// vm.go:785-798); the agent comes back after the boot. So a
		// disconnection gets AgentGracePeriod from its first sighting
		// (KubeVirt gives it no time) to heal, as a first connection does.
		lost := f.agentLost
		graceEnd := ceilSec(lost.Add(f.pol.AgentGracePeriod))
		if !lost.IsZero() && !crossed(f.now, graceEnd) {
			l.stale(graceEnd)
			e.deadline(graceEnd)
			l.add(v1alpha1.VerdictProgressing, v1alpha1.ReasonAgentConnecting,
				"the guest agent disconnected (first seen at "+rfc(lost)+"; a guest reboot does that) and may reconnect until "+rfc(graceEnd)+osSuffix(vmi), lost)
		} else {
			msg := "the guest agent was connected before and is not now"
			if !lost.IsZero() {
				msg += ", " + f.pol.AgentGracePeriod.String() + " after its disconnection was first seen at " + rfc(lost)
			}
			l.add(v1alpha1.VerdictDegraded, v1alpha1.ReasonAgentDisconnected, msg+osSuffix(vmi), graceEnd)
		}
		l.cite(kindVMI, vmi.Name, acField, "absent", lost)
		if field != "" {
			l.cite(kindVMI, vmi.Name, field, value, time.Time{})
		}
		return
	}
	running := f.phaseSince
	if running.IsZero() {
		running = f.created
	}
	graceEnd := ceilSec(running.Add(f.pol.AgentGracePeriod))
	switch {
	case running.IsZero():
		// No clock to measure the grace period by: judge as if it ended.
		graceEnd = time.Time{}
	case !crossed(f.now, graceEnd) && (f.pol.GuestAgentExpected || !f.domainRunning()):
		// Without an agent to wait for, a guest whose domain runs is
		// judged at once (below).
		l.stale(graceEnd)
		e.deadline(graceEnd)
		l.add(v1alpha1.VerdictProgressing, v1alpha1.ReasonAgentConnecting,
			"the guest runs since "+rfc(running)+"; its agent has not connected yet", running)
		l.cite(kindVMI, vmi.Name, acField, "absent", running)
		return
	}
	started := "since the guest started"
	if !running.IsZero() {
		started += " at " + rfc(running)
	}
	switch kind, name, field, t := f.domainRuns(); {
	case f.pol.GuestAgentExpected:
		l.add(v1alpha1.VerdictDegraded, v1alpha1.ReasonAgentNeverConnected,
			"a guest agent is expected but has not connected "+started, graceEnd)
	case field != "":
		l.add(v1alpha1.VerdictHealthy, v1alpha1.ReasonNoGuestAgent,
			"no guest agent has connected "+started+"; none is expected, and the launcher reports the domain ready", graceEnd)
		l.cite(kind, name, field, "True", t)
	default:
		// No Healthy without positive evidence: nothing says the domain
		// runs.
		l.add(v1alpha1.VerdictUnknown, v1alpha1.ReasonNoGuestAgent,
			"no guest agent has connected "+started+" and nothing else says the domain runs (the VMI is not Ready)", graceEnd)
	}
	l.cite(kindVMI, vmi.Name, acField, "absent", running)
}

// domainRuns is the positive evidence that the domain runs when no agent
// speaks for the guest: the launcher's readiness, as the VMI's Ready
// condition or the active pod's own.
func (f *facts) domainRuns() (kind, name, field string, t time.Time) {
	if c := f.vmiCondTrue(kubevirtv1.VirtualMachineInstanceReady); c != nil {
		return kindVMI, f.vmi.Name, "status.conditions[Ready].status", mt(c.LastTransitionTime)
	}
	if p := f.active; p != nil && !podFinished(p) {
		if ready, _, field, t := podReadiness(p); ready {
			return kindPod, p.Name, field, t
		}
	}
	return "", "", "", time.Time{}
}

func (f *facts) domainRunning() bool {
	_, _, field, _ := f.domainRuns()
	return field != ""
}

// agentHint says whether an agent was connected to this VMI before, and
// which field shows it.
func (f *facts) agentHint() (bool, string, string) {
	vmi := f.vmi
	if n := vmi.Status.GuestOSInfo.Name; n != "" {
		return true, "status.guestOSInfo.name", n
	}
	var order [8]int
	for _, i := range f.interfaceOrder(min(len(vmi.Status.Interfaces), maxInterfaces), order[:0]) {
		if hasInfoSource(vmi.Status.Interfaces[i].InfoSource, infoSourceGuestAgent) {
			return true, "status.interfaces[" + vmi.Status.Interfaces[i].Name + "].infoSource", vmi.Status.Interfaces[i].InfoSource
		}
	}
	if f.prevAgent {
		return true, "", ""
	}
	return false, "", ""
}

// interfaceRules checks the interfaces while the agent is connected: each
// named interface should carry guest-agent data once the agent had time to
// report (it polls interfaces every 10 s, backing off to 120 s), and the
// guest's IPs should match the pod side where the binding passes them
// through.
func (e *engine) interfaceRules(l *layer, connected time.Time) {
	f := &e.f
	vmi := f.vmi
	ifcs := vmi.Status.Interfaces
	if len(ifcs) > maxInterfaces {
		ifcs = ifcs[:maxInterfaces]
	}
	graceEnd := ceilSec(connected.Add(f.pol.AgentGracePeriod))
	settled := connected.IsZero() || crossed(f.now, graceEnd)
	if !settled {
		e.deadline(graceEnd)
	}
	var missing, mismatch, nat, noIP []int
	var missingBuf, mismatchBuf [8]int
	missing, mismatch = missingBuf[:0], mismatchBuf[:0]
	var order [8]int
	for _, i := range f.interfaceOrder(len(ifcs), order[:0]) {
		ifc := &ifcs[i]
		if ifc.Name == "" {
			continue // a guest-only interface: the agent is its only source
		}
		if !hasInfoSource(ifc.InfoSource, infoSourceGuestAgent) {
			// The agent's data is matched to the domain's interfaces by
			// MAC: entries only Multus or a restore wrote, or SR-IOV host
			// devices without a MAC, can never be filled
			// (kv:pkg/network/setup/netstat.go).
			if settled && ifc.LinkState != "down" && ifc.MAC != "" && hasInfoSource(ifc.InfoSource, infoSourceDomain) {
				missing = append(missing, i)
			}
		} else if settled && ifc.LinkState != "down" && ifc.IP == "" && len(ifc.IPs) == 0 && f.isPrimary(i) {
			// The primary interface has an address once the guest has one:
			// virt-handler writes the pod's from its cache, but clears it
			// while the agent reports the interface without an IPv4 ("in
			// case GA does not include IP data, it will clear IP status
			// data", kv:pkg/network/setup/netstat.go:371-398). qemu-ga
			// usually connects before DHCP finishes, and the interface
			// poller runs at once, then after 10, 20, 40, 80 and 120 s
			// (kv:pkg/virt-launcher/virtwrap/agent-poller/
			// agent_poller.go:239-272): every boot shows the primary
			// interface without an IP for up to a few minutes. So it
			// counts only after AgentGracePeriod from the agent's
			// connection, as missing data does; past it the entry lost its
			// address (kubevirt#7508). Secondary networks may carry none
			// by design (L2 without IPAM).
			noIP = append(noIP, i)
		}
		switch {
		case f.natMismatch(i):
			nat = append(nat, i)
		case f.ipMismatch(i):
			mismatch = append(mismatch, i)
		}
	}
	e.natRule(l, ifcs, nat)
	if len(mismatch) > 0 {
		// The status follows a new pod's IPs within seconds (after a
		// migration the target's): a mismatch counts after the lag grace.
		e.contradiction(l, f.podIPsSince(), v1alpha1.VerdictDegraded, v1alpha1.ReasonGuestIPMismatch,
			"the guest reports IPs that differ from the pod network's on "+ifcNames(ifcs, mismatch))
		for _, i := range mismatch {
			primary, ns := f.podSide(i)
			l.cite(kindVMI, vmi.Name, "status.interfaces["+ifcs[i].Name+"].ipAddresses", joinSorted(ifcs[i].IPs), time.Time{})
			if primary && f.active != nil {
				l.cite(kindPod, f.active.Name, "status.podIPs", podIPsValue(f.active), time.Time{})
			} else if ns != nil && f.active != nil {
				l.cite(kindPod, f.active.Name, "metadata.annotations["+membership.NetworkStatusAnnotation+"]["+ns.Interface+"].ips", joinSorted(ns.IPs), time.Time{})
			}
		}
	}
	e.noIPRule(l, ifcs, noIP, connected, graceEnd)
	if len(missing) > 0 {
		l.add(v1alpha1.VerdictDegraded, v1alpha1.ReasonGuestInterfaceDataMissing,
			"the guest agent is connected but reports nothing for "+ifcNames(ifcs, missing), graceEnd)
		for _, i := range missing {
			l.cite(kindVMI, vmi.Name, "status.interfaces["+ifcs[i].Name+"].infoSource", ifcs[i].InfoSource, time.Time{})
		}
	}
}

// noIPRule reports the primary interface the agent reports without any IP
// past AgentGracePeriod from its connection (interfaceRules finds it).
func (e *engine) noIPRule(l *layer, ifcs []kubevirtv1.VirtualMachineInstanceNetworkInterface, noIP []int, connected, graceEnd time.Time) {
	if len(noIP) == 0 {
		return
	}
	name := ifcs[noIP[0]].Name
	l.add(v1alpha1.VerdictDegraded, v1alpha1.ReasonGuestInterfaceDataMissing,
		"the guest agent reported the primary interface "+name+" without any IP address since it connected at "+rfc(connected)+
			" (more than "+e.f.pol.AgentGracePeriod.String()+" ago)", graceEnd)
	l.cite(kindVMI, e.f.vmi.Name, "status.interfaces["+name+"].ipAddress", "absent", time.Time{})
}

// natRule reports masquerade interfaces on the pod network whose status
// shows the NAT-internal address (natMismatch): KubeVirt's own reporting
// bug, not the guest's.
func (e *engine) natRule(l *layer, ifcs []kubevirtv1.VirtualMachineInstanceNetworkInterface, nat []int) {
	if len(nat) == 0 {
		return
	}
	f := &e.f
	vmi := f.vmi
	// KubeVirt's own reporting bug, not the guest's: virt-handler
	// wrote the agent's NAT-internal address where the pod's belongs
	// (kubevirt#18760; #16421 when the pod IP is missing). Kept on the
	// guest layer under GuestIPMismatch, whose evidence it is (see
	// docs/verdicts.md, Decisions).
	var b strings.Builder
	for k, i := range nat {
		if k > 0 {
			b.WriteString("; ")
		}
		addr := joinSorted(ifcs[i].IPs)
		if addr == "" {
			addr = ifcs[i].IP
		}
		b.WriteString("virt-handler reports the NAT-internal address " + addr + " on " + ifcs[i].Name)
		if f.active != nil {
			if pod := podIPsValue(f.active); pod != "" {
				b.WriteString(" instead of pod IP " + pod)
			}
		}
	}
	b.WriteString(" (kubevirt#18760)")
	e.contradiction(l, f.podIPsSince(), v1alpha1.VerdictDegraded, v1alpha1.ReasonGuestIPMismatch, b.String())
	for _, i := range nat {
		l.cite(kindVMI, vmi.Name, "status.interfaces["+ifcs[i].Name+"].ipAddresses", joinSorted(ifcs[i].IPs), time.Time{})
		if f.active != nil {
			l.cite(kindPod, f.active.Name, "status.podIPs", podIPsValue(f.active), time.Time{})
		}
	}
}

// podIPsSince is when the active pod's IPs became what they are, as well
// as the objects say: its Ready transition, or the end of the migration
// that moved the VM to it.
func (f *facts) podIPsSince() time.Time {
	var t time.Time
	if p := f.active; p != nil {
		t = mt(p.CreationTimestamp)
		if c := podCond(p, corev1.PodReady); c != nil {
			t = later(t, mt(c.LastTransitionTime))
		}
	}
	if f.mig.present && !f.mig.inProgress {
		t = later(t, f.mig.endTime())
	}
	return t
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func podIPsValue(p *corev1.Pod) string {
	var buf [8]string
	ips := buf[:0]
	if p.Status.PodIP != "" {
		ips = append(ips, p.Status.PodIP)
	}
	for _, ip := range p.Status.PodIPs {
		if !slices.Contains(ips, ip.IP) {
			ips = append(ips, ip.IP)
		}
	}
	return joinSorted(ips)
}

// joinSorted joins a copy of ss, sorted, so that evidence does not depend on
// input order.
// ifcNames lists the names of the interfaces at idx, in that order, for a
// message.
func ifcNames(ifcs []kubevirtv1.VirtualMachineInstanceNetworkInterface, idx []int) string {
	var b strings.Builder
	for k, i := range idx {
		if k > 0 {
			b.WriteString(", ")
		}
		b.WriteString(ifcs[i].Name)
	}
	return b.String()
}

func joinSorted(ss []string) string {
	var buf [8]string
	c := append(buf[:0], ss...)
	slices.Sort(c)
	return strings.Join(c, ",")
}

// guestSummary is what the agent reports. guestOSInfo is identity only:
// KubeVirt never clears it, so it outlives the agent.
func (e *engine) guestSummary() *v1alpha1.GuestSummary {
	f := &e.f
	if f.vmi == nil {
		return nil
	}
	g := &e.a.guest
	g.AgentSupported = true
	if c := f.vmiCondTrue(kubevirtv1.VirtualMachineInstanceAgentConnected); c != nil {
		g.AgentConnected = true
		g.AgentConnectedSince = e.a.time(agentSince(c))
	}
	if f.vmiCondTrue(kubevirtv1.VirtualMachineInstanceUnsupportedAgent) != nil {
		g.AgentSupported = false
	}
	g.OSPrettyName = bound(f.vmi.Status.GuestOSInfo.PrettyName, maxValue)
	g.KernelRelease = bound(f.vmi.Status.GuestOSInfo.KernelRelease, maxValue)
	e.probeSummary(g)
	return g
}
