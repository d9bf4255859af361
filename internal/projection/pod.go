package projection

import (
	"bytes"
	"encoding/json"
	"math"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/internal/membership"
)

// Labels and annotations of a launcher pod that vmobs reads: membership
// (which VMI a pod belongs to), the migration target label, and Multus'
// network status; of a virt-handler pod, the revision of its DaemonSet
// (controller-revision-hash: a launcher pod has none, so it costs them
// nothing, and one pair each on the one virt-handler pod per node, its
// value interned), which tells a rollout in progress (internal/incident).
var (
	podLabels      = []string{appsv1.DefaultDaemonSetUniqueLabelKey}
	podAnnotations = []string{membership.NetworkStatusAnnotation, kubevirtv1.EphemeralProvisioningObject}
	podVocab       = map[string]bool{kubevirtv1.EphemeralProvisioningObject: true, appsv1.DefaultDaemonSetUniqueLabelKey: true}
)

// Pod is a launcher pod as the engine reads it: its owners and membership
// labels, the node, the phase and reason, the Ready and PodScheduled
// conditions, the pod IPs, the containers' states and restarts, and
// Multus' network status.
type Pod struct {
	Meta
	// The labels vmobs reads: kubevirt.io (which kind of KubeVirt pod),
	// kubevirt.io/created-by (the VMI's UID) and kubevirt.io/migrationJobUID
	// (the migration a target pod is for). An empty label reads as none.
	App          Sym
	CreatedBy    UID
	MigrationJob UID
	Owners       Owners
	NodeName     Sym
	Phase        Sym
	Reason       Sym
	PodIP        string
	// PodIPs are status.podIPs; nil when they are exactly [PodIP], as the
	// kubelet writes them for a single-stack pod, or none with no PodIP.
	PodIPs     *[]string
	Conditions []Cond
	Containers []Container
	// Net is Multus' network status, packed; nil when the pod has none or
	// its annotation stays text in Kept (packNet).
	Net *[]PodNet
	// InitRestarts is the sum of the restarts of the init containers that
	// are not sidecars, all the engine reads of them. Sidecars
	// (guest-console-log) are in Containers, marked Sidecar: the engine
	// reads their state too.
	InitRestarts int32
}

// Container is a container status.
type Container struct {
	Name    Sym
	Ready   bool
	Started int8 // 0 nil, 1 false, 2 true
	// Sidecar says it is an init container that runs beside compute
	// (membership.IsSidecarInit), from status.initContainerStatuses.
	Sidecar      bool
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
		return newCond(string(c.Type), string(c.Status), c.Reason, c.Message, metaTime(c.LastTransitionTime))
	}
	out := condsOf(in, func(t string) bool {
		return t == string(corev1.PodReady) || t == string(corev1.PodScheduled) || t == string(kubevirtv1.VirtualMachineUnpaused)
	}, conv)
	if out == nil && len(in) > 0 {
		out = []Cond{conv(&in[0])}
	}
	return out
}

func containerOf(c *corev1.ContainerStatus) Container {
	out := Container{Name: Intern(c.Name), RestartCount: c.RestartCount, Ready: c.Ready, Started: boolPtr(c.Started)}
	if r := c.State.Running; r != nil {
		out.Running = timePtr(&r.StartedAt)
	}
	if w := c.State.Waiting; w != nil {
		out.Waiting = &corev1.ContainerStateWaiting{Reason: Intern(w.Reason).String(), Message: w.Message}
	}
	if t := c.State.Terminated; t != nil {
		out.Terminated = &corev1.ContainerStateTerminated{
			ExitCode: t.ExitCode, Signal: t.Signal, Reason: Intern(t.Reason).String(), Message: t.Message,
			StartedAt: t.StartedAt, FinishedAt: t.FinishedAt,
		}
	}
	return out
}

