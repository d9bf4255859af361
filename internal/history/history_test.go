package history

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/verdict"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func at(d time.Duration) metav1.Time { return metav1.NewTime(t0.Add(d)) }

// vmi is a VMI created at t0 and Running from t0+10s on node-a.
func vmi(uid string, mods ...func(*kubevirtv1.VirtualMachineInstance)) *kubevirtv1.VirtualMachineInstance {
	v := &kubevirtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vm1", UID: types.UID(uid), CreationTimestamp: at(0)},
		Status: kubevirtv1.VirtualMachineInstanceStatus{
			Phase: kubevirtv1.Running, NodeName: "node-a",
			PhaseTransitionTimestamps: []kubevirtv1.VirtualMachineInstancePhaseTransitionTimestamp{
				{Phase: kubevirtv1.Pending, PhaseTransitionTimestamp: at(0)},
				{Phase: kubevirtv1.Running, PhaseTransitionTimestamp: at(10 * time.Second)},
			},
		},
	}
	for _, m := range mods {
		m(v)
	}
	return v
}

// status is an engine status with every layer at v, the layers' transition
// time tr.
func status(uid string, v v1alpha1.Verdict, reason string, tr metav1.Time) *v1alpha1.VMObservationStatus {
	l := v1alpha1.LayerStatus{Verdict: v, Reason: reason, Message: "m " + reason, LastTransitionTime: &tr}
	st := &v1alpha1.VMObservationStatus{Verdict: v, Reason: reason, Layers: &v1alpha1.Layers{ControlPlane: l, Node: l, Guest: l}}
	if uid != "" {
		st.VMI = &v1alpha1.VMISummary{Name: "vm1", UID: types.UID(uid), Phase: "Running"}
	}
	return st
}

// step evaluates the history after prev, as the controller does at a write,
// and returns the status written.
func step(prev *v1alpha1.VMObservationStatus, next *v1alpha1.VMObservationStatus, in verdict.Input, now time.Time) (*v1alpha1.VMObservationStatus, Record) {
	in.Now = now
	next = next.DeepCopy()
	rec := Apply(prev, next, in)
	return next, rec
}

