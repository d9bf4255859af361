package nodeverdict

import (
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/testsupport/kstatus"
)

// now is the fixed clock of every case.
var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const (
	hbTimeout    = 5 * time.Minute
	stalledAfter = 15 * time.Minute
)

// nodeMod changes a Node built by node.
type nodeMod func(*corev1.Node)

// node is a Ready node with a heartbeat a minute old, under no pressure.
func node(mods ...nodeMod) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        "node-a",
			Labels:      map[string]string{kubevirtv1.NodeSchedulable: "true"},
			Annotations: map[string]string{kubevirtv1.VirtHandlerHeartbeat: now.Add(-time.Minute).Format(time.RFC3339)},
		},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse},
			{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse},
			{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse},
			{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-24 * time.Hour))},
		}},
	}
	for _, m := range mods {
		m(n)
	}
	return n
}

func cond(t corev1.NodeConditionType, s corev1.ConditionStatus, since time.Duration) nodeMod {
	return func(n *corev1.Node) {
		for i := range n.Status.Conditions {
			if c := &n.Status.Conditions[i]; c.Type == t {
				c.Status, c.LastTransitionTime = s, metav1.NewTime(now.Add(-since))
				c.Message = "kubelet says so"
			}
		}
	}
}

func heartbeat(v string) nodeMod {
	return func(n *corev1.Node) {
		if v == "" {
			delete(n.Annotations, kubevirtv1.VirtHandlerHeartbeat)
			return
		}
		n.Annotations[kubevirtv1.VirtHandlerHeartbeat] = v
	}
}

func beatAgo(d time.Duration) nodeMod { return heartbeat(now.Add(-d).Format(time.RFC3339)) }

func unschedulable(n *corev1.Node) { n.Labels[kubevirtv1.NodeSchedulable] = "false" }

// handler is virt-handler's pod on the node.
func handler(ready bool) *corev1.Pod {
	s := corev1.ConditionTrue
	if !ready {
		s = corev1.ConditionFalse
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "virt-handler-x7k2p", Labels: map[string]string{kubevirtv1.AppLabel: "virt-handler"}},
		Spec:       corev1.PodSpec{NodeName: "node-a"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: s, LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))},
		}},
	}
}

func vm(name string, v v1alpha1.Verdict, nodeReason string) VM {
	return VM{Namespace: "default", Name: name, Running: true, Verdict: v, Reasons: [len(v1alpha1.LayerNames)]string{"Running", nodeReason, "GuestAgentConnected", "VolumesReady"}}
}

func healthyVMs(n int) []VM {
	out := make([]VM, n)
	for i := range out {
		out[i] = vm("vm-"+string(rune('a'+i)), v1alpha1.VerdictHealthy, "LauncherRunning")
	}
	return out
}

func input(n *corev1.Node, mods ...func(*Input)) Input {
	in := Input{Now: now, Node: n, Handler: handler(true), VMs: healthyVMs(3), DomainStats: true, GuestProbe: true,
		HeartbeatTimeout: hbTimeout, StalledAfter: stalledAfter}
	for _, m := range mods {
		m(&in)
	}
	return in
}

type layerWant struct {
	verdict v1alpha1.Verdict
	reason  string
}

type situation struct {
	name string
	in   Input
	// want is the overall verdict and reason; layers the layers' that the
	// case is about.
	want    layerWant
	layers  map[string]layerWant
	kstatus status.Status
	// message holds a part of the named layer's message (layer: text).
	message map[string]string
	// evidence is a field cited on the named layer.
	evidence map[string]string
	// next is the instant to look again when it is not the fresh
	// heartbeat's deadline; noNext says there is none.
	next   time.Time
	noNext bool
	vms    *v1alpha1.VMCounts
}

// hbDeadline is when node()'s heartbeat turns stale.
var hbDeadline = now.Add(-time.Minute).Add(hbTimeout)

