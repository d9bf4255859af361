package controllers

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/membership"
)

// Index names. Each maps a secondary object to the VM key it affects, so an
// event costs an index lookup, never a cluster-wide List.
const (
	// IndexMigrationVMI indexes VMIMs by spec.vmiName.
	IndexMigrationVMI = "vmobs.spec.vmiName"
	// IndexPodVMI indexes launcher pods by the name of their controlling VMI.
	IndexPodVMI = "vmobs.controller.vmi"
	// IndexVMINode indexes VMIs by every node their status names (the node
	// they run on, the migration's source and target, activePods' nodes).
	IndexVMINode = "vmobs.status.nodes"
)

// SetupIndexes registers the field indexes the reconciler and the map
// functions use.
func SetupIndexes(ctx context.Context, indexer client.FieldIndexer) error {
	for _, ix := range indexes() {
		if err := indexer.IndexField(ctx, ix.obj, ix.name, ix.fn); err != nil {
			return err
		}
	}
	return nil
}

type index struct {
	obj  client.Object
	name string
	fn   client.IndexerFunc
}

// indexes lists the field indexes; tests register the same on a fake
// client.
func indexes() []index {
	return []index{
		{&kubevirtv1.VirtualMachineInstanceMigration{}, IndexMigrationVMI, migrationVMIIndex},
		{&corev1.Pod{}, IndexPodVMI, podVMIIndex},
		{&kubevirtv1.VirtualMachineInstance{}, IndexVMINode, vmiNodeIndex},
	}
}

func migrationVMIIndex(o client.Object) []string {
	m, ok := o.(*kubevirtv1.VirtualMachineInstanceMigration)
	if !ok || m.Spec.VMIName == "" {
		return nil
	}
	return []string{m.Spec.VMIName}
}

func podVMIIndex(o client.Object) []string {
	if name := controllingVMI(o); name != "" {
		return []string{name}
	}
	return nil
}

func vmiNodeIndex(o client.Object) []string {
	vmi, ok := o.(*kubevirtv1.VirtualMachineInstance)
	if !ok {
		return nil
	}
	return membership.NodeNames(vmi, nil)
}

// controllingVMI is the name of the VMI that controls a launcher pod, or
// "" (the index needs a name; a pod known only by its created-by label has
// none).
func controllingVMI(o client.Object) string {
	ref, _ := membership.LauncherRef(o)
	return ref.Name
}

// SetupWithManager wires the watches: VMs and VMIs are primary, the rest map
// to the VM key through the owner reference or an index.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	r.setup()
	if err := SetupIndexes(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return err
	}
	ticks, err := livenessSource(mgr, LivenessTick)
	if err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("vmobservation").
		For(&v1alpha1.VMObservation{}, builder.WithPredicates(observationChanged())).
		Watches(&kubevirtv1.VirtualMachineInstance{}, &handler.EnqueueRequestForObject{}, builder.WithPredicates(vmiChanged())).
		Watches(&kubevirtv1.VirtualMachine{}, &handler.EnqueueRequestForObject{}, builder.WithPredicates(vmChanged())).
		Watches(&kubevirtv1.VirtualMachineInstanceMigration{}, handler.EnqueueRequestsFromMapFunc(migrationToVM), builder.WithPredicates(migrationChanged())).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(podToVM), builder.WithPredicates(podChanged())).
		Watches(&corev1.Node{}, r.nodeHandler(), builder.WithPredicates(nodeChanged())).
		WatchesRawSource(ticks).
		WithOptions(opts).
		Complete(r)
}

func migrationToVM(_ context.Context, o client.Object) []reconcile.Request {
	m, ok := o.(*kubevirtv1.VirtualMachineInstanceMigration)
	if !ok || m.Spec.VMIName == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: m.Namespace, Name: m.Spec.VMIName}}}
}

func podToVM(_ context.Context, o client.Object) []reconcile.Request {
	if name := controllingVMI(o); name != "" {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
	}
	return nil
}

// nodeHandler maps a Node event to the VMs whose VMI names the node. A
// change of virt-handler's heartbeat alone reaches only the VMs whose stored
// verdict is not Healthy (or that have none yet): a fresher heartbeat can
// turn Unknown into Healthy, but for a healthy VM it only moves the
// staleness deadline later, and every VM is requeued at its own deadline
// and at its next evidence refresh anyway. Without this, each heartbeat (one
// a minute per node) woke every VM on the node at once, and a source change
// arriving in that wave waited behind a hundred reconciles that wrote
// nothing.
func (r *Reconciler) nodeHandler() handler.EventHandler {
	enqueue := func(ctx context.Context, node string, q workqueue.TypedRateLimitingInterface[reconcile.Request], heartbeatOnly bool) {
		for _, req := range r.nodeToVMs(ctx, node) {
			if heartbeatOnly && !r.heartbeatMatters(ctx, req.NamespacedName) {
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
			o, ok1 := e.ObjectOld.(*corev1.Node)
			n, ok2 := e.ObjectNew.(*corev1.Node)
			enqueue(ctx, e.ObjectNew.GetName(), q, ok1 && ok2 && heartbeatOnly(o, n))
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.Object.GetName(), q, false)
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.Object.GetName(), q, false)
		},
	}
}

