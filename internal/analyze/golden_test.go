package analyze

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/verdict"
)

// update rewrites the golden files (go test ./internal/analyze -update).
var update = flag.Bool("update", false, "rewrite testdata/*/expected.{txt,yaml} and the corpus table in docs/accuracy.md (make update-golden)")

// goldenNow is the --now of every golden case.
var goldenNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

type fileErr struct{ file, reason string }

// goldenCase says what a testdata case must give, independently of the
// verdict engine's rules: the golden files hold the engine's output and are
// regenerated with -update when the rules change; these do not change.
type goldenCase struct {
	name string
	exit int
	// vms are the groups found, "ns/name", in output order.
	vms []string
	// pods, migrations and nodes map "ns/name" to what was grouped.
	pods, migrations, nodes, missingNodes map[string][]string
	// owners maps "ns/name" to the output's owner, "Kind/uid".
	owners map[string]string
	// notes are substrings of the notes, one each, in order.
	notes []string
	// errors are the file errors, in order: base name and a substring.
	errors []fileErr
	// check adds case-specific checks of the loaded objects.
	check func(t *testing.T, objs Objects, rep Report)
}

var goldenCases = []goldenCase{
	{
		name: "mustgather-healthy",
		exit: ExitOK,
		vms:  []string{"vms-prod/archive-01", "vms-prod/rhel9-db", "web/fedora-web"},
		pods: map[string][]string{
			"vms-prod/rhel9-db": {"virt-launcher-rhel9-db-x7k2p"},
			"web/fedora-web":    {"virt-launcher-fedora-web-8q2mz"},
		},
		nodes: map[string][]string{
			"vms-prod/rhel9-db": {"worker-0"},
			"web/fedora-web":    {"worker-1"},
		},
		owners: map[string]string{
			"vms-prod/archive-01": "VirtualMachine/5e8d2c1b-7a6f-4e3d-8b2a-9c1d0e7f6a5b",
			"vms-prod/rhel9-db":   "VirtualMachine/7d0b9a3e-5c2f-4a61-9b8e-1f2d3c4b5a60",
			"web/fedora-web":      "VirtualMachine/2a7b6c5d-4e3f-4a1b-8c9d-0e1f2a3b4c5d",
		},
		check: func(t *testing.T, objs Objects, rep Report) {
			// The VMI is in kubevirt.io/virtualmachineinstances/ and in
			// crs/ (an older copy); the launcher pod in pods/<pod>/ and in
			// core/pods.yaml.
			if rep.Duplicates != 2 {
				t.Errorf("duplicates = %d, want 2", rep.Duplicates)
			}
			for _, vmi := range objs.VMIs {
				if vmi.Name == "rhel9-db" && vmi.ResourceVersion != "48190561" {
					t.Errorf("rhel9-db: kept resourceVersion %s, want the newer copy 48190561", vmi.ResourceVersion)
				}
			}
			// Logs, virsh XML, node-gather dumps, timestamp, version, html.
			if rep.SkippedFiles != 9 {
				t.Errorf("skipped files = %d, want 9", rep.SkippedFiles)
			}
			// nodes/worker-0/pcidp_config.json is JSON but no object.
			if rep.NotObjects != 1 {
				t.Errorf("not objects = %d, want 1", rep.NotObjects)
			}
			want := map[string]int{"KubeVirt.kubevirt.io": 1, "Namespace": 1}
			if !reflect.DeepEqual(rep.Ignored, want) {
				t.Errorf("ignored = %v, want %v", rep.Ignored, want)
			}
			// core/events.yaml is read for the storage layer.
			if len(objs.Events) == 0 {
				t.Errorf("no events read from core/events.yaml")
			}
			if len(objs.Pods) != 3 { // two launchers and postgres-exporter
				t.Errorf("pods = %d, want 3", len(objs.Pods))
			}
		},
	},
	{
		name: "mustgather-migration-failed",
		exit: ExitOK,
		vms:  []string{"finance/ledger-01", "finance/win2k22-app"},
		pods: map[string][]string{
			// virt-launcher-ledger-01-2mfqs belongs to the previous VMI.
			"finance/ledger-01":   {"virt-launcher-ledger-01-7gk4d"},
			"finance/win2k22-app": {"virt-launcher-win2k22-app-5hn8r", "virt-launcher-win2k22-app-t9wbn"},
		},
		migrations: map[string][]string{
			"finance/win2k22-app": {"kubevirt-evacuation-x2vqd"},
		},
		nodes: map[string][]string{
			"finance/ledger-01":   {"node-b"},
			"finance/win2k22-app": {"node-a", "node-b"},
		},
		owners: map[string]string{
			"finance/ledger-01":   "VirtualMachine/e5f4a3b2-c1d0-4e9f-8a7b-6c5d4e3f2a1b",
			"finance/win2k22-app": "VirtualMachine/f6a5b4c3-d2e1-4f0a-9b8c-7d6e5f4a3b2c",
		},
		notes: []string{
			"Pod finance/virt-launcher-ledger-01-2mfqs: its controller is VirtualMachineInstance \"ledger-01\" with uid 0a9b8c7d-6e5f-4a3b-9c2d-1e0f9a8b7c6d, but the VMI in the input has uid b7c6d5e4-f3a2-4b1c-9d0e-8f7a6b5c4d3e",
			"VirtualMachineInstanceMigration finance/kubevirt-workload-update-7xk2w: VirtualMachineInstance \"batch-07\" is not in the input",
		},
	},
	{
		name: "list-and-multidoc",
		exit: ExitOK,
		vms:  []string{"lab/build-runner", "lab/scratch-vmi", "lab/ubuntu-dev"},
		pods: map[string][]string{
			"lab/build-runner": {"virt-launcher-build-runner-hx7tp"},
			"lab/scratch-vmi":  {"virt-launcher-scratch-vmi-rb2kc"},
			// No ownerReferences: found by kubevirt.io/created-by.
			"lab/ubuntu-dev": {"virt-launcher-ubuntu-dev-vq8xl"},
		},
		nodes:        map[string][]string{"lab/ubuntu-dev": {"lab-node-1"}},
		missingNodes: map[string][]string{"lab/scratch-vmi": {"lab-node-9"}},
		owners: map[string]string{
			"lab/build-runner": "VirtualMachine/44d5e6f7-0819-4a2b-b3c4-d5e6f708192a",
			"lab/scratch-vmi":  "VirtualMachineInstance/88192a3b-4c5d-4e6f-a7f8-091a2b3c4d5e",
			"lab/ubuntu-dev":   "VirtualMachine/11a2b3c4-d5e6-4f70-8192-a3b4c5d6e7f8",
		},
		check: func(t *testing.T, objs Objects, rep Report) {
			// vms.yaml 1, pods.yaml 2 (a comment-only document and empty
			// ones are not documents), nodes.json 1, scratch.json 2,
			// vmobservations.yaml 1.
			if rep.Documents != 7 {
				t.Errorf("documents = %d, want 7", rep.Documents)
			}
			for _, vmi := range objs.VMIs {
				if vmi.Name == "ubuntu-dev" && vmi.APIVersion != "kubevirt.io/v1" {
					t.Errorf("ubuntu-dev (kubevirt.io/v1alpha3 in the file): apiVersion %q, want kubevirt.io/v1", vmi.APIVersion)
				}
			}
			if len(objs.Nodes) != 1 || objs.Nodes[0].Kind != "Node" || objs.Nodes[0].APIVersion != "v1" {
				t.Errorf("nodes.json (a NodeList whose items lack kind): nodes = %v", objs.Nodes)
			}
			if len(objs.Observations) != 1 || objs.Observations[0].Spec.Policy == nil {
				t.Fatalf("the declared VMObservation was not loaded: %v", objs.Observations)
			}
		},
	},
	{
		name: "broken",
		exit: ExitOK, // cirros was analysed
		vms:  []string{"default/cirros"},
		pods: map[string][]string{"default/cirros": {"virt-launcher-cirros-k2x9d"}},
		nodes: map[string][]string{
			"default/cirros": {"kind-worker"},
		},
		owners: map[string]string{"default/cirros": "VirtualMachine/a1a2a3a4-b5b6-4c7c-8d8d-e9e0f1f2f3f4"},
		errors: []fileErr{
			{"malformed.yaml", "invalid YAML: yaml: line 11: found unexpected end of stream"},
			{"node-and-garbage.yaml", "document 2 (line 18): invalid YAML: yaml: line 23: mapping values are not allowed"},
			{"truncated.json", "invalid JSON: line 10: invalid character"},
			{"wrong-types.yaml", "document 1 (line 1): VirtualMachineInstance default/odd: cannot convert: cannot unmarshal array into Go struct field VirtualMachineInstanceStatus.status.phase"},
			{"wrong-types.yaml", "document 2 (line 12): Pod without metadata.name"},
		},
		check: func(t *testing.T, objs Objects, rep Report) {
			// The Node before the broken document of the same file was read.
			if len(objs.Nodes) != 1 || objs.Nodes[0].Name != "kind-worker" {
				t.Errorf("nodes = %v, want kind-worker", objs.Nodes)
			}
			if rep.SkippedFiles != 1 { // README.txt
				t.Errorf("skipped = %d, want 1", rep.SkippedFiles)
			}
		},
	},
}

