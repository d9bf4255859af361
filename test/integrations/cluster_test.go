package integrations

import (
	"context"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/internal/simulator"
)

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
