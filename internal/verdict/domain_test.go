package verdict

import (
	"bytes"
	"math"
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

func TestDomainStats(t *testing.T) { run(t, domainSituations()) }

// missing is domain stats without the domain's series: virt-handler on the
// node exports other domains, or none.
func missing(nodeExports bool, since time.Duration) func(*vmifacts.DomainFacts) {
	return func(d *vmifacts.DomainFacts) {
		*d = vmifacts.DomainFacts{VMIUID: d.VMIUID, SampledAt: d.SampledAt, NodeExports: nodeExports, MissingSince: now.Add(since)}
	}
}

// migrating is the live migration in progress of migrationSituations.
func migrating(in *Input) {
	in.VMI = runningVMI(migrationState(), func(v *kubevirtv1.VirtualMachineInstance) {
		v.Status.ActivePods[pod2UID] = nodeB
		v.Labels[kubevirtv1.MigrationTargetNodeNameLabel] = nodeB
	})
	in.Pods = []*corev1.Pod{targetPod(), launcherPod()}
	in.Migrations = []*kubevirtv1.VirtualMachineInstanceMigration{vmim()}
}

// migrationJob is the source domain's migration job as the fold gives it.
func migrationJob(remaining, dirty, transfer float64, notShrinking int32) func(*vmifacts.DomainFacts) {
	return func(d *vmifacts.DomainFacts) {
		d.MigrationDataRemaining, d.MigrationDirtyRate, d.MigrationTransferRate = sample(remaining), sample(dirty), sample(transfer)
		d.MigrationNotShrinking = notShrinking
	}
}

// runningFor makes the VMI's Running transition d ago.
func runningFor(d time.Duration) vmiMod {
	return func(v *kubevirtv1.VirtualMachineInstance) {
		v.Status.PhaseTransitionTimestamps[3].PhaseTransitionTimestamp = at(-d)
	}
}

// sameVerdicts checks that domain stats left every verdict as it is without
// them, and the overall message too but for the note's reason.
func sameVerdicts(without Input) func(*testing.T, Result) {
	return func(t *testing.T, r Result) {
		t.Helper()
		want := Evaluate(without).Status
		got := r.Status
		msg := strings.TrimSuffix(got.Message, " (also: "+v1alpha1.ReasonDomainStatsUnavailable+")")
		if got.Verdict != want.Verdict || got.Reason != want.Reason || msg != want.Message {
			t.Errorf("overall %s/%s %q, want %s/%s %q as without domain stats", got.Verdict, got.Reason, got.Message,
				want.Verdict, want.Reason, want.Message)
		}
		for i, l := range [...][2]v1alpha1.LayerStatus{
			{got.Layers.ControlPlane, want.Layers.ControlPlane}, {got.Layers.Node, want.Layers.Node}, {got.Layers.Guest, want.Layers.Guest},
		} {
			if vr(l[0]) != vr(l[1]) {
				t.Errorf("layer %d = %s, want %s as without domain stats", i, vr(l[0]), vr(l[1]))
			}
		}
	}
}

// wantSeries checks that a layer cites the series with the field and value.
func wantSeries(t *testing.T, l v1alpha1.LayerStatus, name, field, value string) {
	t.Helper()
	for _, e := range l.Evidence {
		if e.Kind == kindSeries && e.Name == name && e.Field == field {
			if e.Value != value {
				t.Errorf("layer %s cites %s %s = %q, want %q", l.Reason, name, field, e.Value, value)
			}
			return
		}
	}
	t.Errorf("layer %s does not cite %s %s; evidence %+v", l.Reason, name, field, l.Evidence)
}

func wantMessage(t *testing.T, l v1alpha1.LayerStatus, want string) {
	t.Helper()
	if !strings.Contains(l.Message, want) {
		t.Errorf("layer %s message %q lacks %q", l.Reason, l.Message, want)
	}
}

func quantity(q *resource.Quantity) string {
	if q == nil {
		return "-"
	}
	return q.String()
}

// pausedByUserIn is a VM paused by its user: the VMI says Paused and its
// Ready condition False, the agent is gone, and the readiness gate makes
// the launcher pod not Ready.
func pausedByUserIn(in *Input) {
	in.VMI = runningVMI(paused(pausedByUser), withCondition(kubevirtv1.VirtualMachineInstanceCondition{
		Type: kubevirtv1.VirtualMachineInstanceReady, Status: corev1.ConditionFalse, Reason: "PodConditionMissing",
	}), agentGone())
	in.Pods = []*corev1.Pod{launcherPod(func(p *corev1.Pod) {
		for i := range p.Status.Conditions {
			if c := &p.Status.Conditions[i]; c.Type == corev1.PodReady || c.Type == kubevirtv1.VirtualMachineUnpaused {
				c.Status, c.Reason = corev1.ConditionFalse, "Paused"
			}
		}
	})}
}

func domainSituations() []situation {
	unavailable := func(d *vmifacts.DomainFacts) {
		*d = vmifacts.DomainFacts{Unavailable: "query kubevirt_vmi_vcpu_seconds_total: Prometheus at http://prometheus:9090 refused the connection"}
	}
	nodeNotReady := func(in *Input) { in.Nodes[nodeA] = node(nodeA, nodeReady(corev1.ConditionFalse)) }
	memoryOverride := func(in *Input) {
		in.Policy = DefaultPolicy().WithOverrides(&v1alpha1.PolicyOverrides{GuestMemoryAvailablePercent: ptr(int32(30))})
	}
	quarterUsable := func(d *vmifacts.DomainFacts) { d.MemoryUsable = sample(1 << 30) }
	return append([]situation{
		{
			name:    "domain stats of a healthy domain change nothing but status.domain",
			in:      input(withDomain()),
			overall: "Healthy/Running", cp: "Healthy/Running", node: "Healthy/LauncherRunning", guest: "Healthy/GuestAgentConnected",
			check: func(t *testing.T, r Result) {
				without := Evaluate(input())
				a, b := r.Status.DeepCopy(), without.Status.DeepCopy()
				a.Domain = nil
				if !bytes.Equal(mustJSON(t, a), mustJSON(t, b)) || r.NextDeadline != without.NextDeadline {
					t.Errorf("domain stats changed the status:\nwith:    %s\nwithout: %s", mustJSON(t, a), mustJSON(t, b))
				}
				s := r.Status.Domain
				if s == nil {
					t.Fatal("no status.domain")
				}
				if !s.SampledAt.Time.Equal(now.Add(-20*time.Second)) || s.Node != nodeA {
					t.Errorf("sampledAt %v node %q", s.SampledAt, s.Node)
				}
				got := strings.Join([]string{
					quantity(s.VCPUUsage), quantity(s.MemoryAvailable), quantity(s.MemoryUsed), quantity(s.SwapRate),
					quantity(s.StorageReadRate), quantity(s.StorageWriteRate), s.StorageLatency.Duration.String(),
					quantity(s.NetworkReceiveRate), quantity(s.NetworkTransmitRate), quantity(s.NetworkErrorRate),
					quantity(s.MigrationDataRemaining), quantity(s.MigrationDirtyRate), quantity(s.MigrationTransferRate),
				}, " ")
				if want := "250m 4Gi 1536Mi 0 1Mi 512Ki 2ms 64Ki 32Ki 0 - - -"; got != want {
					t.Errorf("status.domain\n got %s\nwant %s", got, want)
				}
			},
		},
		{
			name:    "domain stats unavailable: a note on the node layer, nothing else",
			in:      input(withDomain(unavailable)),
			overall: "Healthy/Running", node: "Healthy/LauncherRunning",
			check: func(t *testing.T, r Result) {
				wantNote(layerNode, v1alpha1.ReasonDomainStatsUnavailable)(t, r)
				sameVerdicts(input())(t, r)
				wantSeries(t, r.Status.Layers.Node, seriesPresent, fieldQuery,
					"query kubevirt_vmi_vcpu_seconds_total: Prometheus at http://prometheus:9090 refused the connection")
				if r.Status.Domain != nil {
					t.Errorf("status.domain %+v without domain stats", r.Status.Domain)
				}
			},
		},
		{
			name:    "domain stats unavailable on a NotReady node: the verdict is the node's",
			in:      input(nodeNotReady, withDomain(unavailable)),
			overall: "Degraded/NodeNotReady", node: "Degraded/NodeNotReady",
			check: func(t *testing.T, r Result) {
				wantNote(layerNode, v1alpha1.ReasonDomainStatsUnavailable)(t, r)
				sameVerdicts(input(nodeNotReady))(t, r)
			},
		},
		{
			name: "domain stats of an earlier VMI of the same name are ignored",
			in: input(withDomain(missing(false, -time.Hour), func(d *vmifacts.DomainFacts) {
				d.VMIUID = "an-earlier-vmi"
				d.VCPUStalledSince = now.Add(-time.Hour)
				d.NetworkErrorRate = sample(100)
			})),
			overall: "Healthy/Running", node: "Healthy/LauncherRunning", guest: "Healthy/GuestAgentConnected",
			check: func(t *testing.T, r Result) {
				sameVerdicts(input())(t, r)
				if r.Status.Domain != nil || strings.Contains(r.Status.Layers.Node.Message, "DomainStats") {
					t.Errorf("status.domain %+v, node message %q", r.Status.Domain, r.Status.Layers.Node.Message)
				}
			},
		},
		{
			name:    "domain series missing while the node exports others",
			in:      input(withDomain(missing(true, -5*time.Minute))),
			overall: "Unknown/DomainStatsMissing", cp: "Healthy/Running", node: "Unknown/DomainStatsMissing", guest: "Healthy/GuestAgentConnected",
			check: func(t *testing.T, r Result) {
				n := r.Status.Layers.Node
				wantMessage(t, n, "virt-handler on node node-a exports other domains but cannot read this domain's stats from its virt-launcher: "+
					"libvirt or QEMU does not answer (often hung storage), the launcher's command socket does not, or the domain is gone")
				wantSeries(t, n, seriesPresent, fieldPresent, "absent since "+rfc(now.Add(-5*time.Minute)))
				wantSeries(t, n, seriesPresent, fieldNode, "node-a: other domains")
				if r.Status.Domain != nil {
					t.Errorf("status.domain %+v without the domain's series", r.Status.Domain)
				}
			},
		},
		{
			name:    "domain series missing and the node exports none",
			in:      input(withDomain(missing(false, -5*time.Minute))),
			overall: "Unknown/DomainStatsMissing", node: "Unknown/DomainStatsMissing",
			check: func(t *testing.T, r Result) {
				wantMessage(t, r.Status.Layers.Node, "virt-handler on node node-a, where no other VMI runs, exports no domain: it cannot read")
				// The series vanished 5 minutes ago, a minute's grace later
				// it counted: the situation began then.
				if ltt := r.Status.Layers.Node.LastTransitionTime; !ltt.Time.Equal(now.Add(-4 * time.Minute)) {
					t.Errorf("lastTransitionTime %v, want the end of the grace", ltt)
				}
			},
		},
		{
			name: "domain series not in yet, 90 s after Running: a fixed deadline",
			in: input(func(in *Input) { in.VMI = runningVMI(runningFor(90 * time.Second)) },
				withDomain(missing(true, -30*time.Second))),
			overall: "Healthy/Running", node: "Healthy/LauncherRunning",
			check: func(t *testing.T, r Result) {
				// Two intervals and the grace after Running: 3m - 90s.
				wantDeadline(90*time.Second, "domain stats due")(t, r)
				if r.Renews {
					t.Error("the domain stats deadline is marked as a renewing source's")
				}
				if s := r.Status.Layers.Node.StaleAt; s == nil || !s.Time.Equal(now.Add(90*time.Second)) {
					t.Errorf("node staleAt %v, want when the series are due", s)
				}
			},
		},
		{
			name: "domain series not in 3 minutes after Running",
			in: input(func(in *Input) { in.VMI = runningVMI(runningFor(3 * time.Minute)) },
				withDomain(missing(true, -150*time.Second))),
			overall: "Unknown/DomainStatsMissing", node: "Unknown/DomainStatsMissing",
		},
		{
			name:    "a domain series that vanished this sample is given the grace",
			in:      input(withDomain(missing(true, -10*time.Second))),
			overall: "Healthy/Running", node: "Healthy/LauncherRunning",
			check: wantDeadline(50*time.Second, "missing since + grace"),
		},
		{
			name:    "domain series missing during a migration: the handoff changes the exporter",
			in:      input(migrating, withDomain(missing(true, -5*time.Minute))),
			overall: "Progressing/Migrating", node: "Healthy/LauncherRunning",
		},
		{
			name: "domain series gone from a VMI that is being deleted",
			in: input(func(in *Input) {
				in.VMI = runningVMI(func(v *kubevirtv1.VirtualMachineInstance) { v.DeletionTimestamp = atp(-time.Minute) })
			}, withDomain(missing(true, -30*time.Second))),
			overall: "Progressing/Stopping", node: "Healthy/LauncherRunning",
			check: wantDeadline(4*time.Minute, "the stop's deadline, none for the domain stats"),
		},
		{
			name: "domain series missing on a node whose heartbeat is stale: the node is the cause",
			in: input(func(in *Input) { in.Nodes[nodeA] = node(nodeA, heartbeatAt(-6*time.Minute)) },
				withDomain(missing(false, -6*time.Minute))),
			overall: "Unknown/NodeAgentStale", node: "Unknown/NodeAgentStale", guest: "Unknown/EvidenceStale",
			check: func(t *testing.T, r Result) {
				wantMessage(t, r.Status.Layers.Node, "(also: DomainStatsMissing)")
				if e := r.Status.Layers.Node.Evidence[0]; e.Kind != kindNode || e.Field != hbField {
					t.Errorf("first evidence %+v, want the heartbeat: the cause's evidence comes first", e)
				}
			},
		},
		{
			name: "vCPUs stalled for 4 minutes",
			in: input(withDomain(func(d *vmifacts.DomainFacts) {
				d.VCPUUsage, d.VCPUStalledSince = sample(0), now.Add(-4*time.Minute)
			})),
			overall: "Degraded/GuestCPUStalled", node: "Healthy/LauncherRunning", guest: "Degraded/GuestCPUStalled",
			check: func(t *testing.T, r Result) {
				g := r.Status.Layers.Guest
				wantSeries(t, g, seriesVCPU, fieldRate, "0 cores since "+rfc(now.Add(-4*time.Minute)))
				if !g.LastTransitionTime.Time.Equal(now.Add(-4 * time.Minute)) {
					t.Errorf("lastTransitionTime %v, want when the vCPUs stopped", g.LastTransitionTime)
				}
				if s := r.Status.Domain; s == nil || quantity(s.VCPUUsage) != "0" {
					t.Errorf("status.domain %+v", s)
				}
			},
		},
		{
			name: "vCPUs stalled for a minute: a fixed deadline",
			in: input(withDomain(func(d *vmifacts.DomainFacts) {
				d.VCPUUsage, d.VCPUStalledSince = sample(0), now.Add(-time.Minute)
			})),
			overall: "Healthy/Running", guest: "Healthy/GuestAgentConnected",
			check: func(t *testing.T, r Result) {
				wantDeadline(2*time.Minute, "GuestCPUStalledAfter")(t, r)
				if s := r.Status.Layers.Guest.StaleAt; s == nil || !s.Time.Equal(now.Add(2*time.Minute)) {
					t.Errorf("guest staleAt %v", s)
				}
			},
		},
		{
			name: "a paused guest's vCPUs stand still by design",
			in: input(pausedByUserIn, withDomain(func(d *vmifacts.DomainFacts) {
				d.VCPUUsage, d.VCPUStalledSince = sample(0), now.Add(-time.Hour)
				d.MemoryUsable = sample(0)
			})),
			overall: "Suspended/PausedByUser", guest: "Suspended/PausedByUser",
		},
		{
			name:    "guest memory almost all in use, no thrashing: a note (KubeVirtVMGuestMemoryAvailableLow is info)",
			in:      input(withDomain(func(d *vmifacts.DomainFacts) { d.MemoryUsable = sample(100 << 20) })),
			overall: "Healthy/Running", guest: "Healthy/GuestAgentConnected",
			check: wantNote(layerGuest, v1alpha1.ReasonGuestMemoryAvailableLow),
		},
		{
			name:    "guest swapping with plenty of headroom is nothing",
			in:      input(withDomain(func(d *vmifacts.DomainFacts) { d.SwapRate = sample(3 << 20) })),
			overall: "Healthy/Running", guest: "Healthy/GuestAgentConnected",
			check: func(t *testing.T, r Result) {
				if strings.Contains(r.Status.Layers.Guest.Message, "(also:") {
					t.Errorf("guest message %q", r.Status.Layers.Guest.Message)
				}
			},
		},
		{
			name:    "a quarter of the guest's memory usable is no pressure by default",
			in:      input(withDomain(quarterUsable)),
			overall: "Healthy/Running", guest: "Healthy/GuestAgentConnected",
		},
		{
			name:    "spec.policy.guestMemoryAvailablePercent 30: a quarter usable is low headroom",
			in:      input(memoryOverride, withDomain(quarterUsable)),
			overall: "Healthy/Running", guest: "Healthy/GuestAgentConnected",
			check: wantNote(layerGuest, v1alpha1.ReasonGuestMemoryAvailableLow),
		},
		{
			name: "storage 30 times slower than usual",
			in: input(withDomain(func(d *vmifacts.DomainFacts) {
				d.StorageLatency, d.StorageBaseline = sample(0.120), sample(0.004)
			})),
			overall: "Degraded/StorageSlow", node: "Healthy/LauncherRunning", storage: "Degraded/StorageSlow", guest: "Healthy/GuestAgentConnected",
			check: func(t *testing.T, r Result) {
				n := r.Status.Layers.Storage
				wantMessage(t, n, "I/O operations take 120 ms each, 30× the VM's usual 4 ms (slow from 10× and 50 ms)")
				wantSeries(t, n, seriesStorageLatency, fieldRate, "120 ms")
				wantSeries(t, n, seriesStorageLatency, fieldBaseline, "4 ms")
				if s := r.Status.Domain; s == nil || s.StorageLatency == nil || s.StorageLatency.Duration != 120*time.Millisecond {
					t.Errorf("status.domain %+v", s)
				}
			},
		},
		{
			name: "storage 15 times slower than usual but under 50 ms",
			in: input(withDomain(func(d *vmifacts.DomainFacts) {
				d.StorageLatency, d.StorageBaseline = sample(0.030), sample(0.002)
			})),
			overall: "Healthy/Running", node: "Healthy/LauncherRunning",
		},
		{
			name:    "network errors",
			in:      input(withDomain(func(d *vmifacts.DomainFacts) { d.NetworkErrorRate = sample(3.5) })),
			overall: "Degraded/NetworkErrors", node: "Degraded/NetworkErrors",
			check: func(t *testing.T, r Result) {
				wantMessage(t, r.Status.Layers.Node, "the domain's interfaces report 3.5 errors and transmit drops per second (from 1/s)")
				wantSeries(t, r.Status.Layers.Node, seriesNetworkErrors, fieldRate, "3.5/s")
				if s := r.Status.Domain; s == nil || quantity(s.NetworkErrorRate) != "3500m" {
					t.Errorf("status.domain %+v", s)
				}
			},
		},
		{
			name:    "a migration whose remaining data has not shrunk over 3 samples",
			in:      input(migrating, withDomain(migrationJob(3<<30, 400<<20, 500<<20, 3))),
			overall: "Degraded/MigrationNotConverging", cp: "Degraded/MigrationNotConverging", node: "Healthy/LauncherRunning",
			check: func(t *testing.T, r Result) {
				cp := r.Status.Layers.ControlPlane
				wantMessage(t, cp, "migration kubevirt-evacuation-x2 is not converging: 3 GiB remaining, not shrinking over 3 samples; "+
					"the guest dirties memory at 400 MiB/s, copied at 500 MiB/s (also: Migrating)")
				wantSeries(t, cp, seriesMigRemaining, fieldMax, "3 GiB")
				wantSeries(t, cp, seriesMigRemaining, fieldShrinking, "3")
				wantSeries(t, cp, seriesMigDirty, fieldMax, "400 MiB/s")
				wantSeries(t, cp, seriesMigTransfer, fieldMax, "500 MiB/s")
				s := r.Status.Domain
				if s == nil || quantity(s.MigrationDataRemaining) != "3Gi" || quantity(s.MigrationDirtyRate) != "400Mi" ||
					quantity(s.MigrationTransferRate) != "500Mi" {
					t.Errorf("status.domain %+v", s)
				}
			},
		},
		{
			name:    "a migration whose guest dirties memory faster than it is copied",
			in:      input(migrating, withDomain(migrationJob(3<<30, 600<<20, 500<<20, 1))),
			overall: "Degraded/MigrationNotConverging", cp: "Degraded/MigrationNotConverging",
		},
		{
			name:    "a converging migration",
			in:      input(migrating, withDomain(migrationJob(3<<30, 100<<20, 500<<20, 0))),
			overall: "Progressing/Migrating", cp: "Progressing/Migrating",
		},
		{
			name:    "dirtying faster than copying while the remaining data shrinks",
			in:      input(migrating, withDomain(migrationJob(3<<30, 600<<20, 500<<20, 0))),
			overall: "Progressing/Migrating", cp: "Progressing/Migrating",
		},
		{
			name: "values that are not finite numbers are absent",
			in: input(withDomain(func(d *vmifacts.DomainFacts) {
				nan, inf := math.NaN(), math.Inf(1)
				for _, v := range []*vmifacts.Value{&d.VCPUUsage, &d.MemoryDomain, &d.SwapRate, &d.StorageReadRate,
					&d.NetworkReceiveRate, &d.MigrationDataRemaining} {
					*v = sample(nan)
				}
				for _, v := range []*vmifacts.Value{&d.MemoryAvailable, &d.StorageLatency, &d.NetworkErrorRate, &d.MigrationDirtyRate} {
					*v = sample(inf)
				}
				for _, v := range []*vmifacts.Value{&d.MemoryUsable, &d.StorageBaseline, &d.StorageWriteRate, &d.NetworkTransmitRate,
					&d.MigrationTransferRate} {
					*v = sample(-1)
				}
				d.MigrationNotShrinking = -5
			})),
			overall: "Healthy/Running", node: "Healthy/LauncherRunning", guest: "Healthy/GuestAgentConnected",
			check: func(t *testing.T, r Result) {
				s := r.Status.Domain
				if s == nil || s.SampledAt == nil {
					t.Fatalf("status.domain %+v", s)
				}
				if s.VCPUUsage != nil || s.MemoryAvailable != nil || s.MemoryUsed != nil || s.SwapRate != nil ||
					s.StorageLatency != nil || s.StorageWriteRate != nil || s.NetworkErrorRate != nil || s.MigrationTransferRate != nil {
					t.Errorf("status.domain renders values that are not numbers: %s", mustJSON(t, s))
				}
				if j := mustJSON(t, r.Status); bytes.Contains(j, []byte("NaN")) || bytes.Contains(j, []byte("Inf")) {
					t.Errorf("status carries NaN or Inf: %s", j)
				}
			},
		},
	}, domainEdgeSituations()...)
}

func TestDomainNumbers(t *testing.T) {
	for _, c := range []struct {
		got, want string
	}{
		{num(0), "0"},
		{num(0.25), "0.25"},
		{num(0.0004), "0"},
		{num(1.5), "1.5"},
		{num(2), "2"},
		{num(30), "30"},
		{num(12.34), "12.3"},
		{num(512), "512"},
		{num(3e12), "3e+12"},
		{bytesText(0), "0 B"},
		{bytesText(1000), "1000 B"},
		{bytesText(1 << 10), "1 KiB"},
		{bytesText(1.5 * (1 << 30)), "1.5 GiB"},
		{bytesText(1 << 62), "4 EiB"},
		{bytesText(math.MaxFloat64), "1.56e+290 EiB"},
		{secondsText(0.002), "2 ms"},
		{secondsText(0.0005), "0.5 ms"},
		{secondsText(1.25), "1.25 s"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

// The domain stats' edge cases: memory pressure (low headroom with major
// faults or swap), pauses without a Paused condition, the wording of a
// missing domain, receive drops, guest panics. They run in TestDomainStats
// and count for TestEveryReasonIsTested through domainSituations.

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

func domainEdgeSituations() []situation {
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

func TestMemoryPolicy(t *testing.T) {
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
