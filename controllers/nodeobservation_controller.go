package controllers

import (
	"cmp"
	"context"
	"fmt"
	"reflect"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/cachestore"
	"github.com/vmobs/vmobs/internal/drain"
	"github.com/vmobs/vmobs/internal/metrics"
	"github.com/vmobs/vmobs/internal/nodeverdict"
	"github.com/vmobs/vmobs/internal/projection"
	"github.com/vmobs/vmobs/internal/runtimekit"
	"github.com/vmobs/vmobs/internal/verdict"
)

// +kubebuilder:rbac:groups=observability.vmobs.io,resources=nodeobservations,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=observability.vmobs.io,resources=nodeobservations/status,verbs=patch

// NodeReconciler keeps one NodeObservation per node that runs VMIs or
// virt-handler: it gathers the node's objects from the cache, asks
// internal/nodeverdict for the status, and writes only when it changed.
// A NodeObservation is named after its node and owned by nothing: it is
// deleted when the Node is, or when the node runs neither a VMI nor
// virt-handler (docs/nodeobservation.md).
type NodeReconciler struct {
	// Client writes NodeObservations and reads them from the cache.
	Client client.Client
	// APIReader reads, once per drain, what its prediction needs and the
	// cache does not hold (predictDrain); nil tracks no drains.
	APIReader client.Reader
	// Store is the VMObservation controller's (Reconciler.Store), whose
	// informers, projections and indexes this reads: no kind is cached
	// twice.
	Store *cachestore.Store
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Policy gives the heartbeat timeout and the stalled threshold, the
	// VMObservations' own, so that a node and its VMs agree.
	Policy verdict.Policy
	// DomainStats and GuestProbe say whether those sources run.
	DomainStats, GuestProbe bool
	// IncidentThreshold is how many of a node's VMs must turn non-Healthy
	// under a node cause for the node to name an incident; 0 is
	// nodeverdict.DefaultIncidentThreshold.
	IncidentThreshold int
	// Metrics counts the writes; nil counts none.
	Metrics *metrics.NodeObservations
}

// nodeLayerIndex is the node layer's place in a VMObservation's layers.
var nodeLayerIndex = slices.Index(v1alpha1.LayerNames[:], v1alpha1.LayerNode)

// nodeControllerName names the controller in logs and metrics.
const nodeControllerName = "nodeobservation"

// SetupWithManager watches Nodes, virt-handler pods, VMIs and
// VMObservations through the cache the VMObservation controller set up,
// each mapped to the node it names.
func (r *NodeReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	c := mgr.GetCache()
	return ctrl.NewControllerManagedBy(mgr).
		Named(nodeControllerName).
		WatchesRawSource(runtimekit.WatchKind(c, &v1alpha1.NodeObservation{}, &handler.EnqueueRequestForObject{}, nodeObservationChanged())).
		WatchesRawSource(runtimekit.WatchKind(c, &corev1.Node{}, &handler.EnqueueRequestForObject{}, nodeSignalsChanged())).
		WatchesRawSource(runtimekit.WatchKind(c, &corev1.Pod{}, byNode(func(o client.Object) string {
			if p, ok := o.(*projection.Pod); ok && p.App.String() == cachestore.HandlerApp {
				return p.NodeName.String()
			}
			return ""
		}), handlerPodChanged())).
		WatchesRawSource(runtimekit.WatchKind(c, &kubevirtv1.VirtualMachineInstance{}, byNode(func(o client.Object) string {
			if v, ok := o.(*projection.VMI); ok {
				return v.NodeName.String()
			}
			return ""
		}), vmiPlacementChanged())).
		WatchesRawSource(runtimekit.WatchKind(c, &v1alpha1.VMObservation{}, byNode(func(o client.Object) string {
			if ob, ok := o.(*projection.Observation); ok {
				return ob.NodeName.String()
			}
			return ""
		}), observationVerdictChanged())).
		WithOptions(opts).
		Complete(r)
}

