package startupgc

import (
	"os"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
)

// gcPercent reads the collector's percent.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// noGOGC runs the test with GOGC unset and the collector at percent,
// both restored after it.
func noGOGC(t *testing.T, percent int) {
	t.Helper()
	t.Setenv("GOGC", "") // restored after the test
	if err := os.Unsetenv("GOGC"); err != nil {
		t.Fatal(err)
	}
	prev := debug.SetGCPercent(percent)
	t.Cleanup(func() { debug.SetGCPercent(prev) })
}

// logged collects the messages a Phase logs.
func logged() (logr.Logger, *[]string) {
	var msgs []string
	return funcr.New(func(_, args string) { msgs = append(msgs, args) }, funcr.Options{}), &msgs
}

func TestPhaseLowersThePercentUntilItEnds(t *testing.T) {
	noGOGC(t, 150)
	log, msgs := logged()
	p := Begin(25, 0, log)
	if got := gcPercent(); got != 25 || !p.Lowered() {
		t.Fatalf("during the start-up: GC percent %d (lowered %v), want 25", got, p.Lowered())
	}
	// A second phase (another manager in the process) leaves it alone,
	// and its end does not restore the first's.
	q := Begin(10, 0, log)
	if got := gcPercent(); got != 25 || q.Lowered() {
		t.Fatalf("a second phase: GC percent %d (lowered %v), want 25 and not lowered", got, q.Lowered())
	}
	q.Synced()
	q.End(3)
	if got := gcPercent(); got != 25 {
		t.Fatalf("after the second phase ended: GC percent %d, want 25", got)
	}
	// The caches synced: the percent comes back, and the end does not
	// restore it again.
	p.Synced()
	if got := gcPercent(); got != 150 || p.Lowered() {
		t.Fatalf("after the caches synced: GC percent %d (lowered %v), want 150", got, p.Lowered())
	}
	debug.SetGCPercent(120) // set by someone else since
	p.End(7)
	p.End(8) // once
	if got := gcPercent(); got != 120 {
		t.Fatalf("after the start-up: GC percent %d, want 120 (not restored twice)", got)
	}
	if len(*msgs) != 3 {
		t.Fatalf("logged %d messages, want the second phase's end, the sync and the end: %q", len(*msgs), *msgs)
	}
	if !strings.Contains((*msgs)[1], `"gcPercent"=150`) {
		t.Errorf("the sync's log %q lacks the percent restored", (*msgs)[1])
	}
	for _, want := range []string{`"keys"=7`, `"returned"=`} {
		if !strings.Contains((*msgs)[2], want) {
			t.Errorf("the end's log %q lacks %s", (*msgs)[2], want)
		}
	}
	if strings.Contains((*msgs)[2], "gcPercent") {
		t.Errorf("the end's log %q names a percent it did not restore", (*msgs)[2])
	}
}

// Without a sync (a manager stopped early), the end restores the percent.
func TestPhaseEndRestoresWithoutASync(t *testing.T) {
	noGOGC(t, 100)
	log, msgs := logged()
	p := Begin(25, 0, log)
	p.End(2)
	if got := gcPercent(); got != 100 || p.Lowered() {
		t.Fatalf("after the end: GC percent %d (lowered %v), want 100", got, p.Lowered())
	}
	if len(*msgs) != 1 || !strings.Contains((*msgs)[0], `"gcPercent"=100`) {
		t.Errorf("logged %q, want the end naming the percent restored", *msgs)
	}
}

func TestPhaseLeavesTheCollectorAlone(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	for _, c := range []struct {
		name    string
		gogc    string // "-" unset
		current int
		percent int
	}{
		{"an explicit GOGC", "200", 100, 25},
		{"percent 0", "-", 100, 0},
		{"a collector already below", "-", 20, 25},
		{"a collector off", "-", -1, 25},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("GOGC", c.gogc)
			if c.gogc == "-" {
				if err := os.Unsetenv("GOGC"); err != nil {
					t.Fatal(err)
				}
			}
			debug.SetGCPercent(c.current)
			p := Begin(c.percent, 0, logr.Discard())
			if got := gcPercent(); got != c.current || p.Lowered() {
				t.Errorf("GC percent %d (lowered %v), want %d unchanged", got, p.Lowered(), c.current)
			}
			p.End(1)
			if got := gcPercent(); got != c.current {
				t.Errorf("after the end: GC percent %d, want %d", got, c.current)
			}
		})
	}
}

func TestPhaseEndsByItself(t *testing.T) {
	noGOGC(t, 100)
	log, msgs := logged()
	p := Begin(30, 50*time.Millisecond, log)
	if !p.Lowered() {
		t.Fatal("not lowered")
	}
	// Polls until the limit's timer has run; the minute only catches a
	// timer that never fires.
	deadline := time.Now().Add(time.Minute)
	for p.Lowered() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if p.Lowered() || gcPercent() != 100 {
		t.Fatalf("after its limit: lowered %v, GC percent %d, want 100", p.Lowered(), gcPercent())
	}
	p.End(5) // the initial lists, later: nothing more
	if len(*msgs) != 1 || !strings.Contains((*msgs)[0], "outlasted") || !strings.Contains((*msgs)[0], `"after"="50ms"`) {
		t.Errorf("logged %q, want one message of the limit", *msgs)
	}
}
