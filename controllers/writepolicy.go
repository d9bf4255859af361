package controllers

import (
	"hash/fnv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/projection"
)

// writePolicy decides, in one place, whether a computed status is written
// now, held back, or not written at all, and when to look again. It owns
// what that needs: the refresh interval and the coalesce window, the memory
// of our own recent writes (the cache lags them) and the fleet-wide budget
// of evidence refreshes. Reconcile asks it once (decide) and tells it what
// it wrote (wrote).
type writePolicy struct {
	// refreshEvery is the base evidence refresh interval (spread per
	// object by refreshInterval); 0 or less writes every refresh at once.
	refreshEvery time.Duration
	// coalesce is the window in which changes between Progressing states
	// are folded into one write.
	coalesce time.Duration
	recent   recentWrites
	creates  ownCreates
	budget   *refreshBudget
}

func newWritePolicy(refreshEvery, coalesce time.Duration, refreshQPS float64) *writePolicy {
	return &writePolicy{refreshEvery: refreshEvery, coalesce: coalesce, budget: newRefreshBudget(refreshQPS)}
}

// writeRequest is what decide weighs: the object, the stored status (as
// the cache keeps it: hashes and the verdict) and the computed one, when
// the API server last recorded our status write (managedFields), and now.
type writeRequest struct {
	key         types.NamespacedName
	uid         types.UID
	stored      statusSums
	next        *v1alpha1.VMObservationStatus
	storedWrite time.Time
	now         time.Time
}

// statusSums stand for a status in the write decision: its hash whole and
// without evidence times (projection.StatusHash), and its verdict.
type statusSums struct {
	whole, timeless uint64
	verdict         v1alpha1.Verdict
}

func storedSums(o *projection.Observation) statusSums {
	return statusSums{whole: o.Hash, timeless: o.TimelessHash, verdict: v1alpha1.Verdict(o.Verdict.String())}
}

func sumsOf(s *v1alpha1.VMObservationStatus) statusSums {
	return statusSums{whole: projection.StatusHash(s), timeless: projection.StatusHash(projection.WithoutTimestamps(s)), verdict: s.Verdict}
}

// decide returns the final answer, in this order:
//  1. the last write is the later of what managedFields say and what we
//     remember writing (the cache may not have our write yet);
//  2. decideWrite compares the statuses: unchanged, changed, coalesced
//     progress, an evidence refresh due or held back;
//  3. a write of exactly what we wrote less than cacheLagTolerance ago is
//     skipped: the cache has not caught up, and its event brings us back;
//  4. a refresh due waits for its slot in the fleet-wide budget.
//
// retryAfter is set whenever a write is held back, so that it is made when
// its time comes even if no other event does.
func (p *writePolicy) decide(r writeRequest) writeDecision {
	lastWrite := r.storedWrite
	recent, seen := p.recent.get(r.key, r.uid)
	if seen && recent.at.After(lastWrite) {
		lastWrite = recent.at
	}
	d := decideWrite(r.stored, r.next, lastWrite, r.now, refreshInterval(p.refreshEvery, r.uid), p.coalesce)
	if !d.write {
		return d
	}
	if seen && recent.sum == d.sum && r.now.Sub(recent.at) < cacheLagTolerance {
		return writeDecision{why: "already written, cache not caught up"}
	}
	if d.refresh {
		if wait := p.budget.take(r.key, r.now); wait > 0 {
			return writeDecision{why: "evidence refresh waits for its slot", retryAfter: wait}
		}
	}
	return d
}

// wrote records a write decide allowed.
func (p *writePolicy) wrote(key types.NamespacedName, uid types.UID, at time.Time, d writeDecision) {
	p.recent.put(key, uid, at, d.sum)
}

// caughtUp is told of every VMObservation the cache receives: once the
// cache holds the status we wrote, managedFields say when, and the memory of
// that write is dropped (with the heartbeat timers a VM may not be
// reconciled again for hours, and the memory would stay).
func (p *writePolicy) caughtUp(key types.NamespacedName, uid types.UID, stored uint64) {
	p.recent.caughtUp(key, uid, stored)
}

// creating records that this process is about to create key's
// VMObservation, created that it did (uid), createFailed that it did not;
// createFailed says whether the create event of another object of that
// name was dropped meanwhile, which the caller must make up for.
func (p *writePolicy) creating(key types.NamespacedName) { p.creates.begin(key) }
func (p *writePolicy) created(key types.NamespacedName, uid types.UID) {
	p.creates.done(key, uid)
}
func (p *writePolicy) createFailed(key types.NamespacedName) bool { return p.creates.abort(key) }