func TestGolden(t *testing.T) {
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join("testdata", tc.name)
			input := filepath.Join(dir, "input")
			cfg := Config{Paths: []string{input}, Now: goldenNow, Policy: verdict.DefaultPolicy()}

			outputs := map[string][]byte{}
			for _, format := range []string{FormatTable, FormatYAML, FormatJSON} {
				cfg.Format = format
				var stdout, stderr bytes.Buffer
				if code := Run(cfg, &stdout, &stderr); code != tc.exit {
					t.Fatalf("-o %s: exit %d, want %d; stderr:\n%s", format, code, tc.exit, stderr.String())
				}
				checkStderr(t, stderr.String(), input, tc)
				outputs[format] = stdout.Bytes()
			}
			golden(t, filepath.Join(dir, "expected.txt"), outputs[FormatTable])
			golden(t, filepath.Join(dir, "expected.yaml"), outputs[FormatYAML])

			objs, rep := Load([]string{input}, Options{})
			res := AnalyzeAll(objs, goldenNow, verdict.DefaultPolicy())
			checkGroups(t, res, tc)
			checkList(t, outputs[FormatJSON], outputs[FormatYAML], res, tc)
			if tc.check != nil {
				tc.check(t, objs, rep)
			}

			// Deterministic: the same input read again, and read file by
			// file in reverse order, gives the same VMObservations.
			again := Analyze(objs, goldenNow, verdict.DefaultPolicy())
			if !reflect.DeepEqual(again, res.Observations) {
				t.Error("a second Analyze of the same objects differs")
			}
			files := inputFiles(t, input)
			slices.Reverse(files)
			objs2, _ := Load(files, Options{})
			if rev := Analyze(objs2, goldenNow, verdict.DefaultPolicy()); !reflect.DeepEqual(rev, res.Observations) {
				t.Error("reading the files in reverse order changes the output")
			}
		})
	}
}

