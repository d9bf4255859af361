package drain

import (
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// Phase is where one VM stands during a drain.
type Phase string

const (
	// PhasePending: the VMI still runs on the node and nothing has
	// happened to it yet.
	PhasePending Phase = "Pending"
	// PhaseMigrating: a migration of the VMI is under way.
	PhaseMigrating Phase = "Migrating"
	// PhaseMigrated: the same VMI runs on another node.
	PhaseMigrated Phase = "Migrated"
	// PhaseShutDown: the VMI is final or gone, and no new one runs.
	PhaseShutDown Phase = "ShutDown"
	// PhaseRestarted: a new VMI of the VM runs on another node.
	PhaseRestarted Phase = "Restarted"
	// PhaseBlocked: the VMI still runs on the node and its eviction is
	// refused: predicted to block or to wait for an external controller,
	// or its evacuation migration failed.
	PhaseBlocked Phase = "Blocked"
)

// VMProgress is one VM's place in a drain.
type VMProgress struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Predicted is the outcome the prediction gave.
	Predicted Outcome `json:"predicted"`
	// Phase is where the VM stands now.
	Phase Phase `json:"phase"`
	// Message says what the phase was read from.
	Message string `json:"message"`
}

// Progress is the state of a drain of Node, per VM of the prediction.
type Progress struct {
	Node string      `json:"node"`
	Time metav1.Time `json:"time"`
	// Draining says the node is cordoned (spec.unschedulable).
	Draining bool         `json:"draining"`
	VMs      []VMProgress `json:"vms"`
	// Counts are the number of VMs per phase (phases with none left out).
	Counts map[Phase]int `json:"counts,omitempty"`
}

// VMComparison is one VM's predicted and observed outcome.
type VMComparison struct {
	Namespace string  `json:"namespace"`
	Name      string  `json:"name"`
	Predicted Outcome `json:"predicted"`
	Observed  Outcome `json:"observed"`
	// Message says what the observed outcome was read from.
	Message string `json:"message"`
}

// MatrixCell counts the VMs predicted one outcome and observed another.
type MatrixCell struct {
	Predicted Outcome `json:"predicted"`
	Observed  Outcome `json:"observed"`
	Count     int     `json:"count"`
}

// Comparison is a drain's observed outcome per VM against the prediction:
// a confusion matrix with the VMs behind it.
type Comparison struct {
	Node string         `json:"node"`
	Time metav1.Time    `json:"time"`
	VMs  []VMComparison `json:"vms"`
	// Matrix holds the non-empty cells, in the order of Outcomes.
	Matrix []MatrixCell `json:"matrix"`
	// Right and Wrong count the VMs whose observed outcome is (not) the
	// predicted one.
	Right int `json:"right"`
	Wrong int `json:"wrong"`
}

// observation is what the current objects say of one predicted VM.
type observation struct {
	phase   Phase
	outcome Outcome
	message string
}

// Track reports where each VM of the prediction stands in a drain of
// pred.Node, from the current objects in in (VMIs, migrations, nodes).
func Track(pred Prediction, in Input) Progress {
	p := Progress{Node: pred.Node, Time: metav1.NewTime(in.Now.UTC().Truncate(time.Second)), VMs: []VMProgress{}, Counts: map[Phase]int{}}
	if n := nodeByName(in.Nodes, pred.Node); n != nil {
		p.Draining = n.Spec.Unschedulable
	}
	for _, v := range pred.VMs {
		o := observe(pred, v, in)
		p.VMs = append(p.VMs, VMProgress{Namespace: v.Namespace, Name: v.Name, Predicted: v.Outcome, Phase: o.phase, Message: o.message})
		p.Counts[o.phase]++
	}
	return p
}

// Compare reads the outcome of a finished (or abandoned) drain of
// pred.Node from the current objects and counts it against the prediction.
func Compare(pred Prediction, in Input) Comparison {
	c := Comparison{Node: pred.Node, Time: metav1.NewTime(in.Now.UTC().Truncate(time.Second)), VMs: []VMComparison{}, Matrix: []MatrixCell{}}
	counts := map[[2]Outcome]int{}
	for _, v := range pred.VMs {
		o := observe(pred, v, in)
		c.VMs = append(c.VMs, VMComparison{Namespace: v.Namespace, Name: v.Name, Predicted: v.Outcome, Observed: o.outcome, Message: o.message})
		counts[[2]Outcome{v.Outcome, o.outcome}]++
		if v.Outcome == o.outcome {
			c.Right++
		} else {
			c.Wrong++
		}
	}
	for _, p := range Outcomes {
		for _, o := range Outcomes {
			if n := counts[[2]Outcome{p, o}]; n > 0 {
				c.Matrix = append(c.Matrix, MatrixCell{Predicted: p, Observed: o, Count: n})
			}
		}
	}
	return c
}

