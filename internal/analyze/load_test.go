package analyze

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

const vmiDoc = `apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata:
  name: vm1
  namespace: prod
  uid: 5b0f5a3e-8c1a-4b9e-9f55-0a7c1d2e3f41
  resourceVersion: "10"
status:
  phase: Running
  runtimeUser: 107
`

const podDoc = `apiVersion: v1
kind: Pod
metadata:
  name: virt-launcher-vm1-abcde
  namespace: prod
spec:
  nodeName: node-a
  priority: 0
`

func names(objs Objects) string {
	var s []string
	for _, o := range objs.VMs {
		s = append(s, "VM "+o.Namespace+"/"+o.Name)
	}
	for _, o := range objs.VMIs {
		s = append(s, "VMI "+o.Namespace+"/"+o.Name)
	}
	for _, o := range objs.Migrations {
		s = append(s, "VMIM "+o.Namespace+"/"+o.Name)
	}
	for _, o := range objs.Pods {
		s = append(s, "Pod "+o.Namespace+"/"+o.Name)
	}
	for _, o := range objs.Nodes {
		s = append(s, "Node "+o.Name)
	}
	for _, o := range objs.Observations {
		s = append(s, "VMObservation "+o.Namespace+"/"+o.Name)
	}
	return strings.Join(s, ", ")
}

func errs(rep Report) string {
	var s []string
	for _, e := range rep.Errors {
		s = append(s, e.Reason)
	}
	return strings.Join(s, " | ")
}

