package controllers

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/analyze"
	"github.com/vmobs/vmobs/internal/cachestore"
	"github.com/vmobs/vmobs/internal/kvtest"
	"github.com/vmobs/vmobs/internal/membership"
	"github.com/vmobs/vmobs/internal/scheme"
	"github.com/vmobs/vmobs/internal/testsupport"
	"github.com/vmobs/vmobs/internal/verdict"
)

// The wiring, without a control plane: a fake client with the status
// subresource, the controller's own indexes and an interceptor that counts
// writes. The suites on a real kube-apiserver (test/e2e) cover the same
// paths end to end; these run in a second.

// The world is kvtest's: vm1 in prod, its VMI running on node-a, the
// launcher pod and the node, as the engine's tables build them.
const (
	wNS     = kvtest.Namespace
	wVM     = kvtest.VMName
	wNode   = kvtest.NodeA
	wVMUID  = kvtest.VMUID
	wVMIUID = kvtest.VMIUID
)

var wNow = kvtest.Now

func wVMObj(mods ...func(*kubevirtv1.VirtualMachine)) *kubevirtv1.VirtualMachine {
	return apply(kvtest.VM(), mods)
}

func wVMIObj(mods ...func(*kubevirtv1.VirtualMachineInstance)) *kubevirtv1.VirtualMachineInstance {
	return apply(kvtest.RunningVMI(), mods)
}

func wPodObj(mods ...func(*corev1.Pod)) *corev1.Pod {
	return apply(kvtest.LauncherPod(), mods)
}

// wNodeObj carries a resourceVersion: the node fan-out tests compare it.
func wNodeObj(mods ...func(*corev1.Node)) *corev1.Node {
	return apply(kvtest.Node(wNode, func(n *corev1.Node) { n.ResourceVersion = "1" }), mods)
}

func apply[T any](obj *T, mods []func(*T)) *T {
	for _, m := range mods {
		m(obj)
	}
	return obj
}

// writeLog counts what the reconciler writes, by verb.
type writeLog struct {
	mu     sync.Mutex
	counts map[string]int
	// deletes records the preconditions of each Delete.
	deletes []*metav1.Preconditions
	// onCreate, when set, sees each Create's object and result, and may
	// change the result: what the cache delivers meanwhile.
	onCreate func(client.Object, error) error
}

func (w *writeLog) add(verb string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.counts == nil {
		w.counts = map[string]int{}
	}
	w.counts[verb]++
}

func (w *writeLog) total() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, c := range w.counts {
		n += c
	}
	return n
}

// fakeWorld is a fake client holding objs, with the status subresource,
// whose writes are counted. The reconciler reads it through a Store the
// tests fill from it before each reconcile (storeOf): the cache caught up.
func fakeWorld(t testing.TB, objs ...client.Object) (client.Client, *writeLog) {
	t.Helper()
	w := &writeLog{}
	b := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(objs...).
		WithStatusSubresource(&v1alpha1.VMObservation{})
	b = b.WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			w.add("create")
			if obj.GetUID() == "" {
				// As the API server does; the fake client leaves it empty.
				obj.SetUID(types.UID(fmt.Sprintf("uid-%s-%d", obj.GetName(), w.total())))
			}
			err := c.Create(ctx, obj, opts...)
			if w.onCreate != nil {
				err = w.onCreate(obj, err)
			}
			return err
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			w.add("patch")
			return c.Patch(ctx, obj, patch, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			w.add("update")
			return c.Update(ctx, obj, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			w.add("delete")
			do := &client.DeleteOptions{}
			do.ApplyOptions(opts)
			w.mu.Lock()
			w.deletes = append(w.deletes, do.Preconditions)
			w.mu.Unlock()
			return c.Delete(ctx, obj, opts...)
		},
		SubResourceApply: func(ctx context.Context, c client.Client, sub string, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
			w.add("apply " + sub)
			return c.SubResource(sub).Apply(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if patch.Type() == types.ApplyPatchType {
				w.add("apply " + sub)
			} else {
				w.add("patch " + sub)
			}
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			w.add("update " + sub)
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
	})
	return b.Build(), w
}

func wReconciler(c client.Client) *Reconciler {
	r := &Reconciler{Client: c, Now: func() time.Time { return wNow }}
	r.setup(Options{Policy: verdict.DefaultPolicy(), AutoCreate: true})
	return r
}

// storeOf is what the manager's informers would hold of c's objects: each
// through the cache transform, in stores with the controller's indexes.
func storeOf(t testing.TB, c client.Reader) *cachestore.Store {
	t.Helper()
	s := &cachestore.Store{}
	for _, k := range []struct {
		list client.ObjectList
		dst  *cachestore.Index
	}{
		{&kubevirtv1.VirtualMachineList{}, &s.VMs}, {&kubevirtv1.VirtualMachineInstanceList{}, &s.VMIs},
		{&corev1.PodList{}, &s.Pods}, {&corev1.NodeList{}, &s.Nodes},
		{&kubevirtv1.VirtualMachineInstanceMigrationList{}, &s.Migrations}, {&v1alpha1.VMObservationList{}, &s.Observations},
		{&v1alpha1.VMObservationPolicyList{}, &s.Policies},
	} {
		ix := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{})
		*k.dst = ix
		if err := c.List(context.Background(), k.list); err != nil {
			t.Fatal(err)
		}
		items, err := apimeta.ExtractList(k.list)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range items {
			if err := ix.Add(testsupport.Project(t, o)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.AddIndexes(); err != nil {
		t.Fatal(err)
	}
	return s
}

// BenchmarkGather is what a reconcile pays to read a running VM's objects
// out of the stores and rebuild the typed objects the engine reads (the VM,
// VMI, launcher pod and node), next to BenchmarkEvaluate's evaluation of
// them (internal/verdict).
func BenchmarkGather(b *testing.B) {
	c, _ := fakeWorld(b, wVMObj(), wVMIObj(), wPodObj(), wNodeObj())
	r := wReconciler(c)
	r.Store = storeOf(b, c)
	key := types.NamespacedName{Namespace: wNS, Name: wVM}
	b.ReportAllocs()
	for b.Loop() {
		in, _, err := r.gather(key)
		if err != nil || in.VMI == nil || len(in.Pods) != 1 || len(in.Nodes) != 1 {
			b.Fatalf("gather: %v, %+v", err, in)
		}
	}
}

func wReconcile(t *testing.T, r *Reconciler) ctrl.Result {
	t.Helper()
	r.Store = storeOf(t, r.Client)
	res, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: wNS, Name: wVM}})
	if err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	return res
}

