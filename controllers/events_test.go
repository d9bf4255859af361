package controllers

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/client-go/tools/events"
)

// heldSetup runs a heldEvents over a fake recorder until the test ends.
func heldSetup(t *testing.T, quiet, maxDelay time.Duration) (*heldEvents, *events.FakeRecorder, context.CancelFunc, <-chan struct{}) {
	t.Helper()
	sink := events.NewFakeRecorder(2 * maxPending)
	h := newHeldEvents(sink, quiet, maxDelay, time.Now)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		_ = h.Start(ctx)
	}()
	t.Cleanup(func() { cancel(); <-stopped })
	waitFor(t, "the loop to run", func() bool { h.mu.Lock(); defer h.mu.Unlock(); return h.running })
	return h, sink, cancel, stopped
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// held says whether no Event reached the sink within d.
func held(sink *events.FakeRecorder, d time.Duration) bool {
	select {
	case <-sink.Events:
		return false
	case <-time.After(d):
		return true
	}
}

func TestHeldEventsWaitForTheWritesToEnd(t *testing.T) {
	h, sink, _, _ := heldSetup(t, 10*time.Millisecond, time.Hour)

	// No write in flight: the Event goes out once the quiet has passed.
	h.event(nil, "Warning", "LauncherPodNotReady", "Evaluate", "node: Healthy -> Degraded")
	select {
	case e := <-sink.Events:
		if e != "Warning LauncherPodNotReady node: Healthy -> Degraded" {
			t.Errorf("sent %q", e)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("an Event with no write in flight was not sent")
	}

	// Two writes in flight: held until both have ended.
	first, second := h.writeBegins(), h.writeBegins()
	h.event(nil, "Normal", "Running", "Evaluate", "node: Degraded -> Healthy")
	if !held(sink, 100*time.Millisecond) {
		t.Fatal("an Event was sent while status writes were in flight")
	}
	first()
	if !held(sink, 100*time.Millisecond) {
		t.Fatal("an Event was sent while a status write was in flight")
	}
	second()
	if held(sink, 10*time.Second) {
		t.Fatal("the Event was not sent after the writes ended")
	}
}

func TestHeldEventsWaitAtMostMaxDelay(t *testing.T) {
	h, sink, _, _ := heldSetup(t, time.Hour, 50*time.Millisecond)
	defer h.writeBegins()()
	start := time.Now()
	h.event(nil, "Warning", "NodeNotReady", "Evaluate", "node: Healthy -> Degraded")
	if held(sink, 10*time.Second) {
		t.Fatal("an Event held past its maximum delay, with writes going on, was not sent")
	}
	if waited := time.Since(start); waited < 50*time.Millisecond {
		t.Errorf("sent after %v, before its maximum delay, with a write in flight", waited)
	}
}

func TestHeldEventsLoseNothing(t *testing.T) {
	t.Run("before the loop runs", func(t *testing.T) {
		sink := events.NewFakeRecorder(1)
		h := newHeldEvents(sink, time.Hour, time.Hour, time.Now)
		defer h.writeBegins()()
		h.event(nil, "Normal", "Running", "Evaluate", "m")
		if n := len(sink.Events); n != 1 {
			t.Fatal("an Event given before the loop runs was not sent at once")
		}
	})
	t.Run("at the stop", func(t *testing.T) {
		h, sink, cancel, stopped := heldSetup(t, time.Hour, time.Hour)
		defer h.writeBegins()()
		for i := range 3 {
			h.event(nil, "Normal", "Running", "Evaluate", fmt.Sprint(i))
		}
		if !held(sink, 50*time.Millisecond) {
			t.Fatal("an Event was sent while a status write was in flight")
		}
		cancel()
		<-stopped
		if n := len(sink.Events); n != 3 {
			t.Errorf("the stop sent %d of the 3 Events held", n)
		}
		h.event(nil, "Normal", "Running", "Evaluate", "after")
		if n := len(sink.Events); n != 4 {
			t.Error("an Event given after the stop was not sent at once")
		}
	})
	t.Run("past the bound", func(t *testing.T) {
		h, sink, _, _ := heldSetup(t, time.Hour, time.Hour)
		defer h.writeBegins()()
		for i := range maxPending + 2 {
			h.event(nil, "Normal", "Running", "Evaluate", fmt.Sprint(i))
		}
		if n := len(sink.Events); n != 2 {
			t.Errorf("%d Events sent at once past %d held, want 2", n, maxPending)
		}
	})
}
