package verdict

import (
	"bytes"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/vmifacts"
)

func TestGuestProbe(t *testing.T) { run(t, probeSituations()) }

// usage sets the filesystems the probe saw, in the fold's order (fullest
// first), each in its bucket since d ago.
func usage(d time.Duration, fs ...vmifacts.GuestFilesystem) func(*vmifacts.GuestFacts) {
	return func(g *vmifacts.GuestFacts) {
		for i := range fs {
			fs[i].Since = now.Add(d)
		}
		g.Filesystems = fs
	}
}

// failing makes the last n probes fail since d ago.
func failing(n int32, d time.Duration) func(*vmifacts.GuestFacts) {
	return func(g *vmifacts.GuestFacts) {
		g.Failures, g.FailingSince = n, now.Add(d)
		g.LastError = "guestosinfo: the server was unable to return a response in the time allotted (timeout 10s)"
	}
}

// withoutProbe checks that the probe's facts left every verdict as it is
// without them, and the overall message too but for a note's reason.
func withoutProbe(without Input, note string) func(*testing.T, Result) {
	return func(t *testing.T, r Result) {
		t.Helper()
		want := Evaluate(without).Status
		got := r.Status
		msg := strings.TrimSuffix(got.Message, " (also: "+note+")")
		if got.Verdict != want.Verdict || got.Reason != want.Reason || msg != want.Message {
			t.Errorf("overall %s/%s %q, want %s/%s %q as without the probe", got.Verdict, got.Reason, got.Message,
				want.Verdict, want.Reason, want.Message)
		}
		if vr(got.Layers.Guest) != vr(want.Layers.Guest) {
			t.Errorf("guest %s, want %s as without the probe", vr(got.Layers.Guest), vr(want.Layers.Guest))
		}
	}
}

// wantGuestSince checks the guest layer's lastTransitionTime: with no
// previous status it is when the deciding evidence began.
func wantGuestSince(d time.Duration) func(*testing.T, Result) {
	return func(t *testing.T, r Result) {
		t.Helper()
		if ltt := r.Status.Layers.Guest.LastTransitionTime; !ltt.Time.Equal(now.Add(d)) {
			t.Errorf("guest lastTransitionTime %v, want now%+v", ltt, d)
		}
	}
}

