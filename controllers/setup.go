package controllers

import (
	"context"
	"reflect"
	"time"

	"github.com/go-logr/logr"

	corev1 "k8s.io/api/core/v1"

	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/cachestore"
	"github.com/vmobs/vmobs/internal/membership"
	"github.com/vmobs/vmobs/internal/projection"
	"github.com/vmobs/vmobs/internal/runtimekit"
	"github.com/vmobs/vmobs/internal/startupgc"
	"github.com/vmobs/vmobs/internal/verdict"
)

// SetupWithManager wires the watches, configured by options: VMs and VMIs
// are primary, the rest map to the VM key through the owner reference or
// an index.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, options Options) error {
	r.setup(options)
	opts := options.Controller
	store, err := cachestore.Open(context.Background(), mgr.GetCache(), r.Informers)
	if err != nil {
		return err
	}
	if err := store.AddIndexes(); err != nil {
		return err
	}
	r.Store = store
	if opts.NewQueue == nil {
		log := mgr.GetLogger()
		startup := r.Startup
		if startup == nil {
			// No phase of the manager's: the initial lists' end still
			// returns the start-up's memory.
			startup = startupgc.Begin(0, 0, log.WithName("startup"))
		}
		opts.NewQueue = func(name string, rl workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
			return runtimekit.NewQueue(name, rl, log, func(keys int) {
				startup.End(keys)
				r.incidents.settled()
			})
		}
	} else {
		// A queue of the caller's says nothing of the initial lists:
		// the incidents count every VM as evaluated from the start.
		r.incidents.settled()
	}
	if err := r.followOwnWrites(mgr); err != nil {
		return err
	}
	ticks, err := runtimekit.Ticks(mgr, livenessKey, LivenessTick)
	if err != nil {
		return err
	}
	b, err := r.watchFactSources(mgr, ctrl.NewControllerManagedBy(mgr))
	if err != nil {
		return err
	}
	if b, err = r.watchStorage(mgr, b); err != nil {
		return err
	}
	if opts.LogConstructor == nil {
		opts.LogConstructor = reconcileLog(mgr.GetLogger())
	}
	// The builder's For and Watches, with a source that starts the
	// workers as soon as the handlers have the initial lists
	// (runtimekit.WatchKind).
	if err := r.setupPolicyStatus(mgr); err != nil {
		return err
	}
	c := mgr.GetCache()
	b = b.
		Named(controllerName).
		WatchesRawSource(runtimekit.WatchKind(c, &v1alpha1.VMObservation{}, &handler.EnqueueRequestForObject{}, observationChanged(r.policy))).
		WatchesRawSource(runtimekit.WatchKind(c, &kubevirtv1.VirtualMachineInstance{}, &handler.EnqueueRequestForObject{}, vmiChanged())).
		WatchesRawSource(runtimekit.WatchKind(c, &kubevirtv1.VirtualMachine{}, &handler.EnqueueRequestForObject{}, vmChanged())).
		WatchesRawSource(runtimekit.WatchKind(c, &kubevirtv1.VirtualMachineInstanceMigration{}, handler.EnqueueRequestsFromMapFunc(migrationToVM), migrationChanged())).
		WatchesRawSource(runtimekit.WatchKind(c, &corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(podToVM), podChanged())).
		WatchesRawSource(runtimekit.WatchKind(c, &corev1.Node{}, r.nodeHandler(), nodeChanged())).
		WatchesRawSource(runtimekit.WatchKind(c, &v1alpha1.VMObservationPolicy{}, r.policyHandler(), policySpecChanged())).
		WatchesRawSource(ticks).
		WatchesRawSource(r.beats.Source())
	if r.incidents != nil {
		b = b.WatchesRawSource(r.incidents.source())
	}
	return b.
		WithOptions(opts).
		Complete(r)
}

// controllerName names the controller in logs and metrics.
const controllerName = "vmobservation"

// LivenessTick is how often the controller reconciles its own liveness
// tick. A status is written only when a VM's evidence changes, so in a
// quiet fleet no VM's reconcile says that the controller still works; the
// tick goes through the same queue and workers as every VM and sets
// vmobs_last_reconcile_timestamp_seconds (metrics.Liveness).
const LivenessTick = 30 * time.Second