// observe reads one predicted VM's phase and outcome from the current
// objects.
func observe(pred Prediction, v VMPrediction, in Input) observation {
	var cur *kubevirtv1.VirtualMachineInstance
	for i := range in.VMIs {
		if in.VMIs[i].Namespace == v.Namespace && in.VMIs[i].Name == v.Name {
			cur = &in.VMIs[i]
		}
	}
	evacuations, active, failed := migrationsOf(in, v, pred.Node)
	switch {
	case cur == nil:
		if v.Outcome == OutcomeUnaffected {
			return observation{PhaseShutDown, OutcomeUnaffected, "the VMI is gone, as it was not running"}
		}
		return observation{PhaseShutDown, OutcomeStaysDown, "the VMI is gone and no new one exists"}
	case v.UID != "" && string(cur.UID) != v.UID:
		if cur.Status.NodeName != "" && cur.Status.NodeName != pred.Node && !cur.IsFinal() &&
			(cur.Status.Phase == kubevirtv1.Running || cur.Status.Phase == kubevirtv1.Scheduled) {
			return observation{PhaseRestarted, OutcomeRestartsElsewhere, fmt.Sprintf("a new VMI (%s) is %s on %s", cur.UID, cur.Status.Phase, cur.Status.NodeName)}
		}
		return observation{PhaseShutDown, OutcomeStaysDown, fmt.Sprintf("a new VMI (%s) exists but does not run (phase %q)", cur.UID, cur.Status.Phase)}
	case cur.IsFinal():
		if v.Outcome == OutcomeUnaffected {
			return observation{PhaseShutDown, OutcomeUnaffected, fmt.Sprintf("the VMI is still %s", cur.Status.Phase)}
		}
		return observation{PhaseShutDown, OutcomeStaysDown, fmt.Sprintf("the VMI is %s and no new one exists", cur.Status.Phase)}
	case cur.Status.NodeName != "" && cur.Status.NodeName != pred.Node:
		return observation{PhaseMigrated, OutcomeLiveMigrates, "the VMI runs on " + cur.Status.NodeName}
	case active != "":
		return observation{PhaseMigrating, OutcomeBlocksDrain, "migration " + active + " is under way"}
	case cur.IsMarkedForEviction() && evacuations == 0:
		return observation{PhaseBlocked, OutcomeLeftToExternal, "the VMI is marked for evacuation from " + cur.Status.EvacuationNodeName + " and no migration was made for it"}
	case failed != "":
		return observation{PhaseBlocked, OutcomeBlocksDrain, "evacuation migration " + failed + " failed; the VMI still runs on the node"}
	case v.Outcome == OutcomeBlocksDrain || v.Outcome == OutcomeLeftToExternal:
		return observation{PhaseBlocked, OutcomeBlocksDrain, "the VMI still runs on the node, as predicted"}
	default:
		return observation{PhasePending, OutcomeBlocksDrain, "the VMI still runs on the node"}
	}
}

// migrationsOf counts the evacuation migrations KubeVirt made of v's VMI
// off node (annotation kubevirt.io/evacuationMigration, kv:pkg/
// virt-controller/watch/drain/evacuation/evacuation.go), and names one
// under way and the last failed.
func migrationsOf(in Input, v VMPrediction, node string) (evacuations int, active, failed string) {
	ms := slices.Clone(in.Migrations)
	slices.SortFunc(ms, func(a, b kubevirtv1.VirtualMachineInstanceMigration) int {
		return a.CreationTimestamp.Compare(b.CreationTimestamp.Time)
	})
	for _, m := range ms {
		if m.Namespace != v.Namespace || m.Spec.VMIName != v.Name {
			continue
		}
		if m.Annotations[kubevirtv1.EvacuationMigrationAnnotation] == node {
			evacuations++
		}
		switch m.Status.Phase {
		case kubevirtv1.MigrationSucceeded:
		case kubevirtv1.MigrationFailed:
			failed = m.Name
		default:
			active = m.Name
		}
	}
	return evacuations, active, failed
}

// Table renders the matrix for a log: predicted outcomes down, observed
// across, every outcome that occurs on either side.
func (c Comparison) Table() string {
	used := map[Outcome]bool{}
	for _, cell := range c.Matrix {
		used[cell.Predicted], used[cell.Observed] = true, true
	}
	var cols []Outcome
	for _, o := range Outcomes {
		if used[o] {
			cols = append(cols, o)
		}
	}
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprint(w, "PREDICTED \\ OBSERVED")
	for _, o := range cols {
		fmt.Fprintf(w, "\t%s", o)
	}
	fmt.Fprintln(w)
	for _, p := range cols {
		fmt.Fprint(w, p)
		for _, o := range cols {
			n := 0
			for _, cell := range c.Matrix {
				if cell.Predicted == p && cell.Observed == o {
					n = cell.Count
				}
			}
			fmt.Fprintf(w, "\t%d", n)
		}
		fmt.Fprintln(w)
	}
	_ = w.Flush()
	fmt.Fprintf(&b, "%d right, %d wrong\n", c.Right, c.Wrong)
	return b.String()
}
