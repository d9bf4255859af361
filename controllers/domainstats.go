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
	changed := make(chan event.GenericEvent, 1024)
	var src *domainstats.Source
	notify := func(k types.NamespacedName) {
		// The round blocks while the queue is full: the workers drain it.
		changed <- event.GenericEvent{Object: &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name}}}
	}
	src = domainstats.NewSource(r.DomainStats.Config, r.DomainStats.Querier, r.runningVMIs, notify, r.Now,
		r.DomainStats.Metrics, mgr.GetLogger().WithName("domainstats"))
	r.domain = src
	r.Policy.DomainStatsInterval = src.Interval()
	err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		// The first round folds what the cache holds: wait for it.
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			return nil
		}
		return src.Start(ctx)
	}))
	if err != nil {
		return nil, err
	}
	return source.Channel[client.Object](changed, &handler.EnqueueRequestForObject{}), nil
}

// runningVMIs lists the cache's Running VMIs, whose domains virt-handler
// exports.
func (r *Reconciler) runningVMIs() []domainstats.Target {
	items := r.Store.VMIs.List()
	out := make([]domainstats.Target, 0, len(items))
	for _, it := range items {
		v, ok := it.(*projection.VMI)
		if !ok || v.Phase.String() != string(kubevirtv1.Running) {
			continue
		}
		out = append(out, domainstats.Target{
			Key:  types.NamespacedName{Namespace: v.GetNamespace(), Name: v.GetName()},
			UID:  v.GetUID(),
			Node: v.NodeName.String(),
		})
	}
	return out
}