// ownCreate says whether a create event is of a VMObservation this process
// created; the event comes once, and is then forgotten.
func (p *writePolicy) ownCreate(key types.NamespacedName, uid types.UID) bool {
	return p.creates.take(key, uid)
}

// forget drops what the policy holds of a deleted object.
func (p *writePolicy) forget(key types.NamespacedName) {
	p.recent.forget(key)
	p.creates.forget(key)
	p.budget.forget(key)
}

// writeDecision says whether to write the computed status, and why.
type writeDecision struct {
	write bool
	why   string
	// retryAfter is set when a timestamp-only refresh was held back: the
	// time left until the refresh interval allows it.
	retryAfter time.Duration
	// refresh marks a write whose only change is timestamps.
	refresh bool
	// sum is the hash of the status to write, for the recent-writes memory.
	sum uint64
}

// decideWrite compares the stored status with the computed one. It writes
// every real change at once and nothing when they are equal. With the
// opt-in evidence refresh (refresh > 0), a change that only moves evidence
// timestamps forward is written at most once per refresh interval; without
// it, timestamps move only when evidence does (a condition transitioned
// again), and such a change is written at once.
//
// A VM that boots or migrates moves through several Progressing states in
// a second or two (Pending, Scheduling, Scheduled, Running without agent...).
// While the stored and the computed verdicts are both Progressing, changes
// are coalesced to one write per coalesce window: the verdict a reader acts
// on is the same, and a boot costs two or three writes instead of six.
//
// The stored status is known by its hashes: the cache does not keep it
// whole. The computed one's hash without timestamps is taken only when the
// whole hashes differ.
func decideWrite(stored statusSums, next *v1alpha1.VMObservationStatus, lastWrite, now time.Time, refresh, coalesce time.Duration) writeDecision {
	sum := projection.StatusHash(next)
	if sum == stored.whole {
		return writeDecision{why: "unchanged"}
	}
	d := writeDecision{write: true, sum: sum}
	switch {
	case projection.StatusHash(projection.WithoutTimestamps(next)) != stored.timeless:
		if stored.verdict == v1alpha1.VerdictProgressing && next.Verdict == v1alpha1.VerdictProgressing &&
			!lastWrite.IsZero() && coalesce > 0 && now.Before(lastWrite.Add(coalesce)) {
			return writeDecision{why: "progress coalesced", retryAfter: lastWrite.Add(coalesce).Sub(now)}
		}
		d.why = "changed"
	case refresh <= 0:
		d.why = "evidence times changed"
	case lastWrite.IsZero():
		d.why, d.refresh = "evidence refresh", true
	default:
		due := lastWrite.Add(refresh)
		if now.Before(due) {
			return writeDecision{why: "evidence refresh held back", retryAfter: due.Sub(now)}
		}
		d.why, d.refresh = "evidence refresh", true
	}
	return d
}

// refreshInterval is the evidence refresh interval of one object: between
// base and 1.2×base, fixed per object by its UID. A cold start writes every
// status within a minute or two; with one interval for all, their refreshes
// would come due together every interval, forever: a wave of thousands of
// writes that held the reconciles of real changes back (p99 latency 294 ms
// instead of 67 ms at 5,000 VMs, docs/scale.md). Spread per object, the
// wave widens by a fifth of the interval each round until it is flat.
func refreshInterval(base time.Duration, uid types.UID) time.Duration {
	if base <= 0 {
		return base
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(uid))
	return base + time.Duration(uint64(base/5)*uint64(h.Sum32()%1024)/1024)
}

// cacheLagTolerance bounds how long the controller trusts its own memory of
// a write over the cache: long enough for the watch to deliver the write,
// short enough that a status changed behind its back is put right.
const cacheLagTolerance = 30 * time.Second

// recentWrites remembers, per VMObservation, when the controller last wrote
// its status and a hash of what it wrote. The cache lags our own writes by
// a watch round-trip; without this, an event arriving in that gap would see
// the old status and write again (seen in the scale harness as a second
// write 140ms after the first). It holds 8 bytes of hash and a time per VM.
type recentWrites struct {
	mu sync.Mutex
	m  map[types.NamespacedName]recentWrite
}

type recentWrite struct {
	uid types.UID
	at  time.Time
	sum uint64
}

func (w *recentWrites) get(key types.NamespacedName, uid types.UID) (recentWrite, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	r, ok := w.m[key]
	if !ok || r.uid != uid {
		return recentWrite{}, false
	}
	return r, true
}

