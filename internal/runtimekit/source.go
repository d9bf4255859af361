package runtimekit

import (
	"context"
	"errors"
	"fmt"
	"sync"

	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// informerSource watches one kind of the cache, as the builder's For and
// Watches do (source.Kind), but its WaitForSync returns the moment the
// handler has been given the informer's initial list. source.Kind polls
// for that every 100 ms (client-go's WaitForCacheSync), and the handler
// of an informer that has already synced (the manager starts them all
// with the cache, internal/cachestore) never has its list at the first
// look: every start, and every new leader, waited 100 ms more for its
// first reconcile (docs/scale.md, finding 21).
type informerSource struct {
	cache      cache.Cache
	obj        client.Object
	handler    handler.EventHandler
	predicates []predicate.Predicate
	// registered passes the handler's registration from Start to
	// WaitForSync.
	registered chan toolscache.ResourceEventHandlerRegistration
}

var _ source.SyncingSource = &informerSource{}

// WatchKind is a source of the cache's objects of obj's kind, for a
// controller's WatchesRawSource: source.Kind's, whose WaitForSync returns
// the moment the handler has the informer's initial list.
func WatchKind(c cache.Cache, obj client.Object, h handler.EventHandler, predicates ...predicate.Predicate) source.SyncingSource {
	return &informerSource{cache: c, obj: obj, handler: h, predicates: predicates, registered: make(chan toolscache.ResourceEventHandlerRegistration, 1)}
}

// Start implements source.Source: controller-runtime's Informer source
// adds the handler (predicates, priorities and all), and the registration
// is kept on the way.
func (s *informerSource) Start(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	inf, err := s.cache.GetInformer(ctx, s.obj, cache.BlockUntilSynced(false))
	if err != nil {
		return fmt.Errorf("the informer of %T: %w", s.obj, err)
	}
	src := &source.Informer{Informer: registering{Informer: inf, registered: s.registered}, Handler: s.handler, Predicates: s.predicates}
	return src.Start(ctx, q)
}

// WaitForSync implements source.SyncingSource: it returns once the
// informer has synced and the handler has been given every object of its
// initial list.
func (s *informerSource) WaitForSync(ctx context.Context) error {
	select {
	case reg := <-s.registered:
		s.registered <- reg // for a second caller
		select {
		case <-reg.HasSyncedChecker().Done():
			return nil
		case <-ctx.Done():
		}
	case <-ctx.Done():
	}
	if errors.Is(ctx.Err(), context.Canceled) { // stopped, as source.Kind
		return nil
	}
	return fmt.Errorf("timed out waiting for the cache of %T to sync: %w", s.obj, context.Cause(ctx))
}

func (s *informerSource) String() string { return fmt.Sprintf("informer source: %T", s.obj) }

// registering is an informer that passes on the registration of the
// handler added to it.
type registering struct {
	cache.Informer
	registered chan toolscache.ResourceEventHandlerRegistration
}

func (r registering) AddEventHandlerWithOptions(h toolscache.ResourceEventHandler, o toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	reg, err := r.Informer.AddEventHandlerWithOptions(h, o)
	if err == nil {
		r.registered <- reg
	}
	return reg, err
}

// QueueHandle holds a controller's work queue for what enqueues from
// outside its reconciles (the heartbeat timers, the VMs an incident wakes):
// Source hands the queue over when the controller starts, Queue is nil
// until then.
type QueueHandle struct {
	mu    sync.Mutex
	queue workqueue.TypedRateLimitingInterface[reconcile.Request]
}

// Source is the source to give the controller (WatchesRawSource); it
// watches nothing.
func (h *QueueHandle) Source() source.Source {
	return source.TypedFunc[reconcile.Request](func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		h.mu.Lock()
		h.queue = q
		h.mu.Unlock()
		return nil
	})
}

// Queue is the controller's queue, nil before the controller started.
func (h *QueueHandle) Queue() workqueue.TypedRateLimitingInterface[reconcile.Request] {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.queue
}
