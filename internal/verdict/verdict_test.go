package verdict

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/membership"
	"github.com/vmobs/vmobs/internal/storagefacts"
)

type situation struct {
	name string
	in   Input
	// "Verdict/Reason"; an empty layer is not checked.
	overall, cp, node, guest, storage string
	check                             func(t *testing.T, r Result)
}

func vr(l v1alpha1.LayerStatus) string { return string(l.Verdict) + "/" + l.Reason }

func run(t *testing.T, cases []situation) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Evaluate(c.in)
			st := r.Status
			if got := string(st.Verdict) + "/" + st.Reason; c.overall != "" && got != c.overall {
				t.Errorf("overall = %s, want %s\nmessage: %s", got, c.overall, st.Message)
			}
			for _, l := range []struct {
				name, want string
				got        v1alpha1.LayerStatus
			}{
				{"controlPlane", c.cp, st.Layers.ControlPlane},
				{"node", c.node, st.Layers.Node},
				{"guest", c.guest, st.Layers.Guest},
				{"storage", c.storage, st.Layers.Storage},
			} {
				if l.want != "" && vr(l.got) != l.want {
					t.Errorf("%s = %s, want %s\nmessage: %s", l.name, vr(l.got), l.want, l.got.Message)
				}
			}
			checkInvariants(t, c.in, r)
			if c.check != nil {
				c.check(t, r)
			}
		})
	}
}

// checkInvariants holds for every result.
func checkInvariants(t *testing.T, in Input, r Result) {
	t.Helper()
	st := r.Status
	if !validVerdict(st.Verdict) {
		t.Errorf("invalid overall verdict %q", st.Verdict)
	}
	if len(st.Message) > maxMessage {
		t.Errorf("message has %d bytes", len(st.Message))
	}
	if st.Layers == nil {
		t.Fatal("no layers")
	}
	worst := v1alpha1.VerdictHealthy
	allNoBasis := true
	for _, l := range st.Layers.All() {
		allNoBasis = allNoBasis && l.Reason == v1alpha1.ReasonNotInInput
		if !validVerdict(l.Verdict) || l.Reason == "" {
			t.Errorf("invalid layer %s/%s", l.Verdict, l.Reason)
		}
		if len(l.Evidence) > maxEvidence {
			t.Errorf("%d evidence items", len(l.Evidence))
		}
		if len(l.Message) > maxMessage {
			t.Errorf("layer message has %d bytes", len(l.Message))
		}
		if l.LastTransitionTime == nil {
			t.Errorf("layer %s has no lastTransitionTime", l.Reason)
		}
		// A layer with no basis in the input does not count.
		if l.Reason != v1alpha1.ReasonNotInInput && l.Verdict.Severity() > worst.Severity() {
			worst = l.Verdict
		}
		for _, ts := range []*metav1.Time{l.LastTransitionTime, l.EvidenceTime, l.StaleAt} {
			if ts != nil && (ts.Nanosecond() != 0 || ts.Location() != time.UTC) {
				t.Errorf("time %v not truncated to UTC seconds", ts)
			}
		}
	}
	if st.Verdict != worst && !allNoBasis {
		t.Errorf("overall %s is not the worst layer %s", st.Verdict, worst)
	}
	if len(st.Conditions) != 7 {
		t.Fatalf("%d conditions", len(st.Conditions))
	}
	for i, typ := range []string{v1alpha1.ConditionReady, v1alpha1.ConditionReconciling, v1alpha1.ConditionStalled,
		v1alpha1.ConditionControlPlaneHealthy, v1alpha1.ConditionNodeHealthy, v1alpha1.ConditionGuestHealthy,
		v1alpha1.ConditionStorageHealthy} {
		c := st.Conditions[i]
		if c.Type != typ || c.Reason == "" || c.ObservedGeneration != 0 {
			t.Errorf("condition %d = %+v, want type %s", i, c, typ)
		}
	}
	if r.NextDeadline < 0 {
		t.Errorf("negative NextDeadline %v", r.NextDeadline)
	}
	// The Warning Events UnreadEvents names change nothing: the
	// controller's Event store forgets them.
	if unread := UnreadEvents(in.Pods, in.Storage); len(unread) > 0 {
		forgot := in
		forgot.Storage = forgetEvents(in.Storage, unread)
		r2 := Evaluate(forgot)
		if !apiequality.Semantic.DeepEqual(r2.Status, r.Status) {
			t.Errorf("without the events no rule reads again (%+v), the status differs:\n%+v\nwant\n%+v", unread, r2.Status, st)
		}
		if !sameDeadlines(r2.Deadlines, r.Deadlines) {
			t.Errorf("without the events no rule reads again (%+v), the deadlines differ: %+v, want %+v", unread, r2.Deadlines, r.Deadlines)
		}
	}
	// A stored deadline is one still to come: a status must never look
	// stale while its verdict is current (docs/verdicts.md, Freshness).
	if !in.Policy.RenewingEvidence {
		for _, l := range st.Layers.All() {
			if l.StaleAt != nil && !l.StaleAt.Time.After(in.Now) {
				t.Errorf("layer %s: staleAt %v is not after now %v", l.Reason, l.StaleAt, in.Now)
			}
		}
	}
}

// sameDeadlines says a and b are the same deadlines, their times equal
// instants.
func sameDeadlines(a, b Deadlines) bool {
	if !a.RenewedAt.Equal(b.RenewedAt) {
		return false
	}
	a.RenewedAt, b.RenewedAt = time.Time{}, time.Time{}
	return a == b
}

// forgetEvents is a copy of s without the events unread names.
func forgetEvents(s *storagefacts.Facts, unread []storagefacts.Unread) *storagefacts.Facts {
	keep := func(evs []storagefacts.Event) []storagefacts.Event {
		return slices.DeleteFunc(slices.Clone(evs), func(e storagefacts.Event) bool {
			return slices.ContainsFunc(unread, func(u storagefacts.Unread) bool { return u.Covers(e) })
		})
	}
	out := *s
	out.Events = keep(s.Events)
	out.Volumes = slices.Clone(s.Volumes)
	for i := range out.Volumes {
		v := &out.Volumes[i]
		if v.PVC != nil {
			p := *v.PVC
			p.Events = keep(p.Events)
			v.PVC = &p
		}
		if v.DV != nil {
			d := *v.DV
			d.Events = keep(d.Events)
			v.DV = &d
		}
	}
	return &out
}

func validVerdict(v v1alpha1.Verdict) bool {
	switch v {
	case v1alpha1.VerdictHealthy, v1alpha1.VerdictProgressing, v1alpha1.VerdictSuspended,
		v1alpha1.VerdictDegraded, v1alpha1.VerdictFailed, v1alpha1.VerdictUnknown:
		return true
	}
	return false
}

func cond(st v1alpha1.VMObservationStatus, typ string) metav1.Condition {
	for _, c := range st.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return metav1.Condition{}
}

func wantCond(t *testing.T, st v1alpha1.VMObservationStatus, typ string, s metav1.ConditionStatus) {
	t.Helper()
	if c := cond(st, typ); c.Status != s {
		t.Errorf("%s = %s (%s), want %s", typ, c.Status, c.Reason, s)
	}
}

func roles(st v1alpha1.VMObservationStatus) string {
	var b []string
	for _, p := range st.LauncherPods {
		b = append(b, p.Name+"="+string(p.Role))
	}
	return strings.Join(b, ",")
}

// wantDeadline checks the time to the next deadline.
func wantDeadline(d time.Duration, what string) func(*testing.T, Result) {
	return func(t *testing.T, r Result) {
		t.Helper()
		if r.NextDeadline != d {
			t.Errorf("NextDeadline %v, want %v (%s)", r.NextDeadline, d, what)
		}
	}
}

const (
	layerCP = iota
	layerNode
	layerGuest
	layerStorage
)

// layerAt is the layer of the result in v1alpha1.LayerNames order.
func layerAt(r Result, layer int) v1alpha1.LayerStatus {
	return *r.Status.Layers.Get(v1alpha1.LayerNames[layer])
}

// wantNote checks that a layer's message carries a note's reason.
func wantNote(layer int, reason string) func(*testing.T, Result) {
	return func(t *testing.T, r Result) {
		t.Helper()
		l := layerAt(r, layer)
		if !strings.Contains(l.Message, reason) {
			t.Errorf("layer message %q lacks the note %s", l.Message, reason)
		}
	}
}