// livenessKey is the tick's request. No VM has it: VMs are namespaced.
var livenessKey = types.NamespacedName{Name: "vmobs-liveness-tick"}

// reconcileLog is the logger of each reconcile, with the keys the builder
// gives a controller For VMObservations (the watches are raw sources
// here, so the builder knows no kind).
func reconcileLog(base logr.Logger) func(*reconcile.Request) logr.Logger {
	log := base.WithValues("controller", controllerName, "controllerGroup", v1alpha1.GroupVersion.Group, "controllerKind", "VMObservation")
	return func(req *reconcile.Request) logr.Logger {
		if req == nil {
			return log
		}
		return log.WithValues("VMObservation", klog.KRef(req.Namespace, req.Name), "namespace", req.Namespace, "name", req.Name)
	}
}

// followOwnWrites tells the write policy of each VMObservation the cache
// receives, so that it forgets a write once the cache holds it.
func (r *Reconciler) followOwnWrites(mgr ctrl.Manager) error {
	inf, err := mgr.GetCache().GetInformer(context.Background(), &v1alpha1.VMObservation{}, cache.BlockUntilSynced(false))
	if err != nil {
		return err
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, n any) {
			if o, ok := n.(*projection.Observation); ok {
				r.policy.caughtUp(client.ObjectKeyFromObject(o), o.GetUID(), o.Hash)
			}
		},
	})
	return err
}

func migrationToVM(_ context.Context, o client.Object) []reconcile.Request {
	m, ok := o.(*projection.Migration)
	if !ok || m.VMIName == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: m.GetNamespace(), Name: m.VMIName}}}
}

func podToVM(_ context.Context, o client.Object) []reconcile.Request {
	if ref, _ := membership.LauncherRef(o); ref.Name != "" {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: ref.Name}}}
	}
	return nil
}

// nodeHandler maps a Node event to the VMs whose VMI names the node. A
// change of virt-handler's heartbeat alone reaches only the VMs whose stored
// verdict is not Healthy (or that have none yet): a fresher heartbeat can
// turn Unknown into Healthy, but for a healthy VM it only moves the
// staleness deadline later, which the node's heartbeat timer follows
// (runtimekit.Heartbeats). Without this, each heartbeat (one
// a minute per node) woke every VM on the node at once, and a source change
// arriving in that wave waited behind a hundred reconciles that wrote
// nothing.
func (r *Reconciler) nodeHandler() handler.EventHandler {
	enqueue := func(ctx context.Context, node string, q workqueue.TypedRateLimitingInterface[reconcile.Request], heartbeatOnly bool) {
		for _, req := range r.nodeToVMs(ctx, node) {
			if heartbeatOnly && !r.heartbeatMatters(req.NamespacedName) {
				continue
			}
			q.Add(req)
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.Object.GetName(), q, false)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			o, ok1 := e.ObjectOld.(*projection.Node)
			n, ok2 := e.ObjectNew.(*projection.Node)
			if ok2 && r.beats != nil {
				// A renewed heartbeat moves the deadlines of the node's
				// VMs that rest on it, without waking them.
				if hb, err := verdict.ParseHeartbeat(n.Value(kubevirtv1.VirtHandlerHeartbeat)); err == nil {
					r.beats.Renew(n.GetName(), hb)
				}
			}
			enqueue(ctx, e.ObjectNew.GetName(), q, ok1 && ok2 && heartbeatOnly(o, n))
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if r.beats != nil {
				r.beats.RemoveNode(e.Object.GetName())
			}
			enqueue(ctx, e.Object.GetName(), q, false)
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.Object.GetName(), q, false)
		},
	}
}

// heartbeatOnly says whether, of what the engine reads of a Node, only
// virt-handler's heartbeat changed.
func heartbeatOnly(o, n *projection.Node) bool {
	return o.Value(kubevirtv1.NodeSchedulable) == n.Value(kubevirtv1.NodeSchedulable) &&
		readyOf(o) == readyOf(n) &&
		!deletionChanged(o, n)
}

// heartbeatMatters says whether a fresher heartbeat could change the VM's
// stored status: it has none yet, or its verdict is not Healthy.
func (r *Reconciler) heartbeatMatters(key types.NamespacedName) bool {
	obs, ok, err := cachestore.Get[*projection.Observation](r.Store.Observations, key.String())
	if err != nil || !ok {
		return true
	}
	return obs.Verdict.String() != string(v1alpha1.VerdictHealthy)
}

