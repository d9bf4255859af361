package runtimekit

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/vmobs/vmobs/internal/testsupport"
)

// t0 is the fake clock's start.
var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// beatsUnderTest is a Heartbeats on a fake clock, started on a real queue.
func beatsUnderTest(t *testing.T) (*Heartbeats, *clocktesting.FakeClock, workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	t.Helper()
	clk := clocktesting.NewFakeClock(t0)
	h := NewHeartbeats(clk)
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	t.Cleanup(q.ShutDown)
	if err := h.Source().Start(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	return h, clk, q
}

// drain waits for the timers the clock's last step fired, then returns
// what the queue holds.
func drain(h *Heartbeats, q workqueue.TypedRateLimitingInterface[reconcile.Request]) map[string]bool {
	h.fires.Wait()
	return testsupport.Drain(q)
}

func vmKey(name string) types.NamespacedName {
	return types.NamespacedName{Namespace: "ns", Name: name}
}

func TestHeartbeatTimers(t *testing.T) {
	h, clk, q := beatsUnderTest(t)
	beat := t0.Add(-time.Minute)
	// Two VMs on node-a, one with a shorter timeout of its own, one on node-b.
	h.Watch(vmKey("a1"), "node-a", beat, beat.Add(5*time.Minute))
	h.Watch(vmKey("a2"), "node-a", beat, beat.Add(3*time.Minute))
	h.Watch(vmKey("b1"), "node-b", beat, beat.Add(5*time.Minute))
	if h.Watched() != 3 || len(h.nodes) != 2 {
		t.Fatalf("%d VMs on %d nodes", h.Watched(), len(h.nodes))
	}

	// node-a renews every minute; node-b stops.
	for m := 1; m <= 4; m++ {
		clk.Step(time.Minute)
		h.Renew("node-a", beat.Add(time.Duration(m)*time.Minute))
		// A resync with an older heartbeat moves nothing back.
		h.Renew("node-a", beat)
	}
	// now = t0+4m: node-b's deadline (beat+5m = t0+4m) passed.
	if got := drain(h, q); len(got) != 1 || !got["b1"] {
		t.Fatalf("enqueued %v, want only b1, whose node stopped renewing", got)
	}
	if h.Watched() != 2 || h.nodes["node-b"] != nil {
		t.Errorf("after node-b fired: %d watched, node-b %v", h.Watched(), h.nodes["node-b"])
	}

	// node-a stops after its beat at t0+3m: a2 (3m) is due at t0+6m,
	// a1 (5m) at t0+8m.
	clk.Step(2 * time.Minute)
	if got := drain(h, q); len(got) != 1 || !got["a2"] {
		t.Fatalf("enqueued %v at +6m, want a2", got)
	}
	clk.Step(2 * time.Minute)
	if got := drain(h, q); len(got) != 1 || !got["a1"] {
		t.Fatalf("enqueued %v at +8m, want a1", got)
	}
	if h.Watched() != 0 || len(h.nodes) != 0 {
		t.Errorf("%d watched, %d nodes after all fired", h.Watched(), len(h.nodes))
	}
}

func TestHeartbeatTimersForgetMoveAndRemove(t *testing.T) {
	h, clk, q := beatsUnderTest(t)
	beat := t0
	h.Watch(vmKey("v1"), "node-a", beat, beat.Add(5*time.Minute))
	h.Watch(vmKey("v2"), "node-a", beat, beat.Add(5*time.Minute))
	h.Watch(vmKey("v3"), "node-b", beat, beat.Add(5*time.Minute))
	// v1 migrates to node-b; v2's verdict no longer rests on the heartbeat.
	h.Watch(vmKey("v1"), "node-b", beat, beat.Add(5*time.Minute))
	h.Forget(vmKey("v2"))
	if h.nodes["node-a"] != nil || h.nodes["node-b"].afters[5*time.Minute] != 2 {
		t.Fatalf("node-a %v, node-b %v", h.nodes["node-a"], h.nodes["node-b"])
	}
	// node-b is deleted: its VMs leave the timers (the delete event enqueues them).
	h.RemoveNode("node-b")
	if h.Watched() != 0 {
		t.Fatalf("%d watched after the node was removed", h.Watched())
	}
	clk.Step(10 * time.Minute)
	if got := drain(h, q); len(got) != 0 {
		t.Errorf("enqueued %v after forget and remove", got)
	}
	// A deadline not after the heartbeat, or no node, is not watched.
	h.Watch(vmKey("v4"), "", beat, beat.Add(time.Minute))
	h.Watch(vmKey("v5"), "node-a", beat, beat)
	if h.Watched() != 0 {
		t.Errorf("%d watched for unusable registrations", h.Watched())
	}
}

func TestHeartbeatTimersWaitForTheQueue(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	h := NewHeartbeats(clk)
	h.Watch(vmKey("v1"), "node-a", t0, t0.Add(time.Minute))
	clk.Step(2 * time.Minute) // fires before the controller started: kept
	h.fires.Wait()
	if !clk.HasWaiters() {
		t.Fatal("the timer that fired before the queue existed was not re-armed")
	}
	if h.Watched() != 1 {
		t.Fatalf("%d watched: the VM was dropped before the queue existed", h.Watched())
	}
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	if err := h.Source().Start(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	clk.Step(time.Second)
	if got := drain(h, q); !got["v1"] {
		t.Errorf("enqueued %v once the queue exists, want v1", got)
	}
}