// wantEvidence checks that a layer cites field with value.
func wantEvidence(t *testing.T, l v1alpha1.LayerStatus, field, value string) {
	t.Helper()
	for _, e := range l.Evidence {
		if e.Field == field {
			if e.Value != value {
				t.Errorf("layer %s cites %s = %q, want %q", l.Reason, field, e.Value, value)
			}
			return
		}
	}
	t.Errorf("layer %s does not cite %s", l.Reason, field)
}

func hasEvidence(l v1alpha1.LayerStatus, kind, name, fieldPrefix string) bool {
	for _, e := range l.Evidence {
		if e.Kind == kind && e.Name == name && strings.HasPrefix(e.Field, fieldPrefix) {
			return true
		}
	}
	return false
}

func TestHealthyAndDeclaredStates(t *testing.T) { run(t, healthySituations()) }

func healthySituations() []situation {
	return []situation{
		{
			name: "healthy running VM with agent", in: input(),
			overall: "Healthy/Running", cp: "Healthy/Running", node: "Healthy/LauncherRunning", guest: "Healthy/GuestAgentConnected",
			check: func(t *testing.T, r Result) {
				st := r.Status
				wantCond(t, st, v1alpha1.ConditionReady, metav1.ConditionTrue)
				wantCond(t, st, v1alpha1.ConditionReconciling, metav1.ConditionFalse)
				wantCond(t, st, v1alpha1.ConditionStalled, metav1.ConditionFalse)
				// The heartbeat (47 s old) goes stale at +5m: the nearest deadline.
				if want := 5*time.Minute - 47*time.Second; r.NextDeadline != want {
					t.Errorf("NextDeadline = %v, want %v", r.NextDeadline, want)
				}
				// ...but the heartbeat renews every minute: its deadline
				// and its time are not stored, only its state.
				hb := now.Add(-47 * time.Second)
				for _, l := range []v1alpha1.LayerStatus{st.Layers.Node, st.Layers.Guest} {
					if l.StaleAt != nil || l.EvidenceTime == nil || !l.EvidenceTime.Time.Before(hb) {
						t.Errorf("%s: staleAt/evidenceTime = %v/%v, want none/older than the heartbeat", l.Reason, l.StaleAt, l.EvidenceTime)
					}
					wantEvidence(t, l, hbField, heartbeatFresh)
				}
				if roles(st) != podName+"=Active" {
					t.Errorf("roles %s", roles(st))
				}
				if st.Guest == nil || !st.Guest.AgentConnected || !st.Guest.AgentSupported || st.Guest.OSPrettyName != "Fedora Linux 41 (Cloud Edition)" {
					t.Errorf("guest summary %+v", st.Guest)
				}
				if st.LiveMigratable == nil || st.LiveMigratable.Status != metav1.ConditionTrue || len(st.LiveMigratable.Reasons) != 0 {
					t.Errorf("liveMigratable %+v", st.LiveMigratable)
				}
				if st.VMI == nil || st.VMI.Phase != "Running" || st.VMI.NodeName != nodeA || !st.VMI.PhaseSince.Time.Equal(now.Add(-2*time.Hour+25*time.Second)) {
					t.Errorf("vmi summary %+v", st.VMI)
				}
				if len(st.Interfaces) != 2 {
					t.Fatalf("interfaces %+v", st.Interfaces)
				}
				d, x := st.Interfaces[0], st.Interfaces[1]
				if d.Name != "default" || strings.Join(d.PodIPs, ",") != "10.244.1.17,fd10:244::11" ||
					strings.Join(d.InfoSources, ",") != "domain,guest-agent" {
					t.Errorf("default interface %+v", d)
				}
				if x.Name != "ext" || strings.Join(x.PodIPs, ",") != "192.168.100.10" ||
					strings.Join(x.InfoSources, ",") != "domain,guest-agent,multus-status" {
					t.Errorf("ext interface %+v", x)
				}
				// No previous status: lastTransitionTime comes from the evidence.
				if cp := st.Layers.ControlPlane; !cp.LastTransitionTime.Time.Equal(now.Add(-2*time.Hour + 25*time.Second)) {
					t.Errorf("control plane lastTransitionTime %v", cp.LastTransitionTime)
				}
			},
		},
		{
			name: "VM Halted without VMI",
			in: input(func(in *Input) {
				in.VM = vm(withRunStrategy(kubevirtv1.RunStrategyHalted), vmStopped())
				in.VMI, in.Pods = nil, nil
			}),
			overall: "Suspended/Stopped", cp: "Suspended/Stopped", node: "Suspended/Stopped", guest: "Suspended/Stopped",
			check: func(t *testing.T, r Result) {
				wantCond(t, r.Status, v1alpha1.ConditionReady, metav1.ConditionTrue)
				if r.NextDeadline != 0 || r.Status.VMI != nil || r.Status.Guest != nil {
					t.Errorf("deadline %v vmi %+v", r.NextDeadline, r.Status.VMI)
				}
			},
		},
		{
			name: "VM Manual and stopped",
			in: input(func(in *Input) {
				in.VM = vm(withRunStrategy(kubevirtv1.RunStrategyManual), vmStopped())
				in.VMI, in.Pods = nil, nil
			}),
			overall: "Suspended/Stopped", cp: "Suspended/Stopped",
		},
		{
			name: "VM with spec.running false",
			in: input(func(in *Input) {
				in.VM = vm(vmStopped(), func(v *kubevirtv1.VirtualMachine) { v.Spec.RunStrategy, v.Spec.Running = nil, ptr(false) })
				in.VMI, in.Pods = nil, nil
			}),
			overall: "Suspended/Stopped",
		},
		{
			name: "VMI Succeeded, Manual",
			in: input(func(in *Input) {
				in.VM = vm(withRunStrategy(kubevirtv1.RunStrategyManual))
				in.VMI = runningVMI(vmiPhase(kubevirtv1.Succeeded, -5*time.Minute), agentGone())
				in.Pods = []*corev1.Pod{launcherPod(podPhase(corev1.PodSucceeded))}
			}),
			overall: "Suspended/VMISucceeded", cp: "Suspended/VMISucceeded", node: "Suspended/VMISucceeded", guest: "Suspended/VMISucceeded",
			check: func(t *testing.T, r Result) {
				wantCond(t, r.Status, v1alpha1.ConditionReady, metav1.ConditionTrue)
				if roles(r.Status) != podName+"=Stale" {
					t.Errorf("roles %s", roles(r.Status))
				}
			},
		},
		{
			name: "VMI Succeeded, Always restarts it",
			in: input(func(in *Input) {
				in.VMI = runningVMI(vmiPhase(kubevirtv1.Succeeded, -5*time.Second))
				in.Pods = []*corev1.Pod{launcherPod(podPhase(corev1.PodSucceeded))}
			}),
			overall: "Progressing/Restarting", cp: "Progressing/Restarting",
		},
		{
			name: "VMI Failed after a forced stop of a Halted VM",
			in: input(func(in *Input) {
				in.VM = vm(withRunStrategy(kubevirtv1.RunStrategyHalted))
				in.VMI = runningVMI(vmiPhase(kubevirtv1.Failed, -time.Minute))
				in.Pods = []*corev1.Pod{launcherPod(podPhase(corev1.PodFailed))}
			}),
			overall: "Suspended/Stopped", cp: "Suspended/Stopped", node: "Suspended/Stopped", guest: "Suspended/Stopped",
		},
		{
			name: "VM Halted while the VMI still runs",
			in: input(func(in *Input) {
				in.VM = vm(withRunStrategy(kubevirtv1.RunStrategyHalted))
			}),
			overall: "Progressing/Stopping", cp: "Progressing/Stopping",
			check: func(t *testing.T, r Result) {
				wantCond(t, r.Status, v1alpha1.ConditionReconciling, metav1.ConditionTrue)
			},
		},
		{
			name:    "paused by user",
			in:      input(pausedByUserIn),
			overall: "Suspended/PausedByUser", cp: "Suspended/PausedByUser", node: "Healthy/LauncherRunning", guest: "Suspended/PausedByUser",
			check: func(t *testing.T, r Result) {
				wantCond(t, r.Status, v1alpha1.ConditionReady, metav1.ConditionTrue)
				wantCond(t, r.Status, v1alpha1.ConditionGuestHealthy, metav1.ConditionTrue)
			},
		},
		{
			name:    "paused on I/O error",
			in:      input(func(in *Input) { in.VMI = runningVMI(paused(pausedIOError), agentGone()) }),
			overall: "Degraded/PausedIOError", cp: "Healthy/Running", node: "Healthy/LauncherRunning", guest: "Unknown/GuestPaused", storage: "Degraded/PausedIOError",
			check: func(t *testing.T, r Result) {
				wantCond(t, r.Status, v1alpha1.ConditionReady, metav1.ConditionFalse)
				wantCond(t, r.Status, v1alpha1.ConditionNodeHealthy, metav1.ConditionTrue)
				wantCond(t, r.Status, v1alpha1.ConditionStorageHealthy, metav1.ConditionFalse)
				wantCond(t, r.Status, v1alpha1.ConditionGuestHealthy, metav1.ConditionUnknown)
			},
		},
		{
			name:    "paused by the migration monitor",
			in:      input(func(in *Input) { in.VMI = runningVMI(paused(pausedByMigrationMonitor)) }),
			overall: "Progressing/GuestPaused", guest: "Progressing/GuestPaused",
		},
	}
}

