package verdict

import (
	"time"

	"github.com/vmobs/vmobs/api/v1alpha1"
)

// engine is one evaluation: the indexed input, the output arena, one
// builder per layer and the nearest deadline seen.
type engine struct {
	f       facts
	a       *arena
	cp      layer
	node    layer
	guest   layer
	storage layer
	next    time.Time
	// fixed is the nearest deadline that is not a renewing source's.
	fixed time.Time
	// renewsOn is the node whose heartbeat is the renewing source, and
	// renewedAt that heartbeat.
	renewsOn  string
	renewedAt time.Time
	// lm is computed once: the control plane's eviction rule and the
	// status both read it.
	lm *v1alpha1.LiveMigratability
	// needsMessages: a layer kept a previous verdict whose message the
	// previous status did not hold (Result.NeedsMessages).
	needsMessages bool
}

// Evaluate computes the status. Same input, same output: lists are sorted,
// times are truncated to seconds, and nothing depends on the wall clock or
// on input order. It never panics on partial or malformed objects; what it
// cannot read it reports (Unknown with a reason naming what is missing).
func Evaluate(in Input) Result {
	e := &engine{a: new(arena)}
	e.f.init(&in)
	// The labels prefix the overall message: words, not the field names.
	e.cp.label, e.node.label, e.guest.label, e.storage.label = "control plane", v1alpha1.LayerNode, v1alpha1.LayerGuest, v1alpha1.LayerStorage
	e.lm = e.liveMigratable()
	if p := in.Previous; p != nil && p.Layers != nil && p.VMI != nil && in.VMI != nil &&
		in.VMI.UID != "" && p.VMI.UID == in.VMI.UID {
		e.cp.prev, e.node.prev, e.guest.prev = &p.Layers.ControlPlane, &p.Layers.Node, &p.Layers.Guest
		e.storage.prev = &p.Layers.Storage
	}

	e.controlPlane()
	e.nodeLayer()
	e.guestLayer()
	e.storageLayer()

	var res Result
	st := &res.Status
	st.Layers = &e.a.layers
	var prev *v1alpha1.Layers
	if in.Previous != nil {
		prev = in.Previous.Layers
	}
	layers := [len(v1alpha1.LayerNames)]struct {
		b    *layer
		out  *v1alpha1.LayerStatus
		prev *v1alpha1.LayerStatus
	}{
		{&e.cp, &st.Layers.ControlPlane, nil},
		{&e.node, &st.Layers.Node, nil},
		{&e.guest, &st.Layers.Guest, nil},
		{&e.storage, &st.Layers.Storage, nil},
	}
	if prev != nil {
		layers[0].prev, layers[1].prev, layers[2].prev, layers[3].prev = &prev.ControlPlane, &prev.Node, &prev.Guest, &prev.Storage
	}
	worst := -1
	for i := range layers {
		win := e.build(layers[i].b, layers[i].out)
		e.transition(layers[i].out, layers[i].prev, win.since)
		// A layer the input says nothing about does not decide the
		// overall verdict (unless no layer has a basis). Ties go to the
		// first layer: the control plane explains the others more often
		// than the reverse.
		if win.noBasis {
			continue
		}
		if worst < 0 || layers[i].out.Verdict.Severity() > layers[worst].out.Verdict.Severity() {
			worst = i
		}
	}
	if worst < 0 {
		worst = 0
	}
	// A control plane that waited too long for the VM to start says only
	// that it waited; a storage finding as bad says why (a claim that does
	// not bind, a failed import, a volume that cannot attach): the overall
	// verdict names the cause.
	if worst == 0 && stuckWaiting(layers[0].out.Reason) && layers[3].out.Verdict.Severity() == layers[0].out.Verdict.Severity() {
		worst = 3
	}
	w := layers[worst].out
	st.Verdict, st.Reason = w.Verdict, w.Reason
	st.Message = bound(layers[worst].b.label+": "+w.Message, maxMessage)

	st.VMI = e.vmiSummary()
	st.LauncherPods = e.launcherPods()
	st.Migration = e.migrationSummary()
	st.LiveMigratable = e.lm
	st.Interfaces = e.interfaces()
	st.Guest = e.guestSummary()
	st.Domain = e.domainSummary()
	st.Conditions = e.conditions(st, w)

	res.NeedsMessages = e.needsMessages
	res.Renews = !e.next.IsZero() && (e.fixed.IsZero() || e.next.Before(e.fixed))
	if res.Renews {
		res.RenewsOn, res.RenewedAt = e.renewsOn, e.renewedAt
	}
	if !e.fixed.IsZero() {
		// Exact, however near: a deadline is a whole second after now
		// truncated, so always ahead of in.Now; a floor here would judge
		// a verdict due in 300 ms a whole second late.
		res.FixedDeadline = e.fixed.Sub(in.Now)
	}
	if !e.next.IsZero() {
		res.NextDeadline = e.next.Sub(in.Now)
		if res.NextDeadline <= 0 {
			// in.Now lies within the second before the deadline was
			// rounded to; look again right after it.
			res.NextDeadline = time.Second
		}
	}
	return res
}

// stuckWaiting says the reason is a control plane's wait for a start past
// its timeout.
func stuckWaiting(reason string) bool {
	switch reason {
	case v1alpha1.ReasonStuckStarting, v1alpha1.ReasonStuckProvisioning, v1alpha1.ReasonStuckScheduling:
		return true
	}
	return false
}

// deadline records a future instant at which a verdict would change by
// itself.
func (e *engine) deadline(t time.Time) {
	e.renewal(t)
	if t.After(e.f.now) && (e.fixed.IsZero() || t.Before(e.fixed)) {
		e.fixed = t
	}
}

// renewal records the deadline of a renewing source (virt-handler's
// heartbeat): the verdict changes then only if the source has not renewed.
func (e *engine) renewal(t time.Time) {
	if t.After(e.f.now) && (e.next.IsZero() || t.Before(e.next)) {
		e.next = t
	}
}

// futureEnds records when a timestamp in the future stops counting as
// such (it comes within the clock skew of now), which changes the verdict.
func (e *engine) futureEnds(t time.Time) {
	e.deadline(ceilSec(t.Add(-clockSkew)))
}

// transition sets the layer's lastTransitionTime: kept from the previous
// status while the verdict is unchanged, now when it changed, and, with no
// previous verdict to compare with, the time the evidence says the
// situation began (a phase transition, a condition's lastTransitionTime, a
// crossed deadline), or now when the evidence does not say.
func (e *engine) transition(out, prev *v1alpha1.LayerStatus, since time.Time) {
	now := e.f.now
	t := now
	switch {
	case prev != nil && prev.Verdict != "":
		if prev.Verdict == out.Verdict && prev.LastTransitionTime != nil && !prev.LastTransitionTime.IsZero() {
			t = trunc(prev.LastTransitionTime.Time)
		}
	case !since.IsZero():
		t = since
	}
	if t.After(now) {
		t = now
	}
	out.LastTransitionTime = e.a.time(t)
}

func (e *engine) vmiSummary() *v1alpha1.VMISummary {
	vmi := e.f.vmi
	if vmi == nil {
		return nil
	}
	s := &e.a.vmi
	s.Name, s.UID, s.Phase = vmi.Name, vmi.UID, bound(string(vmi.Status.Phase), maxPhase)
	s.NodeName, s.Reason = vmi.Status.NodeName, bound(vmi.Status.Reason, maxValue)
	s.PhaseSince = e.a.time(e.f.phaseSince)
	e.runtimeSummary(s)
	return s
}
