// Package controllers holds the reconciler that keeps one VMObservation per
// KubeVirt VM true: it gathers the VM's objects from the cache, asks the
// verdict engine for the status, and writes it only when it changed.
package controllers

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/cachestore"
	"github.com/vmobs/vmobs/internal/domainstats"
	"github.com/vmobs/vmobs/internal/guestprobe"
	"github.com/vmobs/vmobs/internal/history"
	"github.com/vmobs/vmobs/internal/membership"
	"github.com/vmobs/vmobs/internal/metrics"
	"github.com/vmobs/vmobs/internal/policyset"
	"github.com/vmobs/vmobs/internal/projection"
	"github.com/vmobs/vmobs/internal/runtimekit"
	"github.com/vmobs/vmobs/internal/startupgc"
	"github.com/vmobs/vmobs/internal/verdict"
)

// +kubebuilder:rbac:groups=observability.vmobs.io,resources=vmobservations,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=observability.vmobs.io,resources=vmobservations/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=kubevirt.io,resources=virtualmachines;virtualmachineinstances;virtualmachineinstancemigrations,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods;nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// The guest probe asks the guest agent through virt-api (the path of virtctl
// guestosinfo, userlist and fslist), these three read-only calls and no other
// subresource (console, vnc, portforward, pause, migrate... act on the VM):
// +kubebuilder:rbac:groups=subresources.kubevirt.io,resources=virtualmachineinstances/guestosinfo;virtualmachineinstances/userlist;virtualmachineinstances/filesystemlist,verbs=get
// The secure metrics endpoint checks scrapers' tokens and permissions:
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// Reconciler keeps the VMObservation of one VM (namespace/name shared by the
// VM, its VMI and the VMObservation) true.
type Reconciler struct {
	// Client writes; nothing is read through it.
	Client client.Client
	// Store holds the cached objects, as projections; SetupWithManager
	// sets it to the manager's.
	Store *cachestore.Store
	// Informers is what the manager's cache options
	// (cachestore.Options) were given; the Store needs it when the cache
	// is limited to namespaces.
	Informers *cachestore.Informers
	// StatusREST, when set, is a REST client for VMObservations through
	// which status applies are sent; their responses are not decoded (the
	// status we sent is what we know). Decoding them was 16% of a
	// reconcile's CPU in the scale harness. Unset, Client applies.
	StatusREST rest.Interface
	Recorder   recorder.EventRecorder
	// Now is the clock; tests replace it.
	Now func() time.Time
	// Metrics records verdict transitions; nil disables it.
	Metrics *metrics.Transitions
	// Liveness records every finished reconcile; nil disables it.
	Liveness *metrics.Liveness
	// Startup is the manager's start-up phase, ended when the initial
	// lists are reconciled; nil begins one that lowers nothing
	// (internal/startupgc).
	Startup *startupgc.Phase
	// APIReader reads from the API server, past the cache; sharding needs
	// it to tell a VM in another shard from a deleted one.
	APIReader client.Reader

	// opts are SetupWithManager's.
	opts Options
	// policy decides every status write; setup builds it from opts.
	policy *writePolicy
	// shard is nil when unsharded.
	shard *shard
	// domain holds the folded domain stats; nil without opts.DomainStats.
	domain *domainstats.Source
	// guest holds the folded guest probes; nil without opts.GuestProbe.
	guest *guestprobe.Source
	// storage holds the storage layer's stores; nil without opts.Storage.
	storage *cachestore.StorageStores
	// beats holds the VMs whose next look is their node's heartbeat
	// deadline (runtimekit.Heartbeats).
	beats *runtimekit.Heartbeats
	// incidents holds the VMs' claims on shared causes; nil without
	// opts.Incidents (incident.go).
	incidents *incidentWake
}

// setup builds what the reconciler derives from its options; it runs
// once, before the first Reconcile.
func (r *Reconciler) setup(opts Options) {
	r.opts = opts
	w := opts.Write
	r.policy = newWritePolicy(w.EvidenceRefreshInterval, w.ProgressCoalesceWindow, w.EvidenceRefreshQPS)
	r.shard = newShard(opts.Shard, opts.HandoverGrace)
	r.beats = runtimekit.NewHeartbeats(nil)
	if opts.Incidents != nil && r.shard == nil {
		r.incidents = &incidentWake{tracker: opts.Incidents, rollout: r.handlerRollout}
	}
}

