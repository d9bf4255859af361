package runtimekit

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	fcache "k8s.io/client-go/tools/cache/testing"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// oneInformer is a cache that has one informer, already started.
type oneInformer struct {
	cache.Cache
	inf toolscache.SharedIndexInformer
}

func (c oneInformer) GetInformer(context.Context, client.Object, ...cache.InformerGetOption) (cache.Informer, error) {
	return c.inf, nil
}

// When WaitForSync returns, the handler has been given every object of
// the informer's initial list (through the predicates, at the initial
// lists' priority), also when the informer synced long before.
func TestInformerSourceSyncsWithItsHandler(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lw := fcache.NewFakeControllerSource()
	const n = 2000
	for i := range n {
		lw.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("p%d", i)}})
	}
	inf := toolscache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, toolscache.Indexers{})
	go inf.Run(ctx.Done())
	if !toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("the informer did not sync")
	}

	q := priorityqueue.New[reconcile.Request]("source-test")
	defer q.ShutDown()
	skip := predicate.Funcs{CreateFunc: func(e event.CreateEvent) bool { return e.Object.GetName() != "p0" }}
	src := WatchKind(oneInformer{inf: inf}, &corev1.Pod{}, &handler.EnqueueRequestForObject{}, skip)
	if err := src.Start(ctx, q); err != nil {
		t.Fatal(err)
	}
	if err := src.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	if got := q.Len(); got != n-1 {
		t.Fatalf("at sync the queue holds %d keys, want %d (every pod but the one the predicate drops)", got, n-1)
	}
	_, prio, _ := q.GetWithPriority()
	if prio != handler.LowPriority {
		t.Errorf("an initial list's key came at priority %d, want %d", prio, handler.LowPriority)
	}
	// A second caller gets the same answer.
	if err := src.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
}

// A source that never starts times out with an error that names its kind;
// one stopped while it waits returns nil, as source.Kind does.
func TestInformerSourceWaitEnds(t *testing.T) {
	src := WatchKind(oneInformer{}, &corev1.Pod{}, &handler.EnqueueRequestForObject{})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := src.WaitForSync(ctx); err == nil {
		t.Error("WaitForSync of a source never started returned nil at its deadline")
	}
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	if err := src.WaitForSync(ctx); err != nil {
		t.Errorf("WaitForSync stopped: %v, want nil", err)
	}
}
