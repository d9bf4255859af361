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
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestGen(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"vms.yaml":          genVMs,
		"list.json":         genList,
		"README.md":         "not a manifest",
		"nested/other.yaml": "apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata: {name: nested, namespace: shop}\n",
	})
	const want = `apiVersion: observability.vmobs.io/v1alpha1
kind: VMObservation
metadata:
  name: db-1
  namespace: prod
spec:
  vmName: db-1
---
apiVersion: observability.vmobs.io/v1alpha1
kind: VMObservation
metadata:
  name: cache-1
  namespace: shop
spec:
  vmName: cache-1
---
apiVersion: observability.vmobs.io/v1alpha1
kind: VMObservation
metadata:
  name: web-1
  namespace: shop
spec:
  vmName: web-1
`
	for _, tc := range []struct {
		name       string
		args       []string
		stdin      string
		wantCode   int
		wantOut    string
		wantErrSub string
	}{
		{name: "a directory", args: []string{"gen", "-f", dir, "-n", "prod"}, wantOut: want},
		{name: "recursive", args: []string{"gen", "-R", "-f", dir, "-n", "prod"}, wantOut: strings.Replace(want, "---\napiVersion: observability.vmobs.io/v1alpha1\nkind: VMObservation\nmetadata:\n  name: web-1",
			"---\napiVersion: observability.vmobs.io/v1alpha1\nkind: VMObservation\nmetadata:\n  name: nested\n  namespace: shop\nspec:\n  vmName: nested\n---\napiVersion: observability.vmobs.io/v1alpha1\nkind: VMObservation\nmetadata:\n  name: web-1", 1)},
		{name: "stdin, no namespace", args: []string{"gen", "-f", "-"}, stdin: genVMs,
			wantOut: "apiVersion: observability.vmobs.io/v1alpha1\nkind: VMObservation\nmetadata:\n  name: db-1\nspec:\n  vmName: db-1\n---\napiVersion: observability.vmobs.io/v1alpha1\nkind: VMObservation\nmetadata:\n  name: web-1\n  namespace: shop\nspec:\n  vmName: web-1\n"},
		{name: "a VM twice", args: []string{"gen", "-f", filepath.Join(dir, "vms.yaml"), "-f", "-"}, stdin: genVMs, wantCode: ExitError, wantErrSub: "VirtualMachine shop/web-1 is also in"},
		{name: "no VM", args: []string{"gen", "-f", filepath.Join(dir, "README.md")}, wantCode: ExitError, wantErrSub: "no VirtualMachine"},
		{name: "not YAML", args: []string{"gen", "-f", "-"}, stdin: "kind: [", wantCode: ExitError, wantErrSub: "stdin:"},
		{name: "no -f", args: []string{"gen"}, wantCode: ExitError, wantErrSub: "give the manifests with -f"},
		{name: "a missing file", args: []string{"gen", "-f", filepath.Join(dir, "nope.yaml")}, wantCode: ExitError, wantErrSub: "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := runWithStdin(t, tc.args, strings.NewReader(tc.stdin), &out, &errOut)
			if code != tc.wantCode || out.String() != tc.wantOut || !strings.Contains(errOut.String(), tc.wantErrSub) {
				t.Errorf("exit %d (want %d)\n--- stdout\n%s--- want\n%s--- stderr\n%s(want it to contain %q)", code, tc.wantCode, out.String(), tc.wantOut, errOut.String(), tc.wantErrSub)
			}
		})
	}
}