// Reconcile gathers the VM's objects, evaluates them and writes the status
// when it changed. Errors are transient API errors: they are retried with
// backoff. Bad input is not an error: it is a reason in the status.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, err error) {
	defer func() {
		if err == nil {
			r.Liveness.Reconciled(r.now())
		}
	}()
	if req.NamespacedName == livenessKey {
		return ctrl.Result{}, nil
	}
	// A VM stays under its node's heartbeat timer only while its newest
	// verdict rests on the heartbeat; every other way out of here drops it.
	renewing := false
	defer func() {
		if !renewing && r.beats != nil {
			r.beats.Forget(req.NamespacedName)
		}
	}()
	log := ctrl.LoggerFrom(ctx).WithValues("VMObservation", klog.KRef(req.Namespace, req.Name))
	ctx = ctrl.LoggerInto(ctx, log)

	if r.shard != nil {
		if mine, err := r.inShard(ctx, req.NamespacedName); !mine || err != nil {
			return ctrl.Result{}, err
		}
	}

	// Gather, evaluate, decide, apply, record.
	in, obs, err := r.gather(req.NamespacedName)
	if err != nil {
		return ctrl.Result{}, err
	}

	if in.VM == nil && in.VMI == nil {
		if obs == nil || obs.Value(membership.ManagedByLabel) == membership.ManagedByValue {
			return ctrl.Result{}, r.deleteOrphan(ctx, obs)
		}
		// A user declared this one (say, in Git, before the VM exists): it
		// stays, and says that its VM is missing.
	}

	if obs == nil {
		if !r.opts.AutoCreate {
			return ctrl.Result{}, nil
		}
		created, wait, err := r.create(ctx, in)
		if err != nil || created == nil {
			// A create held back (the create budget) is a write held back.
			now := r.now()
			return nextLook(verdict.Deadlines{}, wait, now, false).result(now), err
		}
		obs = projection.FromObservation(created)
	} else if in.VM != nil || in.VMI != nil {
		if err := r.adopt(ctx, obs, in); err != nil {
			return ctrl.Result{}, err
		}
	}

	// Evaluate: a pure function of the gathered objects and now.
	pol, err := r.policyOf(&in, obs.Policy)
	if err != nil {
		return ctrl.Result{}, err
	}
	in.Policy = r.opts.Policy.WithOverrides(pol.Overrides)
	now := r.now()
	in.Now = now
	// The stored object, read from the API server once and only when
	// needed: the cache keeps neither its history nor its layers'
	// messages, and may be behind the server.
	stored := sync.OnceValues(func() (*v1alpha1.VMObservation, error) { return r.stored(ctx, obs) })
	e, err := r.evaluateAgainstServer(req.NamespacedName, in, pol, obs, stored, now)
	if err != nil {
		return ctrl.Result{}, err
	}
	next := nextLook(e.result.Deadlines, e.decision.retryAfter, now, r.beats != nil)
	if renewing = next.beat != nil; renewing {
		r.beats.Watch(req.NamespacedName, next.beat.node, next.beat.renewedAt, next.beat.at)
	}
	if !e.decision.write {
		log.V(5).Info("Status unchanged", "why", e.decision.why)
		return next.result(r.now()), nil
	}
	whole, err := stored()
	if err != nil {
		return ctrl.Result{}, err
	}
	st := &e.status
	added := addHistory(whole, e.prev, st, in)
	if err := r.applyStatus(ctx, obs, st); err != nil {
		return ctrl.Result{}, err
	}
	r.policy.wrote(req.NamespacedName, obs.GetUID(), now, e.decision)
	r.recordTransitions(obs, e.prev, st, e.quiet)
	logHistory(log, added)
	log.V(2).Info("Updated status", "verdict", st.Verdict, "reason", st.Reason, "why", e.decision.why)
	return next.result(r.now()), nil
}

// evaluateAgainstServer evaluates the VM against the cache's object and,
// when that evaluation needs the stored object (a verdict kept through the
// lag grace keeps its message) or would write while the cache is behind the
// server, again against the stored object. A cache behind the server for
// longer than the write policy trusts its memory of a write (a watch backs
// off for up to a minute after an API server outage) would otherwise have
// the status written again, its transitions at a new time. The read is the
// one a write makes anyway for the history.
func (r *Reconciler) evaluateAgainstServer(key types.NamespacedName, in verdict.Input, pol policyset.Result, obs *projection.Observation,
	stored func() (*v1alpha1.VMObservation, error), now time.Time) (evaluation, error) {
	e := r.evaluate(key, in, pol, obs, obs.Previous(), now)
	if !e.result.NeedsMessages && !e.decision.write {
		return e, nil
	}
	whole, err := stored()
	if err != nil || whole == nil {
		return e, err
	}
	if !e.result.NeedsMessages && whole.ResourceVersion == obs.ResourceVersion {
		return e, nil
	}
	// The cache's projection serves while it is of the stored object; the
	// stored object is projected (its hashes too) only when it is newer.
	o := obs
	if whole.ResourceVersion != obs.ResourceVersion {
		o = projection.FromObservation(whole)
	}
	return r.evaluate(key, in, pol, o, o.PreviousWithMessages(whole), now), nil
}

