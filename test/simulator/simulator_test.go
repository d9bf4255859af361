package simulator_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/membership"
	"github.com/vmobs/vmobs/internal/scheme"
	"github.com/vmobs/vmobs/internal/simulator"
	"github.com/vmobs/vmobs/internal/testenv"
)

// The control plane is started once, by the first test that needs it, and
// stopped by TestMain.
var (
	envOnce sync.Once
	env     *testenv.Env
	envErr  error
	k8s     client.Client
	nsSeq   atomic.Int32
)

func TestMain(m *testing.M) {
	code := m.Run()
	if env != nil {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the control plane:", err)
		}
	}
	os.Exit(code)
}

func controlPlane(t *testing.T) client.Client {
	t.Helper()
	if err := testenv.CheckAssets(); err != nil {
		t.Fatalf("%v", err)
	}
	envOnce.Do(func() {
		// Aggregation: VirtAPI's tests reach it through kube-apiserver.
		env, envErr = testenv.Start(testenv.Options{Aggregation: true})
		if envErr == nil {
			k8s, envErr = env.Client()
		}
	})
	if envErr != nil {
		t.Fatalf("starting the control plane: %v", envErr)
	}
	return k8s
}

// t0 is second-aligned: the API server stores times in seconds.
var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// newSim returns a simulator on a fake clock at t0 and a fresh namespace.
func newSim(t *testing.T, opts ...simulator.Option) (*simulator.Simulator, *clocktesting.FakeClock, string) {
	t.Helper()
	c := controlPlane(t)
	clk := clocktesting.NewFakeClock(t0)
	s := simulator.New(c, append([]simulator.Option{simulator.WithClock(clk.Now)}, opts...)...)
	ns := fmt.Sprintf("sim-%d", nsSeq.Add(1))
	must(t, s.EnsureNamespace(context.Background(), ns))
	return s, clk, ns
}

// nodeName gives each test its own nodes so that losing one affects no
// other test.
func nodeName(ns, n string) string { return ns + "-" + n }

// addNode adds the node nodeName(ns, n) and returns its name.
func addNode(t *testing.T, s *simulator.Simulator, ns, n string) string {
	t.Helper()
	name := nodeName(ns, n)
	must(t, s.AddNode(context.Background(), name))
	return name
}

// bootVM creates the VM of spec and boots it on node.
func bootVM(t *testing.T, s *simulator.Simulator, spec simulator.VMSpec, node string) {
	t.Helper()
	must(t, s.CreateVM(context.Background(), spec))
	must(t, s.Boot(context.Background(), spec.Namespace, spec.Name, node))
}

// bootOnTwoNodes adds the nodes a and b of the VM's namespace and boots the
// VM of spec on a, b left to migrate it to.
func bootOnTwoNodes(t *testing.T, s *simulator.Simulator, spec simulator.VMSpec) (nodeA, nodeB string) {
	t.Helper()
	nodeA, nodeB = addNode(t, s, spec.Namespace, "a"), addNode(t, s, spec.Namespace, "b")
	bootVM(t, s, spec, nodeA)
	return nodeA, nodeB
}

