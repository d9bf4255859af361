package scale

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/analyze"
	"github.com/vmobs/vmobs/internal/projection"
	"github.com/vmobs/vmobs/internal/verdict"
)

// summary is what the comparison with the engine looks at: the verdict and
// reason of each layer and overall. Timestamps and messages are left out:
// they move with the clock.
type summary struct {
	Overall, ControlPlane, Node, Guest, Storage string
}

func (s summary) String() string {
	return fmt.Sprintf("overall %s, controlPlane %s, node %s, guest %s, storage %s", s.Overall, s.ControlPlane, s.Node, s.Guest, s.Storage)
}

func summarize(st *v1alpha1.VMObservationStatus) summary {
	if st == nil || st.Layers == nil {
		return summary{}
	}
	l := func(x v1alpha1.LayerStatus) string { return string(x.Verdict) + "/" + x.Reason }
	return summary{
		Overall:      string(st.Verdict) + "/" + st.Reason,
		ControlPlane: l(st.Layers.ControlPlane),
		Node:         l(st.Layers.Node),
		Guest:        l(st.Layers.Guest),
		Storage:      l(st.Layers.Storage),
	}
}

// expected evaluates every VM in the cluster with the engine, on a fresh
// LIST of everything the controller reads, at now, grouped the way
// `vmobs analyze` groups a dump (internal/analyze, independent of the
// controller's code). Only VMs in the namespaces keep selects are returned.
func expected(ctx context.Context, c client.Client, policy verdict.Policy, now time.Time, keep func(ns string) bool) (map[string]summary, map[string]verdict.Input, error) {
	var lists controllerLists
	for _, list := range lists.calls(ctx, c) {
		if err := list(); err != nil {
			return nil, nil, err
		}
	}
	groups := lists.groups()
	out := make(map[string]summary, len(groups))
	inputs := make(map[string]verdict.Input, len(groups))
	for _, g := range groups {
		if !keep(g.Namespace) {
			continue
		}
		in := engineInput(&g, policy, now)
		res := verdict.Evaluate(in)
		k := g.Namespace + "/" + g.Name
		out[k] = summarize(&res.Status)
		inputs[k] = in
	}
	return out, inputs, nil
}

// mismatches compares stored VMObservations with the engine's answer and
// describes the differences (the first few in full).
func mismatches(want, got map[string]summary) (int, []string) {
	var bad []string
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			bad = append(bad, k+": no VMObservation (want "+w.String()+")")
		case g != w:
			bad = append(bad, k+": got "+g.String()+", want "+w.String())
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			bad = append(bad, k+": a VMObservation without a VM")
		}
	}
	sort.Strings(bad)
	n := len(bad)
	if len(bad) > 5 {
		bad = append(bad[:5], fmt.Sprintf("... and %d more", n-5))
	}
	return n, bad
}

// listObservations reads every VMObservation in the namespaces keep selects.
func listObservations(ctx context.Context, c client.Client, keep func(ns string) bool) (map[string]summary, error) {
	var list v1alpha1.VMObservationList
	if err := c.List(ctx, &list); err != nil {
		return nil, err
	}
	out := map[string]summary{}
	for i := range list.Items {
		o := &list.Items[i]
		if keep(o.Namespace) {
			out[o.Namespace+"/"+o.Name] = summarize(&o.Status)
		}
	}
	return out, nil
}

// check is the correctness check: a fresh LIST of the VMObservations and of
// their sources, the engine run at now, and the comparison.
func check(ctx context.Context, c client.Client, policy verdict.Policy, keep func(string) bool) (int, []string, error) {
	got, err := listObservations(ctx, c, keep)
	if err != nil {
		return 0, nil, err
	}
	want, _, err := expected(ctx, c, policy, time.Now(), keep)
	if err != nil {
		return 0, nil, err
	}
	n, bad := mismatches(want, got)
	return n, bad, nil
}

// tracker follows every VMObservation through a watch of its own (a
// client separate from the manager's) and timestamps what arrives.
type tracker struct {
	wc client.WithWatch

	mu    sync.Mutex
	objs  map[string]tracked
	hook  func(key string, o *v1alpha1.VMObservation, at time.Time)
	notes []string
	// changes counts arrivals that changed a summary, by namespace prefix
	// "scale-" or "floor-".
	changes int
	// events counts the watch events (added or modified) of VMObservations
	// in the VMs' namespaces: every write that changed an object, as the
	// API server reports it.
	events int
	// goal is what waitMatch waits for, kept up to date as objects
	// arrive: rescanning thousands of objects every poll cost the harness
	// a tenth of a core at 5,000 VMs, taken from the API server it
	// measures.
	goal *goal
}

