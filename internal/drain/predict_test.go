package drain

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/internal/kvtest"
)

type situation struct {
	name string
	in   Input
	// want is "vm=Outcome:Code,Code..." per VM, the codes of every reason
	// in order; a VM left out is not checked.
	want []string
	// notes are "vm=Code" notes the VM must carry.
	notes []string
	check func(t *testing.T, p Prediction)
}

func run(t *testing.T, cases []situation) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := Predict(c.in)
			checkInvariants(t, c.in, p)
			byName := map[string]VMPrediction{}
			for _, v := range p.VMs {
				byName[v.Name] = v
			}
			for _, w := range c.want {
				name, want, _ := strings.Cut(w, "=")
				v, ok := byName[name]
				if !ok {
					t.Errorf("%s not predicted", name)
					continue
				}
				if got := describe(v); got != want {
					t.Errorf("%s = %s, want %s\nreasons: %s", name, got, want, messages(v.Reasons))
				}
			}
			for _, w := range c.notes {
				name, code, _ := strings.Cut(w, "=")
				if !slices.ContainsFunc(byName[name].Notes, func(r Reason) bool { return r.Code == code }) {
					t.Errorf("%s has no note %s: %s", name, code, messages(byName[name].Notes))
				}
			}
			if c.check != nil {
				c.check(t, p)
			}
			// KubeVirt promises no order of lists: the prediction must not
			// depend on it.
			want, _ := json.Marshal(p)
			r := rand.New(rand.NewPCG(1, 2))
			for range 5 {
				in := c.in
				in.VMIs, in.VMs, in.Nodes, in.PDBs, in.PVCs = slices.Clone(in.VMIs), slices.Clone(in.VMs), slices.Clone(in.Nodes), slices.Clone(in.PDBs), slices.Clone(in.PVCs)
				for _, s := range []func(){
					func() { r.Shuffle(len(in.VMIs), func(i, j int) { in.VMIs[i], in.VMIs[j] = in.VMIs[j], in.VMIs[i] }) },
					func() { r.Shuffle(len(in.VMs), func(i, j int) { in.VMs[i], in.VMs[j] = in.VMs[j], in.VMs[i] }) },
					func() {
						r.Shuffle(len(in.Nodes), func(i, j int) { in.Nodes[i], in.Nodes[j] = in.Nodes[j], in.Nodes[i] })
					},
					func() { r.Shuffle(len(in.PDBs), func(i, j int) { in.PDBs[i], in.PDBs[j] = in.PDBs[j], in.PDBs[i] }) },
				} {
					s()
				}
				got, _ := json.Marshal(Predict(in))
				if !bytes.Equal(got, want) {
					t.Fatalf("the prediction depends on the order of the input:\n%s\n%s", got, want)
				}
			}
		})
	}
}

func describe(v VMPrediction) string {
	codes := make([]string, len(v.Reasons))
	for i, r := range v.Reasons {
		codes[i] = r.Code
	}
	return string(v.Outcome) + ":" + strings.Join(codes, ",")
}

func messages(rs []Reason) string {
	var b strings.Builder
	for _, r := range rs {
		b.WriteString("\n  " + r.Code + ": " + r.Message)
	}
	return b.String()
}

// checkInvariants holds for every prediction.
func checkInvariants(t *testing.T, in Input, p Prediction) {
	t.Helper()
	if p.Node != in.Node || !p.Time.Time.Equal(in.Now.UTC().Truncate(1e9)) {
		t.Errorf("node %q time %v", p.Node, p.Time)
	}
	total := 0
	for o, n := range p.Counts {
		if !slices.Contains(Outcomes, o) || n <= 0 {
			t.Errorf("count %s=%d", o, n)
		}
		total += n
	}
	if total != len(p.VMs) {
		t.Errorf("counts sum to %d for %d VMs", total, len(p.VMs))
	}
	if !slices.IsSortedFunc(p.VMs, func(a, b VMPrediction) int { return strings.Compare(a.Key(), b.Key()) }) {
		t.Error("VMs not sorted")
	}
	for _, v := range p.VMs {
		if !slices.Contains(Outcomes, v.Outcome) {
			t.Errorf("%s: outcome %q", v.Name, v.Outcome)
		}
		if len(v.Reasons) == 0 {
			t.Errorf("%s: %s without a reason", v.Name, v.Outcome)
		}
		for _, r := range slices.Concat(v.Reasons, v.Notes) {
			if !slices.Contains(ReasonCodes, r.Code) || r.Message == "" {
				t.Errorf("%s: reason %q with message %q", v.Name, r.Code, r.Message)
			}
		}
	}
	if p.Migrations.Count != p.Counts[OutcomeLiveMigrates] || p.Migrations.PerNode <= 0 || p.Migrations.PerCluster <= 0 {
		t.Errorf("migrations %+v", p.Migrations)
	}
}

