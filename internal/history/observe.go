package history

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/verdict"
)

const (
	kindVMI       = "VirtualMachineInstance"
	kindMigration = "VirtualMachineInstanceMigration"
	kindPod       = "Pod"
	kindNode      = "Node"
)

// Seen is what the objects tell of the VM's life, each event at the time
// the object itself records: nothing is remembered between reconciles.
type Seen struct {
	// Events are the life events, in no particular order.
	Events []v1alpha1.HistoryEntry
	// Started is when the current VMI entered Running.
	Started *metav1.Time
	// VMICreated is the current VMI's creationTimestamp.
	VMICreated metav1.Time
}

// Observe reads the life events off the gathered objects and the engine's
// new status (which carries the first sightings KubeVirt records no time
// for, such as the agent's disconnection).
func Observe(in verdict.Input, next *v1alpha1.VMObservationStatus) Seen {
	var s Seen
	vmi := in.VMI
	if vmi == nil {
		return s
	}
	s.VMICreated = sec(vmi.CreationTimestamp)
	vmiAt := func(e v1alpha1.HistoryEntry, field string) v1alpha1.HistoryEntry {
		e.Object, e.Field = kindVMI+"/"+vmi.Name, field
		return e
	}
	for _, p := range vmi.Status.PhaseTransitionTimestamps {
		at := sec(p.PhaseTransitionTimestamp)
		if at.IsZero() {
			continue
		}
		switch p.Phase {
		case kubevirtv1.Succeeded, kubevirtv1.Failed:
			if p.Phase != vmi.Status.Phase {
				continue
			}
			msg := "the VMI " + string(p.Phase)
			if vmi.Status.Reason != "" {
				msg += ": " + vmi.Status.Reason
			}
			s.Events = append(s.Events, vmiAt(v1alpha1.HistoryEntry{Time: at, Event: v1alpha1.EventVMIFinished,
				Layer: RestartLayer(string(p.Phase), vmi.Status.Reason), Reason: vmi.Status.Reason, Message: msg}, "status.phase"))
		}
	}
	s.Started = started(vmi)
	if s.Started != nil {
		s.Events = append(s.Events, vmiAt(v1alpha1.HistoryEntry{Time: *s.Started, Event: v1alpha1.EventVMIStarted,
			Layer: v1alpha1.LayerControlPlane, Message: "on " + vmi.Status.NodeName}, "status.phaseTransitionTimestamps"))
	}
	for _, c := range vmi.Status.Conditions {
		if c.Type == kubevirtv1.VirtualMachineInstanceAgentConnected && c.Status == corev1.ConditionTrue {
			at := sec(c.LastTransitionTime)
			if at.IsZero() {
				at = sec(c.LastProbeTime)
			}
			if !at.IsZero() {
				s.Events = append(s.Events, vmiAt(v1alpha1.HistoryEntry{Time: at, Event: v1alpha1.EventAgentConnected,
					Layer: v1alpha1.LayerGuest}, "status.conditions[AgentConnected]"))
			}
		}
	}
	if next != nil && next.VMI != nil && next.VMI.AgentDisconnectedSince != nil {
		s.Events = append(s.Events, vmiAt(v1alpha1.HistoryEntry{Time: *next.VMI.AgentDisconnectedSince, Event: v1alpha1.EventAgentDisconnected,
			Layer: v1alpha1.LayerGuest}, "status.conditions[AgentConnected]"))
	}
	s.Events = append(s.Events, migrationEvents(vmi, in.Migrations)...)
	s.Events = append(s.Events, podEvents(in.Pods)...)
	s.Events = append(s.Events, nodeEvents(vmi, in.Nodes)...)
	return s
}

// started is when the VMI first entered Running: KubeVirt appends a
// timestamp per phase change.
func started(vmi *kubevirtv1.VirtualMachineInstance) *metav1.Time {
	var first *metav1.Time
	for _, p := range vmi.Status.PhaseTransitionTimestamps {
		if at := sec(p.PhaseTransitionTimestamp); p.Phase == kubevirtv1.Running && !at.IsZero() && (first == nil || at.Before(first)) {
			first = &at
		}
	}
	return first
}

