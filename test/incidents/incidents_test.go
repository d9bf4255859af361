// Package incidents tests VMIncidents on a real control plane: the
// kube-apiserver with kube-controller-manager's PV binder and
// attach-detach controller, the simulator playing KubeVirt and the CSI
// driver, and the manager in-process behind a request counter. A
// StorageClass's volumes are lost under twelve running VMs at once: one
// VMIncident opens with every VM as a member, each VMObservation points at
// it, one Event is posted for the incident instead of one per VM, and the
// writes are counted; the VMs are deleted and the incident resolves. A
// virt-handler rollout that stops virt-handler on two of three nodes is
// one VMIncident named after the revision (docs/incidents.md).
package incidents

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/app"
	"github.com/vmobs/vmobs/internal/incident"
	"github.com/vmobs/vmobs/internal/simulator"
	"github.com/vmobs/vmobs/internal/testenv"
	"github.com/vmobs/vmobs/test/support"
)

var (
	env *testenv.Env
	k8s client.Client
	sim *simulator.Simulator
)

func TestMain(m *testing.M) {
	support.RunWithStorage(m, testenv.Options{}, func(w support.StorageWorld) { env, k8s, sim = w.Env, w.K8s, w.Sim })
}

// eventually polls cond every 250ms for up to two minutes.
func eventually(t *testing.T, what string, cond func(context.Context) error) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		err := cond(ctx)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// startManager runs the manager in-process with opts until the test
// ends, and counts its requests.
func startManager(ctx context.Context, t *testing.T, opts app.Options) *testenv.RequestCounter {
	t.Helper()
	counter := testenv.NewRequestCounter()
	mgr, err := app.StartInProcess(ctx, counter.Wrap(env.Config), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := mgr.Stop(); err != nil {
			t.Errorf("stopping the manager: %v", err)
		}
	})
	return counter
}

