package cachestore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/vmobs/vmobs/internal/projection"
	"github.com/vmobs/vmobs/internal/storagefacts"
)

var eventsNow = time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)

// warning is a Warning Event about the object ns/kind/obj, last seen ago
// before eventsNow; a reason no rule reads on a pod (Unhealthy) makes an
// event the store must drop.
func warning(ns, name, kind, obj, reason string, ago time.Duration) *corev1.Event {
	last := metav1.NewTime(eventsNow.Add(-ago))
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: name, Namespace: ns, ResourceVersion: "1"},
		Type:           corev1.EventTypeWarning,
		InvolvedObject: corev1.ObjectReference{Kind: kind, Name: obj, Namespace: ns},
		Reason:         reason, Message: reason + " of " + obj, Source: corev1.EventSource{Component: "kubelet"},
		Count: 1, FirstTimestamp: last, LastTimestamp: last,
	}
}

// fold is today's fold of events about one object, the reference: the
// facts of those a rule reads, newest MaxEvents (storagefacts.Newest).
func fold(evs []*corev1.Event) []storagefacts.Event {
	var out []storagefacts.Event
	for _, e := range evs {
		if p := projection.FromEvent(e); p.Relevant() {
			out = append(out, *p.F)
		}
	}
	return storagefacts.Newest(out)
}

// held is what the store keeps about the object.
func held(e *Events, o EventObject) []storagefacts.Event {
	return e.AppendOf(nil, o.Namespace, o.Kind, o.Name)
}

func mustPut(t *testing.T, e *Events, evs ...*corev1.Event) {
	t.Helper()
	for _, ev := range evs {
		if err := e.put(ev); err != nil {
			t.Fatal(err)
		}
	}
}

// TestEventsStorm: a storm of 10,000 events keeps at most MaxEvents an
// object, the newest, with the facts today's fold gives; about 10 objects
// that is 30 events, about 5,000 at most three each; events no rule reads
// (a pod's probe failures, Normal events never come: the field selector)
// keep nothing.
func TestEventsStorm(t *testing.T) {
	reasons := []string{storagefacts.ReasonFailedMount, storagefacts.ReasonFailedAttachVolume, storagefacts.ReasonFailedMapVolume, "Unhealthy"}
	for _, objects := range []int{10, 5000} {
		t.Run(fmt.Sprintf("%d objects", objects), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(objects)))
			e := newEvents(nil)
			byObject := map[EventObject][]*corev1.Event{}
			for i := range 10000 {
				o := EventObject{Namespace: "ns", Kind: storagefacts.KindPod, Name: fmt.Sprintf("virt-launcher-vm%d-abcde", rng.IntN(objects))}
				// Seconds apart, so that the order is by time alone.
				ev := warning(o.Namespace, fmt.Sprintf("ev-%d", i), o.Kind, o.Name, reasons[rng.IntN(len(reasons))], time.Duration(rng.IntN(100000))*time.Second)
				mustPut(t, e, ev)
				byObject[o] = append(byObject[o], ev)
			}
			objs, kept := e.Len()
			want := 0
			for o, evs := range byObject {
				w := fold(evs)
				want += len(w)
				if got := held(e, o); !slices.Equal(got, w) {
					t.Fatalf("%v keeps\n%+v\nwant today's fold\n%+v", o, got, w)
				}
				if len(w) > storagefacts.MaxEvents {
					t.Fatalf("%v: %d events", o, len(w))
				}
			}
			if kept != want || objs > objects {
				t.Errorf("kept %d events about %d objects, want %d about at most %d", kept, objs, want, objects)
			}
			if objects == 10 && kept != 10*storagefacts.MaxEvents {
				t.Errorf("a storm about 10 objects keeps %d events, want %d", kept, 10*storagefacts.MaxEvents)
			}
		})
	}
}