func TestSchedulingAndStart(t *testing.T) { run(t, schedulingSituations()) }

func schedulingSituations() []situation {
	sync := func(reason string) vmiMod {
		return withCondition(kubevirtv1.VirtualMachineInstanceCondition{
			Type: kubevirtv1.VirtualMachineInstanceSynchronized, Status: corev1.ConditionFalse, Reason: reason,
			Message: "failed to create virtual machine pod: " + reason, LastTransitionTime: at(-90 * time.Second),
		})
	}
	pendingPod := launcherPod(func(p *corev1.Pod) {
		p.Spec.NodeName = ""
		p.Status = corev1.PodStatus{Phase: corev1.PodPending}
	})
	pre := func(p kubevirtv1.VirtualMachineInstancePhase, age time.Duration, mods ...vmiMod) inputMod {
		return func(in *Input) {
			in.VMI = pendingVMI(p, age, mods...)
			in.Pods = []*corev1.Pod{pendingPod}
		}
	}
	return []situation{
		{
			name: "Pending for 2 minutes", in: input(pre(kubevirtv1.Pending, 2*time.Minute)),
			overall: "Progressing/Scheduling", cp: "Progressing/Scheduling", node: "Progressing/NotScheduled", guest: "Progressing/GuestStarting",
			check: func(t *testing.T, r Result) {
				if r.NextDeadline != 8*time.Minute {
					t.Errorf("NextDeadline = %v, want 8m (the scheduling timeout)", r.NextDeadline)
				}
				if s := r.Status.Layers.ControlPlane.StaleAt; s == nil || !s.Time.Equal(now.Add(8*time.Minute)) {
					t.Errorf("control plane staleAt %v", s)
				}
				wantCond(t, r.Status, v1alpha1.ConditionReconciling, metav1.ConditionTrue)
				wantCond(t, r.Status, v1alpha1.ConditionReady, metav1.ConditionFalse)
			},
		},
		{
			name: "Scheduling for 11 minutes", in: input(pre(kubevirtv1.Scheduling, 11*time.Minute)),
			overall: "Degraded/StuckScheduling", cp: "Degraded/StuckScheduling",
			check: func(t *testing.T, r Result) {
				// Degraded since the deadline (1 minute ago): not yet stalled.
				if ltt := r.Status.Layers.ControlPlane.LastTransitionTime; !ltt.Time.Equal(now.Add(-time.Minute)) {
					t.Errorf("lastTransitionTime %v, want the crossed deadline", ltt)
				}
				if r.NextDeadline != 14*time.Minute {
					t.Errorf("NextDeadline %v, want 14m (stalled threshold)", r.NextDeadline)
				}
			},
		},
		{
			name: "Scheduling, Degraded long enough to be Stalled", in: input(pre(kubevirtv1.Scheduling, 30*time.Minute)),
			overall: "Degraded/StuckScheduling",
			check: func(t *testing.T, r Result) {
				c := cond(r.Status, v1alpha1.ConditionStalled)
				if c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonDegradedPastThreshold {
					t.Errorf("Stalled %+v", c)
				}
			},
		},
		{
			name: "PodScheduled=False Unschedulable",
			in: input(pre(kubevirtv1.Scheduling, 3*time.Minute, withCondition(kubevirtv1.VirtualMachineInstanceCondition{
				Type: kubevirtv1.VirtualMachineInstanceConditionType(corev1.PodScheduled), Status: corev1.ConditionFalse,
				Reason: corev1.PodReasonUnschedulable, Message: "0/3 nodes are available: 3 Insufficient memory.",
				LastTransitionTime: at(-3 * time.Minute),
			}))),
			overall: "Degraded/Unschedulable", cp: "Degraded/Unschedulable",
			check: func(t *testing.T, r Result) {
				if !strings.Contains(r.Status.Message, "Insufficient memory") {
					t.Errorf("message %q", r.Status.Message)
				}
			},
		},
		{name: "ErrImagePull", in: input(pre(kubevirtv1.Scheduling, 2*time.Minute, sync("ErrImagePull"))), overall: "Degraded/ImagePullFailed"},
		{name: "ImagePullBackOff", in: input(pre(kubevirtv1.Scheduling, 2*time.Minute, sync("ImagePullBackOff"))), overall: "Degraded/ImagePullFailed"},
		{name: "FailedPvcNotFound", in: input(pre(kubevirtv1.Pending, 2*time.Minute, sync("FailedPvcNotFound"))), overall: "Degraded/PVCNotFound"},
		{name: "FailedCreate", in: input(pre(kubevirtv1.Pending, 2*time.Minute, sync("FailedCreate"))), overall: "Degraded/LauncherCreateFailed"},
		{name: "other sync error", in: input(pre(kubevirtv1.Pending, 2*time.Minute, sync("FailedGuaranteeResources"))), overall: "Degraded/SyncFailed"},
		{
			name: "Provisioning for 40 minutes, past the unhealthy-state timeout",
			in: input(pre(kubevirtv1.Pending, 40*time.Minute, withCondition(kubevirtv1.VirtualMachineInstanceCondition{
				Type: kubevirtv1.VirtualMachineInstanceProvisioning, Status: corev1.ConditionTrue, LastTransitionTime: at(-40 * time.Minute),
			}))),
			overall: "Degraded/StuckProvisioning",
		},
		{
			name: "Scheduled, domain starting", in: input(pre(kubevirtv1.Scheduled, 30*time.Second), func(in *Input) { in.Pods = []*corev1.Pod{launcherPod()} }),
			overall: "Progressing/Starting", cp: "Progressing/Starting", node: "Healthy/LauncherRunning", guest: "Progressing/GuestStarting",
		},
		{
			name: "Scheduled for 12 minutes", in: input(pre(kubevirtv1.Scheduled, 12*time.Minute), func(in *Input) { in.Pods = []*corev1.Pod{launcherPod()} }),
			overall: "Degraded/StuckStarting",
		},
		{
			name: "VM Always, no VMI yet",
			in: input(func(in *Input) {
				in.VM = vm(vmStopped(), func(v *kubevirtv1.VirtualMachine) {
					v.Status.PrintableStatus = kubevirtv1.VirtualMachineStatusStarting
					v.Status.Conditions[0].LastTransitionTime = at(-20 * time.Second)
				})
				in.VMI, in.Pods = nil, nil
			}),
			overall: "Progressing/Starting", node: "Progressing/NotScheduled", guest: "Progressing/GuestStarting",
			check: func(t *testing.T, r Result) {
				if r.NextDeadline != 10*time.Minute-20*time.Second {
					t.Errorf("NextDeadline %v", r.NextDeadline)
				}
			},
		},
		{
			name: "VM Always, no VMI for 30 minutes",
			in: input(func(in *Input) {
				in.VM = vm(vmStopped())
				in.VMI, in.Pods = nil, nil
			}),
			overall: "Degraded/StuckStarting",
		},
		{
			name:    "decentralized migration receiver VMI",
			in:      input(pre(kubevirtv1.WaitingForSync, 2*time.Minute)),
			overall: "Progressing/WaitingForSync", cp: "Progressing/WaitingForSync", guest: "Progressing/GuestStarting",
		},
		{
			name: "VM waiting as receiver, no VMI",
			in: input(func(in *Input) {
				in.VM = vm(withRunStrategy(kubevirtv1.RunStrategyWaitAsReceiver), vmStopped())
				in.VMI, in.Pods = nil, nil
			}),
			overall: "Progressing/WaitingForSync",
		},
		{
			name: "VM in CrashLoopBackOff",
			in: input(func(in *Input) {
				in.VM = vm(vmStopped(), func(v *kubevirtv1.VirtualMachine) {
					v.Status.PrintableStatus = kubevirtv1.VirtualMachineStatusCrashLoopBackOff
					v.Status.StartFailure = &kubevirtv1.VirtualMachineStartFailure{ConsecutiveFailCount: 3, RetryAfterTimestamp: atp(time.Minute)}
				})
				in.VMI, in.Pods = nil, nil
			}),
			overall: "Degraded/CrashLoopBackOff",
		},
	}
}

