package controllers

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/projection"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func status(verdict v1alpha1.Verdict, heartbeat time.Time) *v1alpha1.VMObservationStatus {
	l := v1alpha1.LayerStatus{
		Verdict: verdict, Reason: "R",
		EvidenceTime: ptr.To(metav1.NewTime(heartbeat)), StaleAt: ptr.To(metav1.NewTime(heartbeat.Add(5 * time.Minute))),
		Evidence: []v1alpha1.Evidence{{Kind: "Node", Name: "n1", Field: "metadata.annotations[kubevirt.io/heartbeat]", Value: heartbeat.Format(time.RFC3339), Time: ptr.To(metav1.NewTime(heartbeat))}},
	}
	return &v1alpha1.VMObservationStatus{Verdict: verdict, Layers: &v1alpha1.Layers{ControlPlane: l, Node: l, Guest: l}}
}

func progressing(reason string) *v1alpha1.VMObservationStatus {
	s := status("Progressing", t0)
	s.Reason = reason
	return s
}

func TestDecideWrite(t *testing.T) {
	refresh := 5 * time.Minute
	cases := []struct {
		name       string
		stored     *v1alpha1.VMObservationStatus
		next       *v1alpha1.VMObservationStatus
		lastWrite  time.Time
		now        time.Time
		write      bool
		retryAfter time.Duration
	}{
		{"equal", status("Healthy", t0), status("Healthy", t0), t0, t0.Add(time.Hour), false, 0},
		{"verdict changed right after a write", status("Healthy", t0), status("Degraded", t0), t0, t0.Add(time.Second), true, 0},
		{"heartbeat only, within the interval", status("Healthy", t0), status("Healthy", t0.Add(time.Minute)), t0, t0.Add(time.Minute), false, 4 * time.Minute},
		{"heartbeat only, interval passed", status("Healthy", t0), status("Healthy", t0.Add(6*time.Minute)), t0, t0.Add(6 * time.Minute), true, 0},
		{"heartbeat only, never written by us", status("Healthy", t0), status("Healthy", t0.Add(time.Minute)), time.Time{}, t0.Add(time.Minute), true, 0},
		{"empty stored status", &v1alpha1.VMObservationStatus{}, status("Healthy", t0), time.Time{}, t0, true, 0},
		{"progress within progress, inside the window", progressing("Scheduling"), progressing("Scheduled"), t0, t0.Add(300 * time.Millisecond), false, 700 * time.Millisecond},
		{"progress within progress, window passed", progressing("Scheduling"), progressing("Scheduled"), t0, t0.Add(time.Second), true, 0},
		{"progress to healthy is never held", progressing("Scheduling"), status("Healthy", t0), t0, t0.Add(100 * time.Millisecond), true, 0},
		{"healthy to progressing is never held", status("Healthy", t0), progressing("Migrating"), t0, t0.Add(100 * time.Millisecond), true, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := decideWrite(sumsOf(tc.stored), tc.next, tc.lastWrite, tc.now, refresh, time.Second)
			if d.write != tc.write || d.retryAfter != tc.retryAfter {
				t.Fatalf("decideWrite = %+v, want write=%v retryAfter=%v", d, tc.write, tc.retryAfter)
			}
			// Only timestamp-only writes wait for the refresh budget.
			if want := tc.write && strings.HasPrefix(tc.name, "heartbeat only"); d.refresh != want {
				t.Errorf("decideWrite = %+v, want refresh=%v", d, want)
			}
		})
	}
}