// TestEventsNewest: the order is today's fold's (storagefacts.Newer): the
// last seen of lastTimestamp, of a series' last observed time, or of
// eventTime for events.k8s.io writers, then the reason; a repeat of an
// event (count and last seen moved) takes its new place, and one older
// than the three kept changes nothing.
func TestEventsNewest(t *testing.T) {
	ns, pod := "ns", "virt-launcher-vm-x"
	o := EventObject{Namespace: ns, Kind: storagefacts.KindPod, Name: pod}
	mount := func(name string, ago time.Duration) *corev1.Event {
		return warning(ns, name, storagefacts.KindPod, pod, storagefacts.ReasonFailedMount, ago)
	}
	series := mount("series", time.Hour)
	series.Series = &corev1.EventSeries{Count: 7, LastObservedTime: metav1.NewMicroTime(eventsNow.Add(-time.Second))}
	modern := mount("modern", 0)
	modern.FirstTimestamp, modern.LastTimestamp = metav1.Time{}, metav1.Time{}
	modern.EventTime = metav1.NewMicroTime(eventsNow.Add(-2 * time.Second))
	attach := warning(ns, "attach", storagefacts.KindPod, pod, storagefacts.ReasonFailedAttachVolume, 3*time.Second)
	tie := warning(ns, "tie", storagefacts.KindPod, pod, storagefacts.ReasonFailedAttachVolume, time.Second)
	old := mount("old", 10*time.Minute)

	var notified []EventObject
	e := newEvents(nil)
	e.notify = func(objs []EventObject) { notified = append(notified, objs...) }
	all := []*corev1.Event{old, attach, modern, series, tie}
	mustPut(t, e, all...)
	want := fold(all)
	if got := held(e, o); !slices.Equal(got, want) {
		t.Fatalf("kept %+v, want %+v", got, want)
	}
	// series (1s ago, 7 times) and tie (1s ago) tie on time:
	// FailedAttachVolume comes before FailedMount; then modern (2s).
	if names := reasonsAndCounts(held(e, o)); !slices.Equal(names, []string{"FailedAttachVolume/1", "FailedMount/7", "FailedMount/1"}) {
		t.Errorf("kept %v", names)
	}
	if got := held(e, o)[2].Last; !got.Equal(eventsNow.Add(-2 * time.Second)) {
		t.Errorf("the events.k8s.io event was last seen %v, want its eventTime", got)
	}

	// The old event repeats: it is the newest now.
	notified = nil
	again := old.DeepCopy()
	again.Count, again.LastTimestamp, again.ResourceVersion = 2, metav1.NewTime(eventsNow), "2"
	mustPut(t, e, again)
	if got := held(e, o); got[0].Reason != storagefacts.ReasonFailedMount || got[0].Count != 2 || len(got) != storagefacts.MaxEvents {
		t.Errorf("after a repeat of the old event, kept %v", reasonsAndCounts(got))
	}
	if !slices.Equal(notified, []EventObject{o}) {
		t.Errorf("a repeat woke %v, want %v", notified, o)
	}

	// An event older than the three kept, and one put again unchanged,
	// change nothing and wake nothing.
	notified = nil
	before := held(e, o)
	mustPut(t, e, mount("older", 2*time.Hour), again)
	if got := held(e, o); !slices.Equal(got, before) || len(notified) != 0 {
		t.Errorf("kept %v (woke %v), want %v unchanged", reasonsAndCounts(got), notified, reasonsAndCounts(before))
	}
}

func reasonsAndCounts(evs []storagefacts.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, fmt.Sprintf("%s/%d", e.Reason, e.Count))
	}
	return out
}

// TestEventsFacts: an event kept has exactly the facts its projection
// has (what the controller's cache held before), the involved object's
// kind and name included, and only events a rule reads are kept.
func TestEventsFacts(t *testing.T) {
	long := make([]byte, 2*storagefacts.MaxMessage)
	for i := range long {
		long[i] = 'x'
	}
	evs := []*corev1.Event{
		warning("ns", "a", storagefacts.KindPVC, "claim", storagefacts.ReasonProvisioningFailed, time.Minute),
		warning("ns", "b", storagefacts.KindDataVolume, "dv", "ImportError", time.Minute),
		warning("ns", "c", storagefacts.KindPod, "virt-launcher-vm-x", storagefacts.ReasonFailedMapVolume, time.Minute),
		warning("ns", "d", storagefacts.KindVMI, "vm", "SyncFailed", time.Minute),
		warning("ns", "e", storagefacts.KindPVC, "claim", "ErrImportFailed", time.Minute),
		warning("ns", "f", storagefacts.KindPod, "virt-launcher-vm-x", "FailedScheduling", time.Minute),
	}
	evs[0].Message = string(long)
	evs[1].Source, evs[1].ReportingController = corev1.EventSource{}, "cdi-controller"
	e := newEvents(nil)
	mustPut(t, e, evs...)
	for _, ev := range evs {
		o := EventObject{Namespace: ev.Namespace, Kind: ev.InvolvedObject.Kind, Name: ev.InvolvedObject.Name}
		got := held(e, o)
		p := projection.FromEvent(ev)
		if !p.Relevant() {
			if slices.ContainsFunc(got, func(f storagefacts.Event) bool { return f.Reason == ev.Reason }) {
				t.Errorf("%s %s about %v is kept: no rule reads it", ev.Name, ev.Reason, o)
			}
			continue
		}
		if len(got) != 1 || got[0] != *p.F {
			t.Errorf("%s about %v keeps %+v, want its projection's facts %+v", ev.Name, o, got, *p.F)
		}
	}
	if objs, kept := e.Len(); objs != 3 || kept != 3 {
		t.Errorf("%d events about %d objects, want 3 about 3", kept, objs)
	}
}

