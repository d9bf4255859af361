package nodeverdict

import (
	"fmt"
	"maps"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/drain"
	"github.com/vmobs/vmobs/internal/kvtest"
)

func cordoned(n *corev1.Node) { n.Spec.Unschedulable = true }

// drainVMI is a VMI called name, of UID name, running on node.
func drainVMI(name, node string) kubevirtv1.VirtualMachineInstance {
	v := kvtest.RunningVMI()
	v.Name, v.UID, v.Status.NodeName = name, types.UID(name), node
	return *v
}

// threeVMs is the prediction of a drain of node-a: one VM live-migrates,
// one stays down, one blocks the drain.
func threeVMs() *drain.Prediction {
	return &drain.Prediction{Node: "node-a", Time: kvtest.At(0), VMs: []drain.VMPrediction{
		{Namespace: kvtest.Namespace, Name: "block", UID: "block", Outcome: drain.OutcomeBlocksDrain,
			Reasons: []drain.Reason{{Code: "EvictionStrategyNone", Message: "no eviction strategy"}, {Code: "NotLiveMigratable"}}},
		{Namespace: kvtest.Namespace, Name: "down", UID: "down", Outcome: drain.OutcomeStaysDown},
		{Namespace: kvtest.Namespace, Name: "live", UID: "live", Outcome: drain.OutcomeLiveMigrates},
	}}
}

// evacuation is an evacuation migration of vmi off node-a in phase p.
func evacuation(vmi string, p kubevirtv1.VirtualMachineInstanceMigrationPhase) kubevirtv1.VirtualMachineInstanceMigration {
	m := kvtest.VMIM(kvtest.VMIMIn(p, -time.Minute))
	m.Name, m.Spec.VMIName = "evacuation-"+vmi, vmi
	return *m
}

// TestDrainSection follows one drain through its instants, each reading
// the section the one before stored: predicted at the cordon, tracked,
// ended by the uncordon and counted once, and a new drain at the next cordon.
func TestDrainSection(t *testing.T) {
	steps := []struct {
		name       string
		node       *corev1.Node
		prediction *drain.Prediction
		vmis       []kubevirtv1.VirtualMachineInstance
		migrations []kubevirtv1.VirtualMachineInstanceMigration
		needs      bool
		cordoned   bool
		phases     map[string]int32
		ended      string // the comparison's table when this step ends the drain
		outcome    *v1alpha1.NodeDrainOutcome
	}{{
		name: "no cordon, no drain", node: node(),
		vmis: []kubevirtv1.VirtualMachineInstance{drainVMI("live", "node-a")},
	}, {
		name: "the cordon is seen: predicted and tracked from its first instant", node: node(cordoned), needs: true,
		prediction: threeVMs(), cordoned: true,
		vmis:   []kubevirtv1.VirtualMachineInstance{drainVMI("block", "node-a"), drainVMI("down", "node-a"), drainVMI("live", "node-a")},
		phases: map[string]int32{"Blocked": 1, "Pending": 2},
	}, {
		name: "the evacuation migrates one VM, the other shuts down", node: node(cordoned), cordoned: true,
		vmis:       []kubevirtv1.VirtualMachineInstance{drainVMI("block", "node-a"), drainVMI("live", "node-a")},
		migrations: []kubevirtv1.VirtualMachineInstanceMigration{evacuation("live", kubevirtv1.MigrationRunning)},
		phases:     map[string]int32{"Blocked": 1, "Migrating": 1, "ShutDown": 1},
	}, {
		name: "migrated; the blocked VM keeps the drain from ending", node: node(cordoned), cordoned: true,
		vmis:       []kubevirtv1.VirtualMachineInstance{drainVMI("block", "node-a"), drainVMI("live", "node-b")},
		migrations: []kubevirtv1.VirtualMachineInstanceMigration{evacuation("live", kubevirtv1.MigrationSucceeded)},
		phases:     map[string]int32{"Blocked": 1, "Migrated": 1, "ShutDown": 1},
	}, {
		name: "uncordoned: the drain ends, as predicted for all three", node: node(),
		vmis:    []kubevirtv1.VirtualMachineInstance{drainVMI("block", "node-a"), drainVMI("live", "node-b")},
		phases:  map[string]int32{"Blocked": 1, "Migrated": 1, "ShutDown": 1},
		ended:   "3 right, 0 wrong",
		outcome: &v1alpha1.NodeDrainOutcome{EndedAt: kvtest.At(0), Right: 3},
	}, {
		name: "an ended drain stays, and is not counted again", node: node(),
		phases:  map[string]int32{"Blocked": 1, "Migrated": 1, "ShutDown": 1},
		outcome: &v1alpha1.NodeDrainOutcome{EndedAt: kvtest.At(0), Right: 3},
	}, {
		name: "the next cordon is a new drain; the VM that moved back is now live-migrated and ends it",
		node: node(cordoned), needs: true, cordoned: true,
		prediction: &drain.Prediction{Node: "node-a", VMs: []drain.VMPrediction{{Namespace: kvtest.Namespace, Name: "live", UID: "live", Outcome: drain.OutcomeLiveMigrates}}},
		vmis:       []kubevirtv1.VirtualMachineInstance{drainVMI("live", "node-c")},
		phases:     map[string]int32{"Migrated": 1},
		ended:      "1 right, 0 wrong",
		outcome:    &v1alpha1.NodeDrainOutcome{EndedAt: kvtest.At(0), Right: 1},
	}, {
		name: "a drain ended while cordoned stays ended while the node stays cordoned", node: node(cordoned), cordoned: true,
		phases:  map[string]int32{"Migrated": 1},
		outcome: &v1alpha1.NodeDrainOutcome{EndedAt: kvtest.At(0), Right: 1},
	}}
	var stored *v1alpha1.NodeObservationStatus
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			if got := NeedsPrediction(s.node.Spec.Unschedulable, drainOf(stored)); got != s.needs {
				t.Fatalf("NeedsPrediction = %v, want %v", got, s.needs)
			}
			in := input(s.node, func(in *Input) {
				in.Now, in.Previous, in.DrainPrediction = kvtest.Now, stored, s.prediction
				in.DrainObjects = drain.Input{VMIs: s.vmis, Migrations: s.migrations}
			})
			res := Evaluate(in)
			d := res.Status.Drain
			if s.prediction == nil && stored == nil {
				if d != nil || res.DrainEnded != nil {
					t.Fatalf("a drain section %+v out of no drain", d)
				}
				stored = &res.Status
				return
			}
			if d == nil {
				t.Fatal("no drain section")
			}
			if d.Cordoned != s.cordoned {
				t.Errorf("cordoned = %v, want %v", d.Cordoned, s.cordoned)
			}
			if !maps.Equal(d.Phases, s.phases) {
				t.Errorf("phases = %v, want %v", d.Phases, s.phases)
			}
			switch {
			case s.ended == "" && res.DrainEnded != nil:
				t.Errorf("the drain ended again (or too early): %+v", res.DrainEnded)
			case s.ended != "" && res.DrainEnded == nil:
				t.Error("the drain did not end")
			case s.ended != "" && fmt.Sprintf("%d right, %d wrong", res.DrainEnded.Right, res.DrainEnded.Wrong) != s.ended:
				t.Errorf("ended %d right, %d wrong, want %s", res.DrainEnded.Right, res.DrainEnded.Wrong, s.ended)
			}
			if (d.Outcome == nil) != (s.outcome == nil) || d.Outcome != nil && *d.Outcome != *s.outcome {
				t.Errorf("outcome = %+v, want %+v", d.Outcome, s.outcome)
			}
			for _, v := range d.VMs {
				if v.Phase == "" || v.Predicted == "" || (d.Outcome != nil) != (v.Observed != "") {
					t.Errorf("VM %s: phase %q predicted %q observed %q", v.Name, v.Phase, v.Predicted, v.Observed)
				}
			}
			stored = &res.Status
		})
	}
}