func TestHistory(t *testing.T) {
	running := status("a", v1alpha1.VerdictHealthy, "Running", at(10*time.Second))

	t.Run("a new VMObservation records the first verdicts and the VMI's start", func(t *testing.T) {
		got, rec := step(nil, running, verdict.Input{VMI: vmi("a")}, t0.Add(time.Minute))
		want := []string{
			"VerdictChanged/overall:Unknown>Healthy", "VerdictChanged/controlPlane:Unknown>Healthy",
			"VerdictChanged/node:Unknown>Healthy", "VerdictChanged/guest:Unknown>Healthy", "VMIStarted/controlPlane",
		}
		if g := Outline(got.History); strings.Join(g, " ") != strings.Join(want, " ") {
			t.Errorf("entries %v\nwant    %v", g, want)
		}
		if len(rec.New) != len(want) {
			t.Errorf("%d new entries, want %d", len(rec.New), len(want))
		}
		if got.VM == nil || !got.VM.Started.Equal(&metav1.Time{Time: t0.Add(10 * time.Second)}) || got.VM.Restarts != 0 {
			t.Errorf("vm %+v, want started at t0+10s and no restart", got.VM)
		}
	})

	t.Run("the same world again adds nothing (another reconcile, a restarted controller)", func(t *testing.T) {
		first, _ := step(nil, running, verdict.Input{VMI: vmi("a")}, t0.Add(time.Minute))
		again, rec := step(first, running, verdict.Input{VMI: vmi("a")}, t0.Add(time.Hour))
		if len(rec.New) != 0 || !equality.Semantic.DeepEqual(first.History, again.History) || !equality.Semantic.DeepEqual(first.VM, again.VM) {
			t.Errorf("history changed with nothing new: %v -> %v (new %v)", Outline(first.History), Outline(again.History), rec.New)
		}
	})

	t.Run("a VMI that Succeeded and was replaced is a restart caused by the guest", func(t *testing.T) {
		first, _ := step(nil, running, verdict.Input{VMI: vmi("a")}, t0.Add(time.Minute))
		done := vmi("a", func(v *kubevirtv1.VirtualMachineInstance) {
			v.Status.Phase = kubevirtv1.Succeeded
			v.Status.PhaseTransitionTimestamps = append(v.Status.PhaseTransitionTimestamps,
				kubevirtv1.VirtualMachineInstancePhaseTransitionTimestamp{Phase: kubevirtv1.Succeeded, PhaseTransitionTimestamp: at(2 * time.Minute)})
		})
		stopped := status("a", v1alpha1.VerdictSuspended, "VMISucceeded", at(2*time.Minute))
		stopped.VMI.Phase = "Succeeded"
		second, _ := step(first, stopped, verdict.Input{VMI: done}, t0.Add(2*time.Minute))
		if e := second.History.Entries; e[len(e)-len(first.History.Entries)-1].Event != v1alpha1.EventVMIFinished {
			t.Errorf("entries %v: the VMI's end is not recorded below the transitions it explains", Outline(second.History))
		}
		next := vmi("b", func(v *kubevirtv1.VirtualMachineInstance) {
			v.CreationTimestamp = at(3 * time.Minute)
			v.Status.PhaseTransitionTimestamps[1].PhaseTransitionTimestamp = at(3*time.Minute + 10*time.Second)
		})
		third, rec := step(second, status("b", v1alpha1.VerdictHealthy, "Running", at(3*time.Minute+10*time.Second)), verdict.Input{VMI: next}, t0.Add(4*time.Minute))
		lr := third.VM.LastRestart
		if third.VM.Restarts != 1 || lr == nil || lr.OldUID != "a" || lr.Phase != "Succeeded" || lr.Layer != v1alpha1.LayerGuest || !lr.Time.Equal(&metav1.Time{Time: t0.Add(3 * time.Minute)}) {
			t.Errorf("vm %+v, last restart %+v: want one restart at t0+3m of VMI a, Succeeded, caused by the guest", third.VM, lr)
		}
		found := false
		for _, e := range rec.New {
			found = found || (e.Event == v1alpha1.EventVMIReplaced && strings.Contains(e.Message, "a Succeeded") && e.Layer == v1alpha1.LayerGuest)
		}
		if !found {
			t.Errorf("new entries %v lack VMIReplaced of a", rec.New)
		}
		// Life, which the write decision reads, says the same as Apply.
		if l := Life(second, status("b", v1alpha1.VerdictHealthy, "Running", at(3*time.Minute+10*time.Second)), verdict.Input{VMI: next, Now: t0.Add(4 * time.Minute)}); !equality.Semantic.DeepEqual(l, third.VM) {
			t.Errorf("Life %+v, Apply %+v", l, third.VM)
		}
		// The restart is counted once, however often the same world is seen.
		fourth, _ := step(third, status("b", v1alpha1.VerdictHealthy, "Running", at(3*time.Minute+10*time.Second)), verdict.Input{VMI: next}, t0.Add(5*time.Minute))
		if fourth.VM.Restarts != 1 {
			t.Errorf("restarts %d after a second look, want 1", fourth.VM.Restarts)
		}
	})

	t.Run("a replacement seen apart from the VMI's end is still a restart; a stop and start is not", func(t *testing.T) {
		failed := status("a", v1alpha1.VerdictFailed, "VMIFailed", at(time.Minute))
		failed.VMI.Phase = "Failed"
		gap := &v1alpha1.VMObservationStatus{Verdict: v1alpha1.VerdictProgressing, Layers: running.Layers}
		between, _ := step(failed, gap, verdict.Input{}, t0.Add(2*time.Minute))
		if between.VM == nil || between.VM.EndedVMI == nil || between.VM.EndedVMI.UID != "a" {
			t.Fatalf("vm %+v: the ended VMI is not kept while the VM has none", between.VM)
		}
		next := vmi("b", func(v *kubevirtv1.VirtualMachineInstance) { v.CreationTimestamp = at(3 * time.Minute) })
		after, _ := step(between, status("b", v1alpha1.VerdictHealthy, "Running", at(3*time.Minute)), verdict.Input{VMI: next}, t0.Add(4*time.Minute))
		if after.VM.Restarts != 1 || after.VM.LastRestart.Layer != v1alpha1.LayerNode || after.VM.EndedVMI != nil {
			t.Errorf("vm %+v: want one restart caused by the node, the ended VMI dropped", after.VM)
		}

		halted := &kubevirtv1.VirtualMachine{Spec: kubevirtv1.VirtualMachineSpec{RunStrategy: ptr.To(kubevirtv1.RunStrategyHalted)}}
		stopped, _ := step(failed, gap, verdict.Input{VM: halted}, t0.Add(2*time.Minute))
		if stopped.VM != nil && stopped.VM.EndedVMI != nil {
			t.Errorf("a VM stopped on purpose keeps its ended VMI: %+v", stopped.VM)
		}
		started, _ := step(stopped, status("b", v1alpha1.VerdictHealthy, "Running", at(3*time.Minute)), verdict.Input{VMI: next}, t0.Add(4*time.Minute))
		if started.VM.Restarts != 0 {
			t.Errorf("a stop and a start counted as a restart: %+v", started.VM)
		}
	})

	t.Run("life events of migrations, launcher pods and the node", func(t *testing.T) {
		mig := func(name, uid string, phase kubevirtv1.VirtualMachineInstanceMigrationPhase, created, ended time.Duration) *kubevirtv1.VirtualMachineInstanceMigration {
			return &kubevirtv1.VirtualMachineInstanceMigration{
				ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(uid), CreationTimestamp: at(created)},
				Status: kubevirtv1.VirtualMachineInstanceMigrationStatus{Phase: phase,
					PhaseTransitionTimestamps: []kubevirtv1.VirtualMachineInstanceMigrationPhaseTransitionTimestamp{{Phase: phase, PhaseTransitionTimestamp: at(ended)}}},
			}
		}
		v := vmi("a", func(v *kubevirtv1.VirtualMachineInstance) {
			v.Status.MigrationState = &kubevirtv1.VirtualMachineInstanceMigrationState{MigrationUID: "m3", Failed: true,
				FailureReason: "target pod gone", AbortStatus: kubevirtv1.MigrationAbortSucceeded}
		})
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "virt-launcher-vm1-x"}, Status: corev1.PodStatus{
			Reason: "Evicted", Conditions: []corev1.PodCondition{{Type: corev1.PodReady, LastTransitionTime: at(50 * time.Minute)}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "compute", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", FinishedAt: at(40 * time.Minute)}}}},
		}}
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Reason: "NodeStatusUnknown", LastTransitionTime: at(55 * time.Minute)}}}}
		in := verdict.Input{VMI: v, Pods: []*corev1.Pod{pod}, Nodes: map[string]*corev1.Node{"node-a": node},
			Migrations: []*kubevirtv1.VirtualMachineInstanceMigration{
				mig("m1", "m1", kubevirtv1.MigrationSucceeded, 20*time.Minute, 21*time.Minute),
				mig("m2", "m2", kubevirtv1.MigrationFailed, 25*time.Minute, 26*time.Minute),
				mig("m3", "m3", kubevirtv1.MigrationFailed, 30*time.Minute, 31*time.Minute),
			}}
		seen := Observe(in, running)
		var got []string
		for _, e := range seen.Events {
			got = append(got, fmt.Sprintf("%s@%s", e.Event, e.Time.Sub(t0)))
		}
		want := "VMIStarted@10s MigrationStarted@20m0s MigrationSucceeded@21m0s MigrationStarted@25m0s MigrationFailed@26m0s " +
			"MigrationStarted@30m0s MigrationAborted@31m0s LauncherOOMKilled@40m0s LauncherEvicted@50m0s NodeNotReady@55m0s"
		if strings.Join(got, " ") != want {
			t.Errorf("events %s\nwant   %s", strings.Join(got, " "), want)
		}
		// A node Ready since before the VMI says nothing of it.
		node.Status.Conditions[0] = corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: at(-time.Hour)}
		for _, e := range Observe(in, running).Events {
			if e.Event == v1alpha1.EventNodeReady {
				t.Errorf("a node Ready before the VMI was created is recorded: %+v", e)
			}
		}
	})
}

