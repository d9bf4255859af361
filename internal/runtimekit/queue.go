// Package runtimekit holds the controller's own pieces of
// controller-runtime machinery: the work queue with its initial-list
// backlog, the informer sources that start the workers as soon as their
// handlers have the initial lists, a source of periodic ticks, and the
// per-node timers of deadlines that a node's heartbeat renews. They work
// on reconcile requests and import nothing of vmobs; the reconciler
// (controllers) wires them.
package runtimekit

import (
	"sync"
	"time"

	"github.com/go-logr/logr"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// initialListsQuiet is how long no key of the initial lists must come
// before they count as reconciled.
const initialListsQuiet = 2 * time.Second

// initialListAhead is how many keys of the informers' initial lists may be
// in the work queue at once: enough that the workers never wait for the
// backlog (a reconcile takes about a millisecond, a refill a microsecond).
const initialListAhead = 256

// backlogQueue is controller-runtime's priority queue with the informers'
// initial lists held back in a backlog of their own.
//
// At a cold start every VM enters the queue at once: the initial LIST of
// each informer adds every key, at low priority. The priority queue keeps a
// map entry per queued key, and its metrics another; Go maps never shrink,
// so after the cold start those maps keep the size of N keys for the life
// of the process, about 225 bytes a VM (docs/scale.md). Here at most
// initialListAhead keys of the initial lists are in the queue at once; the
// rest wait in a slice and a set, which are dropped, memory and all, when
// the backlog empties. Everything else passes straight through: events
// (normal priority, and an event for a key in the backlog takes it out),
// delayed requeues and rate-limited retries.
type backlogQueue struct {
	priorityqueue.PriorityQueue[reconcile.Request]
	ahead int

	mu      sync.Mutex
	backlog []reconcile.Request
	// waiting holds the keys in backlog: true until the key reaches the
	// queue another way (then it is skipped when its turn comes).
	waiting map[reconcile.Request]bool
	// fed holds the keys handed to the queue from the initial lists and
	// not yet done: at most ahead.
	fed map[reconcile.Request]struct{}
	// used is set when the first key of the initial lists comes; drained,
	// if set, runs once the backlog and fed are both empty after that and
	// no key of the initial lists came for quiet (the informers deliver
	// their initial lists one after another, and the workers may empty the
	// backlog before the last of them arrives).
	used bool
	// listed is set when a worker first asks for a key: controller-runtime
	// starts the workers once every source has synced, so the informers'
	// initial lists have all been handed over by then, and a queue that
	// got no key of them had empty lists (a fleet that starts with no VM
	// settles at once, or its incidents could never resolve).
	listed   bool
	drained  func(keys int)
	keys     int
	quiet    time.Duration
	last     time.Time // of the last initial-list key
	settling bool
	// busy counts the keys handed to a worker and not yet done: drained
	// waits for them and for every ready key too. A cold start's writes
	// come back as events, one a VM, queued behind the initial lists;
	// the start-up's memory returned before they are reconciled would be
	// taken again at once (docs/scale.md, finding 20).
	busy int
}

func newBacklogQueue(inner priorityqueue.PriorityQueue[reconcile.Request], ahead int) *backlogQueue {
	return &backlogQueue{
		PriorityQueue: inner, ahead: ahead, quiet: initialListsQuiet,
		waiting: map[reconcile.Request]bool{}, fed: make(map[reconcile.Request]struct{}, ahead),
	}
}

// NewQueue is a controller's NewQueue: the queue controller-runtime
// would build by default, behind a backlog. settled runs once the initial
// lists are reconciled, with how many keys they held (vmobs' manager ends
// its start-up there: internal/startupgc).
func NewQueue(name string, rl workqueue.TypedRateLimiter[reconcile.Request], log logr.Logger, settled func(keys int)) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	q := newBacklogQueue(priorityqueue.New(name, func(o *priorityqueue.Opts[reconcile.Request]) {
		o.RateLimiter, o.Log = rl, log.WithValues("controller", name)
	}), initialListAhead)
	q.drained = settled
	return q
}

// fromInitialList tells an add of the informers' initial lists (as
// controller-runtime's handlers make it: low priority, no delay, no rate
// limit) from every other.
func fromInitialList(o priorityqueue.AddOpts) bool {
	return o.Priority != nil && *o.Priority == handler.LowPriority && o.After == 0 && !o.RateLimited
}