func wObservation(t *testing.T, c client.Client) *v1alpha1.VMObservation {
	t.Helper()
	obs := &v1alpha1.VMObservation{}
	if err := c.Get(context.Background(), types.NamespacedName{Namespace: wNS, Name: wVM}, obs); err != nil {
		t.Fatalf("getting the VMObservation: %v", err)
	}
	return obs
}

func TestReconcileCreatesThenWritesNothingForAnUnchangedWorld(t *testing.T) {
	c, w := fakeWorld(t, wVMObj(), wVMIObj(), wPodObj(), wNodeObj())
	r := wReconciler(c)
	res := wReconcile(t, r)
	if w.counts["create"] != 1 || w.counts["apply status"] != 1 || w.total() != 2 {
		t.Fatalf("first reconcile wrote %v, want one create and one status apply", w.counts)
	}
	if res.RequeueAfter != 0 || r.beats.Watched() != 1 {
		t.Errorf("the next deadline (heartbeat staleness) is %+v with %d VMs on heartbeat timers, want only the node's timer", res, r.beats.Watched())
	}
	obs := wObservation(t, c)
	if obs.Labels[membership.ManagedByLabel] != membership.ManagedByValue {
		t.Errorf("labels %v", obs.Labels)
	}
	if len(obs.OwnerReferences) != 1 || obs.OwnerReferences[0].UID != wVMUID || obs.OwnerReferences[0].Controller != nil {
		t.Errorf("owner references %+v, want the VM, not as controller", obs.OwnerReferences)
	}
	if obs.Status.Verdict != v1alpha1.VerdictHealthy || obs.Status.Reason != v1alpha1.ReasonRunning {
		t.Errorf("status %s/%s: %s", obs.Status.Verdict, obs.Status.Reason, obs.Status.Message)
	}

	// A second reconcile of an unchanged world, after the cache caught up
	// and later on, makes no write.
	for _, after := range []time.Duration{0, time.Second, cacheLagTolerance + time.Second} {
		before := w.total()
		r.Now = func() time.Time { return wNow.Add(after) }
		wReconcile(t, r)
		if w.total() != before {
			t.Errorf("reconcile %v later wrote %v", after, w.counts)
		}
	}
}