// goal is a set of wanted summaries and how many of them are not (yet)
// what the tracker holds.
type goal struct {
	want map[string]summary
	// since: only what arrived at or after it counts (zero: anything).
	since time.Time
	off   int
}

func (g *goal) matches(k string, t tracked, has bool) bool {
	w, ok := g.want[k]
	return ok && has && t.sum == w && !t.changedAt.Before(g.since)
}

// account moves the goal's count for key k going from old (had) to now
// (has).
func (g *goal) account(k string, old tracked, had bool, now tracked, has bool) {
	before, after := g.matches(k, old, had), g.matches(k, now, has)
	switch {
	case before && !after:
		g.off++
	case !before && after:
		g.off--
	}
}

type tracked struct {
	sum summary
	// changedAt is when the current summary arrived.
	changedAt time.Time
}

func newTracker(wc client.WithWatch) *tracker {
	return &tracker{wc: wc, objs: map[string]tracked{}}
}

// run lists and watches until ctx ends, re-listing when the watch expires.
func (tr *tracker) run(ctx context.Context, synced chan<- struct{}) {
	first := true
	for ctx.Err() == nil {
		var list v1alpha1.VMObservationList
		if err := tr.wc.List(ctx, &list); err != nil {
			tr.note("list: %v", err)
			time.Sleep(time.Second)
			continue
		}
		now := time.Now()
		tr.mu.Lock()
		seen := map[string]bool{}
		for i := range list.Items {
			o := &list.Items[i]
			k := o.Namespace + "/" + o.Name
			seen[k] = true
			tr.storeLocked(k, o, now)
		}
		for k := range tr.objs {
			if !seen[k] {
				tr.deleteLocked(k)
			}
		}
		tr.mu.Unlock()
		if first {
			close(synced)
			first = false
		}
		tr.watch(ctx, list.ResourceVersion)
	}
}

func (tr *tracker) watch(ctx context.Context, rv string) {
	for ctx.Err() == nil {
		w, err := tr.wc.Watch(ctx, &v1alpha1.VMObservationList{}, &client.ListOptions{Raw: &metav1.ListOptions{
			ResourceVersion: rv, AllowWatchBookmarks: true,
		}})
		if err != nil {
			tr.note("watch: %v", err)
			return
		}
		for ev := range w.ResultChan() {
			at := time.Now()
			switch ev.Type {
			case watch.Error:
				if st, ok := ev.Object.(*metav1.Status); ok && st.Code == 410 {
					w.Stop()
					return // re-list
				}
				tr.note("watch error: %v", apierrors.FromObject(ev.Object))
				w.Stop()
				return
			case watch.Bookmark:
				if o, ok := ev.Object.(*v1alpha1.VMObservation); ok {
					rv = o.ResourceVersion
				}
			case watch.Added, watch.Modified:
				o, ok := ev.Object.(*v1alpha1.VMObservation)
				if !ok {
					continue
				}
				rv = o.ResourceVersion
				k := o.Namespace + "/" + o.Name
				tr.mu.Lock()
				if isVMNamespace(o.Namespace) {
					tr.events++
				}
				tr.storeLocked(k, o, at)
				hook := tr.hook
				tr.mu.Unlock()
				if hook != nil {
					hook(k, o, at)
				}
			case watch.Deleted:
				if o, ok := ev.Object.(*v1alpha1.VMObservation); ok {
					rv = o.ResourceVersion
					tr.mu.Lock()
					tr.deleteLocked(o.Namespace + "/" + o.Name)
					tr.mu.Unlock()
				}
			}
		}
		// The server closed the watch (a timeout): go on from rv.
	}
}

func (tr *tracker) storeLocked(k string, o *v1alpha1.VMObservation, at time.Time) {
	s := summarize(&o.Status)
	old, had := tr.objs[k]
	if had && old.sum == s {
		return
	}
	now := tracked{sum: s, changedAt: at}
	tr.objs[k] = now
	tr.changes++
	if tr.goal != nil {
		tr.goal.account(k, old, had, now, true)
	}
}