// TestWritePolicyDecide covers every row of writePolicy.decide: each step
// of the decision, with the memory of recent writes and the refresh budget
// in the states that change the answer.
func TestWritePolicyDecide(t *testing.T) {
	key := types.NamespacedName{Namespace: "prod", Name: "vm1"}
	const uid = types.UID("obs-uid")
	// refreshInterval spreads the base interval per UID: the interval this
	// object gets.
	every := refreshInterval(5*time.Minute, uid)
	healthy, fresher := status("Healthy", t0), status("Healthy", t0.Add(every+time.Minute))
	cases := []struct {
		name string
		// prepare sets the policy's memory and budget before the call.
		prepare     func(p *writePolicy)
		stored      *v1alpha1.VMObservationStatus
		next        *v1alpha1.VMObservationStatus
		storedWrite time.Time
		now         time.Time
		write       bool
		why         string
		retryAfter  time.Duration
	}{
		{name: "unchanged", stored: healthy, next: healthy, storedWrite: t0, now: t0.Add(time.Hour), why: "unchanged"},
		{name: "changed", stored: healthy, next: status("Degraded", t0), storedWrite: t0, now: t0.Add(time.Second), write: true, why: "changed"},
		{name: "progress coalesced", stored: progressing("Scheduling"), next: progressing("Scheduled"), storedWrite: t0,
			now: t0.Add(300 * time.Millisecond), why: "progress coalesced", retryAfter: 700 * time.Millisecond},
		{name: "progress after the window", stored: progressing("Scheduling"), next: progressing("Scheduled"), storedWrite: t0,
			now: t0.Add(time.Second), write: true, why: "changed"},
		{name: "refresh held back until the object's interval", stored: healthy, next: status("Healthy", t0.Add(time.Minute)),
			storedWrite: t0, now: t0.Add(time.Minute), why: "evidence refresh held back", retryAfter: every - time.Minute},
		{name: "refresh due", stored: healthy, next: fresher, storedWrite: t0, now: t0.Add(every + time.Minute), write: true, why: "evidence refresh"},
		{name: "refresh, our last write newer than the cache's managedFields",
			prepare: func(p *writePolicy) { p.recent.put(key, uid, t0.Add(every), 1) },
			stored:  healthy, next: fresher, storedWrite: t0, now: t0.Add(every + time.Minute),
			why: "evidence refresh held back", retryAfter: every - time.Minute},
		{name: "the same status written a moment ago: the cache has not caught up",
			prepare: func(p *writePolicy) {
				p.recent.put(key, uid, t0.Add(time.Second), projection.StatusHash(status("Degraded", t0)))
			},
			stored: healthy, next: status("Degraded", t0), storedWrite: t0, now: t0.Add(2 * time.Second),
			why: "already written, cache not caught up"},
		{name: "the same status written long ago: the cache is trusted again",
			prepare: func(p *writePolicy) {
				p.recent.put(key, uid, t0.Add(time.Second), projection.StatusHash(status("Degraded", t0)))
			},
			stored: healthy, next: status("Degraded", t0), storedWrite: t0, now: t0.Add(time.Second + cacheLagTolerance),
			write: true, why: "changed"},
		{name: "a memory of another object with the same name (recreated) is ignored",
			prepare: func(p *writePolicy) {
				p.recent.put(key, "old-uid", t0.Add(time.Second), projection.StatusHash(status("Degraded", t0)))
			},
			stored: healthy, next: status("Degraded", t0), storedWrite: t0, now: t0.Add(2 * time.Second), write: true, why: "changed"},
		{name: "refresh due, the budget has no free slot",
			prepare: func(p *writePolicy) {
				p.budget = newRefreshBudget(1)
				p.budget.take(types.NamespacedName{Namespace: "prod", Name: "other"}, t0.Add(every+time.Minute))
			},
			stored: healthy, next: fresher, storedWrite: t0, now: t0.Add(every + time.Minute),
			why: "evidence refresh waits for its slot", retryAfter: time.Second},
		{name: "refresh due, the budget has a free slot",
			prepare: func(p *writePolicy) { p.budget = newRefreshBudget(1) },
			stored:  healthy, next: fresher, storedWrite: t0, now: t0.Add(every + time.Minute), write: true, why: "evidence refresh"},
		{name: "a real change never waits for the budget",
			prepare: func(p *writePolicy) {
				p.budget = newRefreshBudget(1)
				p.budget.take(types.NamespacedName{Namespace: "prod", Name: "other"}, t0.Add(time.Second))
			},
			stored: healthy, next: status("Degraded", t0), storedWrite: t0, now: t0.Add(time.Second), write: true, why: "changed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newWritePolicy(5*time.Minute, time.Second, 0)
			if tc.prepare != nil {
				tc.prepare(p)
			}
			d := p.decide(writeRequest{key: key, uid: uid, stored: sumsOf(tc.stored), next: tc.next, storedWrite: tc.storedWrite, now: tc.now})
			if d.write != tc.write || d.why != tc.why || d.retryAfter != tc.retryAfter {
				t.Fatalf("decide = %+v, want write=%v why=%q retryAfter=%v", d, tc.write, tc.why, tc.retryAfter)
			}
			if d.write && d.sum != projection.StatusHash(tc.next) {
				t.Errorf("decide carries sum %d, want the hash of the status to write", d.sum)
			}
		})
	}
}

// TestWritePolicyRemembersItsWrites: after wrote, the same status is not
// written again while the cache lags; forget drops the memory.
func TestWritePolicyRemembersItsWrites(t *testing.T) {
	key := types.NamespacedName{Namespace: "prod", Name: "vm1"}
	p := newWritePolicy(5*time.Minute, time.Second, 0)
	req := writeRequest{key: key, uid: "u", stored: sumsOf(status("Healthy", t0)), next: status("Degraded", t0), storedWrite: t0, now: t0.Add(time.Second)}
	d := p.decide(req)
	if !d.write {
		t.Fatalf("first decide = %+v", d)
	}
	p.wrote(key, "u", req.now, d)
	req.now = req.now.Add(100 * time.Millisecond)
	if again := p.decide(req); again.write {
		t.Errorf("second decide before the cache caught up = %+v, want no write", again)
	}
	p.forget(key)
	if after := p.decide(req); !after.write {
		t.Errorf("decide after forget = %+v, want a write", after)
	}
}

