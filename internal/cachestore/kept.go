package cachestore

import (
	"context"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/vmobs/vmobs/internal/projection"
)

// Kept is a store of what the rules read of one kind of object: a value V
// under a key K, built from the items I of the objects that client-go
// Reflectors list and watch straight into it, with no informer.
//
// An informer keeps each object as an object of its store, with its
// namespace/name key, an entry in each of its indexes, and its share of the
// DeltaFIFO and of each handler's notification buffer; for the few facts the rules read of a
// claim, an attachment, a DataVolume or an event, that machinery costs more
// than the facts (docs/scale.md, Storage and the Event storm). A kind says
// how its objects are kept (keptKind): one value an object (a claim under
// its namespace/name), several under one key (the attachments of a
// PersistentVolume), or the newest few (the Warning Events of an object).
//
// A change of a value after its feed's first list is told to Source's
// controller; the first lists wake nothing (the VMs' own initial lists
// bring every VM). It is safe for concurrent use.
type Kept[K comparable, I, V any] struct {
	kind keptKind[K, I, V]
	mu   sync.RWMutex
	m    map[K]V
	// peak is the most keys held since the map was last built: Go maps
	// never shrink, so the map is rebuilt once it holds far fewer
	// (shrinkLocked).
	peak  int
	feeds []*keptFeed[K, I, V]
	// unlisted counts the feeds not yet listed; synced is closed when it
	// reaches 0.
	unlisted int
	synced   chan struct{}
	// notify, when set, is told the keys whose values changed after
	// their feed's first list (Source).
	notify func([]K)
}

// keptKind says how a kind's objects are kept.
type keptKind[K comparable, I, V any] struct {
	// name names the store in the Reflectors' names and errors.
	name string
	// expected is the type the Reflectors decode.
	expected runtime.Object
	// item is the key and the item of what a Reflector hands over: a
	// decoded object, or its projection when a list is streamed
	// (projection.Transform). ok is false when nothing is kept of it.
	item func(o any) (k K, it I, ok bool, err error)
	// put is cur (the zero V when there is none) with it in it, and
	// whether that changed it; cur is not changed.
	put func(cur V, it I) (V, bool)
	// remove is cur without it, whether anything is left to keep, and
	// whether that changed it; cur is not changed.
	remove func(cur V, it I) (next V, keep, changed bool)
	// equal says two values are the same, for a relist.
	equal func(a, b V) bool
	// namespace is the namespace of a key ("" for a cluster-scoped kind):
	// a feed of one namespace owns its keys.
	namespace func(K) string
}

// shrinkMin is the fewest keys below which the map is never rebuilt, and
// shrinkRatio how many times fewer than its peak it must hold.
const (
	shrinkMin   = 1024
	shrinkRatio = 4
)

// newKept is the store of kind fed by a Reflector of each ListerWatcher,
// by the namespace it lists ("" for all).
func newKept[K comparable, I, V any](kind keptKind[K, I, V], lws map[string]toolscache.ListerWatcher) *Kept[K, I, V] {
	s := &Kept[K, I, V]{kind: kind, m: map[K]V{}, synced: make(chan struct{})}
	for ns, lw := range lws {
		s.feeds = append(s.feeds, &keptFeed[K, I, V]{store: s, namespace: ns, lw: lw})
	}
	s.unlisted = len(s.feeds)
	if s.unlisted == 0 {
		close(s.synced)
	}
	return s
}

// Start lists and watches the objects until ctx ends: a Reflector a
// namespace, which relists after a watch it cannot resume (Replace). It is
// a manager Runnable.
func (s *Kept[K, I, V]) Start(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, f := range s.feeds {
		r := toolscache.NewReflectorWithOptions(f.lw, s.kind.expected, f, toolscache.ReflectorOptions{
			Name: "vmobs " + s.kind.name, TypeDescription: fmt.Sprintf("%T", s.kind.expected),
		})
		wg.Go(func() { r.RunWithContext(ctx) })
	}
	wg.Wait()
	return nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: every
// replica keeps the facts, as its cache keeps the informers' objects, so
// that a new leader reconciles at once.
func (s *Kept[K, I, V]) NeedLeaderElection() bool { return false }

// HasSynced says every namespace has been listed.
func (s *Kept[K, I, V]) HasSynced() bool {
	select {
	case <-s.synced:
		return true
	default:
		return false
	}
}

// Get is the value kept under k.
func (s *Kept[K, I, V]) Get(k K) (V, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	v, ok := s.m[k]
	return v, ok
}

// Keys is how many keys the store holds.
func (s *Kept[K, I, V]) Keys() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.m)
}

