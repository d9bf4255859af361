package projection

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/internal/membership"
)

// Labels and annotations of a launcher pod that vmobs reads: membership
// (which VMI a pod belongs to), the migration target label, and Multus'
// network status.
var (
	podLabels      = []string{kubevirtv1.AppLabel, kubevirtv1.CreatedByLabel, kubevirtv1.MigrationJobLabel}
	podAnnotations = []string{membership.NetworkStatusAnnotation, kubevirtv1.EphemeralProvisioningObject}
	podVocab       = map[string]bool{kubevirtv1.AppLabel: true, kubevirtv1.EphemeralProvisioningObject: true}
)

// Pod is a launcher pod as the engine reads it: its owners and membership
// labels, the node, the phase and reason, the Ready and PodScheduled
// conditions, the pod IPs, the containers' states and restarts, and
// Multus' network status.
type Pod struct {
	Meta
	Owners   []OwnerRef
	NodeName Sym
	Phase    Sym
	Reason   Sym
	PodIP    string
	// PodIPs are status.podIPs; nil when they are exactly [PodIP], as the
	// kubelet writes them for a single-stack pod.
	PodIPs     []string
	PodIPsSame bool
	Conditions []Cond
	Containers []Container
	// InitContainers keep only names and restart counts: the engine counts
	// the restarts of the guest-console-log sidecar.
	InitContainers []Container
}

// Container is a container status.
type Container struct {
	Name         Sym
	Ready        bool
	Started      int8 // 0 nil, 1 false, 2 true
	RestartCount int32
	// Running is state.running.startedAt (setZero: running, no time).
	Running    Time
	Waiting    *corev1.ContainerStateWaiting
	Terminated *corev1.ContainerStateTerminated
}

// podConds keeps the conditions the engine reads. A pod with conditions
// but none of those keeps its first: the engine tells a pod without any
// condition (a pasted row) from one without Ready.
func podConds(in []corev1.PodCondition) []Cond {
	conv := func(c *corev1.PodCondition) Cond {
		return Cond{Type: Intern(string(c.Type)), Status: Intern(string(c.Status)), Reason: Intern(c.Reason),
			Message: c.Message, LastTransition: metaTime(c.LastTransitionTime), LastProbe: metaTime(c.LastProbeTime)}
	}
	out := condsOf(in, func(t string) bool { return t == string(corev1.PodReady) || t == string(corev1.PodScheduled) }, conv)
	if out == nil && len(in) > 0 {
		out = []Cond{conv(&in[0])}
	}
	return out
}

func containersOf(in []corev1.ContainerStatus, full bool) []Container {
	if len(in) == 0 {
		return nil
	}
	out := make([]Container, len(in))
	for i := range in {
		c := &in[i]
		out[i] = Container{Name: Intern(c.Name), RestartCount: c.RestartCount}
		if !full {
			continue
		}
		out[i].Ready, out[i].Started = c.Ready, boolPtr(c.Started)
		if r := c.State.Running; r != nil {
			out[i].Running = timePtr(&r.StartedAt)
		}
		if w := c.State.Waiting; w != nil {
			out[i].Waiting = &corev1.ContainerStateWaiting{Reason: Intern(w.Reason).String(), Message: w.Message}
		}
		if t := c.State.Terminated; t != nil {
			out[i].Terminated = &corev1.ContainerStateTerminated{
				ExitCode: t.ExitCode, Signal: t.Signal, Reason: Intern(t.Reason).String(), Message: t.Message,
				StartedAt: t.StartedAt, FinishedAt: t.FinishedAt,
			}
		}
	}
	return out
}