// evaluation is the VM evaluated against a previous status, and the write
// decided against the object that status is of.
type evaluation struct {
	prev     *v1alpha1.VMObservationStatus
	result   verdict.Result
	status   v1alpha1.VMObservationStatus
	quiet    []string
	decision writeDecision
}

// evaluate runs the engine on in against prev, the status of o (the cache's
// object, or the stored one read whole), and decides the write against o.
func (r *Reconciler) evaluate(key types.NamespacedName, in verdict.Input, pol policyset.Result, o *projection.Observation, prev *v1alpha1.VMObservationStatus, now time.Time) evaluation {
	in.Previous = prev
	e := evaluation{prev: prev, result: verdict.Evaluate(in)}
	st := &e.status
	*st = e.result.Status
	st.Policy = pol.Status
	st.ObservedGeneration = o.Generation
	for i := range st.Conditions {
		st.Conditions[i].ObservedGeneration = o.Generation
	}
	// status.vm is part of the status decided on; status.history is not
	// (projection.StatusHash leaves it out): it is added to a write that
	// happens anyway.
	st.VM = history.Life(prev, st, in)
	// The incident the VM is a member of goes out in this write, with the
	// transition that makes it one (incident.go).
	e.quiet = r.incidents.observe(key, o, st, in.Storage)
	e.decision = r.policy.decide(writeRequest{
		key: key, uid: o.GetUID(), stored: storedSums(o), next: st,
		storedWrite: o.LastWrite.Time(), now: now,
	})
	return e
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// gather reads everything the engine needs from the cache, rebuilding the
// typed objects the engine reads from their projections: short-lived, one
// reconcile's worth.
func (r *Reconciler) gather(key types.NamespacedName) (verdict.Input, *projection.Observation, error) {
	in := verdict.Input{Namespace: key.Namespace, Name: key.Name}
	k := key.String()

	vm, ok, err := cachestore.Get[*projection.VM](r.Store.VMs, k)
	if err != nil {
		return in, nil, fmt.Errorf("getting VirtualMachine: %w", err)
	}
	if ok {
		in.VM = vm.ToVM()
	}
	vmi, ok, err := cachestore.Get[*projection.VMI](r.Store.VMIs, k)
	if err != nil {
		return in, nil, fmt.Errorf("getting VirtualMachineInstance: %w", err)
	}
	if ok {
		in.VMI = vmi.ToVMI()
	}
	obs, _, err := cachestore.Get[*projection.Observation](r.Store.Observations, k)
	if err != nil {
		return in, nil, fmt.Errorf("getting VMObservation: %w", err)
	}
	if in.VMI == nil {
		if in.VM != nil {
			if in.Storage, err = r.storageFacts(&in); err != nil {
				return in, nil, fmt.Errorf("gathering storage: %w", err)
			}
		}
		return in, obs, nil
	}
	if r.domain != nil {
		in.Domain = r.domain.Facts(key)
	}
	if r.guest != nil {
		in.Guest = r.guest.Facts(key)
	}

	migrations, err := cachestore.ByIndex[*projection.Migration](r.Store.Migrations, cachestore.IndexMigrationVMI, k)
	if err != nil {
		return in, nil, fmt.Errorf("listing migrations: %w", err)
	}
	for _, m := range migrations {
		in.Migrations = append(in.Migrations, m.ToMigration())
	}

	pods, err := r.Store.LauncherPods(key.Namespace, key.Name)
	if err != nil {
		return in, nil, fmt.Errorf("listing launcher pods: %w", err)
	}
	for _, p := range pods {
		// A pod that names this VMI but carries another UID belongs to an
		// earlier VMI of the same name: it says nothing about this one.
		if pod := p.ToPod(); membership.IsLauncherOf(pod, in.VMI) {
			in.Pods = append(in.Pods, pod)
		}
	}

	if in.Storage, err = r.storageFacts(&in); err != nil {
		return in, nil, fmt.Errorf("gathering storage: %w", err)
	}

	in.Nodes = map[string]*corev1.Node{}
	for _, name := range membership.NodeNames(in.VMI, in.Pods) {
		node, ok, err := cachestore.Get[*projection.Node](r.Store.Nodes, name)
		if err != nil {
			return in, nil, fmt.Errorf("getting Node %s: %w", name, err)
		}
		if ok {
			in.Nodes[name] = node.ToNode()
		}
	}
	return in, obs, nil
}

// owner is the object a VMObservation hangs from (membership.Owner).
func owner(in verdict.Input) metav1.OwnerReference {
	ref, _ := membership.Owner(in.VM, in.VMI)
	return ref
}

// create creates the VMObservation. Sharded, one that exists but is not
// in our cache may be another shard's: takeOver answers, with the object
// to write or how long to wait.
func (r *Reconciler) create(ctx context.Context, in verdict.Input) (*v1alpha1.VMObservation, time.Duration, error) {
	obs := &v1alpha1.VMObservation{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       in.Namespace,
			Name:            in.Name,
			Labels:          r.observationLabels(in),
			OwnerReferences: []metav1.OwnerReference{owner(in)},
		},
		Spec: v1alpha1.VMObservationSpec{VMName: in.Name},
	}
	key := client.ObjectKeyFromObject(obs)
	r.policy.creating(key)
	if err := r.Client.Create(ctx, obs, client.FieldOwner(membership.FieldOwner)); err != nil {
		dropped := r.policy.createFailed(key)
		if apierrors.IsAlreadyExists(err) {
			if r.shard != nil {
				return r.takeOver(ctx, in)
			}
			if dropped {
				// Its create event came while ours was in flight, and
				// was taken for ours: the cache holds it now.
				return nil, time.Nanosecond, nil
			}
			// The cache has not seen this object yet; its create event
			// brings us back.
			return nil, 0, nil
		}
		return nil, 0, fmt.Errorf("creating VMObservation: %w", err)
	}
	r.policy.created(key, obs.GetUID())
	ctrl.LoggerFrom(ctx).V(1).Info("Created VMObservation", "owner", klog.KRef(in.Namespace, owner(in).Name), "ownerKind", owner(in).Kind)
	return obs, 0, nil
}

