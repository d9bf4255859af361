package drain

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// Why a node is no target, counted for the NoTargetNode reason.
const (
	exclCordoned      = "cordoned"
	exclNotReady      = "not Ready"
	exclNotKubeVirt   = "not kubevirt.io/schedulable=true"
	exclNodeSelector  = "nodeSelector"
	exclAffinity      = "required node affinity"
	exclTaint         = "untolerated taint"
	exclDrained       = "the drained node"
	maxNamesInMessage = 3
)

// targetNodes are the nodes other than in.Node a VMI could be scheduled to:
// not cordoned, Ready, and marked kubevirt.io/schedulable=true by
// virt-handler (the launcher pod's nodeSelector, kv:pkg/virt-controller/
// services/template.go). excluded counts the others by cause.
func targetNodes(in Input) ([]*corev1.Node, map[string]int) {
	excluded := map[string]int{}
	var out []*corev1.Node
	for i := range in.Nodes {
		n := &in.Nodes[i]
		switch {
		case n.Name == in.Node:
			excluded[exclDrained]++
		case n.Spec.Unschedulable:
			excluded[exclCordoned]++
		case !nodeReady(n):
			excluded[exclNotReady]++
		case n.Labels[kubevirtv1.NodeSchedulable] != "true":
			excluded[exclNotKubeVirt]++
		default:
			out = append(out, n)
		}
	}
	slices.SortFunc(out, func(a, b *corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	return out, excluded
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func nodeByName(nodes []corev1.Node, name string) *corev1.Node {
	for i := range nodes {
		if nodes[i].Name == name {
			return &nodes[i]
		}
	}
	return nil
}

// fittingTargets are the targets the VMI's nodeSelector, required node
// affinity and tolerations allow, as the scheduler filters the target pod
// of a migration or the pod of a restarted VMI. When none fits, noTarget
// says why, counting every node by its first cause.
func fittingTargets(in Input, vmi *kubevirtv1.VirtualMachineInstance, targets []*corev1.Node, base map[string]int) ([]*corev1.Node, Reason) {
	excluded := map[string]int{}
	for k, n := range base {
		excluded[k] = n
	}
	var fits []*corev1.Node
	for _, n := range targets {
		switch {
		case !labels.SelectorFromSet(vmi.Spec.NodeSelector).Matches(labels.Set(n.Labels)):
			excluded[exclNodeSelector]++
		case !requiredAffinity(vmi.Spec.Affinity, n):
			excluded[exclAffinity]++
		case untolerated(vmi.Spec.Tolerations, n):
			excluded[exclTaint]++
		default:
			fits = append(fits, n)
		}
	}
	if len(fits) > 0 {
		return fits, Reason{}
	}
	if msg, bad := in.unreadable(KindNodes); bad {
		// Without the nodes, a target is assumed: the note says so.
		return []*corev1.Node{{}}, Reason{Code: ReasonNodesUnreadable, Message: "nodes could not be read, a target node is assumed: " + msg}
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(excluded)) {
		parts = append(parts, fmt.Sprintf("%d %s", excluded[k], k))
	}
	msg := "no other node can take the VMI"
	if len(parts) > 0 {
		msg += " (" + strings.Join(parts, ", ") + ")"
	}
	if len(vmi.Spec.NodeSelector) > 0 {
		msg += "; nodeSelector " + labels.SelectorFromSet(vmi.Spec.NodeSelector).String()
	}
	return nil, Reason{Code: ReasonNoTargetNode, Message: msg, Source: srcScheduler}
}

// requiredAffinity says whether node n satisfies the affinity's
// requiredDuringSchedulingIgnoredDuringExecution node selector: one of its
// terms matches (k8s:pkg/scheduler/framework/plugins/nodeaffinity). A term
// that cannot be parsed matches nothing, as in the scheduler.
func requiredAffinity(a *corev1.Affinity, n *corev1.Node) bool {
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return true
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		if len(term.MatchExpressions) == 0 && len(term.MatchFields) == 0 {
			continue // an empty term matches no node
		}
		if matchRequirements(term.MatchExpressions, labels.Set(n.Labels)) &&
			matchRequirements(term.MatchFields, labels.Set{"metadata.name": n.Name}) {
			return true
		}
	}
	return false
}

func matchRequirements(reqs []corev1.NodeSelectorRequirement, set labels.Set) bool {
	for _, r := range reqs {
		var op selection.Operator
		vals := r.Values
		switch r.Operator {
		case corev1.NodeSelectorOpIn:
			op = selection.In
		case corev1.NodeSelectorOpNotIn:
			op = selection.NotIn
		case corev1.NodeSelectorOpExists:
			op, vals = selection.Exists, nil
		case corev1.NodeSelectorOpDoesNotExist:
			op, vals = selection.DoesNotExist, nil
		case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
			if len(vals) != 1 {
				return false
			}
			if _, err := strconv.ParseInt(vals[0], 10, 64); err != nil {
				return false
			}
			op = selection.GreaterThan
			if r.Operator == corev1.NodeSelectorOpLt {
				op = selection.LessThan
			}
		default:
			return false
		}
		req, err := labels.NewRequirement(r.Key, op, vals)
		if err != nil || !req.Matches(set) {
			return false
		}
	}
	return true
}

// untolerated says whether n has a NoSchedule or NoExecute taint the
// tolerations do not tolerate.
func untolerated(tols []corev1.Toleration, n *corev1.Node) bool {
	for i := range n.Spec.Taints {
		t := &n.Spec.Taints[i]
		if t.Effect != corev1.TaintEffectNoSchedule && t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		if !slices.ContainsFunc(tols, func(tol corev1.Toleration) bool { return tol.ToleratesTaint(logr.Discard(), t, false) }) {
			return true
		}
	}
	return false
}

func nodeNames(nodes []*corev1.Node, most int) string {
	var names []string
	for i, n := range nodes {
		if n.Name == "" {
			continue // assumed, the nodes being unreadable
		}
		if i == most {
			names = append(names, fmt.Sprintf("and %d more", len(nodes)-most))
			break
		}
		names = append(names, n.Name)
	}
	if len(names) == 0 {
		return ""
	}
	return " (" + strings.Join(names, ", ") + ")"
}