// heartbeatOnly says whether, of what the engine reads of a Node, only
// virt-handler's heartbeat changed.
func heartbeatOnly(o, n *corev1.Node) bool {
	return o.Labels[kubevirtv1.NodeSchedulable] == n.Labels[kubevirtv1.NodeSchedulable] &&
		readyOf(o) == readyOf(n) &&
		!deletionChanged(o, n)
}

// heartbeatMatters says whether a fresher heartbeat could change the VM's
// stored status: it has none yet, or its verdict is not Healthy.
func (r *Reconciler) heartbeatMatters(ctx context.Context, key types.NamespacedName) bool {
	obs := &v1alpha1.VMObservation{}
	if err := r.Client.Get(ctx, key, obs); err != nil {
		return true
	}
	return obs.Status.Verdict != v1alpha1.VerdictHealthy
}

// nodeToVMs lists the VMIs whose status names the node. The VMIs are read
// without a copy: only their keys are used.
func (r *Reconciler) nodeToVMs(ctx context.Context, node string) []reconcile.Request {
	vmis := &kubevirtv1.VirtualMachineInstanceList{}
	if err := r.Client.List(ctx, vmis, client.MatchingFields{IndexVMINode: node}, client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing VMIs of a node failed", "node", node)
		return nil
	}
	out := make([]reconcile.Request, 0, len(vmis.Items))
	for i := range vmis.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&vmis.Items[i])})
	}
	return out
}

// updateOnly builds a predicate that passes creates and deletes, and updates
// for which changed returns true. Resyncs (same resourceVersion) never pass.
func updateOnly[T client.Object](changed func(older, newer T) bool) predicate.Predicate {
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

func observationChanged() predicate.Predicate {
	// Our own status writes keep the generation: they must not come back as
	// work. Spec edits and owner changes (a recreated VM) do.
	return updateOnly(func(o, n *v1alpha1.VMObservation) bool {
		return o.Generation != n.Generation || o.Labels[membership.ManagedByLabel] != n.Labels[membership.ManagedByLabel]
	})
}

func vmiChanged() predicate.Predicate {
	// The VMI has no status subresource: its generation moves on every
	// status write, so compare what the engine reads instead.
	return updateOnly(func(o, n *kubevirtv1.VirtualMachineInstance) bool {
		return o.UID != n.UID ||
			!equality.Semantic.DeepEqual(o.Status, n.Status) ||
			!equality.Semantic.DeepEqual(o.Spec.EvictionStrategy, n.Spec.EvictionStrategy) ||
			!equality.Semantic.DeepEqual(o.Spec.TerminationGracePeriodSeconds, n.Spec.TerminationGracePeriodSeconds) ||
			!equality.Semantic.DeepEqual(o.Spec.ReadinessProbe == nil, n.Spec.ReadinessProbe == nil) ||
			!equality.Semantic.DeepEqual(o.Spec.Domain.Devices, n.Spec.Domain.Devices) ||
			!equality.Semantic.DeepEqual(o.Spec.Networks, n.Spec.Networks) ||
			!equality.Semantic.DeepEqual(o.Annotations, n.Annotations)
	})
}

func vmChanged() predicate.Predicate {
	return updateOnly(func(o, n *kubevirtv1.VirtualMachine) bool {
		return o.UID != n.UID ||
			!equality.Semantic.DeepEqual(o.Spec.RunStrategy, n.Spec.RunStrategy) ||
			!equality.Semantic.DeepEqual(o.Spec.Running, n.Spec.Running) ||
			!equality.Semantic.DeepEqual(o.Status, n.Status)
	})
}

func migrationChanged() predicate.Predicate {
	return updateOnly(func(o, n *kubevirtv1.VirtualMachineInstanceMigration) bool {
		return o.Spec.VMIName != n.Spec.VMIName || !equality.Semantic.DeepEqual(o.Status, n.Status)
	})
}

func podChanged() predicate.Predicate {
	return updateOnly(func(o, n *corev1.Pod) bool {
		return o.Spec.NodeName != n.Spec.NodeName ||
			!equality.Semantic.DeepEqual(o.Status, n.Status) ||
			!equality.Semantic.DeepEqual(o.Annotations, n.Annotations) ||
			!equality.Semantic.DeepEqual(o.Labels, n.Labels) ||
			!equality.Semantic.DeepEqual(o.OwnerReferences, n.OwnerReferences)
	})
}

// nodeChanged passes only what the engine reads of a Node: its Ready
// condition, virt-handler's heartbeat and the schedulable label. Kubelet's
// own status updates (every 10s to 1m) are dropped here.
func nodeChanged() predicate.Predicate {
	return updateOnly(func(o, n *corev1.Node) bool {
		return o.Annotations[kubevirtv1.VirtHandlerHeartbeat] != n.Annotations[kubevirtv1.VirtHandlerHeartbeat] ||
			o.Labels[kubevirtv1.NodeSchedulable] != n.Labels[kubevirtv1.NodeSchedulable] ||
			readyOf(o) != readyOf(n)
	})
}

func readyOf(n *corev1.Node) string {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return string(c.Status) + "/" + c.Reason
		}
	}
	return ""
}