// byNode enqueues the node an object names, before and after an update
// (a VMI that moves leaves one node and joins another).
func byNode(nodeOf func(client.Object) string) handler.EventHandler {
	add := func(q workqueue.TypedRateLimitingInterface[reconcile.Request], o client.Object) {
		if n := nodeOf(o); n != "" {
			q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: n}})
		}
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(q, e.Object)
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(q, e.ObjectOld)
			add(q, e.ObjectNew)
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(q, e.Object)
		},
		GenericFunc: func(_ context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(q, e.Object)
		},
	}
}

// nodeObservationChanged passes deletes (a NodeObservation deleted by hand
// comes back) and creates (one left from before a restart, of a node now
// gone, is deleted); the controller's own status writes do not come back
// as work.
func nodeObservationChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(event.UpdateEvent) bool { return false }}
}

// nodeSignalsChanged passes what nodeverdict reads of a Node: the Ready
// condition, the pressure conditions, virt-handler's heartbeat, the
// schedulable label and the cordon. A heartbeat alone changes no status (a fresh beat is
// cited as fresh); it moves the deadline the controller looks again at,
// at the cost of a reconcile per node per minute and no write.
func nodeSignalsChanged() predicate.Predicate {
	return updateOnly(func(o, n *projection.Node) bool {
		return o.Value(kubevirtv1.VirtHandlerHeartbeat) != n.Value(kubevirtv1.VirtHandlerHeartbeat) ||
			o.Value(kubevirtv1.NodeSchedulable) != n.Value(kubevirtv1.NodeSchedulable) || o.Unschedulable != n.Unschedulable ||
			!reflect.DeepEqual(o.Ready, n.Ready) || !reflect.DeepEqual(o.Pressure, n.Pressure)
	})
}

// handlerPodChanged passes virt-handler's pods only, and of their updates
// those that change the node, phase or Ready condition.
func handlerPodChanged() predicate.Predicate {
	isHandler := func(o client.Object) bool {
		p, ok := o.(*projection.Pod)
		return ok && p.App.String() == cachestore.HandlerApp
	}
	p := updateOnly(func(o, n *projection.Pod) bool {
		return isHandler(n) && (o.NodeName != n.NodeName || o.Phase != n.Phase || handlerReady(o) != handlerReady(n))
	})
	p.CreateFunc = func(e event.CreateEvent) bool { return isHandler(e.Object) }
	p.DeleteFunc = func(e event.DeleteEvent) bool { return isHandler(e.Object) }
	return p
}

func handlerReady(p *projection.Pod) string {
	for _, c := range p.Conditions {
		if c.Type() == string(corev1.PodReady) {
			return c.Status()
		}
	}
	return ""
}

// vmiPlacementChanged passes the VMI updates that change its node or its
// phase (Running or not: what the node's layers count).
func vmiPlacementChanged() predicate.Predicate {
	return updateOnly(func(o, n *projection.VMI) bool {
		return o.NodeName != n.NodeName || o.Phase != n.Phase
	})
}

// observationVerdictChanged passes the VMObservation updates that change
// what the node reads of it: its node, verdict and layer reasons.
func observationVerdictChanged() predicate.Predicate {
	return updateOnly(func(o, n *projection.Observation) bool {
		if o.NodeName != n.NodeName || o.Verdict != n.Verdict {
			return true
		}
		for i := range o.Layers {
			if o.Layers[i].Reason != n.Layers[i].Reason {
				return true
			}
		}
		return false
	})
}