func (w *recentWrites) put(key types.NamespacedName, uid types.UID, at time.Time, sum uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[types.NamespacedName]recentWrite{}
	}
	w.m[key] = recentWrite{uid: uid, at: at, sum: sum}
}

// caughtUp drops the write of key once the cache holds it.
func (w *recentWrites) caughtUp(key types.NamespacedName, uid types.UID, stored uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if r, ok := w.m[key]; ok && r.uid == uid && r.sum == stored {
		delete(w.m, key)
	}
}

// size is the number of writes remembered (tests).
func (w *recentWrites) size() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.m)
}

func (w *recentWrites) forget(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.m, key)
}

// ownCreates remembers, per VMObservation, that this process is creating
// it or the UID of the one it created, until the cache delivers its create
// event. Without it each create came back as a reconcile that wrote
// nothing: at a cold start of 1,000 VMs, 2,001 reconciles instead of
// 1,001, and since an event outranks the initial lists' keys in the queue,
// those no-ops ran ahead of the VMs still waiting for their first status
// (docs/scale.md, finding 23). The event may outrun our create's answer (it
// did for about a fifth of them), so the record is made before the create.
//
// Only the event of our own create is dropped: a VMObservation declared by
// a user, another shard's, or an orphan found at start still brings its
// reconcile. An event dropped while our create was in flight is of another
// object if that create then fails; abort says so. An entry whose event
// never comes (the object deleted before the cache saw it) is replaced by
// the key's next create, or dropped with the key.
type ownCreates struct {
	mu sync.Mutex
	m  map[types.NamespacedName]ownCreate
}

type ownCreate struct {
	uid types.UID // "" while the create is in flight
	// early: an event came while the create was in flight, and was dropped.
	early bool
}

func (c *ownCreates) begin(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[types.NamespacedName]ownCreate{}
	}
	c.m[key] = ownCreate{}
}

// done records the UID our create returned; if its event came already,
// there is nothing left to wait for.
func (c *ownCreates) done(key types.NamespacedName, uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[key]; ok && e.early {
		delete(c.m, key)
		return
	}
	if c.m == nil {
		c.m = map[types.NamespacedName]ownCreate{}
	}
	c.m[key] = ownCreate{uid: uid}
}

// abort forgets a create that failed, and says whether an event was
// dropped while it was in flight.
func (c *ownCreates) abort(key types.NamespacedName) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	delete(c.m, key)
	return ok && e.uid == "" && e.early
}

// take reports whether a create event of uid under key is our create's,
// and forgets it.
func (c *ownCreates) take(key types.NamespacedName, uid types.UID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	switch {
	case !ok:
		return false
	case e.uid == "":
		if e.early {
			return false // one event per create
		}
		c.m[key] = ownCreate{early: true}
		return true
	case e.uid == uid:
		delete(c.m, key)
		return true
	}
	return false
}

func (c *ownCreates) forget(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, key)
}

// refreshBudget spaces evidence refreshes across the fleet: at most one per
// interval `every`, each object given the next free slot. A refresh moves
// only timestamps, so it can wait; the API server's capacity is shared with
// the writes that carry a change. Without it, the refreshes of 5,000 VMs
// written in one cold start came due within two minutes and saturated the
// API server of the test machine (watch delivery p99 143 ms, status p99
// 271 ms at 20 changes/s). A slot, once given, is kept until used.
type refreshBudget struct {
	every time.Duration // 0: no limit

	mu    sync.Mutex
	next  time.Time
	slots map[types.NamespacedName]time.Time
}

// newRefreshBudget spaces refreshes to qps per second; 0 or less is no limit.
func newRefreshBudget(qps float64) *refreshBudget {
	b := &refreshBudget{}
	if qps > 0 {
		b.every = time.Duration(float64(time.Second) / qps)
	}
	return b
}

// take returns how long key must wait for its refresh: 0 when it may write
// now (a free slot, or the slot it holds has come).
func (b *refreshBudget) take(key types.NamespacedName, now time.Time) time.Duration {
	if b == nil || b.every <= 0 {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if s, ok := b.slots[key]; ok {
		if !now.Before(s) {
			delete(b.slots, key)
			return 0
		}
		return s.Sub(now)
	}
	s := b.next
	if s.Before(now) {
		s = now
	}
	b.next = s.Add(b.every)
	if !now.Before(s) {
		return 0
	}
	if b.slots == nil {
		b.slots = map[types.NamespacedName]time.Time{}
	}
	b.slots[key] = s
	return s.Sub(now)
}

// forget drops the slot of a deleted object.
func (b *refreshBudget) forget(key types.NamespacedName) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.slots, key)
}
