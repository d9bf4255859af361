package controllers

import (
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/vmobs/vmobs/internal/guestprobe"
	"github.com/vmobs/vmobs/internal/projection"
)

// GuestProbe configures probing the guest agents through virt-api's
// subresources; nil on the Reconciler leaves them out
// (--guest-probe-interval 0).
type GuestProbe struct {
	API    guestprobe.API
	Config guestprobe.Config
	// Metrics may be nil.
	Metrics *guestprobe.Metrics
}

// guestProbeSource starts the probes as a runnable of the manager (on the
// leader only: one instance probes) and returns the channel through which
// they enqueue the VMs whose facts changed. The facts are read in gather;
// the probes run on workers of their own, never in a reconcile.
func (r *Reconciler) guestProbeSource(mgr ctrl.Manager) (source.Source, error) {
	changed, notify := factsChanged()
	src := guestprobe.NewSource(r.GuestProbe.Config, r.GuestProbe.API, r.agentConnectedVMIs, notify, r.Now,
		r.GuestProbe.Metrics, mgr.GetLogger().WithName("guestprobe"))
	r.guest = src
	return changed, runOnLeader(mgr, src.Start)
}

// agentConnectedVMIs lists the cache's Running VMIs whose AgentConnected
// condition is True: virt-api answers the subresources for no other
// (kv:pkg/virt-api/rest/subresource.go GuestOSInfo's validate).
func (r *Reconciler) agentConnectedVMIs() []guestprobe.Target {
	var out []guestprobe.Target
	r.eachRunningVMI(func(v *projection.VMI) {
		for i := range v.Conditions {
			c := &v.Conditions[i].Cond
			if c.Type.String() == string(kubevirtv1.VirtualMachineInstanceAgentConnected) && c.Status.String() == "True" {
				out = append(out, guestprobe.Target{Key: types.NamespacedName{Namespace: v.GetNamespace(), Name: v.GetName()}, UID: v.GetUID()})
				return
			}
		}
	})
	return out
}
