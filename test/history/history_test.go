// Package history tests the flight recorder end to end: a real API server
// whose Events expire after a minute, the simulator scripting a VM's life,
// the manager in-process, and `kubectl vmobs history` reading it back once
// the Events are gone (docs/history.md).
package history

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/analyze"
	"github.com/vmobs/vmobs/internal/app"
	"github.com/vmobs/vmobs/internal/history"
	"github.com/vmobs/vmobs/internal/kubectlvmobs"
	"github.com/vmobs/vmobs/internal/simulator"
	"github.com/vmobs/vmobs/internal/testenv"
	"github.com/vmobs/vmobs/internal/verdict"
)

// eventTTL is the API server's --event-ttl: the test waits past it, so
// that nothing it reads could come from an Event.
const eventTTL = time.Minute

const vm = "vm1"

// world is one control plane, simulator and manager.
type world struct {
	t          *testing.T
	ctx        context.Context
	env        *testenv.Env
	k8s        client.Client
	sim        *simulator.Simulator
	mgr        *app.InProcess
	kubeconfig string
}

func start(t *testing.T) *world {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a control plane and waits past the event TTL")
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	env, k8s := testenv.StartForTest(t, testenv.Options{APIServerFlags: map[string]string{"event-ttl": eventTTL.String()}})
	w := &world{t: t, ctx: ctx, env: env, k8s: k8s, sim: simulator.New(k8s, simulator.WithSeed(11)),
		kubeconfig: filepath.Join(t.TempDir(), "kubeconfig")}
	if err := env.Kubeconfig(w.kubeconfig); err != nil {
		t.Fatal(err)
	}
	w.startManager()
	t.Cleanup(w.stopManager)
	// virt-handler beats on every node that is not lost.
	go w.sim.RunHeartbeats(ctx, simulator.Heartbeats{Every: time.Second})
	return w
}

// policy is the manager's, and the analyzer's in the comparison.
func policy() verdict.Policy {
	p := verdict.DefaultPolicy()
	p.HeartbeatTimeout = 10 * time.Second
	p.AgentGracePeriod = 5 * time.Second
	p.HistoryLimit = 100
	// A failed migration keeps the VM Degraded this long.
	p.MigrationFailureTTL = 5 * time.Second
	return p
}

func (w *world) startManager() {
	opts := app.InProcessOptions()
	opts.Policy = policy()
	var err error
	if w.mgr, err = app.StartInProcess(w.ctx, w.env.Config, opts); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) stopManager() {
	if w.mgr != nil {
		if err := w.mgr.Stop(); err != nil {
			w.t.Error(err)
		}
		w.mgr = nil
	}
}

func (w *world) must(err error) {
	w.t.Helper()
	if err != nil {
		w.t.Fatal(err)
	}
}

// eventually polls cond every 100ms for 30s.
func (w *world) eventually(what string, cond func() (bool, string)) {
	w.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	last := ""
	for time.Now().Before(deadline) {
		ok, why := cond()
		if ok {
			return
		}
		last = why
		time.Sleep(100 * time.Millisecond)
	}
	w.t.Fatalf("%s: not within 30s; last: %s", what, last)
}

// history runs `kubectl vmobs history -o json` and decodes it.
func (w *world) history(ns string) *v1alpha1.VMObservation {
	w.t.Helper()
	var out, errOut bytes.Buffer
	code := kubectlvmobs.Run(w.ctx, []string{"history", "--kubeconfig", w.kubeconfig, "-n", ns, vm, "-o", "json"}, &out, &errOut)
	if code == kubectlvmobs.ExitError {
		w.t.Fatalf("kubectl vmobs history: %s", errOut.String())
	}
	o := &v1alpha1.VMObservation{}
	w.must(json.Unmarshal(out.Bytes(), o))
	return o
}