// TestCacheBehindTheServerBringsNoRewrite: a cache that never received our
// status write (its watch backing off after an API server outage) is
// trusted again once cacheLagTolerance has passed; the read a write makes
// for the history finds the status there already, and nothing is written.
// A status changed on the server behind our back is still put right.
func TestCacheBehindTheServerBringsNoRewrite(t *testing.T) {
	c, w := fakeWorld(t, wVMObj(), wVMIObj(), wPodObj(), wNodeObj())
	r := wReconciler(c)
	wReconcile(t, r)
	written := wObservation(t, c)
	if w.counts["apply status"] != 1 || written.Status.Verdict != v1alpha1.VerdictHealthy {
		t.Fatalf("first reconcile wrote %v, status %s", w.counts, written.Status.Verdict)
	}

	// The cache as the create event left it: no status.
	behind := storeOf(t, c)
	created := written.DeepCopy()
	created.Status = v1alpha1.VMObservationStatus{}
	rv, err := strconv.Atoi(written.ResourceVersion)
	if err != nil {
		t.Fatal(err)
	}
	created.ResourceVersion = strconv.Itoa(rv - 1)
	if err := behind.Observations.(toolscache.Indexer).Update(testsupport.Project(t, created)); err != nil {
		t.Fatal(err)
	}
	r.Store = behind
	key := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: wNS, Name: wVM}}
	r.Now = func() time.Time { return wNow.Add(cacheLagTolerance + time.Second) }
	before := w.total()
	if _, err := r.Reconcile(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	if w.total() != before {
		t.Errorf("a cache behind the server brought a write of the status the server holds: %v", w.counts)
	}

	// Someone else wrote another status: ours goes back.
	other := wObservation(t, c)
	other.Status.Verdict, other.Status.Reason = v1alpha1.VerdictDegraded, "SomeoneElse"
	if err := c.Status().Update(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	before = w.total()
	if _, err := r.Reconcile(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	if w.counts["apply status"] != 2 || w.total() != before+1 {
		t.Errorf("a status changed behind our back was not put right: %v", w.counts)
	}
	if got := wObservation(t, c); got.Status.Verdict != v1alpha1.VerdictHealthy {
		t.Errorf("status %s/%s after the write, want Healthy", got.Status.Verdict, got.Status.Reason)
	}
}

// TestOwnCreateBringsNoReconcile: the reconcile that creates a
// VMObservation writes its status too, so the create event of that object
// (by its UID, once) does not bring the VM back; any other create event of
// the same name does: a user's, another shard's, an orphan's at start, or
// the object recreated after a delete.
func TestOwnCreateBringsNoReconcile(t *testing.T) {
	c, w := fakeWorld(t, wVMObj(), wVMIObj(), wPodObj(), wNodeObj())
	r := wReconciler(c)
	p := observationChanged(r.policy)
	other := func(uid types.UID) client.Object {
		return testsupport.Project(t, &v1alpha1.VMObservation{ObjectMeta: metav1.ObjectMeta{Namespace: wNS, Name: wVM, UID: uid}})
	}
	if !p.Create(event.CreateEvent{Object: other("declared")}) {
		t.Fatal("the create event of a VMObservation this process did not create was dropped")
	}

	wReconcile(t, r)
	if w.counts["create"] != 1 || w.counts["apply status"] != 1 {
		t.Fatalf("reconcile wrote %v, want one create and one status apply", w.counts)
	}
	created := wObservation(t, c)
	ev := event.CreateEvent{Object: testsupport.Project(t, created)}
	if !p.Create(event.CreateEvent{Object: other("another")}) {
		t.Error("a create event of another UID under the same name was dropped")
	}
	if p.Create(ev) {
		t.Error("the create event of our own VMObservation passed")
	}
	if !p.Create(ev) {
		t.Error("a second create event of it (a relist) was dropped: the first is the only one ours")
	}

	r.policy.created(client.ObjectKeyFromObject(created), created.UID)
	r.policy.forget(client.ObjectKeyFromObject(created))
	if !p.Create(ev) {
		t.Error("the create event of a VMObservation forgotten (deleted) was dropped")
	}
}

// TestOwnCreateEventBeforeItsAnswer: the create event may come while the
// create is in flight. It is taken for ours and dropped; if the create then
// succeeds, nothing is left waiting for it; if it fails because another
// object of that name exists, that other object's event was the one
// dropped, and the reconcile asks to be called again at once instead of
// waiting for an event that will not come.
func TestOwnCreateEventBeforeItsAnswer(t *testing.T) {
	t.Run("ours", func(t *testing.T) {
		c, w := fakeWorld(t, wVMObj(), wVMIObj(), wPodObj(), wNodeObj())
		r := wReconciler(c)
		p := observationChanged(r.policy)
		var ev event.CreateEvent
		w.onCreate = func(o client.Object, err error) error {
			ev = event.CreateEvent{Object: testsupport.Project(t, o)}
			if !p.Create(ev) {
				return err
			}
			t.Error("our create's event, come before its answer, passed")
			return err
		}
		wReconcile(t, r)
		if w.counts["create"] != 1 || w.counts["apply status"] != 1 {
			t.Fatalf("reconcile wrote %v, want one create and one status apply", w.counts)
		}
		if !p.Create(ev) {
			t.Error("a second create event of it was dropped: the one before the answer was ours")
		}
	})
	t.Run("another's", func(t *testing.T) {
		c, w := fakeWorld(t, wVMObj(), wVMIObj(), wPodObj(), wNodeObj())
		r := wReconciler(c)
		p := observationChanged(r.policy)
		r.Store = storeOf(t, c) // the cache, before the other object is created
		declared := &v1alpha1.VMObservation{ObjectMeta: metav1.ObjectMeta{Namespace: wNS, Name: wVM}, Spec: v1alpha1.VMObservationSpec{VMName: wVM}}
		if err := c.Create(context.Background(), declared); err != nil {
			t.Fatal(err)
		}
		w.onCreate = func(_ client.Object, err error) error {
			if !apierrors.IsAlreadyExists(err) {
				t.Errorf("create: %v, want AlreadyExists", err)
			}
			if !p.Create(event.CreateEvent{Object: testsupport.Project(t, declared)}) {
				return err
			}
			t.Error("the event of a create in flight passed")
			return err
		}
		res, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: wNS, Name: wVM}})
		if err != nil {
			t.Fatal(err)
		}
		if res.RequeueAfter <= 0 {
			t.Errorf("the reconcile returned %+v: the other object's event was dropped and nothing brings the VM back", res)
		}
	})
}

