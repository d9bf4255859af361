package controllers

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/vmobs/vmobs/internal/domainstats"
	"github.com/vmobs/vmobs/internal/projection"
)

// DomainStats configures reading virt-handler's domain stats from
// Prometheus; nil on the Reconciler leaves them out (no --prometheus-url).
type DomainStats struct {
	Querier domainstats.Querier
	Config  domainstats.Config
	// Metrics may be nil.
	Metrics *domainstats.Metrics
}

// domainStatsSource starts the source as a runnable of the manager (on the
// leader only) and returns the channel through which it enqueues the VMs
// whose facts changed. The facts are read in gather; the VMIs whose domains
// are folded are the cache's Running ones.
func (r *Reconciler) domainStatsSource(mgr ctrl.Manager) (source.Source, error) {
	changed, notify := factsChanged()
	// The fold keeps the onset of memory pressure with the controller's
	// thresholds.
	cfg := r.DomainStats.Config
	cfg.Policy = r.Policy
	src := domainstats.NewSource(cfg, r.DomainStats.Querier, r.runningVMIs, notify, r.Now,
		r.DomainStats.Metrics, mgr.GetLogger().WithName("domainstats"))
	r.domain = src
	return changed, runOnLeader(mgr, src.Start)
}

// factsChanged returns a channel source of the VMs whose facts from
// outside the watched objects (domain stats, guest probes) changed, and
// the function that feeds it. A sender blocks while the queue is full:
// the workers drain it.
func factsChanged() (source.Source, func(types.NamespacedName)) {
	changed := make(chan event.GenericEvent, 1024)
	notify := func(k types.NamespacedName) {
		changed <- event.GenericEvent{Object: &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name}}}
	}
	return source.Channel[client.Object](changed, &handler.EnqueueRequestForObject{}), notify
}

// runOnLeader adds start as a runnable of the manager: it needs leader
// election, and begins once the cache has synced, since its first round
// reads what the cache holds.
func runOnLeader(mgr ctrl.Manager, start func(context.Context) error) error {
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			return nil
		}
		return start(ctx)
	}))
}

// runningVMIs lists the cache's Running VMIs, whose domains virt-handler
// exports.
func (r *Reconciler) runningVMIs() []domainstats.Target {
	var out []domainstats.Target
	r.eachRunningVMI(func(v *projection.VMI) {
		out = append(out, domainstats.Target{
			Key:  types.NamespacedName{Namespace: v.GetNamespace(), Name: v.GetName()},
			UID:  v.GetUID(),
			Node: v.NodeName.String(),
		})
	})
	return out
}

// eachRunningVMI calls f with each of the cache's Running VMIs.
func (r *Reconciler) eachRunningVMI(f func(*projection.VMI)) {
	for _, it := range r.Store.VMIs.List() {
		if v, ok := it.(*projection.VMI); ok && v.Phase.String() == string(kubevirtv1.Running) {
			f(v)
		}
	}
}