func drainOf(st *v1alpha1.NodeObservationStatus) *v1alpha1.NodeDrainStatus {
	if st == nil {
		return nil
	}
	return st.Drain
}

// TestDrainPrediction checks the section a prediction makes: counts per
// outcome, the reasons' codes, the notes, and the bound on VMs.
func TestDrainPrediction(t *testing.T) {
	p := threeVMs()
	p.Notes = []drain.Reason{{Code: "Unreadable", Message: "PodDisruptionBudgets: forbidden"}}
	for i := range v1alpha1.MaxDrainVMs {
		p.VMs = append(p.VMs, drain.VMPrediction{Namespace: "bulk", Name: fmt.Sprintf("vm-%03d", i), Outcome: drain.OutcomeLiveMigrates})
	}
	res := Evaluate(input(node(cordoned), func(in *Input) { in.DrainPrediction = p }))
	d := res.Status.Drain
	if d == nil {
		t.Fatal("no drain section")
	}
	if len(d.VMs) != v1alpha1.MaxDrainVMs || d.OmittedVMs != 3 {
		t.Errorf("%d VMs and %d omitted, want %d and 3", len(d.VMs), d.OmittedVMs, v1alpha1.MaxDrainVMs)
	}
	want := map[string]int32{"BlocksDrain": 1, "StaysDown": 1, "LiveMigrates": v1alpha1.MaxDrainVMs - 2}
	if !maps.Equal(d.Predicted, want) {
		t.Errorf("predicted = %v, want %v (the VMs listed)", d.Predicted, want)
	}
	if got := d.VMs[0].Reasons; len(got) != 2 || got[0] != "EvictionStrategyNone" || got[1] != "NotLiveMigratable" {
		t.Errorf("reasons = %v, want the codes of both", got)
	}
	if len(d.Notes) != 1 || d.Notes[0] != "Unreadable: PodDisruptionBudgets: forbidden" {
		t.Errorf("notes = %v", d.Notes)
	}
	if !d.PredictedAt.Time.Equal(now) {
		t.Errorf("predictedAt = %v, want %v", d.PredictedAt, now)
	}
	// Every VM of the prediction is gone from the (empty) objects: the
	// drain is over at once, and the omitted VMs are in no count.
	if res.DrainEnded == nil || res.DrainEnded.Right+res.DrainEnded.Wrong != v1alpha1.MaxDrainVMs {
		t.Errorf("ended = %+v, want the %d VMs listed compared", res.DrainEnded, v1alpha1.MaxDrainVMs)
	}
}

// TestDrainNotPredicted: a cordoned node whose caller made no prediction
// (it reads no drains) gets no section, and a stored one is carried.
func TestDrainNotPredicted(t *testing.T) {
	if d := Evaluate(input(node(cordoned))).Status.Drain; d != nil {
		t.Errorf("a drain section %+v with no prediction", d)
	}
	stored := &v1alpha1.NodeObservationStatus{Drain: &v1alpha1.NodeDrainStatus{Cordoned: true, Outcome: &v1alpha1.NodeDrainOutcome{Right: 2}}}
	res := Evaluate(input(node(cordoned), func(in *Input) { in.Previous = stored }))
	if d := res.Status.Drain; d == nil || d.Outcome == nil || d.Outcome.Right != 2 || res.DrainEnded != nil {
		t.Errorf("the stored, ended section was not carried as it is: %+v, ended %+v", d, res.DrainEnded)
	}
}
