package verdict

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/api/v1alpha1"
)

// The rules on a Node's own signals (its Ready condition, virt-handler's
// heartbeat, the kubevirt.io/schedulable label) are defined once, here:
// the node layer of every VM (judgeNode) and the NodeObservation of the
// node (internal/nodeverdict) both apply them.

// NodeFinding is what one rule says of a Node.
type NodeFinding struct {
	// Verdict is empty when the rule finds nothing to report: Field and
	// Value are then context, evidence the layer rests on.
	Verdict v1alpha1.Verdict
	Reason  string
	Message string
	// Since is when the evidence says the situation began.
	Since time.Time
	// Note marks a Healthy finding that is worth knowing but is not the
	// layer's reason (HeartbeatMissing, NodeNotSchedulable).
	Note bool
	// Field, Value and At are the Node's field the finding rests on.
	Field, Value string
	At           time.Time
}

// HeartbeatState is what virt-handler's heartbeat on a Node says.
type HeartbeatState int

const (
	// HeartbeatAbsent: the Node has no kubevirt.io/heartbeat annotation.
	HeartbeatAbsent HeartbeatState = iota
	// HeartbeatMalformed: the annotation is not an RFC 3339 time.
	HeartbeatMalformed
	// HeartbeatFuture: the beat lies beyond the tolerated clock skew.
	HeartbeatFuture
	// HeartbeatStale: the beat is older than the timeout.
	HeartbeatStale
	// HeartbeatFresh: the beat is within the timeout.
	HeartbeatFresh
)

// Heartbeat is virt-handler's kubevirt.io/heartbeat on a Node, read with
// a timeout at an instant.
type Heartbeat struct {
	State HeartbeatState
	// Raw is the annotation's value, T its time (zero unless parsed).
	Raw string
	T   time.Time
	// Deadline is T + timeout, rounded up to the second: when a beat that
	// is not renewed turns stale.
	Deadline time.Time
	// FutureEnds is when a beat in the future stops being in the future,
	// for a HeartbeatFuture beat.
	FutureEnds time.Time
}

// ReadHeartbeat reads virt-handler's heartbeat on n (nil: absent) with
// the timeout at now (kv:pkg/virt-handler/heartbeat/heartbeat.go writes it
// every minute; kv:pkg/virt-controller/watch/node/node.go calls a node
// unresponsive when it is older than its own timeout).
func ReadHeartbeat(n *corev1.Node, timeout time.Duration, now time.Time) Heartbeat {
	var hb Heartbeat
	if n == nil {
		return hb
	}
	raw, ok := n.Annotations[kubevirtv1.VirtHandlerHeartbeat]
	if !ok {
		return hb
	}
	hb.Raw = raw
	t, err := ParseHeartbeat(raw)
	if err != nil {
		hb.State = HeartbeatMalformed
		return hb
	}
	hb.T, hb.Deadline = t, ceilSec(t.Add(timeout))
	now = trunc(now)
	switch {
	case t.After(now.Add(clockSkew)):
		hb.State, hb.FutureEnds = HeartbeatFuture, ceilSec(t.Add(-clockSkew))
	case crossed(now, hb.Deadline):
		hb.State = HeartbeatStale
	default:
		hb.State = HeartbeatFresh
	}
	return hb
}

