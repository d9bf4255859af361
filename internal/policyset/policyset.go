// Package policyset answers which policy a VM gets: its VMObservation's
// own spec.policy, then the VMObservationPolicies of its namespace that
// select it, most specific first, then the controller's flags. It is the
// one place that merges them; the controller applies the result to the
// flags (verdict.Policy.WithOverrides) and shows where each field came
// from in the status (docs/policy.md).
package policyset

import (
	"reflect"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/vmobs/vmobs/api/v1alpha1"
)

// Specificity orders policies that select the same VM: the one whose
// selector has more requirements (matchLabels entries plus
// matchExpressions) is the more specific. An empty selector, which selects
// the whole namespace, is the least specific.
func Specificity(p *v1alpha1.VMObservationPolicy) int {
	return len(p.Spec.Selector.MatchLabels) + len(p.Spec.Selector.MatchExpressions)
}

// Selector is the policy's selector, or an error when it cannot be read
// (an unknown operator, an invalid value): such a policy selects nothing.
func Selector(p *v1alpha1.VMObservationPolicy) (labels.Selector, error) {
	return metav1.LabelSelectorAsSelector(&p.Spec.Selector)
}

// Selects says whether p selects a VM with these labels.
func Selects(p *v1alpha1.VMObservationPolicy, vmLabels map[string]string) bool {
	sel, err := Selector(p)
	return err == nil && sel.Matches(labels.Set(vmLabels))
}

// Order sorts policies from the first to apply: the most specific first,
// ties broken by name.
func Order(ps []*v1alpha1.VMObservationPolicy) {
	slices.SortStableFunc(ps, func(a, b *v1alpha1.VMObservationPolicy) int {
		if d := Specificity(b) - Specificity(a); d != 0 {
			return d
		}
		return strings.Compare(a.Name, b.Name)
	})
}

// Result is a VM's policy: the fields set by spec.policy or a policy, and
// the status that says where each came from.
type Result struct {
	// Overrides are the fields set (nil when none): apply them to the
	// flags with verdict.Policy.WithOverrides.
	Overrides *v1alpha1.PolicyOverrides
	// Status is status.policy (nil when every field is a flag's).
	Status *v1alpha1.PolicyStatus
}

// maxSources is PolicyStatus.Sources' MaxItems.
const maxSources = 16

// Resolve merges a VM's policy from own (its VMObservation's spec.policy,
// possibly nil) and the policies of its namespace; vmLabels are its
// VirtualMachine's labels, and hasVM is false when there is no
// VirtualMachine to select (no policy applies then). Each field takes the
// first value set in: own, then the selecting policies in Order. A policy
// that sets a field to another value than a policy of the same
// specificity before it is overruled for that field, and named in
// Status.Overruled.
func Resolve(own *v1alpha1.PolicyOverrides, policies []*v1alpha1.VMObservationPolicy, vmLabels map[string]string, hasVM bool) Result {
	var selecting []*v1alpha1.VMObservationPolicy
	if hasVM {
		for _, p := range policies {
			if Selects(p, vmLabels) {
				selecting = append(selecting, p)
			}
		}
	}
	Order(selecting)

	out := &v1alpha1.PolicyOverrides{}
	dst := reflect.ValueOf(out).Elem()
	st := &v1alpha1.PolicyStatus{}
	// setBy is, per field, the specificity of the policy that set it (-1
	// for spec.policy), to tell a tie from a rule.
	setBy := make([]int, dst.NumField())
	add := func(src *v1alpha1.PolicyOverrides, name string, spec int) {
		if src == nil {
			return
		}
		v := reflect.ValueOf(src).Elem()
		var fields []string
		overruled := false
		for i := range v.NumField() {
			f := v.Field(i)
			if f.Kind() != reflect.Pointer || f.IsNil() {
				continue
			}
			cur := dst.Field(i)
			if cur.IsNil() {
				cur.Set(reflect.New(f.Type().Elem()))
				cur.Elem().Set(f.Elem())
				setBy[i] = spec
				fields = append(fields, jsonName(v.Type().Field(i)))
				continue
			}
			if setBy[i] == spec && !reflect.DeepEqual(cur.Interface(), f.Interface()) {
				overruled = true
			}
		}
		if overruled {
			st.Overruled = append(st.Overruled, name)
		}
		if len(fields) > 0 && len(st.Sources) < maxSources {
			st.Sources = append(st.Sources, v1alpha1.PolicySource{Policy: name, Fields: fields})
		}
	}
	add(own, "", -1)
	for _, p := range selecting {
		add(&p.Spec.Policy, p.Name, Specificity(p))
	}
	if len(st.Sources) == 0 {
		return Result{}
	}
	if len(st.Overruled) > maxSources {
		st.Overruled = st.Overruled[:maxSources]
	}
	slices.Sort(st.Overruled)
	// Deep copies: a Quantity's copy would share its decimal with the
	// cached policy.
	st.Effective = out.DeepCopy()
	return Result{Overrides: out.DeepCopy(), Status: st}
}

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "" {
		return f.Name
	}
	return name
}

// Overrules says whether q wins a tie against p on a VM both select: the
// same specificity, q first by name, and a field both set to different
// values.
func Overrules(q, p *v1alpha1.VMObservationPolicy) bool {
	if q.Name == p.Name || Specificity(q) != Specificity(p) || q.Name > p.Name {
		return false
	}
	qv, pv := reflect.ValueOf(&q.Spec.Policy).Elem(), reflect.ValueOf(&p.Spec.Policy).Elem()
	for i := range qv.NumField() {
		a, b := qv.Field(i), pv.Field(i)
		if a.Kind() == reflect.Pointer && !a.IsNil() && !b.IsNil() && !reflect.DeepEqual(a.Interface(), b.Interface()) {
			return true
		}
	}
	return false
}
