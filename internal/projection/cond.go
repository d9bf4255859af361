package projection

import corev1 "k8s.io/api/core/v1"

// Cond is a compact condition of a pod, node, VM or VMI: its type, status
// and reason interned, its message kept as is. Only a VMI's conditions
// keep their lastProbeTime (VMICond): the engine reads it of none other.
type Cond struct {
	Type, Status, Reason Sym
	Message              string
	LastTransition       Time
}

func condsOf[C any](in []C, keepType func(string) bool, conv func(*C) Cond) []Cond {
	n := 0
	for i := range in {
		if c := conv(&in[i]); keepType(c.Type.String()) {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	out := make([]Cond, 0, n)
	for i := range in {
		if c := conv(&in[i]); keepType(c.Type.String()) {
			out = append(out, c)
		}
	}
	return out
}

func all(string) bool { return true }

func corev1ConditionStatus(s Sym) corev1.ConditionStatus { return corev1.ConditionStatus(s.String()) }
