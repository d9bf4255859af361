package cachestore

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net/http"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/vmobs/vmobs/internal/projection"
	"github.com/vmobs/vmobs/internal/storagefacts"
)

// warningEvents selects the events the store lists and watches: Warnings
// only, which the API server filters (type is a field selector of events).
var warningEvents = fields.OneTermEqualSelector("type", corev1.EventTypeWarning)

// EventObject names the object an event is about (its involvedObject): the
// key under which Events keeps its events.
type EventObject struct {
	Namespace, Kind, Name string
}

// Events is the controller's store of the Warning Events the storage rules
// read: for each involved object, the newest storagefacts.MaxEvents of the
// events a rule reads (storagefacts.Read, in storagefacts.Newer's order),
// as their facts, and nothing else.
//
// It is no informer. An informer keeps every event alive in the cluster as
// an object of its store, with its key, its index entries, its DeltaFIFO's
// and notification buffer's share; the rules read three an object at
// most, and a storm of events about few objects grew the heap by 1.1 KB an
// event until the API server's event TTL removed them (docs/scale.md,
// finding 28). Here a client-go Reflector lists and watches the Warning
// Events of each namespace straight into the store (a feed, the
// Reflector's store), which keeps three events an object: a storm about few
// objects costs nothing more, one about many objects three events an
// object, and an event no rule reads nothing at all.
//
// The reconciles make it forget what no rule can read again (Forget,
// verdict.UnreadEvents): most of a healthy fleet's events.
//
// An event that drops out of an object's newest three is forgotten: should
// a newer one be deleted before it, it does not come back (the API server
// expires events by their last write, the older first, so this is a
// deletion by hand). It is safe for concurrent use.
type Events struct {
	mu      sync.RWMutex
	objects map[EventObject][]keptEvent
	// peak is the most objects held since the map was last built: Go
	// maps never shrink, so the map is rebuilt once it holds far fewer
	// (shrinkLocked).
	peak  int
	feeds []*eventFeed
	// unlisted counts the feeds not yet listed; synced is closed when it
	// reaches 0.
	unlisted int
	synced   chan struct{}
	// notify, when set, is told the objects whose events changed after
	// their feed's first list (Source).
	notify func([]EventObject)
}

// keptEvent is an event kept: its facts, and its name's hash, by which an
// update or a deletion of the event finds it.
type keptEvent struct {
	id uint64
	storagefacts.Event
}

// shrinkMin is the fewest objects below which the map is never rebuilt,
// and shrinkRatio how many times fewer than its peak it must hold.
const (
	shrinkMin   = 1024
	shrinkRatio = 4
)

// NewEvents is the store of the Warning Events of the namespaces (all when
// none), listed and watched through cfg and httpClient (the manager's).
// Start runs it.
func NewEvents(cfg *rest.Config, httpClient *http.Client, namespaces []string) (*Events, error) {
	c, err := corev1client.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("creating the Events client: %w", err)
	}
	if len(namespaces) == 0 {
		namespaces = []string{corev1.NamespaceAll}
	}
	lws := make(map[string]toolscache.ListerWatcher, len(namespaces))
	for _, ns := range namespaces {
		lws[ns] = toolscache.NewListWatchFromClient(c.RESTClient(), "events", ns, warningEvents)
	}
	return newEvents(lws), nil
}

// newEvents is the store fed by a Reflector of each ListerWatcher, by the
// namespace it lists ("" for all).
func newEvents(lws map[string]toolscache.ListerWatcher) *Events {
	e := &Events{objects: map[EventObject][]keptEvent{}, synced: make(chan struct{})}
	for ns, lw := range lws {
		e.feeds = append(e.feeds, &eventFeed{events: e, namespace: ns, lw: lw})
	}
	e.unlisted = len(e.feeds)
	if e.unlisted == 0 {
		close(e.synced)
	}
	return e
}