func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		name, in  string
		want      string // names()
		errs      string // substrings of errs(), "" for none
		docs      int
		notObject int
	}{
		{name: "single object", in: vmiDoc, want: "VMI prod/vm1", docs: 1},
		{name: "multi-document", in: "---\n" + vmiDoc + "---\n" + podDoc + "...\n", want: "VMI prod/vm1, Pod prod/virt-launcher-vm1-abcde", docs: 2},
		{name: "comments, empty documents, separator with a comment", in: "# head\n---\n---\n# only a comment\n--- # vmi\n" + vmiDoc + "---\n\n", want: "VMI prod/vm1", docs: 1},
		{name: "content on the separator line", in: "--- {apiVersion: v1, kind: Node, metadata: {name: n1}}\n", want: "Node n1", docs: 1},
		{name: "CRLF and byte order mark", in: "\ufeff" + strings.ReplaceAll(vmiDoc+"---\n"+podDoc, "\n", "\r\n"), want: "VMI prod/vm1, Pod prod/virt-launcher-vm1-abcde", docs: 2},
		{name: "kind List", in: "apiVersion: v1\nkind: List\nitems:\n- " + strings.ReplaceAll(strings.TrimSpace(vmiDoc), "\n", "\n  ") + "\n- " + strings.ReplaceAll(strings.TrimSpace(podDoc), "\n", "\n  ") + "\n", want: "VMI prod/vm1, Pod prod/virt-launcher-vm1-abcde", docs: 1},
		{name: "typed list items without kind", in: `{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstanceMigrationList","items":[{"metadata":{"name":"m1","namespace":"prod"},"spec":{"vmiName":"vm1"}}]}`, want: "VMIM prod/m1", docs: 1},
		{name: "empty list", in: "apiVersion: v1\nkind: List\nitems: []\n", docs: 1},
		{name: "list of lists", in: "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: NodeList\n  items:\n  - metadata: {name: n1}\n", want: "Node n1", docs: 1},
		{name: "JSON stream", in: `{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"}} {"apiVersion":"v1","kind":"Node","metadata":{"name":"n2"}}`, want: "Node n1, Node n2", docs: 2},
		{name: "JSON array", in: `[{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"}}, 3]`, want: "Node n1", docs: 1, notObject: 1},
		{name: "v1alpha3 and VMObservation", in: "apiVersion: kubevirt.io/v1alpha3\nkind: VirtualMachine\nmetadata: {name: vm1, namespace: prod}\n---\napiVersion: observability.vmobs.io/v1alpha1\nkind: VMObservation\nmetadata: {name: vm1, namespace: prod}\nspec: {vmName: vm1, policy: {guestAgentExpected: true}}\n", want: "VM prod/vm1, VMObservation prod/vm1", docs: 2},
		{name: "other kinds are ignored", in: "apiVersion: cdi.kubevirt.io/v1beta1\nkind: DataVolume\nmetadata: {name: d}\n---\napiVersion: kubevirt.io/v1beta1\nkind: VirtualMachine\nmetadata: {name: vm}\n", docs: 2},
		{name: "not objects", in: "just a string\n---\n- 1\n- 2\n---\n{resourceList: []}\n", docs: 3, notObject: 4, errs: "no Kubernetes objects"},
		{name: "invalid YAML keeps the other documents", in: vmiDoc + "---\nkind: Pod\nmetadata:\n  name: x\n   namespace: y\n", want: "VMI prod/vm1", docs: 1, errs: "document 2 (line 12): invalid YAML: yaml: line 15: mapping values are not allowed"},
		{name: "a tag on the separator line", in: "--- !!str\nabc\n", docs: 1, notObject: 1, errs: "no Kubernetes objects"},
		{name: "invalid YAML in a one-document file", in: "--- !!binary\nabc\n", errs: "invalid YAML: yaml: !!binary value contains invalid base64 data"},
		{name: "invalid JSON", in: `{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}` + "\n" + `{"apiVersion": "v1",` + "\n\"kind\"", want: "Node n1", docs: 1, errs: "document 2 (line 2): invalid JSON: unexpected end of file"},
		{name: "conversion errors name the field", in: "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: prod}\nspec: {priority: high}\n", errs: "Pod prod/p: cannot convert: cannot unmarshal string into Go struct field PodSpec.spec.priority of type int32", docs: 1},
		{name: "time that is not a time", in: "apiVersion: v1\nkind: Node\nmetadata: {name: n1, creationTimestamp: yesterday}\n", errs: "Node n1: cannot convert: ", docs: 1},
		{name: "no name", in: "apiVersion: v1\nkind: Node\nmetadata: {}\n", errs: "Node without metadata.name", docs: 1},
		{name: "name is not a string", in: "apiVersion: v1\nkind: Node\nmetadata: {name: 5}\n", errs: "Node without metadata.name", docs: 1},
		{name: "items is not a list", in: "apiVersion: v1\nkind: PodList\nitems: {a: b}\n", errs: "PodList: items is not a list", docs: 1},
		{name: "item is not an object", in: "apiVersion: v1\nkind: PodList\nitems: [3]\n", errs: "PodList: item 0 is not an object", docs: 1},
		{name: "invalid apiVersion", in: "apiVersion: a/b/c\nkind: Pod\nmetadata: {name: p}\n", errs: `Pod: invalid apiVersion "a/b/c"`, docs: 1},
		{name: "binary", in: "apiVersion: v1\x00\x01", errs: "binary content, not YAML or JSON"},
		{name: "zip", in: "PK\x03\x04rest", errs: "zip archive: extract it first"},
		{name: "empty file", in: "", errs: "no Kubernetes objects"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, rep := Decode("in.yaml", []byte(tc.in))
			if got := names(objs); got != tc.want {
				t.Errorf("objects = %q, want %q", got, tc.want)
			}
			got := errs(rep)
			if (tc.errs == "") != (got == "") || !strings.Contains(got, tc.errs) {
				t.Errorf("errors = %q, want %q", got, tc.errs)
			}
			if rep.Documents != tc.docs || rep.NotObjects != tc.notObject {
				t.Errorf("documents = %d, not objects = %d; want %d, %d", rep.Documents, rep.NotObjects, tc.docs, tc.notObject)
			}
		})
	}
}

