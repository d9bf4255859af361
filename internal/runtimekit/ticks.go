package runtimekit

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

// Ticks is a source that sends key into the controller's queue at once and
// then every interval, while the manager runs it, which is only on the
// leader (a runnable without NeedLeaderElection runs under leader
// election). The tick goes through the same queue and workers as every
// other key, so its reconcile says that they still work.
func Ticks(mgr ctrl.Manager, key types.NamespacedName, interval time.Duration) (source.Source, error) {
	ticks := make(chan event.GenericEvent)
	tick := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
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
