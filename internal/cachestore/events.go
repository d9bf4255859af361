package cachestore

import (
	"fmt"
	"hash/fnv"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/vmobs/vmobs/internal/projection"
	"github.com/vmobs/vmobs/internal/storagefacts"
)

// warningEvents selects the events the store lists and watches: Warnings
// only.
var warningEvents = fields.OneTermEqualSelector("type", corev1.EventTypeWarning)

// EventObject names the object an event is about (its involvedObject): the
// key under which Events keeps its events.
type EventObject struct {
	Namespace, Kind, Name string
}

// Events is the controller's store of the Warning Events the storage rules
// read: for each involved object, the newest storagefacts.MaxEvents of the
// events a rule reads (storagefacts.Read, in storagefacts.Newer's order),
// as their facts, and nothing else (a Kept store).
//
// It is no informer. An informer keeps every event alive in the cluster as
// an object of its store; the rules read three an object at most, and a
// storm of events about few objects grew the heap by 1.1 KB an event until
// the API server's event TTL removed them (docs/scale.md, finding 28).
// Here a storm about few objects costs nothing more, one about many objects
// three events an object, and an event no rule reads nothing at all.
//
// The reconciles make it forget what no rule can read again (Forget,
// verdict.UnreadEvents): most of a healthy fleet's events.
//
// An event that drops out of an object's newest three is forgotten: should
// a newer one be deleted before it, it does not come back (the API server
// expires events by their last write, the older first, so this is a
// deletion by hand).
type Events struct {
	*Kept[EventObject, keptEvent, []keptEvent]
}

// eventFeed is the Reflector's store of one namespace's events.
type eventFeed = keptFeed[EventObject, keptEvent, []keptEvent]

// keptEvent is an event kept: its facts, and its name's hash, by which an
// update or a deletion of the event finds it.
type keptEvent struct {
	id uint64
	storagefacts.Event
}

// newEvents is the store fed by a Reflector of each ListerWatcher, by the
// namespace it lists ("" for all).
func newEvents(lws map[string]toolscache.ListerWatcher) *Events {
	return &Events{newKept(keptKind[EventObject, keptEvent, []keptEvent]{
		name: "warning events", expected: &corev1.Event{}, item: eventOf,
		put: keep,
		remove: func(kept []keptEvent, k keptEvent) ([]keptEvent, bool, bool) {
			left, changed := without(kept, k.id)
			return left, len(left) > 0, changed
		},
		equal:     slices.Equal[[]keptEvent],
		namespace: func(o EventObject) string { return o.Namespace },
	}, lws)}
}

// AppendOf appends to dst the events kept about the object, newest first.
func (e *Events) AppendOf(dst []storagefacts.Event, namespace, kind, name string) []storagefacts.Event {
	kept, _ := e.Get(EventObject{Namespace: namespace, Kind: kind, Name: name})
	for _, k := range kept {
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
	e.update(EventObject{Namespace: namespace, Kind: u.Kind, Name: u.Name}, func(kept []keptEvent) ([]keptEvent, bool, bool) {
		left, changed := dropped(kept, func(k keptEvent) bool { return u.Covers(k.Event) })
		return left, len(left) > 0, changed
	})
}

// Len is how many objects and events the store holds.
func (e *Events) Len() (objects, events int) {
	e.Kept.Range(func(_ EventObject, kept []keptEvent) {
		objects++
		events += len(kept)
	})
	return objects, events
}

// Range calls f with each object and its events, newest first, under the
// store's lock: f must neither keep nor change the slice, nor call the
// store.
func (e *Events) Range(f func(EventObject, []storagefacts.Event)) {
	evs := make([]storagefacts.Event, 0, storagefacts.MaxEvents)
	e.Kept.Range(func(o EventObject, kept []keptEvent) {
		evs = evs[:0]
		for _, k := range kept {
			evs = append(evs, k.Event)
		}
		f(o, evs)
	})
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