// Start lists and watches the Warning Events until ctx ends: a Reflector a
// namespace, which relists after a watch it cannot resume (Replace). It is
// a manager Runnable.
func (e *Events) Start(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, f := range e.feeds {
		r := toolscache.NewReflectorWithOptions(f.lw, &corev1.Event{}, f, toolscache.ReflectorOptions{
			Name: "vmobs warning events", TypeDescription: "*v1.Event (type=Warning)",
		})
		wg.Go(func() { r.RunWithContext(ctx) })
	}
	wg.Wait()
	return nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: every
// replica keeps the events, as its cache keeps the informers' objects, so
// that a new leader reconciles at once.
func (e *Events) NeedLeaderElection() bool { return false }

// HasSynced says every namespace has been listed.
func (e *Events) HasSynced() bool {
	select {
	case <-e.synced:
		return true
	default:
		return false
	}
}

// AppendOf appends to dst the events kept about the object, newest first.
func (e *Events) AppendOf(dst []storagefacts.Event, namespace, kind, name string) []storagefacts.Event {
	e.mu.RLock()
	defer e.mu.RUnlock()
	for _, k := range e.objects[EventObject{Namespace: namespace, Kind: kind, Name: name}] {
		dst = append(dst, k.Event)
	}
	return dst
}

// Forget drops the events of namespace that u names: no rule can read
// them again (verdict.UnreadEvents), and the store need not keep what a
// healthy fleet's boots left behind. It wakes no VM: no verdict reads
// them. A relist brings them back, and the reconciles it wakes forget
// them again.
func (e *Events) Forget(namespace string, u storagefacts.Unread) {
	obj := EventObject{Namespace: namespace, Kind: u.Kind, Name: u.Name}
	e.mu.Lock()
	defer e.mu.Unlock()
	if left, changed := dropped(e.objects[obj], func(k keptEvent) bool { return u.Covers(k.Event) }); changed {
		e.setLocked(obj, left)
	}
}

// Len is how many objects and events the store holds.
func (e *Events) Len() (objects, events int) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	for _, kept := range e.objects {
		events += len(kept)
	}
	return len(e.objects), events
}

// Range calls f with each object and its events, newest first, under the
// store's lock: f must neither keep nor change the slice, nor call the
// store.
func (e *Events) Range(f func(EventObject, []storagefacts.Event)) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	evs := make([]storagefacts.Event, 0, storagefacts.MaxEvents)
	for o, kept := range e.objects {
		evs = evs[:0]
		for _, k := range kept {
			evs = append(evs, k.Event)
		}
		f(o, evs)
	}
}

// Source is a source of the requests that the objects whose events
// changed map to (toRequests), for a controller's WatchesRawSource. Its
// WaitForSync returns once every namespace has been listed, so that the
// first reconciles read the events, as they read the informers' objects;
// the first lists wake no VM (the VMs' own initial lists bring every VM),
// a relist wakes the VMs of the objects whose events it changed.
func (e *Events) Source(toRequests func(context.Context, EventObject) []reconcile.Request) source.SyncingSource {
	return &eventSource{events: e, toRequests: toRequests}
}

type eventSource struct {
	events     *Events
	toRequests func(context.Context, EventObject) []reconcile.Request
}

func (s *eventSource) Start(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	notify := func(objs []EventObject) {
		for _, o := range objs {
			for _, r := range s.toRequests(ctx, o) {
				q.Add(r)
			}
		}
	}
	s.events.mu.Lock()
	s.events.notify = notify
	s.events.mu.Unlock()
	go func() {
		<-ctx.Done()
		s.events.mu.Lock()
		s.events.notify = nil
		s.events.mu.Unlock()
	}()
	return nil
}

func (s *eventSource) WaitForSync(ctx context.Context) error {
	select {
	case <-s.events.synced:
		return nil
	case <-ctx.Done():
	}
	if errors.Is(ctx.Err(), context.Canceled) { // stopped, as source.Kind
		return nil
	}
	return fmt.Errorf("timed out waiting for the Warning Events to be listed: %w", context.Cause(ctx))
}

