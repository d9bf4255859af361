package kubectlvmobs

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/jsonpath"

	"github.com/vmobs/vmobs/api/v1alpha1"
)

// sortObservations sorts by namespace, then name: the order without
// --sort-by.
func sortObservations(objs []v1alpha1.VMObservation) []v1alpha1.VMObservation {
	out := slices.Clone(objs)
	slices.SortStableFunc(out, func(a, b v1alpha1.VMObservation) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// relaxedJSONPath turns what --sort-by takes, as kubectl does
// ("status.verdict", ".status.verdict" or "{.status.verdict}"), into a
// JSONPath template.
func relaxedJSONPath(expr string) (string, error) {
	e := strings.TrimSpace(expr)
	if strings.HasPrefix(e, "{") && strings.HasSuffix(e, "}") {
		e = strings.TrimSpace(e[1 : len(e)-1])
	}
	if e == "" || strings.ContainsAny(e, "{}") {
		return "", fmt.Errorf("invalid --sort-by %q: want a JSONPath such as .status.verdict or {.metadata.creationTimestamp}", expr)
	}
	if !strings.HasPrefix(e, ".") {
		e = "." + e
	}
	return "{" + e + "}", nil
}

// sortBy orders objs stably by the value the JSONPath expr finds in each,
// like `kubectl get --sort-by`: numbers and quantities by value, other
// values by their text, objects without the field first. As in kubectl, a
// path found in no object is an error: it is most likely misspelt.
func sortBy(objs []v1alpha1.VMObservation, expr string) ([]v1alpha1.VMObservation, error) {
	path, err := relaxedJSONPath(expr)
	if err != nil {
		return nil, err
	}
	jp := jsonpath.New("sort-by").AllowMissingKeys(true)
	if err := jp.Parse(path); err != nil {
		return nil, fmt.Errorf("invalid --sort-by %q: %w", expr, err)
	}
	type keyed struct {
		key any
		obj v1alpha1.VMObservation
	}
	items := make([]keyed, len(objs))
	found := false
	for i := range objs {
		items[i].obj = objs[i]
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&objs[i])
		if err != nil {
			return nil, err
		}
		res, err := jp.FindResults(u)
		if err != nil {
			return nil, fmt.Errorf("--sort-by %q on %s/%s: %w", expr, objs[i].Namespace, objs[i].Name, err)
		}
		if len(res) > 0 && len(res[0]) > 0 && res[0][0].IsValid() {
			items[i].key = res[0][0].Interface()
			found = true
		}
	}
	if !found && len(objs) > 0 {
		return nil, fmt.Errorf("couldn't find any field with path %q in the list of objects", path)
	}
	slices.SortStableFunc(items, func(a, b keyed) int { return compareValues(a.key, b.key) })
	out := make([]v1alpha1.VMObservation, len(items))
	for i := range items {
		out[i] = items[i].obj
	}
	return out, nil
}

// compareValues orders two values found by a JSONPath in an unstructured
// object: nil first, then numbers by value, booleans false first, strings
// that are both quantities (memory, counts) by amount, anything else by its
// text.
func compareValues(a, b any) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return -1
	case b == nil:
		return 1
	}
	if x, ok := number(a); ok {
		if y, ok := number(b); ok {
			return cmp.Compare(x, y)
		}
	}
	if x, ok := a.(bool); ok {
		if y, ok := b.(bool); ok {
			switch {
			case x == y:
				return 0
			case !x:
				return -1
			}
			return 1
		}
	}
	if x, ok := a.(string); ok {
		if y, ok := b.(string); ok {
			qx, errx := resource.ParseQuantity(x)
			qy, erry := resource.ParseQuantity(y)
			if errx == nil && erry == nil {
				return qx.Cmp(qy)
			}
			return cmp.Compare(x, y)
		}
	}
	return cmp.Compare(fmt.Sprint(a), fmt.Sprint(b))
}

// number reads the numbers an unstructured object holds.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int32:
		return float64(n), true
	case int:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}
