package verdict

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/membership"
)

var update = flag.Bool("update", false, "rewrite testdata/fuzz/FuzzEvaluate from the table fixtures (make update-golden)")

const fuzzSeedDir = "testdata/fuzz/FuzzEvaluate"

// fuzzArgs is one FuzzEvaluate input: objects as JSON, plus the two
// annotations the engine parses, plus the clock.
type fuzzArgs struct {
	vm, vmi, pods, migrations, nodes, previous []byte
	heartbeat, networkStatus                   string
	nowOffset                                  int64 // seconds from the fixtures' now
}

func (a fuzzArgs) input() Input {
	in := Input{Namespace: ns, Policy: DefaultPolicy(), Nodes: map[string]*corev1.Node{}}
	// Decoding errors leave a partial object: exactly the "status only
	// partly captured" case, so they are not filtered out.
	if len(a.vm) > 0 && string(a.vm) != "null" {
		in.VM = &kubevirtv1.VirtualMachine{}
		_ = json.Unmarshal(a.vm, in.VM)
	}
	if len(a.vmi) > 0 && string(a.vmi) != "null" {
		in.VMI = &kubevirtv1.VirtualMachineInstance{}
		_ = json.Unmarshal(a.vmi, in.VMI)
	}
	_ = json.Unmarshal(a.pods, &in.Pods)
	_ = json.Unmarshal(a.migrations, &in.Migrations)
	var nodes []*corev1.Node
	_ = json.Unmarshal(a.nodes, &nodes)
	for _, n := range nodes {
		if n != nil {
			if a.heartbeat != "" {
				if n.Annotations == nil {
					n.Annotations = map[string]string{}
				}
				n.Annotations[kubevirtv1.VirtHandlerHeartbeat] = a.heartbeat
			}
			in.Nodes[n.Name] = n
		}
	}
	if a.networkStatus != "" {
		for _, p := range in.Pods {
			if p != nil {
				if p.Annotations == nil {
					p.Annotations = map[string]string{}
				}
				p.Annotations[membership.NetworkStatusAnnotation] = a.networkStatus
			}
		}
	}
	if len(a.previous) > 0 && string(a.previous) != "null" {
		in.Previous = &v1alpha1.VMObservationStatus{}
		_ = json.Unmarshal(a.previous, in.Previous)
	}
	switch {
	case in.VMI != nil:
		in.Name = in.VMI.Name
	case in.VM != nil:
		in.Name = in.VM.Name
	}
	const century = 100 * 365 * 24 * 3600
	in.Now = now.Add(time.Duration(max(min(a.nowOffset, century), -century)) * time.Second)
	return in
}

func fuzzArgsOf(t testing.TB, in Input) fuzzArgs {
	var nodes []*corev1.Node
	for _, n := range []string{nodeA, nodeB} {
		if in.Nodes[n] != nil {
			nodes = append(nodes, in.Nodes[n])
		}
	}
	a := fuzzArgs{
		vm: mustJSON(t, in.VM), vmi: mustJSON(t, in.VMI), pods: mustJSON(t, in.Pods),
		migrations: mustJSON(t, in.Migrations), nodes: mustJSON(t, nodes), previous: mustJSON(t, in.Previous),
		nowOffset: int64(in.Now.Sub(now) / time.Second),
	}
	return a
}

func (a fuzzArgs) corpusFile() []byte {
	var b bytes.Buffer
	b.WriteString("go test fuzz v1\n")
	for _, v := range [][]byte{a.vm, a.vmi, a.pods, a.migrations, a.nodes, a.previous} {
		fmt.Fprintf(&b, "[]byte(%q)\n", v)
	}
	fmt.Fprintf(&b, "string(%q)\nstring(%q)\nint64(%d)\n", a.heartbeat, a.networkStatus, a.nowOffset)
	return b.Bytes()
}

var nonWord = regexp.MustCompile(`[^A-Za-z0-9]+`)

func seedName(situation string) string {
	return "seed-" + strings.Trim(nonWord.ReplaceAllString(situation, "_"), "_")
}