// nodeToVMs lists the VMIs whose status names the node.
func (r *Reconciler) nodeToVMs(ctx context.Context, node string) []reconcile.Request {
	vmis, err := cachestore.ByIndex[*projection.VMI](r.Store.VMIs, cachestore.IndexVMINode, node)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing VMIs of a node failed", "node", node)
		return nil
	}
	out := make([]reconcile.Request, 0, len(vmis))
	for _, v := range vmis {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(v)})
	}
	return out
}

// updateOnly builds a predicate that passes creates and deletes, and updates
// for which changed returns true. Resyncs (same resourceVersion) never pass.
func updateOnly[T client.Object](changed func(older, newer T) bool) predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			if e.ObjectOld.GetResourceVersion() == e.ObjectNew.GetResourceVersion() {
				return false
			}
			o, ok1 := e.ObjectOld.(T)
			n, ok2 := e.ObjectNew.(T)
			if !ok1 || !ok2 {
				return true
			}
			return changed(o, n) || deletionChanged(o, n)
		},
	}
}

func deletionChanged(o, n client.Object) bool {
	return (o.GetDeletionTimestamp() == nil) != (n.GetDeletionTimestamp() == nil)
}

func observationChanged(policy *writePolicy) predicate.Predicate {
	// Our own status writes keep the generation: they must not come back as
	// work. Spec edits and owner changes (a recreated VM) do.
	p := updateOnly(func(o, n *projection.Observation) bool {
		return o.Generation != n.Generation || o.Value(membership.ManagedByLabel) != n.Value(membership.ManagedByLabel)
	})
	// Nor do our own creates: the reconcile that created one wrote its
	// status (writepolicy.go, ownCreates).
	p.CreateFunc = func(e event.CreateEvent) bool {
		return !policy.ownCreate(client.ObjectKeyFromObject(e.Object), e.Object.GetUID())
	}
	return p
}

// The projections hold only what the engine reads: any difference but the
// resourceVersion is a change the engine may see. (The VMI's generation,
// which moves on every status write since its CRD has no status
// subresource, is not kept.)

func vmiChanged() predicate.Predicate {
	return updateOnly(func(o, n *projection.VMI) bool {
		oc, nc := *o, *n
		return changed(&oc, &nc, &oc.Meta, &nc.Meta)
	})
}

func vmChanged() predicate.Predicate {
	return updateOnly(func(o, n *projection.VM) bool {
		oc, nc := *o, *n
		return changed(&oc, &nc, &oc.Meta, &nc.Meta)
	})
}

func migrationChanged() predicate.Predicate {
	return updateOnly(func(o, n *projection.Migration) bool {
		oc, nc := *o, *n
		return changed(&oc, &nc, &oc.Meta, &nc.Meta)
	})
}

func podChanged() predicate.Predicate {
	return updateOnly(func(o, n *projection.Pod) bool {
		oc, nc := *o, *n
		return changed(&oc, &nc, &oc.Meta, &nc.Meta)
	})
}

// changed compares two copies of a projection (om and nm their metadata)
// after blanking, in the copies, the resourceVersion, which moves on every
// write.
func changed[T any](o, n *T, om, nm *projection.Meta) bool {
	om.ResourceVersion, nm.ResourceVersion = "", ""
	return !reflect.DeepEqual(o, n)
}

// nodeChanged passes only what the engine reads of a Node: its Ready
// condition, virt-handler's heartbeat and the schedulable label. Kubelet's
// own status updates (every 10s to 1m) are dropped here.
func nodeChanged() predicate.Predicate {
	return updateOnly(func(o, n *projection.Node) bool {
		return o.Value(kubevirtv1.VirtHandlerHeartbeat) != n.Value(kubevirtv1.VirtHandlerHeartbeat) ||
			o.Value(kubevirtv1.NodeSchedulable) != n.Value(kubevirtv1.NodeSchedulable) ||
			readyOf(o) != readyOf(n)
	})
}

func readyOf(n *projection.Node) string {
	if c := n.Ready; c != nil {
		return c.Status() + "/" + c.Reason.String()
	}
	return ""
}
