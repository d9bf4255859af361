package verdict

import (
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/api/v1alpha1"
)

// fsFrozen is what virt-handler copies into status.fsFreezeStatus while the
// guest agent reports the filesystems frozen; it clears the field when the
// agent reports them thawed (kv:pkg/virt-handler/vm.go updateFSFreezeStatus,
// kv:pkg/virt-launcher/virtwrap/api/schema.go FSFrozen). The API module has
// no constant for it.
const fsFrozen = "frozen"

// maxHotplugVolumes is the CRD's MaxItems on status.vmi.hotplugVolumes.
const maxHotplugVolumes = 16

// hotplug is a memory or CPU hotplug requested of a running VMI and not
// applied yet.
//
// KubeVirt carries both out by a live migration. virt-controller's VM
// controller copies the template's new memory or sockets into the VMI's spec
// (kv:pkg/virt-controller/watch/vm/vm.go handleMemoryHotplugRequest,
// handleCPUChangeRequest); its VMI controller then adds HotMemoryChange or
// HotVCPUChange=True while the spec differs from what the domain was given
// (kv:pkg/virt-controller/watch/vmi/lifecycle.go requireMemoryHotplug,
// requireCPUHotplug → syncHotplugCondition, which writes no time and no
// reason); the workload updater migrates the VMI
// (kv:pkg/virt-controller/watch/workload-updater/workload-updater.go
// isHotplugInProgress), and virt-handler on the target applies the change,
// removes the condition and records it in status.memory.guestRequested or
// status.currentCPUTopology (kv:pkg/virt-handler/migration-target.go
// hotplugMemory, hotplugCPU). A memory hotplug that failed there turns
// HotMemoryChange False ("Memory Hotplug Failed"), which vmiRuntimeRules
// reads as HotplugFailed. Last, the guest takes the memory: libvirt's
// currentMemory, which virt-handler copies into status.memory.guestCurrent
// (kv:pkg/virt-handler/vm.go updateMemoryInfo), grows to guestRequested.
type hotplug struct {
	memory, cpu bool
	// memCond and cpuCond are HotMemoryChange and HotVCPUChange when True.
	memCond, cpuCond *kubevirtv1.VirtualMachineInstanceCondition
	// memSpec: the spec asks for other memory than the domain was given.
	memSpec bool
	// memInGuest: the domain was given the memory and the guest has not
	// taken all of it.
	memInGuest bool
	// cpuSpec: the spec asks for other vCPUs than the domain runs.
	cpuSpec bool
	// since is when the hotplug began as well as the objects tell (see
	// readHotplug).
	since time.Time
	// migrating: a migration of the VMI is in progress, which carries the
	// hotplug out or holds it back; queued: virt-controller's condition
	// asks for that migration and no attempt has failed, so the hotplug
	// waits in the workload updater's queue. Neither runs the clock.
	migrating, queued bool
	// clock is when the hotplug's timeout starts: since, or the end of
	// the last migration attempt when that is later.
	clock time.Time
	// volumeSince is when a hotplugged volume was first seen not Ready,
	// zero while all are Ready (readRuntime).
	volumeSince time.Time
}

// readRuntime reads what a running VMI's runtime details need beyond the
// objects: the first sightings the previous status of this same VMI
// carries. KubeVirt gives a freeze no time and a hotplug request none
// either, so the controller records when it first saw them, and keeps that
// from one status to the next (as prevAgent does with the agent); the
// deadlines they lead to are then fixed, and the engine stays pure.
func (f *facts) readRuntime(in *Input) {
	vmi := f.vmi
	if vmi == nil {
		return
	}
	var prev *v1alpha1.VMISummary
	if p := in.Previous; p != nil && p.VMI != nil && vmi.UID != "" && p.VMI.UID == vmi.UID {
		prev = p.VMI
	}
	// status.fsFreezeStatus is the only source of a freeze: virt-handler
	// copies each change of the agent poller's guest-fsfreeze-status
	// (polled every 5 s) into it as it happens (kv:pkg/virt-handler/
	// vm.go:931-942), so the probe's guestosinfo, read from the same poller
	// every few minutes, can only be older.
	if vmi.Status.FSFreezeStatus == fsFrozen {
		f.frozenSince = f.firstSeen(prev, func(s *v1alpha1.VMISummary) *metav1.Time { return s.FSFrozenSince })
	}
	if f.lc == lcRunning {
		f.readHotplug(prev)
		f.readAgentLost(prev)
	}
	for i := range vmi.Status.VolumeStatus {
		if vs := &vmi.Status.VolumeStatus[i]; vs.HotplugVolume != nil && vs.Phase != kubevirtv1.VolumeReady {
			f.hp.volumeSince = f.firstSeen(prev, func(s *v1alpha1.VMISummary) *metav1.Time { return s.HotplugVolumeSince })
			break
		}
	}
}

