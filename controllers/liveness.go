package controllers

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// LivenessTick is how often the controller reconciles its own liveness
// tick. A status is written only when a VM's evidence changes, so in a
// quiet fleet no VM's reconcile says that the controller still works; the
// tick goes through the same queue and workers as every VM and sets
// vmobs_last_reconcile_timestamp_seconds (metrics.Liveness).
const LivenessTick = 30 * time.Second

// livenessKey is the tick's request. No VM has it: VMs are namespaced.
var livenessKey = types.NamespacedName{Name: "vmobs-liveness-tick"}

// livenessSource sends a tick into the controller's queue every interval
// while the manager runs it, which is only on the leader (a runnable
// without NeedLeaderElection runs under leader election).
func livenessSource(mgr ctrl.Manager, interval time.Duration) (source.Source, error) {
	ticks := make(chan event.GenericEvent)
	tick := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: livenessKey.Name}}
	err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case ticks <- event.GenericEvent{Object: tick}:
			case <-ctx.Done():
				return nil
			}
			select {
			case <-t.C:
			case <-ctx.Done():
				return nil
			}
		}
	}))
	if err != nil {
		return nil, err
	}
	return source.Channel[client.Object](ticks, &handler.EnqueueRequestForObject{}), nil
}
