package projection

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

var (
	nodeLabels      = []string{kubevirtv1.NodeSchedulable}
	nodeAnnotations = []string{kubevirtv1.VirtHandlerHeartbeat}
	nodeVocab       = map[string]bool{kubevirtv1.NodeSchedulable: true}
)

// Node is a Node as the engine reads it: KubeVirt's schedulable label,
// virt-handler's heartbeat and the Ready condition; and, for the
// NodeObservation, the kubelet's pressure conditions that are not False.
type Node struct {
	Meta
	Ready *Cond
	// Pressure holds the MemoryPressure, DiskPressure and PIDPressure
	// conditions whose status is not False, in the Node's order: nil for a
	// node under no pressure, as most are.
	Pressure []Cond
	// Unschedulable is spec.unschedulable: a cordon, the start of a drain
	// (a NodeObservation's drain section).
	Unschedulable bool
}

// pressureTypes are the kubelet's pressure conditions.
var pressureTypes = map[corev1.NodeConditionType]bool{
	corev1.NodeMemoryPressure: true, corev1.NodeDiskPressure: true, corev1.NodePIDPressure: true,
}

// FromNode projects a Node.
func FromNode(n *corev1.Node) *Node {
	out := &Node{Meta: metaOf(&n.ObjectMeta, nodeLabels, nodeAnnotations, nodeVocab), Unschedulable: n.Spec.Unschedulable}
	conv := func(c *corev1.NodeCondition) Cond {
		return newCond(string(c.Type), string(c.Status), c.Reason, c.Message, metaTime(c.LastTransitionTime))
	}
	for i := range n.Status.Conditions {
		c := &n.Status.Conditions[i]
		switch {
		case c.Type == corev1.NodeReady && out.Ready == nil:
			r := conv(c)
			out.Ready = &r
		case pressureTypes[c.Type] && c.Status != corev1.ConditionFalse:
			out.Pressure = append(out.Pressure, conv(c))
		}
	}
	if out.Pressure != nil {
		out.Pressure = slices.Clip(out.Pressure)
	}
	return out
}

// ToNode rebuilds the Node as far as it was kept.
func (n *Node) ToNode() *corev1.Node {
	out := &corev1.Node{ObjectMeta: n.ObjectMeta(), Spec: corev1.NodeSpec{Unschedulable: n.Unschedulable}}
	if c := n.Ready; c != nil {
		out.Status.Conditions = []corev1.NodeCondition{{
			Type: corev1.NodeConditionType(c.Type()), Status: corev1.ConditionStatus(c.Status()),
			Reason: c.Reason.String(), Message: c.Message(),
			LastTransitionTime: c.LastTransition.Meta(),
		}}
	}
	for _, c := range n.Pressure {
		out.Status.Conditions = append(out.Status.Conditions, corev1.NodeCondition{
			Type: corev1.NodeConditionType(c.Type()), Status: corev1.ConditionStatus(c.Status()),
			Reason: c.Reason.String(), Message: c.Message(), LastTransitionTime: c.LastTransition.Meta(),
		})
	}
	return out
}

// DeepCopyObject implements runtime.Object.
func (n *Node) DeepCopyObject() runtime.Object {
	c := *n
	c.Meta = n.Meta.deepCopy()
	if n.Ready != nil {
		r := *n.Ready
		c.Ready = &r
	}
	c.Pressure = slices.Clone(n.Pressure)
	return &c
}