// readAgentLost dates a disconnection of a guest agent that was connected
// before: virt-handler removes AgentConnected when the agent's channel
// closes (kv:pkg/virt-handler/vm.go:785-798) and records no time, so the
// first sighting is kept from one status to the next, as a freeze's is.
// The previous status carrying it is itself a sign of the earlier agent.
// Recorded only while the hint of an earlier agent holds, so a VM that never
// ran one carries none.
func (f *facts) readAgentLost(prev *v1alpha1.VMISummary) {
	if f.vmiCondTrue(kubevirtv1.VirtualMachineInstanceAgentConnected) != nil {
		return
	}
	if prev != nil && prev.AgentDisconnectedSince != nil {
		f.prevAgent = true
	}
	if hint, _, _ := f.agentHint(); hint {
		f.agentLost = f.firstSeen(prev, func(s *v1alpha1.VMISummary) *metav1.Time { return s.AgentDisconnectedSince })
	}
}

// firstSeen is the first sighting the previous status carries, or now.
func (f *facts) firstSeen(prev *v1alpha1.VMISummary, field func(*v1alpha1.VMISummary) *metav1.Time) time.Time {
	if prev != nil {
		if t := mtp(field(prev)); !t.IsZero() && !t.After(f.now) {
			return t
		}
	}
	return f.now
}

// readHotplug says whether a memory or CPU hotplug is requested and not
// applied, and since when: the end of the migration that handed the memory
// to the domain when only the guest has not taken it, else (and at the
// latest) the first sighting.
func (f *facts) readHotplug(prev *v1alpha1.VMISummary) {
	vmi := f.vmi
	hp := &f.hp
	c := f.vmiCond(kubevirtv1.VirtualMachineInstanceMemoryChange)
	// HotMemoryChange=False is a failure (HotplugFailed), not a wait.
	if c == nil || c.Status != corev1.ConditionFalse {
		if c != nil && c.Status == corev1.ConditionTrue {
			hp.memCond = c
		}
		if m := vmi.Status.Memory; m != nil && m.GuestRequested != nil {
			// virt-controller hotplugs memory only into a VMI with a
			// maxGuest (kv:pkg/virt-controller/watch/vmi/lifecycle.go:1158-1163
			// requireMemoryHotplug): without one a differing spec is a
			// restart's business (the VM's RestartRequired), not a wait.
			if g := specGuest(vmi); g != nil && vmi.Spec.Domain.Memory.MaxGuest != nil && g.Cmp(*m.GuestRequested) != 0 {
				hp.memSpec = true
			}
			// Less memory than requested only: a hot-unplug need not
			// release it all (kv:pkg/virt-controller/watch/vm/vm.go
			// handleMemoryHotplugRequest), and libvirt rounds a domain's
			// memory up, never down.
			if m.GuestCurrent != nil && m.GuestCurrent.Cmp(*m.GuestRequested) < 0 {
				hp.memInGuest = true
			}
		}
		hp.memory = hp.memCond != nil || hp.memSpec || hp.memInGuest
	}
	hp.cpuCond = f.vmiCondTrue(kubevirtv1.VirtualMachineInstanceVCPUChange)
	// Likewise CPU hotplug needs maxSockets (lifecycle.go:1146-1156
	// requireCPUHotplug).
	if cur, spec := vmi.Status.CurrentCPUTopology, vmi.Spec.Domain.CPU; cur != nil && spec != nil && spec.MaxSockets != 0 &&
		vcpus(spec.Sockets, spec.Cores, spec.Threads) != vcpus(cur.Sockets, cur.Cores, cur.Threads) {
		hp.cpuSpec = true
	}
	hp.cpu = hp.cpuCond != nil || hp.cpuSpec
	if !hp.memory && !hp.cpu {
		return
	}
	hp.since = f.firstSeen(prev, func(s *v1alpha1.VMISummary) *metav1.Time { return s.HotplugSince })
	if st := vmi.Status.MigrationState; hp.memInGuest && !hp.memSpec && st != nil && st.Completed && !st.Failed {
		if end := mtp(st.EndTimestamp); !end.IsZero() && !f.future(end) {
			hp.since = earliest(hp.since, end)
		}
	}
	f.hotplugClock()
}

