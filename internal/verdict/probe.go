package verdict

import (
	"strconv"
	"strings"
	"time"

	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/vmifacts"
)

// The guest agent's subresources the probe reads (virt-api's
// subresources.kubevirt.io/v1, kv:pkg/virt-api/rest/subresource.go), as
// evidence fields: the name is the VMI's, the field the subresource and
// what in its answer the rule read.
const (
	probeOSInfo      = "guestosinfo"
	probeFilesystems = "filesystemlist"
	// maxFullNamed is how many full filesystems a message names; the
	// evidence cites as many as the layer has room for.
	maxFullNamed = 4
)

// probeGuest judges what the controller's probes of a VMI whose
// AgentConnected condition is True returned, on the guest layer: what the
// guest's filesystems hold. The probe reads the same data the VMI's
// agent-derived fields come from: virt-launcher answers guestosinfo,
// userlist and filesystemlist from its agent poller's store
// (kv:pkg/virt-launcher/virtwrap/manager.go:2553-2650 GetGuestInfo, GetUsers,
// GetFilesystems read l.agentData), never by asking the agent. A probe that
// fails is therefore the path's failure (probePath, on the node layer), and
// an agent that hangs while its channel stays open keeps answering with its
// last data: the poller skips a failed command and keeps the old value
// (kv:pkg/virt-launcher/virtwrap/agent-poller/agent_poller.go:412-446), and
// AgentConnected is the virtio-serial channel's state, not a poll's result
// (kv:pkg/virt-handler/vm.go:773-798). No KubeVirt API tells a hung agent.
func (e *engine) probeGuest(l *layer) {
	f := &e.f
	g := vmiFacts(f, f.in.Guest)
	if g == nil {
		return
	}
	name := f.vmi.Name
	if g.Unavailable != "" {
		// An outage of virt-api is not the guest's: the verdict rests on
		// the VMI's conditions, as without the probe.
		why := bound(g.Unavailable, maxValue)
		l.note(v1alpha1.ReasonGuestProbeUnavailable, "guest probe unavailable: "+why, time.Time{})
		l.cite(kindProbe, name, probeOSInfo, why, time.Time{})
		return
	}
	if !g.Answered || g.Failures >= f.pol.AgentUnresponsiveProbes {
		// What the launcher answered before the path broke is not judged:
		// nothing says it is still so (probePath says why).
		return
	}
	e.filesystemsFull(l, g)
}

// probePath judges, on the node layer, probes of a VMI whose AgentConnected
// condition is True that keep failing: virt-api could not get the guest
// information from virt-launcher through virt-handler on the VMI's node.
// Every step answers a failure as a 500 with text
// (kv:pkg/virt-api/rest/subresource.go:183-205): virt-api finds no
// virt-handler on the node ("No virt-handler on node %s found",
// kv:staging/src/kubevirt.io/client-go/kubecli/handler.go:126) or cannot
// reach it, or virt-handler cannot find or dial the launcher's command
// socket (kv:pkg/virt-handler/rest/lifecycle.go:253-275), or the launcher's
// call fails. None of them is the agent's (probeGuest), so the finding
// names the path. Unknown, not Degraded: the VM may run well while only
// this path is broken, and what the VMI says of the guest cannot be checked
// through it. A node that is not Ready, or whose virt-handler stopped
// beating, already explains it; a paused guest is not judged (the poller
// stops on a suspend, agent_poller.go:369-400).
func (e *engine) probePath(l *layer) {
	f := &e.f
	g := vmiFacts(f, f.in.Guest)
	if g == nil || g.Unavailable != "" || g.Failures < f.pol.AgentUnresponsiveProbes ||
		f.vmiCondTrue(kubevirtv1.VirtualMachineInstanceAgentConnected) == nil || f.paused() != nil || f.nodeNotReady() || f.hbStale() {
		return
	}
	// The threshold, not the count, in the message: a count that grows
	// with each failed probe would rewrite the status every interval.
	why := bound(g.LastError, maxValue)
	l.add(v1alpha1.VerdictUnknown, v1alpha1.ReasonGuestInfoUnreachable,
		"virt-api could not read the guest information of this VMI from virt-launcher through virt-handler on "+orUnknown(f.nodeName)+
			" in the last "+strconv.Itoa(int(f.pol.AgentUnresponsiveProbes))+" probes (failing since "+rfc(g.FailingSince)+"): "+why+
			"; virt-handler or the launcher's command socket does not answer for this VMI, so what the VMI says of the guest cannot be checked"+
			" (the guest agent itself is not asked: the launcher answers from its cache)", g.FailingSince)
	l.cite(kindProbe, f.vmi.Name, probeOSInfo, "failing since "+rfc(g.FailingSince)+": "+why, g.FailingSince)
}

