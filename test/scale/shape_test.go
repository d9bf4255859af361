package scale

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/internal/simulator"
	"github.com/vmobs/vmobs/internal/verdict"
)

// TestBulkMatchesBoot checks that the harness's population is what the
// step-by-step simulator makes: a VM written by CreateRunningVMs and one
// booted by CreateVM and Boot get the same verdicts from the engine, carry
// the same field managers, and are the same size within 10%.
func TestBulkMatchesBoot(t *testing.T) {
	e := controlPlane(t)
	ctx := context.Background()
	c, err := e.Client()
	if err != nil {
		t.Fatal(err)
	}
	clock := func() time.Time { return time.Now().Add(-time.Hour) }
	sim := simulator.New(c, simulator.WithSeed(3), simulator.WithClock(clock))
	const ns = "shape"
	if err := sim.EnsureNamespace(ctx, ns); err != nil {
		t.Fatal(err)
	}
	if err := sim.EnsureNode(ctx, "shape-node"); err != nil {
		t.Fatal(err)
	}
	for _, agent := range []bool{true, false} {
		t.Run(fmt.Sprintf("agent=%v", agent), func(t *testing.T) {
			boot := simulator.VMSpec{Namespace: ns, Name: fmt.Sprintf("booted-%v", agent), GuestAgent: agent, Interfaces: 2}
			bulk := simulator.VMSpec{Namespace: ns, Name: fmt.Sprintf("bulk-%v", agent), GuestAgent: agent, Interfaces: 2}
			if err := sim.CreateVM(ctx, boot); err != nil {
				t.Fatal(err)
			}
			if err := sim.Boot(ctx, ns, boot.Name, "shape-node"); err != nil {
				t.Fatal(err)
			}
			if err := sim.CreateRunningVMs(ctx, []simulator.VMSpec{bulk}, simulator.BulkOptions{Node: func(int) string { return "shape-node" }}); err != nil {
				t.Fatal(err)
			}
			a, b := shapeOf(ctx, t, c, ns, boot.Name), shapeOf(ctx, t, c, ns, bulk.Name)
			if a.verdicts != b.verdicts {
				t.Errorf("verdicts differ:\n  booted: %s\n  bulk:   %s", a.verdicts, b.verdicts)
			}
			for kind, m := range a.managers {
				if !slices.Equal(m, b.managers[kind]) {
					t.Errorf("%s field managers differ: booted %v, bulk %v", kind, m, b.managers[kind])
				}
			}
			for kind, n := range a.sizes {
				if d := float64(b.sizes[kind]-n) / float64(n); d > 0.1 || d < -0.1 {
					t.Errorf("%s size differs by %.0f%%: booted %d bytes, bulk %d", kind, 100*d, n, b.sizes[kind])
				}
			}
			t.Logf("booted: %v; bulk: %v", a.sizes, b.sizes)
		})
	}
}

type shape struct {
	verdicts string
	managers map[string][]string
	sizes    map[string]int
}

func shapeOf(ctx context.Context, t *testing.T, c client.Client, ns, name string) shape {
	t.Helper()
	vm := &kubevirtv1.VirtualMachine{}
	vmi := &kubevirtv1.VirtualMachineInstance{}
	for _, o := range []client.Object{vm, vmi} {
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, o); err != nil {
			t.Fatal(err)
		}
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{kubevirtv1.CreatedByLabel: string(vmi.UID)}); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 1 {
		t.Fatalf("%s/%s has %d launcher pods, want 1", ns, name, len(pods.Items))
	}
	pod := &pods.Items[0]
	node := &corev1.Node{}
	if err := c.Get(ctx, client.ObjectKey{Name: pod.Spec.NodeName}, node); err != nil {
		t.Fatal(err)
	}
	res := verdict.Evaluate(verdict.Input{
		Namespace: ns, Name: name, VM: vm, VMI: vmi, Pods: []*corev1.Pod{pod},
		Nodes: map[string]*corev1.Node{node.Name: node}, Policy: verdict.DefaultPolicy(), Now: time.Now(),
	})
	s := shape{verdicts: summarize(&res.Status).String(), managers: map[string][]string{}, sizes: map[string]int{}}
	for kind, o := range map[string]client.Object{"VM": vm, "VMI": vmi, "Pod": pod} {
		var ms []string
		for _, mf := range o.GetManagedFields() {
			ms = append(ms, mf.Manager+"/"+mf.Subresource)
		}
		sort.Strings(ms)
		s.managers[kind] = slices.Compact(ms)
		o.SetManagedFields([]metav1.ManagedFieldsEntry{})
		raw, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		s.sizes[kind] = len(raw)
	}
	return s
}