func situations() []situation {
	return []situation{
		{
			name: "healthy node", in: input(node()),
			want:     layerWant{v1alpha1.VerdictHealthy, v1alpha1.ReasonKubeletReady},
			layers:   map[string]layerWant{v1alpha1.NodeLayerVirtHandler: {v1alpha1.VerdictHealthy, v1alpha1.ReasonVirtHandlerReady}, v1alpha1.NodeLayerDomainStats: {v1alpha1.VerdictHealthy, v1alpha1.ReasonDomainStatsPresent}, v1alpha1.NodeLayerLauncherPath: {v1alpha1.VerdictHealthy, v1alpha1.ReasonLauncherPathReachable}},
			kstatus:  status.CurrentStatus,
			evidence: map[string]string{v1alpha1.NodeLayerVirtHandler: "metadata.annotations[kubevirt.io/heartbeat]=fresh"},
			vms:      &v1alpha1.VMCounts{Total: 3, Healthy: 3},
		},
		{
			// The simulator's LoseNode, five minutes on: every condition
			// Unknown, the heartbeat past its timeout.
			name: "node lost", in: input(node(cond(corev1.NodeReady, corev1.ConditionUnknown, 6*time.Minute), beatAgo(6*time.Minute)), func(in *Input) {
				in.VMs = []VM{vm("a", v1alpha1.VerdictUnknown, v1alpha1.ReasonNodeAgentStale), vm("b", v1alpha1.VerdictUnknown, v1alpha1.ReasonNodeAgentStale), {Namespace: "default", Name: "c", Running: true}}
			}),
			want: layerWant{v1alpha1.VerdictUnknown, v1alpha1.ReasonNodeNotReady},
			layers: map[string]layerWant{
				v1alpha1.NodeLayerKubelet:     {v1alpha1.VerdictUnknown, v1alpha1.ReasonNodeNotReady},
				v1alpha1.NodeLayerVirtHandler: {v1alpha1.VerdictUnknown, v1alpha1.ReasonNodeAgentStale},
			},
			kstatus: status.InProgressStatus, noNext: true,
			message:  map[string]string{v1alpha1.NodeLayerVirtHandler: "last beat at " + now.Add(-6*time.Minute).Format(time.RFC3339)},
			evidence: map[string]string{v1alpha1.NodeLayerKubelet: "status.conditions[Ready].status=Unknown", v1alpha1.NodeLayerVirtHandler: "metadata.annotations[kubevirt.io/heartbeat]=" + now.Add(-6*time.Minute).Format(time.RFC3339)},
			vms:      &v1alpha1.VMCounts{Total: 3, Unknown: 2, Unobserved: 1},
		},
		{
			name: "heartbeat stale, kubelet still Ready", in: input(node(beatAgo(10 * time.Minute))),
			want:    layerWant{v1alpha1.VerdictUnknown, v1alpha1.ReasonNodeAgentStale},
			kstatus: status.InProgressStatus, noNext: true,
		},
		{
			name: "not Ready for a minute", in: input(node(cond(corev1.NodeReady, corev1.ConditionFalse, time.Minute))),
			want:    layerWant{v1alpha1.VerdictDegraded, v1alpha1.ReasonNodeNotReady},
			kstatus: status.InProgressStatus,
			message: map[string]string{v1alpha1.NodeLayerKubelet: "is not Ready: kubelet says so"},
		},
		{
			name: "not Ready past the stalled threshold", in: input(node(cond(corev1.NodeReady, corev1.ConditionFalse, time.Hour))),
			want:    layerWant{v1alpha1.VerdictDegraded, v1alpha1.ReasonNodeNotReady},
			kstatus: status.FailedStatus,
		},
		{
			name: "no Ready condition", in: input(node(func(n *corev1.Node) { n.Status.Conditions = nil })),
			want:    layerWant{v1alpha1.VerdictUnknown, v1alpha1.ReasonNodeNotReady},
			kstatus: status.InProgressStatus,
		},
		{
			name: "memory and disk pressure", in: input(node(cond(corev1.NodeMemoryPressure, corev1.ConditionTrue, 2*time.Minute), cond(corev1.NodeDiskPressure, corev1.ConditionTrue, time.Minute))),
			want:     layerWant{v1alpha1.VerdictDegraded, v1alpha1.ReasonNodePressure},
			kstatus:  status.InProgressStatus,
			message:  map[string]string{v1alpha1.NodeLayerKubelet: "under MemoryPressure, DiskPressure"},
			evidence: map[string]string{v1alpha1.NodeLayerKubelet: "status.conditions[DiskPressure].status=True"},
		},
		{
			name: "virt-handler pod not ready", in: input(node(), func(in *Input) { in.Handler = handler(false) }),
			// Not Ready for an hour (the pod's condition), past the
			// stalled threshold.
			want:     layerWant{v1alpha1.VerdictDegraded, v1alpha1.ReasonVirtHandlerNotReady},
			kstatus:  status.FailedStatus,
			evidence: map[string]string{v1alpha1.NodeLayerVirtHandler: "status.conditions[Ready].status=False"},
		},
		{
			name: "virt-handler pod not seen", in: input(node(), func(in *Input) { in.Handler = nil }),
			want:    layerWant{v1alpha1.VerdictHealthy, v1alpha1.ReasonKubeletReady},
			layers:  map[string]layerWant{v1alpha1.NodeLayerVirtHandler: {v1alpha1.VerdictHealthy, v1alpha1.ReasonVirtHandlerReady}},
			message: map[string]string{v1alpha1.NodeLayerVirtHandler: "(also: VirtHandlerPodNotSeen)"},
			kstatus: status.CurrentStatus,
		},
		{
			name: "heartbeat missing", in: input(node(heartbeat(""))),
			want:    layerWant{v1alpha1.VerdictHealthy, v1alpha1.ReasonKubeletReady},
			message: map[string]string{v1alpha1.NodeLayerVirtHandler: "(also: HeartbeatMissing)"},
			kstatus: status.CurrentStatus, noNext: true,
		},
		{
			name: "heartbeat malformed", in: input(node(heartbeat("yesterday"))),
			want:    layerWant{v1alpha1.VerdictUnknown, v1alpha1.ReasonMalformedHeartbeat},
			kstatus: status.InProgressStatus, noNext: true,
		},
		{
			name: "heartbeat in the future", in: input(node(heartbeat(now.Add(10 * time.Minute).Format(time.RFC3339)))),
			want:    layerWant{v1alpha1.VerdictUnknown, v1alpha1.ReasonFutureTimestamp},
			kstatus: status.InProgressStatus, next: now.Add(9 * time.Minute),
		},
		{
			name: "unschedulable", in: input(node(unschedulable)),
			want:    layerWant{v1alpha1.VerdictHealthy, v1alpha1.ReasonKubeletReady},
			message: map[string]string{v1alpha1.NodeLayerVirtHandler: "(also: NodeNotSchedulable)"},
			kstatus: status.CurrentStatus,
		},
		{
			name: "every VM's domain stats missing", in: input(node(), func(in *Input) {
				in.VMs = []VM{vm("a", v1alpha1.VerdictUnknown, v1alpha1.ReasonDomainStatsMissing), vm("b", v1alpha1.VerdictUnknown, v1alpha1.ReasonDomainStatsMissing), {Namespace: "default", Name: "off", Verdict: v1alpha1.VerdictSuspended}}
			}),
			want:     layerWant{v1alpha1.VerdictDegraded, v1alpha1.ReasonDomainStatsMissingOnNode},
			kstatus:  status.InProgressStatus,
			evidence: map[string]string{v1alpha1.NodeLayerDomainStats: "status.layers.*.reason=DomainStatsMissing"},
			vms:      &v1alpha1.VMCounts{Total: 3, Unknown: 2, Suspended: 1},
		},
		{
			name: "one VM's domain stats missing", in: input(node(), func(in *Input) {
				in.VMs = append(healthyVMs(2), vm("c", v1alpha1.VerdictUnknown, v1alpha1.ReasonDomainStatsMissing))
			}),
			want:    layerWant{v1alpha1.VerdictHealthy, v1alpha1.ReasonKubeletReady},
			layers:  map[string]layerWant{v1alpha1.NodeLayerDomainStats: {v1alpha1.VerdictHealthy, v1alpha1.ReasonDomainStatsPresent}},
			message: map[string]string{v1alpha1.NodeLayerDomainStats: "2 of the 3 running VMs"},
			kstatus: status.CurrentStatus,
		},
		{
			name: "launcher path unreachable", in: input(node(), func(in *Input) {
				in.VMs = append(healthyVMs(2), vm("c", v1alpha1.VerdictUnknown, v1alpha1.ReasonGuestInfoUnreachable))
			}),
			want:    layerWant{v1alpha1.VerdictDegraded, v1alpha1.ReasonLauncherPathUnreachable},
			kstatus: status.InProgressStatus,
			message: map[string]string{v1alpha1.NodeLayerLauncherPath: "1 of the 3 running VMs"},
		},
		{
			name: "no running VMs", in: input(node(), func(in *Input) { in.VMs = nil }),
			want:    layerWant{v1alpha1.VerdictHealthy, v1alpha1.ReasonKubeletReady},
			layers:  map[string]layerWant{v1alpha1.NodeLayerDomainStats: {v1alpha1.VerdictHealthy, v1alpha1.ReasonNoRunningVMs}, v1alpha1.NodeLayerLauncherPath: {v1alpha1.VerdictHealthy, v1alpha1.ReasonNoRunningVMs}},
			kstatus: status.CurrentStatus, vms: &v1alpha1.VMCounts{},
		},
		{
			// A source the controller does not read has no basis: Unknown
			// on its layer, not in the overall verdict.
			name: "sources not configured", in: input(node(), func(in *Input) { in.DomainStats, in.GuestProbe = false, false }),
			want:    layerWant{v1alpha1.VerdictHealthy, v1alpha1.ReasonKubeletReady},
			layers:  map[string]layerWant{v1alpha1.NodeLayerDomainStats: {v1alpha1.VerdictUnknown, v1alpha1.ReasonSourceNotConfigured}, v1alpha1.NodeLayerLauncherPath: {v1alpha1.VerdictUnknown, v1alpha1.ReasonSourceNotConfigured}},
			kstatus: status.CurrentStatus,
		},
		{
			name: "no Node", in: input(nil),
			want:    layerWant{v1alpha1.VerdictUnknown, v1alpha1.ReasonNodeMissing},
			kstatus: status.InProgressStatus, noNext: true,
		},
	}
}

