package nodeverdict

import (
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/verdict"
)

// finding is one rule's verdict on a layer.
type finding struct {
	verdict         v1alpha1.Verdict
	reason, message string
	since           time.Time
	// note is a Healthy finding worth knowing that is never the layer's
	// reason while a plain finding of the same verdict exists.
	note bool
}

type evidence struct {
	v1alpha1.Evidence
	// finding says the evidence supports a finding; otherwise it is
	// context, listed after.
	finding bool
}

// layer collects findings and evidence for one layer: the worst finding
// (a plain one before a note, the first among equals) is its verdict. The
// rules add their healthy finding last.
type layer struct {
	findings []finding
	ev       []evidence
	// noBasis says the layer has nothing to judge on (a source the
	// controller does not read): it does not count in the overall verdict.
	noBasis bool
}

func (l *layer) add(v v1alpha1.Verdict, reason, msg string, since time.Time) {
	l.findings = append(l.findings, finding{verdict: v, reason: reason, message: msg, since: since})
}

func (l *layer) note(reason, msg string) {
	l.findings = append(l.findings, finding{verdict: v1alpha1.VerdictHealthy, reason: reason, message: msg, note: true})
}

// push records evidence on an object: of a finding, or context.
func (l *layer) push(kind, name, field, value string, t time.Time, ofFinding bool) {
	e := evidence{Evidence: v1alpha1.Evidence{Kind: kind, Name: name, Field: field, Value: verdict.Bound(value, maxValue)}, finding: ofFinding}
	if !t.IsZero() {
		e.Time = &metav1.Time{Time: t.UTC().Truncate(time.Second)}
	}
	l.ev = append(l.ev, e)
}

// apply records a finding of verdict's rules on a Node.
func (l *layer) apply(f verdict.NodeFinding, node string) {
	switch {
	case f.Verdict == "":
		l.push(kindNode, node, f.Field, f.Value, f.At, false)
		return
	case f.Note:
		l.findings = append(l.findings, finding{verdict: f.Verdict, reason: f.Reason, message: f.Message, since: f.Since, note: true})
	default:
		l.add(f.Verdict, f.Reason, f.Message, f.Since)
	}
	l.push(kindNode, node, f.Field, f.Value, f.At, f.Verdict != v1alpha1.VerdictHealthy)
}

func (f *finding) rank() int {
	r := f.verdict.Severity() * 2
	if !f.note {
		r++
	}
	return r
}

// build writes the layer's verdict, reason, message (with the reasons of
// the other findings that are not plain Healthy ones), evidence (of
// findings first, then context, at most maxEvidence) and evidence time
// into out, and returns when the winning finding says its situation began.
func (l *layer) build(out *v1alpha1.LayerStatus) time.Time {
	w := 0
	for i := range l.findings {
		if l.findings[i].rank() > l.findings[w].rank() {
			w = i
		}
	}
	win := l.findings[w]
	out.Verdict, out.Reason = win.verdict, win.reason
	msg := win.message
	var also []string
	for i, f := range l.findings {
		if i == w || f.reason == win.reason || (f.verdict == v1alpha1.VerdictHealthy && !f.note) {
			continue
		}
		also = append(also, f.reason)
	}
	if len(also) > 0 {
		msg += " (also: " + strings.Join(also, ", ") + ")"
	}
	out.Message = verdict.Bound(msg, maxMessage-64)
	var newest time.Time
	for pass := 0; pass < 2; pass++ {
		for _, e := range l.ev {
			if e.finding != (pass == 0) || len(out.Evidence) == maxEvidence {
				continue
			}
			out.Evidence = append(out.Evidence, e.Evidence)
			if e.Time != nil && e.Time.After(newest) {
				newest = e.Time.Time
			}
		}
	}
	if !newest.IsZero() {
		out.EvidenceTime = &metav1.Time{Time: newest}
	}
	return win.since
}
