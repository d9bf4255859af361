package guestprobe

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vmobs/vmobs/internal/factsource"
)

// probedAt groups the guestosinfo requests (one per probe) by VM.
func probedAt(reqs []string, at []time.Time) map[string][]time.Time {
	out := map[string][]time.Time{}
	for i, r := range reqs {
		if name, ok := strings.CutSuffix(r, "/"+SubGuestOSInfo); ok {
			out[name] = append(out[name], at[i])
		}
	}
	return out
}

// Each VM is probed once per interval, at its own slot: stepping the
// schedule often (as Start's ticker does) never probes a VM twice in an
// interval, and the fleet's probes spread over the interval instead of
// coming due together.
func TestSourceProbesEachVMOncePerIntervalAtItsSlot(t *testing.T) {
	const n, interval, tick, rounds = 40, 5 * time.Minute, 5 * time.Second, 3
	vms := make([]string, n)
	for i := range vms {
		vms[i] = fmt.Sprintf("vm%02d", i)
	}
	h := newHarness(t, Config{Options: factsource.Options{Interval: interval}}, vms...)
	h.api.takeAt()
	start, busiest := h.now(), 0
	for h.now().Sub(start) < rounds*interval {
		h.advance(tick)
		h.step()
		reqs, at := h.api.takeAt()
		got := probedAt(reqs, at)
		busiest = max(busiest, len(got))
		for vm, ts := range got {
			if len(ts) != 1 {
				t.Fatalf("%s probed %d times in one step", vm, len(ts))
			}
			slot := slotOf(target(vm).UID, interval)
			// The step at or just after the VM's slot in this interval.
			if off := time.Duration((ts[0].UnixNano() - int64(slot)) % int64(interval)); off < 0 || off >= tick {
				t.Fatalf("%s probed at %s, %s after its slot %s", vm, ts[0].Format(time.TimeOnly), off, slot)
			}
			if f := h.facts(vm); f == nil || !f.Answered {
				t.Fatalf("%s: facts %+v", vm, f)
			}
		}
	}
	if got := h.m.probes("ok"); got != n*rounds {
		t.Fatalf("%v probes of %d VMs in %d intervals, want one per VM per interval", got, n, rounds)
	}
	// 40 slots over 60 steps: a handful per step, never the fleet.
	if busiest > n/5 {
		t.Fatalf("one step probed %d of %d VMs: the slots do not spread", busiest, n)
	}
}

// waitFor polls cond until it holds. Its minute only catches a hang: a
// loaded machine running the tests with -race must not reach it.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// The probes run on a bounded pool of their own: guests that do not
// answer hold at most Workers calls at once, the schedule waits for a free
// worker rather than piling up calls, and reading the facts (what a
// reconcile does) never waits for a probe.
func TestSourceWorkersAreBounded(t *testing.T) {
	const workers, n = 3, 12
	vms := make([]string, n)
	for i := range vms {
		vms[i] = fmt.Sprintf("vm%02d", i)
	}
	h := newHarness(t, Config{Workers: workers, Options: factsource.Options{Timeout: time.Minute}}, vms...)
	h.round()
	for _, vm := range vms {
		h.api.setGuest(vm, guest{mode: "block", used: 42})
	}
	done := make(chan struct{})
	go func() {
		h.round()
		close(done)
	}()
	active := func() int { h.api.mu.Lock(); defer h.api.mu.Unlock(); return h.api.active }
	waitFor(t, "every worker to be busy", func() bool { return active() == workers })
	// Were the pool unbounded, the other VMs' calls would arrive now. The
	// wait is a sample: a slow machine can only miss a bug here, never
	// fail a correct pool.
	time.Sleep(300 * time.Millisecond)
	if got := active(); got != workers {
		t.Fatalf("%d calls at once with %d workers", got, workers)
	}
	if got := h.m.inFlight(); got != workers {
		t.Errorf("vmobs_guest_probes_in_flight = %v, want %d", got, workers)
	}
	read := make(chan error, 1)
	go func() {
		for _, vm := range vms {
			if f := h.s.Facts(key(vm)); f == nil || !f.Answered {
				read <- fmt.Errorf("%s: facts %+v while its probe blocks", vm, f)
				return
			}
		}
		read <- nil
	}()
	select {
	case err := <-read:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("reading the facts waits for the blocked probes")
	}
	select {
	case <-done:
		t.Fatal("the round ended while every guest blocks")
	default:
	}
	close(h.api.release)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the round did not end once the guests answered")
	}
	h.api.mu.Lock()
	peak := h.api.peak
	h.api.mu.Unlock()
	if peak != workers {
		t.Errorf("at most %d calls at once, want %d", peak, workers)
	}
	if got := h.m.probes("ok"); got != 2*n {
		t.Errorf("%v probes answered, want %d", got, 2*n)
	}
	if got := h.m.inFlight(); got != 0 {
		t.Errorf("vmobs_guest_probes_in_flight = %v after the round", got)
	}
}

// The schedule runs on exact time while facts keep whole seconds: a VM
// whose slot is not on a whole second, stepped more often than once a
// second (Start's ticker is interval/64, down to 10ms), is probed once per
// interval, not again and again until its second is over.
func TestSourceProbesOncePerIntervalBetweenWholeSeconds(t *testing.T) {
	const n, interval, tick, rounds = 20, 10 * time.Second, 50 * time.Millisecond, 3
	vms := make([]string, n)
	for i := range vms {
		vms[i] = fmt.Sprintf("vm%02d", i)
	}
	h := newHarness(t, Config{Options: factsource.Options{Interval: interval}, QPS: 1000}, vms...)
	h.api.takeAt()
	last := map[string]time.Time{}
	start := h.now()
	for h.now().Sub(start) < rounds*interval {
		h.advance(tick)
		h.step()
		reqs, at := h.api.takeAt()
		for vm, ts := range probedAt(reqs, at) {
			for _, ts := range ts {
				if prev, ok := last[vm]; ok && ts.Sub(prev) < interval-tick {
					t.Fatalf("%s probed at %s and again %s later, within an interval of %s", vm, prev.Format("15:04:05.000"), ts.Sub(prev), interval)
				}
				last[vm] = ts
			}
		}
	}
	if got := h.m.probes("ok"); got < n*(rounds-1) || got > n*(rounds+1) {
		t.Fatalf("%v probes of %d VMs in %d intervals, want about one per VM per interval", got, n, rounds)
	}
}