func TestPredictStrategies(t *testing.T) {
	lm, ifp, none, ext := kubevirtv1.EvictionStrategyLiveMigrate, kubevirtv1.EvictionStrategyLiveMigrateIfPossible,
		kubevirtv1.EvictionStrategyNone, kubevirtv1.EvictionStrategyExternal
	rwoDisk := notMigratable(kubevirtv1.VirtualMachineInstanceReasonDisksNotMigratable, "cannot migrate VMI: PVC data is not shared")
	run(t, []situation{
		{
			name: "LiveMigrate and migratable: migrates",
			in:   input([]kubevirtv1.VirtualMachineInstance{vmi("web", strategy(lm))}, vm("web", "Always")),
			want: []string{"web=LiveMigrates:EvictionStrategyLiveMigrate,LiveMigrationPossible"},
			check: func(t *testing.T, p Prediction) {
				if p.TargetNodes != 1 || p.VMs[0].EvictionStrategySource != "spec" {
					t.Errorf("targets %d, source %q", p.TargetNodes, p.VMs[0].EvictionStrategySource)
				}
			},
		},
		{
			name: "LiveMigrate, not migratable: every cause, not only the condition's",
			in: func() Input {
				in := input([]kubevirtv1.VirtualMachineInstance{vmi("db", strategy(lm), rwoDisk, pvcVolume("data"), dvVolume("logs"), dvVolume("shared"), hostDevice, gpu)}, vm("db", "Always"))
				in.PVCs = []corev1.PersistentVolumeClaim{pvc("data", corev1.ReadWriteOnce), pvc("logs", corev1.ReadWriteOncePod), pvc("shared", corev1.ReadWriteMany)}
				return in
			}(),
			want: []string{"db=BlocksDrain:EvictionDeniedNotMigratable,NotLiveMigratable,VolumeReadWriteOnce,VolumeReadWriteOnce,HostDevice,GPU"},
		},
		{
			name: "LiveMigrate without a LiveMigratable condition: KubeVirt takes it for not migratable",
			in:   input([]kubevirtv1.VirtualMachineInstance{vmi("new", strategy(lm), noMigratableCondition)}, vm("new", "Always")),
			want: []string{"new=BlocksDrain:EvictionDeniedNotMigratable,LiveMigratableUnknown"},
		},
		{
			name: "LiveMigrate, migratable, pinned to the drained node: the migration has no target",
			in:   input([]kubevirtv1.VirtualMachineInstance{vmi("pinned", strategy(lm), nodeSelector("kubernetes.io/hostname", nodeA))}, vm("pinned", "Always")),
			want: []string{"pinned=BlocksDrain:EvictionStrategyLiveMigrate,NoTargetNode"},
			check: func(t *testing.T, p Prediction) {
				msg := p.VMs[0].Reasons[1].Message
				for _, part := range []string{"1 cordoned", "1 not Ready", "1 not kubevirt.io/schedulable=true", "1 nodeSelector", "1 the drained node", "kubernetes.io/hostname=node-a"} {
					if !strings.Contains(msg, part) {
						t.Errorf("NoTargetNode message %q lacks %q", msg, part)
					}
				}
			},
		},
		{
			name: "LiveMigrate, not migratable and pinned: both reasons",
			in:   input([]kubevirtv1.VirtualMachineInstance{vmi("both", strategy(lm), rwoDisk, nodeSelector("kubernetes.io/hostname", nodeA))}, vm("both", "Always")),
			want: []string{"both=BlocksDrain:EvictionDeniedNotMigratable,NotLiveMigratable,NoTargetNode"},
		},
		{
			name: "LiveMigrateIfPossible, migratable: migrates",
			in:   input([]kubevirtv1.VirtualMachineInstance{vmi("a", strategy(ifp))}, vm("a", "Always")),
			want: []string{"a=LiveMigrates:EvictionStrategyLiveMigrateIfPossible,LiveMigrationPossible"},
		},
		{
			name: "LiveMigrateIfPossible, not migratable: evicted and restarted",
			in:   input([]kubevirtv1.VirtualMachineInstance{vmi("a", strategy(ifp), rwoDisk)}, vm("a", "Always")),
			want: []string{"a=RestartsElsewhere:EvictionStrategyLiveMigrateIfPossible,NotLiveMigratable,RunStrategyAlways"},
		},
		{
			name: "External: left to the external controller",
			in:   input([]kubevirtv1.VirtualMachineInstance{vmi("capk", strategy(ext), rwoDisk)}, vm("capk", "Always")),
			want: []string{"capk=LeftToExternal:EvictionStrategyExternal"},
		},
		{
			name: "None: evicted, then each runStrategy",
			in: input([]kubevirtv1.VirtualMachineInstance{
				vmi("always", strategy(none)), vmi("rerun", strategy(none)), vmi("manual", strategy(none)),
				vmi("halted", strategy(none)), vmi("once", strategy(none)), vmi("bare", strategy(none), standalone),
				vmi("orphan", strategy(none)),
			}, vm("always", "Always"), vm("rerun", "RerunOnFailure"), vm("manual", "Manual"), vm("halted", "Halted"), vm("once", "Once")),
			want: []string{
				"always=RestartsElsewhere:EvictionStrategyNone,RunStrategyAlways",
				"rerun=StaysDown:EvictionStrategyNone,RunStrategyRerunOnFailure",
				"manual=StaysDown:EvictionStrategyNone,RunStrategyNoRestart",
				"halted=StaysDown:EvictionStrategyNone,RunStrategyNoRestart",
				"once=StaysDown:EvictionStrategyNone,RunStrategyNoRestart",
				"bare=StaysDown:EvictionStrategyNone,NoVirtualMachine",
				"orphan=StaysDown:EvictionStrategyNone,NoVirtualMachine",
			},
		},
		{
			name: "None, runStrategy Always, pinned: the restart has no node",
			in:   input([]kubevirtv1.VirtualMachineInstance{vmi("pinned", strategy(none), affinity(corev1.NodeSelectorOpIn, "kubernetes.io/hostname", nodeA))}, vm("pinned", "Always")),
			want: []string{"pinned=StaysDown:EvictionStrategyNone,RunStrategyAlways,NoNodeForRestart"},
		},
		{
			name: "an unknown strategy is evicted, as KubeVirt's admitter lets it",
			in:   input([]kubevirtv1.VirtualMachineInstance{vmi("odd", strategy("Sometimes"))}, vm("odd", "Always")),
			want: []string{"odd=RestartsElsewhere:EvictionStrategyUnrecognised,RunStrategyAlways"},
		},
		{
			name: "an unknown runStrategy and running with runStrategy: Unknown with the reason",
			in: input([]kubevirtv1.VirtualMachineInstance{vmi("odd", strategy(none)), vmi("both", strategy(none))}, vm("odd", "Sometimes"), func() kubevirtv1.VirtualMachine {
				v := vm("both", "Always")
				v.Spec.Running = new(true)
				return v
			}()),
			want: []string{"odd=Unknown:EvictionStrategyNone,RunStrategyUnrecognised", "both=Unknown:EvictionStrategyNone,RunStrategyUnrecognised"},
		},
	})
}