// has waits until the history holds the life event at the layer.
func (w *world) has(ns string, event v1alpha1.HistoryEvent, layer string, after time.Time) {
	w.t.Helper()
	w.eventually(fmt.Sprintf("history entry %s/%s", event, layer), func() (bool, string) {
		o := w.history(ns)
		if o.Status.History == nil {
			return false, "no history"
		}
		for _, e := range o.Status.History.Entries {
			if e.Event == event && e.Layer == layer && !e.Time.Time.Before(after.Truncate(time.Second)) {
				return true, ""
			}
		}
		return false, fmt.Sprint(history.Outline(o.Status.History))
	})
}

func (w *world) overall(ns string, want v1alpha1.Verdict) {
	w.t.Helper()
	w.eventually("overall "+string(want), func() (bool, string) {
		o := &v1alpha1.VMObservation{}
		if err := w.k8s.Get(w.ctx, client.ObjectKey{Namespace: ns, Name: vm}, o); err != nil {
			return false, err.Error()
		}
		return o.Status.Verdict == want, string(o.Status.Verdict) + "/" + o.Status.Reason
	})
}

func (w *world) vmiPhase(ns, phase string) {
	w.t.Helper()
	w.eventually("status.vmi.phase "+phase, func() (bool, string) {
		o := &v1alpha1.VMObservation{}
		if err := w.k8s.Get(w.ctx, client.ObjectKey{Namespace: ns, Name: vm}, o); err != nil || o.Status.VMI == nil {
			return false, fmt.Sprint(err)
		}
		return o.Status.VMI.Phase == phase, o.Status.VMI.Phase
	})
}

// guestPowerOff is virt-handler seeing the domain shut down from inside:
// the VMI Succeeded. (replace is then virt-controller, for a run strategy
// that keeps the VM running, deleting it and starting a new one.)
func (w *world) guestPowerOff(ns string) {
	vmi := &kubevirtv1.VirtualMachineInstance{}
	w.must(w.k8s.Get(w.ctx, client.ObjectKey{Namespace: ns, Name: vm}, vmi))
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	vmi.Status.Phase = kubevirtv1.Succeeded
	vmi.Status.PhaseTransitionTimestamps = append(vmi.Status.PhaseTransitionTimestamps,
		kubevirtv1.VirtualMachineInstancePhaseTransitionTimestamp{Phase: kubevirtv1.Succeeded, PhaseTransitionTimestamp: now})
	// KubeVirt's VMI has no status subresource: virt-handler updates it whole.
	w.must(w.k8s.Update(w.ctx, vmi))
	w.vmiPhase(ns, "Succeeded")
}

// replace deletes the finished VMI and boots the VM's next one.
func (w *world) replace(ns, node string) {
	w.must(w.sim.DeleteVMI(w.ctx, ns, vm))
	w.must(w.sim.Start(w.ctx, ns, vm))
	w.must(w.sim.Boot(w.ctx, ns, vm, node))
	w.overall(ns, v1alpha1.VerdictHealthy)
}

// step is one scripted act and the life events it must leave, oldest
// first.
type step struct {
	name string
	act  func(w *world, ns string)
	want []lifeEvent
}

type lifeEvent struct {
	event v1alpha1.HistoryEvent
	layer string
}

func (l lifeEvent) String() string { return string(l.event) + "/" + l.layer }