func containerStatuses(in []Container) []corev1.ContainerStatus {
	if len(in) == 0 {
		return nil
	}
	out := make([]corev1.ContainerStatus, len(in))
	for i := range in {
		c := &in[i]
		s := &out[i]
		s.Name, s.Ready, s.Started, s.RestartCount = c.Name.String(), c.Ready, ptrBool(c.Started), c.RestartCount
		if c.Running != 0 {
			s.State.Running = &corev1.ContainerStateRunning{StartedAt: c.Running.Meta()}
		}
		if c.Waiting != nil {
			w := *c.Waiting
			s.State.Waiting = &w
		}
		if c.Terminated != nil {
			t := *c.Terminated
			s.State.Terminated = &t
		}
	}
	return out
}

// FromPod projects a pod.
func FromPod(p *corev1.Pod) *Pod {
	st := &p.Status
	out := &Pod{
		Meta:           metaOf(&p.ObjectMeta, podLabels, podAnnotations, podVocab),
		Owners:         ownersOf(p.OwnerReferences),
		NodeName:       Intern(p.Spec.NodeName),
		Phase:          Intern(string(st.Phase)),
		Reason:         Intern(st.Reason),
		PodIP:          st.PodIP,
		Conditions:     podConds(st.Conditions),
		Containers:     containersOf(st.ContainerStatuses, true),
		InitContainers: containersOf(st.InitContainerStatuses, false),
	}
	if len(st.PodIPs) == 1 && st.PodIPs[0].IP == st.PodIP {
		out.PodIPsSame = true
	} else if len(st.PodIPs) > 0 {
		out.PodIPs = make([]string, len(st.PodIPs))
		for i := range st.PodIPs {
			out.PodIPs[i] = st.PodIPs[i].IP
		}
	}
	return out
}

// ToPod rebuilds the pod as far as it was kept.
func (p *Pod) ToPod() *corev1.Pod {
	out := &corev1.Pod{ObjectMeta: p.ObjectMeta()}
	out.OwnerReferences = ownerRefs(p.Owners)
	out.Spec.NodeName = p.NodeName.String()
	st := &out.Status
	st.Phase, st.Reason, st.PodIP = corev1.PodPhase(p.Phase.String()), p.Reason.String(), p.PodIP
	switch {
	case p.PodIPsSame:
		st.PodIPs = []corev1.PodIP{{IP: p.PodIP}}
	case len(p.PodIPs) > 0:
		st.PodIPs = make([]corev1.PodIP, len(p.PodIPs))
		for i, ip := range p.PodIPs {
			st.PodIPs[i].IP = ip
		}
	}
	if len(p.Conditions) > 0 {
		st.Conditions = make([]corev1.PodCondition, len(p.Conditions))
		for i, c := range p.Conditions {
			st.Conditions[i] = corev1.PodCondition{
				Type: corev1.PodConditionType(c.Type.String()), Status: corev1.ConditionStatus(c.Status.String()),
				Reason: c.Reason.String(), Message: c.Message,
				LastTransitionTime: c.LastTransition.Meta(), LastProbeTime: c.LastProbe.Meta(),
			}
		}
	}
	st.ContainerStatuses = containerStatuses(p.Containers)
	st.InitContainerStatuses = containerStatuses(p.InitContainers)
	return out
}

// GetOwnerReferences implements metav1.Object.
func (p *Pod) GetOwnerReferences() []metav1.OwnerReference { return ownerRefs(p.Owners) }

// DeepCopyObject implements runtime.Object.
func (p *Pod) DeepCopyObject() runtime.Object {
	c := *p
	c.Meta = p.Meta.deepCopy()
	c.Owners = clone(p.Owners)
	c.PodIPs = clone(p.PodIPs)
	c.Conditions = clone(p.Conditions)
	c.Containers = cloneContainers(p.Containers)
	c.InitContainers = cloneContainers(p.InitContainers)
	return &c
}

func cloneContainers(in []Container) []Container {
	out := clone(in)
	for i := range out {
		if w := out[i].Waiting; w != nil {
			c := *w
			out[i].Waiting = &c
		}
		if t := out[i].Terminated; t != nil {
			c := *t
			out[i].Terminated = &c
		}
	}
	return out
}