// hotplugClock says whether the hotplug's clock runs, and from when.
//
// KubeVirt carries a hotplug out by a live migration that the workload
// updater starts for a VMI with HotVCPUChange or HotMemoryChange=True
// (kv:pkg/virt-controller/watch/workload-updater/workload-updater.go:
// 320-325 isHotplugInProgress), at most parallelMigrationsPerCluster
// minus the active migrations at a time (:534-545): a change applied to
// many VMs queues them, and a large VM's migration takes minutes. So
// the clock stops while a migration of the VMI runs and while the
// condition asks for one that has not failed; it runs from the end of
// the last attempt. A failed attempt is MigrationFailed meanwhile; a
// completed one that left the guest short is the real "stuck". The
// updater queues only a VMI whose LiveMigratable is True (:421
// getUpdateData, vmi.IsMigratable): another one's clock runs.
func (f *facts) hotplugClock() {
	hp := &f.hp
	m := &f.mig
	hp.migrating = m.inProgress
	hp.queued = !hp.migrating && (hp.memCond != nil || hp.cpuCond != nil) && !m.failed &&
		f.vmiCondTrue(kubevirtv1.VirtualMachineInstanceIsMigratable) != nil
	hp.clock = hp.since
	if m.present && !m.inProgress {
		if end := m.endTime(); end.After(hp.clock) && !f.future(end) && !(hp.memInGuest && !hp.memSpec) {
			hp.clock = end
		}
	}
}

func specGuest(vmi *kubevirtv1.VirtualMachineInstance) *resource.Quantity {
	if m := vmi.Spec.Domain.Memory; m != nil {
		return m.Guest
	}
	return nil
}

// vcpus counts vCPUs as KubeVirt does, an unset count being one
// (kv:pkg/util/hardware GetNumberOfVCPUs).
func vcpus(sockets, cores, threads uint32) int64 {
	n := int64(1)
	for _, v := range [...]uint32{sockets, cores, threads} {
		n *= int64(max(v, 1))
	}
	return n
}

// qty is q's canonical string, read from a copy: Quantity.String caches
// into its receiver, and the engine does not write into its input.
func qty(q *resource.Quantity) string {
	if q == nil {
		return ""
	}
	c := q.DeepCopy()
	return c.String()
}