// Reconcile brings the NodeObservation of one node in line with the cache.
func (r *NodeReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	name := req.Name
	log := ctrl.LoggerFrom(ctx).WithValues("node", name)
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	in, vmKeys, keep, err := r.gather(name)
	if err != nil {
		return ctrl.Result{}, err
	}
	var stored v1alpha1.NodeObservation
	err = r.Client.Get(ctx, types.NamespacedName{Name: name}, &stored)
	found := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err
	}
	var res nodeverdict.Result
	if keep {
		in.Now = now()
		if found {
			in.Previous = &stored.Status
		}
		if err := r.gatherDrain(ctx, &in, vmKeys); err != nil {
			return ctrl.Result{}, err
		}
		res = nodeverdict.Evaluate(in)
	}
	switch decideNodeWrite(found, keep, &stored, &res.Status) {
	case nodeDelete:
		if err := r.Client.Delete(ctx, &stored, client.Preconditions{UID: &stored.UID}); err != nil && !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		r.Metrics.Wrote("delete")
		log.V(1).Info("Deleted the NodeObservation of a node that is gone or runs no VMs")
		return ctrl.Result{}, nil
	case nodeNone:
		return requeueAt(nodeDeadline(res, in.Now), in.Now), nil
	case nodeCreate:
		stored = v1alpha1.NodeObservation{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := r.Client.Create(ctx, &stored); apierrors.IsAlreadyExists(err) {
			// The cache has not seen our create yet: its event brings
			// the NodeObservation back here.
			return ctrl.Result{}, nil
		} else if err != nil {
			return ctrl.Result{}, err
		}
		r.Metrics.Wrote("create")
		log.V(1).Info("Created the NodeObservation")
	}
	// A merge patch of what changed, without the resourceVersion: the
	// cache may be a write behind the server (a create and its status a
	// moment apart), and the status is the controller's alone but for the
	// fields it does not set, which a patch leaves alone.
	base := stored.DeepCopy()
	stored.Status = res.Status
	if err := r.Client.Status().Patch(ctx, &stored, client.MergeFrom(base)); err != nil {
		return ctrl.Result{}, err
	}
	r.Metrics.Wrote("status")
	log.V(1).Info("Wrote the NodeObservation's status", "verdict", res.Status.Verdict, "reason", res.Status.Reason)
	if c := res.DrainEnded; c != nil {
		for _, cell := range c.Matrix {
			r.Metrics.DrainEnded(string(cell.Predicted), string(cell.Observed), cell.Count)
		}
		log.Info("A drain of the node ended", "right", c.Right, "wrong", c.Wrong, "matrix", c.Table())
	}
	return requeueAt(nodeDeadline(res, in.Now), in.Now), nil
}

// nodeDeadline is the status' deadline or, while a drain is under way,
// drainTrackEvery from now if that is sooner.
func nodeDeadline(res nodeverdict.Result, now time.Time) time.Time {
	if d := res.Status.Drain; d != nil && d.Cordoned && d.Outcome == nil {
		if t := now.Add(drainTrackEvery); res.Next.IsZero() || t.Before(res.Next) {
			return t
		}
	}
	return res.Next
}

// requeueAt looks again at next, a deadline (a heartbeat going stale, the
// stalled threshold), or never.
func requeueAt(next, now time.Time) ctrl.Result {
	if next.IsZero() {
		return ctrl.Result{}
	}
	return ctrl.Result{RequeueAfter: max(next.Sub(now), time.Second)}
}

// nodeWrite is what the controller does to a NodeObservation.
type nodeWrite int

const (
	nodeNone nodeWrite = iota
	nodeCreate
	nodeStatus
	nodeDelete
)

// decideNodeWrite is the one place that decides a write: delete one that
// should not be, create one that should be and is not, and write a status
// only when it differs from the stored one.
func decideNodeWrite(found, keep bool, stored *v1alpha1.NodeObservation, computed *v1alpha1.NodeObservationStatus) nodeWrite {
	switch {
	case !keep && found:
		return nodeDelete
	case !keep:
		return nodeNone
	case !found:
		return nodeCreate
	case stored.DeletionTimestamp != nil:
		return nodeNone
	case equality.Semantic.DeepEqual(&stored.Status, computed):
		return nodeNone
	}
	return nodeStatus
}