// filesystemsFull judges the guest's filesystems by the share of each in
// use, as the agent counts it (guest-get-fsinfo's used and total bytes,
// kv:pkg/virt-launcher/virtwrap/agent-poller/agent_poller.go), with
// KubeVirt's own thresholds (kv:pkg/monitoring/rules/alerts/vms.go:195-228,
// GuestFilesystemAlmostOutOfSpace): at or above FilesystemCriticalPercent
// (95%, KubeVirt's critical, no duration) it is Degraded at once; at or
// above FilesystemUsedPercent (85%, KubeVirt's warning, for: 10m) for
// FilesystemFullFor it is Degraded, and a note until then. Both of
// KubeVirt's severities are Degraded: vmobs has no "warning" verdict, and
// a filesystem filling for ten minutes is a fault to act on, not a passing
// state. Filesystems KubeVirt's alerts leave out (FilesystemIgnored) are
// not judged. The fold keeps them fullest first.
func (e *engine) filesystemsFull(l *layer, g *vmifacts.GuestFacts) {
	f := &e.f
	pol := &f.pol
	var named, filling []string
	var since, pending time.Time
	full := 0
	for i := range g.Filesystems {
		fs := &g.Filesystems[i]
		if vmifacts.FilesystemIgnored(fs.Type, fs.MountPoint) {
			continue
		}
		at, level, ok := e.filesystemFullAt(fs)
		if !level {
			continue
		}
		what := bound(fs.MountPoint, 64) + " " + strconv.Itoa(int(fs.UsedPercent)) + "%"
		if !ok {
			if len(filling) < maxFullNamed {
				filling = append(filling, what)
			}
			if pending.IsZero() || at.Before(pending) {
				pending = at
			}
			continue
		}
		full++
		if len(named) < maxFullNamed {
			named = append(named, what)
		}
		if full == 1 || at.Before(since) {
			since = at
		}
	}
	if full > 0 {
		msg := "guest filesystems nearly full: " + strings.Join(named, ", ")
		if more := full - len(named); more > 0 {
			msg += " and " + strconv.Itoa(more) + " more"
		}
		msg += " used (" + strconv.Itoa(int(min(pol.FilesystemCriticalPercent, pol.FilesystemUsedPercent))) + "% or more"
		if pol.FilesystemUsedPercent < pol.FilesystemCriticalPercent {
			msg += " for " + pol.FilesystemFullFor.String() + ", or " + strconv.Itoa(int(pol.FilesystemCriticalPercent)) + "% or more"
		}
		msg += ")"
		l.add(v1alpha1.VerdictDegraded, v1alpha1.ReasonFilesystemNearlyFull, msg, since)
	} else if len(filling) > 0 {
		e.deadline(pending)
		l.stale(pending)
		l.note(v1alpha1.ReasonFilesystemNearlyFull, "guest filesystems filling: "+strings.Join(filling, ", ")+
			" used; at "+rfc(pending)+" that becomes a fault unless they drop under "+strconv.Itoa(int(pol.FilesystemUsedPercent))+"%", time.Time{})
	}
	for i := range g.Filesystems {
		fs := &g.Filesystems[i]
		if vmifacts.FilesystemIgnored(fs.Type, fs.MountPoint) {
			continue
		}
		if t, ok := fs.AtLeastSince(pol.FilesystemUsedPercent); ok {
			l.cite(kindProbe, f.vmi.Name, probeFilesystems+"["+bound(fs.MountPoint, 64)+"].used",
				strconv.Itoa(int(fs.UsedPercent))+"%", t)
		}
	}
}

// filesystemFullAt is when a filesystem is (or becomes) nearly full: since
// it has been at the critical share, else FilesystemFullFor after it
// reached the warning share; level says it is at the warning share or
// more, full that its time has come. A level the facts do not date is
// judged as if its time had come (no clock to wait by).
func (e *engine) filesystemFullAt(fs *vmifacts.GuestFilesystem) (at time.Time, level, full bool) {
	pol := &e.f.pol
	if t, ok := fs.AtLeastSince(pol.FilesystemCriticalPercent); ok {
		return t, true, true
	}
	t, ok := fs.AtLeastSince(pol.FilesystemUsedPercent)
	if !ok {
		return time.Time{}, false, false
	}
	if t.IsZero() || e.f.future(t) {
		return time.Time{}, true, true
	}
	end := ceilSec(t.Add(pol.FilesystemFullFor))
	return end, true, crossed(e.f.now, end)
}

// probeSummary adds what the probe answered to the guest summary. The VMI's
// guestOSInfo, where virt-handler keeps the agent's OS, comes first: the
// probe fills what it lacks.
func (e *engine) probeSummary(s *v1alpha1.GuestSummary) {
	g := vmiData(&e.f, e.f.in.Guest)
	if g == nil {
		return
	}
	if s.OSPrettyName == "" {
		s.OSPrettyName = bound(g.OSName, maxValue)
	}
	if s.KernelRelease == "" {
		s.KernelRelease = bound(g.KernelRelease, maxValue)
	}
	s.Hostname = bound(g.Hostname, vmifacts.MaxGuestString)
	s.Timezone = bound(g.Timezone, vmifacts.MaxGuestString)
	if g.UsersKnown {
		e.a.users = min(max(g.Users, 0), vmifacts.MaxGuestUsers)
		s.Users = &e.a.users
	}
	n := min(len(g.Filesystems), vmifacts.MaxGuestFilesystems)
	if n == 0 {
		return
	}
	fs := make([]v1alpha1.GuestFilesystem, n)
	for i := range fs {
		in := &g.Filesystems[i]
		fs[i] = v1alpha1.GuestFilesystem{
			MountPoint:  bound(in.MountPoint, vmifacts.MaxGuestString),
			Type:        bound(in.Type, 64),
			UsedPercent: min(max(in.UsedPercent, 0), 100),
		}
	}
	s.Filesystems = fs
}
