package verdict

import (
	"bytes"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/api/v1alpha1"
)

// renewed is in a minute later in a world where nothing changed but what
// renews: every fresh virt-handler heartbeat beat again, exactly a minute
// after the one before; everything else keeps its timestamps.
func renewed(in Input, by time.Duration) Input {
	c := deepCopyInput(in)
	c.Now = in.Now.Add(by)
	for _, n := range c.Nodes {
		if n == nil {
			continue
		}
		raw, ok := n.Annotations[kubevirtv1.VirtHandlerHeartbeat]
		if !ok {
			continue
		}
		hb, err := ParseHeartbeat(raw)
		if err != nil || hb.After(in.Now) || !in.Now.Before(hb.Add(in.Policy.withDefaults().HeartbeatTimeout)) {
			continue // malformed, in the future or stale: it does not renew
		}
		n.Annotations[kubevirtv1.VirtHandlerHeartbeat] = hb.Add(by).UTC().Format(time.RFC3339)
	}
	return c
}

// TestUnchangingWorldUnchangingStatus is the staleness contract: in every
// table case, a minute in which only virt-handler's heartbeats renew
// changes nothing in the status, unless a fixed deadline (a timeout, a
// grace) falls inside that minute. So an unchanging fleet costs no writes.
func TestUnchangingWorldUnchangingStatus(t *testing.T) {
	const minute = time.Minute
	for _, c := range allSituations() {
		t.Run(c.name, func(t *testing.T) {
			// The controller evaluates again with what it wrote as the
			// previous status; the second evaluation must agree with the
			// first, or a VM would flap between two statuses.
			in := deepCopyInput(c.in)
			first := Evaluate(in)
			in.Previous = first.Status.DeepCopy()
			steady := Evaluate(in)
			if first.NextDeadline == steady.NextDeadline {
				if a, b := mustJSON(t, first.Status), mustJSON(t, steady.Status); !bytes.Equal(a, b) && !onlyTransitionTimes(first.Status, steady.Status) {
					t.Fatalf("evaluated again on what it wrote, the status changed:\nfirst:  %s\nsecond: %s", a, b)
				}
			}
			in.Previous = steady.Status.DeepCopy()
			if d := steady.NextDeadline; d > 0 && d <= minute+time.Second && !renewsOnly(in, d) {
				t.Skipf("a deadline falls within the minute (%v)", d)
			}
			later := Evaluate(renewed(in, minute))
			if a, b := mustJSON(t, steady.Status), mustJSON(t, later.Status); !bytes.Equal(a, b) {
				t.Fatalf("a minute of renewed heartbeats changed the status:\nbefore: %s\nafter:  %s", a, b)
			}
		})
	}
}

// onlyTransitionTimes says whether a and b differ in lastTransitionTimes
// only: a first status carried over from a previous one that had none.
func onlyTransitionTimes(a, b v1alpha1.VMObservationStatus) bool {
	strip := func(s v1alpha1.VMObservationStatus) v1alpha1.VMObservationStatus {
		c := *s.DeepCopy()
		for i := range c.Conditions {
			c.Conditions[i].LastTransitionTime = metav1.Time{}
		}
		if c.Layers != nil {
			c.Layers.ControlPlane.LastTransitionTime, c.Layers.Node.LastTransitionTime, c.Layers.Guest.LastTransitionTime = nil, nil, nil
		}
		return c
	}
	return equality.Semantic.DeepEqual(strip(a), strip(b))
}

// renewsOnly says whether the deadline d from now is a heartbeat's, which
// renewing moves away.
func renewsOnly(in Input, d time.Duration) bool {
	at := in.Now.Add(d)
	for _, n := range in.Nodes {
		if n == nil {
			continue
		}
		hb, err := ParseHeartbeat(n.Annotations[kubevirtv1.VirtHandlerHeartbeat])
		if err == nil && ceilSec(hb.Add(in.Policy.withDefaults().HeartbeatTimeout)).Equal(at) {
			return true
		}
	}
	return false
}

// TestRenewingEvidence: with Policy.RenewingEvidence (the controller's
// opt-in evidence refresh) the heartbeat's value, time and deadline are in
// the status, as a status rewritten every few minutes can afford.
func TestRenewingEvidence(t *testing.T) {
	in := input(func(in *Input) { in.Policy.RenewingEvidence = true })
	r := Evaluate(in)
	checkInvariants(t, in, r)
	hb := now.Add(-47 * time.Second)
	raw := in.Nodes[nodeA].Annotations[kubevirtv1.VirtHandlerHeartbeat]
	for _, l := range []v1alpha1.LayerStatus{r.Status.Layers.Node, r.Status.Layers.Guest} {
		if l.Verdict != v1alpha1.VerdictHealthy {
			t.Fatalf("%s/%s, want Healthy", l.Verdict, l.Reason)
		}
		if l.StaleAt == nil || !l.StaleAt.Time.Equal(hb.Add(5*time.Minute)) || l.EvidenceTime == nil || !l.EvidenceTime.Time.Equal(hb) {
			t.Errorf("%s: staleAt/evidenceTime = %v/%v, want heartbeat+5m/heartbeat", l.Reason, l.StaleAt, l.EvidenceTime)
		}
		wantEvidence(t, l, hbField, raw)
	}
	// The same deadline either way: the controller looks again then.
	in.Policy.RenewingEvidence = false
	if off := Evaluate(in); off.NextDeadline != r.NextDeadline {
		t.Errorf("NextDeadline %v without renewing evidence, %v with", off.NextDeadline, r.NextDeadline)
	}
}

