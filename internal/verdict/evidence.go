package verdict

import (
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vmobs/vmobs/api/v1alpha1"
)

const (
	maxEvidence = 8    // per layer, the CRD's MaxItems
	maxMessage  = 1024 // the CRD's MaxLength on messages
	maxValue    = 256  // an evidence value is a pointer, not a copy
	maxPhase    = 64   // phases are single words; a longer one is garbage
	maxFindings = 10
	maxCollect  = 16
)

// Kinds named in evidence.
const (
	kindVM   = "VirtualMachine"
	kindVMI  = "VirtualMachineInstance"
	kindVMIM = "VirtualMachineInstanceMigration"
	kindPod  = "Pod"
	kindNode = "Node"
	// kindSeries is a Prometheus series of virt-handler's domain stats:
	// the name is the metric, the field the function read (domain.go).
	kindSeries = "PrometheusSeries"
	// kindProbe is the guest agent's answer to the controller's probe
	// through virt-api: the name is the VMI, the field the subresource
	// (probe.go).
	kindProbe = "GuestAgentProbe"
)

// finding is one rule's verdict on a layer.
type finding struct {
	verdict v1alpha1.Verdict
	reason  string
	message string
	// since is when the evidence says the situation began; it becomes the
	// layer's lastTransitionTime when there is no previous status.
	since time.Time
	// note is a Healthy finding that says something worth knowing but
	// never becomes the layer's reason while a plain finding of the same
	// verdict exists: a Healthy VM reads Running, the note stays in the
	// message and the evidence.
	note bool
	// consequence is explained by another finding of the layer (a pod on a
	// node that cannot report): it stays in the message and never wins
	// over its cause.
	consequence bool
	// noBasis says the input carries nothing the layer can be judged on:
	// the layer is Unknown, and the overall verdict is taken from the
	// layers that have a basis.
	noBasis bool
	// kept is a previous verdict kept through the lag grace
	// (contradictionWithin), with the previous message.
	kept bool
}

type evidenceItem struct {
	kind, name, field, value string
	t                        time.Time
	owner                    int // index of the finding it supports, -1 for context
}

// layer collects findings and evidence for one layer; the worst finding
// becomes the layer's verdict, its evidence comes first.
type layer struct {
	label    string
	findings [maxFindings]finding
	nf       int
	ev       [maxCollect]evidenceItem
	ne       int
	cur      int
	staleAt  time.Time
	// renewAt is the deadline of a renewing source (virt-handler's
	// heartbeat): the verdict changes then unless the source renews, which
	// it does every minute. It is looked at again then (NextDeadline), but
	// not stored: a stored deadline that moves with every beat would need
	// a status write per beat.
	renewAt time.Time
	// prev is this layer in the previous status of the same VMI, if any:
	// a contradiction within the lag grace keeps its verdict.
	prev *v1alpha1.LayerStatus
}

// judgeNothingRuns adds the finding of a layer below the control plane for
// the lifecycles in which it has nothing to judge: no VM or VMI (missing),
// a run strategy that cannot be read and, when stopped is not empty, a VM
// stopped as declared (the messages say what is not judged). It reports
// whether it added one.
func (l *layer) judgeNothingRuns(lc lifecycle, missing, stopped string) bool {
	switch {
	case lc == lcMissing:
		l.add(v1alpha1.VerdictUnknown, v1alpha1.ReasonVMMissing, missing, time.Time{})
	case lc == lcInvalid:
		l.add(v1alpha1.VerdictUnknown, v1alpha1.ReasonInvalidInput, "the VM's run strategy cannot be read", time.Time{})
	case lc == lcStopped && stopped != "":
		l.add(v1alpha1.VerdictSuspended, v1alpha1.ReasonStopped, stopped, time.Time{})
	default:
		return false
	}
	return true
}

// add records a finding; evidence cited after it supports it. Rules add in
// order of specificity: among findings of equal severity the first wins.
func (l *layer) add(v v1alpha1.Verdict, reason, msg string, since time.Time) {
	if l.nf == maxFindings {
		l.cur = -1
		return
	}
	l.findings[l.nf] = finding{verdict: v, reason: reason, message: msg, since: since}
	l.cur = l.nf
	l.nf++
}

// note records a Healthy finding that is not the layer's reason while a
// plain Healthy finding exists.
func (l *layer) note(reason, msg string, since time.Time) {
	l.add(v1alpha1.VerdictHealthy, reason, msg, since)
	if l.cur >= 0 {
		l.findings[l.cur].note = true
	}
}

// nothingToJudge records that the input carries nothing this layer can be
// judged on.
func (l *layer) nothingToJudge(msg string) {
	l.add(v1alpha1.VerdictUnknown, v1alpha1.ReasonNotInInput, msg, time.Time{})
	if l.cur >= 0 {
		l.findings[l.cur].noBasis = true
	}
}

