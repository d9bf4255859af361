package verdict

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/api/v1alpha1"
)

// deepCopyInput copies everything Evaluate reads, so that a test can mutate
// the copy.
func deepCopyInput(in Input) Input {
	out := in
	out.VM, out.VMI = in.VM.DeepCopy(), in.VMI.DeepCopy()
	out.Pods = nil
	for _, p := range in.Pods {
		out.Pods = append(out.Pods, p.DeepCopy())
	}
	out.Migrations = nil
	for _, m := range in.Migrations {
		out.Migrations = append(out.Migrations, m.DeepCopy())
	}
	if in.Nodes != nil {
		out.Nodes = map[string]*corev1.Node{}
		for k, n := range in.Nodes {
			out.Nodes[k] = n.DeepCopy()
		}
	}
	out.Previous = in.Previous.DeepCopy()
	if in.Domain != nil {
		d := *in.Domain
		out.Domain = &d
	}
	if in.Guest != nil {
		g := *in.Guest
		g.Filesystems = slices.Clone(g.Filesystems)
		out.Guest = &g
	}
	return out
}

func shuffled[T any](r *rand.Rand, s []T) {
	r.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
}

// shuffleInput reorders every list whose order KubeVirt does not promise.
func shuffleInput(r *rand.Rand, in *Input) {
	shuffled(r, in.Pods)
	shuffled(r, in.Migrations)
	for _, p := range in.Pods {
		if p != nil {
			shuffled(r, p.Status.Conditions)
			shuffled(r, p.Status.ContainerStatuses)
			shuffled(r, p.Status.PodIPs)
		}
	}
	if v := in.VMI; v != nil {
		shuffled(r, v.Status.Conditions)
		shuffled(r, v.Status.Interfaces)
		shuffled(r, v.Status.PhaseTransitionTimestamps)
		shuffled(r, v.Spec.Networks)
		shuffled(r, v.Spec.Domain.Devices.Interfaces)
		for i := range v.Status.Interfaces {
			shuffled(r, v.Status.Interfaces[i].IPs)
		}
	}
	for _, m := range in.Migrations {
		if m != nil {
			shuffled(r, m.Status.PhaseTransitionTimestamps)
		}
	}
	for _, n := range in.Nodes {
		if n != nil {
			shuffled(r, n.Status.Conditions)
		}
	}
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkDeterminism evaluates in twice, and on shuffled copies: the JSON of
// the results must be identical.
func checkDeterminism(t *testing.T, in Input) {
	t.Helper()
	want := mustJSON(t, Evaluate(deepCopyInput(in)))
	if again := mustJSON(t, Evaluate(deepCopyInput(in))); !bytes.Equal(want, again) {
		t.Fatalf("second evaluation differs:\n%s\n%s", want, again)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 8; i++ {
		c := deepCopyInput(in)
		shuffleInput(r, &c)
		if got := mustJSON(t, Evaluate(c)); !bytes.Equal(want, got) {
			t.Fatalf("shuffled input %d gives a different status:\n%s\n%s", i, want, got)
		}
	}
	// Evaluate must not mutate its input.
	c := deepCopyInput(in)
	Evaluate(c)
	if !bytes.Equal(mustJSON(t, c.VMI), mustJSON(t, in.VMI)) || !bytes.Equal(mustJSON(t, c.Pods), mustJSON(t, in.Pods)) {
		t.Fatal("Evaluate mutated its input")
	}
}

func TestSeverityOrder(t *testing.T) {
	order := []v1alpha1.Verdict{v1alpha1.VerdictHealthy, v1alpha1.VerdictSuspended, v1alpha1.VerdictProgressing,
		v1alpha1.VerdictUnknown, v1alpha1.VerdictDegraded, v1alpha1.VerdictFailed}
	for i := 1; i < len(order); i++ {
		if order[i].Severity() <= order[i-1].Severity() {
			t.Errorf("%s must outrank %s", order[i], order[i-1])
		}
	}
}

// TestOverallIsWorstLayer combines layer situations whose verdicts are known
// and checks the overall verdict against the documented order, without
// golden files.
func TestOverallIsWorstLayer(t *testing.T) {
	cp := map[v1alpha1.Verdict]inputMod{
		v1alpha1.VerdictHealthy:     func(in *Input) {},
		v1alpha1.VerdictProgressing: func(in *Input) { in.VM = vm(withRunStrategy(kubevirtv1.RunStrategyHalted)) },
		v1alpha1.VerdictDegraded: func(in *Input) {
			in.VMI.Status.EvacuationNodeName = nodeA
			withoutCondition(kubevirtv1.VirtualMachineInstanceIsMigratable)(in.VMI)
		},
	}
	nodeL := map[v1alpha1.Verdict]inputMod{
		v1alpha1.VerdictHealthy:  func(in *Input) {},
		v1alpha1.VerdictUnknown:  func(in *Input) { in.Nodes[nodeA] = node(nodeA, heartbeatAt(-time.Hour)) },
		v1alpha1.VerdictFailed:   func(in *Input) { in.Pods = []*corev1.Pod{launcherPod(podPhase(corev1.PodFailed))} },
		v1alpha1.VerdictDegraded: func(in *Input) { paused(pausedIOError)(in.VMI) },
	}
	guestL := map[v1alpha1.Verdict]inputMod{
		v1alpha1.VerdictHealthy:     func(in *Input) {},
		v1alpha1.VerdictProgressing: func(in *Input) { paused(pausedByMigrationMonitor)(in.VMI) },
		v1alpha1.VerdictDegraded:    func(in *Input) { agentGone()(in.VMI) },
	}
	n := 0
	for _, a := range cp {
		for _, b := range nodeL {
			for _, c := range guestL {
				in := input(a, b, c)
				r := Evaluate(in)
				checkInvariants(t, in, r)
				n++
			}
		}
	}
	if n != len(cp)*len(nodeL)*len(guestL) {
		t.Fatal("combinations missing")
	}
}

func TestDeterminismAcrossSituations(t *testing.T) {
	for _, in := range []Input{
		input(),
		input(func(in *Input) {
			in.VMI = runningVMI(migrationState(), evacuating(nodeA))
			in.VMI.Status.ActivePods[pod2UID] = nodeB
			in.VMI.Status.ActivePods["0a0a0a0a-dead-4bee-8000-000000000000"] = nodeB
			in.Pods = []*corev1.Pod{targetPod(), launcherPod(), launcherPod(podPhase(corev1.PodSucceeded), func(p *corev1.Pod) {
				p.Name, p.UID = "virt-launcher-vm1-old01", "old-uid"
			})}
			in.Migrations = []*kubevirtv1.VirtualMachineInstanceMigration{
				vmim(),
				vmim(func(m *kubevirtv1.VirtualMachineInstanceMigration) {
					m.Name, m.UID = "kubevirt-evacuation-aa", "uid-aa"
				}),
				vmim(func(m *kubevirtv1.VirtualMachineInstanceMigration) {
					m.Name, m.UID, m.CreationTimestamp = "older", "uid-old", at(-time.Hour)
				}, vmimIn(kubevirtv1.MigrationFailed, -50*time.Minute)),
			}
		}),
		input(func(in *Input) {
			in.VMI = runningVMI(agentGone(), func(v *kubevirtv1.VirtualMachineInstance) {
				withCondition(kubevirtv1.VirtualMachineInstanceCondition{
					Type: kubevirtv1.VirtualMachineInstanceIsMigratable, Status: corev1.ConditionFalse,
					Reason: kubevirtv1.VirtualMachineInstanceReasonInterfaceNotMigratable,
				})(v)
				v.Spec.Domain.Devices.HostDevices = []kubevirtv1.HostDevice{{Name: "hd", DeviceName: "example.com/dev"}}
			})
			in.Nodes[nodeA] = node(nodeA, heartbeatAt(-10*time.Minute), nodeReady(corev1.ConditionFalse))
		}),
	} {
		checkDeterminism(t, in)
	}
}

// TestDeterminismOfEveryTableCase runs the determinism check on the input
// of every table test.
func TestDeterminismOfEveryTableCase(t *testing.T) {
	all := allSituations()
	if len(all) < 60 {
		t.Fatalf("only %d table cases", len(all))
	}
	for _, c := range all {
		t.Run(c.name, func(t *testing.T) { checkDeterminism(t, c.in) })
	}
}

func TestLastTransitionTimeFromPrevious(t *testing.T) {
	prevT := metav1.NewTime(now.Add(-3 * time.Hour))
	first := Evaluate(input())
	prev := first.Status.DeepCopy()
	prev.Layers.ControlPlane.LastTransitionTime = &prevT
	prev.Layers.Node.LastTransitionTime = &prevT
	for i := range prev.Conditions {
		prev.Conditions[i].LastTransitionTime = prevT
	}

	same := Evaluate(input(func(in *Input) { in.Previous = prev }))
	if got := same.Status.Layers.ControlPlane.LastTransitionTime; !got.Time.Equal(prevT.Time) {
		t.Errorf("unchanged verdict: lastTransitionTime %v, want kept %v", got, prevT)
	}
	for _, c := range same.Status.Conditions {
		if !c.LastTransitionTime.Time.Equal(prevT.Time) {
			t.Errorf("unchanged condition %s: lastTransitionTime %v, want kept", c.Type, c.LastTransitionTime)
		}
	}

	changed := Evaluate(input(func(in *Input) {
		in.Previous = prev
		in.Nodes[nodeA] = node(nodeA, nodeReady(corev1.ConditionFalse))
	}))
	if got := changed.Status.Layers.Node.LastTransitionTime; !got.Time.Equal(now) {
		t.Errorf("changed verdict: lastTransitionTime %v, want now", got)
	}
	if got := changed.Status.Layers.ControlPlane.LastTransitionTime; !got.Time.Equal(prevT.Time) {
		t.Errorf("control plane unchanged: lastTransitionTime %v", got)
	}
	ready := cond(changed.Status, v1alpha1.ConditionReady)
	if ready.Status != metav1.ConditionFalse || !ready.LastTransitionTime.Time.Equal(now) {
		t.Errorf("Ready %+v", ready)
	}
	if c := cond(changed.Status, v1alpha1.ConditionControlPlaneHealthy); !c.LastTransitionTime.Time.Equal(prevT.Time) {
		t.Errorf("ControlPlaneHealthy kept its status, lastTransitionTime %v", c.LastTransitionTime)
	}

	// Degraded since the previous status said so, 20 minutes ago: Stalled.
	degraded := changed.Status.DeepCopy()
	t20 := metav1.NewTime(now.Add(-20 * time.Minute))
	degraded.Layers.Node.LastTransitionTime = &t20
	stalled := Evaluate(input(func(in *Input) {
		in.Previous = degraded
		in.Nodes[nodeA] = node(nodeA, nodeReady(corev1.ConditionFalse))
	}))
	if c := cond(stalled.Status, v1alpha1.ConditionStalled); c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonDegradedPastThreshold {
		t.Errorf("Stalled %+v", c)
	}
	// Degraded for 10 minutes: Stalled in 5.
	t10 := metav1.NewTime(now.Add(-10 * time.Minute))
	degraded.Layers.Node.LastTransitionTime = &t10
	notYet := Evaluate(input(func(in *Input) {
		in.Previous = degraded
		in.Nodes[nodeA] = node(nodeA, nodeReady(corev1.ConditionFalse), heartbeatAt(0))
		in.Policy.HeartbeatTimeout = time.Hour
	}))
	if c := cond(notYet.Status, v1alpha1.ConditionStalled); c.Status != metav1.ConditionFalse {
		t.Errorf("Stalled %+v", c)
	}
	if notYet.NextDeadline != 5*time.Minute {
		t.Errorf("NextDeadline %v, want 5m (stalled threshold)", notYet.NextDeadline)
	}
}

func TestNextDeadlineSubSecondNow(t *testing.T) {
	in := input(func(in *Input) { in.Now = now.Add(700 * time.Millisecond) })
	r := Evaluate(in)
	if want := 5*time.Minute - 47*time.Second - 700*time.Millisecond; r.NextDeadline != want {
		t.Errorf("NextDeadline %v, want %v", r.NextDeadline, want)
	}
	// Past deadlines are not returned: a stale heartbeat is already Unknown.
	r = Evaluate(input(func(in *Input) {
		in.Nodes[nodeA] = node(nodeA, heartbeatAt(-time.Hour))
		in.Policy.StalledAfter = 0
	}))
	if r.NextDeadline != 0 {
		t.Errorf("NextDeadline %v, want 0", r.NextDeadline)
	}
}

func TestBounds(t *testing.T) {
	long := strings.Repeat("é", 3000)
	in := input(func(in *Input) {
		in.VMI = runningVMI(vmiPhase(kubevirtv1.Failed, -time.Minute), func(v *kubevirtv1.VirtualMachineInstance) {
			v.Status.Reason = long
		})
		for i := 0; i < 30; i++ {
			in.Pods = append(in.Pods, launcherPod(func(p *corev1.Pod) {
				p.Name = "virt-launcher-vm1-" + strings.Repeat("x", i+1)
				p.UID = types.UID("uid-" + p.Name)
			}))
		}
	})
	r := Evaluate(in)
	checkInvariants(t, in, r)
	if len(r.Status.LauncherPods) != maxLauncherPods {
		t.Errorf("%d launcher pods", len(r.Status.LauncherPods))
	}
	if !strings.HasSuffix(r.Status.Message, "…") {
		t.Errorf("message not marked as cut: %q", r.Status.Message[len(r.Status.Message)-20:])
	}
	if !json.Valid(mustJSON(t, r.Status)) || !strings.Contains(string(mustJSON(t, r.Status.Message)), "é") {
		t.Error("cut message is not valid UTF-8")
	}
}

func TestBoundCutsOnRuneBoundary(t *testing.T) {
	for n := 4; n < 20; n++ {
		s := bound(strings.Repeat("日本", 10), n)
		if len(s) > n || !strings.HasSuffix(s, "…") || !json.Valid(mustJSON(t, s)) {
			t.Errorf("bound(%d) = %q", n, s)
		}
	}
	if bound("short", 10) != "short" {
		t.Error("short string changed")
	}
}

func TestZeroPolicyTakesDefaults(t *testing.T) {
	for _, in := range []Input{input(), typicalInput(), input(func(in *Input) { in.VMI = runningVMI(noAgentEver()) })} {
		want := mustJSON(t, Evaluate(in))
		in.Policy = Policy{}
		if got := mustJSON(t, Evaluate(in)); !bytes.Equal(got, want) {
			t.Errorf("zero policy differs from the defaults:\n%s\n%s", got, want)
		}
	}
}
