package simulator

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// mutate reads the object at k into a fresh obj, lets fn change it and
// writes it back as manager, retrying resourceVersion conflicts with a fresh
// read (retry.RetryOnConflict). With status set the write goes to the status
// subresource. Like KubeVirt's controllers it writes nothing when fn leaves
// the object unchanged. It returns the object as last read or written.
func mutate[T client.Object](ctx context.Context, c client.Client, k client.ObjectKey, newObj func() T, status bool, manager string, fn func(T) error) (T, error) {
	var out T
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj := newObj()
		if err := c.Get(ctx, k, obj); err != nil {
			return err
		}
		before := obj.DeepCopyObject()
		if err := fn(obj); err != nil {
			return err
		}
		out = obj
		if equality.Semantic.DeepEqual(before, obj) {
			return nil
		}
		if status {
			return c.Status().Update(ctx, obj, client.FieldOwner(manager))
		}
		return c.Update(ctx, obj, client.FieldOwner(manager))
	})
	if err != nil {
		var zero T
		what := "updating"
		if status {
			what = "updating the status of"
		}
		return zero, fmt.Errorf("%s %T %s as %s: %w", what, newObj(), k, manager, err)
	}
	return out, nil
}
