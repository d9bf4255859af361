package integrations

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/internal/simulator"
)

// builtTool finds the binary `make <name>` builds into bin/ (with
// hack/build-tool.sh, from the Go module proxy), or the one $envVar
// names. A missing binary fails the test: skipping would let what it checks
// go untested without anyone noticing.
func builtTool(t *testing.T, name, envVar string) string {
	t.Helper()
	p := os.Getenv(envVar)
	if p == "" {
		p = filepath.Join(repoRoot(t), "bin", name)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s not found at %s: run `make %s` (which builds it from the Go module proxy) or set %s", name, p, name, envVar)
	}
	return p
}

// simulatedCluster is a simulator writing through admin, with its real
// clock, once the namespaces and nodes exist.
func simulatedCluster(ctx context.Context, t *testing.T, admin client.Client, namespaces, nodes []string) *simulator.Simulator {
	t.Helper()
	sim := simulator.New(admin)
	for _, ns := range namespaces {
		if err := sim.EnsureNamespace(ctx, ns); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range nodes {
		if err := sim.AddNode(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	return sim
}
