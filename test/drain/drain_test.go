// Package drain_test scores `kubectl vmobs drain-check` against the real
// `kubectl drain` on a test control plane, the simulator playing KubeVirt's
// eviction admitter (a real validating webhook on pods/eviction), its
// evacuation controller, and the kubelet and VM controller that follow a
// granted eviction.
package drain_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/app"
	"github.com/vmobs/vmobs/internal/drain"
	"github.com/vmobs/vmobs/internal/kubectlvmobs"
	"github.com/vmobs/vmobs/internal/simulator"
	"github.com/vmobs/vmobs/internal/testenv"
)

const (
	ns      = "fleet"
	drained = "node-a"
	other   = "node-b"
)

// member is one VM of the mixed fleet and the outcome KubeVirt gives it.
type member struct {
	spec simulator.VMSpec
	// claim is the root disk's claim and its access mode, when on a PVC.
	mode corev1.PersistentVolumeAccessMode
	want drain.Outcome
}

func fleet() []member {
	onlyDrained := map[string]string{"kubernetes.io/hostname": drained}
	return []member{
		{spec: simulator.VMSpec{Name: "shared-storage", SharedDisk: true}, mode: corev1.ReadWriteMany, want: drain.OutcomeLiveMigrates},
		{spec: simulator.VMSpec{Name: "container-disk"}, want: drain.OutcomeLiveMigrates},
		{spec: simulator.VMSpec{Name: "rwo", NonSharedDisk: true}, mode: corev1.ReadWriteOnce, want: drain.OutcomeBlocksDrain},
		{spec: simulator.VMSpec{Name: "pinned", NodeSelector: onlyDrained}, want: drain.OutcomeBlocksDrain},
		{spec: simulator.VMSpec{Name: "gpu", HostDevice: true}, want: drain.OutcomeBlocksDrain},
		{spec: simulator.VMSpec{Name: "none-always", EvictionStrategy: kubevirtv1.EvictionStrategyNone}, want: drain.OutcomeRestartsElsewhere},
		{spec: simulator.VMSpec{Name: "none-manual", EvictionStrategy: kubevirtv1.EvictionStrategyNone, RunStrategy: kubevirtv1.RunStrategyManual}, want: drain.OutcomeStaysDown},
		{spec: simulator.VMSpec{Name: "none-rerun", EvictionStrategy: kubevirtv1.EvictionStrategyNone, RunStrategy: kubevirtv1.RunStrategyRerunOnFailure}, want: drain.OutcomeStaysDown},
		{spec: simulator.VMSpec{Name: "none-pinned", EvictionStrategy: kubevirtv1.EvictionStrategyNone, NodeSelector: onlyDrained}, want: drain.OutcomeStaysDown},
		{spec: simulator.VMSpec{Name: "external", EvictionStrategy: kubevirtv1.EvictionStrategyExternal}, want: drain.OutcomeLeftToExternal},
		{spec: simulator.VMSpec{Name: "ifpossible-rwo", EvictionStrategy: kubevirtv1.EvictionStrategyLiveMigrateIfPossible, NonSharedDisk: true}, mode: corev1.ReadWriteOnce, want: drain.OutcomeRestartsElsewhere},
		{spec: simulator.VMSpec{Name: "ifpossible-shared", EvictionStrategy: kubevirtv1.EvictionStrategyLiveMigrateIfPossible}, want: drain.OutcomeLiveMigrates},
	}
}