func TestPredictClusterStrategy(t *testing.T) {
	lm := kubevirtv1.EvictionStrategyLiveMigrate
	withCR := func(kv *kubevirtv1.KubeVirt, unreadable string) Input {
		in := input([]kubevirtv1.VirtualMachineInstance{vmi("a", noStrategy)}, vm("a", "Manual"))
		in.KubeVirt = kv
		if unreadable != "" {
			in.Unreadable = map[Kind]string{KindKubeVirt: unreadable}
		}
		return in
	}
	source := func(want string) func(t *testing.T, p Prediction) {
		return func(t *testing.T, p Prediction) {
			if got := p.VMs[0].EvictionStrategy + "/" + p.VMs[0].EvictionStrategySource; got != want {
				t.Errorf("strategy %s, want %s", got, want)
			}
		}
	}
	run(t, []situation{
		{name: "the KubeVirt CR's strategy", in: withCR(kubevirtCR(&lm, 0, 0), ""), want: []string{"a=LiveMigrates:EvictionStrategyLiveMigrate,LiveMigrationPossible"}, check: source("LiveMigrate/cluster")},
		{name: "the CR sets none: KubeVirt's default None", in: withCR(kubevirtCR(nil, 0, 0), ""), want: []string{"a=StaysDown:EvictionStrategyNone,RunStrategyNoRestart"}, check: source("None/default")},
		{name: "no CR: KubeVirt's default None", in: withCR(nil, ""), want: []string{"a=StaysDown:EvictionStrategyNone,RunStrategyNoRestart"}, check: source("None/default")},
		{
			name: "the CR unreadable: Unknown, with the error", in: withCR(nil, `kubevirts.kubevirt.io is forbidden: User "dev" cannot list resource "kubevirts"`),
			want: []string{"a=Unknown:ClusterEvictionStrategyUnknown"},
			check: func(t *testing.T, p Prediction) {
				if !strings.Contains(p.VMs[0].Reasons[0].Message, "forbidden") || len(p.Notes) != 1 || p.Notes[0].Code != ReasonUnreadable {
					t.Errorf("reason %q, notes %v", p.VMs[0].Reasons[0].Message, p.Notes)
				}
			},
		},
		{
			name: "the VMI's own strategy wins over the unreadable CR", in: func() Input {
				in := withCR(nil, "forbidden")
				strategy(lm)(&in.VMIs[0])
				return in
			}(),
			want: []string{"a=LiveMigrates:EvictionStrategyLiveMigrate,LiveMigrationPossible"}, check: source("LiveMigrate/spec"),
		},
	})
}

