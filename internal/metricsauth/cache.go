package metricsauth

import (
	"sync"
	"time"
)

// ttlCache holds answers until they expire, and at most max of them.
type ttlCache[T any] struct {
	mu      sync.Mutex
	max     int
	entries map[string]ttlEntry[T]
}

type ttlEntry[T any] struct {
	value   T
	expires time.Time
}

func newTTLCache[T any](maxEntries int) *ttlCache[T] {
	return &ttlCache[T]{max: maxEntries, entries: map[string]ttlEntry[T]{}}
}

func (c *ttlCache[T]) get(key string, now time.Time) (T, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || !now.Before(e.expires) {
		var zero T
		return zero, false
	}
	return e.value, true
}

// put stores an answer. A full cache first drops what expired; if that
// frees nothing (a flood of distinct tokens) it starts over, which costs
// the real scrapers one review each and keeps memory bounded.
func (c *ttlCache[T]) put(key string, v T, expires, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[key]; !ok && len(c.entries) >= c.max {
		for k, e := range c.entries {
			if !now.Before(e.expires) {
				delete(c.entries, k)
			}
		}
		if len(c.entries) >= c.max {
			clear(c.entries)
		}
	}
	c.entries[key] = ttlEntry[T]{value: v, expires: expires}
}

func (c *ttlCache[T]) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}