// TestRequeueCountsFromTheReturn: a lag grace ends 7 s after the evaluation;
// the reconcile spends 300 ms writing, so it asks to be called again 6.7 s
// after it returns (the queue counts from the return), and the verdict is
// judged at the deadline, not a round trip after it.
func TestRequeueCountsFromTheReturn(t *testing.T) {
	notReady := func(p *corev1.Pod) {
		for i := range p.Status.Conditions {
			if c := &p.Status.Conditions[i]; c.Type == corev1.PodReady || c.Type == corev1.ContainersReady {
				c.Status, c.LastTransitionTime = corev1.ConditionFalse, metav1.NewTime(wNow.Add(-3*time.Second))
			}
		}
	}
	c, w := fakeWorld(t, wVMObj(), wVMIObj(), wPodObj(notReady), wNodeObj())
	r := wReconciler(c)
	r.Now = func() time.Time {
		if w.counts["apply status"] > 0 { // the status apply took 300 ms
			return wNow.Add(300 * time.Millisecond)
		}
		return wNow
	}
	res := wReconcile(t, r)
	if w.counts["apply status"] != 1 {
		t.Fatalf("wrote %v, want the first status", w.counts)
	}
	if want := 7*time.Second - 300*time.Millisecond; res.RequeueAfter != want || res.Priority != nil {
		t.Errorf("RequeueAfter %v at priority %v, want %v at the default priority (the lag grace ends 7 s after the evaluation)", res.RequeueAfter, res.Priority, want)
	}
}

// TestKeptVerdictKeepsItsMessage: a launcher pod turns not-ready seconds
// ago, within the lag grace, and the node layer keeps its Healthy
// verdict; the cache holds no layer messages (projection.Observation), so
// the reconcile reads the stored status and keeps the verdict's message,
// not an empty one.
func TestKeptVerdictKeepsItsMessage(t *testing.T) {
	c, _ := fakeWorld(t, wVMObj(), wVMIObj(), wPodObj(), wNodeObj())
	r := wReconciler(c)
	wReconcile(t, r)
	before := wObservation(t, c).Status.Layers.Node
	if before.Verdict != v1alpha1.VerdictHealthy || before.Message == "" {
		t.Fatalf("node layer %s %q, want Healthy with a message", before.Verdict, before.Message)
	}
	pod := wPodObj()
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(pod), pod); err != nil {
		t.Fatal(err)
	}
	later := wNow.Add(time.Minute)
	for i := range pod.Status.Conditions {
		if cond := &pod.Status.Conditions[i]; cond.Type == corev1.PodReady || cond.Type == corev1.ContainersReady {
			cond.Status, cond.LastTransitionTime = corev1.ConditionFalse, metav1.NewTime(later.Add(-3*time.Second))
		}
	}
	if err := c.Status().Update(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	r.Now = func() time.Time { return later }
	res := wReconcile(t, r)
	after := wObservation(t, c).Status.Layers.Node
	if after.Verdict != v1alpha1.VerdictHealthy || after.Reason != before.Reason || after.Message != before.Message {
		t.Errorf("node layer %s/%s %q, want the kept %s/%s %q", after.Verdict, after.Reason, after.Message, before.Verdict, before.Reason, before.Message)
	}
	if res.RequeueAfter <= 0 || res.RequeueAfter > 10*time.Second {
		t.Errorf("RequeueAfter %v, want the end of the lag grace", res.RequeueAfter)
	}
}