// adopt points the VMObservation at its current owner: a user-declared one
// gets an owner reference, and one whose VM was recreated (new UID) follows
// the new VM. Other owner references are kept.
func (r *Reconciler) adopt(ctx context.Context, obs *projection.Observation, in verdict.Input) error {
	want := owner(in)
	current := obs.GetOwnerReferences()
	refs := make([]metav1.OwnerReference, 0, len(current)+1)
	found := false
	for _, ref := range current {
		if membership.IsOwnerKind(ref) {
			if ref.Kind == want.Kind && ref.Name == want.Name && ref.UID == want.UID && !found {
				found = true
				refs = append(refs, ref)
			}
			continue // an owner that no longer exists
		}
		refs = append(refs, ref)
	}
	if found && len(refs) == len(current) {
		return nil
	}
	if !found {
		refs = append(refs, want)
	}
	o := &v1alpha1.VMObservation{ObjectMeta: obs.ObjectMeta()}
	o.OwnerReferences = current
	patch := client.MergeFromWithOptions(o.DeepCopy(), client.MergeFromWithOptimisticLock{})
	o.OwnerReferences = refs
	if err := r.Client.Patch(ctx, o, patch, client.FieldOwner(membership.FieldOwner)); err != nil {
		return fmt.Errorf("adopting VMObservation: %w", err)
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Adopted VMObservation", "ownerKind", want.Kind, "ownerUID", want.UID)
	return nil
}

// deleteOrphan deletes a VMObservation the controller created once neither
// its VM nor its VMI exists. The garbage collector would do it in a cluster
// that runs one, but may lag, and envtest runs none.
func (r *Reconciler) deleteOrphan(ctx context.Context, obs *projection.Observation) error {
	if obs == nil || obs.Value(membership.ManagedByLabel) != membership.ManagedByValue || obs.Deleted != 0 {
		return nil
	}
	r.policy.forget(client.ObjectKeyFromObject(obs))
	r.incidents.forget(client.ObjectKeyFromObject(obs))
	o := &v1alpha1.VMObservation{ObjectMeta: obs.ObjectMeta()}
	err := r.Client.Delete(ctx, o, client.Preconditions{UID: ptr.To(obs.GetUID()), ResourceVersion: ptr.To(obs.ResourceVersion)})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting VMObservation of a deleted VM: %w", err)
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Deleted VMObservation: its VM and VMI are gone")
	return nil
}
