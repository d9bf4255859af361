// Package startupgc keeps a controller's start-up from setting the size of
// its heap for the life of the process.
//
// At start-up the informers decode every object of the fleet, and the
// controller keeps a small projection of each. The projections are
// allocated among the decoding's garbage, in the same size classes, and
// Go's collector never moves an object: once the garbage is freed, a span
// that holds one projection stays in use, and an unchanging fleet never
// allocates enough to fill the holes. How many such spans there are is set
// by how far the heap grew between two collections, which is GOGC percent
// of the live heap: at the default 100, the heap in use stayed about 1.5×
// the live heap at 5,000 VMs (docs/scale.md).
//
// So the informers decode their initial lists at a lower GC percent, and
// the percent the process started with comes back once the caches have
// synced: the reconciles that follow allocate garbage, little that lasts,
// and run at the usual cost. When the start-up ends (the controller has
// reconciled the initial lists, or a limit has passed) the freed pages are
// returned to the system, once. An explicit GOGC is the operator's choice
// and is left alone.
package startupgc

import (
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"github.com/go-logr/logr"
)

// DefaultPercent is the GC percent of the start-up (--startup-gc-percent).
const DefaultPercent = 25

// The messages a Phase logs: SyncedMsg when the percent comes back, and
// when it ends (once) EndedMsg or LimitMsg.
const (
	SyncedMsg = "Decoded the initial lists; the collector's GC percent is back"
	EndedMsg  = "Reconciled the initial lists; returned the start-up's memory"
	LimitMsg  = "The start-up outlasted its limit; returned its memory"
)

// The collector's percent is the process's: one Phase at a time lowers it.
var (
	mu    sync.Mutex
	owner *Phase
)

// Phase is a start-up. Call Synced once the caches have synced and End
// once the initial lists are reconciled; it ends by itself after the limit
// given to Begin.
type Phase struct {
	log  logr.Logger
	once sync.Once
	// timerMu guards timer: a short limit can fire before Begin has
	// stored it.
	timerMu sync.Mutex
	timer   *time.Timer
	// prev is the GC percent restored at the end, when this Phase lowered
	// it (it is the owner).
	prev int
}

// Begin starts a start-up phase. percent is its GC percent: 0 or less, an
// explicit GOGC, a collector already at or below it (or off), or another
// Phase that lowered it already, leave the collector as it is; the Phase
// then only returns the start-up's memory at its end. limit, when positive,
// ends the phase by itself: a standby replica never reconciles, and a
// controller with no VMs has no initial lists to reconcile.
func Begin(percent int, limit time.Duration, log logr.Logger) *Phase {
	p := &Phase{log: log}
	if percent > 0 {
		if _, set := os.LookupEnv("GOGC"); !set {
			mu.Lock()
			if owner == nil {
				if cur := debug.SetGCPercent(percent); cur <= percent { // off (-1) included
					debug.SetGCPercent(cur)
				} else {
					p.prev, owner = cur, p
				}
			}
			mu.Unlock()
		}
	}
	if limit > 0 {
		p.timerMu.Lock()
		p.timer = time.AfterFunc(limit, func() { p.end(LimitMsg, -1, limit) })
		p.timerMu.Unlock()
	}
	return p
}

// Synced restores the GC percent: the initial lists are decoded, and what
// the caches keep of them is allocated.
func (p *Phase) Synced() {
	if p.restore() {
		p.log.Info(SyncedMsg, "gcPercent", p.prev)
	}
}

// restore gives the collector back its percent, if this Phase lowered it
// and has not yet; it says whether it did.
func (p *Phase) restore() bool {
	mu.Lock()
	defer mu.Unlock()
	if owner != p {
		return false
	}
	debug.SetGCPercent(p.prev)
	owner = nil
	return true
}

// Lowered says whether this Phase lowered the GC percent and has not
// restored it yet.
func (p *Phase) Lowered() bool {
	mu.Lock()
	defer mu.Unlock()
	return owner == p
}

// End ends the phase, once: it restores the GC percent if Synced has not,
// and returns the memory the start-up freed to the system (a full
// collection: the caller runs it off its workers). Decoding the initial
// lists peaks the heap well above what the cache then holds, and the
// runtime keeps freed pages for reuse up to the collector's goal, which an
// unchanging fleet never reuses: at 5,000 VMs that was a third of the
// process's memory (docs/scale.md). keys is how many keys the
// initial lists gave.
func (p *Phase) End(keys int) {
	p.end(EndedMsg, keys, 0)
}

func (p *Phase) end(msg string, keys int, after time.Duration) {
	p.once.Do(func() {
		p.timerMu.Lock()
		if p.timer != nil {
			p.timer.Stop()
		}
		p.timerMu.Unlock()
		restored := p.restore()
		var before, now runtime.MemStats
		runtime.ReadMemStats(&before)
		debug.FreeOSMemory()
		runtime.ReadMemStats(&now)
		kv := []any{"heapInUse", now.HeapInuse, "returned", now.HeapReleased - min(before.HeapReleased, now.HeapReleased),
			"heldFromTheSystem", now.Sys - now.HeapReleased}
		if keys >= 0 {
			kv = append([]any{"keys", keys}, kv...)
		}
		if after > 0 {
			kv = append([]any{"after", after}, kv...)
		}
		if restored {
			kv = append(kv, "gcPercent", p.prev)
		}
		p.log.Info(msg, kv...)
	})
}