// TestBounds: the ring keeps the newest entries up to its limit, counts the
// dropped ones, never brings a dropped one back, and stays within MaxBytes
// whatever the entries hold.
func TestBounds(t *testing.T) {
	// One event a minute, then two in each minute: the ring's oldest kept
	// entry may share its second with a dropped one, which must not come
	// back either.
	for _, perMinute := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d a minute", perMinute), func(t *testing.T) { bounds(t, perMinute) })
	}
}

func bounds(t *testing.T, perMinute int) {
	long := strings.Repeat("ü", 400)
	var seen Seen
	for i := range 100 {
		seen.Events = append(seen.Events, v1alpha1.HistoryEntry{Time: at(time.Duration(i/perMinute) * time.Minute), Event: v1alpha1.EventLauncherOOMKilled,
			Layer: v1alpha1.LayerNode, Reason: long, Message: long,
			Object: "Pod/" + strings.Repeat("p", 250) + fmt.Sprintf("%03d", i), Field: strings.Repeat("f", 200) + fmt.Sprint(i)})
	}
	for _, limit := range []int32{1, 3, 20, 100} {
		rec := Next(Input{Seen: seen, Now: t0.Add(2 * time.Hour), Limit: limit})
		raw, err := json.Marshal(rec.History)
		if err != nil {
			t.Fatal(err)
		}
		n := int32(len(rec.History.Entries))
		if len(raw) > MaxBytes || n > limit || n == 0 || int64(n)+rec.History.Dropped != 100 {
			t.Errorf("limit %d: %d entries, %d dropped, %d bytes; want at most %d entries and %d bytes, none lost uncounted",
				limit, n, rec.History.Dropped, len(raw), limit, MaxBytes)
		}
		if newest := rec.History.Entries[0].Time; !newest.Equal(&metav1.Time{Time: t0.Add(time.Duration(99/perMinute) * time.Minute)}) {
			t.Errorf("limit %d: newest entry at %s, want the newest event", limit, newest)
		}
		for _, e := range rec.History.Entries {
			if len(e.Reason) > maxText || len(e.Message) > maxText || !strings.HasSuffix(e.Message, "…") {
				t.Errorf("entry texts not cut: reason %d bytes, message %d bytes", len(e.Reason), len(e.Message))
			}
		}
		// The events still visible on the objects do not come back.
		prev := &v1alpha1.VMObservationStatus{History: rec.History}
		again := Next(Input{Previous: prev, Seen: seen, Now: t0.Add(3 * time.Hour), Limit: limit})
		if len(again.New) != 0 || again.History.Dropped != rec.History.Dropped {
			t.Errorf("limit %d: %d dropped events came back, dropped %d → %d", limit, len(again.New), rec.History.Dropped, again.History.Dropped)
		}
	}
}