// script is the VM's life: start, a guest poweroff inside (VMI Succeeded,
// restarted by its run strategy), a live migration, a failed migration, an
// OOM-killed launcher (the VMI fails and is restarted), a node that goes
// NotReady and back, a user pause and unpause.
func script(nodeA, nodeB string) []step {
	cp, node, guest := v1alpha1.LayerControlPlane, v1alpha1.LayerNode, v1alpha1.LayerGuest
	return []step{
		{"start", func(w *world, ns string) {
			w.must(w.sim.CreateVM(w.ctx, simulator.VMSpec{Namespace: ns, Name: vm, GuestAgent: true}))
			w.must(w.sim.Boot(w.ctx, ns, vm, nodeA))
			w.overall(ns, v1alpha1.VerdictHealthy)
		}, []lifeEvent{{v1alpha1.EventVMIStarted, cp}, {v1alpha1.EventAgentConnected, guest}}},
		{"guest poweroff", func(w *world, ns string) { w.guestPowerOff(ns) }, []lifeEvent{{v1alpha1.EventVMIFinished, guest}}},
		{"restarted by its run strategy", func(w *world, ns string) { w.replace(ns, nodeA) },
			[]lifeEvent{{v1alpha1.EventVMIReplaced, guest}, {v1alpha1.EventVMIStarted, cp}, {v1alpha1.EventAgentConnected, guest}}},
		{"live migration", func(w *world, ns string) {
			_, err := w.sim.Migrate(w.ctx, ns, vm, nodeB, simulator.MigrationSucceeds)
			w.must(err)
			w.overall(ns, v1alpha1.VerdictHealthy)
		}, []lifeEvent{{v1alpha1.EventMigrationStarted, cp}, {v1alpha1.EventMigrationSucceeded, cp}}},
		{"failed migration", func(w *world, ns string) {
			_, err := w.sim.Migrate(w.ctx, ns, vm, nodeA, simulator.MigrationFails)
			w.must(err)
			w.overall(ns, v1alpha1.VerdictDegraded)
		}, []lifeEvent{{v1alpha1.EventMigrationStarted, cp}, {v1alpha1.EventMigrationFailed, cp}}},
		{"OOM-killed launcher", func(w *world, ns string) {
			w.must(w.sim.CrashLauncher(w.ctx, ns, vm, simulator.CrashOOMKilled))
			w.overall(ns, v1alpha1.VerdictFailed)
			w.must(w.sim.FailVMI(w.ctx, ns, vm))
			w.vmiPhase(ns, "Failed")
		}, []lifeEvent{{v1alpha1.EventLauncherOOMKilled, node}, {v1alpha1.EventVMIFinished, node}}},
		{"restarted after the failure", func(w *world, ns string) { w.replace(ns, nodeB) },
			[]lifeEvent{{v1alpha1.EventVMIReplaced, node}, {v1alpha1.EventVMIStarted, cp}, {v1alpha1.EventAgentConnected, guest}}},
		{"node NotReady and back", func(w *world, ns string) {
			w.must(w.sim.LoseNode(w.ctx, nodeB))
			w.overall(ns, v1alpha1.VerdictUnknown)
			time.Sleep(time.Second) // the recovery at another second than the loss
			w.must(w.sim.RecoverNode(w.ctx, nodeB))
			w.overall(ns, v1alpha1.VerdictHealthy)
		}, []lifeEvent{{v1alpha1.EventNodeNotReady, node}, {v1alpha1.EventNodeReady, node}}},
		{"pause and unpause", func(w *world, ns string) {
			w.must(w.sim.Pause(w.ctx, ns, vm, simulator.PausedByUser))
			w.overall(ns, v1alpha1.VerdictSuspended)
			w.must(w.sim.Unpause(w.ctx, ns, vm))
			w.overall(ns, v1alpha1.VerdictHealthy)
		}, nil},
	}
}

// play runs the steps, checking after each that its life events are in the
// history; between (before the step numbered restartBefore) it may stop
// the manager and start it again once the step is done.
func (w *world) play(ns string, steps []step, restartBefore int) []lifeEvent {
	var truth []lifeEvent
	for i, s := range steps {
		// Steps a second apart: entries of two steps never share a second.
		time.Sleep(time.Second)
		begin := time.Now()
		if i == restartBefore {
			w.stopManager()
		}
		s.act(w, ns)
		if i == restartBefore {
			w.startManager()
		}
		for _, e := range s.want {
			w.has(ns, e.event, e.layer, begin)
		}
		truth = append(truth, s.want...)
		w.t.Logf("step %q: %v", s.name, history.Outline(w.history(ns).Status.History))
	}
	return truth
}