// hotplugRules judges a memory or CPU hotplug that is requested and not
// applied: Progressing for Policy.HotplugTimeout from its start, Degraded
// after.
func (e *engine) hotplugRules(l *layer) {
	f := &e.f
	hp := &f.hp
	if !hp.memory && !hp.cpu {
		return
	}
	vmi := f.vmi
	var what, why []string
	if hp.memory {
		w := "memory hotplug"
		if g := specGuest(vmi); g != nil {
			w += " to " + qty(g)
		}
		what = append(what, w)
		m := vmi.Status.Memory
		switch {
		case hp.memCond != nil:
			why = append(why, "virt-controller set HotMemoryChange and waits for the live migration that gives it to the domain")
		case hp.memSpec:
			why = append(why, "the domain was given "+qty(m.GuestRequested)+" and no live migration gives it more yet")
		default:
			why = append(why, "the domain was given "+qty(m.GuestRequested)+" and the guest has taken "+qty(m.GuestCurrent))
		}
	}
	if hp.cpu {
		w := "CPU hotplug"
		if spec := vmi.Spec.Domain.CPU; spec != nil {
			w += " to " + strconv.FormatInt(vcpus(spec.Sockets, spec.Cores, spec.Threads), 10) + " vCPUs"
		}
		what = append(what, w)
		r := "no live migration has given them to the domain yet"
		if hp.cpuCond != nil {
			r = "virt-controller set HotVCPUChange and waits for the live migration that gives them to the domain"
		}
		if cur := vmi.Status.CurrentCPUTopology; cur != nil {
			r += ", which runs " + strconv.FormatInt(vcpus(cur.Sockets, cur.Cores, cur.Threads), 10) + " vCPUs"
		}
		why = append(why, r)
	}
	subject, detail := strings.Join(what, " and a "), strings.Join(why, "; ")
	switch {
	case hp.migrating:
		// The migration's own rules judge it, and Migrating is the reason
		// (it ran first: ties go to it).
		l.add(v1alpha1.VerdictProgressing, v1alpha1.ReasonMemoryHotplugPending,
			"a "+subject+" is requested and not applied yet: "+detail+"; a migration of the VMI is in progress", hp.since)
	case hp.queued:
		l.add(v1alpha1.VerdictProgressing, v1alpha1.ReasonMemoryHotplugPending,
			"a "+subject+" is requested and not applied yet: "+detail+
				"; the VMI waits in KubeVirt's workload-updater queue, which migrates a few VMIs at a time (parallelMigrationsPerCluster)", hp.since)
	default:
		e.timedProgress(l, hp.clock, f.pol.HotplugTimeout,
			v1alpha1.ReasonMemoryHotplugPending, "a "+subject+" is requested and not applied yet: "+detail,
			v1alpha1.ReasonHotplugStuck, "a "+subject+" has been requested and not applied ("+detail+")")
	}
	if hp.memory {
		if hp.memCond != nil {
			l.cite(kindVMI, vmi.Name, "status.conditions[HotMemoryChange].status", string(hp.memCond.Status), mt(hp.memCond.LastTransitionTime))
		}
		if g := specGuest(vmi); g != nil && hp.memSpec {
			l.cite(kindVMI, vmi.Name, "spec.domain.memory.guest", qty(g), time.Time{})
		}
		if m := vmi.Status.Memory; m != nil {
			l.cite(kindVMI, vmi.Name, "status.memory.guestRequested", qty(m.GuestRequested), time.Time{})
			if hp.memInGuest {
				l.cite(kindVMI, vmi.Name, "status.memory.guestCurrent", qty(m.GuestCurrent), time.Time{})
			}
		}
	}
	if hp.cpu {
		if hp.cpuCond != nil {
			l.cite(kindVMI, vmi.Name, "status.conditions[HotVCPUChange].status", string(hp.cpuCond.Status), mt(hp.cpuCond.LastTransitionTime))
		}
		if spec, cur := vmi.Spec.Domain.CPU, vmi.Status.CurrentCPUTopology; hp.cpuSpec {
			l.cite(kindVMI, vmi.Name, "spec.domain.cpu.sockets", strconv.FormatUint(uint64(spec.Sockets), 10), time.Time{})
			l.cite(kindVMI, vmi.Name, "status.currentCPUTopology.sockets", strconv.FormatUint(uint64(cur.Sockets), 10), time.Time{})
		}
	}
}

// frozenRule judges the guest's filesystems frozen: normal for a snapshot
// or a backup (KubeVirt's snapshot controller freezes the guest while it
// takes one, and virt-launcher thaws it after the freeze's unfreeze
// timeout), a note until Policy.FilesystemsFrozenAfter after vmobs first
// saw them frozen, Degraded after: writes inside the guest block meanwhile.
func (e *engine) frozenRule(l *layer) {
	f := &e.f
	if f.frozenSince.IsZero() {
		return
	}
	deadline := ceilSec(f.frozenSince.Add(f.pol.FilesystemsFrozenAfter))
	if crossed(f.now, deadline) {
		l.add(v1alpha1.VerdictDegraded, v1alpha1.ReasonFilesystemsFrozen,
			"the guest's filesystems have been frozen since "+rfc(f.frozenSince)+", longer than "+f.pol.FilesystemsFrozenAfter.String()+
				": writes inside the guest block until they are thawed", deadline)
	} else {
		e.deadline(deadline)
		l.stale(deadline)
		l.note(v1alpha1.ReasonFilesystemsFrozen,
			"the guest's filesystems are frozen (a snapshot or backup in progress) since "+rfc(f.frozenSince)+
				"; at "+rfc(deadline)+" that becomes a fault", f.frozenSince)
	}
	l.cite(kindVMI, f.vmi.Name, "status.fsFreezeStatus", f.vmi.Status.FSFreezeStatus, time.Time{})
}