func TestFailed(t *testing.T) { run(t, failedSituations()) }

func failedSituations() []situation {
	return []situation{
		{
			name: "NodeUnresponsive",
			in: input(func(in *Input) {
				in.VMI = runningVMI(vmiPhase(kubevirtv1.Failed, -2*time.Minute), func(v *kubevirtv1.VirtualMachineInstance) {
					v.Status.Reason = nodeUnresponsiveReason
				})
				in.Pods = nil
				in.Nodes[nodeA] = node(nodeA, heartbeatAt(-9*time.Minute), nodeReady(corev1.ConditionUnknown))
			}),
			overall: "Failed/NodeUnresponsive", cp: "Failed/NodeUnresponsive", node: "Failed/NodeUnresponsive", guest: "Unknown/NotRunning",
			check: func(t *testing.T, r Result) {
				wantCond(t, r.Status, v1alpha1.ConditionStalled, metav1.ConditionTrue)
				wantCond(t, r.Status, v1alpha1.ConditionReady, metav1.ConditionFalse)
				if !strings.HasPrefix(r.Status.Message, "control plane: ") {
					t.Errorf("message %q", r.Status.Message)
				}
			},
		},
		{
			name: "crash",
			in: input(func(in *Input) {
				in.VMI = runningVMI(vmiPhase(kubevirtv1.Failed, -time.Minute))
				in.Pods = []*corev1.Pod{launcherPod(podPhase(corev1.PodFailed))}
			}),
			overall: "Failed/VMIFailed", cp: "Failed/VMIFailed", node: "Unknown/NotRunning", guest: "Unknown/NotRunning",
		},
		{
			name: "crash after the compute container was OOM-killed",
			in: input(func(in *Input) {
				in.VMI = runningVMI(vmiPhase(kubevirtv1.Failed, -time.Minute))
				in.Pods = []*corev1.Pod{launcherPod(podPhase(corev1.PodFailed), computeTerminated("OOMKilled", 137))}
			}),
			overall: "Failed/VMIFailed", node: "Failed/ComputeContainerOOMKilled",
		},
	}
}

func TestMigration(t *testing.T) { run(t, migrationSituations()) }