// Finding is the heartbeat rule's finding on Node node; a fresh beat has
// none (Verdict empty): the caller cites it as renewing evidence.
func (hb Heartbeat) Finding(node string, timeout time.Duration) NodeFinding {
	f := NodeFinding{Field: hbField, Value: hb.Raw, At: hb.T}
	switch hb.State {
	case HeartbeatAbsent:
		// virt-controller counts a node without the annotation as
		// responsive (kv:pkg/virt-controller/watch/node/node.go
		// isNodeUnresponsive): a note, the kubelet's Ready stands.
		f.Verdict, f.Reason, f.Note, f.Value = v1alpha1.VerdictHealthy, v1alpha1.ReasonHeartbeatMissing, true, "absent"
		f.Message = "Node " + node + " has no kubevirt.io/heartbeat annotation: virt-handler's liveness is not known"
	case HeartbeatMalformed:
		f.Verdict, f.Reason = v1alpha1.VerdictUnknown, v1alpha1.ReasonMalformedHeartbeat
		f.Message = "Node " + node + " has a kubevirt.io/heartbeat that is not an RFC 3339 time: " + quote(bound(hb.Raw, 64))
	case HeartbeatFuture:
		f.Verdict, f.Reason = v1alpha1.VerdictUnknown, v1alpha1.ReasonFutureTimestamp
		f.Message = "virt-handler's heartbeat on " + node + " lies in the future (" + rfc(hb.T) + "): the node's clock is off"
	case HeartbeatStale:
		// The beat stopped: its value and time no longer move.
		f.Verdict, f.Reason, f.Since = v1alpha1.VerdictUnknown, v1alpha1.ReasonNodeAgentStale, hb.Deadline
		f.Message = "virt-handler on " + node + " last beat at " + rfc(hb.T) + ", more than " + timeout.String() +
			" ago: nothing on the node reports"
	case HeartbeatFresh:
		f.Value, f.At = heartbeatFresh, time.Time{}
	}
	return f
}

// NodeReadyFinding is the rule on the Node's Ready condition: False is
// Degraded, absent or Unknown (the kubelet stopped renewing its Lease and
// the node lifecycle controller noticed) is Unknown, True is context.
func NodeReadyFinding(n *corev1.Node) NodeFinding {
	const field = "status.conditions[Ready].status"
	c := nodeCond(n, corev1.NodeReady)
	if c == nil {
		return NodeFinding{Verdict: v1alpha1.VerdictUnknown, Reason: v1alpha1.ReasonNodeNotReady,
			Message: "Node " + n.Name + " has no Ready condition", Field: "status.conditions[Ready]", Value: "absent"}
	}
	f := NodeFinding{Field: field, Value: string(c.Status), At: mt(c.LastTransitionTime), Since: mt(c.LastTransitionTime)}
	switch c.Status {
	case corev1.ConditionTrue:
		f.Since = time.Time{}
	case corev1.ConditionFalse:
		f.Verdict, f.Reason = v1alpha1.VerdictDegraded, v1alpha1.ReasonNodeNotReady
		f.Message = withDetail("Node "+n.Name+" is not Ready", c.Message)
	default:
		f.Verdict, f.Reason = v1alpha1.VerdictUnknown, v1alpha1.ReasonNodeNotReady
		f.Message = "Node " + n.Name + " readiness is " + string(c.Status) + ": the kubelet stopped reporting"
	}
	return f
}

// NodeSchedulableFinding is the rule on kubevirt.io/schedulable: virt-handler
// marks its node unschedulable for new VMs while device plugins start or
// it shuts down, and virt-controller does when the heartbeat is stale
// (then NodeAgentStale says more). VMs already running are not affected,
// so this is a note. ok is false when the label does not say false.
func NodeSchedulableFinding(n *corev1.Node) (f NodeFinding, ok bool) {
	v, has := n.Labels[kubevirtv1.NodeSchedulable]
	if !has || v != "false" {
		return NodeFinding{}, false
	}
	return NodeFinding{
		Verdict: v1alpha1.VerdictHealthy, Reason: v1alpha1.ReasonNodeNotSchedulable, Note: true,
		Message: "Node " + n.Name + " takes no new VMs (kubevirt.io/schedulable=false)",
		Field:   "metadata.labels[kubevirt.io/schedulable]", Value: v,
	}, true
}

// apply records f on l: a finding with its evidence, or the evidence as
// context.
func (l *layer) apply(f NodeFinding, node string) {
	switch {
	case f.Verdict == "":
		l.context(kindNode, node, f.Field, f.Value, f.At)
		return
	case f.Note:
		l.note(f.Reason, f.Message, f.Since)
	default:
		l.add(f.Verdict, f.Reason, f.Message, f.Since)
	}
	l.cite(kindNode, node, f.Field, f.Value, f.At)
}
