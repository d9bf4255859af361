package scale

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/analyze"
	"github.com/vmobs/vmobs/internal/verdict"
)

// floorFieldOwner is the field manager of the floor's writes.
const floorFieldOwner = "vmobs-scale-floor"

// floor is the least any controller must do to converge from cold, done by
// a bare client: LIST what the controller's informers list (VMs, VMIs,
// migrations, launcher pods, nodes; in parallel, as the informers start),
// evaluate each VM, and with `workers` goroutines (the controller's
// MaxConcurrentReconciles) create its VMObservation and write its status
// with server-side apply, as the controller does. It writes into the floor-
// twin of each namespace, so the VMs' own namespaces stay untouched, and
// returns when the last of the VMObservations has arrived on the harness's
// watch, as the cold start's clock does.
func floor(ctx context.Context, c client.Client, tr *tracker, policy verdict.Policy, workers int, timeout time.Duration) (total, listed time.Duration, n int, err error) {
	start := time.Now()
	var (
		lists controllerLists
		wg    sync.WaitGroup
		errs  = make(chan error, 5)
	)
	for _, list := range lists.calls(ctx, c) {
		wg.Go(func() {
			if err := list(); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return 0, 0, 0, err
	}
	listed = time.Since(start)
	groups := lists.groups()
	var todo []*analyze.VMGroup
	for i := range groups {
		if isVMNamespace(groups[i].Namespace) {
			todo = append(todo, &groups[i])
		}
	}

	want := make(map[string]summary, len(todo))
	var mu sync.Mutex
	work := make(chan *analyze.VMGroup)
	errc := make(chan error, workers)
	var ww sync.WaitGroup
	for range workers {
		ww.Go(func() {
			for g := range work {
				res := verdict.Evaluate(engineInput(g, policy, time.Now()))
				mu.Lock()
				want[g.Namespace+"/"+g.Name] = summarize(&res.Status)
				mu.Unlock()
				if err := floorWrite(ctx, c, floorNamespace(g.Namespace), g.Name, &res.Status); err != nil {
					select {
					case errc <- err:
					default:
					}
				}
			}
		})
	}
	for _, g := range todo {
		work <- g
	}
	close(work)
	ww.Wait()
	select {
	case err := <-errc:
		return 0, 0, 0, err
	default:
	}
	last, err := tr.waitMatch(ctx, want, func(k string) string { return "floor-" + k }, timeout)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("floor: %w", err)
	}
	return last.Sub(start), listed, len(todo), nil
}

// floorWrite creates the VMObservation and applies its status the way the
// controller does (controllers/status.go applyStatus).
func floorWrite(ctx context.Context, c client.Client, ns, name string, status *v1alpha1.VMObservationStatus) error {
	obs := &v1alpha1.VMObservation{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.VMObservationSpec{VMName: name},
	}
	if err := c.Create(ctx, obs, client.FieldOwner(floorFieldOwner)); err != nil {
		return fmt.Errorf("floor: creating %s/%s: %w", ns, name, err)
	}
	raw, err := json.Marshal(status)
	if err != nil {
		return err
	}
	var statusMap map[string]any
	if err := json.Unmarshal(raw, &statusMap); err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(),
		"kind":       "VMObservation",
		"metadata":   map[string]any{"name": name, "namespace": ns, "uid": string(obs.UID)},
		"status":     statusMap,
	}}
	if err := c.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(floorFieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("floor: applying the status of %s/%s: %w", ns, name, err)
	}
	return nil
}