// wantGone fails the test, saying what, unless the object ns/name of obj's
// kind is gone.
func wantGone(t *testing.T, s *simulator.Simulator, ns, name string, obj client.Object, what string) {
	t.Helper()
	if err := s.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj); !apierrors.IsNotFound(err) {
		t.Errorf("%s: %v", what, err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// getObject reads the object ns/name into obj and returns it; getVMI and
// the others name its kinds.
func getObject[T client.Object](t *testing.T, s *simulator.Simulator, ns, name string, obj T) T {
	t.Helper()
	must(t, s.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj))
	return obj
}

func getVMI(t *testing.T, s *simulator.Simulator, ns, name string) *kubevirtv1.VirtualMachineInstance {
	t.Helper()
	return getObject(t, s, ns, name, &kubevirtv1.VirtualMachineInstance{})
}

func getVM(t *testing.T, s *simulator.Simulator, ns, name string) *kubevirtv1.VirtualMachine {
	t.Helper()
	return getObject(t, s, ns, name, &kubevirtv1.VirtualMachine{})
}

func getVMIM(t *testing.T, s *simulator.Simulator, ns, name string) *kubevirtv1.VirtualMachineInstanceMigration {
	t.Helper()
	return getObject(t, s, ns, name, &kubevirtv1.VirtualMachineInstanceMigration{})
}

func getPod(t *testing.T, s *simulator.Simulator, ns, name string) *corev1.Pod {
	t.Helper()
	return getObject(t, s, ns, name, &corev1.Pod{})
}

func getNode(t *testing.T, s *simulator.Simulator, name string) *corev1.Node {
	t.Helper()
	return getObject(t, s, "", name, &corev1.Node{})
}

func podsOf(t *testing.T, s *simulator.Simulator, vmi *kubevirtv1.VirtualMachineInstance) []corev1.Pod {
	t.Helper()
	pods, err := s.LauncherPods(context.Background(), vmi)
	must(t, err)
	return pods
}

func wantEqual[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

// find returns the first element of list that match accepts, nil when
// none does.
func find[T any](list []T, match func(T) bool) *T {
	for i := range list {
		if match(list[i]) {
			return &list[i]
		}
	}
	return nil
}

// vmiCond is the VMI's condition of type ct, nil when it has none.
func vmiCond(vmi *kubevirtv1.VirtualMachineInstance, ct kubevirtv1.VirtualMachineInstanceConditionType) *kubevirtv1.VirtualMachineInstanceCondition {
	return find(vmi.Status.Conditions, func(c kubevirtv1.VirtualMachineInstanceCondition) bool { return c.Type == ct })
}

// nodeCond is the node's condition of type ct, nil when it has none.
func nodeCond(n *corev1.Node, ct corev1.NodeConditionType) *corev1.NodeCondition {
	return find(n.Status.Conditions, func(c corev1.NodeCondition) bool { return c.Type == ct })
}

// hasTaint says whether the node carries the taint key with effect.
func hasTaint(n *corev1.Node, key string, effect corev1.TaintEffect) bool {
	return find(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == key && t.Effect == effect }) != nil
}

func cond(vmi *kubevirtv1.VirtualMachineInstance, ct kubevirtv1.VirtualMachineInstanceConditionType) kubevirtv1.VirtualMachineInstanceCondition {
	if c := vmiCond(vmi, ct); c != nil {
		return *c
	}
	return kubevirtv1.VirtualMachineInstanceCondition{}
}

func podCondition(p *corev1.Pod, ct corev1.PodConditionType) corev1.PodCondition {
	if c := find(p.Status.Conditions, func(c corev1.PodCondition) bool { return c.Type == ct }); c != nil {
		return *c
	}
	return corev1.PodCondition{}
}

func TestBootStepByStep(t *testing.T) {
	ctx := context.Background()
	s, clk, ns := newSim(t, simulator.WithSeed(7))
	nodeA := addNode(t, s, ns, "a")

	node := getNode(t, s, nodeA)
	wantEqual(t, "node heartbeat", node.Annotations[kubevirtv1.VirtHandlerHeartbeat], "2026-11-30T12:00:00Z")
	wantEqual(t, "node schedulable label", node.Labels[kubevirtv1.NodeSchedulable], "true")
	if c := nodeCond(node, corev1.NodeReady); c == nil || c.Status != corev1.ConditionTrue || c.Reason != "KubeletReady" {
		t.Errorf("node Ready = %+v, want True KubeletReady", c)
	}
	if len(node.Status.Addresses) == 0 || node.Status.Addresses[0].Type != corev1.NodeInternalIP {
		t.Errorf("node addresses = %+v, want an InternalIP first", node.Status.Addresses)
	}

	must(t, s.CreateVM(ctx, simulator.VMSpec{Name: "vm1", Namespace: ns, GuestAgent: true, Interfaces: 2}))
	vm := getVM(t, s, ns, "vm1")
	wantEqual(t, "VM printableStatus", vm.Status.PrintableStatus, kubevirtv1.VirtualMachineStatusStarting)
	wantEqual(t, "VM finalizer", strings.Join(vm.Finalizers, ","), kubevirtv1.VirtualMachineControllerFinalizer)
	vmi := getVMI(t, s, ns, "vm1")
	wantEqual(t, "VMI phase", vmi.Status.Phase, kubevirtv1.Pending)
	if ref := metav1.GetControllerOf(vmi); ref == nil || ref.Kind != "VirtualMachine" || ref.UID != vm.UID {
		t.Errorf("VMI controller = %+v, want the VM %s", ref, vm.UID)
	}
	wantEqual(t, "VMI Ready reason while Pending", cond(vmi, kubevirtv1.VirtualMachineInstanceReady).Reason, kubevirtv1.PodNotExistsReason)

	// Pending → Scheduling: the launcher pod exists, unbound.
	clk.Step(time.Second)
	must(t, s.CreateLauncherPod(ctx, ns, "vm1"))
	vmi = getVMI(t, s, ns, "vm1")
	wantEqual(t, "VMI phase", vmi.Status.Phase, kubevirtv1.Scheduling)
	pods := podsOf(t, s, vmi)
	if len(pods) != 1 {
		t.Fatalf("launcher pods = %d, want 1", len(pods))
	}
	pod := pods[0]
	if !strings.HasPrefix(pod.Name, "virt-launcher-vm1-") || len(pod.Name) != len("virt-launcher-vm1-")+5 {
		t.Errorf("pod name %q, want virt-launcher-vm1-<5 chars>", pod.Name)
	}
	if node, ok := vmi.Status.ActivePods[pod.UID]; !ok || node != "" || len(vmi.Status.ActivePods) != 1 {
		t.Errorf("activePods = %v, want {%s: \"\"}", vmi.Status.ActivePods, pod.UID)
	}
	ref := metav1.GetControllerOf(&pod)
	if ref == nil || ref.Kind != "VirtualMachineInstance" || ref.APIVersion != "kubevirt.io/v1" || ref.UID != vmi.UID || ref.Name != "vm1" {
		t.Errorf("pod controller = %+v, want VMI vm1 %s", ref, vmi.UID)
	}
	for k, v := range map[string]string{
		"kubevirt.io":            "virt-launcher",
		"kubevirt.io/created-by": string(vmi.UID),
		"vm.kubevirt.io/name":    "vm1",
		"vmi.kubevirt.io/id":     "vm1",
		"kubevirt.io/domain":     "vm1",
	} {
		wantEqual(t, "pod label "+k, pod.Labels[k], v)
	}
	wantEqual(t, "pod annotation kubevirt.io/domain", pod.Annotations["kubevirt.io/domain"], "vm1")
	wantEqual(t, "pod nodeName", pod.Spec.NodeName, "")
	wantEqual(t, "pod phase", pod.Status.Phase, corev1.PodPending)

	// Scheduling → Scheduled on node-a.
	clk.Step(30 * time.Second)
	must(t, s.StartLauncherPod(ctx, ns, "vm1", nodeA))
	vmi = getVMI(t, s, ns, "vm1")
	wantEqual(t, "VMI phase", vmi.Status.Phase, kubevirtv1.Scheduled)
	wantEqual(t, "VMI nodeName", vmi.Status.NodeName, nodeA)
	wantEqual(t, "VMI nodeName label", vmi.Labels[kubevirtv1.NodeNameLabel], nodeA)
	wantEqual(t, "activePods", fmt.Sprint(vmi.Status.ActivePods), fmt.Sprint(map[types.UID]string{pod.UID: nodeA}))
	pod = *getPod(t, s, ns, pod.Name)
	wantEqual(t, "pod nodeName", pod.Spec.NodeName, nodeA)
	wantEqual(t, "pod phase", pod.Status.Phase, corev1.PodRunning)
	for _, ct := range []corev1.PodConditionType{corev1.PodScheduled, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady, kubevirtv1.VirtualMachineUnpaused} {
		wantEqual(t, "pod condition "+string(ct), podCondition(&pod, ct).Status, corev1.ConditionTrue)
	}
	wantEqual(t, "PodScheduled time (from the clock)", podCondition(&pod, corev1.PodScheduled).LastTransitionTime.Time.UTC(), t0.Add(31*time.Second))
	if len(pod.Status.PodIPs) != 1 || pod.Status.PodIP == "" {
		t.Errorf("pod IPs = %v", pod.Status.PodIPs)
	}
	var compute *corev1.ContainerStatus
	for i := range pod.Status.ContainerStatuses {
		if pod.Status.ContainerStatuses[i].Name == "compute" {
			compute = &pod.Status.ContainerStatuses[i]
		}
	}
	if compute == nil || !compute.Ready || compute.State.Running == nil {
		t.Errorf("compute container status = %+v, want running and ready", compute)
	}
	var netStatus []simulator.NetworkStatus
	must(t, json.Unmarshal([]byte(pod.Annotations[membership.NetworkStatusAnnotation]), &netStatus))
	if len(netStatus) != 2 || !netStatus[0].Default || netStatus[0].IPs[0] != pod.Status.PodIP || netStatus[1].Interface != "pod16477688c0e" {
		t.Errorf("network-status = %+v", netStatus)
	}
	if len(vmi.Status.Interfaces) != 1 || vmi.Status.Interfaces[0].InfoSource != "multus-status" {
		t.Errorf("interfaces while Scheduled = %+v, want the Multus one only", vmi.Status.Interfaces)
	}

	// Scheduled → Running.
	clk.Step(time.Minute)
	must(t, s.StartDomain(ctx, ns, "vm1"))
	vmi = getVMI(t, s, ns, "vm1")
	wantEqual(t, "VMI phase", vmi.Status.Phase, kubevirtv1.Running)
	wantEqual(t, "VMI Ready", cond(vmi, kubevirtv1.VirtualMachineInstanceReady).Status, corev1.ConditionTrue)
	wantEqual(t, "VMI LiveMigratable", cond(vmi, kubevirtv1.VirtualMachineInstanceIsMigratable).Status, corev1.ConditionTrue)
	if len(vmi.Status.Interfaces) != 2 {
		t.Fatalf("interfaces = %+v", vmi.Status.Interfaces)
	}
	wantEqual(t, "primary interface info source", vmi.Status.Interfaces[0].InfoSource, "domain")
	wantEqual(t, "primary interface IP", vmi.Status.Interfaces[0].IP, pod.Status.PodIP)
	wantEqual(t, "Multus interface info source", vmi.Status.Interfaces[1].InfoSource, "domain, multus-status")
	wantEqual(t, "Multus interface IP", vmi.Status.Interfaces[1].IP, netStatus[1].IPs[0])
	var phases []string
	for _, ts := range vmi.Status.PhaseTransitionTimestamps {
		phases = append(phases, fmt.Sprintf("%s@%s", ts.Phase, ts.PhaseTransitionTimestamp.Time.UTC().Sub(t0)))
	}
	wantEqual(t, "phase transitions", strings.Join(phases, " "), "Pending@0s Scheduling@1s Scheduled@31s Running@1m31s")
	vm = getVM(t, s, ns, "vm1")
	wantEqual(t, "VM printableStatus", vm.Status.PrintableStatus, kubevirtv1.VirtualMachineStatusRunning)
	wantEqual(t, "VM ready", vm.Status.Ready, true)

	// The guest agent connects.
	clk.Step(time.Minute)
	must(t, s.ConnectAgent(ctx, ns, "vm1"))
	vmi = getVMI(t, s, ns, "vm1")
	ac := cond(vmi, kubevirtv1.VirtualMachineInstanceAgentConnected)
	wantEqual(t, "AgentConnected", ac.Status, corev1.ConditionTrue)
	wantEqual(t, "AgentConnected since", ac.LastTransitionTime.Time.UTC(), t0.Add(151*time.Second))
	wantEqual(t, "guestOSInfo", vmi.Status.GuestOSInfo.PrettyName, "Fedora Linux 41 (Cloud Edition)")
	wantEqual(t, "primary info source", vmi.Status.Interfaces[0].InfoSource, "domain, guest-agent")
	wantEqual(t, "primary in-guest name", vmi.Status.Interfaces[0].InterfaceName, "eth0")
	wantEqual(t, "Multus info source", vmi.Status.Interfaces[1].InfoSource, "domain, guest-agent, multus-status")
	vm = getVM(t, s, ns, "vm1")
	found := false
	for _, c := range vm.Status.Conditions {
		found = found || c.Type == kubevirtv1.VirtualMachineConditionType(kubevirtv1.VirtualMachineInstanceAgentConnected)
	}
	if !found {
		t.Errorf("the VM does not mirror AgentConnected: %+v", vm.Status.Conditions)
	}

	// Each write is a full Update of the VMI: its generation counts them,
	// and every writer shows up as a field manager.
	if vmi.Generation < 5 {
		t.Errorf("VMI generation %d: status writes should bump it (no status subresource)", vmi.Generation)
	}
	managers := map[string]bool{}
	for _, mf := range vmi.ManagedFields {
		managers[mf.Manager] = true
	}
	for _, m := range []string{"virt-controller", "virt-handler"} {
		if !managers[m] {
			t.Errorf("VMI managedFields lack %s: %v", m, managers)
		}
	}

	// Agent goes away: the condition is removed, guestOSInfo stays.
	must(t, s.DisconnectAgent(ctx, ns, "vm1"))
	vmi = getVMI(t, s, ns, "vm1")
	if vmiCond(vmi, kubevirtv1.VirtualMachineInstanceAgentConnected) != nil {
		t.Error("AgentConnected still present after DisconnectAgent")
	}
	wantEqual(t, "guestOSInfo after disconnect", vmi.Status.GuestOSInfo.Name, "Fedora Linux")
	wantEqual(t, "primary info source after disconnect", vmi.Status.Interfaces[0].InfoSource, "domain")

	// Heartbeats follow the clock.
	clk.Step(time.Minute)
	must(t, s.Heartbeat(ctx, nodeA))
	wantEqual(t, "heartbeat", getNode(t, s, nodeA).Annotations[kubevirtv1.VirtHandlerHeartbeat], "2026-11-30T12:03:31Z")
}

func TestBootOneShotNotMigratableAndEviction(t *testing.T) {
	ctx := context.Background()
	s, _, ns := newSim(t)
	nodeA := addNode(t, s, ns, "a")
	bootVM(t, s, simulator.VMSpec{Name: "gpu", Namespace: ns, HostDevice: true, NonSharedDisk: true}, nodeA)
	vmi := getVMI(t, s, ns, "gpu")
	wantEqual(t, "phase", vmi.Status.Phase, kubevirtv1.Running)
	lm := cond(vmi, kubevirtv1.VirtualMachineInstanceIsMigratable)
	wantEqual(t, "LiveMigratable", lm.Status, corev1.ConditionFalse)
	wantEqual(t, "LiveMigratable reason", lm.Reason, kubevirtv1.VirtualMachineInstanceReasonHostDeviceNotMigratable)
	if vmiCond(vmi, kubevirtv1.VirtualMachineInstanceAgentConnected) != nil {
		t.Error("a VM without GuestAgent got AgentConnected")
	}
	if _, err := s.StartMigration(ctx, ns, "gpu", simulator.MigrationOptions{}); err == nil || !strings.Contains(err.Error(), "HostDeviceNotLiveMigratable") {
		t.Errorf("StartMigration of a non-migratable VMI: err = %v, want a refusal", err)
	}

	must(t, s.Evict(ctx, ns, "gpu"))
	vmi = getVMI(t, s, ns, "gpu")
	wantEqual(t, "evacuationNodeName", vmi.Status.EvacuationNodeName, nodeA)
	wantEqual(t, "EvictionRequested", cond(vmi, kubevirtv1.VirtualMachineInstanceEvictionRequested).Reason, "EvictionRequested")

	// A standalone VMI boots the same way, with no VM.
	bootVM(t, s, simulator.VMSpec{Name: "bare", Namespace: ns, Standalone: true}, nodeA)
	wantEqual(t, "standalone phase", getVMI(t, s, ns, "bare").Status.Phase, kubevirtv1.Running)
	wantGone(t, s, ns, "bare", &kubevirtv1.VirtualMachine{}, "standalone VMI has a VM")
}

func TestMigrationSucceeds(t *testing.T) {
	ctx := context.Background()
	s, clk, ns := newSim(t)
	nodeA, nodeB := bootOnTwoNodes(t, s, simulator.VMSpec{Name: "vm1", Namespace: ns, GuestAgent: true, Interfaces: 2})
	srcPod := podsOf(t, s, getVMI(t, s, ns, "vm1"))[0]
	multusIP := getVMI(t, s, ns, "vm1").Status.Interfaces[1].IP

	m, err := s.StartMigration(ctx, ns, "vm1", simulator.MigrationOptions{TargetNode: nodeB})
	must(t, err)
	if !strings.HasPrefix(m.Name, "kubevirt-migrate-vm-") {
		t.Errorf("VMIM name %q", m.Name)
	}
	var seen []string
	for !m.Done() {
		clk.Step(2 * time.Second)
		must(t, m.Step(ctx))
		seen = append(seen, string(m.Phase()))
		vmi := getVMI(t, s, ns, "vm1")
		vmim := getVMIM(t, s, ns, m.Name)
		wantEqual(t, "VMIM phase", vmim.Status.Phase, m.Phase())
		switch m.Phase() {
		case kubevirtv1.MigrationPending:
			wantEqual(t, "VMIM label", vmim.Labels[kubevirtv1.MigrationSelectorLabel], "vm1")
			wantEqual(t, "VMIM finalizer", strings.Join(vmim.Finalizers, ","), kubevirtv1.VirtualMachineInstanceMigrationFinalizer)
		case kubevirtv1.MigrationScheduling:
			tp := getPod(t, s, ns, m.TargetPod)
			wantEqual(t, "target pod migrationJobUID", tp.Labels[kubevirtv1.MigrationJobLabel], string(m.UID))
			wantEqual(t, "activePods while Scheduling", len(vmi.Status.ActivePods), 2)
		case kubevirtv1.MigrationRunning:
			wantEqual(t, "activePods mid-way", fmt.Sprint(vmi.Status.ActivePods),
				fmt.Sprint(map[types.UID]string{srcPod.UID: nodeA, getPod(t, s, ns, m.TargetPod).UID: nodeB}))
			ms := vmi.Status.MigrationState
			if ms == nil || ms.SourceNode != nodeA || ms.SourcePod != srcPod.Name || ms.TargetNode != nodeB || ms.TargetPod != m.TargetPod ||
				ms.MigrationUID != m.UID || ms.StartTimestamp == nil || ms.EndTimestamp != nil || ms.Completed || ms.TargetNodeAddress == "" {
				t.Errorf("VMI migrationState while Running = %+v", ms)
			}
			wantEqual(t, "VMI migrationTargetNodeName label", vmi.Labels[kubevirtv1.MigrationTargetNodeNameLabel], nodeB)
			if vmim.Status.MigrationState == nil || vmim.Status.MigrationState.TargetNode != "" || vmim.Status.MigrationState.SourcePod != srcPod.Name {
				t.Errorf("VMIM migrationState while Running = %+v, want only the source pod (it is copied at the end)", vmim.Status.MigrationState)
			}
			wantEqual(t, "VM printableStatus", getVM(t, s, ns, "vm1").Status.PrintableStatus, kubevirtv1.VirtualMachineStatusMigrating)
		}
	}
	wantEqual(t, "phases", strings.Join(seen, " "), "Pending Scheduling Scheduled PreparingTarget TargetReady Running Succeeded")
	if err := m.Step(ctx); !errors.Is(err, simulator.ErrMigrationDone) {
		t.Errorf("Step after the end: %v, want ErrMigrationDone", err)
	}

	vmi := getVMI(t, s, ns, "vm1")
	wantEqual(t, "VMI nodeName", vmi.Status.NodeName, nodeB)
	wantEqual(t, "VMI nodeName label", vmi.Labels[kubevirtv1.NodeNameLabel], nodeB)
	if _, ok := vmi.Labels[kubevirtv1.MigrationTargetNodeNameLabel]; ok {
		t.Error("migrationTargetNodeName label left on the VMI")
	}
	ms := vmi.Status.MigrationState
	if ms == nil || !ms.Completed || ms.Failed || ms.EndTimestamp == nil || !ms.TargetNodeDomainDetected {
		t.Errorf("final migrationState = %+v", ms)
	}
	wantEqual(t, "activePods after (the finished source pod stays listed)", len(vmi.Status.ActivePods), 2)
	wantEqual(t, "source pod phase", getPod(t, s, ns, srcPod.Name).Status.Phase, corev1.PodSucceeded)
	tp := getPod(t, s, ns, m.TargetPod)
	wantEqual(t, "target pod phase", tp.Status.Phase, corev1.PodRunning)
	wantEqual(t, "target pod keeps migrationJobUID", tp.Labels[kubevirtv1.MigrationJobLabel], string(m.UID))
	wantEqual(t, "VMI Ready", cond(vmi, kubevirtv1.VirtualMachineInstanceReady).Status, corev1.ConditionTrue)
	// The target virt-handler reports the interfaces from the new pod; the
	// Multus address follows the VM.
	wantEqual(t, "primary IP after migration", vmi.Status.Interfaces[0].IP, tp.Status.PodIP)
	wantEqual(t, "primary info source after migration", vmi.Status.Interfaces[0].InfoSource, "domain, guest-agent")
	wantEqual(t, "Multus IP after migration", vmi.Status.Interfaces[1].IP, multusIP)
	vmim := getVMIM(t, s, ns, m.Name)
	wantEqual(t, "VMIM phase transitions", len(vmim.Status.PhaseTransitionTimestamps), 7)
	if vmim.Status.MigrationState == nil || !vmim.Status.MigrationState.Completed || vmim.Status.MigrationState.TargetPod != m.TargetPod {
		t.Errorf("final VMIM migrationState = %+v", vmim.Status.MigrationState)
	}
	wantEqual(t, "VMIM finalizers", len(vmim.Finalizers), 0)
	wantEqual(t, "VM printableStatus", getVM(t, s, ns, "vm1").Status.PrintableStatus, kubevirtv1.VirtualMachineStatusRunning)
}

func TestMigrationFails(t *testing.T) {
	ctx := context.Background()
	s, _, ns := newSim(t)
	nodeA, nodeB := bootOnTwoNodes(t, s, simulator.VMSpec{Name: "vm1", Namespace: ns})

	m, err := s.Migrate(ctx, ns, "vm1", nodeB, simulator.MigrationFails)
	must(t, err)
	wantEqual(t, "phase", m.Phase(), kubevirtv1.MigrationFailed)
	vmim := getVMIM(t, s, ns, m.Name)
	wantEqual(t, "VMIM phase", vmim.Status.Phase, kubevirtv1.MigrationFailed)
	if ms := vmim.Status.MigrationState; ms == nil || !ms.Failed || ms.FailureReason != "Target pod is down" {
		t.Errorf("VMIM migrationState = %+v", ms)
	}
	vmi := getVMI(t, s, ns, "vm1")
	wantEqual(t, "VMI nodeName", vmi.Status.NodeName, nodeA)
	if ms := vmi.Status.MigrationState; ms == nil || !ms.Failed || ms.FailureReason != "Target pod is down" || ms.EndTimestamp == nil {
		t.Errorf("VMI migrationState = %+v", ms)
	}
	if _, ok := vmi.Labels[kubevirtv1.MigrationTargetNodeNameLabel]; ok {
		t.Error("migrationTargetNodeName label left on the VMI")
	}
	wantEqual(t, "target pod phase", getPod(t, s, ns, m.TargetPod).Status.Phase, corev1.PodFailed)
	wantEqual(t, "VMI phase", vmi.Status.Phase, kubevirtv1.Running)
	wantEqual(t, "VM printableStatus", getVM(t, s, ns, "vm1").Status.PrintableStatus, kubevirtv1.VirtualMachineStatusRunning)
}

func TestMigrationTargetUnschedulableAndStuck(t *testing.T) {
	ctx := context.Background()
	s, _, ns := newSim(t)
	_, nodeB := bootOnTwoNodes(t, s, simulator.VMSpec{Name: "vm1", Namespace: ns})

	m, err := s.StartMigration(ctx, ns, "vm1", simulator.MigrationOptions{Outcome: simulator.MigrationTargetUnschedulable, Evacuation: true})
	must(t, err)
	must(t, m.Run(ctx))
	wantEqual(t, "phase", m.Phase(), kubevirtv1.MigrationScheduling)
	if !strings.HasPrefix(m.Name, "kubevirt-evacuation-") {
		t.Errorf("evacuation VMIM name %q", m.Name)
	}
	tp := getPod(t, s, ns, m.TargetPod)
	wantEqual(t, "target pod node", tp.Spec.NodeName, "")
	ps := podCondition(tp, corev1.PodScheduled)
	if ps.Status != corev1.ConditionFalse || ps.Reason != corev1.PodReasonUnschedulable {
		t.Errorf("target PodScheduled = %+v", ps)
	}
	// KubeVirt's timeout for an unschedulable target.
	must(t, m.Fail(ctx, ""))
	wantEqual(t, "phase after Fail", m.Phase(), kubevirtv1.MigrationFailed)
	wantGone(t, s, ns, m.TargetPod, &corev1.Pod{}, "unscheduled target pod not deleted")

	m, err = s.StartMigration(ctx, ns, "vm1", simulator.MigrationOptions{TargetNode: nodeB, Outcome: simulator.MigrationStuck, At: kubevirtv1.MigrationPreparingTarget})
	must(t, err)
	must(t, m.Run(ctx))
	wantEqual(t, "stuck phase", m.Phase(), kubevirtv1.MigrationPreparingTarget)
	vmi := getVMI(t, s, ns, "vm1")
	if ms := vmi.Status.MigrationState; ms == nil || ms.MigrationUID != m.UID || ms.StartTimestamp != nil {
		t.Errorf("migrationState of a migration stuck in PreparingTarget = %+v", ms)
	}
	wantEqual(t, "activePods", len(vmi.Status.ActivePods), 2)
}

func TestStopStartDelete(t *testing.T) {
	ctx := context.Background()
	s, _, ns := newSim(t)
	nodeA := addNode(t, s, ns, "a")
	bootVM(t, s, simulator.VMSpec{Name: "vm1", Namespace: ns, GuestAgent: true}, nodeA)
	pod := podsOf(t, s, getVMI(t, s, ns, "vm1"))[0]

	must(t, s.RequestStop(ctx, ns, "vm1"))
	vm := getVM(t, s, ns, "vm1")
	wantEqual(t, "runStrategy", *vm.Spec.RunStrategy, kubevirtv1.RunStrategyHalted)
	wantEqual(t, "printableStatus while stopping", vm.Status.PrintableStatus, kubevirtv1.VirtualMachineStatusStopping)
	vmi := getVMI(t, s, ns, "vm1")
	if vmi.DeletionTimestamp == nil {
		t.Error("VMI not being deleted")
	}
	wantEqual(t, "VMI Ready reason", cond(vmi, kubevirtv1.VirtualMachineInstanceReady).Reason, kubevirtv1.PodTerminatingReason)
	if getPod(t, s, ns, pod.Name).DeletionTimestamp == nil {
		t.Error("launcher pod not terminating")
	}

	must(t, s.CompleteStop(ctx, ns, "vm1"))
	wantGone(t, s, ns, "vm1", &kubevirtv1.VirtualMachineInstance{}, "VMI still there")
	wantGone(t, s, ns, pod.Name, &corev1.Pod{}, "launcher pod still there")
	vm = getVM(t, s, ns, "vm1")
	wantEqual(t, "printableStatus", vm.Status.PrintableStatus, kubevirtv1.VirtualMachineStatusStopped)
	wantEqual(t, "created", vm.Status.Created, false)

	must(t, s.Start(ctx, ns, "vm1"))
	wantEqual(t, "phase after Start", getVMI(t, s, ns, "vm1").Status.Phase, kubevirtv1.Pending)
	must(t, s.Boot(ctx, ns, "vm1", nodeA))
	wantEqual(t, "phase after a second Boot", getVMI(t, s, ns, "vm1").Status.Phase, kubevirtv1.Running)

	// Stopping a stopped VM is a no-op.
	must(t, s.CreateVM(ctx, simulator.VMSpec{Name: "halted", Namespace: ns, RunStrategy: kubevirtv1.RunStrategyHalted}))
	wantEqual(t, "halted VM", getVM(t, s, ns, "halted").Status.PrintableStatus, kubevirtv1.VirtualMachineStatusStopped)
	must(t, s.Stop(ctx, ns, "halted"))

	must(t, s.DeleteVM(ctx, ns, "vm1"))
	wantGone(t, s, ns, "vm1", &kubevirtv1.VirtualMachine{}, "VM still there")
	wantGone(t, s, ns, "vm1", &kubevirtv1.VirtualMachineInstance{}, "VMI still there")
}

func TestNodeLoss(t *testing.T) {
	ctx := context.Background()
	s, clk, ns := newSim(t)
	nodeA, nodeB := bootOnTwoNodes(t, s, simulator.VMSpec{Name: "vm1", Namespace: ns})

	clk.Step(time.Minute)
	must(t, s.LoseNode(ctx, nodeA))
	node := getNode(t, s, nodeA)
	if c := nodeCond(node, corev1.NodeReady); c == nil || c.Status != corev1.ConditionUnknown || c.Reason != "NodeStatusUnknown" {
		t.Errorf("lost node Ready = %+v", c)
	}
	if !hasTaint(node, corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute) {
		t.Errorf("lost node taints = %+v", node.Spec.Taints)
	}
	vmi := getVMI(t, s, ns, "vm1")
	wantEqual(t, "VMI phase (KubeVirt keeps it Running)", vmi.Status.Phase, kubevirtv1.Running)
	wantEqual(t, "VMI Ready", cond(vmi, kubevirtv1.VirtualMachineInstanceReady).Status, corev1.ConditionFalse)

	clk.Step(6 * time.Minute)
	must(t, s.HeartbeatAll(ctx))
	wantEqual(t, "lost node heartbeat (stopped)", getNode(t, s, nodeA).Annotations[kubevirtv1.VirtHandlerHeartbeat], "2026-11-30T12:00:00Z")
	wantEqual(t, "live node heartbeat", getNode(t, s, nodeB).Annotations[kubevirtv1.VirtHandlerHeartbeat], "2026-11-30T12:07:00Z")

	pod := podsOf(t, s, vmi)[0]
	must(t, s.NodeUnresponsive(ctx, ns, "vm1"))
	vmi = getVMI(t, s, ns, "vm1")
	wantEqual(t, "VMI phase", vmi.Status.Phase, kubevirtv1.Failed)
	wantEqual(t, "VMI reason", vmi.Status.Reason, "NodeUnresponsive")
	wantEqual(t, "activePods", len(vmi.Status.ActivePods), 0)
	wantGone(t, s, ns, pod.Name, &corev1.Pod{}, "launcher pod on the dead node still there")
	wantEqual(t, "schedulable label", getNode(t, s, nodeA).Labels[kubevirtv1.NodeSchedulable], "false")
	wantEqual(t, "VM printableStatus", getVM(t, s, ns, "vm1").Status.PrintableStatus, kubevirtv1.VirtualMachineStatusStopped)

	must(t, s.RecoverNode(ctx, nodeA))
	node = getNode(t, s, nodeA)
	if c := nodeCond(node, corev1.NodeReady); c == nil || c.Status != corev1.ConditionTrue {
		t.Errorf("recovered node Ready = %+v", c)
	}
	wantEqual(t, "recovered node taints", fmt.Sprint(node.Spec.Taints), "[]")
	wantEqual(t, "recovered schedulable label", node.Labels[kubevirtv1.NodeSchedulable], "true")

	// A VM that lives through a short outage is Ready again afterwards.
	bootVM(t, s, simulator.VMSpec{Name: "vm2", Namespace: ns}, nodeB)
	must(t, s.LoseNode(ctx, nodeB))
	wantEqual(t, "VMI Ready during the outage", cond(getVMI(t, s, ns, "vm2"), kubevirtv1.VirtualMachineInstanceReady).Status, corev1.ConditionFalse)
	must(t, s.RecoverNode(ctx, nodeB))
	wantEqual(t, "VMI Ready after the outage", cond(getVMI(t, s, ns, "vm2"), kubevirtv1.VirtualMachineInstanceReady).Status, corev1.ConditionTrue)
}

func TestFaults(t *testing.T) {
	ctx := context.Background()
	s, _, ns := newSim(t)
	nodeA := addNode(t, s, ns, "a")

	t.Run("pause", func(t *testing.T) {
		bootVM(t, s, simulator.VMSpec{Name: "paused", Namespace: ns}, nodeA)
		must(t, s.Pause(ctx, ns, "paused", simulator.PausedIOError))
		vmi := getVMI(t, s, ns, "paused")
		wantEqual(t, "Paused reason", cond(vmi, kubevirtv1.VirtualMachineInstancePaused).Reason, simulator.PausedIOError)
		wantEqual(t, "VMI Ready", cond(vmi, kubevirtv1.VirtualMachineInstanceReady).Reason, "ReadinessGatesNotReady")
		pod := podsOf(t, s, vmi)[0]
		wantEqual(t, "pod gate", podCondition(&pod, kubevirtv1.VirtualMachineUnpaused).Reason, "Paused")
		wantEqual(t, "pod Ready", podCondition(&pod, corev1.PodReady).Status, corev1.ConditionFalse)
		wantEqual(t, "VM printableStatus", getVM(t, s, ns, "paused").Status.PrintableStatus, kubevirtv1.VirtualMachineStatusPaused)
		must(t, s.Unpause(ctx, ns, "paused"))
		vmi = getVMI(t, s, ns, "paused")
		wantEqual(t, "VMI Ready after unpause", cond(vmi, kubevirtv1.VirtualMachineInstanceReady).Status, corev1.ConditionTrue)
		wantEqual(t, "VM printableStatus after unpause", getVM(t, s, ns, "paused").Status.PrintableStatus, kubevirtv1.VirtualMachineStatusRunning)
		if err := s.Pause(ctx, ns, "paused", "Watchdog"); err == nil {
			t.Error("Pause accepted a reason virt-handler never writes")
		}
	})

	t.Run("memory-hotplug", func(t *testing.T) {
		bootVM(t, s, simulator.VMSpec{Name: "hotplug", Namespace: ns}, nodeA)
		if err := s.RequestMemoryHotplug(ctx, ns, "hotplug", resource.MustParse("16Gi")); err == nil {
			t.Error("RequestMemoryHotplug went past the VMI's maxGuest")
		}
		must(t, s.RequestMemoryHotplug(ctx, ns, "hotplug", resource.MustParse("4Gi")))
		vmi := getVMI(t, s, ns, "hotplug")
		wantEqual(t, "VM template guest", getVM(t, s, ns, "hotplug").Spec.Template.Spec.Domain.Memory.Guest.String(), "4Gi")
		wantEqual(t, "VMI spec guest", vmi.Spec.Domain.Memory.Guest.String(), "4Gi")
		wantEqual(t, "VMI memory request", vmi.Spec.Domain.Resources.Requests.Memory().String(), "4Gi")
		// Not applied: the domain was asked for nothing more.
		wantEqual(t, "guestRequested", vmi.Status.Memory.GuestRequested.String(), "2Gi")
		wantEqual(t, "guestCurrent", vmi.Status.Memory.GuestCurrent.String(), "2Gi")
		c := cond(vmi, kubevirtv1.VirtualMachineInstanceMemoryChange)
		wantEqual(t, "HotMemoryChange", c.Status, corev1.ConditionTrue)
		if !c.LastTransitionTime.IsZero() || c.Reason != "" {
			t.Errorf("HotMemoryChange carries a time or reason syncHotplugCondition never writes: %+v", c)
		}
	})

	t.Run("freeze", func(t *testing.T) {
		bootVM(t, s, simulator.VMSpec{Name: "noagent", Namespace: ns}, nodeA)
		if err := s.FreezeFilesystems(ctx, ns, "noagent"); err == nil {
			t.Error("FreezeFilesystems froze a guest without an agent")
		}
		bootVM(t, s, simulator.VMSpec{Name: "frozen", Namespace: ns, GuestAgent: true}, nodeA)
		must(t, s.FreezeFilesystems(ctx, ns, "frozen"))
		wantEqual(t, "fsFreezeStatus", getVMI(t, s, ns, "frozen").Status.FSFreezeStatus, simulator.FSFrozen)
		must(t, s.ThawFilesystems(ctx, ns, "frozen"))
		wantEqual(t, "fsFreezeStatus after thaw", getVMI(t, s, ns, "frozen").Status.FSFreezeStatus, "")
	})

	t.Run("crash", func(t *testing.T) {
		bootVM(t, s, simulator.VMSpec{Name: "crash", Namespace: ns}, nodeA)
		must(t, s.CrashLauncher(ctx, ns, "crash", simulator.CrashOOMKilled))
		vmi := getVMI(t, s, ns, "crash")
		wantEqual(t, "VMI phase (status lag)", vmi.Status.Phase, kubevirtv1.Running)
		pod := podsOf(t, s, vmi)[0]
		wantEqual(t, "pod phase", pod.Status.Phase, corev1.PodFailed)
		for _, cs := range pod.Status.ContainerStatuses {
			if cs.Name == simulator.ComputeContainer && (cs.State.Terminated == nil || cs.State.Terminated.Reason != "OOMKilled" || cs.State.Terminated.ExitCode != 137) {
				t.Errorf("compute state = %+v", cs.State)
			}
		}
		must(t, s.FailVMI(ctx, ns, "crash"))
		wantEqual(t, "VMI phase after FailVMI", getVMI(t, s, ns, "crash").Status.Phase, kubevirtv1.Failed)
		wantEqual(t, "VM printableStatus", getVM(t, s, ns, "crash").Status.PrintableStatus, kubevirtv1.VirtualMachineStatusStopped)
	})

	for _, tc := range []struct {
		reason    string
		phase     kubevirtv1.VirtualMachineInstancePhase
		printable kubevirtv1.VirtualMachinePrintableStatus
	}{
		{simulator.Unschedulable, kubevirtv1.Scheduling, kubevirtv1.VirtualMachineStatusUnschedulable},
		{simulator.ErrImagePull, kubevirtv1.Scheduling, kubevirtv1.VirtualMachineStatusErrImagePull},
		{simulator.ImagePullBackOff, kubevirtv1.Scheduling, kubevirtv1.VirtualMachineStatusImagePullBackOff},
		{simulator.FailedPvcNotFound, kubevirtv1.Pending, kubevirtv1.VirtualMachineStatusPvcNotFound},
		{simulator.FailedCreate, kubevirtv1.Pending, kubevirtv1.VirtualMachineStatusStarting},
	} {
		t.Run("fail-scheduling-"+tc.reason, func(t *testing.T) {
			name := strings.ToLower(tc.reason)
			must(t, s.CreateVM(ctx, simulator.VMSpec{Name: name, Namespace: ns}))
			must(t, s.FailScheduling(ctx, ns, name, tc.reason))
			vmi := getVMI(t, s, ns, name)
			wantEqual(t, "phase", vmi.Status.Phase, tc.phase)
			wantEqual(t, "printableStatus", getVM(t, s, ns, name).Status.PrintableStatus, tc.printable)
			if tc.reason == simulator.ErrImagePull {
				pod := podsOf(t, s, vmi)[0]
				wantEqual(t, "pod phase", pod.Status.Phase, corev1.PodPending)
				if pod.Spec.NodeName == "" {
					t.Error("the image pull failure happens on a node, but the pod is not bound")
				}
				wantEqual(t, "Synchronized", cond(vmi, kubevirtv1.VirtualMachineInstanceSynchronized).Reason, simulator.ErrImagePull)
			}
		})
	}
}

func TestEveryScenarioPlays(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newSim(t)
	names := map[string]bool{}
	for _, sc := range simulator.Scenarios {
		t.Run(sc.Name, func(t *testing.T) {
			if names[sc.Name] {
				t.Fatalf("duplicate scenario %s", sc.Name)
			}
			names[sc.Name] = true
			if sc.Description == "" || sc.Reason == "" || sc.Play == nil {
				t.Fatalf("incomplete scenario %+v", sc)
			}
			if !slices.Contains(v1alpha1.LayerNames[:], sc.Layer) {
				t.Errorf("layer %q", sc.Layer)
			}
			ns := fmt.Sprintf("scn-%d", nsSeq.Add(1))
			must(t, sc.Play(ctx, s, ns, "vm-"+sc.Name))
			if _, ok := simulator.ScenarioByName(sc.Name); !ok {
				t.Error("ScenarioByName does not find it")
			}
		})
	}
}

func TestSeedMakesNamesReproducible(t *testing.T) {
	ctx := context.Background()
	names := func(seed int64) string {
		s, _, ns := newSim(t, simulator.WithSeed(seed))
		must(t, s.CreateVM(ctx, simulator.VMSpec{Name: "vm1", Namespace: ns}))
		must(t, s.CreateLauncherPod(ctx, ns, "vm1"))
		return podsOf(t, s, getVMI(t, s, ns, "vm1"))[0].Name
	}
	a, b, c := names(42), names(42), names(43)
	wantEqual(t, "same seed, same pod name", a, b)
	if a == c {
		t.Errorf("seeds 42 and 43 both named the pod %s", a)
	}
}

// TestConcurrentBootsWithAnotherWriter boots VMs in parallel on one
// simulator while another writer keeps updating the same VMIs, so that the
// simulator's writes hit resourceVersion conflicts and must retry.
func TestConcurrentBootsWithAnotherWriter(t *testing.T) {
	ctx := context.Background()
	s, _, ns := newSim(t)
	nodeA, nodeB := addNode(t, s, ns, "a"), addNode(t, s, ns, "b")
	const n = 12
	for i := range n {
		must(t, s.CreateVM(ctx, simulator.VMSpec{Name: fmt.Sprintf("vm%d", i), Namespace: ns, GuestAgent: i%2 == 0}))
	}
	stop := make(chan struct{})
	var writes atomic.Int32
	var other sync.WaitGroup
	other.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			vmi := &kubevirtv1.VirtualMachineInstance{}
			if err := s.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("vm%d", i%n)}, vmi); err != nil {
				continue
			}
			metav1.SetMetaDataAnnotation(&vmi.ObjectMeta, "example.com/touched", fmt.Sprint(i))
			if s.Client.Update(ctx, vmi) == nil {
				writes.Add(1)
			}
		}
	})
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			node := nodeA
			if i%2 == 1 {
				node = nodeB
			}
			errs <- s.Boot(ctx, ns, fmt.Sprintf("vm%d", i), node)
		})
	}
	wg.Wait()
	close(stop)
	other.Wait()
	close(errs)
	for err := range errs {
		must(t, err)
	}
	for i := range n {
		vmi := getVMI(t, s, ns, fmt.Sprintf("vm%d", i))
		wantEqual(t, vmi.Name+" phase", vmi.Status.Phase, kubevirtv1.Running)
		wantEqual(t, vmi.Name+" activePods", len(vmi.Status.ActivePods), 1)
		wantEqual(t, vmi.Name+" agent", vmiCond(vmi, kubevirtv1.VirtualMachineInstanceAgentConnected) != nil, i%2 == 0)
	}
	if writes.Load() == 0 {
		t.Log("the other writer got no write in; conflicts were not exercised")
	}
}

// TestRequestsPerBoot reports what one VM costs the API server, for the
// scale harness: a boot with a guest agent and two interfaces.
func TestRequestsPerBoot(t *testing.T) {
	ctx := context.Background()
	controlPlane(t)
	counter := testenv.NewRequestCounter()
	c, err := client.New(counter.Wrap(env.Config), client.Options{Scheme: scheme.New()})
	must(t, err)
	s := simulator.New(c)
	ns := fmt.Sprintf("sim-%d", nsSeq.Add(1))
	must(t, s.EnsureNamespace(ctx, ns))
	node := nodeName(ns, "a")
	must(t, s.AddNode(ctx, node))
	counter.Reset()
	bootVM(t, s, simulator.VMSpec{Name: "vm1", Namespace: ns, GuestAgent: true, Interfaces: 2}, node)
	snap := counter.Snapshot()
	writes, reads := 0, 0
	for k, n := range snap {
		switch strings.Fields(k)[0] {
		case "get", "list", "watch":
			reads += n
		default:
			writes += n
		}
	}
	t.Logf("one boot: %d writes, %d reads: %v", writes, reads, snap)
	if writes > 30 {
		t.Errorf("one boot took %d writes; the scale harness needs it cheap", writes)
	}
}
