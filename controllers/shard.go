package controllers

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/cachestore"
	"github.com/vmobs/vmobs/internal/membership"
	"github.com/vmobs/vmobs/internal/projection"
	"github.com/vmobs/vmobs/internal/verdict"
)

// Sharding (docs/controller.md, "Sharding"). Several instances split a
// cluster by a label selector on the VM (--vm-selector). A VM's shard is
// decided from the VM's own metadata labels, a standalone VMI's from the
// VMI's: KubeVirt copies a VM's spec.template.metadata.labels to the VMI
// only when it creates the VMI, and never its metadata.labels, so a VMI's
// labels cannot say which shard its VM is in now.
//
// The VMObservation carries, for every label key the selector names, the
// value its VM has (or not the key, when the VM has not): it matches the
// selector exactly when its VM does, so each instance's VMObservation cache
// (filtered by the same selector) holds its own shard's ones and nobody
// else's. That label is the lock on the VMObservation: an instance writes
// a status only while its cache holds the VM, and the VM's shard moves in
// this order:
//
//  1. the VM is relabelled; it leaves the old shard's VM cache and enters
//     the new one's;
//  2. the old shard, seeing the VM gone from its cache, reads it from the
//     API server and releases the VMObservation: it copies the VM's new
//     values onto it (a patch with optimistic lock), so the VMObservation
//     leaves its cache and enters the new shard's; it never deletes it;
//  3. the new shard writes the status from then on.
//
// The old shard's last write comes before its release (both are reconciles
// of the same key, which controller-runtime never runs twice at once), and
// the new shard's first write after it. Should the old shard not release
// (no instance runs for it any more, or it was unsharded), the new shard
// takes the VMObservation over once handoverGrace has passed.

// DefaultHandoverGrace is how long a shard waits for another shard to
// release a VMObservation whose VM it now holds, before it takes it over.
// A running shard releases within its informer's lag and its queue's wait;
// the grace matters only when the old shard is gone.
const DefaultHandoverGrace = 10 * time.Second

// shard is one instance's part of the cluster.
type shard struct {
	sel labels.Selector
	// keys are the label keys sel names: the labels a VMObservation
	// copies from its VM.
	keys  []string
	grace time.Duration

	mu sync.Mutex
	// waiting holds, per VMObservation held by another shard, since when
	// we wait for its release.
	waiting map[types.NamespacedName]heldSince
}

type heldSince struct {
	uid   types.UID
	since time.Time
}

// newShard returns nil for a nil or empty selector: unsharded.
func newShard(sel labels.Selector, grace time.Duration) *shard {
	if sel == nil || sel.Empty() {
		return nil
	}
	if grace <= 0 {
		grace = DefaultHandoverGrace
	}
	return &shard{sel: sel, keys: cachestore.SelectorKeys(sel), grace: grace}
}

// copyLabels sets on dst, for each of the shard's keys, src's value, and
// removes the keys src has not. It says whether dst changed.
func (s *shard) copyLabels(dst map[string]string, src map[string]string) bool {
	changed := false
	for _, k := range s.keys {
		v, ok := src[k]
		old, had := dst[k]
		switch {
		case ok && (!had || old != v):
			dst[k] = v
			changed = true
		case !ok && had:
			delete(dst, k)
			changed = true
		}
	}
	return changed
}

// claimedElsewhere says whether a VMObservation that does not match this
// shard carries a value for one of its keys: another shard set it and may
// still be writing it. One with none of the keys (created before sharding,
// or declared by hand) is nobody's and is taken at once.
func (s *shard) claimedElsewhere(obs map[string]string) bool {
	for _, k := range s.keys {
		if _, ok := obs[k]; ok {
			return true
		}
	}
	return false
}

// waitFor returns how much longer to wait for the release of a
// VMObservation held by another shard; 0 means take it now.
func (s *shard) waitFor(key types.NamespacedName, uid types.UID, now time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.waiting[key]
	if !ok || h.uid != uid {
		if s.waiting == nil {
			s.waiting = map[types.NamespacedName]heldSince{}
		}
		h = heldSince{uid: uid, since: now}
		s.waiting[key] = h
	}
	return max(0, h.since.Add(s.grace).Sub(now))
}

func (s *shard) stopWaiting(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.waiting, key)
}

// sourceLabels are the labels that decide a VM's shard: the VM's, or a
// standalone VMI's.
func sourceLabels(in verdict.Input) map[string]string {
	switch {
	case in.VM != nil:
		return in.VM.Labels
	case in.VMI != nil:
		return in.VMI.Labels
	}
	return nil
}

// ownedByVM says whether a VMI was created by a VM (its controller owner
// reference), whose labels then decide its shard.
func ownedByVM(vmi *kubevirtv1.VirtualMachineInstance) bool {
	ref := metav1.GetControllerOfNoCopy(vmi)
	return ref != nil && ref.Kind == "VirtualMachine" && ref.APIVersion == kubevirtv1.GroupVersion.String()
}

// observationLabels are the labels of a VMObservation the controller
// creates: managed-by and, when sharded, the shard's keys copied from the
// VM.
func (r *Reconciler) observationLabels(in verdict.Input) map[string]string {
	l := map[string]string{membership.ManagedByLabel: membership.ManagedByValue}
	if r.shard != nil {
		r.shard.copyLabels(l, sourceLabels(in))
	}
	return l
}