func TestEvaluate(t *testing.T) {
	for _, sc := range situations() {
		t.Run(sc.name, func(t *testing.T) {
			res := Evaluate(sc.in)
			st := &res.Status
			if st.Verdict != sc.want.verdict || st.Reason != sc.want.reason {
				t.Errorf("verdict %s/%s, want %s/%s (%s)", st.Verdict, st.Reason, sc.want.verdict, sc.want.reason, st.Message)
			}
			for name, w := range sc.layers {
				l := st.Layers.Get(name)
				if l.Verdict != w.verdict || l.Reason != w.reason {
					t.Errorf("%s: %s/%s, want %s/%s (%s)", name, l.Verdict, l.Reason, w.verdict, w.reason, l.Message)
				}
			}
			for name, part := range sc.message {
				if l := st.Layers.Get(name); !strings.Contains(l.Message, part) {
					t.Errorf("%s: message %q lacks %q", name, l.Message, part)
				}
			}
			for name, fv := range sc.evidence {
				if !cites(st.Layers.Get(name), fv) {
					t.Errorf("%s: evidence %+v lacks %s", name, st.Layers.Get(name).Evidence, fv)
				}
			}
			next := sc.next
			if next.IsZero() && !sc.noNext {
				next = hbDeadline
			}
			if !res.Next.Equal(next) {
				t.Errorf("next look at %v, want %v", res.Next, next)
			}
			if sc.vms != nil && !reflect.DeepEqual(st.VMs, sc.vms) {
				t.Errorf("VMs %+v, want %+v", st.VMs, sc.vms)
			}
			if got := kstatusOf(t, st); got.Status != sc.kstatus {
				t.Errorf("kstatus %s (%s), want %s", got.Status, got.Message, sc.kstatus)
			}
			checkInvariants(t, sc.in, res)
		})
	}
}

