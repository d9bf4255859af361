package verdict

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/vmifacts"
)

// The engine review's domain stats findings (A2 memory pressure, A3 pauses
// without a Paused condition, A4 the wording of a missing domain, A6
// receive drops, D2 guest panics). They run in TestDomainStats and count
// for TestEveryReasonIsTested through domainSituations.

// lowHeadroom is a guest with 100 MiB of its 4 GiB usable: under 5%.
func lowHeadroom(d *vmifacts.DomainFacts) { d.MemoryUsable = sample(100 << 20) }

// thrashing gives the domain major faults per second and a pressure onset
// (the fold's, with the controller's thresholds) ago before now.
func thrashing(faults float64, ago time.Duration) func(*vmifacts.DomainFacts) {
	return func(d *vmifacts.DomainFacts) {
		d.MajorFaultRate = sample(faults)
		d.MemoryPressureSince = now.Add(-ago)
	}
}

// memoryDump gives the VM a memory dump request in phase.
func memoryDump(phase kubevirtv1.MemoryDumpPhase) inputMod {
	return func(in *Input) {
		in.VM.Status.MemoryDumpRequest = &kubevirtv1.VirtualMachineMemoryDumpRequest{ClaimName: "dump-pvc", Phase: phase}
	}
}

func stalledFor(d time.Duration) func(*vmifacts.DomainFacts) {
	return func(f *vmifacts.DomainFacts) { f.VCPUUsage, f.VCPUStalledSince = sample(0), now.Add(-d) }
}

// sameDeadline checks the domain stats added no deadline to what the input
// has without them.
func sameDeadline(without Input) func(*testing.T, Result) {
	return func(t *testing.T, r Result) {
		t.Helper()
		if want := Evaluate(without).NextDeadline; r.NextDeadline != want {
			t.Errorf("next deadline in %v, want %v as without domain stats", r.NextDeadline, want)
		}
	}
}