// TestHeartbeatDeadlineIsLookedAt: a VM whose only deadline is its node's
// heartbeat has no stored staleAt, and turns Unknown when the heartbeat has
// not renewed by then.
func TestHeartbeatDeadlineIsLookedAt(t *testing.T) {
	in := input()
	r := Evaluate(in)
	if r.NextDeadline <= 0 {
		t.Fatal("no deadline: nothing would look at the heartbeat again")
	}
	if !r.Renews {
		t.Error("the heartbeat's deadline is not marked as a renewing source's")
	}
	in.Previous = r.Status.DeepCopy()
	in.Now = in.Now.Add(r.NextDeadline)
	after := Evaluate(in)
	if got := vr(after.Status.Layers.Node); got != "Unknown/NodeAgentStale" {
		t.Errorf("node at the deadline = %s, want Unknown/NodeAgentStale", got)
	}
}

// TestRenewsMarksOnlyHeartbeatDeadlines: Result.Renews is set exactly when
// the nearest deadline is a heartbeat's, which the controller looks at with
// low priority; a fixed deadline (a grace, a timeout) is not.
func TestRenewsMarksOnlyHeartbeatDeadlines(t *testing.T) {
	var fixed, renewing int
	for _, c := range allSituations() {
		r := Evaluate(c.in)
		if r.NextDeadline <= 0 {
			if r.Renews {
				t.Errorf("%s: Renews without a deadline", c.name)
			}
			continue
		}
		if r.Renews != renewsOnly(c.in, r.NextDeadline) {
			t.Errorf("%s: Renews = %v for a deadline in %v", c.name, r.Renews, r.NextDeadline)
		}
		if r.Renews {
			renewing++
			// The renewing deadline is the named node's heartbeat plus the
			// timeout, as the controller's per-node timer counts it.
			n := c.in.Nodes[r.RenewsOn]
			if n == nil {
				t.Errorf("%s: Renews on %q, which the input lacks", c.name, r.RenewsOn)
				continue
			}
			hb, err := ParseHeartbeat(n.Annotations[kubevirtv1.VirtHandlerHeartbeat])
			if err != nil || !hb.Equal(r.RenewedAt) || !ceilSec(hb.Add(c.in.Policy.withDefaults().HeartbeatTimeout)).Equal(c.in.Now.Add(r.NextDeadline)) {
				t.Errorf("%s: renewed at %v on %s, deadline in %v", c.name, r.RenewedAt, r.RenewsOn, r.NextDeadline)
			}
			if r.FixedDeadline != 0 && r.FixedDeadline <= r.NextDeadline {
				t.Errorf("%s: fixed deadline %v before the renewing one %v", c.name, r.FixedDeadline, r.NextDeadline)
			}
		} else {
			fixed++
			if r.FixedDeadline != r.NextDeadline || r.RenewsOn != "" {
				t.Errorf("%s: fixed deadline %v, next %v, renews on %q", c.name, r.FixedDeadline, r.NextDeadline, r.RenewsOn)
			}
		}
	}
	if fixed == 0 || renewing == 0 {
		t.Errorf("the tables hold %d fixed and %d renewing deadlines; want both", fixed, renewing)
	}
}

// TestFixedDeadlineIsExact: evaluated 300 ms before a lag grace ends, the
// verdict is due in 300 ms, not at the next whole second after it.
func TestFixedDeadlineIsExact(t *testing.T) {
	notReadySince := func(since time.Time) inputMod {
		return func(in *Input) {
			for i := range in.Pods[0].Status.Conditions {
				if c := &in.Pods[0].Status.Conditions[i]; c.Type == corev1.PodReady || c.Type == corev1.ContainersReady {
					c.Status, c.LastTransitionTime = corev1.ConditionFalse, metav1.NewTime(since)
				}
			}
		}
	}
	for _, before := range []time.Duration{300 * time.Millisecond, time.Millisecond, 1700 * time.Millisecond} {
		in := input(notReadySince(now.Add(-DefaultPolicy().LagGrace)))
		in.Now = now.Add(-before)
		r := Evaluate(in)
		if r.FixedDeadline != before || r.NextDeadline != before || r.Renews {
			t.Errorf("%v before the grace ends: fixed deadline %v, next %v, renews %v; want %v", before, r.FixedDeadline, r.NextDeadline, r.Renews, before)
		}
	}
}