func cites(l *v1alpha1.LayerStatus, fieldValue string) bool {
	for _, e := range l.Evidence {
		if e.Field+"="+e.Value == fieldValue {
			return true
		}
	}
	return false
}

// checkInvariants holds for every case: an unchanged world gives the same
// status (so the controller writes nothing), the status fits the CRD's
// bounds, no layer is without a verdict and reason, and a later look with
// nothing changed before Next gives the same status.
func checkInvariants(t *testing.T, in Input, res Result) {
	t.Helper()
	st := res.Status
	again := in
	again.Previous = &st
	if st2 := Evaluate(again).Status; !reflect.DeepEqual(st, st2) {
		t.Errorf("the same world twice gives two statuses:\n%+v\n%+v", st, st2)
	}
	later := again
	later.Now = now.Add(30 * time.Second)
	if !res.Next.IsZero() && !res.Next.After(later.Now) {
		later.Now = res.Next.Add(-time.Second)
	}
	if st3 := Evaluate(later).Status; !reflect.DeepEqual(st, st3) {
		t.Errorf("the status changed before its next look (%v) with nothing changed", res.Next)
	}
	if len(st.Message) > maxMessage {
		t.Errorf("message of %d bytes", len(st.Message))
	}
	if st.Layers == nil {
		return
	}
	for _, name := range v1alpha1.NodeLayerNames {
		l := st.Layers.Get(name)
		if l.Verdict == "" || l.Reason == "" || l.LastTransitionTime == nil {
			t.Errorf("%s: %+v has no verdict, reason or transition time", name, l)
		}
		if len(l.Evidence) > maxEvidence {
			t.Errorf("%s: %d evidence items", name, len(l.Evidence))
		}
	}
}