// Range calls f with each key and its value under the store's lock: f must
// neither keep nor change a value that shares memory, nor call the store.
func (s *Kept[K, I, V]) Range(f func(K, V)) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for k, v := range s.m {
		f(k, v)
	}
}

// update replaces the value under k by what change makes of it (keep
// false: none), telling no one: it is the reconciles' own bookkeeping.
func (s *Kept[K, I, V]) update(k K, change func(V) (next V, keep, changed bool)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.m[k]
	if !ok {
		return
	}
	if next, keep, changed := change(cur); changed {
		s.setLocked(k, next, keep)
	}
}

// Source is a source of the requests that the keys whose values changed
// map to (toRequests), for a controller's WatchesRawSource. Its
// WaitForSync returns once every namespace has been listed, so that the
// first reconciles read the store, as they read the informers' objects;
// a relist wakes the VMs of the keys whose values it changed.
func (s *Kept[K, I, V]) Source(toRequests func(context.Context, K) []reconcile.Request) source.SyncingSource {
	return &keptSource[K, I, V]{store: s, toRequests: toRequests}
}

// SourceAt is Source adding its requests at priority (on a queue with
// priorities, as controller-runtime's default): a request already queued
// keeps its own if that is higher.
func (s *Kept[K, I, V]) SourceAt(priority int, toRequests func(context.Context, K) []reconcile.Request) source.SyncingSource {
	return &keptSource[K, I, V]{store: s, toRequests: toRequests, priority: &priority}
}

type keptSource[K comparable, I, V any] struct {
	store      *Kept[K, I, V]
	toRequests func(context.Context, K) []reconcile.Request
	priority   *int
}

func (s *keptSource[K, I, V]) Start(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	add := q.Add
	if pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request]); ok && s.priority != nil {
		opts := priorityqueue.AddOpts{Priority: s.priority}
		add = func(r reconcile.Request) { pq.AddWithOpts(opts, r) }
	}
	notify := func(keys []K) {
		for _, k := range keys {
			for _, r := range s.toRequests(ctx, k) {
				add(r)
			}
		}
	}
	s.store.mu.Lock()
	s.store.notify = notify
	s.store.mu.Unlock()
	go func() {
		<-ctx.Done()
		s.store.mu.Lock()
		s.store.notify = nil
		s.store.mu.Unlock()
	}()
	return nil
}

func (s *keptSource[K, I, V]) WaitForSync(ctx context.Context) error {
	select {
	case <-s.store.synced:
		return nil
	case <-ctx.Done():
	}
	if errors.Is(ctx.Err(), context.Canceled) { // stopped, as source.Kind
		return nil
	}
	return fmt.Errorf("timed out waiting for the %s to be listed: %w", s.store.kind.name, context.Cause(ctx))
}

func (s *keptSource[K, I, V]) String() string { return "vmobs " + s.store.kind.name }

// keptFeed is the Reflector's store of one namespace's objects ("" for
// all): it feeds them into Kept.
type keptFeed[K comparable, I, V any] struct {
	store     *Kept[K, I, V]
	namespace string
	lw        toolscache.ListerWatcher
	// listed is set by the first Replace; under store.mu.
	listed bool
}

// Add implements toolscache.ReflectorStore.
func (f *keptFeed[K, I, V]) Add(o any) error { return f.store.put(o) }

// Update implements toolscache.ReflectorStore.
func (f *keptFeed[K, I, V]) Update(o any) error { return f.store.put(o) }

// Delete implements toolscache.ReflectorStore.
func (f *keptFeed[K, I, V]) Delete(o any) error { return f.store.remove(o) }

// Replace implements toolscache.ReflectorStore: the values of the feed's
// namespace become those of list, as if the store had watched every change
// between its last list and this one.
func (f *keptFeed[K, I, V]) Replace(list []any, _ string) error { return f.store.replace(f, list) }

// Resync implements toolscache.ReflectorStore; the store has nothing to
// resync.
func (f *keptFeed[K, I, V]) Resync() error { return nil }