func TestDecodeTypes(t *testing.T) {
	objs, rep := Decode("namespaces/prod/kubevirt.io/vmis.yaml", []byte(strings.Replace(vmiDoc, "  namespace: prod\n", "", 1)+"---\napiVersion: kubevirt.io/v1alpha3\nkind: VirtualMachine\nmetadata: {name: vm1}\n"))
	if len(rep.Errors) > 0 || len(objs.VMIs) != 1 || len(objs.VMs) != 1 {
		t.Fatalf("objects %q, errors %q", names(objs), errs(rep))
	}
	vmi := objs.VMIs[0]
	// Integers survive YAML (int64 for the converter), the namespace comes
	// from the must-gather path, the kind is set.
	if vmi.Status.RuntimeUser != 107 || vmi.Namespace != "prod" || vmi.Kind != "VirtualMachineInstance" || vmi.APIVersion != "kubevirt.io/v1" {
		t.Errorf("VMI = %s %s %s/%s runtimeUser %d", vmi.APIVersion, vmi.Kind, vmi.Namespace, vmi.Name, vmi.Status.RuntimeUser)
	}
	if vmi.Status.Phase != kubevirtv1.Running {
		t.Errorf("phase = %q", vmi.Status.Phase)
	}
	if vm := objs.VMs[0]; vm.APIVersion != "kubevirt.io/v1" || vm.Namespace != "prod" {
		t.Errorf("VM from v1alpha3 = %s %s/%s", vm.APIVersion, vm.Namespace, vm.Name)
	}
	if got := rep.Loaded; got["VirtualMachineInstance"] != 1 || got["VirtualMachine"] != 1 {
		t.Errorf("loaded = %v", got)
	}
}

