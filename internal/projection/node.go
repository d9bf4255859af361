package projection

import (
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
// virt-handler's heartbeat and the Ready condition.
type Node struct {
	Meta
	Ready *Cond
}

// FromNode projects a Node.
func FromNode(n *corev1.Node) *Node {
	out := &Node{Meta: metaOf(&n.ObjectMeta, nodeLabels, nodeAnnotations, nodeVocab)}
	for i := range n.Status.Conditions {
		if c := &n.Status.Conditions[i]; c.Type == corev1.NodeReady {
			out.Ready = &Cond{Type: Intern(string(c.Type)), Status: Intern(string(c.Status)), Reason: Intern(c.Reason),
				Message: c.Message, LastTransition: metaTime(c.LastTransitionTime)}
			break
		}
	}
	return out
}

// ToNode rebuilds the Node as far as it was kept.
func (n *Node) ToNode() *corev1.Node {
	out := &corev1.Node{ObjectMeta: n.ObjectMeta()}
	if c := n.Ready; c != nil {
		out.Status.Conditions = []corev1.NodeCondition{{
			Type: corev1.NodeConditionType(c.Type.String()), Status: corev1.ConditionStatus(c.Status.String()),
			Reason: c.Reason.String(), Message: c.Message,
			LastTransitionTime: c.LastTransition.Meta(),
		}}
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
	return &c
}