// explainedBy marks the findings with one of the given reasons as
// consequences of another finding: they lose to every other finding.
func (l *layer) explainedBy(reasons ...string) {
	for i := 0; i < l.nf; i++ {
		for _, r := range reasons {
			if l.findings[i].reason == r {
				l.findings[i].consequence = true
			}
		}
	}
}

// severest is the highest severity among the findings, -1 with none.
func (l *layer) severest() int {
	s := -1
	for i := 0; i < l.nf; i++ {
		s = max(s, l.findings[i].verdict.Severity())
	}
	return s
}

// has says whether the layer has a finding with this reason.
func (l *layer) has(reason string) bool {
	for i := 0; i < l.nf; i++ {
		if l.findings[i].reason == reason {
			return true
		}
	}
	return false
}

// cite records evidence for the last finding.
func (l *layer) cite(kind, name, field, value string, t time.Time) {
	l.push(kind, name, field, value, t, l.cur)
}

// context records evidence the layer rests on whatever its verdict.
func (l *layer) context(kind, name, field, value string, t time.Time) {
	l.push(kind, name, field, value, t, -1)
}

// unheard is the owner of evidence a finding does not want: the kept
// previous verdict of a contradiction within its lag grace, whose evidence
// is the previous status's, not this one's.
const unheard = -2

func (l *layer) push(kind, name, field, value string, t time.Time, owner int) {
	if l.ne == maxCollect || owner == unheard {
		return
	}
	l.ev[l.ne] = evidenceItem{kind: kind, name: name, field: field, value: value, t: t, owner: owner}
	l.ne++
}

// stale records when the layer's evidence stops being trustworthy, or when
// its verdict changes by itself; the earliest wins.
func (l *layer) stale(t time.Time) {
	if !t.IsZero() && (l.staleAt.IsZero() || t.Before(l.staleAt)) {
		l.staleAt = t
	}
}

// renews records the deadline of a renewing source; the earliest wins.
func (l *layer) renews(t time.Time) {
	if !t.IsZero() && (l.renewAt.IsZero() || t.Before(l.renewAt)) {
		l.renewAt = t
	}
}

// winner is the finding that becomes the layer's verdict: a cause before
// its consequences, then the worst verdict, then a plain finding before a
// note; ties go to the rule that ran first.
func (l *layer) winner() int {
	w := -1
	for i := 0; i < l.nf; i++ {
		if w < 0 || l.findings[i].rank() > l.findings[w].rank() {
			w = i
		}
	}
	return w
}

func (f *finding) rank() int {
	r := f.verdict.Severity() * 2
	if !f.note {
		r++
	}
	if !f.consequence {
		r += 1 << 10
	}
	return r
}

// build turns the collected findings into the layer status (without
// lastTransitionTime, which needs the previous status).
func (e *engine) build(l *layer, out *v1alpha1.LayerStatus) finding {
	w := l.winner()
	if w < 0 {
		// Every path adds a finding; this guards the invariant that no
		// layer is ever Healthy without one.
		l.add(v1alpha1.VerdictUnknown, v1alpha1.ReasonInvalidInput, "no rule could judge this layer", time.Time{})
		w = l.winner()
	}
	win := l.findings[w]
	if win.kept && win.message == "" {
		// The previous status came without the layers' messages (the
		// manager's cache keeps none, projection.Observation): the caller
		// evaluates again with the stored one.
		e.needsMessages = true
	}
	out.Verdict, out.Reason = win.verdict, win.reason
	out.Message = e.layerMessage(l, w)

	// The winner's evidence first, then the other findings', then context;
	// a field cited twice is listed once. Choose first, so that exactly
	// as many slots are taken from the arena as are used.
	var pick [maxEvidence]int
	n := 0
	for pass := 0; pass < 3 && n < maxEvidence; pass++ {
		for i := 0; i < l.ne && n < maxEvidence; i++ {
			it := &l.ev[i]
			switch pass {
			case 0:
				if it.owner != w {
					continue
				}
			case 1:
				if it.owner == w || it.owner < 0 {
					continue
				}
			case 2:
				if it.owner >= 0 {
					continue
				}
			}
			if l.picked(pick[:n], it) {
				continue
			}
			pick[n] = i
			n++
		}
	}
	var newest time.Time
	if n > 0 {
		ev := e.a.evidence(n)
		for _, i := range pick[:n] {
			it := &l.ev[i]
			t := trunc(it.t)
			ev = append(ev, v1alpha1.Evidence{
				Kind: it.kind, Name: it.name, Field: it.field,
				Value: bound(it.value, maxValue), Time: e.a.time(t),
			})
			if t.After(newest) && !e.f.future(t) {
				newest = t
			}
		}
		out.Evidence = ev[:n:n]
	}
	out.EvidenceTime = e.a.time(newest)
	// A deadline that has passed is in the verdict already: stored, it
	// would make a current status look stale.
	if l.staleAt.After(e.f.now) {
		out.StaleAt = e.a.time(l.staleAt)
		e.deadline(l.staleAt)
	}
	if l.renewAt.After(e.f.now) {
		e.renewal(l.renewAt)
	}
	return win
}