func migrationSituations() []situation {
	failedState := func(st *kubevirtv1.VirtualMachineInstanceMigrationState) {
		st.Failed, st.Completed = true, true
		st.FailureReason = "target pod shutdown"
		st.EndTimestamp = atp(-time.Minute)
	}
	return []situation{
		{
			name: "in progress",
			in: input(func(in *Input) {
				in.VMI = runningVMI(migrationState(), func(v *kubevirtv1.VirtualMachineInstance) {
					v.Status.ActivePods[pod2UID] = nodeB
					v.Labels[kubevirtv1.MigrationTargetNodeNameLabel] = nodeB
				})
				in.Pods = []*corev1.Pod{targetPod(), launcherPod()}
				in.Migrations = []*kubevirtv1.VirtualMachineInstanceMigration{vmim()}
			}),
			overall: "Progressing/Migrating", cp: "Progressing/Migrating", node: "Healthy/LauncherRunning", guest: "Healthy/GuestAgentConnected",
			check: func(t *testing.T, r Result) {
				st := r.Status
				if got, want := roles(st), podName+"=MigrationSource,"+pod2Name+"=MigrationTarget"; got != want {
					t.Errorf("roles %s, want %s", got, want)
				}
				m := st.Migration
				if m == nil || m.Name != migName || m.Phase != "Running" || m.SourceNode != nodeA || m.TargetNode != nodeB ||
					m.TargetPod != pod2Name || m.SourcePod != podName || m.StartTime == nil || m.Completed {
					t.Errorf("migration %+v", m)
				}
				if !strings.Contains(st.Message, "from node-a to node-b") {
					t.Errorf("message %q", st.Message)
				}
			},
		},
		{
			name: "stuck in PreparingTarget",
			in: input(func(in *Input) {
				in.VMI = runningVMI(migrationState(func(st *kubevirtv1.VirtualMachineInstanceMigrationState) {
					st.StartTimestamp, st.TargetNodeAddress = nil, ""
				}))
				in.Pods = []*corev1.Pod{targetPod(), launcherPod()}
				in.Migrations = []*kubevirtv1.VirtualMachineInstanceMigration{vmim(vmimIn(kubevirtv1.MigrationPreparingTarget, -6*time.Minute))}
			}),
			overall: "Degraded/MigrationStuck", cp: "Degraded/MigrationStuck",
			check: func(t *testing.T, r Result) {
				// The phase deadline passed: the verdict says so, and no
				// staleAt is left to look stale.
				if s := r.Status.Layers.ControlPlane.StaleAt; s != nil {
					t.Errorf("staleAt %v, want none once the phase deadline passed", s)
				}
			},
		},
		{
			name: "in Scheduling with an unschedulable target pod",
			in: input(func(in *Input) {
				in.Pods = []*corev1.Pod{targetPod(podUnschedulable()), launcherPod()}
				in.Migrations = []*kubevirtv1.VirtualMachineInstanceMigration{vmim(vmimIn(kubevirtv1.MigrationScheduling, -3*time.Minute))}
			}),
			overall: "Degraded/TargetPodUnschedulable", cp: "Progressing/Migrating", node: "Degraded/TargetPodUnschedulable",
			check: func(t *testing.T, r Result) {
				if got := roles(r.Status); got != podName+"=MigrationSource,"+pod2Name+"=MigrationTarget" {
					t.Errorf("roles %s", got)
				}
				if r.FixedDeadline != 12*time.Minute {
					t.Errorf("FixedDeadline %v, want 12m (the pending-pod timeout)", r.FixedDeadline)
				}
			},
		},
		{
			name: "stuck in Scheduling",
			in: input(func(in *Input) {
				in.Pods = []*corev1.Pod{targetPod(podUnschedulable()), launcherPod()}
				in.Migrations = []*kubevirtv1.VirtualMachineInstanceMigration{vmim(vmimIn(kubevirtv1.MigrationScheduling, -15*time.Minute-time.Second))}
			}),
			overall: "Degraded/MigrationStuck", cp: "Degraded/MigrationStuck", node: "Degraded/TargetPodUnschedulable",
		},
		{
			name: "Running with the transfer completed but the VMIM not final (kubevirt#17203)",
			in: input(func(in *Input) {
				in.VMI = runningVMI(migrationState(func(st *kubevirtv1.VirtualMachineInstanceMigrationState) {
					st.Completed, st.EndTimestamp = true, atp(-7*time.Minute)
				}))
				in.Pods = []*corev1.Pod{targetPod(), launcherPod()}
				in.Migrations = []*kubevirtv1.VirtualMachineInstanceMigration{vmim()}
			}),
			overall: "Degraded/MigrationStuck",
		},
		{
			name: "failed",
			in: input(func(in *Input) {
				in.VMI = runningVMI(migrationState(failedState))
				in.Pods = []*corev1.Pod{launcherPod(), targetPod(podPhase(corev1.PodFailed))}
				in.Migrations = []*kubevirtv1.VirtualMachineInstanceMigration{vmim(vmimFinal(kubevirtv1.MigrationFailed, in.VMI.Status.MigrationState))}
				// So that the failure window is the nearest deadline.
				in.Policy.HeartbeatTimeout, in.Policy.StalledAfter = 2*time.Hour, 2*time.Hour
			}),
			overall: "Degraded/MigrationFailed", cp: "Degraded/MigrationFailed", node: "Healthy/LauncherRunning",
			check: func(t *testing.T, r Result) {
				want := "control plane: migration kubevirt-evacuation-x2 failed on node-b: target pod shutdown; the VM still runs on node-a"
				if r.Status.Message != want {
					t.Errorf("message\n got %q\nwant %q", r.Status.Message, want)
				}
				if got := roles(r.Status); got != podName+"=Active,"+pod2Name+"=Stale" {
					t.Errorf("roles %s", got)
				}
				if m := r.Status.Migration; m == nil || !m.Failed || m.FailureReason != "target pod shutdown" {
					t.Errorf("migration %+v", m)
				}
				// The failure stops degrading an hour after it ended.
				if r.NextDeadline != 59*time.Minute {
					t.Errorf("NextDeadline %v, want 59m", r.NextDeadline)
				}
				cp := r.Status.Layers.ControlPlane
				if !hasEvidence(cp, kindVMI, vmName, "status.migrationState.failureReason") || !hasEvidence(cp, kindVMIM, migName, "status.phase") {
					t.Errorf("evidence %+v", cp.Evidence)
				}
			},
		},
		{
			name: "failed, seen only on the VMIM",
			in: input(func(in *Input) {
				in.Migrations = []*kubevirtv1.VirtualMachineInstanceMigration{vmim(vmimIn(kubevirtv1.MigrationFailed, -30*time.Second))}
			}),
			overall: "Degraded/MigrationFailed",
		},
		{
			name: "failed two hours ago, nothing needs the VMI to move",
			in: input(func(in *Input) {
				in.VMI = runningVMI(migrationState(failedState, func(st *kubevirtv1.VirtualMachineInstanceMigrationState) {
					st.StartTimestamp, st.EndTimestamp = atp(-2*time.Hour), atp(-2*time.Hour+time.Minute)
				}))
				in.Migrations = []*kubevirtv1.VirtualMachineInstanceMigration{vmim(func(m *kubevirtv1.VirtualMachineInstanceMigration) {
					m.CreationTimestamp = at(-2*time.Hour - time.Minute)
				}, vmimFinal(kubevirtv1.MigrationFailed, in.VMI.Status.MigrationState))}
			}),
			// A note: the layer reads Running, the message keeps it.
			overall: "Healthy/Running", cp: "Healthy/Running",
			check: wantNote(layerCP, v1alpha1.ReasonLastMigrationFailed),
		},
		{
			name: "failed two hours ago, eviction still requested",
			in: input(func(in *Input) {
				in.VMI = runningVMI(evacuating(nodeA), migrationState(failedState, func(st *kubevirtv1.VirtualMachineInstanceMigrationState) {
					st.StartTimestamp, st.EndTimestamp = atp(-2*time.Hour), atp(-2*time.Hour+time.Minute)
				}))
				in.Migrations = []*kubevirtv1.VirtualMachineInstanceMigration{vmim(func(m *kubevirtv1.VirtualMachineInstanceMigration) {
					m.CreationTimestamp = at(-2*time.Hour - time.Minute)
				}, vmimFinal(kubevirtv1.MigrationFailed, in.VMI.Status.MigrationState))}
			}),
			overall: "Degraded/MigrationFailed",
			check: func(t *testing.T, r Result) {
				if !strings.Contains(r.Status.Message, "also: EvictionPending") {
					t.Errorf("message %q", r.Status.Message)
				}
			},
		},
		{
			name: "aborted",
			in: input(func(in *Input) {
				in.VMI = runningVMI(migrationState(func(st *kubevirtv1.VirtualMachineInstanceMigrationState) {
					st.Failed, st.Completed, st.AbortRequested = true, true, true
					st.AbortStatus = kubevirtv1.MigrationAbortSucceeded
					st.FailureReason = "Live migration has been aborted"
					st.EndTimestamp = atp(-time.Minute)
				}))
				in.Migrations = []*kubevirtv1.VirtualMachineInstanceMigration{vmim(vmimFinal(kubevirtv1.MigrationFailed, in.VMI.Status.MigrationState))}
			}),
			overall: "Healthy/Running", cp: "Healthy/Running",
			check: func(t *testing.T, r Result) {
				wantNote(layerCP, v1alpha1.ReasonMigrationAborted)(t, r)
				if m := r.Status.Migration; m == nil || m.AbortStatus != "Succeeded" {
					t.Errorf("migration %+v", m)
				}
			},
		},
		{
			name: "succeeded long ago; the former target keeps its migrationJobUID label",
			in: input(func(in *Input) {
				st := func(st *kubevirtv1.VirtualMachineInstanceMigrationState) {
					st.Completed = true
					st.StartTimestamp, st.EndTimestamp = atp(-50*time.Minute), atp(-49*time.Minute)
				}
				in.VMI = runningVMI(migrationState(st), onTarget, func(v *kubevirtv1.VirtualMachineInstance) {
					v.Status.ActivePods = map[types.UID]string{pod2UID: nodeB}
				})
				in.Pods = []*corev1.Pod{targetPod()}
				in.Migrations = []*kubevirtv1.VirtualMachineInstanceMigration{vmim(func(m *kubevirtv1.VirtualMachineInstanceMigration) {
					m.CreationTimestamp = at(-51 * time.Minute)
				}, vmimFinal(kubevirtv1.MigrationSucceeded, in.VMI.Status.MigrationState))}
			}),
			overall: "Healthy/Running", node: "Healthy/LauncherRunning",
			check: func(t *testing.T, r Result) {
				if got := roles(r.Status); got != pod2Name+"=Active" {
					t.Errorf("roles %s", got)
				}
			},
		},
		{
			name: "an old failure superseded by a newer success",
			in: input(func(in *Input) {
				ok := func(st *kubevirtv1.VirtualMachineInstanceMigrationState) {
					st.MigrationUID = "newer-uid"
					st.Completed = true
					st.SourceNode, st.TargetNode = nodeB, nodeA
					st.StartTimestamp, st.EndTimestamp = atp(-20*time.Minute), atp(-19*time.Minute)
				}
				in.VMI = runningVMI(migrationState(ok))
				old := vmim(func(m *kubevirtv1.VirtualMachineInstanceMigration) { m.CreationTimestamp = at(-40 * time.Minute) },
					vmimIn(kubevirtv1.MigrationFailed, -39*time.Minute))
				newer := vmim(func(m *kubevirtv1.VirtualMachineInstanceMigration) {
					m.Name, m.UID, m.CreationTimestamp = "kubevirt-workload-update-abc", "newer-uid", at(-21*time.Minute)
				}, vmimFinal(kubevirtv1.MigrationSucceeded, in.VMI.Status.MigrationState))
				in.Migrations = []*kubevirtv1.VirtualMachineInstanceMigration{newer, old}
			}),
			overall: "Healthy/Running",
			check: func(t *testing.T, r Result) {
				if m := r.Status.Migration; m == nil || m.Name != "kubevirt-workload-update-abc" || m.Phase != "Succeeded" {
					t.Errorf("migration %+v", m)
				}
			},
		},
	}
}

func TestEvictionAndActivePods(t *testing.T) { run(t, evictionSituations()) }

