package controllers

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/internal/cachestore"
	"github.com/vmobs/vmobs/internal/testsupport"
)

// TestAgentConnectedVMIs: the probes' targets are the Running VMIs whose
// AgentConnected condition is True, read from the cache's projections.
func TestAgentConnectedVMIs(t *testing.T) {
	vmi := func(name string, phase kubevirtv1.VirtualMachineInstancePhase, conds ...kubevirtv1.VirtualMachineInstanceCondition) *kubevirtv1.VirtualMachineInstance {
		return &kubevirtv1.VirtualMachineInstance{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)},
			Status:     kubevirtv1.VirtualMachineInstanceStatus{Phase: phase, Conditions: conds},
		}
	}
	agent := func(s corev1.ConditionStatus) kubevirtv1.VirtualMachineInstanceCondition {
		return kubevirtv1.VirtualMachineInstanceCondition{Type: kubevirtv1.VirtualMachineInstanceAgentConnected, Status: s}
	}
	ready := kubevirtv1.VirtualMachineInstanceCondition{Type: kubevirtv1.VirtualMachineInstanceReady, Status: corev1.ConditionTrue}
	vmis := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{})
	s := &cachestore.Store{VMIs: vmis}
	for _, v := range []*kubevirtv1.VirtualMachineInstance{
		vmi("connected", kubevirtv1.Running, ready, agent(corev1.ConditionTrue)),
		vmi("disconnected", kubevirtv1.Running, ready, agent(corev1.ConditionFalse)),
		vmi("no-agent", kubevirtv1.Running, ready),
		vmi("scheduled", kubevirtv1.Scheduled, agent(corev1.ConditionTrue)),
		vmi("succeeded", kubevirtv1.Succeeded, agent(corev1.ConditionTrue)),
	} {
		if err := vmis.Add(testsupport.Project(t, v)); err != nil {
			t.Fatal(err)
		}
	}
	r := &Reconciler{Store: s}
	got := r.agentConnectedVMIs()
	if len(got) != 1 || got[0].Key != (types.NamespacedName{Namespace: "ns", Name: "connected"}) || got[0].UID != "uid-connected" {
		t.Fatalf("targets %+v, want only ns/connected", got)
	}
	var running []string
	for _, d := range r.runningVMIs() {
		running = append(running, d.Key.Name)
	}
	slices.Sort(running)
	if !slices.Equal(running, []string{"connected", "disconnected", "no-agent"}) {
		t.Fatalf("running VMIs %v", running)
	}
}
