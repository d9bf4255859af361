package simulator_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/internal/simulator"
)

// TestEverydayPlays plays a 24-VM fleet's life 60 times faster than real
// time (12 s, more when the API server is slow) on the control plane, and checks every operation completed
// without a failed step and left the objects as KubeVirt leaves them: every
// VM Running with its agent connected and an address, no hotplug
// condition, a memory dump Completed, the drained node uncordoned and
// empty, every migration Succeeded.
func TestEverydayPlays(t *testing.T) {
	ctx := context.Background()
	c := controlPlane(t)
	s := simulator.New(c, simulator.WithSeed(3))
	ns := fmt.Sprintf("everyday-%d", nsSeq.Add(1))
	var nodes []string
	for i := range 3 {
		nodes = append(nodes, nodeName(ns, fmt.Sprint(i)))
	}
	life := &simulator.Everyday{Sim: s, Namespace: ns, VMs: 24, Nodes: nodes, Factor: 60, Duration: simulator.EverydayLife, Seed: 1}
	rep, err := life.Play(ctx)
	must(t, err)
	for _, e := range rep.Errors {
		t.Errorf("step failed: %s", e)
	}
	for _, op := range simulator.EverydayOperations {
		if rep.Operations[op] == 0 {
			t.Errorf("operation %s never completed: %v", op, rep.Operations)
		}
	}
	if rep.Operations[simulator.OpBoot] != 24 {
		t.Errorf("%d boots, want 24", rep.Operations[simulator.OpBoot])
	}

	var vmis kubevirtv1.VirtualMachineInstanceList
	must(t, c.List(ctx, &vmis))
	seen, dumped := 0, 0
	for _, vmi := range vmis.Items {
		if vmi.Namespace != ns {
			continue
		}
		seen++
		if vmi.Status.Phase != kubevirtv1.Running || vmi.Status.NodeName == nodes[2] {
			t.Errorf("%s: %s on %s, want Running off the drained node", vmi.Name, vmi.Status.Phase, vmi.Status.NodeName)
		}
		if vmiCond(&vmi, kubevirtv1.VirtualMachineInstanceAgentConnected) == nil {
			t.Errorf("%s: agent not connected", vmi.Name)
		}
		if len(vmi.Status.Interfaces) == 0 || vmi.Status.Interfaces[0].IP == "" {
			t.Errorf("%s: primary interface without an address: %+v", vmi.Name, vmi.Status.Interfaces)
		}
		for _, ct := range []kubevirtv1.VirtualMachineInstanceConditionType{
			kubevirtv1.VirtualMachineInstanceVCPUChange, kubevirtv1.VirtualMachineInstanceMemoryChange,
			kubevirtv1.VirtualMachineInstancePaused, kubevirtv1.VirtualMachineInstanceEvictionRequested,
		} {
			if vmiCond(&vmi, ct) != nil {
				t.Errorf("%s: condition %s left behind", vmi.Name, ct)
			}
		}
		if vmi.Status.FSFreezeStatus != "" {
			t.Errorf("%s: filesystems left %s", vmi.Name, vmi.Status.FSFreezeStatus)
		}
		vm := &kubevirtv1.VirtualMachine{}
		must(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: vmi.Name}, vm))
		if r := vm.Status.MemoryDumpRequest; r != nil {
			if r.Phase != kubevirtv1.MemoryDumpCompleted || r.FileName == nil || r.EndTimestamp == nil {
				t.Errorf("%s: memory dump %+v, want Completed with a file", vmi.Name, r)
			}
			dumped++
		}
	}
	if seen != 24 || dumped == 0 {
		t.Errorf("%d VMIs, %d memory dumps; want 24 and at least one", seen, dumped)
	}
	node := &corev1.Node{}
	must(t, c.Get(ctx, client.ObjectKey{Namespace: "", Name: nodes[2]}, node))
	if node.Spec.Unschedulable {
		t.Errorf("drained node %s left cordoned", nodes[2])
	}
	var vmims kubevirtv1.VirtualMachineInstanceMigrationList
	must(t, c.List(ctx, &vmims))
	migrations := 0
	for _, m := range vmims.Items {
		if m.Namespace != ns {
			continue
		}
		migrations++
		if m.Status.Phase != kubevirtv1.MigrationSucceeded {
			t.Errorf("migration %s of %s is %s", m.Name, m.Spec.VMIName, m.Status.Phase)
		}
	}
	// A post-copy migration counts as a live migration too.
	want := rep.Operations[simulator.OpMigration] + rep.Operations[simulator.OpEvacuation] + rep.Operations[simulator.OpCPUHotplug] + rep.Operations[simulator.OpMemoryHotplug]
	if migrations != want {
		t.Errorf("%d migrations, want %d (%v)", migrations, want, rep.Operations)
	}
	// It plays at least its length; on a loaded machine the operations'
	// own writes may stretch it.
	if life := time.Duration(float64(simulator.EverydayLife) / 60); rep.Wall < life {
		t.Errorf("the life took %s, shorter than its %s", rep.Wall, life)
	}
	t.Logf("the life took %s (%s at factor 60): %v", rep.Wall.Round(time.Second), simulator.EverydayLife, rep.Operations)
}
