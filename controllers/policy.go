package controllers

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/cachestore"
	"github.com/vmobs/vmobs/internal/policyset"
	"github.com/vmobs/vmobs/internal/projection"
	"github.com/vmobs/vmobs/internal/runtimekit"
	"github.com/vmobs/vmobs/internal/verdict"
)

// +kubebuilder:rbac:groups=observability.vmobs.io,resources=vmobservationpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=observability.vmobs.io,resources=vmobservationpolicies/status,verbs=get;update;patch

// policyOf is the VM's policy: its VMObservation's spec.policy, the
// VMObservationPolicies of its namespace that select its VirtualMachine,
// then the flags (policyset.Resolve, docs/policy.md).
func (r *Reconciler) policyOf(in *verdict.Input, own *v1alpha1.PolicyOverrides) (policyset.Result, error) {
	var policies []*v1alpha1.VMObservationPolicy
	if in.VM != nil && r.Store.Policies != nil {
		var err error
		if policies, err = r.Store.NamespacePolicies(in.Namespace); err != nil {
			return policyset.Result{}, fmt.Errorf("listing VMObservationPolicies: %w", err)
		}
	}
	var vmLabels map[string]string
	if in.VM != nil {
		vmLabels = in.VM.Labels
	}
	return policyset.Resolve(own, policies, vmLabels, in.VM != nil), nil
}

// policyHandler maps a VMObservationPolicy to the VMs it selects, before
// and after a change of its spec: the VMs of its namespace (an index)
// whose labels match. Policies change rarely; a namespace's VMs are read
// once per change.
func (r *Reconciler) policyHandler() handler.EventHandler {
	enqueue := func(q workqueue.TypedRateLimitingInterface[reconcile.Request], objs ...client.Object) {
		for _, key := range selectedVMs(r.Store, objs...) {
			q.Add(reconcile.Request{NamespacedName: key})
		}
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(q, e.Object)
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(q, e.ObjectOld, e.ObjectNew)
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(q, e.Object)
		},
	}
}

// selectedVMs are the keys of the VMs the policies select, sorted.
func selectedVMs(s *cachestore.Store, objs ...client.Object) []types.NamespacedName {
	keys := map[types.NamespacedName]bool{}
	for _, o := range objs {
		p, ok := o.(*v1alpha1.VMObservationPolicy)
		if !ok {
			continue
		}
		for _, vm := range s.NamespaceVMs(p.Namespace) {
			if policyset.Selects(p, vm.GetLabels()) {
				keys[types.NamespacedName{Namespace: vm.GetNamespace(), Name: vm.GetName()}] = true
			}
		}
	}
	return slices.SortedFunc(maps.Keys(keys), func(a, b types.NamespacedName) int {
		return strings.Compare(a.String(), b.String())
	})
}

// policySpecChanged passes a policy's creation, deletion and spec edits,
// not the status writes of its own controller.
func policySpecChanged() predicate.Funcs {
	return updateOnly(func(o, n *v1alpha1.VMObservationPolicy) bool { return o.Generation != n.Generation })
}

// vmLabelsChanged passes what changes which policies select a VM: its
// creation, deletion and labels.
func vmLabelsChanged() predicate.Funcs {
	return updateOnly(func(o, n *projection.VM) bool { return !maps.Equal(o.GetLabels(), n.GetLabels()) })
}

// PolicyReconciler writes VMObservationPolicies' status: how many VMs each
// selects, the policies that overrule it, Ready. It reads the cache the
// VMObservation controller reads.
type PolicyReconciler struct {
	Client client.Client
	Store  *cachestore.Store
	Now    func() time.Time
}

// Reconcile computes a policy's status and writes it when it changed.
func (p *PolicyReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pol, ok, err := cachestore.Get[*v1alpha1.VMObservationPolicy](p.Store.Policies, req.String())
	if err != nil || !ok {
		return reconcile.Result{}, err
	}
	all, err := p.Store.NamespacePolicies(pol.Namespace)
	if err != nil {
		return reconcile.Result{}, err
	}
	vms := p.Store.NamespaceVMs(pol.Namespace)
	vmLabels := make([]map[string]string, len(vms))
	for i, vm := range vms {
		vmLabels[i] = vm.GetLabels()
	}
	now := time.Now()
	if p.Now != nil {
		now = p.Now()
	}
	st := PolicyStatus(pol, all, vmLabels, now)
	if apiequality.Semantic.DeepEqual(st, pol.Status) {
		return reconcile.Result{}, nil
	}
	patch := pol.DeepCopy()
	patch.Status = st
	if err := p.Client.Status().Patch(ctx, patch, client.MergeFrom(pol)); err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, fmt.Errorf("patching VMObservationPolicy status: %w", err)
	}
	return reconcile.Result{}, nil
}

