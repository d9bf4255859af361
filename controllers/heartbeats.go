package controllers

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// heartbeats looks at virt-handler's heartbeat deadlines per node instead
// of per VM. A VM whose next deadline is its node's heartbeat's (the
// verdict rests on a renewing source, verdict.Result.Renews) is not put in
// the work queue with RequeueAfter: it is registered here under its node,
// with how long after the heartbeat its deadline falls. virt-handler renews
// the heartbeat every minute, which moves every deadline of the node at
// once, so one timer per node, reset on each renewal, replaces a queue item
// per VM; and an unchanging fleet is not reconciled every heartbeat timeout
// only to find the heartbeat fresh. When a node's heartbeat does go stale,
// its timer enqueues exactly the VMs whose deadline passed.
type heartbeats struct {
	clock clock.WithDelayedExecution

	mu sync.Mutex
	// queue is the controller's work queue; nil until the source starts
	// (on the leader), and then the enqueues wait for it.
	queue  workqueue.TypedRateLimitingInterface[reconcile.Request]
	nodes  map[string]*nodeBeat
	nodeOf map[types.NamespacedName]string
}

// nodeBeat is one node's heartbeat and the VMs that wait on it.
type nodeBeat struct {
	// beat is the heartbeat the offsets are counted from.
	beat time.Time
	// after holds, per VM, how long after the heartbeat its deadline is:
	// the VM's heartbeat timeout (spec.policy may set its own), rounded
	// up as the engine rounds it.
	after map[types.NamespacedName]time.Duration
	// timer fires at the earliest deadline; at is when.
	timer clock.Timer
	at    time.Time
}

func newHeartbeats(c clock.WithDelayedExecution) *heartbeats {
	if c == nil {
		c = clock.RealClock{}
	}
	return &heartbeats{clock: c, nodes: map[string]*nodeBeat{}, nodeOf: map[types.NamespacedName]string{}}
}

// source hands the controller's queue to the timers when the controller
// starts.
func (h *heartbeats) source() source.Source {
	return source.TypedFunc[reconcile.Request](func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		h.mu.Lock()
		h.queue = q
		h.mu.Unlock()
		return nil
	})
}

// watch registers the VM under the node whose heartbeat, beat, its verdict
// rests on, to be enqueued at deadline unless the heartbeat renews first.
func (h *heartbeats) watch(key types.NamespacedName, node string, beat, deadline time.Time) {
	if node == "" || beat.IsZero() || !deadline.After(beat) {
		h.forget(key)
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if old, ok := h.nodeOf[key]; ok && old != node {
		h.dropLocked(key, old)
	}
	n := h.nodes[node]
	if n == nil {
		n = &nodeBeat{beat: beat, after: map[types.NamespacedName]time.Duration{}}
		h.nodes[node] = n
	}
	// The reconcile read the heartbeat before a renewal this tracker may
	// already have seen: count from the newer, so the deadline never comes
	// early by more than the renewal, and never late.
	if beat.After(n.beat) {
		n.beat = beat
	}
	n.after[key] = deadline.Sub(beat)
	h.nodeOf[key] = node
	h.armLocked(node, n)
}

// forget drops the VM: its verdict no longer rests on a heartbeat, or it
// is gone, or it is another shard's.
func (h *heartbeats) forget(key types.NamespacedName) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if node, ok := h.nodeOf[key]; ok {
		h.dropLocked(key, node)
	}
}

// renew moves the node's deadlines with its new heartbeat. A heartbeat that
// is not newer (a resync, a clock step back on the node) changes nothing.
func (h *heartbeats) renew(node string, beat time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := h.nodes[node]
	if n == nil || !beat.After(n.beat) {
		return
	}
	n.beat = beat
	h.armLocked(node, n)
}

// removeNode drops a deleted node's VMs: the Node's delete event enqueues
// them all, and their next verdict no longer rests on its heartbeat.
func (h *heartbeats) removeNode(node string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := h.nodes[node]
	if n == nil {
		return
	}
	if n.timer != nil {
		n.timer.Stop()
	}
	for key := range n.after {
		delete(h.nodeOf, key)
	}
	delete(h.nodes, node)
}

// watched is the number of VMs waiting on a heartbeat (tests, metrics).
func (h *heartbeats) watched() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.nodeOf)
}

func (h *heartbeats) dropLocked(key types.NamespacedName, node string) {
	delete(h.nodeOf, key)
	n := h.nodes[node]
	if n == nil {
		return
	}
	delete(n.after, key)
	if len(n.after) == 0 {
		if n.timer != nil {
			n.timer.Stop()
		}
		delete(h.nodes, node)
	}
	// Otherwise the timer may fire early for the VMs left; fire re-arms it.
}

// armLocked sets the node's timer to its earliest deadline.
func (h *heartbeats) armLocked(node string, n *nodeBeat) {
	var first time.Duration
	for _, d := range n.after {
		if first == 0 || d < first {
			first = d
		}
	}
	at := n.beat.Add(first)
	if n.timer != nil {
		if at.Equal(n.at) {
			return
		}
		n.timer.Stop()
	}
	n.at = at
	n.timer = h.after(max(at.Sub(h.clock.Now()), 0), node)
}

// after runs fire for the node after d. fire runs on a goroutine of its
// own: a fake clock calls the function while it holds its lock, and fire
// reads the clock.
func (h *heartbeats) after(d time.Duration, node string) clock.Timer {
	return h.clock.AfterFunc(d, func() { go h.fire(node) })
}

// fire enqueues the node's VMs whose deadline passed and re-arms the timer
// for the others.
func (h *heartbeats) fire(node string) {
	h.mu.Lock()
	n := h.nodes[node]
	if n == nil || h.queue == nil {
		if n != nil {
			// Not started yet: look again in a second.
			n.timer = h.after(time.Second, node)
		}
		h.mu.Unlock()
		return
	}
	now := h.clock.Now()
	var due []types.NamespacedName
	for key, d := range n.after {
		if !n.beat.Add(d).After(now) {
			due = append(due, key)
		}
	}
	for _, key := range due {
		delete(n.after, key)
		delete(h.nodeOf, key)
	}
	q := h.queue
	n.timer = nil
	if len(n.after) == 0 {
		delete(h.nodes, node)
	} else {
		h.armLocked(node, n)
	}
	h.mu.Unlock()
	// The deadline is a verdict change someone waits for: the default
	// priority, like an event.
	for _, key := range due {
		q.Add(reconcile.Request{NamespacedName: key})
	}
}