func (s *eventSource) String() string { return "vmobs warning events" }

// eventFeed is the Reflector's store of one namespace's events ("" for
// all): it feeds them into Events.
type eventFeed struct {
	events    *Events
	namespace string
	lw        toolscache.ListerWatcher
	// listed is set by the first Replace; under events.mu.
	listed bool
}

var (
	_ toolscache.ReflectorStore    = &eventFeed{}
	_ toolscache.TransformingStore = &eventFeed{}
)

// Add implements toolscache.ReflectorStore.
func (f *eventFeed) Add(o any) error { return f.events.put(o) }

// Update implements toolscache.ReflectorStore: a repeated event (its count
// and last seen moved) is put again.
func (f *eventFeed) Update(o any) error { return f.events.put(o) }

// Delete implements toolscache.ReflectorStore.
func (f *eventFeed) Delete(o any) error { return f.events.remove(o) }

// Replace implements toolscache.ReflectorStore: the events of the feed's
// namespace become those of list, as if the store had watched every change
// between its last list and this one.
func (f *eventFeed) Replace(list []any, _ string) error { return f.events.replace(f, list) }

// Resync implements toolscache.ReflectorStore; the store has nothing to
// resync.
func (f *eventFeed) Resync() error { return nil }

// Transformer implements toolscache.TransformingStore: a streamed initial
// list (client-go's WatchListClient) is gathered in a temporary store
// before Replace, which then holds each event as its projection, the name
// only for one no rule reads.
func (f *eventFeed) Transformer() toolscache.TransformFunc { return projection.Transform }

// owns says the object's events come from the feed.
func (f *eventFeed) owns(o EventObject) bool {
	return f.namespace == corev1.NamespaceAll || o.Namespace == f.namespace
}

// eventOf is the object and the kept event of what a Reflector hands
// over: a decoded Event or its projection (a streamed list's). ok is false
// for an event no rule reads.
func eventOf(o any) (obj EventObject, k keptEvent, ok bool, err error) {
	var ev *projection.Event
	switch x := o.(type) {
	case *corev1.Event:
		ev = projection.FromEvent(x)
	case *projection.Event:
		ev = x
	case toolscache.DeletedFinalStateUnknown:
		return eventOf(x.Obj)
	default:
		return obj, k, false, fmt.Errorf("not an Event: %T", o)
	}
	if ev == nil || !ev.Relevant() {
		return obj, k, false, nil
	}
	obj = EventObject{Namespace: ev.GetNamespace(), Kind: ev.F.Kind, Name: ev.F.Name}
	return obj, keptEvent{id: eventID(ev.GetName()), Event: *ev.F}, true, nil
}

// eventID is the hash of an event's name (its namespace is its object's).
func eventID(name string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(name))
	return h.Sum64()
}

// keep puts k among kept (newest first, at most MaxEvents), in place of the
// event of the same id, and says whether kept changed. kept is not
// changed: the result is a new slice of exact length when it differs.
func keep(kept []keptEvent, k keptEvent) ([]keptEvent, bool) {
	i := slices.IndexFunc(kept, func(x keptEvent) bool { return x.id == k.id })
	if i >= 0 && kept[i] == k {
		return kept, false
	}
	if len(kept) > 0 && kept[0].Name == k.Name {
		k.Name = kept[0].Name // one string an object
	}
	others := kept
	if i >= 0 {
		others = slices.Delete(slices.Clone(kept), i, i+1)
	}
	// After the events that come first or tie: a repeat of an order
	// keeps its place.
	at := len(others)
	for j := range others {
		if storagefacts.Newer(k.Event, others[j].Event) < 0 {
			at = j
			break
		}
	}
	if at >= storagefacts.MaxEvents {
		// Older than every event kept (a kept event that repeats is
		// never here: there are fewer than MaxEvents others).
		return kept, false
	}
	out := make([]keptEvent, 0, min(len(others)+1, storagefacts.MaxEvents))
	out = append(out, others[:at]...)
	out = append(out, k)
	return append(out, others[at:cap(out)-1]...), true
}