func review3DomainSituations() []situation {
	faultOverride := func(in *Input) {
		in.Policy = DefaultPolicy().WithOverrides(&v1alpha1.PolicyOverrides{
			GuestMajorFaultRate:      resource.NewQuantity(50, resource.DecimalSI),
			GuestMemoryPressureAfter: &metav1.Duration{Duration: 10 * time.Minute},
		})
	}
	return []situation{
		// A2: KubeVirtVMGuestMemoryPressure is low headroom AND thrashing
		// for 5 minutes.
		{
			name:    "low headroom with 20 major faults/s for 6 minutes is GuestMemoryPressure",
			in:      input(withDomain(lowHeadroom, thrashing(20, 6*time.Minute))),
			overall: "Degraded/GuestMemoryPressure", guest: "Degraded/GuestMemoryPressure",
			check: func(t *testing.T, r Result) {
				g := r.Status.Layers.Guest
				wantMessage(t, g, "the guest can use only 100 MiB of its 4 GiB without swapping (under 5%) and "+
					"20 major page faults per second (above 5/s), since "+rfc(now.Add(-6*time.Minute)))
				wantSeries(t, g, seriesMajorFaults, fieldRate, "20/s")
				wantSeries(t, g, seriesMemoryUsable, fieldMax, "100 MiB")
				wantSeries(t, g, seriesMemoryUsable, fieldPressure, rfc(now.Add(-6*time.Minute)))
				if !g.LastTransitionTime.Time.Equal(now.Add(-6 * time.Minute)) {
					t.Errorf("lastTransitionTime %v, want the onset", g.LastTransitionTime)
				}
			},
		},
		{
			name: "low headroom and swapping for 6 minutes is GuestMemoryPressure",
			in: input(withDomain(lowHeadroom, thrashing(0, 6*time.Minute), func(d *vmifacts.DomainFacts) {
				d.SwapRate = sample(3 << 20)
			})),
			overall: "Degraded/GuestMemoryPressure", guest: "Degraded/GuestMemoryPressure",
			check: func(t *testing.T, r Result) {
				wantMessage(t, r.Status.Layers.Guest, "and swaps 3 MiB/s (from 1 MiB/s), since")
				wantSeries(t, r.Status.Layers.Guest, seriesSwap, fieldSwap, "3 MiB/s")
			},
		},
		{
			name:    "low headroom and thrashing for 2 minutes: a note and a fixed deadline",
			in:      input(withDomain(lowHeadroom, thrashing(20, 2*time.Minute))),
			overall: "Healthy/Running", guest: "Healthy/GuestAgentConnected",
			check: func(t *testing.T, r Result) {
				wantNote(layerGuest, v1alpha1.ReasonGuestMemoryAvailableLow)(t, r)
				wantDeadline(3*time.Minute, "GuestMemoryPressureAfter")(t, r)
			},
		},
		{
			name:    "low headroom with 5 major faults/s is not thrashing (the alert says > 5)",
			in:      input(withDomain(lowHeadroom, thrashing(5, time.Hour))),
			overall: "Healthy/Running", guest: "Healthy/GuestAgentConnected",
			check: wantNote(layerGuest, v1alpha1.ReasonGuestMemoryAvailableLow),
		},
		{
			name:    "thrashing with plenty of headroom is nothing",
			in:      input(withDomain(thrashing(400, time.Hour), func(d *vmifacts.DomainFacts) { d.SwapRate = sample(8 << 20) })),
			overall: "Healthy/Running", guest: "Healthy/GuestAgentConnected",
			check: func(t *testing.T, r Result) {
				if m := r.Status.Layers.Guest.Message; strings.Contains(m, "(also:") {
					t.Errorf("guest message %q", m)
				}
			},
		},
		{
			name:    "spec.policy.guestMajorFaultRate 50: 20 faults/s is not thrashing",
			in:      input(faultOverride, withDomain(lowHeadroom, thrashing(20, time.Hour))),
			overall: "Healthy/Running", guest: "Healthy/GuestAgentConnected",
			check: wantNote(layerGuest, v1alpha1.ReasonGuestMemoryAvailableLow),
		},
		{
			name:    "spec.policy.guestMemoryPressureAfter 10m: 6 minutes of thrashing is not yet pressure",
			in:      input(faultOverride, withDomain(lowHeadroom, thrashing(80, 6*time.Minute))),
			overall: "Healthy/Running", guest: "Healthy/GuestAgentConnected",
			check: wantDeadline(4*time.Minute, "spec.policy.guestMemoryPressureAfter"),
		},
		// A3: libvirt pauses the domain without a Paused condition.
		{
			name:    "vCPUs still for an hour during a memory dump (libvirt pauses a non-live dump)",
			in:      input(memoryDump(kubevirtv1.MemoryDumpInProgress), withDomain(stalledFor(time.Hour))),
			overall: "Healthy/Running", guest: "Healthy/GuestAgentConnected",
			check: sameDeadline(input(memoryDump(kubevirtv1.MemoryDumpInProgress))),
		},
		{
			name:    "vCPUs still for 4 minutes after a memory dump completed",
			in:      input(memoryDump(kubevirtv1.MemoryDumpCompleted), withDomain(stalledFor(4*time.Minute))),
			overall: "Degraded/GuestCPUStalled", guest: "Degraded/GuestCPUStalled",
			check: func(t *testing.T, r Result) {
				wantMessage(t, r.Status.Layers.Guest, "the guest hangs, or QEMU does, or libvirt paused the domain without a Paused condition "+
					"(a watchdog's pause action, a crash)")
			},
		},
		{
			// Seen in the soak: the window after the dump still spans it,
			// and the stall the fold dates from inside the pause counted
			// at once.
			name: "vCPUs still for 8 minutes, of which all but the last minute a memory dump",
			in: input(memoryDump(kubevirtv1.MemoryDumpCompleted), withDomain(stalledFor(8*time.Minute)), func(in *Input) {
				in.VM.Status.MemoryDumpRequest.EndTimestamp = atp(-time.Minute)
			}),
			overall: "Healthy/Running", guest: "Healthy/GuestAgentConnected",
			check: wantDeadline(2*time.Minute, "GuestCPUStalledAfter from the dump's end"),
		},
		{
			name: "vCPUs still for 4 minutes, of which all but the last 30s a user's pause",
			in: input(withDomain(stalledFor(4*time.Minute)), func(in *Input) {
				in.Pods = []*corev1.Pod{launcherPod(unpauseGate(corev1.ConditionTrue, -30*time.Second))}
			}),
			overall: "Healthy/Running", guest: "Healthy/GuestAgentConnected",
			check: wantDeadline(150*time.Second, "GuestCPUStalledAfter from the unpause"),
		},
		{
			name:    "vCPUs still during a migration (post-copy pauses the source)",
			in:      input(migrating, withDomain(stalledFor(time.Hour))),
			overall: "Progressing/Migrating", guest: "Healthy/GuestAgentConnected",
		},
		// A4: the node exports nothing though other VMIs run there.
		{
			name: "no domain from a node where other VMIs run: its exporter is down",
			in: input(withDomain(missing(false, -5*time.Minute), func(d *vmifacts.DomainFacts) {
				d.NodeRunsOthers = true
			})),
			overall: "Unknown/DomainStatsMissing", node: "Unknown/DomainStatsMissing",
			check: func(t *testing.T, r Result) {
				wantMessage(t, r.Status.Layers.Node, "virt-handler on node node-a exports no domain at all, though other VMIs run there: "+
					"its exporter or the scrape of it is down (or, where KubeVirt's observability controller collects the domain stats, that controller's poll of it)")
				wantSeries(t, r.Status.Layers.Node, seriesPresent, fieldNode, "node-a: none, other VMIs running")
			},
		},
		// A6: receive drops are the guest's.
		{
			name:    "receive drops are a guest note, not NetworkErrors",
			in:      input(withDomain(func(d *vmifacts.DomainFacts) { d.NetworkReceiveDropRate = sample(30) })),
			overall: "Healthy/Running", node: "Healthy/LauncherRunning", guest: "Healthy/GuestAgentConnected",
			check: func(t *testing.T, r Result) {
				wantNote(layerGuest, v1alpha1.ReasonGuestNetworkDrops)(t, r)
				wantSeries(t, r.Status.Layers.Guest, seriesNetworkRxDrops, fieldRate, "30/s")
			},
		},
		// D2: kubevirt_vmi_guest_os_panic_total.
		{
			name:    "a guest OS panic within the window",
			in:      input(withDomain(func(d *vmifacts.DomainFacts) { d.GuestPanics = sample(1) })),
			overall: "Degraded/GuestOSPanic", node: "Healthy/LauncherRunning", guest: "Degraded/GuestOSPanic",
			check: func(t *testing.T, r Result) {
				wantMessage(t, r.Status.Layers.Guest, "the guest OS panicked once within the last domain-stats window")
				wantSeries(t, r.Status.Layers.Guest, seriesGuestPanics, fieldIncrease, "1")
			},
		},
		{
			name:    "no panic within the window (or KubeVirt before v1.9: no series) is nothing",
			in:      input(withDomain(func(d *vmifacts.DomainFacts) { d.GuestPanics = sample(0) })),
			overall: "Healthy/Running", guest: "Healthy/GuestAgentConnected",
		},
	}
}

