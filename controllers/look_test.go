package controllers

import (
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/handler"

	"github.com/vmobs/vmobs/internal/verdict"
)

// TestNextLook is the table of "when to look again": the engine's deadlines
// and the write policy's retry in, a requeue (its delay and priority) and a
// heartbeat timer out, at a fixed clock.
func TestNextLook(t *testing.T) {
	now := t0
	heartbeat := now.Add(-20 * time.Second)
	renewing := func(next, fixed time.Duration) verdict.Deadlines {
		return verdict.Deadlines{NextDeadline: next, FixedDeadline: fixed, Renews: true, RenewsOn: "node-a", RenewedAt: heartbeat}
	}
	const none = time.Duration(0)
	cases := []struct {
		name      string
		deadlines verdict.Deadlines
		retry     time.Duration
		timers    bool
		requeue   time.Duration // none: no requeue
		low       bool
		beatIn    time.Duration // none: no heartbeat timer
	}{
		{name: "nothing to wait for", requeue: none},
		{name: "a fixed deadline", deadlines: verdict.Deadlines{NextDeadline: 30 * time.Second, FixedDeadline: 30 * time.Second}, requeue: 30 * time.Second},
		{name: "a held-back write before the deadline waits at low priority",
			deadlines: verdict.Deadlines{NextDeadline: 30 * time.Second, FixedDeadline: 30 * time.Second}, retry: 5 * time.Second, requeue: 5 * time.Second, low: true},
		{name: "a held-back write after the deadline leaves the deadline",
			deadlines: verdict.Deadlines{NextDeadline: 30 * time.Second, FixedDeadline: 30 * time.Second}, retry: 40 * time.Second, requeue: 30 * time.Second},
		{name: "a held-back write alone", retry: 5 * time.Second, requeue: 5 * time.Second, low: true},
		{name: "a retry already spent is none", retry: -time.Second, requeue: none},
		{name: "a heartbeat deadline goes to the node's timer", deadlines: renewing(60*time.Second, 0), timers: true, requeue: none, beatIn: 60 * time.Second},
		{name: "the timer keeps the heartbeat, the queue the fixed deadline behind it",
			deadlines: renewing(60*time.Second, 300*time.Second), timers: true, requeue: 300 * time.Second, beatIn: 60 * time.Second},
		{name: "with a timer, a held-back write still waits at low priority",
			deadlines: renewing(60*time.Second, 300*time.Second), retry: 10 * time.Second, timers: true, requeue: 10 * time.Second, low: true, beatIn: 60 * time.Second},
		{name: "without timers a heartbeat deadline is a low-priority requeue", deadlines: renewing(60*time.Second, 0), requeue: 60 * time.Second, low: true},
		{name: "a heartbeat deadline without its node is a low-priority requeue",
			deadlines: verdict.Deadlines{NextDeadline: 60 * time.Second, Renews: true}, timers: true, requeue: 60 * time.Second, low: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := nextLook(c.deadlines, c.retry, now, c.timers)
			got := l.result(now)
			if got.RequeueAfter != c.requeue {
				t.Errorf("RequeueAfter = %v, want %v", got.RequeueAfter, c.requeue)
			}
			if low := got.Priority != nil && *got.Priority == handler.LowPriority; low != c.low {
				t.Errorf("low priority = %v, want %v (%+v)", low, c.low, got)
			}
			if got.Priority != nil && !c.low {
				t.Errorf("priority %d set for a requeue at the default priority", *got.Priority)
			}
			switch {
			case c.beatIn == none && l.beat != nil:
				t.Errorf("heartbeat timer %+v, want none", *l.beat)
			case c.beatIn != none && l.beat == nil:
				t.Errorf("no heartbeat timer, want one in %v", c.beatIn)
			case c.beatIn != none && (l.beat.node != "node-a" || !l.beat.renewedAt.Equal(heartbeat) || !l.beat.at.Equal(now.Add(c.beatIn))):
				t.Errorf("heartbeat timer %+v, want node-a at %v renewed at %v", *l.beat, now.Add(c.beatIn), heartbeat)
			}
		})
	}
}

// TestLookResultCountsFromTheReturn checks that a requeue is counted from
// when Reconcile returns, not from when the deadlines were computed.
func TestLookResultCountsFromTheReturn(t *testing.T) {
	l := nextLook(verdict.Deadlines{NextDeadline: 10 * time.Second, FixedDeadline: 10 * time.Second}, 0, t0, false)
	if got := l.result(t0.Add(300 * time.Millisecond)).RequeueAfter; got != 9700*time.Millisecond {
		t.Errorf("returned 300ms after now: RequeueAfter = %v, want 9.7s", got)
	}
	if got := l.result(t0.Add(time.Minute)).RequeueAfter; got != time.Nanosecond {
		t.Errorf("returned after the deadline: RequeueAfter = %v, want the shortest there is (1ns)", got)
	}
}