// Transformer implements toolscache.TransformingStore: a streamed initial
// list (client-go's WatchListClient) is gathered in a temporary store
// before Replace, which then holds each object as its projection.
func (f *keptFeed[K, I, V]) Transformer() toolscache.TransformFunc { return projection.Transform }

// owns says the key's objects come from the feed.
func (f *keptFeed[K, I, V]) owns(k K) bool {
	return f.namespace == corev1.NamespaceAll || f.store.kind.namespace(k) == f.namespace
}

// itemOf is kind.item, through a deletion whose final state is unknown.
func (s *Kept[K, I, V]) itemOf(o any) (K, I, bool, error) {
	if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	return s.kind.item(o)
}

// setLocked makes next the value under k, or forgets k when there is
// nothing to keep.
func (s *Kept[K, I, V]) setLocked(k K, next V, keep bool) {
	if !keep {
		delete(s.m, k)
		s.shrinkLocked()
		return
	}
	s.m[k] = next
	s.peak = max(s.peak, len(s.m))
}

func (s *Kept[K, I, V]) put(o any) error {
	return s.apply(o, func(cur V, _ bool, it I) (V, bool, bool) {
		next, changed := s.kind.put(cur, it)
		return next, true, changed
	})
}

func (s *Kept[K, I, V]) remove(o any) error {
	return s.apply(o, func(cur V, have bool, it I) (V, bool, bool) {
		if !have {
			return cur, false, false
		}
		return s.kind.remove(cur, it)
	})
}

// apply makes the value under the object's key what change makes of it
// (have says there is one; keep false: none), and tells of a change.
func (s *Kept[K, I, V]) apply(o any, change func(cur V, have bool, it I) (next V, keep, changed bool)) error {
	k, it, ok, err := s.itemOf(o)
	if !ok {
		return err
	}
	s.mu.Lock()
	cur, have := s.m[k]
	next, keep, changed := change(cur, have, it)
	if changed {
		s.setLocked(k, next, keep)
	}
	notify := s.notifyLocked(changed)
	s.mu.Unlock()
	if notify != nil {
		notify([]K{k})
	}
	return nil
}

// notifyLocked is the function to tell of a change, nil when there is
// none or no one to tell.
func (s *Kept[K, I, V]) notifyLocked(changed bool) func([]K) {
	if !changed {
		return nil
	}
	return s.notify
}

// shrinkLocked rebuilds the map once it holds shrinkRatio times fewer keys
// than it did: a storm about many objects leaves no map of its size behind
// once they are gone.
func (s *Kept[K, I, V]) shrinkLocked() {
	if s.peak < shrinkMin || len(s.m)*shrinkRatio > s.peak {
		return
	}
	rebuilt := make(map[K]V, len(s.m))
	for k, v := range s.m {
		rebuilt[k] = v
	}
	s.m, s.peak = rebuilt, len(rebuilt)
}

func (s *Kept[K, I, V]) replace(f *keptFeed[K, I, V], list []any) error {
	fresh := map[K]V{}
	var errs []error
	for _, o := range list {
		k, it, ok, err := s.itemOf(o)
		if err != nil {
			errs = append(errs, err)
		}
		if ok && f.owns(k) {
			fresh[k], _ = s.kind.put(fresh[k], it)
		}
	}
	s.mu.Lock()
	var changed []K
	others := 0
	for k := range s.m {
		if !f.owns(k) {
			others++
		} else if _, still := fresh[k]; !still {
			changed = append(changed, k)
		}
	}
	for k, v := range fresh {
		if cur, ok := s.m[k]; !ok || !s.kind.equal(cur, v) {
			changed = append(changed, k)
		}
	}
	// A map grown one key at a time has up to twice the slots it needs
	// (Go doubles it): the next map is made of its size, which is all the
	// store holds until it grows.
	next := make(map[K]V, len(fresh)+others)
	for k, v := range fresh {
		next[k] = v
	}
	for k, v := range s.m {
		if !f.owns(k) {
			next[k] = v
		}
	}
	s.m, s.peak = next, len(next)
	var notify func([]K)
	if f.listed {
		notify = s.notifyLocked(len(changed) > 0)
	} else {
		// The first list: the reconciles wait for it (Source) and
		// read it, and no VM is woken for it.
		f.listed = true
		if s.unlisted--; s.unlisted == 0 {
			close(s.synced)
		}
	}
	s.mu.Unlock()
	if notify != nil {
		notify(changed)
	}
	return errors.Join(errs...)
}