func (tr *tracker) deleteLocked(k string) {
	old, had := tr.objs[k]
	if !had {
		return
	}
	delete(tr.objs, k)
	if tr.goal != nil {
		tr.goal.account(k, old, true, tracked{}, false)
	}
}

func (tr *tracker) note(format string, a ...any) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if len(tr.notes) < 20 {
		tr.notes = append(tr.notes, fmt.Sprintf(format, a...))
	}
}

func (tr *tracker) setHook(h func(key string, o *v1alpha1.VMObservation, at time.Time)) {
	tr.mu.Lock()
	tr.hook = h
	tr.mu.Unlock()
}

// changeCount is the number of summary changes seen so far.
func (tr *tracker) changeCount() int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.changes
}

// eventCount is the number of watch events of VMObservations in the VMs'
// namespaces so far.
func (tr *tracker) eventCount() int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.events
}

// offFrom is how many of the VMObservations named in want do not carry the
// wanted summary now.
func (tr *tracker) offFrom(want map[string]summary) int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	_, missing, wrong, _ := tr.matchStateLocked(&goal{want: want})
	return missing + wrong
}

// count is the number of VMObservations in namespaces keep selects.
func (tr *tracker) count(keep func(string) bool) int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	n := 0
	for k := range tr.objs {
		if ns, _, _ := strings.Cut(k, "/"); keep(ns) {
			n++
		}
	}
	return n
}

// waitMatch waits until the VMObservations named in want (after mapping
// their keys with rename, when set) carry the wanted summaries and returns
// when the last of them arrived. It fails after timeout, describing what is
// still off.
func (tr *tracker) waitMatch(ctx context.Context, want map[string]summary, rename func(string) string, timeout time.Duration) (time.Time, error) {
	return tr.waitMatchSince(ctx, want, rename, time.Time{}, timeout)
}