func evictionSituations() []situation {
	notMigratable := func(v *kubevirtv1.VirtualMachineInstance) {
		withCondition(kubevirtv1.VirtualMachineInstanceCondition{
			Type: kubevirtv1.VirtualMachineInstanceIsMigratable, Status: corev1.ConditionFalse,
			Reason:  kubevirtv1.VirtualMachineInstanceReasonDisksNotMigratable,
			Message: "cannot migrate VMI: PVC rootdisk is not shared, live migration requires that all PVCs must be shared (using ReadWriteMany access mode)",
		})(v)
		withCondition(kubevirtv1.VirtualMachineInstanceCondition{
			Type: kubevirtv1.VirtualMachineInstanceIsStorageLiveMigratable, Status: corev1.ConditionFalse,
			Reason: kubevirtv1.VirtualMachineInstanceReasonNotMigratable,
			Message: "DisksNotLiveMigratable: cannot migrate VMI: PVC rootdisk is not shared, " +
				"PersistentReservationNotLiveMigratable: VMI uses SCSI persistent reservation",
		})(v)
		// A PCI host device blocks migration; an SR-IOV interface does not in
		// v1.9 (only the primary pod-network interface is checked).
		v.Spec.Domain.Devices.HostDevices = []kubevirtv1.HostDevice{{Name: "hostdev1", DeviceName: "nvidia.com/TU104GL_Tesla_T4"}}
		v.Spec.Domain.Devices.Interfaces = append(v.Spec.Domain.Devices.Interfaces,
			kubevirtv1.Interface{Name: "sriov-net", InterfaceBindingMethod: kubevirtv1.InterfaceBindingMethod{SRIOV: &kubevirtv1.InterfaceSRIOV{}}})
	}
	return []situation{
		{
			name:    "eviction requested, not live-migratable",
			in:      input(func(in *Input) { in.VMI = runningVMI(evacuating(nodeA), notMigratable) }),
			overall: "Degraded/EvictionBlocked", cp: "Degraded/EvictionBlocked",
			check: func(t *testing.T, r Result) {
				lm := r.Status.LiveMigratable
				// Persistent reservations block only a storage live migration.
				want := "DisksNotLiveMigratable,HostDeviceNotLiveMigratable"
				if lm == nil || lm.Status != metav1.ConditionFalse || strings.Join(lm.Reasons, ",") != want {
					t.Errorf("liveMigratable %+v, want reasons %s", lm, want)
				}
				for _, reason := range lm.Reasons {
					if !strings.Contains(r.Status.Message, reason) {
						t.Errorf("message %q lacks %s", r.Status.Message, reason)
					}
				}
				if !hasEvidence(r.Status.Layers.ControlPlane, kindVMI, vmName, "status.evacuationNodeName") {
					t.Errorf("evidence %+v", r.Status.Layers.ControlPlane.Evidence)
				}
			},
		},
		{
			name: "evacuationNodeName without the condition, LiveMigratable missing",
			in: input(func(in *Input) {
				in.VMI = runningVMI(withoutCondition(kubevirtv1.VirtualMachineInstanceIsMigratable), func(v *kubevirtv1.VirtualMachineInstance) {
					v.Status.EvacuationNodeName = nodeA
				})
			}),
			overall: "Degraded/EvictionBlocked",
			check: func(t *testing.T, r Result) {
				if lm := r.Status.LiveMigratable; lm.Status != metav1.ConditionUnknown {
					t.Errorf("liveMigratable %+v", lm)
				}
			},
		},
		{
			name:    "not live-migratable, no eviction: only reported",
			in:      input(func(in *Input) { in.VMI = runningVMI(notMigratable) }),
			overall: "Healthy/Running",
			check: func(t *testing.T, r Result) {
				if lm := r.Status.LiveMigratable; lm == nil || len(lm.Reasons) != 2 {
					t.Errorf("liveMigratable %+v", lm)
				}
			},
		},
		{
			name:    "eviction requested and migratable: waits for the evacuation migration",
			in:      input(func(in *Input) { in.VMI = runningVMI(evacuating(nodeA)) }),
			overall: "Progressing/EvictionPending",
		},
		{
			name: "two live launchers outside a migration",
			in: input(func(in *Input) {
				in.VMI.Status.ActivePods[pod2UID] = nodeA
				in.Pods = append(in.Pods, launcherPod(func(p *corev1.Pod) {
					p.Name, p.UID, p.CreationTimestamp = pod2Name, pod2UID, at(-time.Hour)
				}))
			}),
			overall: "Degraded/MultipleLaunchers", cp: "Degraded/MultipleLaunchers",
			check: func(t *testing.T, r Result) {
				if got := roles(r.Status); got != podName+"=Stale,"+pod2Name+"=Active" {
					t.Errorf("roles %s (the newest pod on the VMI's node is the active one)", got)
				}
			},
		},
		{
			name: "two live launchers right after a migration: grace",
			in: input(func(in *Input) {
				in.VMI = runningVMI(migrationState(func(st *kubevirtv1.VirtualMachineInstanceMigrationState) {
					st.Completed, st.EndTimestamp = true, atp(-20*time.Second)
				}), onTarget)
				in.Pods = []*corev1.Pod{launcherPod(), targetPod()}
				in.Migrations = []*kubevirtv1.VirtualMachineInstanceMigration{vmim(vmimFinal(kubevirtv1.MigrationSucceeded, in.VMI.Status.MigrationState))}
			}),
			overall: "Healthy/Running",
			check:   wantDeadline(40*time.Second, "end of the launcher cleanup grace"),
		},
		{
			name: "stale activePods entries (kubevirt#12773)",
			in: input(func(in *Input) {
				in.VMI.Status.ActivePods[pod2UID] = nodeB
				in.VMI.Status.ActivePods["0a0a0a0a-dead-4bee-8000-000000000000"] = nodeB
				in.Pods = append(in.Pods, targetPod(podPhase(corev1.PodSucceeded), func(p *corev1.Pod) {
					p.Name = "virt-launcher-vm1-old01"
				}))
			}),
			overall: "Healthy/Running", cp: "Healthy/Running",
			check: func(t *testing.T, r Result) {
				wantNote(layerCP, v1alpha1.ReasonStaleActivePods)(t, r)
				if got := roles(r.Status); got != podName+"=Active,virt-launcher-vm1-old01=Stale" {
					t.Errorf("roles %s", got)
				}
				cp := r.Status.Layers.ControlPlane
				if !hasEvidence(cp, kindPod, "virt-launcher-vm1-old01", "status.phase") ||
					!hasEvidence(cp, kindVMI, vmName, "status.activePods[0a0a0a0a") {
					t.Errorf("evidence %+v", cp.Evidence)
				}
			},
		},
	}
}

func TestLauncherPod(t *testing.T) { run(t, launcherPodSituations()) }