// runtimeSummary adds the VMI's runtime details to its summary.
func (e *engine) runtimeSummary(s *v1alpha1.VMISummary) {
	f := &e.f
	vmi := f.vmi
	if q := vmi.Status.QOSClass; q != nil {
		s.QOSClass = bound(string(*q), maxPhase)
	}
	s.SELinuxContext = bound(vmi.Status.SelinuxContext, maxValue)
	s.FSFreezeStatus = bound(vmi.Status.FSFreezeStatus, maxPhase)
	s.FSFrozenSince = e.a.time(f.frozenSince)
	s.HotplugSince = e.a.time(f.hp.since)
	s.HotplugVolumeSince = e.a.time(f.hp.volumeSince)
	s.AgentDisconnectedSince = e.a.time(f.agentLost)
	a := e.a
	if m, g := vmi.Status.Memory, specGuest(vmi); m != nil || g != nil {
		keep := func(i int, q *resource.Quantity) *resource.Quantity {
			if q == nil {
				return nil
			}
			a.memQty[i] = q.DeepCopy()
			return &a.memQty[i]
		}
		a.mem.Guest = keep(0, g)
		if m != nil {
			a.mem.GuestAtBoot, a.mem.GuestRequested, a.mem.GuestCurrent = keep(1, m.GuestAtBoot), keep(2, m.GuestRequested), keep(3, m.GuestCurrent)
		}
		if a.mem != (v1alpha1.VMIMemory{}) {
			s.Memory = &a.mem
		}
	}
	if spec, cur := vmi.Spec.Domain.CPU, vmi.Status.CurrentCPUTopology; spec != nil || cur != nil {
		if cur != nil {
			a.topo[0] = v1alpha1.CPUTopology{Sockets: cur.Sockets, Cores: cur.Cores, Threads: cur.Threads}
			a.cpu.Current = &a.topo[0]
		}
		if spec != nil {
			a.topo[1] = v1alpha1.CPUTopology{Sockets: spec.Sockets, Cores: spec.Cores, Threads: spec.Threads}
			a.cpu.Requested = &a.topo[1]
		}
		s.CPU = &a.cpu
	}
	s.HotplugVolumes = e.hotplugVolumes()
}

// hotplugVolumes lists the hotplugged volumes, sorted by name, at most
// maxHotplugVolumes.
func (e *engine) hotplugVolumes() []v1alpha1.HotplugVolume {
	vs := e.f.vmi.Status.VolumeStatus
	n := 0
	for i := range vs {
		if vs[i].HotplugVolume != nil {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	var out []v1alpha1.HotplugVolume
	if n <= len(e.a.hpv) {
		out = e.a.hpv[:0:n]
	} else {
		out = make([]v1alpha1.HotplugVolume, 0, n)
	}
	for i := range vs {
		if v := &vs[i]; v.HotplugVolume != nil {
			out = append(out, v1alpha1.HotplugVolume{
				Name: bound(v.Name, maxValue), Phase: bound(string(v.Phase), maxPhase), Reason: bound(v.Reason, maxValue),
			})
		}
	}
	slices.SortFunc(out, func(a, b v1alpha1.HotplugVolume) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		if c := strings.Compare(a.Phase, b.Phase); c != 0 {
			return c
		}
		return strings.Compare(a.Reason, b.Reason)
	})
	n = min(len(out), maxHotplugVolumes)
	return out[:n:n]
}