// TestHeartbeatsCostNoWrites: ten minutes of virt-handler heartbeats, one a
// minute, write nothing; each reconcile leaves the VM on its node's
// heartbeat timer, set to the live heartbeat's deadline, and when the beats
// stop the status says so then.
func TestHeartbeatsCostNoWrites(t *testing.T) {
	c, w := fakeWorld(t, wVMObj(), wVMIObj(), wPodObj(), wNodeObj())
	r := wReconciler(c)
	wReconcile(t, r)
	written := w.total()
	var last time.Time
	for m := 1; m <= 10; m++ {
		last = wNow.Add(time.Duration(m) * time.Minute)
		n := &corev1.Node{}
		if err := c.Get(context.Background(), client.ObjectKey{Name: kvtest.NodeA}, n); err != nil {
			t.Fatal(err)
		}
		n.Annotations[kubevirtv1.VirtHandlerHeartbeat] = last.Format(time.RFC3339)
		if err := c.Update(context.Background(), n); err != nil {
			t.Fatal(err)
		}
		r.Now = func() time.Time { return last.Add(5 * time.Second) }
		res := wReconcile(t, r)
		// The heartbeat's deadline is the node's timer's, not a queue item.
		if res.RequeueAfter != 0 {
			t.Errorf("minute %d: RequeueAfter %v, want none: the node's heartbeat timer looks again", m, res.RequeueAfter)
		}
		if at, ok := r.beats.TimerAt(kvtest.NodeA); r.beats.Watched() != 1 || !ok || !at.Equal(last.Add(5*time.Minute)) {
			t.Errorf("minute %d: %d VMs on heartbeat timers, node-a's at %v (%t), want 1 at %v", m, r.beats.Watched(), at, ok, last.Add(5*time.Minute))
		}
	}
	if got := w.total() - written - 10; got != 0 { // the 10 node updates are the test's own
		t.Fatalf("10 minutes of heartbeats wrote %d times: %v", got, w.counts)
	}
	r.Now = func() time.Time { return last.Add(5 * time.Minute) }
	wReconcile(t, r)
	if obs := wObservation(t, c); obs.Status.Layers == nil || obs.Status.Layers.Node.Reason != v1alpha1.ReasonNodeAgentStale {
		t.Errorf("node layer after the beats stopped: %+v", obs.Status.Layers)
	}
}

func TestReconcileAdoptsADeclaredObservationAndFollowsARecreatedVM(t *testing.T) {
	declared := &v1alpha1.VMObservation{ObjectMeta: metav1.ObjectMeta{Namespace: wNS, Name: wVM}, Spec: v1alpha1.VMObservationSpec{VMName: wVM}}
	c, w := fakeWorld(t, wVMObj(), wVMIObj(), wPodObj(), wNodeObj(), declared)
	r := wReconciler(c)
	wReconcile(t, r)
	obs := wObservation(t, c)
	if len(obs.OwnerReferences) != 1 || obs.OwnerReferences[0].UID != wVMUID {
		t.Fatalf("a declared VMObservation was not adopted: %+v", obs.OwnerReferences)
	}
	if w.counts["create"] != 0 || w.counts["patch"] != 1 {
		t.Errorf("writes %v, want one metadata patch and no create", w.counts)
	}
	if obs.Labels[membership.ManagedByLabel] != "" {
		t.Errorf("a declared VMObservation got the managed-by label: %v", obs.Labels)
	}

	// The VM is deleted and recreated under the same name: new UID.
	ctx := context.Background()
	if err := c.Delete(ctx, wVMObj()); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, wVMObj(func(vm *kubevirtv1.VirtualMachine) { vm.UID, vm.ResourceVersion = "vm-uid-2", "" })); err != nil {
		t.Fatal(err)
	}
	wReconcile(t, r)
	obs = wObservation(t, c)
	if len(obs.OwnerReferences) != 1 || obs.OwnerReferences[0].UID != "vm-uid-2" {
		t.Errorf("owner after the VM was recreated: %+v", obs.OwnerReferences)
	}
}

func TestReconcileDeletesItsOrphanWithPreconditionsAndKeepsADeclaredOne(t *testing.T) {
	managed := &v1alpha1.VMObservation{ObjectMeta: metav1.ObjectMeta{Namespace: wNS, Name: wVM, UID: "obs-uid",
		Labels: map[string]string{membership.ManagedByLabel: membership.ManagedByValue}}}
	c, w := fakeWorld(t, managed)
	wReconcile(t, wReconciler(c))
	if w.counts["delete"] != 1 || len(w.deletes) != 1 {
		t.Fatalf("writes %v, want one delete", w.counts)
	}
	if p := w.deletes[0]; p == nil || p.UID == nil || *p.UID != "obs-uid" || p.ResourceVersion == nil {
		t.Errorf("delete preconditions %+v, want the UID and resourceVersion read", p)
	}
	if err := c.Get(context.Background(), types.NamespacedName{Namespace: wNS, Name: wVM}, &v1alpha1.VMObservation{}); !apierrors.IsNotFound(err) {
		t.Errorf("orphan still there: %v", err)
	}

	declared := &v1alpha1.VMObservation{ObjectMeta: metav1.ObjectMeta{Namespace: wNS, Name: wVM}, Spec: v1alpha1.VMObservationSpec{VMName: wVM}}
	c, w = fakeWorld(t, declared)
	wReconcile(t, wReconciler(c))
	if w.counts["delete"] != 0 {
		t.Errorf("a declared VMObservation was deleted")
	}
	if obs := wObservation(t, c); obs.Status.Reason != v1alpha1.ReasonVMMissing {
		t.Errorf("a declared VMObservation without its VM says %s/%s", obs.Status.Verdict, obs.Status.Reason)
	}
}