// kstatusOf reads the status, on node-a at generation 1, the way Flux and
// kubectl wait do (kstatus.Of).
func kstatusOf(t *testing.T, st *v1alpha1.NodeObservationStatus) *status.Result {
	t.Helper()
	return kstatus.Of(t, v1alpha1.NodeObservation{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "NodeObservation"},
		ObjectMeta: metav1.ObjectMeta{Name: "node-a", Generation: 1},
		Status:     *st,
	})
}

// A verdict that changes dates from now; one that stays keeps its time.
func TestTransitionTimes(t *testing.T) {
	first := Evaluate(input(node()))
	st := first.Status
	later := input(node(cond(corev1.NodeReady, corev1.ConditionFalse, 0)), func(in *Input) {
		in.Previous, in.Now = &st, now.Add(time.Minute)
	})
	// The condition's transition is the clock's now; the layer's is the
	// later look.
	later.Node.Status.Conditions[3].LastTransitionTime = metav1.NewTime(now.Add(time.Minute))
	got := Evaluate(later).Status
	if lt := got.Layers.Kubelet.LastTransitionTime.Time; !lt.Equal(now.Add(time.Minute)) {
		t.Errorf("kubelet turned Degraded at %v, want %v", lt, now.Add(time.Minute))
	}
	if lt := got.Layers.VirtHandler.LastTransitionTime.Time; !lt.Equal(st.Layers.VirtHandler.LastTransitionTime.Time) {
		t.Errorf("virt-handler's unchanged verdict moved its time to %v", lt)
	}
}

// A heartbeat renewed within its timeout changes nothing stored: only the
// instant to look again moves.
func TestHeartbeatRenewalWritesNothing(t *testing.T) {
	a := Evaluate(input(node(beatAgo(2 * time.Minute))))
	st := a.Status
	b := Evaluate(input(node(beatAgo(time.Second)), func(in *Input) { in.Previous = &st }))
	if !reflect.DeepEqual(a.Status, b.Status) {
		t.Errorf("a renewed heartbeat changed the status")
	}
	if !b.Next.After(a.Next) {
		t.Errorf("the renewed heartbeat's deadline %v is not after the old one's %v", b.Next, a.Next)
	}
}
