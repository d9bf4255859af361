package incidents

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/app"
	"github.com/vmobs/vmobs/internal/incident"
	"github.com/vmobs/vmobs/internal/simulator"
)

// TestVirtHandlerRolloutIncident: virt-handler's DaemonSet rolls a broken
// revision out to two of three nodes; virt-handler stops beating there.
// The six VMs on those nodes are one VMIncident named after the revision,
// each VMObservation points at it, and the VM on the third node, still at
// the old revision, is in none; the two NodeObservations still name their
// own node. Rolling back resolves the incident.
func TestVirtHandlerRolloutIncident(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const ns = "rollout"
	if err := sim.EnsureNamespace(ctx, ns); err != nil {
		t.Fatal(err)
	}
	nodes := append(slices.Clone(simulator.ScenarioNodes), "node-c")
	rolled := nodes[:2]
	old := simulator.VirtHandlerRevision{Hash: "5d4f8c7b6", Generation: 1}
	broken := simulator.VirtHandlerRevision{Hash: "7b9c6d5f4", Generation: 2, Broken: true}
	for _, node := range nodes {
		if err := sim.EnsureNode(ctx, node); err != nil {
			t.Fatal(err)
		}
		if err := sim.RollVirtHandler(ctx, node, old); err != nil {
			t.Fatal(err)
		}
	}

	// virt-handler beats every second on the nodes not silenced.
	var mu sync.Mutex
	silenced := map[string]bool{}
	setSilenced := func(on bool, names ...string) {
		mu.Lock()
		defer mu.Unlock()
		for _, n := range names {
			silenced[n] = on
		}
	}
	go sim.RunHeartbeats(ctx, simulator.Heartbeats{Every: time.Second, Nodes: func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.DeleteFunc(slices.Clone(nodes), func(n string) bool { return silenced[n] })
	}})

	opts := app.InProcessOptions()
	// A heartbeat older than 5 s is stale: the deadline passes within
	// the test.
	opts.Policy.HeartbeatTimeout = 5 * time.Second
	startManager(ctx, t, opts)

	// Three VMs on each rolled node, one on the node that stays.
	placed := map[string]string{}
	var members, all []string
	for i, node := range []string{nodes[0], nodes[0], nodes[0], nodes[1], nodes[1], nodes[1], nodes[2]} {
		vm := fmt.Sprintf("vm-%d", i)
		placed[vm] = node
		all = append(all, vm)
		if slices.Contains(rolled, node) {
			members = append(members, vm)
		}
		if err := sim.CreateVM(ctx, simulator.VMSpec{Namespace: ns, Name: vm}); err != nil {
			t.Fatal(err)
		}
		if err := sim.Boot(ctx, ns, vm, node); err != nil {
			t.Fatal(err)
		}
	}
	observation := func(ctx context.Context, vm string) (*v1alpha1.VMObservation, error) {
		var o v1alpha1.VMObservation
		return &o, k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: vm}, &o)
	}
	eventually(t, "seven Healthy VMs", func(ctx context.Context) error {
		for _, vm := range all {
			o, err := observation(ctx, vm)
			if err != nil {
				return err
			}
			if o.Status.Verdict != v1alpha1.VerdictHealthy {
				return fmt.Errorf("%s is %s/%s", vm, o.Status.Verdict, o.Status.Reason)
			}
		}
		return nil
	})

	// The rollout reaches two nodes; the new virt-handler never beats.
	start := time.Now()
	for _, node := range rolled {
		setSilenced(true, node)
		if err := sim.RollVirtHandler(ctx, node, broken); err != nil {
			t.Fatal(err)
		}
	}
	cause := v1alpha1.IncidentCause{Kind: v1alpha1.CauseVirtHandlerRollout, Name: broken.Hash}
	name := incident.Name(cause)
	want := v1alpha1.IncidentRef{Kind: v1alpha1.IncidentKindVMIncident, Name: name}
	var inc v1alpha1.VMIncident
	eventually(t, "one open VMIncident for the revision with the six VMs of the rolled nodes, each pointing at it", func(ctx context.Context) error {
		if err := k8s.Get(ctx, types.NamespacedName{Name: name}, &inc); err != nil {
			return err
		}
		st := inc.Status
		if st.State != v1alpha1.IncidentOpen || len(st.Members) != len(members) {
			return fmt.Errorf("%s: %s with members %v", name, st.State, st.Members)
		}
		for _, vm := range members {
			o, err := observation(ctx, vm)
			if err != nil {
				return err
			}
			if o.Status.Incident == nil || *o.Status.Incident != want || o.Status.Layers.Node.Reason != v1alpha1.ReasonNodeAgentStale {
				return fmt.Errorf("%s on %s: node %s, incident %+v", vm, placed[vm], o.Status.Layers.Node.Reason, o.Status.Incident)
			}
		}
		return nil
	})
	t.Logf("%s opened %s after the rollout", name, time.Since(start).Round(time.Millisecond))
	st := inc.Status
	if st.Cause == nil || *st.Cause != cause || st.Layer != v1alpha1.LayerNode || st.Reason != v1alpha1.ReasonNodeAgentStale {
		t.Errorf("the incident's status: cause %+v, layer %s, reason %s", st.Cause, st.Layer, st.Reason)
	}
	for i, m := range st.Members {
		if m.Namespace != ns || m.Name != members[i] {
			t.Errorf("member %d: %+v, want %s/%s", i, m, ns, members[i])
		}
	}
	// The VM on the old revision's node is Healthy and in no incident.
	if o, err := observation(ctx, all[6]); err != nil || o.Status.Verdict != v1alpha1.VerdictHealthy || o.Status.Incident != nil {
		t.Errorf("%s on %s: %v, %+v", all[6], nodes[2], err, o.Status)
	}
	// Each rolled node's NodeObservation names its own incident: a
	// node's view of its VMs, not a second VMIncident.
	for _, node := range rolled {
		eventually(t, node+"'s NodeObservation names its incident", func(ctx context.Context) error {
			var no v1alpha1.NodeObservation
			if err := k8s.Get(ctx, types.NamespacedName{Name: node}, &no); err != nil {
				return err
			}
			if i := no.Status.Incident; i == nil || i.State != v1alpha1.IncidentOpen || i.MemberCount != 3 {
				return fmt.Errorf("incident %+v", i)
			}
			return nil
		})
	}
	var list v1alpha1.VMIncidentList
	if err := k8s.List(ctx, &list); err != nil {
		t.Fatal(err)
	}
	for _, i := range list.Items {
		if i.Name != name && i.Status.State == v1alpha1.IncidentOpen {
			t.Errorf("another open VMIncident: %s %+v", i.Name, i.Status.Cause)
		}
	}
	eventually(t, "one Warning Event on the incident", func(ctx context.Context) error {
		var l eventsv1.EventList
		if err := k8s.List(ctx, &l); err != nil {
			return err
		}
		n := 0
		for _, e := range l.Items {
			if e.Regarding.Kind == "VMIncident" && e.Regarding.Name == name && e.Type == "Warning" {
				n++
			}
		}
		if n != 1 {
			return fmt.Errorf("%d Warning Events", n)
		}
		return nil
	})

	// Rolled back: the old revision beats again, the VMs are Healthy and
	// the incident resolves.
	for _, node := range rolled {
		if err := sim.RollVirtHandler(ctx, node, old); err != nil {
			t.Fatal(err)
		}
		setSilenced(false, node)
	}
	eventually(t, "the incident resolved and no VM pointing at it", func(ctx context.Context) error {
		for _, vm := range members {
			o, err := observation(ctx, vm)
			if err != nil {
				return err
			}
			if o.Status.Verdict != v1alpha1.VerdictHealthy || o.Status.Incident != nil {
				return fmt.Errorf("%s: %s/%s, incident %+v", vm, o.Status.Verdict, o.Status.Reason, o.Status.Incident)
			}
		}
		if err := k8s.Get(ctx, types.NamespacedName{Name: name}, &inc); err != nil {
			return err
		}
		if inc.Status.State != v1alpha1.IncidentResolved {
			return fmt.Errorf("%s is %s with %d members", name, inc.Status.State, inc.Status.MemberCount)
		}
		return nil
	})
	for _, vm := range all {
		if err := sim.DeleteVM(ctx, ns, vm); err != nil {
			t.Fatal(err)
		}
	}
}
