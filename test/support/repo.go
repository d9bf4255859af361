package support

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/internal/testenv"
)

// The namespace and ServiceAccount config/default installs the manager as.
const (
	SystemNS       = "vmobs-system"
	ServiceAccount = "vmobs-controller-manager"
)

// RepoRoot is the root of the checkout; a test that cannot find config/
// there fails.
func RepoRoot(t testing.TB) string {
	t.Helper()
	root := testenv.RepoRoot()
	if _, err := os.Stat(filepath.Join(root, "config")); err != nil {
		t.Fatalf("cannot find the repository's config/ from %s: %v", root, err)
	}
	return root
}

// BuiltTool finds the binary `make <name>` builds into bin/ (with
// hack/build-tool.sh, from the Go module proxy), or the one $envVar
// names. A missing binary fails the test: skipping would let what it checks
// go untested without anyone noticing.
func BuiltTool(t testing.TB, name, envVar string) string {
	t.Helper()
	p := os.Getenv(envVar)
	if p == "" {
		p = filepath.Join(RepoRoot(t), "bin", name)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s not found at %s: run `make %s` (which builds it from the Go module proxy) or set %s", name, p, name, envVar)
	}
	return p
}

// MustCreate creates obj or fails the test.
func MustCreate(ctx context.Context, t testing.TB, c client.Client, obj client.Object) {
	t.Helper()
	if err := c.Create(ctx, obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}