// checkAgainst requires the history to reproduce the ground truth: its life
// events, oldest first, are the truth's (those the ring dropped being the
// oldest), each layer's verdict transitions chain (each from is the
// previous to; the last to is the current verdict), no entry twice, and
// status.vm counts the restarts.
func (w *world) checkAgainst(ns string, truth []lifeEvent, restarts int32, lastLayer string) {
	t := w.t
	t.Helper()
	o := w.history(ns)
	full := &v1alpha1.VMObservation{}
	w.must(w.k8s.Get(w.ctx, client.ObjectKey{Namespace: ns, Name: vm}, full))
	o.Status.Verdict = full.Status.Verdict
	h := o.Status.History
	if h == nil {
		t.Fatal("no history")
	}
	raw, _ := json.Marshal(h)
	t.Logf("history: %d entries, %d dropped, %d bytes", len(h.Entries), h.Dropped, len(raw))
	if len(raw) > 4096 {
		t.Errorf("history is %d bytes, over 4 KiB", len(raw))
	}
	var life []lifeEvent
	seen := map[string]bool{}
	chain := map[string]v1alpha1.Verdict{}
	for i := len(h.Entries) - 1; i >= 0; i-- {
		e := h.Entries[i]
		k := fmt.Sprint(e.Time.Unix(), e.Event, e.Layer, e.Object, e.From, e.To)
		if seen[k] {
			t.Errorf("entry twice: %+v", e)
		}
		seen[k] = true
		if e.Event != v1alpha1.EventVerdictChanged {
			life = append(life, lifeEvent{e.Event, e.Layer})
			continue
		}
		if prev, ok := chain[e.Layer]; ok && prev != e.From {
			t.Errorf("%s went %s → %s after being %s: a transition invented or lost", e.Layer, e.From, e.To, prev)
		}
		chain[e.Layer] = e.To
	}
	if got, want := fmt.Sprint(life), fmt.Sprint(truth); len(life) > len(truth) || !strings.HasSuffix(want, strings.TrimPrefix(got, "[")) {
		t.Errorf("life events, oldest first:\n got %s\nwant %s (or its newest part)", got, want)
	}
	if len(life) < len(truth) && h.Dropped == 0 {
		t.Errorf("%d of %d life events, none dropped: some were lost", len(life), len(truth))
	}
	if v := chain[v1alpha1.LayerOverall]; v != "" && v != o.Status.Verdict {
		t.Errorf("the last overall transition is to %s, the verdict is %s", v, o.Status.Verdict)
	}
	vm := o.Status.VM
	if vm == nil || vm.Restarts != restarts || vm.LastRestart == nil || vm.LastRestart.Layer != lastLayer || vm.Started == nil {
		t.Errorf("status.vm %+v: want %d restarts, the last caused by %s", vm, restarts, lastLayer)
	}
}