// TestAnalyzerAndControllerAgree: vmobs analyze on the objects the
// controller sees gives the VMObservation the controller writes, metadata
// and status.
func TestAnalyzerAndControllerAgree(t *testing.T) {
	for _, tc := range []struct {
		name string
		objs func() []client.Object
	}{
		{"running", func() []client.Object { return []client.Object{wVMObj(), wVMIObj(), wPodObj(), wNodeObj()} }},
		{"evacuated to another node, which is gone", func() []client.Object {
			vmi := wVMIObj(func(v *kubevirtv1.VirtualMachineInstance) { v.Status.EvacuationNodeName = wNode })
			return []client.Object{wVMObj(), vmi, wPodObj(), wNodeObj()}
		}},
		{"a pod of an earlier VMI of the same name", func() []client.Object {
			old := wPodObj(func(p *corev1.Pod) {
				p.Name, p.UID = "virt-launcher-vm1-old00", "pod-uid-0"
				p.OwnerReferences[0].UID = "vmi-uid-0"
				p.Labels[kubevirtv1.CreatedByLabel] = "vmi-uid-0"
			})
			return []client.Object{wVMObj(), wVMIObj(), wPodObj(), old, wNodeObj()}
		}},
		{"a VMI without a VM", func() []client.Object { return []client.Object{wVMIObj(), wPodObj(), wNodeObj()} }},
		{"a stopped VM", func() []client.Object {
			return []client.Object{wVMObj(func(vm *kubevirtv1.VirtualMachine) {
				vm.Spec.RunStrategy = ptr.To(kubevirtv1.RunStrategyHalted)
				vm.Status = kubevirtv1.VirtualMachineStatus{PrintableStatus: kubevirtv1.VirtualMachineStatusStopped}
			})}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := fakeWorld(t, tc.objs()...)
			wReconcile(t, wReconciler(c))
			got := wObservation(t, c)

			var objs analyze.Objects
			for _, o := range tc.objs() {
				objs.Add(o)
			}
			list := analyze.Analyze(objs, wNow, verdict.DefaultPolicy())
			if len(list) != 1 {
				t.Fatalf("the analyzer found %d VMs", len(list))
			}
			want := list[0]
			if got.Namespace != want.Namespace || got.Name != want.Name ||
				!equality.Semantic.DeepEqual(got.Labels, want.Labels) ||
				!equality.Semantic.DeepEqual(got.OwnerReferences, want.OwnerReferences) ||
				!equality.Semantic.DeepEqual(got.Spec, want.Spec) {
				t.Errorf("metadata differs:\ncontroller %s/%s labels %v owners %+v spec %+v\nanalyzer   %s/%s labels %v owners %+v spec %+v",
					got.Namespace, got.Name, got.Labels, got.OwnerReferences, got.Spec,
					want.Namespace, want.Name, want.Labels, want.OwnerReferences, want.Spec)
			}
			gs, ws := got.Status.DeepCopy(), want.Status.DeepCopy()
			// observedGeneration is the stored object's; the analyzer has none.
			gs.ObservedGeneration, ws.ObservedGeneration = 0, 0
			for i := range gs.Conditions {
				gs.Conditions[i].ObservedGeneration = 0
			}
			if !equality.Semantic.DeepEqual(gs, ws) {
				t.Errorf("status differs:\ncontroller %+v\nanalyzer   %+v", gs, ws)
			}
		})
	}
}