// picked says whether the field of it is already among the picked items.
func (l *layer) picked(pick []int, it *evidenceItem) bool {
	for _, i := range pick {
		p := &l.ev[i]
		if p.field == it.field && p.name == it.name && p.kind == it.kind {
			return true
		}
	}
	return false
}

// layerMessage is the winner's message and, so that a second problem is not
// hidden behind the first, the reasons of the other findings.
func (e *engine) layerMessage(l *layer, w int) string {
	msg := l.findings[w].message
	var also [3]string
	na := 0
	for i := 0; i < l.nf && na < len(also); i++ {
		r := l.findings[i].reason
		// A plain Healthy finding under a worse winner is no news.
		plain := l.findings[i].verdict == v1alpha1.VerdictHealthy && !l.findings[i].note
		if i == w || r == l.findings[w].reason || plain {
			continue
		}
		dup := false
		for _, a := range also[:na] {
			dup = dup || a == r
		}
		if !dup {
			also[na] = r
			na++
		}
	}
	if na == 0 {
		return bound(msg, maxMessage)
	}
	var b strings.Builder
	b.Grow(len(msg) + 12 + na*24)
	b.WriteString(msg)
	b.WriteString(" (also: ")
	for i, a := range also[:na] {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(a)
	}
	b.WriteString(")")
	return bound(b.String(), maxMessage)
}

// withDetail appends what an object says in its own words (a condition's
// message) to a finding's message, when it says anything.
func withDetail(msg, detail string) string {
	if detail == "" {
		return msg
	}
	return msg + ": " + detail
}

// Bound cuts s to at most n bytes on a rune boundary, marking the cut: how
// a status keeps its messages within the CRD's bounds.
func Bound(s string, n int) string { return bound(s, n) }

// bound cuts s to at most n bytes on a rune boundary, marking the cut.
func bound(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const ellipsis = "…"
	cut := n - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}

// arena holds the fixed-size parts of the status in one allocation; the
// status points into it. Slices handed out are capped (s[:n:n]) so that a
// caller's append never writes into a neighbour.
type arena struct {
	layers v1alpha1.Layers
	vmi    v1alpha1.VMISummary
	mig    v1alpha1.MigrationSummary
	lm     v1alpha1.LiveMigratability
	guest  v1alpha1.GuestSummary
	users  int32
	dom    v1alpha1.DomainSummary
	dur    metav1.Duration
	qty    [12]resource.Quantity
	nq     int
	// Sized for a typical VM (two launcher pods, two interfaces, a dozen
	// evidence pointers); a larger one spills into separate allocations.
	times [32]metav1.Time
	nt    int
	ev    [12]v1alpha1.Evidence
	nev   int
	str   [16]string
	nstr  int
	pods  [2]v1alpha1.LauncherPod
	ifcs  [2]v1alpha1.InterfaceStatus
	// The VMI's memory and vCPUs, and its first hotplugged volumes.
	mem    v1alpha1.VMIMemory
	memQty [4]resource.Quantity
	cpu    v1alpha1.VMICPU
	topo   [2]v1alpha1.CPUTopology
	hpv    [4]v1alpha1.HotplugVolume
}

// maxTime is the latest time metav1.Time can marshal (RFC 3339 has four
// year digits); a deadline computed from a far-future input is clamped to
// it rather than making the status unwritable.
var maxTime = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)

func (a *arena) time(t time.Time) *metav1.Time {
	if t.IsZero() {
		return nil
	}
	if t.After(maxTime) {
		t = maxTime
	}
	if a.nt < len(a.times) {
		a.times[a.nt] = metav1.Time{Time: t}
		a.nt++
		return &a.times[a.nt-1]
	}
	return &metav1.Time{Time: t}
}

func (a *arena) evidence(n int) []v1alpha1.Evidence {
	if a.nev+n <= len(a.ev) {
		s := a.ev[a.nev : a.nev : a.nev+n]
		a.nev += n
		return s
	}
	return make([]v1alpha1.Evidence, 0, n)
}

// keep copies a string list built in a caller's buffer into the arena,
// sorted, and returns it capped; an empty list is nil.
func (a *arena) keep(s []string) []string {
	n := len(s)
	if n == 0 {
		return nil
	}
	var out []string
	if a.nstr+n <= len(a.str) {
		out = a.str[a.nstr : a.nstr+n : a.nstr+n]
		a.nstr += n
	} else {
		out = make([]string, n)
	}
	copy(out, s)
	slices.Sort(out)
	return out
}