// TestTypicalHistoryFits: a realistic history of 20 entries fits whole.
func TestTypicalHistoryFits(t *testing.T) {
	// A realistic history of 20 entries fits whole: a VM whose node goes
	// NotReady, with the transitions that follow, over and over.
	var typical Seen
	node, ready := "Node/worker-12.example.com", "status.conditions[Ready]"
	for i := range 5 {
		d := time.Duration(i) * time.Hour
		typical.Events = append(typical.Events,
			v1alpha1.HistoryEntry{Time: at(d), Event: v1alpha1.EventNodeNotReady, Layer: v1alpha1.LayerNode, Reason: "NodeStatusUnknown",
				Object: node, Field: ready},
			v1alpha1.HistoryEntry{Time: at(d + time.Minute), Event: v1alpha1.EventVerdictChanged, Layer: v1alpha1.LayerNode, From: "Healthy", To: "Unknown",
				Reason: "NodeNotReady", Message: strings.Repeat("x", 200), Object: node, Field: ready},
			v1alpha1.HistoryEntry{Time: at(d + time.Minute), Event: v1alpha1.EventVerdictChanged, Layer: v1alpha1.LayerOverall, From: "Healthy", To: "Unknown",
				Reason: "NodeNotReady"},
			v1alpha1.HistoryEntry{Time: at(d + 2*time.Minute), Event: v1alpha1.EventMigrationFailed, Layer: v1alpha1.LayerControlPlane,
				Reason: "target virt-launcher pod failed to start", Object: "VirtualMachineInstanceMigration/kubevirt-evacuation-x2vqd", Field: "status.phase"},
		)
	}
	rec := Next(Input{Seen: typical, Now: t0.Add(time.Hour)})
	raw, _ := json.Marshal(rec.History)
	t.Logf("20 typical entries: %d bytes", len(raw))
	if len(rec.History.Entries) != 20 || rec.History.Dropped != 0 {
		t.Errorf("20 typical entries: kept %d, dropped %d; want all 20 within %d bytes (%d)", len(rec.History.Entries), rec.History.Dropped, MaxBytes, len(raw))
	}
}

// TestLogKeys: the log line's keys are the documented schema, in order,
// with a value for each.
func TestLogKeys(t *testing.T) {
	e := v1alpha1.HistoryEntry{Time: at(0), Event: v1alpha1.EventVerdictChanged, Layer: "node", From: "Healthy", To: "Unknown",
		Object: "Node/node-a", Field: "status.conditions[Ready]"}
	kv := LogKeys(&e)
	if len(kv) != 2*len(LogKeyNames) {
		t.Fatalf("%d values for %d keys", len(kv), len(LogKeyNames))
	}
	for i, k := range LogKeyNames {
		if kv[2*i] != k {
			t.Errorf("key %d is %v, want %s", i, kv[2*i], k)
		}
	}
	if kv[1] != "2026-11-30T12:00:00Z" || kv[3] != "VerdictChanged" || kv[15] != "Node/node-a" {
		t.Errorf("values %v", kv)
	}
}