// PolicyStatus is a policy's status, from the policies of its namespace
// and the labels of its namespace's VMs: a pure function, now passed in.
func PolicyStatus(p *v1alpha1.VMObservationPolicy, all []*v1alpha1.VMObservationPolicy, vmLabels []map[string]string, now time.Time) v1alpha1.VMObservationPolicyStatus {
	st := v1alpha1.VMObservationPolicyStatus{
		ObservedGeneration: p.Generation,
		Conditions:         slices.Clone(p.Status.Conditions),
	}
	ready := metav1.Condition{Type: v1alpha1.ConditionReady, ObservedGeneration: p.Generation}
	if _, err := policyset.Selector(p); err != nil {
		ready.Status, ready.Reason = metav1.ConditionFalse, v1alpha1.ReasonInvalidSelector
		ready.Message = "The selector cannot be read: " + err.Error()
	} else {
		overruled := map[string]bool{}
		for _, l := range vmLabels {
			if !policyset.Selects(p, l) {
				continue
			}
			st.SelectedVMs++
			for _, q := range all {
				if policyset.Overrules(q, p) && policyset.Selects(q, l) {
					overruled[q.Name] = true
				}
			}
		}
		st.Overruled = slices.Sorted(maps.Keys(overruled))
		if len(st.Overruled) > 16 {
			st.Overruled = st.Overruled[:16]
		}
		ready.Status, ready.Reason = metav1.ConditionTrue, v1alpha1.ReasonPolicyInForce
		ready.Message = fmt.Sprintf("Sets the policy defaults of %d VMs", st.SelectedVMs)
		if len(st.Overruled) > 0 {
			ready.Message += fmt.Sprintf("; overruled on shared fields by %v (same specificity, first by name)", st.Overruled)
		}
	}
	// Stalled (kstatus, abnormal-true) goes with an invalid selector: the
	// policy will not apply until its spec is fixed.
	stalled := metav1.Condition{Type: v1alpha1.ConditionStalled, ObservedGeneration: p.Generation,
		Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonNotStalled, Message: "The selector is valid"}
	if ready.Status == metav1.ConditionFalse {
		stalled.Status, stalled.Reason, stalled.Message = metav1.ConditionTrue, ready.Reason, ready.Message
	}
	for _, c := range []metav1.Condition{ready, stalled} {
		c.LastTransitionTime = metav1.NewTime(now.Truncate(time.Second))
		meta.SetStatusCondition(&st.Conditions, c)
	}
	return st
}

// vmToPolicies maps a VM to the policies of its namespace, whose
// selected counts it may change.
func (p *PolicyReconciler) vmToPolicies(_ context.Context, o client.Object) []reconcile.Request {
	ps, err := p.Store.NamespacePolicies(o.GetNamespace())
	if err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(ps))
	for _, pol := range ps {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: pol.Namespace, Name: pol.Name}})
	}
	return out
}

// policyControllerName names the policy status controller in logs and
// metrics.
const policyControllerName = "vmobservationpolicy"

// setupPolicyStatus starts the controller of the policies' status. A
// sharded instance caches only its shard's VMs and would count only
// those: it leaves the policies' status alone (docs/policy.md).
func (r *Reconciler) setupPolicyStatus(mgr ctrl.Manager) error {
	if r.shard != nil {
		return nil
	}
	p := &PolicyReconciler{Client: mgr.GetClient(), Store: r.Store, Now: r.Now}
	c := mgr.GetCache()
	return ctrl.NewControllerManagedBy(mgr).
		Named(policyControllerName).
		WatchesRawSource(runtimekit.WatchKind(c, &v1alpha1.VMObservationPolicy{}, &handler.EnqueueRequestForObject{}, policySpecChanged())).
		WatchesRawSource(runtimekit.WatchKind(c, &kubevirtv1.VirtualMachine{}, handler.EnqueueRequestsFromMapFunc(p.vmToPolicies), vmLabelsChanged())).
		Complete(p)
}
