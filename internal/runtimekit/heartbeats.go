package runtimekit

import (
	"maps"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Heartbeats looks at virt-handler's heartbeat deadlines per node instead
// of per VM. A VM whose next deadline is its node's heartbeat's (the
// verdict rests on a renewing source, verdict.Result.Renews) is not put in
// the work queue with RequeueAfter: it is registered here under its node,
// with how long after the heartbeat its deadline falls. virt-handler renews
// the heartbeat every minute, which moves every deadline of the node at
// once, so one timer per node, reset on each renewal, replaces a queue item
// per VM; and an unchanging fleet is not reconciled every heartbeat timeout
// only to find the heartbeat fresh. When a node's heartbeat does go stale,
// its timer enqueues exactly the VMs whose deadline passed.
type Heartbeats struct {
	clock clock.WithDelayedExecution

	// queue is the controller's work queue; nil until the source starts
	// (on the leader), and then the enqueues wait for it.
	queue QueueHandle

	mu    sync.Mutex
	nodes map[string]*nodeBeat
	// vms holds each waiting VM's node and how long after the node's
	// heartbeat its deadline is: the VM's heartbeat timeout (spec.policy
	// may set its own), rounded up as the engine rounds it. One map for
	// all nodes: a second one per node, for the VMs of each, cost about
	// 60 bytes a VM more, and only a firing timer, rare, needs a node's VMs.
	vms map[types.NamespacedName]vmBeat

	// fires counts the fire goroutines running, so that a test on a fake
	// clock can wait for the enqueues a step caused instead of sleeping.
	fires sync.WaitGroup
}

type vmBeat struct {
	node  string
	after time.Duration
}

// nodeBeat is one node's heartbeat and the deadlines that wait on it.
type nodeBeat struct {
	// beat is the heartbeat the offsets are counted from.
	beat time.Time
	// afters counts the node's VMs by their offset: nearly all share the
	// default heartbeat timeout, so this holds one entry or a few.
	afters map[time.Duration]int
	// timer fires at the earliest deadline; at is when.
	timer clock.Timer
	at    time.Time
}

func (n *nodeBeat) add(d time.Duration, by int) {
	if n.afters[d] += by; n.afters[d] <= 0 {
		delete(n.afters, d)
	}
}

// NewHeartbeats returns the timers on clock c; nil means the real clock.
func NewHeartbeats(c clock.WithDelayedExecution) *Heartbeats {
	if c == nil {
		c = clock.RealClock{}
	}
	return &Heartbeats{clock: c, nodes: map[string]*nodeBeat{}, vms: map[types.NamespacedName]vmBeat{}}
}

// Source hands the controller's queue to the timers when the controller
// starts.
func (h *Heartbeats) Source() source.Source { return h.queue.Source() }

// Watch registers the VM under the node whose heartbeat, beat, its verdict
// rests on, to be enqueued at deadline unless the heartbeat renews first.
func (h *Heartbeats) Watch(key types.NamespacedName, node string, beat, deadline time.Time) {
	if node == "" || beat.IsZero() || !deadline.After(beat) {
		h.Forget(key)
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.dropLocked(key)
	n := h.nodes[node]
	if n == nil {
		n = &nodeBeat{beat: beat, afters: map[time.Duration]int{}}
		h.nodes[node] = n
	}
	// The reconcile read the heartbeat before a renewal this tracker may
	// already have seen: count from the newer, so the deadline never comes
	// early by more than the renewal, and never late.
	if beat.After(n.beat) {
		n.beat = beat
	}
	d := deadline.Sub(beat)
	n.add(d, 1)
	h.vms[key] = vmBeat{node: node, after: d}
	h.armLocked(node, n)
}

// Forget drops the VM: its verdict no longer rests on a heartbeat, or it
// is gone, or it is another shard's.
func (h *Heartbeats) Forget(key types.NamespacedName) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.dropLocked(key)
}

// Renew moves the node's deadlines with its new heartbeat. A heartbeat that
// is not newer (a resync, a clock step back on the node) changes nothing.
func (h *Heartbeats) Renew(node string, beat time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := h.nodes[node]
	if n == nil || !beat.After(n.beat) {
		return
	}
	n.beat = beat
	h.armLocked(node, n)
}

// RemoveNode drops a deleted node's VMs: the Node's delete event enqueues
// them all, and their next verdict no longer rests on its heartbeat.
func (h *Heartbeats) RemoveNode(node string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := h.nodes[node]
	if n == nil {
		return
	}
	if n.timer != nil {
		n.timer.Stop()
	}
	maps.DeleteFunc(h.vms, func(_ types.NamespacedName, v vmBeat) bool { return v.node == node })
	delete(h.nodes, node)
}

// Watched is the number of VMs waiting on a heartbeat (tests, metrics).
func (h *Heartbeats) Watched() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.vms)
}

// TimerAt is when the node's timer fires, if it has one.
func (h *Heartbeats) TimerAt(node string) (time.Time, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := h.nodes[node]
	if n == nil || n.timer == nil {
		return time.Time{}, false
	}
	return n.at, true
}

func (h *Heartbeats) dropLocked(key types.NamespacedName) {
	v, ok := h.vms[key]
	if !ok {
		return
	}
	delete(h.vms, key)
	n := h.nodes[v.node]
	if n == nil {
		return
	}
	n.add(v.after, -1)
	if len(n.afters) == 0 {
		if n.timer != nil {
			n.timer.Stop()
		}
		delete(h.nodes, v.node)
	}
	// Otherwise the timer may fire early for the VMs left; fire re-arms it.
}

// armLocked sets the node's timer to its earliest deadline.
func (h *Heartbeats) armLocked(node string, n *nodeBeat) {
	var first time.Duration
	for d := range n.afters {
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
func (h *Heartbeats) after(d time.Duration, node string) clock.Timer {
	return h.clock.AfterFunc(d, func() {
		h.fires.Add(1)
		go func() {
			defer h.fires.Done()
			h.fire(node)
		}()
	})
}

// fire enqueues the node's VMs whose deadline passed and re-arms the timer
// for the others. It looks through every waiting VM: a timer fires only
// when a node's heartbeat did not renew in time (or early, after the VMs
// with the nearest deadline left), and at 5,000 VMs the pass takes tens of
// microseconds.
func (h *Heartbeats) fire(node string) {
	h.mu.Lock()
	n := h.nodes[node]
	q := h.queue.Queue()
	if n == nil || q == nil {
		if n != nil {
			// Not started yet: look again in a second.
			n.timer = h.after(time.Second, node)
		}
		h.mu.Unlock()
		return
	}
	now := h.clock.Now()
	var due []types.NamespacedName
	for key, v := range h.vms {
		if v.node == node && !n.beat.Add(v.after).After(now) {
			due = append(due, key)
		}
	}
	for _, key := range due {
		n.add(h.vms[key].after, -1)
		delete(h.vms, key)
	}
	n.timer = nil
	if len(n.afters) == 0 {
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