// TestDrainCheckAgainstKubectlDrain builds the mixed fleet on node-a,
// predicts with `kubectl vmobs drain-check`, drains node-a with the real
// kubectl, and compares: every VM must be predicted right.
func TestDrainCheckAgainstKubectlDrain(t *testing.T) {
	// As the plugin's main does: controller-runtime's client would
	// complain that no logger is set.
	ctrllog.SetLogger(logr.Discard())
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	env, k8s := testenv.StartForTest(t, testenv.Options{})
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.Kubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	sim := simulator.New(k8s, simulator.WithSeed(3))
	for _, n := range []string{drained, other} {
		if err := sim.AddNode(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	if err := sim.EnsureNamespace(ctx, ns); err != nil {
		t.Fatal(err)
	}
	admitter, err := sim.ServeEvictionAdmitter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admitter.Close() })

	members := fleet()
	for _, m := range members {
		m.spec.Namespace = ns
		if m.mode != "" {
			pvc := &corev1.PersistentVolumeClaim{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: m.spec.Name + "-rootdisk"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{m.mode},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("30Gi")}},
				},
			}
			if err := k8s.Create(ctx, pvc); err != nil {
				t.Fatal(err)
			}
		}
		if err := sim.CreateVM(ctx, m.spec); err != nil {
			t.Fatal(err)
		}
		if m.spec.RunStrategy == kubevirtv1.RunStrategyManual {
			if err := sim.Start(ctx, ns, m.spec.Name); err != nil {
				t.Fatal(err)
			}
		}
		if err := sim.Boot(ctx, ns, m.spec.Name, drained); err != nil {
			t.Fatal(err)
		}
	}
	waitForAdmitter(ctx, t, k8s)

	// The prediction, as a user gets it.
	code, out, errOut := plugin(ctx, "drain-check", drained, "--kubeconfig", kubeconfig)
	t.Logf("kubectl vmobs drain-check %s (exit %d):\n%s%s", drained, code, out, errOut)
	if want := kubectlvmobs.ExitDrainShutDown | kubectlvmobs.ExitDrainBlocks | kubectlvmobs.ExitDrainUndecided; code != want {
		t.Errorf("drain-check exit %d, want %d", code, want)
	}
	code, out, errOut = plugin(ctx, "drain-check", drained, "--kubeconfig", kubeconfig, "-o", "json")
	var dc kubectlvmobs.DrainCheck
	if err := json.Unmarshal([]byte(out), &dc); err != nil || len(dc.Nodes) != 1 || dc.Kind != kubectlvmobs.DrainCheckKind {
		t.Fatalf("drain-check -o json (exit %d): %v\n%s%s", code, err, out, errOut)
	}
	pred := dc.Nodes[0]
	if len(pred.VMs) != len(members) {
		t.Fatalf("%d VMs predicted, the fleet has %d", len(pred.VMs), len(members))
	}

	// vmobs, whose NodeObservation of the drained node predicts the drain
	// when it sees the cordon and scores it when it ends.
	opts := app.InProcessOptions()
	reg := prometheus.NewRegistry()
	opts.Registry = reg
	mgr, err := app.StartInProcess(ctx, env.Config, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mgr.Stop() })
	waitFor(ctx, t, "the NodeObservation of "+drained, func() (bool, string) {
		var o v1alpha1.NodeObservation
		err := k8s.Get(ctx, client.ObjectKey{Name: drained}, &o)
		return err == nil && o.Status.VMs != nil && o.Status.VMs.Total == int32(len(members)), fmt.Sprintf("%v %+v", err, o.Status.VMs)
	})

	// Cordon first and drain once the NodeObservation has predicted, as
	// docs/drain-check.md advises: kubectl drain evicts right after its
	// cordon, and a controller that sees the cordon late (a loaded
	// machine) would predict without the VMs already moved.
	cordon := exec.CommandContext(ctx, filepath.Join(testenv.AssetsDir(), "kubectl"), "--kubeconfig", kubeconfig, "cordon", drained)
	if out, err := cordon.CombinedOutput(); err != nil {
		t.Fatalf("kubectl cordon: %v\n%s", err, out)
	}
	waitFor(ctx, t, "the NodeObservation's prediction of "+drained, func() (bool, string) {
		var o v1alpha1.NodeObservation
		err := k8s.Get(ctx, client.ObjectKey{Name: drained}, &o)
		return err == nil && o.Status.Drain != nil && !o.Status.Drain.PredictedAt.IsZero() && len(o.Status.Drain.VMs) == len(members),
			fmt.Sprintf("%v %+v", err, o.Status.Drain)
	})

	// KubeVirt's controllers, played while kubectl drain runs.
	actx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	k := &kubevirt{t: t, k8s: k8s, sim: sim, migrated: map[string]bool{}}
	wg.Go(func() { k.run(actx) })

	kubectl := exec.CommandContext(ctx, filepath.Join(testenv.AssetsDir(), "kubectl"), "--kubeconfig", kubeconfig,
		"drain", drained, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=40s")
	var drainOut bytes.Buffer
	kubectl.Stdout, kubectl.Stderr = &drainOut, &drainOut
	err = kubectl.Run()
	t.Logf("kubectl drain %s: %v\n%s", drained, err, drainOut.String())
	if err == nil {
		t.Error("kubectl drain succeeded, but the fleet has VMs that block it")
	}
	// Let the controllers finish what the drain started (a restarted VMI
	// booting), then stop them.
	deadline := time.Now().Add(30 * time.Second)
	for !k.settled(ctx) && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	stop()
	wg.Wait()

	// The drain's progress on the cordoned node, as the plugin shows it.
	code, out, errOut = plugin(ctx, "drain-check", drained, "--kubeconfig", kubeconfig)
	t.Logf("kubectl vmobs drain-check %s after the drain (exit %d):\n%s%s", drained, code, out, errOut)
	if !strings.Contains(out, "PROGRESS") || !strings.Contains(out, "the node is cordoned") {
		t.Errorf("drain-check on the cordoned node shows no progress:\n%s", out)
	}

	in := current(ctx, t, k8s)
	cmp := drain.Compare(pred, in)
	t.Logf("predicted × observed, %d VMs:\n%s", len(cmp.VMs), cmp.Table())
	want := map[string]drain.Outcome{}
	for _, m := range members {
		want[m.spec.Name] = m.want
	}
	for _, v := range cmp.VMs {
		if v.Predicted != v.Observed {
			t.Errorf("%s: predicted %s, observed %s (%s)", v.Name, v.Predicted, v.Observed, v.Message)
		}
		if v.Observed != want[v.Name] {
			t.Errorf("%s: observed %s, KubeVirt's semantics say %s (%s)", v.Name, v.Observed, want[v.Name], v.Message)
		}
	}
	if cmp.Wrong != 0 || cmp.Right != len(members) {
		t.Errorf("%d right, %d wrong of %d", cmp.Right, cmp.Wrong, len(members))
	}
	progress := drain.Track(pred, in)
	if !progress.Draining {
		t.Error("the node is not cordoned after kubectl drain")
	}

	// The NodeObservation predicted what the plugin did, at the cordon,
	// and tracks the drain, which the VMs that block it keep open.
	var obs v1alpha1.NodeObservation
	if err := k8s.Get(ctx, client.ObjectKey{Name: drained}, &obs); err != nil {
		t.Fatal(err)
	}
	sec := obs.Status.Drain
	if sec == nil || !sec.Cordoned || sec.Outcome != nil || len(sec.VMs) != len(members) {
		t.Fatalf("the NodeObservation's drain section during the drain: %+v", sec)
	}
	predicted := map[string]drain.Outcome{}
	for _, v := range pred.VMs {
		predicted[v.Name] = v.Outcome
	}
	for _, v := range sec.VMs {
		if drain.Outcome(v.Predicted) != predicted[v.Name] {
			t.Errorf("NodeObservation: %s predicted %s, drain-check %s", v.Name, v.Predicted, predicted[v.Name])
		}
	}
	t.Logf("NodeObservation %s during the drain: predicted %v, phases %v", drained, sec.Predicted, sec.Phases)

	// Uncordoned, the drain ends: scored once, in the status and the metric.
	uncordon := exec.CommandContext(ctx, filepath.Join(testenv.AssetsDir(), "kubectl"), "--kubeconfig", kubeconfig, "uncordon", drained)
	if out, err := uncordon.CombinedOutput(); err != nil {
		t.Fatalf("kubectl uncordon: %v\n%s", err, out)
	}
	waitFor(ctx, t, "the drain's outcome on the NodeObservation", func() (bool, string) {
		err := k8s.Get(ctx, client.ObjectKey{Name: drained}, &obs)
		return err == nil && obs.Status.Drain != nil && obs.Status.Drain.Outcome != nil, fmt.Sprintf("%v %+v", err, obs.Status.Drain)
	})
	if o := obs.Status.Drain.Outcome; o.Right != int32(len(members)) || o.Wrong != 0 || obs.Status.Drain.Cordoned {
		t.Errorf("NodeObservation's outcome: %+v cordoned %v, want %d right", o, obs.Status.Drain.Cordoned, len(members))
	}
	right, wrong := drainOutcomes(t, reg)
	if right != len(members) || wrong != 0 {
		t.Errorf("vmobs_drain_outcomes_total: %d right, %d wrong, want %d right", right, wrong, len(members))
	}
}