func TestTransitions(t *testing.T) {
	prev := status("Healthy", t0)
	next := status("Healthy", t0)
	next.Layers.Node.Verdict, next.Layers.Node.Reason, next.Verdict = "Unknown", "NodeAgentStale", "Unknown"
	got := transitions(prev, next)
	if len(got) != 2 || got[0].layer != "node" || got[0].from != "Healthy" || got[0].to != "Unknown" || got[1].layer != "overall" {
		t.Fatalf("transitions = %+v", got)
	}
	if got := transitions(&v1alpha1.VMObservationStatus{}, next); len(got) != 4 {
		t.Fatalf("a first status is a transition of every layer and the overall verdict, got %+v", got)
	}
}

func TestRefreshInterval(t *testing.T) {
	base := 5 * time.Minute
	if got := refreshInterval(0, "a"); got != 0 {
		t.Errorf("refreshInterval(0) = %v, want 0 (no refresh policy stays none)", got)
	}
	lo, hi := base+base/5, base
	for i := range 2000 {
		uid := types.UID(fmt.Sprintf("0c2f3a4e-%04d-4d1a-9f0e-%012d", i, i*7919))
		d := refreshInterval(base, uid)
		if d < base || d >= base+base/5 {
			t.Fatalf("refreshInterval(%s) = %v, want in [%v, %v)", uid, d, base, base+base/5)
		}
		if again := refreshInterval(base, uid); again != d {
			t.Fatalf("refreshInterval(%s) = %v then %v: not fixed per object", uid, d, again)
		}
		lo, hi = min(lo, d), max(hi, d)
	}
	// 2000 objects spread over (nearly) the whole fifth of the interval.
	if lo > base+base/100 || hi < base+base/5-base/100 {
		t.Errorf("2000 objects span only [%v, %v]", lo, hi)
	}
}

func TestRefreshBudget(t *testing.T) {
	key := func(i int) types.NamespacedName {
		return types.NamespacedName{Namespace: "ns", Name: fmt.Sprintf("vm-%d", i)}
	}

	t.Run("no limit", func(t *testing.T) {
		var b *refreshBudget
		if w := b.take(key(0), t0); w != 0 {
			t.Errorf("nil budget: wait %v", w)
		}
		b = newRefreshBudget(0)
		for i := range 100 {
			if w := b.take(key(i), t0); w != 0 {
				t.Fatalf("no limit: vm-%d waits %v", i, w)
			}
		}
	})

	t.Run("a wave is spread one slot apart, each slot kept until used", func(t *testing.T) {
		b := newRefreshBudget(20) // one slot every 50ms
		for i := range 100 {
			want := time.Duration(i) * 50 * time.Millisecond
			if w := b.take(key(i), t0); w != want {
				t.Fatalf("vm-%d waits %v, want %v", i, w, want)
			}
		}
		// Asking again before the slot keeps the slot, not a new one.
		if w := b.take(key(10), t0.Add(100*time.Millisecond)); w != 400*time.Millisecond {
			t.Errorf("vm-10 asking again waits %v, want 400ms (its slot at 500ms)", w)
		}
		// At its slot it writes, and the slot is gone.
		if w := b.take(key(10), t0.Add(500*time.Millisecond)); w != 0 {
			t.Errorf("vm-10 at its slot waits %v", w)
		}
		if len(b.slots) != 98 {
			t.Errorf("%d slots held, want 98 (vm-0 wrote at once, vm-10 used its slot)", len(b.slots))
		}
		// A newcomer queues behind the wave.
		if w := b.take(key(1000), t0.Add(time.Second)); w != 4*time.Second {
			t.Errorf("newcomer waits %v, want 4s (after the 100 slots)", w)
		}
		b.forget(key(99))
		if _, ok := b.slots[key(99)]; ok {
			t.Error("forget kept the slot of a deleted object")
		}
	})

	t.Run("an idle budget does not bank slots", func(t *testing.T) {
		b := newRefreshBudget(1)
		b.take(key(0), t0)
		// An hour later, two refreshes: one now, one a slot later.
		later := t0.Add(time.Hour)
		if w := b.take(key(1), later); w != 0 {
			t.Errorf("first after idle waits %v", w)
		}
		if w := b.take(key(2), later); w != time.Second {
			t.Errorf("second after idle waits %v, want 1s", w)
		}
	})
}

// TestOwnWriteForgottenOnceCached: the memory of a write lasts until the
// cache holds that write, not until the VM's next reconcile.
func TestOwnWriteForgottenOnceCached(t *testing.T) {
	p := newWritePolicy(0, 0, 0)
	key := types.NamespacedName{Namespace: "ns", Name: "vm"}
	p.wrote(key, "uid-1", time.Unix(1000, 0), writeDecision{write: true, sum: 42})
	for _, c := range []struct {
		uid  types.UID
		sum  uint64
		kept bool
	}{
		{"uid-1", 41, true},  // an older status: the cache has not caught up
		{"uid-2", 42, true},  // another object of the same name
		{"uid-1", 42, false}, // our write
	} {
		p.caughtUp(key, c.uid, c.sum)
		if got := p.recent.size() == 1; got != c.kept {
			t.Errorf("after the cache received %s/%d: remembered %v, want %v", c.uid, c.sum, got, c.kept)
		}
	}
}
