package kubectlvmobs

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const genVMs = `apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: web-1
  namespace: shop
spec:
  runStrategy: Always
---
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: shop
---
# An empty document, then a VM with no namespace.
---
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: db-1
`

const genList = `{"apiVersion": "v1", "kind": "List", "items": [
  {"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine", "metadata": {"name": "cache-1", "namespace": "shop"}},
  {"apiVersion": "cdi.kubevirt.io/v1beta1", "kind": "DataVolume", "metadata": {"name": "cache-1-disk", "namespace": "shop"}}
]}`

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// genObs is the YAML gen writes for one VM.
func genObs(ns, name string) string {
	s := "apiVersion: observability.vmobs.io/v1alpha1\nkind: VMObservation\nmetadata:\n  name: " + name + "\n"
	if ns != "" {
		s += "  namespace: " + ns + "\n"
	}
	return s + "spec:\n  vmName: " + name + "\n"
}

func genStream(objs ...string) string { return strings.Join(objs, "---\n") }

func TestGen(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"vms.yaml":          genVMs,
		"list.json":         genList,
		"README.md":         "not a manifest",
		"nested/other.yaml": "apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata: {name: nested, namespace: shop}\n",
	})
	for _, tc := range []struct {
		name       string
		args       []string
		stdin      string
		wantCode   int
		wantOut    string
		wantErrSub string
	}{
		{
			name: "a directory, VMs without a namespace given one", args: []string{"gen", "-f", dir, "-n", "prod"},
			wantOut: genStream(genObs("prod", "db-1"), genObs("shop", "cache-1"), genObs("shop", "web-1")),
		},
		{
			name: "recursive", args: []string{"gen", "-R", "-f", dir, "-n", "prod"},
			wantOut: genStream(genObs("prod", "db-1"), genObs("shop", "cache-1"), genObs("shop", "nested"), genObs("shop", "web-1")),
		},
		{
			name: "stdin, no namespace", args: []string{"gen", "-f", "-"}, stdin: genVMs,
			wantOut: genStream(genObs("", "db-1"), genObs("shop", "web-1")),
		},
		{
			name: "a VM twice", args: []string{"gen", "-f", filepath.Join(dir, "vms.yaml"), "-f", "-"}, stdin: genVMs,
			wantCode: ExitError, wantErrSub: "VirtualMachine shop/web-1 is also in",
		},
		{name: "no VM", args: []string{"gen", "-f", "-"}, stdin: "apiVersion: v1\nkind: Service\nmetadata: {name: web}\n", wantCode: ExitError, wantErrSub: "no VirtualMachine"},
		{name: "a file that is not a manifest", args: []string{"gen", "-f", filepath.Join(dir, "README.md")}, wantCode: ExitError, wantErrSub: "README.md:"},
		{name: "not YAML", args: []string{"gen", "-f", "-"}, stdin: "kind: [", wantCode: ExitError, wantErrSub: "stdin:"},
		{name: "no -f", args: []string{"gen"}, wantCode: ExitError, wantErrSub: "give the manifests with -f"},
		{name: "a missing file", args: []string{"gen", "-f", filepath.Join(dir, "nope.yaml")}, wantCode: ExitError, wantErrSub: "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := runIO(t.Context(), tc.args, strings.NewReader(tc.stdin), &out, &errOut)
			if code != tc.wantCode || out.String() != tc.wantOut || !strings.Contains(errOut.String(), tc.wantErrSub) {
				t.Errorf("exit %d (want %d)\n--- stdout\n%s--- want\n%s--- stderr\n%s(want it to contain %q)",
					code, tc.wantCode, out.String(), tc.wantOut, errOut.String(), tc.wantErrSub)
			}
		})
	}
}
