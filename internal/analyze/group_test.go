package analyze

import (
	"bytes"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/verdict"
)

func testVMI(ns, name, uid, node string) *kubevirtv1.VirtualMachineInstance {
	return &kubevirtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)},
		Status:     kubevirtv1.VirtualMachineInstanceStatus{Phase: kubevirtv1.Running, NodeName: node},
	}
}

func testPod(ns, name, node string, owner *metav1.OwnerReference, labels map[string]string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec:       corev1.PodSpec{NodeName: node},
	}
	if owner != nil {
		p.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	return p
}

func vmiRef(name, uid string) *metav1.OwnerReference {
	yes := true
	return &metav1.OwnerReference{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstance", Name: name, UID: types.UID(uid), Controller: &yes}
}

func TestGroupPods(t *testing.T) {
	yes := true
	rsRef := &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "rs-uid", Controller: &yes}
	notController := vmiRef("vm1", "uid-1")
	notController.Controller = nil
	objs := Objects{
		VMIs: []*kubevirtv1.VirtualMachineInstance{
			testVMI("prod", "vm1", "uid-1", "node-a"),
			testVMI("prod", "vm2", "", "node-b"), // a VMI with its uid stripped
			testVMI("other", "vm1", "uid-9", "node-a"),
		},
		Pods: []*corev1.Pod{
			testPod("prod", "by-owner", "node-a", vmiRef("vm1", "uid-1"), nil),
			testPod("prod", "old-incarnation", "node-c", vmiRef("vm1", "uid-0"), nil),
			testPod("prod", "by-label", "node-a", nil, map[string]string{kubevirtv1.CreatedByLabel: "uid-1"}),
			testPod("prod", "owner-without-uid", "node-b", vmiRef("vm2", ""), nil),
			testPod("prod", "vmi-without-uid", "node-b", vmiRef("vm2", "uid-2"), nil),
			testPod("prod", "replicaset", "node-a", rsRef, map[string]string{kubevirtv1.CreatedByLabel: "uid-1"}),
			testPod("prod", "not-a-controller", "node-a", notController, nil),
			testPod("prod", "orphan", "node-a", vmiRef("gone", "uid-g"), nil),
			testPod("prod", "orphan-label", "node-a", nil, map[string]string{kubevirtv1.AppLabel: "virt-launcher", kubevirtv1.CreatedByLabel: "uid-x"}),
			testPod("other", "other-namespace-label", "node-a", nil, map[string]string{kubevirtv1.CreatedByLabel: "uid-1"}),
		},
		Nodes: []*corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}},
	}
	groups, notes := GroupVMs(objs)
	got := map[string]string{}
	for _, g := range groups {
		var pods []string
		for _, p := range g.Pods {
			pods = append(pods, p.Name)
		}
		got[g.Namespace+"/"+g.Name] = strings.Join(pods, ",") + " missing:" + strings.Join(g.MissingNodes, ",")
	}
	want := map[string]string{
		"other/vm1": " missing:",
		// "not-a-controller" has a VMI ownerRef that is not the controller
		// and no created-by label: not a launcher pod.
		"prod/vm1": "by-label,by-owner missing:",
		"prod/vm2": "owner-without-uid,vmi-without-uid missing:node-b",
	}
	if len(got) != len(want) {
		t.Errorf("groups = %v", got)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: %q, want %q", k, got[k], w)
		}
	}
	wantNotes := []string{
		`Pod prod/old-incarnation: its controller is VirtualMachineInstance "vm1" with uid uid-0, but the VMI in the input has uid uid-1`,
		`Pod prod/orphan: its controller VirtualMachineInstance "gone" (uid uid-g) is not in the input`,
		`Pod prod/orphan-label: no controller ownerReference, and the VirtualMachineInstance with uid uid-x (label kubevirt.io/created-by) is not in the input`,
	}
	if len(notes) != len(wantNotes) {
		t.Fatalf("notes = %v", notes)
	}
	for i := range notes {
		if !strings.HasPrefix(notes[i].String(), wantNotes[i]) {
			t.Errorf("note %d = %q, want %q...", i, notes[i], wantNotes[i])
		}
	}
}

func TestGroupNodesAndMigrations(t *testing.T) {
	vmi := testVMI("prod", "vm1", "uid-1", "node-a")
	vmi.Status.MigrationState = &kubevirtv1.VirtualMachineInstanceMigrationState{SourceNode: "node-a", TargetNode: "node-t"}
	vmi.Status.ActivePods = map[types.UID]string{"p1": "node-a", "p2": "", "p3": "node-s"}
	mig := func(name string, created time.Time) *kubevirtv1.VirtualMachineInstanceMigration {
		return &kubevirtv1.VirtualMachineInstanceMigration{
			ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: name, CreationTimestamp: metav1.NewTime(created)},
			Spec:       kubevirtv1.VirtualMachineInstanceMigrationSpec{VMIName: "vm1"},
		}
	}
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	objs := Objects{
		VMIs: []*kubevirtv1.VirtualMachineInstance{vmi},
		Migrations: []*kubevirtv1.VirtualMachineInstanceMigration{
			mig("b-newer", t0.Add(time.Hour)), mig("a-older", t0), mig("c-same-time", t0.Add(time.Hour)),
		},
		Pods: []*corev1.Pod{testPod("prod", "p", "node-p", vmiRef("vm1", "uid-1"), nil)},
		Nodes: []*corev1.Node{
			{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}},
			{ObjectMeta: metav1.ObjectMeta{Name: "node-t"}},
			{ObjectMeta: metav1.ObjectMeta{Name: "unrelated"}},
		},
	}
	groups, notes := GroupVMs(objs)
	if len(groups) != 1 || len(notes) != 0 {
		t.Fatalf("groups %d, notes %v", len(groups), notes)
	}
	g := groups[0]
	var migs []string
	for _, m := range g.Migrations {
		migs = append(migs, m.Name)
	}
	if strings.Join(migs, ",") != "a-older,b-newer,c-same-time" {
		t.Errorf("migrations = %v", migs)
	}
	if len(g.Nodes) != 2 || g.Nodes["node-a"] == nil || g.Nodes["node-t"] == nil {
		t.Errorf("nodes = %v", g.Nodes)
	}
	if strings.Join(g.MissingNodes, ",") != "node-p,node-s" {
		t.Errorf("missing nodes = %v", g.MissingNodes)
	}
}

