package integrations

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/internal/simulator"
	"github.com/vmobs/vmobs/internal/testenv"
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

// startControlPlane starts a control plane of the test's own, stopped when
// the test ends, and returns it with an admin client.
func startControlPlane(t *testing.T) (*testenv.Env, client.Client) {
	t.Helper()
	return startControlPlaneWith(t, testenv.Options{})
}

// startControlPlaneWith is startControlPlane with options.
func startControlPlaneWith(t *testing.T, opts testenv.Options) (*testenv.Env, client.Client) {
	t.Helper()
	start := time.Now()
	env, err := testenv.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stopping the control plane: %v", err)
		}
	})
	t.Logf("control plane up in %s", time.Since(start).Round(time.Millisecond))
	admin, err := env.Client()
	if err != nil {
		t.Fatal(err)
	}
	return env, admin
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