// drainOutcomes sums vmobs_drain_outcomes_total's VMs predicted right and
// wrong.
func drainOutcomes(t *testing.T, reg *prometheus.Registry) (right, wrong int) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "vmobs_drain_outcomes_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["predicted"] == labels["observed"] {
				right += int(m.GetCounter().GetValue())
			} else {
				wrong += int(m.GetCounter().GetValue())
			}
		}
	}
	return right, wrong
}

// waitFor polls cond every 200ms until it holds or ctx ends.
func waitFor(ctx context.Context, t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	var last string
	for {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v; last: %s", what, ctx.Err(), last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// plugin runs the plugin in-process.
func plugin(ctx context.Context, args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := kubectlvmobs.Run(ctx, args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// waitForAdmitter waits until the API server calls the eviction admitter:
// a dry-run eviction of a LiveMigrate VM's pod is refused by it.
func waitForAdmitter(ctx context.Context, t *testing.T, k8s client.Client) {
	t.Helper()
	var pods corev1.PodList
	if err := k8s.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{kubevirtv1.AppLabel: "virt-launcher"}); err != nil {
		t.Fatal(err)
	}
	var pod *corev1.Pod
	for i := range pods.Items {
		if pods.Items[i].Annotations[kubevirtv1.DomainAnnotation] == "container-disk" {
			pod = &pods.Items[i]
		}
	}
	if pod == nil {
		t.Fatal("no launcher pod of container-disk")
	}
	for {
		ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pod.Name}, DeleteOptions: &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}}
		err := k8s.SubResource("eviction").Create(ctx, pod, ev)
		if apierrors.IsTooManyRequests(err) && strings.Contains(err.Error(), "Eviction triggered evacuation") {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the API server does not call the eviction admitter: %v", err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// kubevirt plays, by polling, what follows the admitter's answers: the
// evacuation controller migrates a VMI marked for evacuation when it is
// live-migratable and its strategy asks for it
// (kv:pkg/virt-controller/watch/drain/evacuation/evacuation.go), to node-b
// if the VMI's nodeSelector allows, else to a target pod that cannot be
// scheduled; the kubelet and virt-controller end an evicted launcher pod
// (LauncherEvicted), and the scheduler places a restarted VMI on node-b,
// or nowhere when the VMI is pinned to node-a.
type kubevirt struct {
	t        *testing.T
	k8s      client.Client
	sim      *simulator.Simulator
	mu       sync.Mutex
	migrated map[string]bool
}

func (k *kubevirt) run(ctx context.Context) {
	for ctx.Err() == nil {
		if err := k.pass(ctx); err != nil && ctx.Err() == nil {
			k.t.Errorf("playing KubeVirt: %v", err)
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (k *kubevirt) pass(ctx context.Context) error {
	var vmis kubevirtv1.VirtualMachineInstanceList
	if err := k.k8s.List(ctx, &vmis, client.InNamespace(ns)); err != nil {
		return err
	}
	target := &corev1.Node{}
	if err := k.k8s.Get(ctx, client.ObjectKey{Name: other}, target); err != nil {
		return err
	}
	for _, vmi := range vmis.Items {
		fits := labels.SelectorFromSet(vmi.Spec.NodeSelector).Matches(labels.Set(target.Labels))
		switch {
		case vmi.Status.EvacuationNodeName == drained && vmi.Status.NodeName == drained && migratesOnEviction(&vmi):
			k.mu.Lock()
			done := k.migrated[vmi.Name]
			k.migrated[vmi.Name] = true
			k.mu.Unlock()
			if done {
				continue
			}
			opts := simulator.MigrationOptions{TargetNode: other, Evacuation: true}
			if !fits {
				opts.Outcome = simulator.MigrationTargetUnschedulable
			}
			m, err := k.sim.StartMigration(ctx, ns, vmi.Name, opts)
			if err != nil {
				return err
			}
			if err := m.Run(ctx); err != nil {
				return err
			}
		case vmi.Status.Phase == kubevirtv1.Pending && vmi.Status.NodeName == "" && !vmiUnschedulable(&vmi):
			// A VMI the VM controller made anew after an eviction.
			if !fits {
				if err := k.sim.FailScheduling(ctx, ns, vmi.Name, simulator.Unschedulable); err != nil {
					return err
				}
				continue
			}
			if err := k.sim.Boot(ctx, ns, vmi.Name, other); err != nil {
				return err
			}
		}
	}
	var pods corev1.PodList
	if err := k.k8s.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{kubevirtv1.AppLabel: "virt-launcher"}); err != nil {
		return err
	}
	for _, pod := range pods.Items {
		if pod.DeletionTimestamp == nil || pod.Spec.NodeName != drained || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		if err := k.sim.LauncherEvicted(ctx, ns, pod.Annotations[kubevirtv1.DomainAnnotation]); err != nil {
			return err
		}
	}
	return nil
}

// settled says nothing is left to play: no VMI waits to be scheduled and
// no launcher pod on node-a is terminating.
func (k *kubevirt) settled(ctx context.Context) bool {
	var vmis kubevirtv1.VirtualMachineInstanceList
	if err := k.k8s.List(ctx, &vmis, client.InNamespace(ns)); err != nil {
		return false
	}
	for _, vmi := range vmis.Items {
		if vmi.Status.Phase == kubevirtv1.Pending && !vmiUnschedulable(&vmi) || vmi.Status.Phase == kubevirtv1.Scheduling || vmi.Status.Phase == kubevirtv1.Scheduled {
			return false
		}
	}
	var pods corev1.PodList
	if err := k.k8s.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		return false
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil && p.Spec.NodeName == drained {
			return false
		}
	}
	return true
}

// migratesOnEviction is KubeVirt's VMIMigratableOnEviction and the
// evacuation controller's LiveMigratable check
// (kv:pkg/util/migrations/migrations.go).
func migratesOnEviction(vmi *kubevirtv1.VirtualMachineInstance) bool {
	if vmi.Spec.EvictionStrategy == nil || !vmi.IsMigratable() {
		return false
	}
	s := *vmi.Spec.EvictionStrategy
	return s == kubevirtv1.EvictionStrategyLiveMigrate || s == kubevirtv1.EvictionStrategyLiveMigrateIfPossible
}

// vmiUnschedulable says the VMI's pod could not be scheduled
// (PodScheduled=False Unschedulable, as FailScheduling writes it).
func vmiUnschedulable(vmi *kubevirtv1.VirtualMachineInstance) bool {
	for _, c := range vmi.Status.Conditions {
		if c.Type == kubevirtv1.VirtualMachineInstanceConditionType(corev1.PodScheduled) && c.Status == corev1.ConditionFalse {
			return true
		}
	}
	return false
}

// current reads what Compare needs after the drain.
func current(ctx context.Context, t *testing.T, k8s client.Client) drain.Input {
	t.Helper()
	in := drain.Input{Node: drained, Now: time.Now()}
	var vmis kubevirtv1.VirtualMachineInstanceList
	var migs kubevirtv1.VirtualMachineInstanceMigrationList
	var nodes corev1.NodeList
	for _, l := range []client.ObjectList{&vmis, &migs, &nodes} {
		if err := k8s.List(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	in.VMIs, in.Migrations, in.Nodes = vmis.Items, migs.Items, nodes.Items
	return in
}