// waitMatchSince is waitMatch counting only what arrived at or after since:
// objects deleted under a running manager may still be in the tracker with
// the wanted summary when the wait begins.
func (tr *tracker) waitMatchSince(ctx context.Context, want map[string]summary, rename func(string) string, since time.Time, timeout time.Duration) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	g := &goal{want: make(map[string]summary, len(want)), since: since}
	for k, w := range want {
		if rename != nil {
			k = rename(k)
		}
		g.want[k] = w
	}
	tr.mu.Lock()
	if tr.goal != nil {
		tr.mu.Unlock()
		return time.Time{}, fmt.Errorf("waitMatch: another wait is running")
	}
	_, missing, wrong, _ := tr.matchStateLocked(g)
	g.off = missing + wrong
	tr.goal = g
	tr.mu.Unlock()
	defer func() {
		tr.mu.Lock()
		tr.goal = nil
		tr.mu.Unlock()
	}()
	for {
		// The count is kept as objects arrive; a poll only reads it.
		tr.mu.Lock()
		off := g.off
		tr.mu.Unlock()
		if off == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			// One full scan confirms the count and finds the last arrival.
			tr.mu.Lock()
			last, missing, wrong, example := tr.matchStateLocked(g)
			if off == 0 && missing+wrong > 0 {
				// The scan is the truth; a kept count that drifted
				// would be a harness bug, which the notes show.
				g.off = missing + wrong
				if len(tr.notes) < 20 {
					tr.notes = append(tr.notes, fmt.Sprintf("waitMatch: kept count 0, scan %d off", g.off))
				}
				tr.mu.Unlock()
				continue
			}
			tr.mu.Unlock()
			if missing == 0 && wrong == 0 {
				return last, nil
			}
			return time.Time{}, fmt.Errorf("not converged after %s: %d missing, %d not as the engine says (e.g. %s)", timeout, missing, wrong, example)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// matchStateLocked compares the tracker with want (keys as the tracker
// names them).
func (tr *tracker) matchStateLocked(g *goal) (last time.Time, missing, wrong int, example string) {
	for k, w := range g.want {
		got, ok := tr.objs[k]
		if ok && got.changedAt.Before(g.since) {
			ok = false // the object that was there before
		}
		switch {
		case !ok:
			missing++
			if example == "" {
				example = k + " missing"
			}
		case got.sum != w:
			wrong++
			if example == "" {
				example = k + ": " + got.sum.String() + ", want " + w.String()
			}
		default:
			if got.changedAt.After(last) {
				last = got.changedAt
			}
		}
	}
	return last, missing, wrong, example
}

// waitGone waits until no VMObservation is left in the namespaces keep
// selects.
func (tr *tracker) waitGone(ctx context.Context, keep func(string) bool, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for tr.count(keep) > 0 {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%d VMObservations still there after %s", tr.count(keep), timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

// deleteObservations deletes every VMObservation in the namespaces.
func deleteObservations(ctx context.Context, c client.Client, namespaces []string) error {
	for _, ns := range namespaces {
		if err := c.DeleteAllOf(ctx, &v1alpha1.VMObservation{}, client.InNamespace(ns)); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting the VMObservations of %s: %w", ns, err)
		}
	}
	return nil
}

func isVMNamespace(ns string) bool    { return strings.HasPrefix(ns, "scale-") }
func isFloorNamespace(ns string) bool { return strings.HasPrefix(ns, "floor-") }

// controllerLists are what the controller's informers list: VMs, VMIs,
// migrations, nodes and the launcher pods.
type controllerLists struct {
	vms   kubevirtv1.VirtualMachineList
	vmis  kubevirtv1.VirtualMachineInstanceList
	migs  kubevirtv1.VirtualMachineInstanceMigrationList
	nodes corev1.NodeList
	pods  corev1.PodList
	// The storage layer's kinds, as the manager's storage stores and its
	// StorageClasses' informer list them (cachestore.NewStorageStores,
	// cachestore.OpenStorage): Warning Events only.
	pvcs    corev1.PersistentVolumeClaimList
	classes storagev1.StorageClassList
	vas     storagev1.VolumeAttachmentList
	dvs     unstructured.UnstructuredList
	events  corev1.EventList
}

// calls returns one LIST a kind into l, each independent of the others, so
// that they may run in parallel as the informers start.
func (l *controllerLists) calls(ctx context.Context, c client.Reader) []func() error {
	l.dvs.SetGroupVersionKind(projection.DataVolumeGVK.GroupVersion().WithKind(projection.DataVolumeGVK.Kind + "List"))
	return []func() error{
		func() error { return c.List(ctx, &l.vms) },
		func() error { return c.List(ctx, &l.vmis) },
		func() error { return c.List(ctx, &l.migs) },
		func() error { return c.List(ctx, &l.nodes) },
		func() error { return c.List(ctx, &l.pods, client.MatchingLabels{kubevirtv1.AppLabel: "virt-launcher"}) },
		func() error { return c.List(ctx, &l.pvcs) },
		func() error { return c.List(ctx, &l.classes) },
		func() error { return c.List(ctx, &l.vas) },
		func() error { return c.List(ctx, &l.dvs) },
		func() error {
			return c.List(ctx, &l.events, client.MatchingFields{"type": corev1.EventTypeWarning})
		},
	}
}

// groups groups the listed objects by VM, as `vmobs analyze` does.
func (l *controllerLists) groups() []analyze.VMGroup {
	var objs analyze.Objects
	addAll(&objs, l.vms.Items)
	addAll(&objs, l.vmis.Items)
	addAll(&objs, l.migs.Items)
	addAll(&objs, l.pods.Items)
	addAll(&objs, l.nodes.Items)
	addAll(&objs, l.pvcs.Items)
	addAll(&objs, l.classes.Items)
	addAll(&objs, l.vas.Items)
	addAll(&objs, l.dvs.Items)
	addAll(&objs, l.events.Items)
	groups, _ := analyze.GroupVMs(objs)
	return groups
}

// engineInput is the engine's input for a group of the controller's lists,
// as the controller gathers it. The group's Uncaptured is left out: the
// lists read every kind, so a kind with no object here has none in the
// cluster.
func engineInput(g *analyze.VMGroup, policy verdict.Policy, now time.Time) verdict.Input {
	return verdict.Input{
		Namespace: g.Namespace, Name: g.Name, VM: g.VM, VMI: g.VMI,
		Migrations: g.Migrations, Pods: g.Pods, Nodes: g.Nodes, Storage: g.Storage, Policy: policy, Now: now,
	}
}

// addAll adds a pointer to each item to objs.
func addAll[T any](objs *analyze.Objects, items []T) {
	for i := range items {
		objs.Add(&items[i])
	}
}