func probeSituations() []situation {
	full := usage(-20*time.Minute,
		vmifacts.GuestFilesystem{MountPoint: "/var", Type: "xfs", UsedPercent: 95},
		vmifacts.GuestFilesystem{MountPoint: "/", Type: "xfs", UsedPercent: 90},
		vmifacts.GuestFilesystem{MountPoint: "/boot", Type: "ext4", UsedPercent: 20})
	overrides := func(o v1alpha1.PolicyOverrides) inputMod {
		return func(in *Input) { in.Policy = DefaultPolicy().WithOverrides(&o) }
	}
	unavailable := func(g *vmifacts.GuestFacts) {
		*g = vmifacts.GuestFacts{Unavailable: "virt-api answers 503 Service Unavailable: the server is currently unable to handle the request"}
	}
	nodeNotReady := func(in *Input) { in.Nodes[nodeA] = node(nodeA, nodeReady(corev1.ConditionFalse)) }
	return []situation{
		{
			name:    "a guest that answers the probe: the summary gains what it said, nothing else changes",
			in:      input(withGuest()),
			overall: "Healthy/Running", guest: "Healthy/GuestAgentConnected",
			check: func(t *testing.T, r Result) {
				without := Evaluate(input())
				a, b := r.Status.DeepCopy(), without.Status.DeepCopy()
				a.Guest, b.Guest = nil, nil
				if !bytes.Equal(mustJSON(t, a), mustJSON(t, b)) || r.NextDeadline != without.NextDeadline {
					t.Errorf("the probe changed the status:\nwith:    %s\nwithout: %s", mustJSON(t, a), mustJSON(t, b))
				}
				g := r.Status.Guest
				if g.Hostname != "vm-1.example.org" || g.Timezone != "UTC, 0" || g.Users == nil || *g.Users != 2 {
					t.Errorf("guest summary %+v", g)
				}
				if len(g.Filesystems) != 2 || g.Filesystems[0] != (v1alpha1.GuestFilesystem{MountPoint: "/", Type: "xfs", UsedPercent: 40}) {
					t.Errorf("filesystems %+v", g.Filesystems)
				}
				// The VMI's own guestOSInfo stays first.
				if g.OSPrettyName != without.Status.Guest.OSPrettyName {
					t.Errorf("osPrettyName %q, want the VMI's %q", g.OSPrettyName, without.Status.Guest.OSPrettyName)
				}
			},
		},
		{
			name: "the probe fills the OS a VMI without guestOSInfo lacks",
			in: input(func(in *Input) {
				in.VMI = runningVMI(func(v *kubevirtv1.VirtualMachineInstance) {
					v.Status.GuestOSInfo = kubevirtv1.VirtualMachineInstanceGuestOSInfo{}
				})
			}, withGuest()),
			overall: "Healthy/Running",
			check: func(t *testing.T, r Result) {
				if g := r.Status.Guest; g.OSPrettyName != "Fedora Linux 41 (Cloud Edition)" || g.KernelRelease != "6.11.4-301.fc41.x86_64" {
					t.Errorf("os %q kernel %q", g.OSPrettyName, g.KernelRelease)
				}
			},
		},
		{
			name:    "two filesystems at or above 90%: Degraded, worst first",
			in:      input(withGuest(full)),
			overall: "Degraded/FilesystemNearlyFull", guest: "Degraded/FilesystemNearlyFull", node: "Healthy/LauncherRunning",
			check: all(wantLayerMessage(layerGuest, "guest filesystems nearly full: /var 95%, / 90% used (85% or more for 10m0s, or 95% or more)"),
				wantGuestSince(-20*time.Minute),
				func(t *testing.T, r Result) {
					wantEvidence(t, r.Status.Layers.Guest, "filesystemlist[/var].used", "95%")
					wantEvidence(t, r.Status.Layers.Guest, "filesystemlist[/].used", "90%")
					if hasEvidence(r.Status.Layers.Guest, kindProbe, vmName, "filesystemlist[/boot]") {
						t.Error("cites /boot, which is not full")
					}
				}),
		},
		{
			name:    "spec.policy.filesystemUsedPercent 95: only /var counts",
			in:      input(withGuest(full), overrides(v1alpha1.PolicyOverrides{FilesystemUsedPercent: ptr(int32(95))})),
			overall: "Degraded/FilesystemNearlyFull",
			check:   wantLayerMessage(layerGuest, "nearly full: /var 95% used (95% or more)"),
		},
		{
			name:    "80% used is not nearly full",
			in:      input(withGuest(usage(-time.Hour, vmifacts.GuestFilesystem{MountPoint: "/", UsedPercent: 80}))),
			overall: "Healthy/Running", guest: "Healthy/GuestAgentConnected",
		},
		{
			name: "six full filesystems: four named, the rest counted",
			in: input(withGuest(usage(-20*time.Minute,
				vmifacts.GuestFilesystem{MountPoint: "/a", UsedPercent: 100}, vmifacts.GuestFilesystem{MountPoint: "/b", UsedPercent: 100},
				vmifacts.GuestFilesystem{MountPoint: "/c", UsedPercent: 95}, vmifacts.GuestFilesystem{MountPoint: "/d", UsedPercent: 95},
				vmifacts.GuestFilesystem{MountPoint: "/e", UsedPercent: 90}, vmifacts.GuestFilesystem{MountPoint: "/f", UsedPercent: 90}))),
			overall: "Degraded/FilesystemNearlyFull",
			check:   wantLayerMessage(layerGuest, "/a 100%, /b 100%, /c 95%, /d 95% and 2 more used"),
		},
		{
			name:    "two failed probes are not yet unresponsive",
			in:      input(withGuest(failing(2, -5*time.Minute))),
			overall: "Healthy/Running", guest: "Healthy/GuestAgentConnected",
		},
		{
			name:    "three failed probes of a connected agent: the path to the launcher, on the node layer",
			in:      input(withGuest(full, failing(3, -10*time.Minute))),
			overall: "Unknown/GuestInfoUnreachable", guest: "Healthy/GuestAgentConnected", node: "Unknown/GuestInfoUnreachable",
			check: all(
				wantLayerMessage(layerNode, "through virt-handler on node-a in the last 3 probes", "timeout 10s"),
				func(t *testing.T, r Result) {
					// Old answers the path no longer refreshes are not judged.
					if strings.Contains(r.Status.Layers.Guest.Message, v1alpha1.ReasonFilesystemNearlyFull) {
						t.Errorf("judged stale filesystems: %q", r.Status.Layers.Guest.Message)
					}
					if ltt := r.Status.Layers.Node.LastTransitionTime; !ltt.Time.Equal(now.Add(-10 * time.Minute)) {
						t.Errorf("node lastTransitionTime %v, want the first failed probe", ltt)
					}
					wantEvidence(t, r.Status.Layers.Node, probeOSInfo, "failing since "+rfc(now.Add(-10*time.Minute))+
						": guestosinfo: the server was unable to return a response in the time allotted (timeout 10s)")
				}),
		},
		{
			name:    "spec.policy.agentUnresponsiveProbes 5: three failures are not enough",
			in:      input(withGuest(failing(3, -10*time.Minute)), overrides(v1alpha1.PolicyOverrides{AgentUnresponsiveProbes: ptr(int32(5))})),
			overall: "Healthy/Running",
		},
		{
			name:    "an agent that never answered and now fails",
			in:      input(withGuest(func(g *vmifacts.GuestFacts) { *g = vmifacts.GuestFacts{VMIUID: vmiUID} }, failing(3, -15*time.Minute))),
			overall: "Unknown/GuestInfoUnreachable",
			check: func(t *testing.T, r Result) {
				if g := r.Status.Guest; g.Hostname != "" || g.Users != nil || g.Filesystems != nil {
					t.Errorf("summary of a guest never answered: %+v", g)
				}
			},
		},
		{
			name:    "probe unavailable: a note on the guest layer, nothing else",
			in:      input(withGuest(unavailable)),
			overall: "Healthy/Running", guest: "Healthy/GuestAgentConnected",
			check: all(wantNote(layerGuest, v1alpha1.ReasonGuestProbeUnavailable), withoutProbe(input(), v1alpha1.ReasonGuestProbeUnavailable),
				func(t *testing.T, r Result) {
					if g := r.Status.Guest; g.Hostname != "" || g.Filesystems != nil {
						t.Errorf("summary from an unavailable probe: %+v", g)
					}
				}),
		},
		{
			name:    "probe unavailable on a NotReady node: the verdict is the node's",
			in:      input(nodeNotReady, withGuest(unavailable)),
			overall: "Degraded/NodeNotReady",
			check:   withoutProbe(input(nodeNotReady), v1alpha1.ReasonGuestProbeUnavailable),
		},
		{
			name:    "the node caps the guest: failed probes are the node's doing",
			in:      input(nodeNotReady, withGuest(failing(5, -10*time.Minute))),
			overall: "Degraded/NodeNotReady",
			check:   withoutProbe(input(nodeNotReady), ""),
		},
		{
			name:    "facts of an earlier VMI of the same name are ignored",
			in:      input(withGuest(full, failing(5, -time.Hour), func(g *vmifacts.GuestFacts) { g.VMIUID = "an-earlier-vmi" })),
			overall: "Healthy/Running", guest: "Healthy/GuestAgentConnected",
			check: func(t *testing.T, r Result) {
				if r.Status.Guest.Hostname != "" {
					t.Errorf("hostname %q from another VMI", r.Status.Guest.Hostname)
				}
			},
		},
		{
			name:    "a guest paused by its user is not judged by its filesystems",
			in:      input(func(in *Input) { in.VMI = runningVMI(paused(pausedByUser)) }, withGuest(full, failing(4, -time.Hour))),
			overall: "Suspended/PausedByUser", guest: "Suspended/PausedByUser",
		},
		{
			name: "an agent the VMI no longer calls connected: the probe's leftovers are not judged",
			in: input(func(in *Input) {
				in.VMI = runningVMI(agentGone())
				in.Previous = &v1alpha1.VMObservationStatus{VMI: &v1alpha1.VMISummary{Name: vmName, UID: vmiUID, AgentDisconnectedSince: atp(-time.Hour)}}
			}, withGuest(full, failing(4, -time.Hour))),
			guest:   "Degraded/AgentDisconnected",
			overall: "Degraded/AgentDisconnected",
		},
		{
			name: "hostile answers are bounded in the status",
			in: input(withGuest(func(g *vmifacts.GuestFacts) {
				g.Hostname = strings.Repeat("h", 4096)
				g.Timezone = strings.Repeat("z", 1000)
				g.Users = 1 << 20
				g.Filesystems = nil
				for range 40 {
					g.Filesystems = append(g.Filesystems, vmifacts.GuestFilesystem{MountPoint: strings.Repeat("/m", 300), Type: strings.Repeat("t", 100), UsedPercent: 140})
				}
			})),
			overall: "Degraded/FilesystemNearlyFull",
			check: func(t *testing.T, r Result) {
				g := r.Status.Guest
				if len(g.Hostname) > vmifacts.MaxGuestString || len(g.Timezone) > vmifacts.MaxGuestString || *g.Users != vmifacts.MaxGuestUsers {
					t.Errorf("hostname %d bytes, timezone %d, users %d", len(g.Hostname), len(g.Timezone), *g.Users)
				}
				if len(g.Filesystems) != vmifacts.MaxGuestFilesystems {
					t.Fatalf("%d filesystems", len(g.Filesystems))
				}
				if fs := g.Filesystems[0]; len(fs.MountPoint) > vmifacts.MaxGuestString || len(fs.Type) > 64 || fs.UsedPercent != 100 {
					t.Errorf("filesystem %d bytes, type %d, %d%%", len(fs.MountPoint), len(fs.Type), fs.UsedPercent)
				}
			},
		},
	}
}