// golden compares got with the file at path, or rewrites it with -update.
func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/analyze -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the output (if the engine changed on purpose, run go test ./internal/analyze -update and review the diff):\n--- got\n%s", path, got)
	}
}

func checkStderr(t *testing.T, stderr, input string, tc goldenCase) {
	t.Helper()
	var lines []string
	for _, l := range strings.Split(strings.TrimRight(stderr, "\n"), "\n") {
		if l != "" {
			lines = append(lines, l)
		}
	}
	var wantLines []string
	for _, e := range tc.errors {
		wantLines = append(wantLines, "vmobs analyze: "+filepath.Join(input, e.file)+": "+e.reason)
	}
	for _, n := range tc.notes {
		wantLines = append(wantLines, "vmobs analyze: warning: "+n)
	}
	if len(lines) != len(wantLines) {
		t.Fatalf("stderr has %d lines, want %d:\n%s", len(lines), len(wantLines), stderr)
	}
	for i := range lines {
		if !strings.HasPrefix(lines[i], wantLines[i]) {
			t.Errorf("stderr line %d:\n got %s\nwant %s...", i+1, lines[i], wantLines[i])
		}
	}
}

func key(ns, name string) string { return ns + "/" + name }

func checkGroups(t *testing.T, res Result, tc goldenCase) {
	t.Helper()
	var vms []string
	for _, g := range res.Groups {
		k := key(g.Namespace, g.Name)
		vms = append(vms, k)
		var pods, migs, nodes []string
		for _, p := range g.Pods {
			pods = append(pods, p.Name)
		}
		for _, m := range g.Migrations {
			migs = append(migs, m.Name)
		}
		for n, node := range g.Nodes {
			if node == nil || node.Name != n {
				t.Errorf("%s: Nodes[%q] = %v", k, n, node)
			}
			nodes = append(nodes, n)
		}
		slices.Sort(nodes)
		for what, pair := range map[string][2][]string{
			"pods":          {pods, tc.pods[k]},
			"migrations":    {migs, tc.migrations[k]},
			"nodes":         {nodes, tc.nodes[k]},
			"missing nodes": {g.MissingNodes, tc.missingNodes[k]},
		} {
			if !slices.Equal(pair[0], pair[1]) {
				t.Errorf("%s: %s = %q, want %q", k, what, pair[0], pair[1])
			}
		}
	}
	if !slices.Equal(vms, tc.vms) {
		t.Errorf("VMs = %q, want %q", vms, tc.vms)
	}
	if len(res.Observations) != len(res.Groups) {
		t.Errorf("%d observations for %d VMs; notes: %v", len(res.Observations), len(res.Groups), res.Notes)
	}
}