// TestEventsDelete: a deleted event leaves the store, an object without
// events leaves the map, and the map is rebuilt once a storm about many
// objects has gone (Go maps never shrink).
func TestEventsDelete(t *testing.T) {
	e := newEvents(nil)
	var notified []EventObject
	e.notify = func(objs []EventObject) { notified = append(notified, objs...) }
	claim := EventObject{Namespace: "ns", Kind: storagefacts.KindPVC, Name: "claim"}
	a := warning("ns", "a", claim.Kind, claim.Name, storagefacts.ReasonProvisioningFailed, time.Minute)
	b := warning("ns", "b", claim.Kind, claim.Name, storagefacts.ReasonProvisioningFailed, 2*time.Minute)
	mustPut(t, e, a, b)
	notified = nil
	if err := e.remove(a); err != nil {
		t.Fatal(err)
	}
	if got := held(e, claim); len(got) != 1 || got[0].Last != b.LastTimestamp.Time || !slices.Equal(notified, []EventObject{claim}) {
		t.Errorf("after deleting a: %+v, woke %v", got, notified)
	}
	// A deletion of what is not kept wakes nothing.
	notified = nil
	for _, gone := range []*corev1.Event{a, warning("ns", "c", claim.Kind, claim.Name, "Unread", 0)} {
		if err := e.remove(gone); err != nil {
			t.Fatal(err)
		}
	}
	if len(notified) != 0 {
		t.Errorf("deleting events not kept woke %v", notified)
	}
	if err := e.remove(toolscache.DeletedFinalStateUnknown{Key: "ns/b", Obj: b}); err != nil {
		t.Fatal(err)
	}
	if objs, kept := e.Len(); objs != 0 || kept != 0 {
		t.Errorf("after deleting every event: %d events about %d objects", kept, objs)
	}
	if err := e.put("not an event"); err == nil {
		t.Error("putting a string: no error")
	}

	// A storm about 5,000 objects, then its events expire.
	var storm []*corev1.Event
	for i := range 5000 {
		storm = append(storm, warning("ns", fmt.Sprintf("s%d", i), storagefacts.KindDataVolume, fmt.Sprintf("dv%d", i), "ImportError", time.Minute))
	}
	mustPut(t, e, storm...)
	if e.peak != 5000 {
		t.Fatalf("peak %d, want 5000", e.peak)
	}
	for _, ev := range storm[:4900] {
		if err := e.remove(ev); err != nil {
			t.Fatal(err)
		}
	}
	if objs, _ := e.Len(); objs != 100 || e.peak > 5000/shrinkRatio {
		t.Errorf("after the storm: %d objects, the map built for %d; want 100, rebuilt", objs, e.peak)
	}
}