func TestMapFunctions(t *testing.T) {
	key := types.NamespacedName{Namespace: wNS, Name: wVM}
	if got := migrationToVM(context.Background(), testsupport.Project(t, &kubevirtv1.VirtualMachineInstanceMigration{
		ObjectMeta: metav1.ObjectMeta{Namespace: wNS, Name: "m"}, Spec: kubevirtv1.VirtualMachineInstanceMigrationSpec{VMIName: wVM}})); len(got) != 1 || got[0].NamespacedName != key {
		t.Errorf("migrationToVM = %v", got)
	}
	if got := migrationToVM(context.Background(), testsupport.Project(t, &kubevirtv1.VirtualMachineInstanceMigration{})); got != nil {
		t.Errorf("migrationToVM of a migration without a VMI = %v", got)
	}
	if got := podToVM(context.Background(), testsupport.Project(t, wPodObj())); len(got) != 1 || got[0].NamespacedName != key {
		t.Errorf("podToVM of a launcher = %v", got)
	}
	hotplug := wPodObj(func(p *corev1.Pod) {
		p.Labels[kubevirtv1.AppLabel] = "hotplug-disk"
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "virt-launcher-vm1-abcde", UID: "pod-uid-1", Controller: ptr.To(true)}}
	})
	if got := podToVM(context.Background(), testsupport.Project(t, hotplug)); got != nil {
		t.Errorf("podToVM of a hotplug attachment pod = %v", got)
	}
}

// TestNodeFanOut: a Node event wakes the VMs whose VMI names the node; a
// heartbeat-only change wakes only those not Healthy.
func TestNodeFanOut(t *testing.T) {
	healthy := &v1alpha1.VMObservation{ObjectMeta: metav1.ObjectMeta{Namespace: wNS, Name: wVM}, Status: v1alpha1.VMObservationStatus{Verdict: v1alpha1.VerdictHealthy}}
	degraded := &v1alpha1.VMObservation{ObjectMeta: metav1.ObjectMeta{Namespace: wNS, Name: "vm2"}, Status: v1alpha1.VMObservationStatus{Verdict: v1alpha1.VerdictUnknown}}
	vm2 := wVMIObj(func(v *kubevirtv1.VirtualMachineInstance) {
		v.Name, v.UID = "vm2", "vmi-uid-2"
		v.Status.NodeName = "node-b"
		v.Status.MigrationState = &kubevirtv1.VirtualMachineInstanceMigrationState{SourceNode: "node-b", TargetNode: wNode}
	})
	other := wVMIObj(func(v *kubevirtv1.VirtualMachineInstance) {
		v.Name, v.UID, v.Status.NodeName, v.Status.ActivePods = "vm3", "vmi-uid-3", "node-c", nil
	})
	c, _ := fakeWorld(t, wVMIObj(), vm2, other, healthy, degraded)
	r := wReconciler(c)
	r.Store = storeOf(t, c)
	h := r.nodeHandler()
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	old := testsupport.Project(t, wNodeObj())
	beat := testsupport.Project(t, wNodeObj(func(n *corev1.Node) {
		n.ResourceVersion = "2"
		n.Annotations[kubevirtv1.VirtHandlerHeartbeat] = wNow.Format(time.RFC3339)
	}))
	h.Update(context.Background(), event.UpdateEvent{ObjectOld: old, ObjectNew: beat}, q)
	if got := testsupport.Drain(q); !equality.Semantic.DeepEqual(got, map[string]bool{"vm2": true}) {
		t.Errorf("heartbeat-only change woke %v, want only the non-Healthy VM on the node", got)
	}
	notReady := testsupport.Project(t, wNodeObj(func(n *corev1.Node) {
		n.ResourceVersion = "2"
		kvtest.NodeReady(corev1.ConditionUnknown)(n)
	}))
	h.Update(context.Background(), event.UpdateEvent{ObjectOld: old, ObjectNew: notReady}, q)
	if got := testsupport.Drain(q); !equality.Semantic.DeepEqual(got, map[string]bool{wVM: true, "vm2": true}) {
		t.Errorf("a Ready change woke %v, want every VM whose VMI names the node", got)
	}
	h.Delete(context.Background(), event.DeleteEvent{Object: old}, q)
	if got := testsupport.Drain(q); len(got) != 2 {
		t.Errorf("a deleted node woke %v", got)
	}
}