// gather reads the node's objects from the cache; keep says whether the
// node should have a NodeObservation: the Node exists and runs a VMI or
// virt-handler.
func (r *NodeReconciler) gather(name string) (in nodeverdict.Input, vmKeys []types.NamespacedName, keep bool, err error) {
	n, ok, err := cachestore.Get[*projection.Node](r.Store.Nodes, name)
	if err != nil || !ok {
		return in, nil, false, err
	}
	vmis, err := cachestore.ByIndex[*projection.VMI](r.Store.VMIs, cachestore.IndexVMINode, name)
	if err != nil {
		return in, nil, false, err
	}
	handlers, err := cachestore.ByIndex[*projection.Pod](r.Store.Pods, cachestore.IndexHandlerNode, name)
	if err != nil {
		return in, nil, false, err
	}
	in = nodeverdict.Input{
		Node: n.ToNode(), HeartbeatTimeout: r.Policy.HeartbeatTimeout, StalledAfter: r.Policy.StalledAfter,
		DomainStats: r.DomainStats, GuestProbe: r.GuestProbe, IncidentThreshold: r.IncidentThreshold,
	}
	d := verdict.DefaultPolicy()
	in.HeartbeatTimeout, in.StalledAfter = cmp.Or(in.HeartbeatTimeout, d.HeartbeatTimeout), cmp.Or(in.StalledAfter, d.StalledAfter)
	// The newest running handler pod speaks for virt-handler (a rollout
	// has two for a moment).
	for _, p := range handlers {
		if in.Handler == nil || p.Phase.String() == string(corev1.PodRunning) {
			in.Handler = p.ToPod()
		}
	}
	for _, v := range vmis {
		// The index names every node a VMI's status does (a migration's
		// target too); the node's VMs are those it runs on.
		if v.NodeName.String() != name {
			continue
		}
		vm := nodeverdict.VM{Namespace: v.GetNamespace(), Name: v.GetName(), Running: v.Phase.String() == string(kubevirtv1.Running)}
		if ob, ok, _ := cachestore.Get[*projection.Observation](r.Store.Observations, v.GetNamespace()+"/"+v.GetName()); ok {
			vm.Verdict = v1alpha1.Verdict(ob.Verdict.String())
			for i := range ob.Layers {
				vm.Reasons[i] = ob.Layers[i].Reason.String()
			}
			vm.NodeSince = ob.Layers[nodeLayerIndex].LastTransition.Time()
		}
		in.VMs = append(in.VMs, vm)
		vmKeys = append(vmKeys, types.NamespacedName{Namespace: vm.Namespace, Name: vm.Name})
	}
	// The index's order is a map's: sorted, the same world gives the same
	// evidence, and so no write.
	slices.SortFunc(in.VMs, func(a, b nodeverdict.VM) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	slices.SortFunc(vmKeys, func(a, b types.NamespacedName) int { return cmp.Compare(a.String(), b.String()) })
	return in, vmKeys, len(in.VMs) > 0 || in.Handler != nil, nil
}

// gatherDrain adds to in what the drain section needs: a prediction when
// the node is newly cordoned, and the objects a drain under way is tracked
// on. With no APIReader the controller tracks no drain, and the section
// stays as stored.
func (r *NodeReconciler) gatherDrain(ctx context.Context, in *nodeverdict.Input, vmKeys []types.NamespacedName) error {
	if r.APIReader == nil {
		return nil
	}
	var prev *v1alpha1.NodeDrainStatus
	if in.Previous != nil {
		prev = in.Previous.Drain
	}
	track := prev
	if nodeverdict.NeedsPrediction(in.Node.Spec.Unschedulable, prev) {
		p, err := r.predictDrain(ctx, in.Node.Name, vmKeys, in.Now)
		if err != nil {
			return fmt.Errorf("predicting the drain of node %s: %w", in.Node.Name, err)
		}
		// A new drain is tracked from its first instant.
		in.DrainPrediction, track = &p, &v1alpha1.NodeDrainStatus{VMs: predictedVMs(&p)}
	}
	var err error
	in.DrainObjects, err = r.drainObjects(track)
	return err
}

// predictedVMs are the prediction's VMs as the drain section names them,
// for reading what tracks them.
func predictedVMs(p *drain.Prediction) []v1alpha1.NodeDrainVM {
	out := make([]v1alpha1.NodeDrainVM, 0, len(p.VMs))
	for _, v := range p.VMs {
		out = append(out, v1alpha1.NodeDrainVM{Namespace: v.Namespace, Name: v.Name})
	}
	return out
}