// containerStatuses rebuilds the statuses of the containers whose Sidecar
// flag is sidecar.
func containerStatuses(in []Container, sidecar bool) []corev1.ContainerStatus {
	n := 0
	for i := range in {
		if in[i].Sidecar == sidecar {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	out := make([]corev1.ContainerStatus, 0, n)
	for i := range in {
		c := &in[i]
		if c.Sidecar != sidecar {
			continue
		}
		out = append(out, corev1.ContainerStatus{})
		s := &out[len(out)-1]
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
		Meta:         metaOf(&p.ObjectMeta, podLabels, podAnnotations, podVocab),
		App:          Intern(p.Labels[kubevirtv1.AppLabel]),
		CreatedBy:    uidOf(types.UID(p.Labels[kubevirtv1.CreatedByLabel])),
		MigrationJob: uidOf(types.UID(p.Labels[kubevirtv1.MigrationJobLabel])),
		Owners:       ownersOf(p.OwnerReferences, p.Name),
		NodeName:     Intern(p.Spec.NodeName),
		Phase:        Intern(string(st.Phase)),
		Reason:       Intern(st.Reason),
		PodIP:        st.PodIP,
		Conditions:   podConds(st.Conditions),
		Containers:   convert(st.ContainerStatuses, containerOf),
	}
	for i := range st.InitContainerStatuses {
		cs := &st.InitContainerStatuses[i]
		if membership.IsSidecarInit(p, cs.Name) {
			c := containerOf(cs)
			c.Sidecar = true
			out.Containers = append(out.Containers, c)
			continue
		}
		out.InitRestarts = satAdd(out.InitRestarts, cs.RestartCount)
	}
	out.packNet()
	if same := len(st.PodIPs) == 1 && st.PodIPs[0].IP == st.PodIP; !same && (len(st.PodIPs) > 0 || st.PodIP != "") {
		ips := make([]string, len(st.PodIPs))
		for i := range st.PodIPs {
			ips[i] = st.PodIPs[i].IP
		}
		out.PodIPs = &ips
	}
	return out
}

// ToPod rebuilds the pod as far as it was kept.
func (p *Pod) ToPod() *corev1.Pod {
	out := &corev1.Pod{ObjectMeta: p.ObjectMeta()}
	if p.Net != nil {
		if out.Annotations == nil {
			out.Annotations = make(map[string]string, 1)
		}
		out.Annotations[membership.NetworkStatusAnnotation] = netStatusText(*p.Net)
	}
	out.Labels = p.GetLabels()
	out.OwnerReferences = p.Owners.refs(p.Name)
	out.Spec.NodeName = p.NodeName.String()
	st := &out.Status
	st.Phase, st.Reason, st.PodIP = corev1.PodPhase(p.Phase.String()), p.Reason.String(), p.PodIP
	switch {
	case p.PodIPs == nil && p.PodIP != "":
		st.PodIPs = []corev1.PodIP{{IP: p.PodIP}}
	case p.PodIPs != nil && len(*p.PodIPs) > 0:
		st.PodIPs = make([]corev1.PodIP, len(*p.PodIPs))
		for i, ip := range *p.PodIPs {
			st.PodIPs[i].IP = ip
		}
	}
	if len(p.Conditions) > 0 {
		st.Conditions = make([]corev1.PodCondition, len(p.Conditions))
		for i, c := range p.Conditions {
			st.Conditions[i] = corev1.PodCondition{
				Type: corev1.PodConditionType(c.Type()), Status: corev1.ConditionStatus(c.Status()),
				Reason: c.Reason.String(), Message: c.Message(), LastTransitionTime: c.LastTransition.Meta(),
			}
		}
	}
	st.ContainerStatuses = containerStatuses(p.Containers, false)
	if p.InitRestarts > 0 {
		st.InitContainerStatuses = []corev1.ContainerStatus{{Name: "init", RestartCount: p.InitRestarts}}
	}
	if side := containerStatuses(p.Containers, true); side != nil {
		st.InitContainerStatuses = append(st.InitContainerStatuses, side...)
		always := corev1.ContainerRestartPolicyAlways
		for i := range side {
			out.Spec.InitContainers = append(out.Spec.InitContainers, corev1.Container{Name: side[i].Name, RestartPolicy: &always})
		}
	}
	return out
}

// Revision is a DaemonSet pod's controller-revision-hash (virt-handler's
// revision), "" for a launcher pod.
func (p *Pod) Revision() string { return p.Value(appsv1.DefaultDaemonSetUniqueLabelKey) }

// GetLabels implements metav1.Object.
func (p *Pod) GetLabels() map[string]string {
	m := p.Kept.filter(true)
	for _, l := range [...]struct{ key, value string }{
		{kubevirtv1.AppLabel, p.App.String()},
		{kubevirtv1.CreatedByLabel, string(p.CreatedBy.UID())},
		{kubevirtv1.MigrationJobLabel, string(p.MigrationJob.UID())},
	} {
		if l.value != "" {
			if m == nil {
				m = make(map[string]string, 3)
			}
			m[l.key] = l.value
		}
	}
	return m
}

// GetOwnerReferences implements metav1.Object.
func (p *Pod) GetOwnerReferences() []metav1.OwnerReference { return p.Owners.refs(p.Name) }

// DeepCopyObject implements runtime.Object.
func (p *Pod) DeepCopyObject() runtime.Object {
	c := *p
	c.Meta = p.Meta.deepCopy()
	c.Owners = p.Owners.deepCopy()
	if p.PodIPs != nil {
		ips := clone(*p.PodIPs)
		c.PodIPs = &ips
	}
	c.Conditions = clone(p.Conditions)
	c.Containers = cloneContainers(p.Containers)
	if p.Net != nil {
		n := clone(*p.Net)
		c.Net = &n
	}
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

// SetLabels implements metav1.Object: it keeps the labels a Pod projection
// holds.
func (p *Pod) SetLabels(l map[string]string) {
	p.Kept = keep(l, p.Kept.filter(false), podLabels, podAnnotations, podVocab)
	p.App = Intern(l[kubevirtv1.AppLabel])
	p.CreatedBy = uidOf(types.UID(l[kubevirtv1.CreatedByLabel]))
	p.MigrationJob = uidOf(types.UID(l[kubevirtv1.MigrationJobLabel]))
}

// satAdd adds the non-negative part of n to sum, saturating.
func satAdd(sum, n int32) int32 {
	if n <= 0 {
		return sum
	}
	if sum > math.MaxInt32-n {
		return math.MaxInt32
	}
	return sum + n
}

// compactJSON drops the insignificant whitespace of a JSON text: Multus
// indents its network status, a third of its bytes. Anything that is not
// JSON is kept as it is (the engine cites an unreadable annotation as
// written).
func compactJSON(s string) string {
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil || b.Len() >= len(s) {
		return s
	}
	return b.String()
}