// without is kept without the event of id, and whether it was there.
func without(kept []keptEvent, id uint64) ([]keptEvent, bool) {
	return dropped(kept, func(x keptEvent) bool { return x.id == id })
}

// dropped is kept without the events drop names, a new slice of exact
// length, and whether there were any; kept is not changed.
func dropped(kept []keptEvent, drop func(keptEvent) bool) ([]keptEvent, bool) {
	n := len(kept)
	for _, k := range kept {
		if drop(k) {
			n--
		}
	}
	if n == len(kept) {
		return kept, false
	}
	out := make([]keptEvent, 0, n)
	for _, k := range kept {
		if !drop(k) {
			out = append(out, k)
		}
	}
	return out, true
}

// setLocked makes kept the events of obj, and forgets obj when there are
// none.
func (e *Events) setLocked(obj EventObject, kept []keptEvent) {
	if len(kept) == 0 {
		delete(e.objects, obj)
		e.shrinkLocked()
		return
	}
	e.objects[obj] = kept
}

func (e *Events) put(o any) error {
	obj, k, ok, err := eventOf(o)
	if !ok {
		return err
	}
	e.mu.Lock()
	kept, changed := keep(e.objects[obj], k)
	if changed {
		e.objects[obj] = kept
		e.peak = max(e.peak, len(e.objects))
	}
	notify := e.notifyLocked(changed)
	e.mu.Unlock()
	if notify != nil {
		notify([]EventObject{obj})
	}
	return nil
}

func (e *Events) remove(o any) error {
	obj, k, ok, err := eventOf(o)
	if !ok {
		return err
	}
	e.mu.Lock()
	kept, changed := without(e.objects[obj], k.id)
	if changed {
		e.setLocked(obj, kept)
	}
	notify := e.notifyLocked(changed)
	e.mu.Unlock()
	if notify != nil {
		notify([]EventObject{obj})
	}
	return nil
}

// notifyLocked is the function to tell of a change, nil when there is
// none or no one to tell.
func (e *Events) notifyLocked(changed bool) func([]EventObject) {
	if !changed {
		return nil
	}
	return e.notify
}

// shrinkLocked rebuilds the map once it holds shrinkRatio times fewer
// objects than it did: a storm about many objects leaves no map of its
// size behind once its events are gone.
func (e *Events) shrinkLocked() {
	if e.peak < shrinkMin || len(e.objects)*shrinkRatio > e.peak {
		return
	}
	rebuilt := make(map[EventObject][]keptEvent, len(e.objects))
	for obj, kept := range e.objects {
		rebuilt[obj] = kept
	}
	e.objects, e.peak = rebuilt, len(rebuilt)
}

func (e *Events) replace(f *eventFeed, list []any) error {
	fresh := map[EventObject][]keptEvent{}
	var errs []error
	for _, o := range list {
		obj, k, ok, err := eventOf(o)
		if err != nil {
			errs = append(errs, err)
		}
		if ok && f.owns(obj) {
			fresh[obj], _ = keep(fresh[obj], k)
		}
	}
	e.mu.Lock()
	var changed []EventObject
	for obj, kept := range fresh {
		if !slices.Equal(e.objects[obj], kept) {
			changed = append(changed, obj)
		}
	}
	next := fresh
	for obj, kept := range e.objects {
		if !f.owns(obj) {
			next[obj] = kept
		} else if _, still := fresh[obj]; !still {
			changed = append(changed, obj)
		}
	}
	e.objects, e.peak = next, len(next)
	var notify func([]EventObject)
	if f.listed {
		notify = e.notifyLocked(len(changed) > 0)
	} else {
		// The first list: the reconciles wait for it (Source) and
		// read it, and no VM is woken for it.
		f.listed = true
		if e.unlisted--; e.unlisted == 0 {
			close(e.synced)
		}
	}
	e.mu.Unlock()
	if notify != nil {
		notify(changed)
	}
	return errors.Join(errs...)
}