// checkList checks that the JSON output is a v1 List of complete
// VMObservations, one per VM, and that the YAML output says the same.
func checkList(t *testing.T, jsonOut, yamlOut []byte, res Result, tc goldenCase) {
	t.Helper()
	var list struct {
		APIVersion string                   `json:"apiVersion"`
		Kind       string                   `json:"kind"`
		Metadata   map[string]any           `json:"metadata"`
		Items      []v1alpha1.VMObservation `json:"items"`
	}
	dec := json.NewDecoder(bytes.NewReader(jsonOut))
	dec.DisallowUnknownFields() // every field is a VMObservation field
	if err := dec.Decode(&list); err != nil {
		t.Fatalf("JSON output: %v", err)
	}
	if list.APIVersion != "v1" || list.Kind != "List" {
		t.Errorf("JSON output is %s %s, want v1 List", list.APIVersion, list.Kind)
	}
	if len(list.Items) != len(tc.vms) {
		t.Fatalf("JSON output has %d items, want %d", len(list.Items), len(tc.vms))
	}
	valid := map[v1alpha1.Verdict]bool{}
	for _, v := range []v1alpha1.Verdict{v1alpha1.VerdictHealthy, v1alpha1.VerdictProgressing, v1alpha1.VerdictSuspended,
		v1alpha1.VerdictDegraded, v1alpha1.VerdictFailed, v1alpha1.VerdictUnknown} {
		valid[v] = true
	}
	for i, o := range list.Items {
		k := key(o.Namespace, o.Name)
		if k != tc.vms[i] {
			t.Errorf("item %d is %s, want %s", i, k, tc.vms[i])
		}
		if o.APIVersion != "observability.vmobs.io/v1alpha1" || o.Kind != "VMObservation" {
			t.Errorf("%s: %s %s, want observability.vmobs.io/v1alpha1 VMObservation", k, o.APIVersion, o.Kind)
		}
		if o.Spec.VMName != o.Name {
			t.Errorf("%s: spec.vmName = %q", k, o.Spec.VMName)
		}
		st := o.Status
		if !valid[st.Verdict] || st.Reason == "" {
			t.Errorf("%s: verdict %q reason %q", k, st.Verdict, st.Reason)
		}
		if st.Layers == nil {
			t.Errorf("%s: no layers", k)
		} else {
			for name, l := range map[string]v1alpha1.LayerStatus{"controlPlane": st.Layers.ControlPlane, "node": st.Layers.Node, "guest": st.Layers.Guest} {
				if !valid[l.Verdict] || l.Reason == "" {
					t.Errorf("%s: layer %s: verdict %q reason %q", k, name, l.Verdict, l.Reason)
				}
			}
		}
		var owner string
		if len(o.OwnerReferences) == 1 {
			r := o.OwnerReferences[0]
			owner = r.Kind + "/" + string(r.UID)
			// The controller's owner reference (membership.Owner): not a
			// controller reference.
			if r.APIVersion != "kubevirt.io/v1" || r.Controller != nil || r.BlockOwnerDeletion != nil {
				t.Errorf("%s: owner reference %+v", k, r)
			}
		}
		if owner != tc.owners[k] {
			t.Errorf("%s: owner %q, want %q", k, owner, tc.owners[k])
		}
		if !equality.Semantic.DeepEqual(o, res.Observations[i]) {
			t.Errorf("%s: the JSON item differs from Analyze's VMObservation", k)
		}
	}
	// The YAML says the same as the JSON.
	var fromYAML, fromJSON any
	if err := yaml.Unmarshal(yamlOut, &fromYAML); err != nil {
		t.Fatalf("YAML output: %v", err)
	}
	if err := json.Unmarshal(jsonOut, &fromJSON); err != nil {
		t.Fatal(err)
	}
	yj, _ := json.Marshal(fromYAML)
	jj, _ := json.Marshal(fromJSON)
	if !bytes.Equal(yj, jj) {
		t.Error("the YAML and JSON outputs differ")
	}
}

// inputFiles lists the files Load would read under dir.
func inputFiles(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && objectFileName(d.Name()) {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}