// migrationEvents: each migration's creation, and its end as its phase
// transition timestamps and the VMI's migrationState tell it.
func migrationEvents(vmi *kubevirtv1.VirtualMachineInstance, migrations []*kubevirtv1.VirtualMachineInstanceMigration) []v1alpha1.HistoryEntry {
	var out []v1alpha1.HistoryEntry
	state := vmi.Status.MigrationState
	for _, m := range migrations {
		if m == nil {
			continue
		}
		object := kindMigration + "/" + m.Name
		if at := sec(m.CreationTimestamp); !at.IsZero() {
			out = append(out, v1alpha1.HistoryEntry{Time: at, Event: v1alpha1.EventMigrationStarted,
				Layer: v1alpha1.LayerControlPlane, Object: object, Field: "metadata.creationTimestamp"})
		}
		for _, p := range m.Status.PhaseTransitionTimestamps {
			at := sec(p.PhaseTransitionTimestamp)
			if at.IsZero() || p.Phase != m.Status.Phase {
				continue
			}
			switch p.Phase {
			case kubevirtv1.MigrationSucceeded:
				msg := ""
				if state != nil && state.MigrationUID == m.UID && state.TargetNode != "" {
					msg = "to " + state.TargetNode
				}
				out = append(out, v1alpha1.HistoryEntry{Time: at, Event: v1alpha1.EventMigrationSucceeded,
					Layer: v1alpha1.LayerControlPlane, Message: msg, Object: object, Field: "status.phase"})
			case kubevirtv1.MigrationFailed:
				e := v1alpha1.HistoryEntry{Time: at, Event: v1alpha1.EventMigrationFailed,
					Layer: v1alpha1.LayerControlPlane, Object: object, Field: "status.phase"}
				if state != nil && state.MigrationUID == m.UID {
					e.Reason = state.FailureReason
					if state.AbortStatus == kubevirtv1.MigrationAbortSucceeded {
						e.Event = v1alpha1.EventMigrationAborted
					}
				}
				if e.Reason == "" {
					for _, c := range m.Status.Conditions {
						if c.Status == corev1.ConditionTrue && c.Reason != "" {
							e.Reason = c.Reason
						}
					}
				}
				out = append(out, e)
			}
		}
	}
	return out
}

// podEvents: a launcher container that ended OOMKilled, a launcher pod
// evicted.
func podEvents(pods []*corev1.Pod) []v1alpha1.HistoryEntry {
	var out []v1alpha1.HistoryEntry
	for _, p := range pods {
		if p == nil {
			continue
		}
		object := kindPod + "/" + p.Name
		for _, c := range p.Status.ContainerStatuses {
			for _, t := range []*corev1.ContainerStateTerminated{c.State.Terminated, c.LastTerminationState.Terminated} {
				if t == nil || t.Reason != "OOMKilled" {
					continue
				}
				if at := sec(t.FinishedAt); !at.IsZero() {
					out = append(out, v1alpha1.HistoryEntry{Time: at, Event: v1alpha1.EventLauncherOOMKilled, Layer: v1alpha1.LayerNode,
						Reason: t.Reason, Message: "container " + c.Name,
						Object: object, Field: "status.containerStatuses[" + c.Name + "].state.terminated"})
				}
			}
		}
		if p.Status.Reason == "Evicted" {
			at := metav1.Time{}
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady || c.Type == corev1.DisruptionTarget {
					if t := sec(c.LastTransitionTime); t.After(at.Time) {
						at = t
					}
				}
			}
			if !at.IsZero() {
				out = append(out, v1alpha1.HistoryEntry{Time: at, Event: v1alpha1.EventLauncherEvicted, Layer: v1alpha1.LayerNode,
					Reason: p.Status.Reason, Message: p.Status.Message, Object: object, Field: "status.reason"})
			}
		}
	}
	return out
}

// nodeEvents: the VMI's node's Ready condition, when it last changed after
// the VMI was created (a node that has been Ready for a year says nothing
// of this VM).
func nodeEvents(vmi *kubevirtv1.VirtualMachineInstance, nodes map[string]*corev1.Node) []v1alpha1.HistoryEntry {
	n := nodes[vmi.Status.NodeName]
	if n == nil {
		return nil
	}
	for _, c := range n.Status.Conditions {
		if c.Type != corev1.NodeReady {
			continue
		}
		at := sec(c.LastTransitionTime)
		if at.IsZero() || at.Before(&vmi.CreationTimestamp) {
			return nil
		}
		e := v1alpha1.HistoryEntry{Time: at, Event: v1alpha1.EventNodeNotReady, Layer: v1alpha1.LayerNode,
			Reason: c.Reason, Object: kindNode + "/" + n.Name, Field: "status.conditions[Ready]"}
		if c.Status == corev1.ConditionTrue {
			e.Event = v1alpha1.EventNodeReady
		}
		return []v1alpha1.HistoryEntry{e}
	}
	return nil
}

// sec is t truncated to seconds, the resolution of the status.
func sec(t metav1.Time) metav1.Time {
	if t.IsZero() {
		return metav1.Time{}
	}
	return metav1.NewTime(t.Truncate(time.Second))
}