// inShard decides, before anything is gathered, whether this instance
// handles the key. Most keys are answered from the cache: the VM is in it
// (ours), or it is not and we hold no VMObservation of that name (another
// shard's). Only a VMObservation we hold whose VM left our cache costs a
// read from the API server: the VM was relabelled to another shard (we
// release the VMObservation) or deleted (we keep it, and delete it once
// its VMI is gone too, as unsharded).
func (r *Reconciler) inShard(ctx context.Context, key types.NamespacedName) (bool, error) {
	s := r.shard
	k := key.String()
	_, ok, err := cachestore.Get[*projection.VM](r.Store.VMs, k)
	if err != nil {
		return false, fmt.Errorf("getting VirtualMachine: %w", err)
	}
	if ok {
		return true, nil
	}
	v, ok, err := cachestore.Get[*projection.VMI](r.Store.VMIs, k)
	if err != nil {
		return false, fmt.Errorf("getting VirtualMachineInstance: %w", err)
	}
	var vmi *kubevirtv1.VirtualMachineInstance
	if ok {
		vmi = v.ToVMI()
	}
	standalone := vmi != nil && !ownedByVM(vmi)
	if standalone && s.sel.Matches(labels.Set(vmi.Labels)) {
		return true, nil
	}

	o, ok, err := cachestore.Get[*projection.Observation](r.Store.Observations, k)
	if err != nil {
		return false, fmt.Errorf("getting VMObservation: %w", err)
	}
	if !ok {
		s.stopWaiting(key)
		return false, nil // another shard's, or nobody's
	}
	// What release patches: the identity, resourceVersion and labels, all
	// of which the projection keeps.
	obs := &v1alpha1.VMObservation{ObjectMeta: o.ObjectMeta()}
	if standalone {
		return false, r.release(ctx, obs, vmi.Labels)
	}
	live := &kubevirtv1.VirtualMachine{}
	switch err := r.APIReader.Get(ctx, key, live); {
	case apierrors.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("reading VirtualMachine from the API server: %w", err)
	case s.sel.Matches(labels.Set(live.Labels)):
		// Ours; the cache has not seen it yet, and its event will come.
		return false, nil
	}
	return false, r.release(ctx, obs, live.Labels)
}

// release hands a VMObservation to the shard its VM is in now: it copies
// the VM's values of our keys onto it, so that it leaves our cache and
// enters the other shard's. The optimistic lock makes it fail, and retry,
// if the other shard took it over meanwhile.
func (r *Reconciler) release(ctx context.Context, obs *v1alpha1.VMObservation, src map[string]string) error {
	patch := client.MergeFromWithOptions(obs.DeepCopy(), client.MergeFromWithOptimisticLock{})
	if obs.Labels == nil {
		obs.Labels = map[string]string{}
	}
	if !r.shard.copyLabels(obs.Labels, src) {
		return nil
	}
	key := client.ObjectKeyFromObject(obs)
	r.policy.forget(key)
	if err := r.Client.Patch(ctx, obs, patch, client.FieldOwner(membership.FieldOwner)); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("releasing VMObservation to another shard: %w", err)
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Released VMObservation to another shard", "labels", shardValues(r.shard.keys, obs.Labels))
	return nil
}

// takeOver is create's answer when the VMObservation exists but is not in
// our cache: our cache lags (it was released to us), it is held by another
// shard (we wait for its release, up to the grace), or it is nobody's. It
// returns the VMObservation to write the status of, or how long to wait.
func (r *Reconciler) takeOver(ctx context.Context, in verdict.Input) (*v1alpha1.VMObservation, time.Duration, error) {
	s := r.shard
	key := types.NamespacedName{Namespace: in.Namespace, Name: in.Name}
	obs := &v1alpha1.VMObservation{}
	if err := r.APIReader.Get(ctx, key, obs); err != nil {
		// Deleted since the create failed: create it again.
		return nil, 0, fmt.Errorf("reading VMObservation from the API server: %w", err)
	}
	if s.sel.Matches(labels.Set(obs.Labels)) {
		s.stopWaiting(key)
		return obs, 0, nil
	}
	log := ctrl.LoggerFrom(ctx).WithValues("from", shardValues(s.keys, obs.Labels))
	forced := false
	if s.claimedElsewhere(obs.Labels) {
		if wait := s.waitFor(key, obs.UID, r.now()); wait > 0 {
			log.V(1).Info("Waiting for another shard to release the VMObservation", "wait", wait)
			return nil, wait, nil
		}
		forced = true
	}
	patch := client.MergeFromWithOptions(obs.DeepCopy(), client.MergeFromWithOptimisticLock{})
	if obs.Labels == nil {
		obs.Labels = map[string]string{}
	}
	s.copyLabels(obs.Labels, sourceLabels(in))
	if err := r.Client.Patch(ctx, obs, patch, client.FieldOwner(membership.FieldOwner)); err != nil {
		return nil, 0, fmt.Errorf("taking VMObservation over from another shard: %w", err)
	}
	s.stopWaiting(key)
	if forced {
		log.Info("Took over a VMObservation its shard did not release", "grace", s.grace)
	} else {
		log.V(1).Info("Took over VMObservation")
	}
	return obs, 0, nil
}

// shardValues are the values of keys in l, for the log.
func shardValues(keys []string, l map[string]string) map[string]string {
	out := map[string]string{}
	for _, k := range keys {
		if v, ok := l[k]; ok {
			out[k] = v
		}
	}
	return out
}