// TestHistoryReproducesAScriptedLife plays a VM's life, waits past the
// Events' TTL, and requires kubectl vmobs history to tell it.
func TestHistoryReproducesAScriptedLife(t *testing.T) {
	w := start(t)
	ns, a, b := "life", "node-life-a", "node-life-b"
	w.must(w.sim.EnsureNamespace(w.ctx, ns))
	w.must(w.sim.AddNode(w.ctx, a))
	w.must(w.sim.AddNode(w.ctx, b))
	truth := w.play(ns, script(a, b), -1)

	before := w.history(ns)
	time.Sleep(eventTTL + 15*time.Second)
	var events corev1.EventList
	w.must(w.k8s.List(w.ctx, &events, client.InNamespace(ns)))
	t.Logf("%d Events left in %s after the TTL", len(events.Items), ns)
	after := w.history(ns)
	if !slices.EqualFunc(before.Status.History.Entries, after.Status.History.Entries, func(x, y v1alpha1.HistoryEntry) bool { return x.Time.Equal(&y.Time) && x.Event == y.Event }) {
		t.Errorf("the history changed while nothing happened")
	}
	w.checkAgainst(ns, truth, 2, v1alpha1.LayerNode)

	// The timeline a person reads says the same.
	var out, errOut bytes.Buffer
	kubectlvmobs.Run(w.ctx, []string{"history", "--kubeconfig", w.kubeconfig, "-n", ns, vm}, &out, &errOut)
	if !strings.Contains(out.String(), "restarts 2") || !strings.Contains(out.String(), "(node: Failed)") || !strings.Contains(out.String(), "older entries dropped") {
		t.Errorf("kubectl vmobs history:\n%s%s", out.String(), errOut.String())
	}
	if testing.Verbose() {
		fmt.Fprint(os.Stderr, out.String())
	}

	// vmobs analyze on a dump of the same objects tells the same timeline:
	// it carries the stored history forward and adds nothing to it.
	got := w.analyze(ns)
	if !slices.EqualFunc(got.Entries, after.Status.History.Entries, func(x, y v1alpha1.HistoryEntry) bool {
		return x.Time.Equal(&y.Time) && x.Event == y.Event && x.Layer == y.Layer && x.From == y.From && x.To == y.To
	}) {
		t.Errorf("vmobs analyze's history differs from the cluster's:\n got %v\nwant %v", history.Outline(got), history.Outline(after.Status.History))
	}
}

// analyze runs the analyzer on the namespace's objects and the nodes, as a
// must-gather holds them, and returns the VM's history.
func (w *world) analyze(ns string) *v1alpha1.History {
	var (
		vms   kubevirtv1.VirtualMachineList
		vmis  kubevirtv1.VirtualMachineInstanceList
		vmims kubevirtv1.VirtualMachineInstanceMigrationList
		pods  corev1.PodList
		nodes corev1.NodeList
		obs   v1alpha1.VMObservationList
	)
	for _, l := range []client.ObjectList{&vms, &vmis, &vmims, &pods, &obs} {
		w.must(w.k8s.List(w.ctx, l, client.InNamespace(ns)))
	}
	w.must(w.k8s.List(w.ctx, &nodes))
	objs := analyze.Objects{
		VMs:          pointers(vms.Items),
		VMIs:         pointers(vmis.Items),
		Migrations:   pointers(vmims.Items),
		Pods:         pointers(pods.Items),
		Nodes:        pointers(nodes.Items),
		Observations: pointers(obs.Items),
	}
	for _, o := range analyze.Analyze(objs, time.Now(), policy()) {
		if o.Namespace == ns && o.Name == vm && o.Status.History != nil {
			return o.Status.History
		}
	}
	w.t.Fatalf("vmobs analyze gave no history for %s/%s", ns, vm)
	return nil
}

// pointers points at each item of a list, as analyze.Objects holds them.
func pointers[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

// TestHistoryAcrossAManagerRestart plays the same life with the manager
// stopped during the live migration: the events of the downtime are
// recorded once it is back, from the objects' timestamps, and nothing is
// recorded twice.
func TestHistoryAcrossAManagerRestart(t *testing.T) {
	w := start(t)
	ns, a, b := "restart", "node-restart-a", "node-restart-b"
	w.must(w.sim.EnsureNamespace(w.ctx, ns))
	w.must(w.sim.AddNode(w.ctx, a))
	w.must(w.sim.AddNode(w.ctx, b))
	steps := script(a, b)
	// While the manager is down the migration cannot be waited on through
	// the VMObservation: play it by the simulator alone.
	steps[3].act = func(w *world, ns string) {
		_, err := w.sim.Migrate(w.ctx, ns, vm, b, simulator.MigrationSucceeds)
		w.must(err)
	}
	truth := w.play(ns, steps, 3)
	w.checkAgainst(ns, truth, 2, v1alpha1.LayerNode)
}