// TestPredicates: every predicate passes creates and deletes, drops
// resyncs, and passes an update only when something the engine reads
// changed.
func TestPredicates(t *testing.T) {
	rv := func(o client.Object, v string) client.Object { o.SetResourceVersion(v); return o }
	cases := []struct {
		name     string
		p        predicate.Predicate
		old, new client.Object
		want     bool
	}{
		{"VMI resync", vmiChanged(), rv(wVMIObj(), "1"), rv(wVMIObj(), "1"), false},
		{"VMI status change", vmiChanged(), rv(wVMIObj(), "1"), rv(wVMIObj(func(v *kubevirtv1.VirtualMachineInstance) { v.Status.NodeName = "x" }), "2"), true},
		{"VMI eviction strategy", vmiChanged(), rv(wVMIObj(), "1"), rv(wVMIObj(func(v *kubevirtv1.VirtualMachineInstance) {
			v.Spec.EvictionStrategy = ptr.To(kubevirtv1.EvictionStrategyExternal)
		}), "2"), true},
		{"VMI label only", vmiChanged(), rv(wVMIObj(), "1"), rv(wVMIObj(func(v *kubevirtv1.VirtualMachineInstance) { v.Labels = map[string]string{"a": "b"} }), "2"), false},
		{"VMI deletion", vmiChanged(), rv(wVMIObj(), "1"), rv(wVMIObj(func(v *kubevirtv1.VirtualMachineInstance) { v.DeletionTimestamp = ptr.To(metav1.NewTime(wNow)) }), "2"), true},
		{"VM status", vmChanged(), rv(wVMObj(), "1"), rv(wVMObj(func(vm *kubevirtv1.VirtualMachine) { vm.Status.PrintableStatus = "Stopping" }), "2"), true},
		{"VM run strategy", vmChanged(), rv(wVMObj(), "1"), rv(wVMObj(func(vm *kubevirtv1.VirtualMachine) { vm.Spec.RunStrategy = ptr.To(kubevirtv1.RunStrategyHalted) }), "2"), true},
		{"VM template only", vmChanged(), rv(wVMObj(), "1"), rv(wVMObj(func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Template = &kubevirtv1.VirtualMachineInstanceTemplateSpec{}
		}), "2"), false},
		{"pod status", podChanged(), rv(wPodObj(), "1"), rv(wPodObj(func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }), "2"), true},
		{"pod network-status", podChanged(), rv(wPodObj(), "1"), rv(wPodObj(func(p *corev1.Pod) { p.Annotations = map[string]string{membership.NetworkStatusAnnotation: "[]"} }), "2"), true},
		{"pod spec other than the node", podChanged(), rv(wPodObj(), "1"), rv(wPodObj(func(p *corev1.Pod) { p.Spec.Hostname = "h" }), "2"), false},
		{"node heartbeat", nodeChanged(), rv(wNodeObj(), "1"), rv(wNodeObj(func(n *corev1.Node) { n.Annotations[kubevirtv1.VirtHandlerHeartbeat] = "x" }), "2"), true},
		{"node schedulable", nodeChanged(), rv(wNodeObj(), "1"), rv(wNodeObj(func(n *corev1.Node) { n.Labels[kubevirtv1.NodeSchedulable] = "false" }), "2"), true},
		{"node kubelet status only", nodeChanged(), rv(wNodeObj(), "1"), rv(wNodeObj(func(n *corev1.Node) {
			n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse})
		}), "2"), false},
		{"node kubelet heartbeat", nodeChanged(), rv(wNodeObj(), "1"), rv(wNodeObj(func(n *corev1.Node) {
			for i := range n.Status.Conditions {
				n.Status.Conditions[i].LastHeartbeatTime = metav1.NewTime(wNow)
			}
		}), "2"), false},
		{"pod label vmobs does not read", podChanged(), rv(wPodObj(), "1"), rv(wPodObj(func(p *corev1.Pod) { p.Labels["other"] = "x" }), "2"), false},
		{"migration phase", migrationChanged(), rv(&kubevirtv1.VirtualMachineInstanceMigration{}, "1"),
			rv(&kubevirtv1.VirtualMachineInstanceMigration{Status: kubevirtv1.VirtualMachineInstanceMigrationStatus{Phase: kubevirtv1.MigrationRunning}}, "2"), true},
		{"observation status only (our own write)", observationChanged(newWritePolicy(0, 0, 0)),
			rv(&v1alpha1.VMObservation{ObjectMeta: metav1.ObjectMeta{Generation: 1}}, "1"),
			rv(&v1alpha1.VMObservation{ObjectMeta: metav1.ObjectMeta{Generation: 1}, Status: v1alpha1.VMObservationStatus{Verdict: "Healthy"}}, "2"), false},
		{"observation spec edit", observationChanged(newWritePolicy(0, 0, 0)),
			rv(&v1alpha1.VMObservation{ObjectMeta: metav1.ObjectMeta{Generation: 1}}, "1"), rv(&v1alpha1.VMObservation{ObjectMeta: metav1.ObjectMeta{Generation: 2}}, "2"), true},
	}
	for _, c := range cases {
		// The events carry what the cache holds: projections.
		old, nw := testsupport.Project(t, c.old), testsupport.Project(t, c.new)
		if got := c.p.Update(event.UpdateEvent{ObjectOld: old, ObjectNew: nw}); got != c.want {
			t.Errorf("%s: Update = %v, want %v", c.name, got, c.want)
		}
		if !c.p.Create(event.CreateEvent{Object: nw}) || !c.p.Delete(event.DeleteEvent{Object: nw}) {
			t.Errorf("%s: creates and deletes must pass", c.name)
		}
	}
}