func TestPredictBudgetsNodesAndLimits(t *testing.T) {
	lm, none := kubevirtv1.EvictionStrategyLiveMigrate, kubevirtv1.EvictionStrategyNone
	run(t, []situation{
		{
			name: "None with a budget allowing no disruption: blocks",
			in: func() Input {
				in := input([]kubevirtv1.VirtualMachineInstance{vmi("a", strategy(none))}, vm("a", "Always"))
				in.PDBs = append(in.PDBs, pdb("a-pdb", "a", 0), pdb("other", "b", 0))
				return in
			}(),
			want: []string{"a=BlocksDrain:EvictionStrategyNone,DisruptionBudgetDisallows"},
		},
		{
			name: "None with two budgets, each allowing one: the eviction subresource refuses",
			in: func() Input {
				in := input([]kubevirtv1.VirtualMachineInstance{vmi("a", strategy(none))}, vm("a", "Always"))
				in.PDBs = append(in.PDBs, pdb("one", "a", 1), pdb("two", "a", 1))
				return in
			}(),
			want: []string{"a=BlocksDrain:EvictionStrategyNone,DisruptionBudgetDisallows"},
		},
		{
			name: "None with a budget not yet processed: blocks",
			in: func() Input {
				in := input([]kubevirtv1.VirtualMachineInstance{vmi("a", strategy(none))}, vm("a", "Always"))
				b := pdb("a-pdb", "a", 1)
				b.Generation = 2
				in.PDBs = append(in.PDBs, b)
				return in
			}(),
			want: []string{"a=BlocksDrain:EvictionStrategyNone,DisruptionBudgetDisallows"},
		},
		{
			name: "None with a budget allowing one: evicted",
			in: func() Input {
				in := input([]kubevirtv1.VirtualMachineInstance{vmi("a", strategy(none))}, vm("a", "Always"))
				in.PDBs = append(in.PDBs, pdb("a-pdb", "a", 1))
				return in
			}(),
			want: []string{"a=RestartsElsewhere:EvictionStrategyNone,RunStrategyAlways"},
		},
		{
			name: "LiveMigrate with a budget: moot, the admitter answers first",
			in: func() Input {
				in := input([]kubevirtv1.VirtualMachineInstance{vmi("a", strategy(lm))}, vm("a", "Always"))
				in.PDBs = append(in.PDBs, pdb("kubevirt-disruption-budget-x", "a", 0))
				return in
			}(),
			want:  []string{"a=LiveMigrates:EvictionStrategyLiveMigrate,LiveMigrationPossible"},
			notes: []string{"a=DisruptionBudgetMoot"},
		},
		{
			name: "PDBs unreadable: the eviction is predicted, with a note",
			in: func() Input {
				in := input([]kubevirtv1.VirtualMachineInstance{vmi("a", strategy(none))}, vm("a", "Always"))
				in.Unreadable = map[Kind]string{KindPDBs: "forbidden"}
				return in
			}(),
			want:  []string{"a=RestartsElsewhere:EvictionStrategyNone,RunStrategyAlways"},
			notes: []string{"a=DisruptionBudgetsUnreadable"},
		},
		{
			name: "VMs unreadable: Unknown for the evicted, known for the migrating",
			in: func() Input {
				in := input([]kubevirtv1.VirtualMachineInstance{vmi("a", strategy(none)), vmi("b", strategy(lm))})
				in.Unreadable = map[Kind]string{KindVMs: "forbidden"}
				return in
			}(),
			want: []string{"a=Unknown:EvictionStrategyNone,VirtualMachineUnreadable", "b=LiveMigrates:EvictionStrategyLiveMigrate,LiveMigrationPossible"},
		},
		{
			name: "nodes unreadable: a target is assumed, with a note",
			in: func() Input {
				in := input([]kubevirtv1.VirtualMachineInstance{vmi("a", strategy(lm))})
				in.Nodes = nil
				in.Unreadable = map[Kind]string{KindNodes: "forbidden"}
				return in
			}(),
			want:  []string{"a=LiveMigrates:EvictionStrategyLiveMigrate,LiveMigrationPossible"},
			notes: []string{"a=NodesUnreadable"},
		},
		{
			name: "required affinity and taints choose the targets",
			in: func() Input {
				in := input([]kubevirtv1.VirtualMachineInstance{
					vmi("in-b", strategy(lm), affinity(corev1.NodeSelectorOpIn, "kubernetes.io/hostname", nodeB)),
					vmi("not-b", strategy(lm), affinity(corev1.NodeSelectorOpNotIn, "kubernetes.io/hostname", nodeB)),
					vmi("bad-op", strategy(lm), affinity("Near", "kubernetes.io/hostname", nodeB)),
					vmi("gt", strategy(lm), affinity(corev1.NodeSelectorOpGt, "rack", "x")),
				})
				return in
			}(),
			want: []string{
				"in-b=LiveMigrates:EvictionStrategyLiveMigrate,LiveMigrationPossible",
				"not-b=BlocksDrain:EvictionStrategyLiveMigrate,NoTargetNode",
				"bad-op=BlocksDrain:EvictionStrategyLiveMigrate,NoTargetNode",
				"gt=BlocksDrain:EvictionStrategyLiveMigrate,NoTargetNode",
			},
		},
		{
			name: "an untolerated taint leaves no target; a toleration brings it back",
			in: func() Input {
				in := input([]kubevirtv1.VirtualMachineInstance{vmi("plain", strategy(lm)), vmi("tolerant", strategy(lm), func(v *kubevirtv1.VirtualMachineInstance) {
					v.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}
				})})
				taintB(&in.Nodes[1])
				return in
			}(),
			want: []string{"plain=BlocksDrain:EvictionStrategyLiveMigrate,NoTargetNode", "tolerant=LiveMigrates:EvictionStrategyLiveMigrate,LiveMigrationPossible"},
		},
		{
			name: "migration limits queue the migrations, outcomes unchanged",
			in: func() Input {
				in := input([]kubevirtv1.VirtualMachineInstance{vmi("a", strategy(lm)), vmi("b", strategy(lm)), vmi("c", strategy(lm)), vmi("d", strategy(none))}, vm("d", "Always"))
				in.KubeVirt = kubevirtCR(nil, 0, 1)
				return in
			}(),
			want:  []string{"a=LiveMigrates:EvictionStrategyLiveMigrate,LiveMigrationPossible", "c=LiveMigrates:EvictionStrategyLiveMigrate,LiveMigrationPossible"},
			notes: []string{"a=MigrationQueued", "b=MigrationQueued", "c=MigrationQueued"},
			check: func(t *testing.T, p Prediction) {
				if m := p.Migrations; m.Count != 3 || m.PerNode != 2 || m.PerCluster != 1 || m.Rounds != 3 {
					t.Errorf("migrations %+v", m)
				}
				if len(p.VMs[3].Notes) != 0 {
					t.Errorf("d has notes %v", p.VMs[3].Notes)
				}
			},
		},
		{
			name: "final, deleting and other nodes' VMIs",
			in: input([]kubevirtv1.VirtualMachineInstance{
				vmi("done", phase(kubevirtv1.Succeeded)), vmi("gone", deleting), vmi("elsewhere", onNode(nodeB)), vmi("pending", onNode("")),
				vmi("marked", strategy(lm), kvtest.Evacuating(nodeA)),
			}),
			want:  []string{"done=Unaffected:VMIFinal", "gone=Unaffected:VMIDeleting", "marked=LiveMigrates:EvictionStrategyLiveMigrate,LiveMigrationPossible"},
			notes: []string{"marked=AlreadyMarkedForEvacuation"},
			check: func(t *testing.T, p Prediction) {
				if len(p.VMs) != 3 {
					t.Errorf("%d VMs predicted, want 3 (the node's)", len(p.VMs))
				}
			},
		},
		{
			name: "the node unknown, nothing on it",
			in:   Input{Node: "node-z", Now: now, Nodes: nodes()},
			check: func(t *testing.T, p Prediction) {
				if len(p.VMs) != 0 || len(p.Notes) != 1 || p.Notes[0].Code != ReasonNodeNotFound {
					t.Errorf("VMs %v notes %v", p.VMs, p.Notes)
				}
			},
		},
		{name: "empty input", in: Input{}},
	})
}
