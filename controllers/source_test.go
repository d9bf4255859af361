package controllers

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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
	src := watchKind(oneInformer{inf: inf}, &corev1.Pod{}, &handler.EnqueueRequestForObject{}, skip)
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
	src := watchKind(oneInformer{}, &corev1.Pod{}, &handler.EnqueueRequestForObject{})
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

// A reconcile's log carries the keys the builder gives a controller For
// VMObservations, though its watches are raw sources.
func TestReconcileLogKeys(t *testing.T) {
	var line string
	log := funcr.New(func(_, args string) { line = args }, funcr.Options{})
	reconcileLog(log)(&reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "vm"}}).Info("x")
	for _, want := range []string{`"controller"="vmobservation"`, `"controllerGroup"="observability.vmobs.io"`, `"controllerKind"="VMObservation"`,
		`"VMObservation"={"name"="vm" "namespace"="ns"}`, `"namespace"="ns"`, `"name"="vm"`} {
		if !strings.Contains(line, want) {
			t.Errorf("the reconcile's log line %s lacks %s", line, want)
		}
	}
	reconcileLog(log)(nil).Info("x")
	if strings.Contains(line, `"name"=`) {
		t.Errorf("the controller's own log line names a VM: %s", line)
	}
}