// TestFuzzSeedsCurrent keeps the committed FuzzEvaluate corpus equal to the
// table fixtures; run with -update after changing them.
func TestFuzzSeedsCurrent(t *testing.T) {
	want := map[string][]byte{}
	for _, c := range allSituations() {
		if c.in.Now.Sub(now)%time.Second != 0 {
			continue // the corpus carries whole seconds
		}
		want[seedName(c.name)] = fuzzArgsOf(t, c.in).corpusFile()
	}
	if *update {
		if err := os.MkdirAll(fuzzSeedDir, 0o755); err != nil {
			t.Fatal(err)
		}
		old, _ := filepath.Glob(filepath.Join(fuzzSeedDir, "seed-*"))
		for _, f := range old {
			_ = os.Remove(f)
		}
		for name, b := range want {
			if err := os.WriteFile(filepath.Join(fuzzSeedDir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	for name, b := range want {
		got, err := os.ReadFile(filepath.Join(fuzzSeedDir, name))
		if err != nil || !bytes.Equal(got, b) {
			t.Errorf("fuzz seed %s is missing or stale; run go test ./internal/verdict -run TestFuzzSeedsCurrent -update", name)
		}
	}
	files, _ := filepath.Glob(filepath.Join(fuzzSeedDir, "seed-*"))
	if len(files) != len(want) {
		t.Errorf("%d seed files, %d table cases; regenerate with -update", len(files), len(want))
	}
}

// FuzzEvaluate feeds arbitrary JSON as the VM, VMI, pods, migrations,
// nodes and previous status, and arbitrary heartbeat and network-status
// annotations. Evaluate must never panic, must return valid verdicts with
// bounded evidence and messages, and must return the same status twice.
func FuzzEvaluate(f *testing.F) {
	f.Fuzz(func(t *testing.T, vm, vmi, pods, migrations, nodes, previous []byte, heartbeat, networkStatus string, nowOffset int64) {
		a := fuzzArgs{vm, vmi, pods, migrations, nodes, previous, heartbeat, networkStatus, nowOffset}
		in := a.input()
		r := Evaluate(in)
		st := r.Status
		if !validVerdict(st.Verdict) || st.Reason == "" || len(st.Message) > maxMessage {
			t.Fatalf("overall %q/%q, %d-byte message", st.Verdict, st.Reason, len(st.Message))
		}
		if st.Layers == nil {
			t.Fatal("no layers")
		}
		for _, l := range []v1alpha1.LayerStatus{st.Layers.ControlPlane, st.Layers.Node, st.Layers.Guest} {
			if !validVerdict(l.Verdict) || l.Reason == "" || len(l.Message) > maxMessage || len(l.Evidence) > maxEvidence {
				t.Fatalf("layer %q/%q, %d-byte message, %d evidence", l.Verdict, l.Reason, len(l.Message), len(l.Evidence))
			}
			if l.Verdict.Severity() > st.Verdict.Severity() {
				t.Fatalf("layer %s worse than overall %s", l.Verdict, st.Verdict)
			}
		}
		if len(st.Conditions) != 6 || r.NextDeadline < 0 || len(st.LauncherPods) > maxLauncherPods || len(st.Interfaces) > maxInterfaces {
			t.Fatalf("%d conditions, deadline %v, %d pods, %d interfaces", len(st.Conditions), r.NextDeadline, len(st.LauncherPods), len(st.Interfaces))
		}
		if st.LiveMigratable != nil && len(st.LiveMigratable.Reasons) > maxMigratableReasons {
			t.Fatalf("%d migratable reasons", len(st.LiveMigratable.Reasons))
		}
		if st.VMI != nil && len(st.VMI.HotplugVolumes) > maxHotplugVolumes {
			t.Fatalf("%d hotplug volumes", len(st.VMI.HotplugVolumes))
		}
		first, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("status does not marshal: %v", err)
		}
		again, _ := json.Marshal(Evaluate(a.input()))
		if !bytes.Equal(first, again) {
			t.Fatalf("not deterministic:\n%s\n%s", first, again)
		}
	})
}
