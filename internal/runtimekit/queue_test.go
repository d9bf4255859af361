package runtimekit

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func req(name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: name}}
}

var initialList = priorityqueue.AddOpts{Priority: ptr.To(handler.LowPriority)}

// settlingQueue is a backlog queue that hands at most ahead keys of the
// initial lists to its queue and counts them as quiet after quiet; what
// drained is given comes out of the channel. It is shut down after the
// test.
func settlingQueue(t *testing.T, name string, ahead int, quiet time.Duration) (*backlogQueue, <-chan int) {
	t.Helper()
	q := newBacklogQueue(priorityqueue.New[reconcile.Request](name), ahead)
	q.quiet = quiet
	t.Cleanup(q.ShutDown)
	drained := make(chan int, 2)
	q.drained = func(keys int) { drained <- keys }
	return q, drained
}

// The initial lists' keys enter the queue a few at a time and all come out,
// once each; an event for a key still in the backlog takes it out; the
// backlog's set is dropped when it empties.
func TestBacklogQueueFeedsTheInitialListsAFewAtATime(t *testing.T) {
	q, drained := settlingQueue(t, "backlog-test", 3, 100*time.Millisecond)
	inner := q.PriorityQueue

	const n = 20
	for i := range n {
		// Each key comes from two informers, as a VM's do.
		q.AddWithOpts(initialList, req(string(rune('a'+i))))
		q.AddWithOpts(initialList, req(string(rune('a'+i))))
	}
	if got := inner.Len(); got != 3 {
		t.Fatalf("the queue holds %d keys of the initial lists, want 3", got)
	}
	if got := q.Len(); got != n {
		t.Fatalf("Len %d, want %d", got, n)
	}
	// An event for a key in the backlog: it is reconciled now, and not
	// again when its turn in the backlog comes.
	q.AddWithOpts(priorityqueue.AddOpts{}, req("t"))

	seen := map[reconcile.Request]int{}
	for q.Len() > 0 {
		if len(seen) == n/2 {
			// Another informer's initial list arrives while the first is
			// reconciled: drained waits for it too.
			q.AddWithOpts(initialList, req("a"), req("second"))
		}
		if inner.Len() > 4 {
			t.Fatalf("the queue holds %d keys", inner.Len())
		}
		it, prio, _ := q.GetWithPriority()
		if it == req("t") && prio != 0 && seen[it] == 0 {
			t.Errorf("the event's key came out at priority %d", prio)
		}
		seen[it]++
		q.Done(it)
	}
	if len(seen) != n+1 {
		t.Fatalf("%d keys came out, want %d", len(seen), n+1)
	}
	for it, c := range seen {
		if want := 1 + btoi(it == req("a")); c != want {
			t.Errorf("%v came out %d times, want %d", it, c, want)
		}
	}
	select {
	case keys := <-drained:
		// "t" came as an event, not from the backlog; "a" came twice.
		if keys != n+1 {
			t.Errorf("drained after %d keys of the initial lists, want %d", keys, n+1)
		}
	case <-time.After(30 * time.Second):
		t.Error("drained did not run")
	}
	// Once: a later initial-list key (a new informer) does not run it again.
	q.AddWithOpts(initialList, req("late"))
	it, _ := q.Get()
	q.Done(it)
	select {
	case <-drained:
		t.Error("drained ran twice")
	case <-time.After(300 * time.Millisecond):
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.backlog != nil || len(q.waiting) != 0 || len(q.fed) != 0 {
		t.Errorf("after the backlog emptied: backlog %v, waiting %d, fed %d", q.backlog, len(q.waiting), len(q.fed))
	}
}

// A fleet small enough never to need the backlog still tells when its
// initial lists are reconciled (the manager's start-up ends there); a
// queue that saw none (a fleet that starts empty) tells so as soon as a
// worker asks for a key: controller-runtime starts the workers once every
// source has synced. Incidents resolve only once it has.
func TestBacklogQueueSettlesWithoutABacklog(t *testing.T) {
	for _, n := range []int{0, 2} {
		q, drained := settlingQueue(t, "backlog-settle-"+string(rune('0'+n)), 10, 50*time.Millisecond)
		for i := range n {
			q.AddWithOpts(initialList, req(string(rune('a'+i))))
		}
		// An event is not a key of the initial lists.
		q.AddWithOpts(priorityqueue.AddOpts{}, req("event"))
		for q.Len() > 0 {
			it, _ := q.Get()
			q.Done(it)
		}
		// drained runs 50ms after the last key, or at the first Get
		// without one: the wait only catches a hang.
		select {
		case keys := <-drained:
			if keys != n {
				t.Errorf("%d keys: drained after %d", n, keys)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("%d keys: drained did not run", n)
		}
		select {
		case <-drained:
			t.Errorf("%d keys: drained ran twice", n)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// The initial lists count as reconciled only once the keys queued behind
// them are too: a cold start's own writes come back as events, one a VM.
// A delayed requeue does not hold it up.
func TestBacklogQueueSettlesAfterTheEventsBehindIt(t *testing.T) {
	q, drained := settlingQueue(t, "backlog-settle-events", 10, 20*time.Millisecond)
	notYet := func(when string) {
		t.Helper()
		select {
		case <-drained:
			t.Fatalf("drained ran %s", when)
		case <-time.After(150 * time.Millisecond):
		}
	}

	q.AddWithOpts(initialList, req("a"), req("b"))
	q.AddWithOpts(priorityqueue.AddOpts{After: time.Hour}, req("deadline"))
	a, _, _ := q.GetWithPriority()
	q.Done(a)
	b, _, _ := q.GetWithPriority()
	// The writes' events come while the last key of the lists is reconciled.
	q.AddWithOpts(priorityqueue.AddOpts{}, req("written-"+a.Name), req("written-"+b.Name))
	q.Done(b)
	notYet("with the writes' events ready")
	it, _, _ := q.GetWithPriority()
	q.Done(it)
	busy, _, _ := q.GetWithPriority()
	notYet("with a key at a worker")
	q.Done(busy)
	select {
	case keys := <-drained:
		if keys != 2 {
			t.Errorf("drained after %d keys of the initial lists, want 2", keys)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("drained did not run once the queue was empty (a requeue an hour away left in it)")
	}
}

// Events, delayed requeues and retries pass straight through, however full
// the backlog.
func TestBacklogQueuePassesEverythingElse(t *testing.T) {
	inner := priorityqueue.New[reconcile.Request]("backlog-test-2")
	q := newBacklogQueue(inner, 1)
	t.Cleanup(q.ShutDown)
	q.AddWithOpts(initialList, req("a"), req("b"), req("c"))
	q.AddWithOpts(priorityqueue.AddOpts{}, req("event"))
	q.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(handler.LowPriority), After: time.Millisecond}, req("requeue"))
	q.AddRateLimited(req("retry"))
	q.Add(req("timer"))
	// The requeue's millisecond passes on the real clock: poll for it; the
	// minute only catches a hang.
	deadline := time.Now().Add(time.Minute)
	for inner.Len() < 5 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if got := inner.Len(); got != 5 {
		t.Fatalf("the queue holds %d keys, want 5 (one initial, event, requeue, retry, timer)", got)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