// vmobsEvents counts the Events the manager posted (events.k8s.io, the
// reporting controller vmobs) in namespace ns of type typ, by reason.
func vmobsEvents(ctx context.Context, ns, typ string) (map[string]int, error) {
	var l eventsv1.EventList
	if err := k8s.List(ctx, &l, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, e := range l.Items {
		if e.ReportingController == "vmobs" && e.Type == typ {
			out[e.Reason]++
		}
	}
	return out, nil
}

// TestStorageClassIncident: the volumes of twelve VMs of StorageClass
// sim-immediate, on two nodes, are lost at once. One VMIncident,
// storageclass-sim-immediate, opens with the twelve as members; each
// VMObservation points at it; the members' Warning Events give way to the
// incident's one; the burst costs fewer writes than a status and an Event
// per VM. Deleting the VMs resolves it, and the idle fleet then writes
// nothing.
func TestStorageClassIncident(t *testing.T) {
	const n = 12
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := "incident"
	if err := sim.EnsureNamespace(ctx, ns); err != nil {
		t.Fatal(err)
	}
	opts := app.InProcessOptions()
	counter := startManager(ctx, t, opts)

	// virt-handler beats on both nodes throughout.
	go sim.RunHeartbeats(ctx, simulator.Heartbeats{Every: time.Second})

	// Twelve VMs boot from bound, attached claims of sim-immediate.
	var names []string
	pvs := map[string]string{}
	for i := range n {
		vm := fmt.Sprintf("vm-%02d", i)
		names = append(names, vm)
		claim := simulator.RootClaim(vm)
		if err := sim.CreateClaim(ctx, simulator.ClaimSpec{Namespace: ns, Name: claim}); err != nil {
			t.Fatal(err)
		}
		if err := sim.CreateVM(ctx, simulator.VMSpec{Namespace: ns, Name: vm, RootClaim: claim}); err != nil {
			t.Fatal(err)
		}
		pv, err := sim.AwaitBound(ctx, ns, claim)
		if err != nil {
			t.Fatal(err)
		}
		pvs[vm] = pv
		if err := sim.BootWithVolumes(ctx, ns, vm, simulator.ScenarioNodes[i%len(simulator.ScenarioNodes)]); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "twelve Healthy VMs", func(ctx context.Context) error {
		for _, vm := range names {
			var o v1alpha1.VMObservation
			if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: vm}, &o); err != nil {
				return err
			}
			if o.Status.Verdict != v1alpha1.VerdictHealthy {
				return fmt.Errorf("%s is %s/%s", vm, o.Status.Verdict, o.Status.Reason)
			}
		}
		return nil
	})
	time.Sleep(3 * time.Second) // the boot's last writes settle
	before := counter.Snapshot()
	writes := func(key string) int { return counter.Get(key) - before[key] }
	vmApplies := func() int {
		total := 0
		for _, vm := range names {
			total += counter.ObjectWrites("vmobservations", ns, vm)["apply vmobservations/status"]
		}
		return total
	}
	appliesBefore := vmApplies()
	beforeVM := map[string]int{}
	for _, vm := range names {
		beforeVM[vm] = counter.ObjectWrites("vmobservations", ns, vm)["apply vmobservations/status"]
	}

	// The burst: every PV is deleted, the PV binder finds each claim Lost.
	start := time.Now()
	for _, vm := range names {
		if err := sim.DeleteVolume(ctx, pvs[vm]); err != nil {
			t.Fatal(err)
		}
	}
	name := incident.Name(v1alpha1.IncidentCause{Kind: v1alpha1.CauseStorageClass, Name: simulator.StorageClassImmediate})
	var inc v1alpha1.VMIncident
	eventually(t, "one open VMIncident with the twelve VMs, each pointing at it", func(ctx context.Context) error {
		if err := k8s.Get(ctx, types.NamespacedName{Name: name}, &inc); err != nil {
			return err
		}
		st := inc.Status
		if st.State != v1alpha1.IncidentOpen || st.MemberCount != n || len(st.Members) != n {
			return fmt.Errorf("%s: %s with %d members %v", name, st.State, st.MemberCount, st.Members)
		}
		for _, vm := range names {
			var o v1alpha1.VMObservation
			if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: vm}, &o); err != nil {
				return err
			}
			if o.Status.Incident == nil || o.Status.Incident.Name != name || o.Status.Layers.Storage.Reason != v1alpha1.ReasonPVCLost {
				return fmt.Errorf("%s: storage %s, incident %+v", vm, o.Status.Layers.Storage.Reason, o.Status.Incident)
			}
		}
		return nil
	})
	t.Logf("%s opened %s after the volumes were lost", name, time.Since(start).Round(time.Millisecond))
	st := inc.Status
	if st.Cause == nil || *st.Cause != (v1alpha1.IncidentCause{Kind: v1alpha1.CauseStorageClass, Name: simulator.StorageClassImmediate}) ||
		st.Layer != v1alpha1.LayerStorage || st.Reason != v1alpha1.ReasonPVCLost || st.FirstEvidence == nil || st.StartTime == nil {
		t.Errorf("the incident's status: %+v", st)
	}
	for i, m := range st.Members {
		if m.Namespace != ns || m.Name != names[i] {
			t.Errorf("member %d: %+v, want %s/%s", i, m, ns, names[i])
		}
	}
	var list v1alpha1.VMIncidentList
	if err := k8s.List(ctx, &list); err != nil || len(list.Items) != 1 {
		t.Errorf("VMIncidents: %d, %v; want one: a CSI driver over one StorageClass is not an incident of its own", len(list.Items), err)
	}

	// Let stray writes land, then count the burst's.
	time.Sleep(3 * time.Second)
	threshold := opts.IncidentThreshold
	applies := vmApplies() - appliesBefore
	vmWarnings, err := vmobsEvents(ctx, ns, "Warning")
	if err != nil {
		t.Fatal(err)
	}
	incWarnings := 0
	var l eventsv1.EventList
	if err := k8s.List(ctx, &l); err != nil {
		t.Fatal(err)
	}
	for _, e := range l.Items {
		if e.Regarding.Kind == "VMIncident" && e.Regarding.Name == name && e.Type == "Warning" {
			incWarnings++
			if e.Reason != v1alpha1.ReasonPVCLost || !strings.Contains(e.Note, "StorageClass "+simulator.StorageClassImmediate) {
				t.Errorf("the incident's Event: %s %q", e.Reason, e.Note)
			}
		}
	}
	eventWrites := writes("create events") + writes("patch events")
	incWrites := writes("create vmincidents") + writes("patch vmincidents/status")
	t.Logf("burst of %d: %d VMObservation status writes, %d VM Warning Events %v, %d Events written, %d VMIncident writes (%v), incident Warnings %d",
		n, applies, sum(vmWarnings), vmWarnings, eventWrites, incWrites, map[string]int{
			"create": writes("create vmincidents"), "status": writes("patch vmincidents/status")}, incWarnings)
	perVM := map[string]int{}
	for _, vm := range names {
		perVM[vm] = counter.ObjectWrites("vmobservations", ns, vm)["apply vmobservations/status"] - beforeVM[vm]
		var o v1alpha1.VMObservation
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: vm}, &o); err == nil && perVM[vm] > 1 && o.Status.History != nil {
			t.Logf("%s: %d writes; history %+v", vm, perVM[vm], o.Status.History.Entries[:min(4, len(o.Status.History.Entries))])
		}
	}
	t.Logf("status writes per VM: %v", perVM)
	// The pointer rides on the transition's own write: one write per VM,
	// one more for the VMs evaluated before the incident opened (those
	// that posted their own Warning), and a margin of n/5 for writes the
	// storage layer makes of its own while a claim goes from Bound (its
	// PV gone) to Lost. A pointer written apart for every member would be
	// 2n.
	if own := vmWarnings[v1alpha1.ReasonPVCLost]; applies < n || applies > n+own+n/5 {
		t.Errorf("%d status writes for %d transitions (%d VMs evaluated before the incident opened)", applies, n, own)
	}
	if w := vmWarnings[v1alpha1.ReasonPVCLost]; w > threshold-1 {
		t.Errorf("%d members posted their own PVCLost Warning; at most the %d evaluated before the incident opened may", w, threshold-1)
	}
	if incWarnings != 1 {
		t.Errorf("%d Warning Events on the incident, want 1", incWarnings)
	}
	if total := applies + eventWrites + incWrites; total >= 2*n {
		t.Errorf("the burst cost %d writes; a status and an Event per VM would be %d", total, 2*n)
	}

	// The VMs are deleted: no VM claims the StorageClass, the incident
	// resolves.
	for _, vm := range names {
		if err := sim.DeleteVM(ctx, ns, vm); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "the incident resolved", func(ctx context.Context) error {
		if err := k8s.Get(ctx, types.NamespacedName{Name: name}, &inc); err != nil {
			return err
		}
		if inc.Status.State != v1alpha1.IncidentResolved || inc.Status.ResolvedTime == nil {
			// What still holds it open, for the failure's message.
			var obs v1alpha1.VMObservationList
			if err := k8s.List(ctx, &obs, client.InNamespace(ns)); err != nil {
				return err
			}
			left := make([]string, 0, len(obs.Items))
			for _, o := range obs.Items {
				left = append(left, fmt.Sprintf("%s(incident %v, %s)", o.Name, o.Status.Incident, o.Status.Verdict))
			}
			return fmt.Errorf("%s with %d members; VMObservations left: %v", inc.Status.State, inc.Status.MemberCount, left)
		}
		return nil
	})
	if !slices.ContainsFunc(inc.Status.Conditions, func(c metav1.Condition) bool { return c.Type == v1alpha1.ConditionReady && c.Status == "True" }) {
		t.Errorf("a resolved incident's conditions: %+v", inc.Status.Conditions)
	}
	eventually(t, "the incident's Normal IncidentResolved Event", func(ctx context.Context) error {
		var l eventsv1.EventList
		if err := k8s.List(ctx, &l); err != nil {
			return err
		}
		for _, e := range l.Items {
			if e.Regarding.Kind == "VMIncident" && e.Regarding.Name == name && e.Type == "Normal" && e.Reason == incident.ReasonIncidentResolved {
				return nil
			}
		}
		return fmt.Errorf("none among %d Events", len(l.Items))
	})
	// Idle: nothing changes, nothing is written.
	time.Sleep(3 * time.Second)
	idle := counter.Snapshot()
	time.Sleep(5 * time.Second)
	for key, v := range counter.Snapshot() {
		if strings.Contains(key, "vmincidents") && v != idle[key] {
			t.Errorf("%s: %d writes at idle", key, v-idle[key])
		}
	}
}

func sum(m map[string]int) int {
	total := 0
	for _, v := range m {
		total += v
	}
	return total
}
