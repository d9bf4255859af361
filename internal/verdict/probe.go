package verdict

import (
	"strconv"
	"strings"
	"time"

	"github.com/vmobs/vmobs/api/v1alpha1"
)

// The guest agent's subresources the probe reads (virt-api's
// subresources.kubevirt.io/v1, kv:pkg/virt-api/rest/subresource.go), as
// evidence fields: the name is the VMI's, the field the subresource and
// what in its answer the rule read.
const (
	probeOSInfo      = "guestosinfo"
	probeFreeze      = "guestosinfo.fsFreezeStatus"
	probeFilesystems = "filesystemlist"
	// maxFullNamed is how many full filesystems a message names; the
	// evidence cites as many as the layer has room for.
	maxFullNamed = 4
)

// guestFacts are the probe's facts of the VMI when a rule may read them:
// the VMI runs, and the facts were folded for this VMI (not for an earlier
// one of the same name). Facts that say the probe is unavailable carry no
// UID: they are the whole fleet's.
func (f *facts) guestFacts() *GuestFacts {
	g := f.in.Guest
	if g == nil || f.lc != lcRunning || f.vmi == nil {
		return nil
	}
	if g.Unavailable != "" && (g.VMIUID == "" || g.VMIUID == f.vmi.UID) {
		return g
	}
	if g.VMIUID == "" || g.VMIUID != f.vmi.UID {
		return nil
	}
	return g
}

// guestAnswers are the facts when they hold answers: readable, this
// VMI's, and answered at least once.
func (f *facts) guestAnswers() *GuestFacts {
	g := f.guestFacts()
	if g == nil || g.Unavailable != "" || !g.Answered {
		return nil
	}
	return g
}

// probeGuest judges what the guest agent answered the controller's probes
// of a VMI whose AgentConnected condition is True. virt-handler sets that
// condition from its agent poller and removes it only when the poller
// gives up (kv:pkg/virt-handler/vm.go), so it lags an agent that stopped
// answering; the probe asks the agent now, through the same path as
// virtctl guestosinfo.
func (e *engine) probeGuest(l *layer) {
	f := &e.f
	g := f.guestFacts()
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
	if n := f.pol.AgentUnresponsiveProbes; g.Failures >= n {
		why := bound(g.LastError, maxValue)
		l.add(v1alpha1.VerdictUnknown, v1alpha1.ReasonAgentUnresponsive,
			"the VMI says the guest agent is connected, but it has not answered the last "+strconv.Itoa(int(n))+
				" probes (failing since "+rfc(g.FailingSince)+"): "+why+"; what the VMI says of the guest may be out of date", g.FailingSince)
		l.cite(kindProbe, name, probeOSInfo, "failing since "+rfc(g.FailingSince)+": "+why, g.FailingSince)
		return
	}
	if !g.Answered {
		return
	}
	e.filesystemsFull(l, g)
}

// filesystemsFull judges the guest's filesystems by the share of each in
// use, as the agent counts it (guest-get-fsinfo's used and total bytes,
// kv:pkg/virt-launcher/virtwrap/agent-poller/agent_poller.go). The fold
// keeps them fullest first.
func (e *engine) filesystemsFull(l *layer, g *GuestFacts) {
	pol := &e.f.pol
	var named []string
	var since time.Time
	full := 0
	for i := range g.Filesystems {
		fs := &g.Filesystems[i]
		if fs.UsedPercent < pol.FilesystemUsedPercent {
			continue
		}
		full++
		if len(named) < maxFullNamed {
			named = append(named, bound(fs.MountPoint, 64)+" "+strconv.Itoa(int(fs.UsedPercent))+"%")
		}
		if since.IsZero() || !fs.Since.IsZero() && fs.Since.Before(since) {
			since = fs.Since
		}
	}
	if full == 0 {
		return
	}
	msg := "guest filesystems nearly full: " + strings.Join(named, ", ")
	if more := full - len(named); more > 0 {
		msg += " and " + strconv.Itoa(more) + " more"
	}
	msg += " used (from " + strconv.Itoa(int(pol.FilesystemUsedPercent)) + "%)"
	l.add(v1alpha1.VerdictDegraded, v1alpha1.ReasonFilesystemNearlyFull, msg, since)
	for i := range g.Filesystems {
		if fs := &g.Filesystems[i]; fs.UsedPercent >= pol.FilesystemUsedPercent {
			l.cite(kindProbe, e.f.vmi.Name, probeFilesystems+"["+bound(fs.MountPoint, 64)+"].used",
				strconv.Itoa(int(fs.UsedPercent))+"%", fs.Since)
		}
	}
}

// probeFrozen reads a freeze from the probe when the VMI does not carry
// one: status.fsFreezeStatus is virt-handler's copy of the agent's answer,
// written only when virt-handler syncs the VMI, while guestosinfo asks the
// agent now (kv:pkg/virt-handler/rest/lifecycle.go GetGuestInfo). The
// first sighting is the earlier of the previous status's and the fold's.
func (f *facts) probeFrozen(prev *v1alpha1.VMISummary) {
	g := f.guestAnswers()
	if g == nil || g.FSFreezeStatus != fsFrozen {
		return
	}
	f.frozenByProbe = true
	t := g.FrozenSince
	if t.IsZero() || t.After(f.now) {
		t = f.now
	}
	if prev != nil {
		if p := mtp(prev.FSFrozenSince); !p.IsZero() && p.Before(t) {
			t = p
		}
	}
	f.frozenSince = t
}

// probeSummary adds what the probe answered to the guest summary. The VMI's
// guestOSInfo, where virt-handler keeps the agent's OS, comes first: the
// probe fills what it lacks.
func (e *engine) probeSummary(s *v1alpha1.GuestSummary) {
	g := e.f.guestAnswers()
	if g == nil {
		return
	}
	if s.OSPrettyName == "" {
		s.OSPrettyName = bound(g.OSName, maxValue)
	}
	if s.KernelRelease == "" {
		s.KernelRelease = bound(g.KernelRelease, maxValue)
	}
	s.Hostname = bound(g.Hostname, MaxGuestString)
	s.Timezone = bound(g.Timezone, MaxGuestString)
	if g.UsersKnown {
		e.a.users = min(max(g.Users, 0), MaxGuestUsers)
		s.Users = &e.a.users
	}
	n := min(len(g.Filesystems), MaxGuestFilesystems)
	if n == 0 {
		return
	}
	fs := make([]v1alpha1.GuestFilesystem, n)
	for i := range fs {
		in := &g.Filesystems[i]
		fs[i] = v1alpha1.GuestFilesystem{
			MountPoint:  bound(in.MountPoint, MaxGuestString),
			Type:        bound(in.Type, 64),
			UsedPercent: min(max(in.UsedPercent, 0), 100),
		}
	}
	s.Filesystems = fs
}