// TestEventsReplace: a relist leaves what the list says, neither losing an
// event nor keeping one twice, and wakes the objects whose events it
// changed; the first list wakes none and ends the wait of Source's
// WaitForSync; a namespace's list leaves other namespaces' events alone.
func TestEventsReplace(t *testing.T) {
	e := newEvents(map[string]toolscache.ListerWatcher{"a": nil, "b": nil})
	var notified []EventObject
	e.notify = func(objs []EventObject) { notified = append(notified, objs...) }
	feed := map[string]*eventFeed{}
	for _, f := range e.feeds {
		feed[f.namespace] = f
	}
	pvc := func(ns, name, claim string, ago time.Duration) *corev1.Event {
		return warning(ns, name, storagefacts.KindPVC, claim, storagefacts.ReasonProvisioningFailed, ago)
	}
	obj := func(ns, claim string) EventObject {
		return EventObject{Namespace: ns, Kind: storagefacts.KindPVC, Name: claim}
	}
	src := e.Source(nil)
	expired, cancel := context.WithCancel(context.Background())
	cancel()
	if err := src.WaitForSync(expired); err != nil {
		t.Errorf("WaitForSync stopped: %v", err)
	}

	a1, a2, a3 := pvc("a", "a1", "c1", time.Minute), pvc("a", "a2", "c1", 2*time.Minute), pvc("a", "a3", "c2", time.Minute)
	if err := feed["a"].Replace([]any{a1, a2, a3, projection.FromEvent(pvc("a", "a4", "c3", 0))}, "1"); err != nil {
		t.Fatal(err)
	}
	if e.HasSynced() {
		t.Error("synced with namespace b not listed")
	}
	b1 := pvc("b", "b1", "c1", time.Minute)
	if err := feed["b"].Replace([]any{b1}, "1"); err != nil {
		t.Fatal(err)
	}
	if !e.HasSynced() || src.WaitForSync(context.Background()) != nil {
		t.Error("not synced after both lists")
	}
	if len(notified) != 0 {
		t.Errorf("the first lists woke %v", notified)
	}
	// A streamed list hands projections over (Transformer): c3's event
	// came so.
	if got := held(e, obj("a", "c3")); len(got) != 1 {
		t.Errorf("c3: %+v", got)
	}

	// The watch expired; meanwhile a2 was deleted, c2 got a new event,
	// c3's expired, c4 got one. The same list twice changes nothing the
	// second time.
	a5, a6 := pvc("a", "a5", "c2", 0), pvc("a", "a6", "c4", 0)
	for range 2 {
		notified = nil
		if err := feed["a"].Replace([]any{a1, a3, a5, a6}, "2"); err != nil {
			t.Fatal(err)
		}
	}
	if len(notified) != 0 {
		t.Errorf("the same list again woke %v", notified)
	}
	if err := feed["a"].Replace([]any{a1, a2, a3, pvc("a", "a4", "c3", 0)}, "3"); err != nil {
		t.Fatal(err)
	}
	notified = nil
	if err := feed["a"].Replace([]any{a1, a3, a5, a6}, "4"); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(notified, func(x, y EventObject) int { return strings.Compare(x.Name, y.Name) })
	if want := []EventObject{obj("a", "c1"), obj("a", "c2"), obj("a", "c3"), obj("a", "c4")}; !slices.Equal(notified, want) {
		t.Errorf("the relist woke %v, want %v", notified, want)
	}
	for o, evs := range map[EventObject][]*corev1.Event{
		obj("a", "c1"): {a1}, obj("a", "c2"): {a3, a5}, obj("a", "c3"): nil, obj("a", "c4"): {a6}, obj("b", "c1"): {b1},
	} {
		if got, want := held(e, o), fold(evs); !slices.Equal(got, want) {
			t.Errorf("%v after the relist: %+v, want %+v", o, got, want)
		}
	}
	if objs, kept := e.Len(); objs != 4 || kept != 5 {
		t.Errorf("%d events about %d objects, want 5 about 4", kept, objs)
	}
}

// fakeEvents is a ListerWatcher of Warning Events: its list, then its
// watch, which the test drives.
type fakeEvents struct {
	list  []corev1.Event
	watch *watch.FakeWatcher
}

func (f *fakeEvents) List(metav1.ListOptions) (runtime.Object, error) {
	return &corev1.EventList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: f.list}, nil
}

func (f *fakeEvents) Watch(metav1.ListOptions) (watch.Interface, error) { return f.watch, nil }

// IsWatchListSemanticsUnSupported makes the Reflector list, then watch.
func (f *fakeEvents) IsWatchListSemanticsUnSupported() bool { return true }