func TestNamespaceFromPath(t *testing.T) {
	for in, want := range map[string]string{
		"mg/namespaces/prod/core/pods.yaml":                      "prod",
		"mg/namespaces/prod/pods/virt-launcher-x/x.yaml":         "prod",
		"namespaces/kubevirt/crs/kubevirts.kubevirt.io/kv.yaml":  "kubevirt",
		"mg/namespaces/a/namespaces/b/x.yaml":                    "b",
		"namespaces/x.yaml":                                      "default",
		"vms.yaml":                                               "default",
		"cluster-scoped-resources/core/nodes/worker-0.yaml":      "default",
		filepath.Join("mg", "namespaces", "web", "vm", "a.yaml"): "web",
	} {
		if got := namespaceFromPath(in); got != want {
			t.Errorf("namespaceFromPath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDuplicates(t *testing.T) {
	vmi := func(uid, rv, created string) string {
		return "apiVersion: kubevirt.io/v1\nkind: VirtualMachineInstance\nmetadata:\n  name: vm1\n  namespace: prod\n  uid: " + uid +
			"\n  resourceVersion: \"" + rv + "\"\n  creationTimestamp: \"" + created + "\"\n"
	}
	for _, tc := range []struct {
		name     string
		a, b     string
		wantUID  string
		wantRV   string
		wantDups int
	}{
		{"higher resourceVersion wins", vmi("u1", "20", "2026-11-30T10:00:00Z"), vmi("u1", "9", "2026-11-30T10:00:00Z"), "u1", "20", 1},
		{"newer incarnation wins", vmi("u2", "5", "2026-11-30T11:00:00Z"), vmi("u1", "20", "2026-11-30T10:00:00Z"), "u2", "5", 1},
		{"first read wins a tie", vmi("u1", "x", "2026-11-30T10:00:00Z"), vmi("u1", "y", "2026-11-30T10:00:00Z"), "u1", "x", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, order := range [][2]string{{tc.a, tc.b}, {tc.b, tc.a}} {
				objs, rep := Decode("in.yaml", []byte(order[0]+"---\n"+order[1]))
				if len(objs.VMIs) != 1 || rep.Duplicates != tc.wantDups {
					t.Fatalf("VMIs = %d, duplicates = %d", len(objs.VMIs), rep.Duplicates)
				}
				got := objs.VMIs[0]
				if tc.name == "first read wins a tie" {
					continue // order decides, by design
				}
				if string(got.UID) != tc.wantUID || got.ResourceVersion != tc.wantRV {
					t.Errorf("kept %s@%s, want %s@%s", got.UID, got.ResourceVersion, tc.wantUID, tc.wantRV)
				}
			}
		})
	}
}

func TestPreferredIgnoresEmptyUID(t *testing.T) {
	a := &metav1.ObjectMeta{ResourceVersion: "3", CreationTimestamp: metav1.Unix(100, 0)}
	b := &metav1.ObjectMeta{UID: "x", ResourceVersion: "2", CreationTimestamp: metav1.Unix(200, 0)}
	if preferred(a, b) {
		t.Error("an object without UID is not another incarnation: the resourceVersion decides")
	}
}

func TestLoadFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(rel string, data []byte) string {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write([]byte(vmiDoc))
	_ = zw.Close()

	write("mg/namespaces/prod/vmi.yaml", []byte(vmiDoc))
	write("mg/namespaces/prod/pod.YML", []byte(podDoc))
	write("mg/namespaces/prod/big.json", bytes.Repeat([]byte(" "), 2048))
	write("mg/must-gather.tar.gz", gz.Bytes())
	write("mg/.git/config.yaml", []byte(podDoc))
	write("mg/nodes/node-a/dmesg", []byte("[ 0.0] Linux"))
	gzPath := write("archive.yaml", gz.Bytes())
	txt := write("notes.txt", []byte("apiVersion: v1\nkind: Node\nmetadata: {name: n-from-txt}\n"))
	if err := os.Symlink(filepath.Join(dir, "mg"), filepath.Join(dir, "mg", "namespaces", "loop")); err != nil {
		t.Fatal(err)
	}

	objs, rep := Load([]string{filepath.Join(dir, "mg"), gzPath, txt, filepath.Join(dir, "missing")}, Options{MaxFileSize: 1024})
	if got, want := names(objs), "VMI prod/vm1, Pod prod/virt-launcher-vm1-abcde, Node n-from-txt"; got != want {
		t.Errorf("objects = %q, want %q", got, want)
	}
	want := []FileError{
		{filepath.Join(dir, "mg/namespaces/prod/big.json"), "file is 2048 bytes, larger than the 1024 bytes limit; not read"},
		{gzPath, "gzip-compressed (a must-gather archive?): extract it first (tar xzf) and analyze the directory"},
		{filepath.Join(dir, "missing"), "no such file or directory"},
	}
	if len(rep.Errors) != len(want) {
		t.Fatalf("errors = %v, want %v", rep.Errors, want)
	}
	for i := range want {
		if rep.Errors[i] != want[i] {
			t.Errorf("error %d = %v, want %v", i, rep.Errors[i], want[i])
		}
	}
	// tar.gz, dmesg and the symbolic link to a directory; .git is not entered.
	if rep.Files != 4 || rep.SkippedFiles != 3 {
		t.Errorf("files = %d, skipped = %d; want 4, 3", rep.Files, rep.SkippedFiles)
	}
}

func TestLoadStdin(t *testing.T) {
	objs, rep := Load([]string{"-"}, Options{Stdin: strings.NewReader(vmiDoc)})
	if names(objs) != "VMI prod/vm1" || len(rep.Errors) != 0 {
		t.Errorf("objects %q, errors %v", names(objs), rep.Errors)
	}
	_, rep = Load([]string{"-"}, Options{Stdin: strings.NewReader("")})
	if len(rep.Errors) != 1 || rep.Errors[0].Path != "<stdin>" {
		t.Errorf("errors = %v", rep.Errors)
	}
}

func TestErrorsPerFileAreBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: PodList\nitems:\n")
	for range 100 {
		b.WriteString("- 1\n")
	}
	_, rep := Decode("many.yaml", []byte(b.String()))
	if len(rep.Errors) != maxErrorsPerFile+1 || !strings.Contains(rep.Errors[maxErrorsPerFile].Reason, "more errors") {
		t.Errorf("%d errors: %v", len(rep.Errors), rep.Errors)
	}
}

func TestYAMLErrorLines(t *testing.T) {
	for _, tc := range []struct {
		msg  string
		line int
		want string
	}{
		{"error converting YAML to JSON: yaml: line 3: did not find expected key", 10, "yaml: line 12: did not find expected key"},
		{"yaml: line 3: x", 1, "yaml: line 3: x"},
		{"yaml: no line here", 7, "yaml: no line here"},
	} {
		if got := yamlErr(stringErr(tc.msg), tc.line); got != tc.want {
			t.Errorf("yamlErr(%q, %d) = %q, want %q", tc.msg, tc.line, got, tc.want)
		}
	}
}

type stringErr string

func (e stringErr) Error() string { return string(e) }
