package drain

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/internal/kvtest"
)

// migration is an evacuation migration of VMI name off node-a in phase p.
func migration(name, vmiName string, p kubevirtv1.VirtualMachineInstanceMigrationPhase, age time.Duration) kubevirtv1.VirtualMachineInstanceMigration {
	return kubevirtv1.VirtualMachineInstanceMigration{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: ns, CreationTimestamp: kvtest.At(-age),
			Annotations: map[string]string{kubevirtv1.EvacuationMigrationAnnotation: nodeA},
		},
		Spec:   kubevirtv1.VirtualMachineInstanceMigrationSpec{VMIName: vmiName},
		Status: kubevirtv1.VirtualMachineInstanceMigrationStatus{Phase: p},
	}
}

func TestTrackAndCompare(t *testing.T) {
	lm, none, ext := kubevirtv1.EvictionStrategyLiveMigrate, kubevirtv1.EvictionStrategyNone, kubevirtv1.EvictionStrategyExternal
	before := input([]kubevirtv1.VirtualMachineInstance{
		vmi("moved", strategy(lm)), vmi("moving", strategy(lm)), vmi("restarted", strategy(none)), vmi("down", strategy(none)),
		vmi("final", strategy(none)), vmi("external", strategy(ext)), vmi("stuck", strategy(lm)), vmi("refused", strategy(lm), notMigratable("HostDeviceNotLiveMigratable", "")),
		vmi("waiting", strategy(lm)), vmi("wrong", strategy(lm)), vmi("done", phase(kubevirtv1.Succeeded)),
	}, vm("restarted", "Always"), vm("down", "Manual"), vm("final", "Manual"))
	pred := Predict(before)

	cordoned := nodes()
	cordoned[0].Spec.Unschedulable = true
	during := Input{
		Node: nodeA, Now: now.Add(2 * time.Minute), Nodes: cordoned,
		VMIs: []kubevirtv1.VirtualMachineInstance{
			vmi("moved", strategy(lm), onNode(nodeB)),
			vmi("moving", strategy(lm), kvtest.Evacuating(nodeA)),
			vmi("restarted", withUID("new-uid"), onNode(nodeB)),
			// "down" is gone.
			vmi("final", phase(kubevirtv1.Succeeded)),
			vmi("external", strategy(ext), kvtest.Evacuating(nodeA)),
			vmi("stuck", strategy(lm), kvtest.Evacuating(nodeA)),
			vmi("refused", strategy(lm)),
			vmi("waiting", strategy(lm)),
			vmi("wrong", strategy(lm), withUID("other"), phase(kubevirtv1.Pending), onNode("")),
		},
		Migrations: []kubevirtv1.VirtualMachineInstanceMigration{
			migration("m1", "moved", kubevirtv1.MigrationSucceeded, time.Minute),
			migration("m2", "moving", kubevirtv1.MigrationRunning, 30*time.Second),
			migration("m3", "stuck", kubevirtv1.MigrationFailed, 50*time.Second),
		},
	}
	progress := Track(pred, during)
	if !progress.Draining || !progress.Time.Time.Equal(now.Add(2*time.Minute)) {
		t.Errorf("draining %v at %v", progress.Draining, progress.Time)
	}
	wantPhase := map[string]Phase{
		"moved": PhaseMigrated, "moving": PhaseMigrating, "restarted": PhaseRestarted, "down": PhaseShutDown,
		"final": PhaseShutDown, "external": PhaseBlocked, "stuck": PhaseBlocked, "refused": PhaseBlocked,
		"waiting": PhasePending, "wrong": PhaseShutDown, "done": PhaseShutDown,
	}
	total := 0
	for _, v := range progress.VMs {
		if v.Phase != wantPhase[v.Name] || v.Message == "" {
			t.Errorf("%s: phase %s (%s), want %s", v.Name, v.Phase, v.Message, wantPhase[v.Name])
		}
		total++
	}
	if total != len(wantPhase) {
		t.Errorf("%d VMs tracked, want %d", total, len(wantPhase))
	}

	c := Compare(pred, during)
	wantObserved := map[string]Outcome{
		"moved": OutcomeLiveMigrates, "moving": OutcomeBlocksDrain, "restarted": OutcomeRestartsElsewhere, "down": OutcomeStaysDown,
		"final": OutcomeStaysDown, "external": OutcomeLeftToExternal, "stuck": OutcomeBlocksDrain, "refused": OutcomeBlocksDrain,
		"waiting": OutcomeBlocksDrain, "wrong": OutcomeStaysDown, "done": OutcomeUnaffected,
	}
	right := 0
	for _, v := range c.VMs {
		if v.Observed != wantObserved[v.Name] {
			t.Errorf("%s: observed %s (%s), want %s", v.Name, v.Observed, v.Message, wantObserved[v.Name])
		}
		if v.Observed == v.Predicted {
			right++
		}
	}
	// Predicted wrong, all predicted LiveMigrates: moving (still
	// migrating), stuck (its migration failed), waiting (never evicted),
	// wrong (a new VMI that does not run).
	if c.Right != right || c.Wrong != len(c.VMs)-right || c.Wrong != 4 {
		t.Errorf("right %d wrong %d, counted %d right of %d", c.Right, c.Wrong, right, len(c.VMs))
	}
	sum := 0
	for _, cell := range c.Matrix {
		sum += cell.Count
	}
	if sum != len(c.VMs) {
		t.Errorf("matrix counts %d of %d VMs", sum, len(c.VMs))
	}
	table := c.Table()
	for _, want := range []string{"PREDICTED \\ OBSERVED", "LiveMigrates", "7 right, 4 wrong"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	t.Logf("\n%s", table)
}

func TestTrackNotDraining(t *testing.T) {
	pred := Predict(input([]kubevirtv1.VirtualMachineInstance{vmi("a", strategy(kubevirtv1.EvictionStrategyLiveMigrate))}))
	p := Track(pred, input([]kubevirtv1.VirtualMachineInstance{vmi("a")}))
	if p.Draining || len(p.VMs) != 1 || p.VMs[0].Phase != PhasePending {
		t.Errorf("progress %+v", p)
	}
	// Without nodes, draining is not claimed.
	if p := Track(pred, Input{Node: nodeA}); p.Draining || p.VMs[0].Phase != PhaseShutDown {
		t.Errorf("progress without objects %+v", p)
	}
}