// TestEventsSource runs the store as the manager does, a Reflector into
// it, and the controller's source on it: the reconciles wait for the
// list, which wakes no VM; a new event, a repeat and a deletion each wake
// the VM of the object they are about, an event no rule reads none.
func TestEventsSource(t *testing.T) {
	lw := &fakeEvents{
		list:  []corev1.Event{*warning("ns", "listed", storagefacts.KindPVC, "claim", storagefacts.ReasonProvisioningFailed, time.Hour)},
		watch: watch.NewFake(),
	}
	e := newEvents(map[string]toolscache.ListerWatcher{"": lw})
	toVM := func(_ context.Context, o EventObject) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.Namespace, Name: o.Kind + "/" + o.Name}}}
	}
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src := e.Source(toVM)
	if err := src.Start(ctx, q); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = e.Start(ctx)
	}()
	if err := src.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	if q.Len() != 0 {
		t.Errorf("the list woke %d VMs", q.Len())
	}
	claim := EventObject{Namespace: "ns", Kind: storagefacts.KindPVC, Name: "claim"}
	if got := held(e, claim); len(got) != 1 {
		t.Fatalf("listed: %+v", got)
	}
	next := func(what string) reconcile.Request {
		t.Helper()
		r, shutdown := q.Get()
		if shutdown {
			t.Fatalf("%s: the queue shut down", what)
		}
		q.Done(r)
		return r
	}
	wantClaim := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "PersistentVolumeClaim/claim"}}
	pod := warning("ns", "unread", storagefacts.KindPod, "virt-launcher-vm-x", "Unhealthy", 0)
	fresh := warning("ns", "fresh", storagefacts.KindPVC, "claim", storagefacts.ReasonProvisioningFailed, 0)
	// The unread event comes first: had it woken a VM, that VM would
	// be the first in the queue.
	lw.watch.Add(pod)
	lw.watch.Add(fresh)
	if r := next("a new event"); r != wantClaim {
		t.Errorf("a new event woke %v, want %v", r, wantClaim)
	}
	repeat := fresh.DeepCopy()
	repeat.Count, repeat.ResourceVersion = 2, "3"
	lw.watch.Modify(repeat)
	if r := next("a repeat"); r != wantClaim {
		t.Errorf("a repeat woke %v", r)
	}
	lw.watch.Delete(repeat)
	if r := next("a deletion"); r != wantClaim {
		t.Errorf("a deletion woke %v", r)
	}
	if got := held(e, claim); len(got) != 1 || got[0].Last != lw.list[0].LastTimestamp.Time {
		t.Errorf("after the deletion: %+v, want the listed event", got)
	}
	cancel()
	<-done
}

// TestEventsSourceAt: the requests of a source made with a priority come
// at that priority on a priority queue; a VM already queued at a higher
// one keeps it.
func TestEventsSourceAt(t *testing.T) {
	e := newEvents(nil)
	toVM := func(_ context.Context, o EventObject) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.Namespace, Name: o.Name}}}
	}
	q := priorityqueue.New[reconcile.Request]("events-source-at")
	defer q.ShutDown()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := e.SourceAt(-50, toVM).Start(ctx, q); err != nil {
		t.Fatal(err)
	}
	mustPut(t, e, warning("ns", "mount", storagefacts.KindPod, "quiet", storagefacts.ReasonFailedMount, time.Minute))
	if r, prio, _ := q.GetWithPriority(); r.Name != "quiet" || prio != -50 {
		t.Errorf("got %v at priority %d, want quiet at -50", r, prio)
	} else {
		q.Done(r)
	}
	busy := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "busy"}}
	q.Add(busy)
	mustPut(t, e, warning("ns", "attach", storagefacts.KindPod, "busy", storagefacts.ReasonFailedAttachVolume, time.Minute))
	if r, prio, _ := q.GetWithPriority(); r != busy || prio != 0 {
		t.Errorf("got %v at priority %d, want busy at its own 0", r, prio)
	}
}

// TestEventsForget: the events no rule reads again leave the store,
// silently; an object left without events leaves the map.
func TestEventsForget(t *testing.T) {
	e := newEvents(nil)
	var notified []EventObject
	e.notify = func(objs []EventObject) { notified = append(notified, objs...) }
	pod := EventObject{Namespace: "ns", Kind: storagefacts.KindPod, Name: "virt-launcher-vm-x"}
	claim := EventObject{Namespace: "ns", Kind: storagefacts.KindPVC, Name: "claim"}
	mustPut(t, e,
		warning("ns", "mount", pod.Kind, pod.Name, storagefacts.ReasonFailedMount, time.Hour),
		warning("ns", "attach", pod.Kind, pod.Name, storagefacts.ReasonFailedAttachVolume, time.Minute),
		warning("ns", "provisioning", claim.Kind, claim.Name, storagefacts.ReasonProvisioningFailed, time.Hour))
	notified = nil
	// The pod turned Ready ten minutes ago; the claim is Bound; another
	// namespace's claim of that name is none of these.
	e.Forget("ns", storagefacts.Unread{Kind: pod.Kind, Name: pod.Name, Before: eventsNow.Add(-10 * time.Minute)})
	e.Forget("ns", storagefacts.Unread{Kind: claim.Kind, Name: claim.Name, All: true})
	e.Forget("other", storagefacts.Unread{Kind: claim.Kind, Name: claim.Name, All: true})
	if got := held(e, pod); len(got) != 1 || got[0].Reason != storagefacts.ReasonFailedAttachVolume {
		t.Errorf("the pod keeps %v, want the FailedAttachVolume after its readiness changed", reasonsAndCounts(got))
	}
	if objs, kept := e.Len(); objs != 1 || kept != 1 || len(notified) != 0 {
		t.Errorf("%d events about %d objects (woke %v), want 1 about the pod, none woken", kept, objs, notified)
	}
}
