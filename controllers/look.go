package controllers

import (
	"time"

	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	"github.com/vmobs/vmobs/internal/verdict"
)

// look is when the reconciler looks at a VM again: the one answer to that
// question, as writePolicy.decide is the one answer to whether to write.
type look struct {
	// at is the requeue's instant; zero means no requeue.
	at time.Time
	// low asks for the requeue at low priority: a heartbeat's deadline or a
	// held-back write can wait behind the reconciles that events bring,
	// which carry a change someone is waiting to see. An event for the same
	// VM raises the queued item to the event's priority, so nothing that
	// changed waits behind the others.
	low bool
	// beat, when set, is a deadline the node's heartbeat timer keeps
	// (runtimekit.Heartbeats) instead of the work queue: the next heartbeat
	// moves it, and one timer per node enqueues all its VMs when it passes.
	beat *beat
}

// beat is a VM's deadline on its node's virt-handler heartbeat.
type beat struct {
	node      string
	renewedAt time.Time
	at        time.Time
}

// nextLook turns the engine's deadlines and the write policy's retry (a
// write held back until its window ends; 0 for none), both counted from
// now, into when the VM is looked at again. With timers (the node heartbeat
// timers run), a deadline that rests on a node's heartbeat goes to the
// node's timer and the requeue keeps only what remains: a fixed deadline (a
// lag grace ending, a timeout) carries a verdict someone waits for and
// comes at the default priority; a held-back write does not.
func nextLook(d verdict.Deadlines, retryAfter time.Duration, now time.Time, timers bool) look {
	requeue, due := d.NextDeadline, d.NextDeadline
	var l look
	if d.Renews && timers && d.RenewsOn != "" {
		l.beat = &beat{node: d.RenewsOn, renewedAt: d.RenewedAt, at: now.Add(d.NextDeadline)}
		requeue, due = d.FixedDeadline, d.FixedDeadline
	}
	switch {
	case requeue <= 0:
		requeue = max(retryAfter, 0)
	case retryAfter > 0 && retryAfter < requeue:
		requeue = retryAfter
	}
	if requeue == 0 {
		return l
	}
	l.at = now.Add(requeue)
	l.low = requeue != due || (d.Renews && l.beat == nil)
	return l
}

// result is the requeue as the work queue takes it at returned, the moment
// Reconcile returns: the queue counts RequeueAfter from then, and a
// reconcile that wrote returns a round trip (tens to hundreds of
// milliseconds on a loaded API server) after the now the deadlines were
// counted from; a deadline someone waits for (a lag grace's end) would be
// judged that much late. A delay already spent becomes the shortest there
// is (0 would mean none).
func (l look) result(returned time.Time) ctrl.Result {
	if l.at.IsZero() {
		return ctrl.Result{}
	}
	r := ctrl.Result{RequeueAfter: max(l.at.Sub(returned), time.Nanosecond)}
	if l.low {
		r.Priority = ptr.To(handler.LowPriority)
	}
	return r
}
