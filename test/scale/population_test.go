package scale

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/internal/scheme"
	"github.com/vmobs/vmobs/internal/simulator"
)

// world is the populated cluster: the VMs created so far, their nodes and
// the virt-handler heartbeats on those nodes.
type world struct {
	cfg config
	c   client.Client // a direct client, for the harness's own reads and writes
	// sim writes the VMs with a clock cfg.Age in the past: the fleet has
	// been running for a while, so no grace period ends during the run.
	sim *simulator.Simulator
	// hb adds nodes and writes heartbeats with the real clock.
	hb *simulator.Simulator

	mu         sync.Mutex
	nodes      []string
	vms        []vmRef // in creation order
	namespaces []string
	hbErrs     int
	hbRounds   []time.Time // when each heartbeat round began
}

type vmRef struct {
	ns, name string
	node     string
	agent    bool
	migrated bool
}

func (v vmRef) key() string { return v.ns + "/" + v.name }

func newWorld(t *testing.T, cfg config, restCfg *rest.Config) *world {
	t.Helper()
	c, err := client.New(restCfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	age := cfg.Age
	return &world{
		cfg: cfg,
		c:   c,
		sim: simulator.New(c, simulator.WithSeed(11), simulator.WithClock(func() time.Time { return time.Now().Add(-age) })),
		hb:  simulator.New(c, simulator.WithSeed(12)),
	}
}

func vmNamespace(i, perNS int) string { return fmt.Sprintf("scale-%03d", i/perNS) }
func floorNamespace(ns string) string { return "floor-" + ns }

// grow adds nodes and VMs up to n VMs: bulk-created Running VMs with two
// interfaces (half with a guest agent), and one in cfg.MigrateEvery
// live-migrated to another node step by step through the simulator.
func (w *world) grow(ctx context.Context, t *testing.T, n int) {
	t.Helper()
	start := time.Now()
	w.mu.Lock()
	have, haveNodes := len(w.vms), len(w.nodes)
	w.mu.Unlock()
	for i := haveNodes; i < w.cfg.nodesFor(n); i++ {
		name := fmt.Sprintf("scale-node-%03d", i)
		if err := w.hb.AddNode(ctx, name); err != nil {
			t.Fatal(err)
		}
		w.mu.Lock()
		w.nodes = append(w.nodes, name)
		w.mu.Unlock()
	}
	if n <= have {
		return
	}
	if w.cfg.Storage && have == 0 {
		// The CSI driver and its StorageClasses, as deploying it leaves
		// them: the VMs' claims name one that exists.
		if err := w.sim.InstallCSIDriver(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var specs []simulator.VMSpec
	var refs []vmRef
	nodes := w.nodeList()
	for i := have; i < n; i++ {
		ns := vmNamespace(i, w.cfg.VMsPerNS)
		if i%w.cfg.VMsPerNS == 0 || i == have {
			if err := w.sim.EnsureNamespace(ctx, ns); err != nil {
				t.Fatal(err)
			}
			if err := w.sim.EnsureNamespace(ctx, floorNamespace(ns)); err != nil {
				t.Fatal(err)
			}
			w.addNamespace(ns)
		}
		ref := vmRef{ns: ns, name: fmt.Sprintf("vm-%05d", i), node: nodes[i%len(nodes)], agent: i%2 == 0}
		// With storage, the root disk is a DataVolume on shared storage
		// (ReadWriteMany, so the VMI stays live-migratable).
		specs = append(specs, simulator.VMSpec{Namespace: ns, Name: ref.name, GuestAgent: ref.agent, Interfaces: 2,
			DataVolume: w.cfg.Storage, SharedDisk: w.cfg.Storage})
		refs = append(refs, ref)
	}
	err := w.sim.CreateRunningVMs(ctx, specs, simulator.BulkOptions{
		Workers:      w.cfg.Workers,
		Node:         func(i int) string { return refs[i].node },
		BootWarnings: w.cfg.Storage,
	})
	if err != nil {
		t.Fatal(err)
	}
	created := time.Since(start)
	migrated := 0
	for i := range refs {
		if (have+i)%w.cfg.MigrateEvery != w.cfg.MigrateEvery/2 {
			continue
		}
		r := &refs[i]
		target := nodes[(have+i+1)%len(nodes)]
		if _, err := w.sim.Migrate(ctx, r.ns, r.name, target, simulator.MigrationSucceeds); err != nil {
			t.Fatalf("migrating %s: %v", r.key(), err)
		}
		r.node, r.migrated = target, true
		migrated++
	}
	w.mu.Lock()
	w.vms = append(w.vms, refs...)
	w.mu.Unlock()
	t.Logf("population: %d VMs on %d nodes (+%d VMs in %s, %d migrated, in %s)",
		n, len(nodes), n-have, created.Round(time.Millisecond), migrated, time.Since(start).Round(time.Millisecond))
}

func (w *world) addNamespace(ns string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, x := range w.namespaces {
		if x == ns {
			return
		}
	}
	w.namespaces = append(w.namespaces, ns)
}

func (w *world) nodeList() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.nodes...)
}

func (w *world) vmList() []vmRef {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]vmRef(nil), w.vms...)
}

func (w *world) nsList() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.namespaces...)
}

// addBystander creates a pod that is not a virt-launcher, as every real
// cluster has thousands: the manager's Pod cache must not hold it.
func (w *world) addBystander(ctx context.Context) error {
	const ns = "bystander"
	if err := w.hb.EnsureNamespace(ctx, ns); err != nil {
		return err
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "registry.k8s.io/pause:3.10"}}},
	}
	if err := w.c.Create(ctx, pod); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the bystander pod: %w", err)
	}
	return nil
}

// heartbeats is virt-handler on every node, every period, until ctx ends;
// it notes when each round started and counts the failed heartbeats.
func (w *world) heartbeats(ctx context.Context, period time.Duration) {
	w.hb.RunHeartbeats(ctx, simulator.Heartbeats{Every: period, Nodes: w.nodeList, Round: func(start time.Time, failed []error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.hbRounds = append(w.hbRounds, start)
		w.hbErrs += len(failed)
	}})
}

// nearHeartbeat says whether t is within d after the start of a heartbeat
// round.
func (w *world) nearHeartbeat(t time.Time, d time.Duration) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, h := range w.hbRounds {
		if !t.Before(h) && t.Sub(h) < d {
			return true
		}
	}
	return false
}

// heartbeatAll beats on every node once, now.
func (w *world) heartbeatAll(ctx context.Context) error {
	for _, n := range w.nodeList() {
		if err := w.hb.Heartbeat(ctx, n); err != nil {
			return err
		}
	}
	return nil
}