func TestAnalyzeObservation(t *testing.T) {
	yes := true
	vm := &kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: "vm1", UID: "vm-uid"}}
	stopped := &kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: "vm0"}}
	declared := &v1alpha1.VMObservation{
		ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: "vm1", Generation: 3, Labels: map[string]string{"team": "a"}},
		Spec:       v1alpha1.VMObservationSpec{VMName: "vm1", Policy: &v1alpha1.PolicyOverrides{GuestAgentExpected: &yes}},
	}
	onlyDeclared := &v1alpha1.VMObservation{
		ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: "ghost"},
		Spec:       v1alpha1.VMObservationSpec{VMName: "other"},
	}
	objs := Objects{
		VMs:          []*kubevirtv1.VirtualMachine{stopped, vm},
		VMIs:         []*kubevirtv1.VirtualMachineInstance{testVMI("prod", "vm1", "vmi-uid", "node-a"), testVMI("prod", "standalone", "s-uid", "")},
		Observations: []*v1alpha1.VMObservation{declared, onlyDeclared},
	}
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	res := AnalyzeAll(objs, now, verdict.DefaultPolicy())
	var got []string
	for _, o := range res.Observations {
		owner := ""
		if len(o.OwnerReferences) > 0 {
			owner = o.OwnerReferences[0].Kind + "/" + string(o.OwnerReferences[0].UID)
		}
		got = append(got, o.Namespace+"/"+o.Name+" "+owner)
	}
	want := "prod/ghost |prod/standalone VirtualMachineInstance/s-uid|prod/vm0 |prod/vm1 VirtualMachine/vm-uid"
	if strings.Join(got, "|") != want {
		t.Errorf("observations = %q, want %q", strings.Join(got, "|"), want)
	}
	vm1 := res.Observations[3]
	if vm1.Spec.Policy == nil || vm1.Spec.Policy.GuestAgentExpected == nil || !*vm1.Spec.Policy.GuestAgentExpected ||
		vm1.Status.ObservedGeneration != 3 || vm1.Labels["team"] != "a" {
		t.Errorf("vm1 does not carry its declared spec, generation and labels: %+v", vm1.ObjectMeta)
	}
	if vm1.Spec.Policy == declared.Spec.Policy {
		t.Error("the output shares the input's policy")
	}
	if len(res.Notes) != 1 || !strings.Contains(res.Notes[0].String(), `spec.vmName "other" differs from metadata.name`) {
		t.Errorf("notes = %v", res.Notes)
	}
	for _, o := range res.Observations {
		if o.Status.Layers == nil || o.Status.Verdict == "" {
			t.Errorf("%s: no status", o.Name)
		}
	}
}

func TestRunExitAndFormats(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	empty := t.TempDir()
	for _, tc := range []struct {
		name   string
		cfg    Config
		exit   int
		stdout string // prefix
		stderr string // substring
	}{
		{"nothing to read", Config{Paths: []string{empty}, Now: now}, ExitNothing, "", "no VM analysed"},
		{"nothing, as json", Config{Paths: []string{empty}, Now: now, Format: FormatJSON}, ExitNothing, "{\n    \"apiVersion\": \"v1\",\n    \"items\": [],", "read 0 files"},
		{"missing path", Config{Paths: []string{empty + "/nope"}, Now: now}, ExitNothing, "", "nope: no such file or directory"},
		{"no path", Config{Now: now}, ExitUsageError, "", "no file or directory"},
		{"bad format", Config{Paths: []string{empty}, Format: "xml"}, ExitUsageError, "", `unknown output format "xml"`},
		{"wide is the table", Config{Paths: []string{"testdata/broken/input/good.yaml"}, Now: now, Format: "wide"}, ExitOK, "NAMESPACE   NAME", ""},
		{"verbose", Config{Paths: []string{"testdata/broken/input/good.yaml"}, Now: now, Verbose: true}, ExitOK, "NAMESPACE", "read 1 files (3 documents)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if code := Run(tc.cfg, &out, &errOut); code != tc.exit {
				t.Errorf("exit %d, want %d; stderr %s", code, tc.exit, errOut.String())
			}
			if !strings.HasPrefix(out.String(), tc.stdout) {
				t.Errorf("stdout = %q, want prefix %q", out.String(), tc.stdout)
			}
			if !strings.Contains(errOut.String(), tc.stderr) {
				t.Errorf("stderr = %q, want %q", errOut.String(), tc.stderr)
			}
		})
	}
}

func TestTableCells(t *testing.T) {
	obs := []v1alpha1.VMObservation{{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "odd\tname\nx"},
		Status:     v1alpha1.VMObservationStatus{Verdict: v1alpha1.VerdictUnknown, Reason: "R"},
	}}
	var b bytes.Buffer
	if err := WriteTable(&b, obs); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[1], "odd name x") || !strings.Contains(lines[1], "<none>") {
		t.Errorf("table:\n%s", b.String())
	}
}
