package simulator

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// Typed read-modify-write helpers, one per kind and write path.

func (s *Simulator) updateVMI(ctx context.Context, ns, name, manager string, fn func(*kubevirtv1.VirtualMachineInstance) error) (*kubevirtv1.VirtualMachineInstance, error) {
	return mutate(ctx, s.Client, key(ns, name), func() *kubevirtv1.VirtualMachineInstance { return &kubevirtv1.VirtualMachineInstance{} }, false, manager, fn)
}

func (s *Simulator) updateVM(ctx context.Context, ns, name, manager string, fn func(*kubevirtv1.VirtualMachine) error) (*kubevirtv1.VirtualMachine, error) {
	return mutate(ctx, s.Client, key(ns, name), func() *kubevirtv1.VirtualMachine { return &kubevirtv1.VirtualMachine{} }, false, manager, fn)
}

func (s *Simulator) updateVMStatus(ctx context.Context, ns, name, manager string, fn func(*kubevirtv1.VirtualMachine) error) (*kubevirtv1.VirtualMachine, error) {
	return mutate(ctx, s.Client, key(ns, name), func() *kubevirtv1.VirtualMachine { return &kubevirtv1.VirtualMachine{} }, true, manager, fn)
}

func (s *Simulator) updateVMIM(ctx context.Context, ns, name, manager string, fn func(*kubevirtv1.VirtualMachineInstanceMigration) error) (*kubevirtv1.VirtualMachineInstanceMigration, error) {
	return mutate(ctx, s.Client, key(ns, name), func() *kubevirtv1.VirtualMachineInstanceMigration {
		return &kubevirtv1.VirtualMachineInstanceMigration{}
	}, false, manager, fn)
}

func (s *Simulator) updateVMIMStatus(ctx context.Context, ns, name, manager string, fn func(*kubevirtv1.VirtualMachineInstanceMigration) error) (*kubevirtv1.VirtualMachineInstanceMigration, error) {
	return mutate(ctx, s.Client, key(ns, name), func() *kubevirtv1.VirtualMachineInstanceMigration {
		return &kubevirtv1.VirtualMachineInstanceMigration{}
	}, true, manager, fn)
}

func (s *Simulator) updatePod(ctx context.Context, ns, name, manager string, fn func(*corev1.Pod) error) (*corev1.Pod, error) {
	return mutate(ctx, s.Client, key(ns, name), func() *corev1.Pod { return &corev1.Pod{} }, false, manager, fn)
}

func (s *Simulator) updatePodStatus(ctx context.Context, ns, name, manager string, fn func(*corev1.Pod) error) (*corev1.Pod, error) {
	return mutate(ctx, s.Client, key(ns, name), func() *corev1.Pod { return &corev1.Pod{} }, true, manager, fn)
}

func (s *Simulator) updateNode(ctx context.Context, name, manager string, fn func(*corev1.Node) error) (*corev1.Node, error) {
	return mutate(ctx, s.Client, key("", name), func() *corev1.Node { return &corev1.Node{} }, false, manager, fn)
}

func (s *Simulator) updateNodeStatus(ctx context.Context, name, manager string, fn func(*corev1.Node) error) (*corev1.Node, error) {
	return mutate(ctx, s.Client, key("", name), func() *corev1.Node { return &corev1.Node{} }, true, manager, fn)
}

// VMI conditions, with KubeVirt's update rule (kv:pkg/controller/conditions.go):
// a condition is replaced only when its status or reason changes, and then
// its lastTransitionTime moves to now.

func vmiCond(vmi *kubevirtv1.VirtualMachineInstance, t kubevirtv1.VirtualMachineInstanceConditionType) *kubevirtv1.VirtualMachineInstanceCondition {
	return condOf(vmi.Status.Conditions, t, func(c kubevirtv1.VirtualMachineInstanceCondition) kubevirtv1.VirtualMachineInstanceConditionType {
		return c.Type
	})
}

// condOf is the condition of type t in conds, to be changed in place, or
// nil: the lookup of vmiCond, podCond and nodeCond, whose condition types
// share no interface.
func condOf[C any, T comparable](conds []C, t T, typeOf func(C) T) *C {
	for i := range conds {
		if typeOf(conds[i]) == t {
			return &conds[i]
		}
	}
	return nil
}

func setVMICond(vmi *kubevirtv1.VirtualMachineInstance, c kubevirtv1.VirtualMachineInstanceCondition, now metav1.Time) {
	if c.LastTransitionTime.IsZero() {
		c.LastTransitionTime = now
	}
	if old := vmiCond(vmi, c.Type); old != nil {
		if old.Status == c.Status && old.Reason == c.Reason {
			return
		}
		*old = c
		return
	}
	vmi.Status.Conditions = append(vmi.Status.Conditions, c)
}