func TestReview3MemoryPolicy(t *testing.T) {
	d := DefaultPolicy()
	if d.GuestMajorFaultRate != 5 || d.GuestMemoryPressureAfter != 5*time.Minute {
		t.Errorf("defaults %v %v, want KubeVirt's alert: > 5/s for 5m", d.GuestMajorFaultRate, d.GuestMemoryPressureAfter)
	}
	if p := (Policy{}).withDefaults(); p.GuestMajorFaultRate != 5 || p.GuestMemoryPressureAfter != 5*time.Minute {
		t.Errorf("withDefaults %v %v", p.GuestMajorFaultRate, p.GuestMemoryPressureAfter)
	}
	low := &vmifacts.DomainFacts{MemoryAvailable: sample(4 << 30), MemoryUsable: sample(100 << 20)}
	for _, c := range []struct {
		name   string
		p      Policy
		faults float64
		swap   float64
		want   bool
	}{
		{"low headroom alone", Policy{}, 0, 0, false},
		{"low headroom and faults", Policy{}, 6, 0, true},
		{"low headroom and faults at the rate", Policy{}, 5, 0, false},
		{"low headroom and swap", Policy{}, 0, 1 << 20, true},
		{"a higher fault rate", Policy{GuestMajorFaultRate: 10}, 6, 0, false},
	} {
		f := *low
		f.MajorFaultRate, f.SwapRate = sample(c.faults), sample(c.swap)
		if got := c.p.MemoryThresholds().Pressure(&f); got != c.want {
			t.Errorf("%s: MemoryPressure = %v, want %v", c.name, got, c.want)
		}
	}
	if (Policy{}).MemoryThresholds().Pressure(&vmifacts.DomainFacts{MemoryAvailable: sample(4 << 30), MajorFaultRate: sample(100)}) {
		t.Error("a guest without the usable statistic is under pressure")
	}
}