// AddWithOpts implements priorityqueue.PriorityQueue.
func (q *backlogQueue) AddWithOpts(o priorityqueue.AddOpts, items ...reconcile.Request) {
	if !fromInitialList(o) {
		q.mu.Lock()
		for _, it := range items {
			if q.waiting[it] {
				q.waiting[it] = false
			}
		}
		q.mu.Unlock()
		q.PriorityQueue.AddWithOpts(o, items...)
		return
	}
	q.mu.Lock()
	q.last, q.used = time.Now(), true
	now := items[:0:0]
	for _, it := range items {
		if _, ok := q.waiting[it]; ok {
			continue
		}
		_, queued := q.fed[it]
		if !queued && (len(q.fed) >= q.ahead || len(q.backlog) > 0) {
			q.backlog = append(q.backlog, it)
			q.waiting[it] = true
			continue
		}
		if !queued {
			q.feedLocked(it)
		}
		now = append(now, it)
	}
	q.mu.Unlock()
	if len(now) > 0 {
		q.PriorityQueue.AddWithOpts(o, now...)
	}
}

// GetWithPriority implements priorityqueue.PriorityQueue (the controller's
// workers take keys with it).
func (q *backlogQueue) GetWithPriority() (reconcile.Request, int, bool) {
	q.workersStarted()
	it, prio, shutdown := q.PriorityQueue.GetWithPriority()
	if !shutdown {
		q.took()
	}
	return it, prio, shutdown
}

// Get implements workqueue.Interface.
func (q *backlogQueue) Get() (reconcile.Request, bool) {
	q.workersStarted()
	it, shutdown := q.PriorityQueue.Get()
	if !shutdown {
		q.took()
	}
	return it, shutdown
}

// workersStarted records that the initial lists were handed over (see
// listed) before a worker waits for its first key.
func (q *backlogQueue) workersStarted() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.listed {
		q.listed = true
		q.settleLocked()
	}
}

func (q *backlogQueue) took() {
	q.mu.Lock()
	q.busy++
	q.mu.Unlock()
}

// Done implements workqueue.Interface: a key of the initial lists that is
// done makes room for the next in the backlog.
func (q *backlogQueue) Done(it reconcile.Request) {
	q.PriorityQueue.Done(it)
	q.mu.Lock()
	q.busy = max(q.busy-1, 0)
	delete(q.fed, it)
	next := q.takeLocked()
	q.settleLocked()
	q.mu.Unlock()
	if len(next) > 0 {
		q.PriorityQueue.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(handler.LowPriority)}, next...)
	}
}

// settleLocked runs drained, once, when the initial lists are reconciled:
// keys of them came, the backlog is empty, none of them is in the queue,
// none came for quiet, and no key is ready or with a worker. It looks
// again after quiet until the lists are quiet; a later Done looks again
// while keys are ready or busy.
func (q *backlogQueue) settleLocked() {
	if !(q.used || q.listed) || q.drained == nil || q.settling || len(q.backlog) > 0 || len(q.fed) > 0 || q.busy > 0 {
		return
	}
	if q.PriorityQueue.Len() > 0 { // ready keys only: a requeue's delay does not hold it up
		return
	}
	if wait := q.quiet - time.Since(q.last); wait > 0 {
		q.settling = true
		time.AfterFunc(wait, func() {
			q.mu.Lock()
			defer q.mu.Unlock()
			q.settling = false
			q.settleLocked()
		})
		return
	}
	drained, keys := q.drained, q.keys
	q.drained, q.used = nil, false
	// Off the worker and the lock: returning memory runs a full collection.
	go drained(keys)
}

// feedLocked records a key of the initial lists handed to the queue.
func (q *backlogQueue) feedLocked(it reconcile.Request) {
	q.fed[it] = struct{}{}
	q.keys++
}

// takeLocked moves keys from the backlog to fed while there is room, and
// drops the backlog's slice and set once it is empty.
func (q *backlogQueue) takeLocked() []reconcile.Request {
	if len(q.backlog) == 0 {
		return nil
	}
	var out []reconcile.Request
	for len(q.fed) < q.ahead && len(q.backlog) > 0 {
		it := q.backlog[0]
		q.backlog = q.backlog[1:]
		if q.waiting[it] {
			q.feedLocked(it)
			out = append(out, it)
		}
		delete(q.waiting, it)
	}
	if len(q.backlog) == 0 {
		q.backlog, q.waiting = nil, map[reconcile.Request]bool{}
	}
	return out
}

// Len implements workqueue.Interface: the queue's keys and the backlog's.
func (q *backlogQueue) Len() int {
	q.mu.Lock()
	n := len(q.backlog)
	q.mu.Unlock()
	return q.PriorityQueue.Len() + n
}