// raiseHotplugCond is virt-controller raising the hotplug condition t
// (HotVCPUChange, HotMemoryChange) on the VMI: True, with no transition
// time, unless the VMI has it already.
func raiseHotplugCond(vmi *kubevirtv1.VirtualMachineInstance, t kubevirtv1.VirtualMachineInstanceConditionType) {
	if vmiCond(vmi, t) == nil {
		vmi.Status.Conditions = append(vmi.Status.Conditions, kubevirtv1.VirtualMachineInstanceCondition{Type: t, Status: corev1.ConditionTrue})
	}
}

func removeVMICond(vmi *kubevirtv1.VirtualMachineInstance, t kubevirtv1.VirtualMachineInstanceConditionType) {
	out := vmi.Status.Conditions[:0]
	for _, c := range vmi.Status.Conditions {
		if c.Type != t {
			out = append(out, c)
		}
	}
	vmi.Status.Conditions = out
}

// setVMIPhase moves the VMI to phase and records the transition once per
// phase value, as virt-controller and virt-handler do.
func setVMIPhase(vmi *kubevirtv1.VirtualMachineInstance, phase kubevirtv1.VirtualMachineInstancePhase, now metav1.Time) {
	setPhase(&vmi.Status.Phase, &vmi.Status.PhaseTransitionTimestamps, phase,
		func(t kubevirtv1.VirtualMachineInstancePhaseTransitionTimestamp) kubevirtv1.VirtualMachineInstancePhase {
			return t.Phase
		},
		kubevirtv1.VirtualMachineInstancePhaseTransitionTimestamp{Phase: phase, PhaseTransitionTimestamp: now})
}

// setVMIMPhase is setVMIPhase for a migration, as virt-controller does.
func setVMIMPhase(m *kubevirtv1.VirtualMachineInstanceMigration, phase kubevirtv1.VirtualMachineInstanceMigrationPhase, now metav1.Time) {
	setPhase(&m.Status.Phase, &m.Status.PhaseTransitionTimestamps, phase,
		func(t kubevirtv1.VirtualMachineInstanceMigrationPhaseTransitionTimestamp) kubevirtv1.VirtualMachineInstanceMigrationPhase {
			return t.Phase
		},
		kubevirtv1.VirtualMachineInstanceMigrationPhaseTransitionTimestamp{Phase: phase, PhaseTransitionTimestamp: now})
}

// setPhase sets *cur to phase and appends stamp to *stamps unless a stamp
// of that phase is there already: KubeVirt records the first time a phase
// was entered, once.
func setPhase[P comparable, T any](cur *P, stamps *[]T, phase P, phaseOf func(T) P, stamp T) {
	if *cur == phase {
		return
	}
	*cur = phase
	for _, ts := range *stamps {
		if phaseOf(ts) == phase {
			return
		}
	}
	*stamps = append(*stamps, stamp)
}

// Pod conditions, with the kubelet's rule: lastTransitionTime moves only
// when the status changes.

func podCond(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	return condOf(p.Status.Conditions, t, func(c corev1.PodCondition) corev1.PodConditionType { return c.Type })
}

func setPodCond(p *corev1.Pod, c corev1.PodCondition, now metav1.Time) {
	if old := podCond(p, c.Type); old != nil {
		if old.Status == c.Status {
			c.LastTransitionTime = old.LastTransitionTime
		} else if c.LastTransitionTime.IsZero() {
			c.LastTransitionTime = now
		}
		*old = c
		return
	}
	if c.LastTransitionTime.IsZero() {
		c.LastTransitionTime = now
	}
	p.Status.Conditions = append(p.Status.Conditions, c)
}

func nodeCond(n *corev1.Node, t corev1.NodeConditionType) *corev1.NodeCondition {
	return condOf(n.Status.Conditions, t, func(c corev1.NodeCondition) corev1.NodeConditionType { return c.Type })
}

func setLabel(obj metav1.Object, k, v string) {
	obj.SetLabels(withKey(obj.GetLabels(), k, v))
}

func setAnnotation(obj metav1.Object, k, v string) {
	obj.SetAnnotations(withKey(obj.GetAnnotations(), k, v))
}

// withKey sets k to v in m, made if nil, and returns m.
func withKey(m map[string]string, k, v string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	m[k] = v
	return m
}

func removeFinalizer(obj metav1.Object, f string) {
	var out []string
	for _, x := range obj.GetFinalizers() {
		if x != f {
			out = append(out, x)
		}
	}
	obj.SetFinalizers(out)
}

func addFinalizer(obj metav1.Object, f string) {
	for _, x := range obj.GetFinalizers() {
		if x == f {
			return
		}
	}
	obj.SetFinalizers(append(obj.GetFinalizers(), f))
}
