package controllers

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/vmobs/vmobs/internal/domainstats"
	"github.com/vmobs/vmobs/internal/factsource"
	"github.com/vmobs/vmobs/internal/guestprobe"
	"github.com/vmobs/vmobs/internal/projection"
)

// DomainStats configures reading virt-handler's domain stats from
// Prometheus; nil in Options leaves them out (no --prometheus-url). The
// source's targets are the cache's Running VMIs (runningVMIs).
type DomainStats struct {
	Querier domainstats.Querier
	// Config is the source's, the memory thresholds of the engine's
	// policy included (internal/app derives both).
	Config domainstats.Config
	// Metrics may be nil.
	Metrics *domainstats.Metrics
}

// GuestProbe configures probing the guest agents through virt-api's
// subresources; nil in Options leaves them out (--guest-probe-interval
// 0). The probes' targets are the cache's Running VMIs whose agent is
// connected (agentConnectedVMIs); they run on workers of their own, never
// in a reconcile.
type GuestProbe struct {
	API    guestprobe.API
	Config guestprobe.Config
	// Metrics may be nil.
	Metrics *guestprobe.Metrics
}

// factSource is what the controller needs of every source of facts
// (factsource.Source, whatever its facts): a runnable and its ready event
// source. The facts themselves are read in gather.
type factSource interface {
	Start(ctx context.Context) error
	Changes() source.Source
}

// watchFactSources builds the configured sources of facts, runs each as
// a runnable of the manager (on the leader only: one instance queries
// and probes) and watches the VMs whose facts changed. A new source adds
// its configuration to Options, its target list and one case here.
func (r *Reconciler) watchFactSources(mgr ctrl.Manager, b *builder.TypedBuilder[ctrl.Request]) (*builder.TypedBuilder[ctrl.Request], error) {
	var sources []factSource
	if c := r.opts.DomainStats; c != nil {
		r.domain = domainstats.NewSource(c.Config, c.Querier, c.Metrics, r.factDeps(mgr, domainstats.Name, r.runningVMIs))
		sources = append(sources, r.domain)
	}
	if c := r.opts.GuestProbe; c != nil {
		r.guest = guestprobe.NewSource(c.Config, c.API, c.Metrics, r.factDeps(mgr, guestprobe.Name, r.agentConnectedVMIs))
		sources = append(sources, r.guest)
	}
	for _, s := range sources {
		if err := runOnLeader(mgr, s.Start); err != nil {
			return nil, err
		}
		b = b.WatchesRawSource(s.Changes())
	}
	return b, nil
}

// factDeps is what the controller hands the source name: the VMIs of its
// cache that targets picks, its clock, a logger and the source's series of
// the shared metrics.
func (r *Reconciler) factDeps(mgr ctrl.Manager, name string, targets func() []factsource.Target) factsource.Deps {
	available, lastSuccess := r.opts.FactSourceMetrics.For(name)
	return factsource.Deps{
		Targets: targets, Now: r.Now, Log: mgr.GetLogger().WithName(name),
		Available: available, LastSuccess: lastSuccess,
	}
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
// exports: the domain stats' targets.
func (r *Reconciler) runningVMIs() []factsource.Target {
	var out []factsource.Target
	r.eachRunningVMI(func(v *projection.VMI) {
		out = append(out, target(v))
	})
	return out
}

// agentConnectedVMIs lists the cache's Running VMIs whose AgentConnected
// condition is True, the guest probe's targets: virt-api answers the
// subresources for no other (kv:pkg/virt-api/rest/subresource.go
// GuestOSInfo's validate).
func (r *Reconciler) agentConnectedVMIs() []factsource.Target {
	var out []factsource.Target
	r.eachRunningVMI(func(v *projection.VMI) {
		for i := range v.Conditions {
			c := &v.Conditions[i].Cond
			if c.Type() == string(kubevirtv1.VirtualMachineInstanceAgentConnected) && c.Status() == "True" {
				out = append(out, target(v))
				return
			}
		}
	})
	return out
}

func target(v *projection.VMI) factsource.Target {
	return factsource.Target{
		Key:  types.NamespacedName{Namespace: v.GetNamespace(), Name: v.GetName()},
		UID:  v.GetUID(),
		Node: v.NodeName.String(),
	}
}

// eachRunningVMI calls f with each of the cache's Running VMIs.
func (r *Reconciler) eachRunningVMI(f func(*projection.VMI)) {
	for _, it := range r.Store.VMIs.List() {
		if v, ok := it.(*projection.VMI); ok && v.Phase.String() == string(kubevirtv1.Running) {
			f(v)
		}
	}
}