func launcherPodSituations() []situation {
	return []situation{
		{
			name:    "launcher pod Failed while the VMI says Running",
			in:      input(func(in *Input) { in.Pods = []*corev1.Pod{launcherPod(podPhase(corev1.PodFailed))} }),
			overall: "Failed/LauncherPodFailed", cp: "Healthy/Running", node: "Failed/LauncherPodFailed",
		},
		{
			name: "launcher pod gone while the VMI says Running",
			in:   input(func(in *Input) { in.Pods = nil }),
			// The VMI's Ready=True says virt-controller saw the pod ready at
			// its last sync: the pod was not captured, the agent's word stands.
			overall: "Unknown/LauncherPodMissing", node: "Unknown/LauncherPodMissing", guest: "Healthy/GuestAgentConnected",
			check: func(t *testing.T, r Result) {
				if !hasEvidence(r.Status.Layers.Node, kindVMI, vmName, "status.activePods[") {
					t.Errorf("evidence %+v", r.Status.Layers.Node.Evidence)
				}
				wantCond(t, r.Status, v1alpha1.ConditionReady, metav1.ConditionUnknown)
			},
		},
		{
			name:    "compute container OOM-killed",
			in:      input(func(in *Input) { in.Pods = []*corev1.Pod{launcherPod(computeTerminated("OOMKilled", 137))} }),
			overall: "Failed/ComputeContainerOOMKilled", node: "Failed/ComputeContainerOOMKilled",
		},
		{
			name:    "compute container terminated otherwise",
			in:      input(func(in *Input) { in.Pods = []*corev1.Pod{launcherPod(computeTerminated("Error", 2))} }),
			overall: "Failed/ComputeContainerTerminated",
		},
		{
			name:    "launcher pod Succeeded while the VMI says Running",
			in:      input(func(in *Input) { in.Pods = []*corev1.Pod{launcherPod(podPhase(corev1.PodSucceeded))} }),
			overall: "Degraded/StatusLagging", node: "Degraded/StatusLagging",
		},
		{
			name: "launcher pod not Ready",
			in: input(func(in *Input) {
				in.Pods = []*corev1.Pod{launcherPod(func(p *corev1.Pod) {
					for i := range p.Status.Conditions {
						if p.Status.Conditions[i].Type == corev1.PodReady {
							p.Status.Conditions[i].Status = corev1.ConditionFalse
						}
					}
				})}
			}),
			overall: "Degraded/LauncherPodNotReady",
		},
		{
			name: "launcher pod terminating",
			in: input(func(in *Input) {
				in.Pods = []*corev1.Pod{launcherPod(func(p *corev1.Pod) { p.DeletionTimestamp = atp(-10 * time.Second) })}
			}),
			overall: "Progressing/LauncherPodTerminating",
		},
		{
			name: "readiness probe failing",
			in: input(func(in *Input) {
				in.VMI = runningVMI(func(v *kubevirtv1.VirtualMachineInstance) {
					v.Spec.ReadinessProbe = &kubevirtv1.Probe{Handler: kubevirtv1.Handler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz"}}}
				}, withCondition(kubevirtv1.VirtualMachineInstanceCondition{
					Type: kubevirtv1.VirtualMachineInstanceReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady",
					Message: "containers with unready status: [compute]", LastTransitionTime: at(-2 * time.Minute),
				}))
				in.Pods = []*corev1.Pod{launcherPod(func(p *corev1.Pod) {
					for i := range p.Status.Conditions {
						if p.Status.Conditions[i].Type == corev1.PodReady {
							p.Status.Conditions[i].Status = corev1.ConditionFalse
						}
					}
				})}
			}),
			overall: "Degraded/GuestNotReady", node: "Healthy/LauncherRunning", guest: "Degraded/GuestNotReady",
		},
	}
}

func TestNode(t *testing.T) { run(t, nodeSituations()) }

func nodeSituations() []situation {
	return []situation{
		{
			name:    "heartbeat older than the timeout",
			in:      input(func(in *Input) { in.Nodes[nodeA] = node(nodeA, heartbeatAt(-6*time.Minute)) }),
			overall: "Unknown/NodeAgentStale", cp: "Healthy/Running", node: "Unknown/NodeAgentStale", guest: "Unknown/EvidenceStale",
			check: func(t *testing.T, r Result) {
				// The beat stopped: its time is the evidence, and the
				// verdict already says what staleAt would.
				n := r.Status.Layers.Node
				if n.StaleAt != nil || n.EvidenceTime == nil || !n.EvidenceTime.Time.Equal(now.Add(-6*time.Minute)) {
					t.Errorf("staleAt/evidenceTime %v/%v, want none/the last beat", n.StaleAt, n.EvidenceTime)
				}
				if !n.LastTransitionTime.Time.Equal(now.Add(-time.Minute)) {
					t.Errorf("lastTransitionTime %v, want the moment the heartbeat went stale", n.LastTransitionTime)
				}
				wantCond(t, r.Status, v1alpha1.ConditionReady, metav1.ConditionUnknown)
			},
		},
		{
			name: "node not schedulable for KubeVirt",
			in: input(func(in *Input) {
				in.Nodes[nodeA] = node(nodeA, func(n *corev1.Node) { n.Labels[kubevirtv1.NodeSchedulable] = "false" })
			}),
			// Notes do not outrank a plain finding: all layers are Healthy.
			overall: "Healthy/Running", node: "Healthy/LauncherRunning",
			check: wantNote(layerNode, v1alpha1.ReasonNodeNotSchedulable),
		},
		{
			name:    "node NotReady",
			in:      input(func(in *Input) { in.Nodes[nodeA] = node(nodeA, nodeReady(corev1.ConditionFalse)) }),
			overall: "Degraded/NodeNotReady", node: "Degraded/NodeNotReady",
		},
		{
			name:    "node readiness Unknown",
			in:      input(func(in *Input) { in.Nodes[nodeA] = node(nodeA, nodeReady(corev1.ConditionUnknown)) }),
			overall: "Unknown/NodeNotReady", node: "Unknown/NodeNotReady",
		},
		{
			name:    "Node object missing",
			in:      input(func(in *Input) { delete(in.Nodes, nodeA) }),
			overall: "Unknown/NodeMissing", cp: "Healthy/Running", node: "Unknown/NodeMissing", guest: "Healthy/GuestAgentConnected",
		},
		{
			name:    "no nodes at all",
			in:      input(func(in *Input) { in.Nodes = nil }),
			overall: "Unknown/NodeMissing",
		},
		{
			name: "heartbeat annotation missing",
			in: input(func(in *Input) {
				in.Nodes[nodeA] = node(nodeA, func(n *corev1.Node) { delete(n.Annotations, kubevirtv1.VirtHandlerHeartbeat) })
			}),
			// virt-controller counts such a node as responsive: a note.
			overall: "Healthy/Running", node: "Healthy/LauncherRunning",
			check: wantNote(layerNode, v1alpha1.ReasonHeartbeatMissing),
		},
	}
}

func TestGuest(t *testing.T) { run(t, guestSituations()) }

func guestSituations() []situation {
	bridgePrimary := func(v *kubevirtv1.VirtualMachineInstance) {
		v.Spec.Domain.Devices.Interfaces[0].Masquerade = nil
		v.Spec.Domain.Devices.Interfaces[0].Bridge = &kubevirtv1.InterfaceBridge{}
	}
	justStarted := func(v *kubevirtv1.VirtualMachineInstance) {
		v.Status.PhaseTransitionTimestamps[3].PhaseTransitionTimestamp = at(-2 * time.Minute)
	}
	return []situation{
		{
			name: "agent expected, not connected yet, within the grace period",
			in: input(func(in *Input) {
				in.VMI = runningVMI(noAgentEver(), justStarted)
				in.Policy.GuestAgentExpected = true
			}),
			overall: "Progressing/AgentConnecting", guest: "Progressing/AgentConnecting",
			check: wantDeadline(3*time.Minute, "end of agent grace"),
		},
		{
			// Nothing to wait for: the launcher says the domain runs.
			name:    "agent not expected, not connected yet, the domain runs",
			in:      input(func(in *Input) { in.VMI = runningVMI(noAgentEver(), justStarted) }),
			overall: "Healthy/Running", guest: "Healthy/NoGuestAgent",
		},
		{
			name:    "agent never connected, not expected",
			in:      input(func(in *Input) { in.VMI = runningVMI(noAgentEver()) }),
			overall: "Healthy/Running", guest: "Healthy/NoGuestAgent",
			check: func(t *testing.T, r Result) {
				if r.Status.Guest.AgentConnected {
					t.Error("agentConnected")
				}
			},
		},
		{
			name: "agent never connected, expected",
			in: input(func(in *Input) {
				in.VMI = runningVMI(noAgentEver())
				in.Policy.GuestAgentExpected = true
			}),
			overall: "Degraded/AgentNeverConnected", guest: "Degraded/AgentNeverConnected",
		},
		{
			name: "agent disconnected: guestOSInfo left behind",
			in: input(func(in *Input) {
				in.VMI = runningVMI(agentGone())
				in.Previous = &v1alpha1.VMObservationStatus{VMI: &v1alpha1.VMISummary{Name: vmName, UID: vmiUID, AgentDisconnectedSince: atp(-6 * time.Minute)}}
			}),
			overall: "Degraded/AgentDisconnected", guest: "Degraded/AgentDisconnected",
			check: func(t *testing.T, r Result) {
				if g := r.Status.Guest; g.AgentConnected || g.OSPrettyName == "" {
					t.Errorf("guest %+v", g)
				}
			},
		},
		{
			name: "agent disconnected: only the previous status knew",
			in: input(func(in *Input) {
				in.VMI = runningVMI(noAgentEver())
				in.Previous = &v1alpha1.VMObservationStatus{
					VMI:   &v1alpha1.VMISummary{Name: vmName, UID: vmiUID},
					Guest: &v1alpha1.GuestSummary{AgentConnected: true},
				}
			}),
			// Just disconnected: it may reconnect (a guest reboot).
			overall: "Progressing/AgentConnecting",
		},
		{
			name: "previous status of another VMI is no hint",
			in: input(func(in *Input) {
				in.VMI = runningVMI(noAgentEver())
				in.Previous = &v1alpha1.VMObservationStatus{
					VMI:   &v1alpha1.VMISummary{Name: vmName, UID: "an-earlier-vmi"},
					Guest: &v1alpha1.GuestSummary{AgentConnected: true},
				}
			}),
			overall: "Healthy/Running", guest: "Healthy/NoGuestAgent",
		},
		{
			name: "agent version not supported",
			in: input(func(in *Input) {
				in.VMI = runningVMI(withCondition(kubevirtv1.VirtualMachineInstanceCondition{
					Type: kubevirtv1.VirtualMachineInstanceUnsupportedAgent, Status: corev1.ConditionTrue,
					Reason: "This guest agent doesn't support required basic commands", LastTransitionTime: at(-time.Hour),
				}))
			}),
			overall: "Degraded/AgentVersionNotSupported",
			check: func(t *testing.T, r Result) {
				if r.Status.Guest.AgentSupported {
					t.Error("agentSupported")
				}
			},
		},
		{
			name: "agent connected but no guest data on the interfaces",
			in: input(func(in *Input) {
				in.VMI = runningVMI(func(v *kubevirtv1.VirtualMachineInstance) {
					v.Status.Interfaces[0].InfoSource = "domain"
					v.Status.Interfaces[1].InfoSource = "domain, multus-status"
				})
			}),
			overall: "Degraded/GuestInterfaceDataMissing",
			check: func(t *testing.T, r Result) {
				if !strings.Contains(r.Status.Message, "default, ext") {
					t.Errorf("message %q", r.Status.Message)
				}
			},
		},
		{
			name: "agent just connected, interface data not in yet",
			in: input(func(in *Input) {
				in.VMI = runningVMI(withCondition(kubevirtv1.VirtualMachineInstanceCondition{
					Type: kubevirtv1.VirtualMachineInstanceAgentConnected, Status: corev1.ConditionTrue, LastTransitionTime: at(-30 * time.Second),
				}), func(v *kubevirtv1.VirtualMachineInstance) {
					v.Status.Interfaces[1].InfoSource = "domain, multus-status"
				})
				in.Policy.HeartbeatTimeout = time.Hour
			}),
			overall: "Healthy/Running", guest: "Healthy/GuestAgentConnected",
			check: func(t *testing.T, r Result) {
				if r.NextDeadline != 4*time.Minute+30*time.Second {
					t.Errorf("NextDeadline %v", r.NextDeadline)
				}
			},
		},
		{
			// virt-handler writes the pod's IPs for masquerade; the NAT
			// address in the status is KubeVirt's reporting failing.
			name:    "masquerade: the status shows 10.0.2.2 instead of the pod IP (kubevirt#18760)",
			in:      input(func(in *Input) { in.VMI = runningVMI(guestIP("10.0.2.2")) }),
			overall: "Degraded/GuestIPMismatch", guest: "Degraded/GuestIPMismatch",
		},
		{
			name:    "bridge on the pod network: the guest IP differs from the pod's",
			in:      input(func(in *Input) { in.VMI = runningVMI(bridgePrimary, guestIP("10.244.9.99")) }),
			overall: "Degraded/GuestIPMismatch", guest: "Degraded/GuestIPMismatch",
			check: func(t *testing.T, r Result) {
				if !hasEvidence(r.Status.Layers.Guest, kindPod, podName, "status.podIPs") {
					t.Errorf("evidence %+v", r.Status.Layers.Guest.Evidence)
				}
			},
		},
		{
			name:    "bridge on the pod network: same IP",
			in:      input(func(in *Input) { in.VMI = runningVMI(bridgePrimary) }),
			overall: "Healthy/Running",
		},
		{
			name: "bridge on a Multus network: the guest IP differs from network-status",
			in: input(func(in *Input) {
				in.VMI = runningVMI(func(v *kubevirtv1.VirtualMachineInstance) {
					v.Status.Interfaces[1].IP, v.Status.Interfaces[1].IPs = "192.168.7.7", []string{"192.168.7.7", "fe80::3f:9aff:fe00:2"}
				})
			}),
			overall: "Degraded/GuestIPMismatch",
			check: func(t *testing.T, r Result) {
				if !strings.Contains(r.Status.Message, "on ext") {
					t.Errorf("message %q", r.Status.Message)
				}
			},
		},
	}
}

func TestBadInput(t *testing.T) { run(t, badInputSituations()) }

func badInputSituations() []situation {
	return []situation{
		{
			name:    "nothing exists",
			in:      Input{Namespace: ns, Name: vmName, Now: now, Policy: DefaultPolicy()},
			overall: "Unknown/VMMissing", cp: "Unknown/VMMissing", node: "Unknown/VMMissing", guest: "Unknown/VMMissing",
		},
		{
			name:    "VMI without VM",
			in:      input(func(in *Input) { in.VM = nil }),
			overall: "Healthy/Running",
		},
		{
			name: "VM with both running and runStrategy",
			in: input(func(in *Input) {
				in.VM = vm(func(v *kubevirtv1.VirtualMachine) { v.Spec.Running = ptr(true) })
				in.VMI, in.Pods = nil, nil
			}),
			overall: "Unknown/InvalidInput",
		},
		{
			name:    "unknown VMI phase",
			in:      input(func(in *Input) { in.VMI = runningVMI(vmiPhase("Hibernating", -time.Minute)) }),
			overall: "Unknown/UnknownPhase", cp: "Unknown/UnknownPhase", node: "Unknown/NotRunning", guest: "Unknown/NotRunning",
		},
		{
			name:    "KubeVirt's unused Unknown phase",
			in:      input(func(in *Input) { in.VMI = runningVMI(vmiPhase(kubevirtv1.Unknown, -time.Minute)) }),
			overall: "Unknown/UnknownPhase",
		},
		{
			name: "VMI without status, an hour old",
			in: input(func(in *Input) {
				in.VMI = runningVMI(func(v *kubevirtv1.VirtualMachineInstance) { v.Status = kubevirtv1.VirtualMachineInstanceStatus{} })
			}),
			overall: "Unknown/StatusMissing",
		},
		{
			name: "VMI without status, just created",
			in: input(func(in *Input) {
				in.VMI = runningVMI(func(v *kubevirtv1.VirtualMachineInstance) {
					v.Status = kubevirtv1.VirtualMachineInstanceStatus{}
					v.CreationTimestamp = at(-time.Second)
				})
				in.Pods = nil
			}),
			overall: "Progressing/Scheduling",
			check:   wantDeadline(9*time.Minute+59*time.Second, "the scheduling deadline of an unprocessed VMI"),
		},
		{
			name: "unknown condition types are ignored",
			in: input(func(in *Input) {
				in.VMI = runningVMI(withCondition(kubevirtv1.VirtualMachineInstanceCondition{Type: "QuantumEntangled", Status: "Maybe"}))
			}),
			overall: "Healthy/Running",
		},
		{
			name: "malformed network-status",
			in: input(func(in *Input) {
				in.Pods = []*corev1.Pod{launcherPod(func(p *corev1.Pod) { p.Annotations[membership.NetworkStatusAnnotation] = `[{"name":"ovn",` })}
			}),
			// KubeVirt ignores it too: a note, only the secondary IPs are lost.
			overall: "Healthy/Running", guest: "Healthy/GuestAgentConnected",
			check: wantNote(layerGuest, v1alpha1.ReasonMalformedNetworkStatus),
		},
		{
			name: "malformed heartbeat",
			in: input(func(in *Input) {
				in.Nodes[nodeA] = node(nodeA, func(n *corev1.Node) { n.Annotations[kubevirtv1.VirtHandlerHeartbeat] = "yesterday" })
			}),
			overall: "Unknown/MalformedHeartbeat", node: "Unknown/MalformedHeartbeat",
		},
		{
			name:    "heartbeat in the future",
			in:      input(func(in *Input) { in.Nodes[nodeA] = node(nodeA, heartbeatAt(10*time.Minute)) }),
			overall: "Unknown/FutureTimestamp", node: "Unknown/FutureTimestamp",
			check: wantDeadline(9*time.Minute, "when the heartbeat comes within the clock skew"),
		},
		{
			name:    "heartbeat within the clock skew",
			in:      input(func(in *Input) { in.Nodes[nodeA] = node(nodeA, heartbeatAt(30*time.Second)) }),
			overall: "Healthy/Running",
		},
		{
			name: "VMI phase timestamp in the future",
			in: input(func(in *Input) {
				in.VMI = runningVMI(func(v *kubevirtv1.VirtualMachineInstance) {
					v.Status.PhaseTransitionTimestamps[3].PhaseTransitionTimestamp = at(time.Hour)
				})
			}),
			overall: "Unknown/FutureTimestamp", cp: "Unknown/FutureTimestamp",
		},
		{
			name: "nil entries everywhere",
			in: input(func(in *Input) {
				in.Pods = append(in.Pods, nil)
				in.Migrations = []*kubevirtv1.VirtualMachineInstanceMigration{nil}
				in.Nodes[nodeB] = nil
			}),
			overall: "Healthy/Running",
		},
		{
			name: "pods of another VMI are ignored",
			in: input(func(in *Input) {
				in.Pods = append(in.Pods, launcherPod(func(p *corev1.Pod) {
					p.Name, p.UID = "virt-launcher-vm1-prev0", "old-pod"
					p.OwnerReferences[0].UID = "an-earlier-vmi"
					p.Labels[kubevirtv1.CreatedByLabel] = "an-earlier-vmi"
				}))
			}),
			overall: "Healthy/Running",
			check: func(t *testing.T, r Result) {
				if len(r.Status.LauncherPods) != 1 {
					t.Errorf("launcherPods %+v", r.Status.LauncherPods)
				}
			},
		},
	}
}

// allSituations is every table case, for the checks that run across all of
// them (determinism, fuzz seeds, the benchmark's variety).
func allSituations() []situation {
	var all []situation
	for _, f := range []func() []situation{healthySituations, schedulingSituations, failedSituations, migrationSituations,
		evictionSituations, launcherPodSituations, nodeSituations, guestSituations, badInputSituations,
		attributionSituations, partialStatusSituations, evidenceSituations, rootCauseSituations,
		kubevirtRuleSituations, newSourceSituations, lagSituations,
		domainSituations, runtimeSituations, probeSituations, kubevirtWaitSituations, agentReportSituations, storageSituations} {
		all = append(all, f()...)
	}
	all = append(all, partialSituations()...)
	return all
}
