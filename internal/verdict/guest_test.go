package verdict

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/vmifacts"
)

// What the guest agent reports, the situations that were once judged
// wrong (the engine review's B1, B2, C1, C5, C6): a failing probe's path,
// an interface without an IP after the agent connects, a disconnection's
// grace, passt's interfaces, KubeVirt's filesystem exclusions and
// thresholds. B3 (the probe's freeze) is tested through the probe's own
// decode and fold in internal/guestprobe, since the facts no longer carry
// it.

func TestGuestAgentReports(t *testing.T) { run(t, agentReportSituations()) }

// wantFixed checks the time to the nearest deadline that is not a
// renewing source's.
func wantFixed(d time.Duration, what string) func(*testing.T, Result) {
	return func(t *testing.T, r Result) {
		t.Helper()
		if r.FixedDeadline != d {
			t.Errorf("FixedDeadline %v, want %v (%s)", r.FixedDeadline, d, what)
		}
	}
}

// wantAgentLost checks status.vmi.agentDisconnectedSince; d nil wants none.
func wantAgentLost(d *time.Duration) func(*testing.T, Result) {
	return func(t *testing.T, r Result) {
		t.Helper()
		got := r.Status.VMI.AgentDisconnectedSince
		switch {
		case d == nil && got != nil:
			t.Errorf("agentDisconnectedSince %v, want none", got)
		case d != nil && (got == nil || !got.Time.Equal(now.Add(*d))):
			t.Errorf("agentDisconnectedSince %v, want now%+v", got, *d)
		}
	}
}

// wantNoReason checks that no layer names reason, as its reason or a note.
func wantNoReason(reason string) func(*testing.T, Result) {
	return func(t *testing.T, r Result) {
		t.Helper()
		for _, l := range []v1alpha1.LayerStatus{r.Status.Layers.ControlPlane, r.Status.Layers.Node, r.Status.Layers.Guest, r.Status.Layers.Storage} {
			if l.Reason == reason || strings.Contains(l.Message, reason) {
				t.Errorf("layer %s/%s names %s: %s", l.Verdict, l.Reason, reason, l.Message)
			}
		}
	}
}

// agentConnectedAt is an AgentConnected condition added d ago, as
// virt-handler adds it (lastProbeTime only).
func agentConnectedAt(d time.Duration) vmiMod {
	return withCondition(kubevirtv1.VirtualMachineInstanceCondition{
		Type: kubevirtv1.VirtualMachineInstanceAgentConnected, Status: corev1.ConditionTrue, LastProbeTime: at(d),
	})
}

// primaryWithoutIP is the primary interface as the agent reports it
// before DHCP: virt-handler cleared the pod cache's address
// (kv:pkg/network/setup/netstat.go:371-398).
func primaryWithoutIP(v *kubevirtv1.VirtualMachineInstance) {
	v.Status.Interfaces[0].IP, v.Status.Interfaces[0].IPs = "", nil
}

// binding sets the primary interface's binding.
func binding(b kubevirtv1.InterfaceBindingMethod) vmiMod {
	return func(v *kubevirtv1.VirtualMachineInstance) {
		v.Spec.Domain.Devices.Interfaces[0].InterfaceBindingMethod = b
	}
}

// disconnectedSince is a previous status of the running VMI whose agent
// was first seen disconnected d ago.
func disconnectedSince(d time.Duration) inputMod {
	return func(in *Input) {
		in.Previous = &v1alpha1.VMObservationStatus{VMI: &v1alpha1.VMISummary{Name: vmName, UID: vmiUID, AgentDisconnectedSince: atp(d)}}
	}
}

// fsSteps is a filesystem at used percent whose run went through the
// given levels, each (percent, since).
func fsSteps(mount string, used int32, steps ...vmifacts.FilesystemStep) vmifacts.GuestFilesystem {
	fs := vmifacts.GuestFilesystem{MountPoint: mount, Type: "xfs", UsedPercent: used, Steps: steps}
	fs.Since = steps[len(steps)-1].Since
	return fs
}

func agentReportSituations() []situation {
	gone := func(in *Input) { in.VMI = runningVMI(agentGone()) }
	zero := time.Duration(0)
	lostAt := func(d time.Duration) *time.Duration { return &d }
	filesystems := func(fs ...vmifacts.GuestFilesystem) func(*vmifacts.GuestFacts) {
		return func(g *vmifacts.GuestFacts) { g.Filesystems = fs }
	}
	step := func(p int32, d time.Duration) vmifacts.FilesystemStep {
		return vmifacts.FilesystemStep{Percent: p, Since: now.Add(d)}
	}
	policy := func(mod func(*Policy)) inputMod { return func(in *Input) { mod(&in.Policy) } }
	return []situation{
		// B1: a failing probe is the path virt-api → virt-handler →
		// virt-launcher, on the node layer; it says nothing of the agent.
		{
			name:    "B1: probes of a connected agent keep failing: the node layer names the path, the guest stays judged by the VMI",
			in:      input(withGuest(failing(3, -10*time.Minute))),
			overall: "Unknown/GuestInfoUnreachable", node: "Unknown/GuestInfoUnreachable", guest: "Healthy/GuestAgentConnected",
			check: all(wantLayerMessage(layerNode, "virt-api could not read the guest information", "through virt-handler on node-a", "the guest agent itself is not asked"),
				wantNoReason("AgentUnresponsive"),
				func(t *testing.T, r Result) {
					if strings.Contains(r.Status.Layers.Guest.Message, "has not answered") {
						t.Errorf("the guest layer blames the agent: %s", r.Status.Layers.Guest.Message)
					}
					// Each further failed probe must not rewrite the status.
					if more := Evaluate(input(withGuest(failing(7, -10*time.Minute)))).Status.Layers.Node; more.Message != r.Status.Layers.Node.Message {
						t.Errorf("the message moves with the count of failures:\n%s\n%s", r.Status.Layers.Node.Message, more.Message)
					}
				}),
		},
		{
			name: "B1: virt-api finds no virt-handler on the VMI's node: the node layer says so",
			in: input(withGuest(failing(3, -6*time.Minute), func(g *vmifacts.GuestFacts) {
				g.LastError = "guestosinfo: virt-api finds no virt-handler on the VMI's node (500): No virt-handler on node node-a found"
			})),
			overall: "Unknown/GuestInfoUnreachable", node: "Unknown/GuestInfoUnreachable", guest: "Healthy/GuestAgentConnected",
			check: wantLayerMessage(layerNode, "No virt-handler on node node-a found"),
		},
		{
			name:    "B1: a stale heartbeat already explains failing probes: no second finding",
			in:      input(func(in *Input) { in.Nodes[nodeA] = node(nodeA, heartbeatAt(-10*time.Minute)) }, withGuest(failing(5, -10*time.Minute))),
			overall: "Unknown/NodeAgentStale", node: "Unknown/NodeAgentStale",
			check: wantNoReason(v1alpha1.ReasonGuestInfoUnreachable),
		},

		// C5: the primary interface without an IP right after the agent
		// connected is a boot before DHCP, not a fault.
		{
			name:    "C5: the agent connected two minutes ago and the primary interface has no IP yet: Healthy until AgentGracePeriod",
			in:      input(func(in *Input) { in.VMI = runningVMI(agentConnectedAt(-2*time.Minute), primaryWithoutIP) }),
			overall: "Healthy/Running", guest: "Healthy/GuestAgentConnected",
			check: all(wantFixed(3*time.Minute, "AgentGracePeriod after the connection"), wantNoReason(v1alpha1.ReasonGuestInterfaceDataMissing)),
		},
		{
			name:    "C5: a reboot's agent connected 30 s ago: still no finding",
			in:      input(func(in *Input) { in.VMI = runningVMI(agentConnectedAt(-30*time.Second), primaryWithoutIP) }),
			overall: "Healthy/Running", guest: "Healthy/GuestAgentConnected",
		},
		{
			name:    "C5: no IP six minutes after the agent connected: Degraded, dated at the grace's end",
			in:      input(func(in *Input) { in.VMI = runningVMI(agentConnectedAt(-6*time.Minute), primaryWithoutIP) }),
			overall: "Degraded/GuestInterfaceDataMissing", guest: "Degraded/GuestInterfaceDataMissing",
			check: all(wantLayerMessage(layerGuest, "primary interface default without any IP address"), wantGuestSince(-time.Minute)),
		},

		// C6: a disconnection gets AgentGracePeriod from its first
		// sighting; a guest reboot is never Degraded.
		{
			name:    "C6: the agent just disconnected (a guest reboot): Progressing, the first sighting recorded, back at the grace's end",
			in:      input(gone),
			overall: "Progressing/AgentConnecting", guest: "Progressing/AgentConnecting",
			check: all(wantAgentLost(&zero), wantFixed(5*time.Minute, "AgentGracePeriod after the disconnection"),
				wantStaleAt(layerGuest, 5*time.Minute), wantLayerMessage(layerGuest, "disconnected", "may reconnect until"),
				wantNoReason(v1alpha1.ReasonAgentDisconnected)),
		},
		{
			name:    "C6: disconnected three minutes ago by the previous status: still Progressing, the sighting kept",
			in:      input(gone, disconnectedSince(-3*time.Minute)),
			overall: "Progressing/AgentConnecting", guest: "Progressing/AgentConnecting",
			check: all(wantAgentLost(lostAt(-3*time.Minute)), wantFixed(2*time.Minute, "the grace's end")),
		},
		{
			name:    "C6: disconnected six minutes ago: Degraded, dated at the grace's end",
			in:      input(gone, disconnectedSince(-6*time.Minute)),
			overall: "Degraded/AgentDisconnected", guest: "Degraded/AgentDisconnected",
			check: all(wantAgentLost(lostAt(-6*time.Minute)), wantGuestSince(-time.Minute), wantLayerMessage(layerGuest, "5m0s after its disconnection was first seen")),
		},
		{
			name:    "C6: the rebooted guest's agent is back within the grace: Healthy, the sighting dropped",
			in:      input(func(in *Input) { in.VMI = runningVMI(agentConnectedAt(-10 * time.Second)) }, disconnectedSince(-2*time.Minute)),
			overall: "Healthy/Running", guest: "Healthy/GuestAgentConnected",
			check: wantAgentLost(nil),
		},
		{
			name:    "C6: only the previous status's sighting shows an agent was there: still waited for",
			in:      input(func(in *Input) { in.VMI = runningVMI(noAgentEver()) }, disconnectedSince(-time.Minute)),
			overall: "Progressing/AgentConnecting",
			check:   wantAgentLost(lostAt(-time.Minute)),
		},
		{
			name:    "C6: a sighting in the future is not trusted: counted from now",
			in:      input(gone, disconnectedSince(time.Hour)),
			overall: "Progressing/AgentConnecting",
			check:   all(wantAgentLost(&zero), wantFixed(5*time.Minute, "the grace from now")),
		},
		{
			name:    "C6: a guest that never ran an agent records no disconnection",
			in:      input(func(in *Input) { in.VMI = runningVMI(noAgentEver()) }),
			overall: "Healthy/Running", guest: "Healthy/NoGuestAgent",
			check: wantAgentLost(nil),
		},

		// C1: passt (core passtBinding since v1.8, or the passt binding
		// plugin) is reported like masquerade: the status carries the
		// pod's IPs.
		{
			name: "C1: passtBinding with a status IP that is not the pod's: Degraded",
			in: input(func(in *Input) {
				in.VMI = runningVMI(binding(kubevirtv1.InterfaceBindingMethod{PasstBinding: &kubevirtv1.InterfacePasstBinding{}}), guestIP("192.0.2.7"))
			}),
			overall: "Degraded/GuestIPMismatch", guest: "Degraded/GuestIPMismatch",
			check: wantLayerMessage(layerGuest, "differ from the pod network's on default"),
		},
		{
			name: "C1: the passt binding plugin with a status IP that is not the pod's: Degraded",
			in: input(func(in *Input) {
				in.VMI = runningVMI(plugin("passt"), guestIP("192.0.2.7"))
			}),
			overall: "Degraded/GuestIPMismatch", guest: "Degraded/GuestIPMismatch",
		},
		{
			name: "C1: passtBinding with the pod's IPs: Healthy",
			in: input(func(in *Input) {
				in.VMI = runningVMI(binding(kubevirtv1.InterfaceBindingMethod{PasstBinding: &kubevirtv1.InterfacePasstBinding{}}))
			}),
			overall: "Healthy/Running", guest: "Healthy/GuestAgentConnected",
		},
		{
			name: "C1: a binding plugin on a pod without IPs is not compared",
			in: input(func(in *Input) {
				in.VMI = runningVMI(plugin("passt"), guestIP("192.0.2.7"))
				in.Pods = []*corev1.Pod{launcherPod(func(p *corev1.Pod) { p.Status.PodIP, p.Status.PodIPs = "", nil })}
			}),
			overall: "Healthy/Running", guest: "Healthy/GuestAgentConnected",
		},
		{
			name:    "C1: masquerade's NAT-internal address: virt-handler's reporting, with the pod IP and the KubeVirt issue",
			in:      input(func(in *Input) { in.VMI = runningVMI(guestIP("10.0.2.2")) }),
			overall: "Degraded/GuestIPMismatch", guest: "Degraded/GuestIPMismatch",
			check: all(wantLayerMessage(layerGuest, "virt-handler reports the NAT-internal address 10.0.2.2 on default instead of pod IP 10.244.1.17,fd10:244::11 (kubevirt#18760)"),
				func(t *testing.T, r Result) {
					if strings.Contains(r.Status.Layers.Guest.Message, "the guest reports") {
						t.Errorf("blames the guest: %s", r.Status.Layers.Guest.Message)
					}
				}),
		},

		// B2: KubeVirt's exclusions and thresholds.
		{
			name: "B2: full-by-design filesystems (snap squashfs, ISO, Windows' System Reserved, tmpfs, overlay, fuse, cgroup) are not judged",
			in: input(withGuest(filesystems(
				vmifacts.GuestFilesystem{MountPoint: "/snap/core22/1380", Type: "squashfs", UsedPercent: 100, Since: now.Add(-time.Hour)},
				vmifacts.GuestFilesystem{MountPoint: "/media/cdrom", Type: "iso9660", UsedPercent: 100, Since: now.Add(-time.Hour)},
				vmifacts.GuestFilesystem{MountPoint: "D:\\", Type: "UDF", UsedPercent: 100, Since: now.Add(-time.Hour)},
				vmifacts.GuestFilesystem{MountPoint: "System Reserved", Type: "NTFS", UsedPercent: 95, Since: now.Add(-time.Hour)},
				vmifacts.GuestFilesystem{MountPoint: "/run", Type: "tmpfs", UsedPercent: 100, Since: now.Add(-time.Hour)},
				vmifacts.GuestFilesystem{MountPoint: "/var/lib/containers/x", Type: "overlay", UsedPercent: 100, Since: now.Add(-time.Hour)},
				vmifacts.GuestFilesystem{MountPoint: "/mnt/remote", Type: "fuse.sshfs", UsedPercent: 100, Since: now.Add(-time.Hour)},
				vmifacts.GuestFilesystem{MountPoint: "/sys/fs/cgroup", Type: "cgroup2", UsedPercent: 100, Since: now.Add(-time.Hour)},
				vmifacts.GuestFilesystem{MountPoint: "/", Type: "xfs", UsedPercent: 40, Since: now.Add(-time.Hour)},
			))),
			overall: "Healthy/Running", guest: "Healthy/GuestAgentConnected",
			check: wantNoReason(v1alpha1.ReasonFilesystemNearlyFull),
		},
		{
			name:    "B2: 85% for five minutes: a note, looked at again when ten have passed",
			in:      input(withGuest(filesystems(fsSteps("/", 85, step(85, -5*time.Minute))))),
			overall: "Healthy/Running", guest: "Healthy/GuestAgentConnected",
			check: all(wantNote(layerGuest, v1alpha1.ReasonFilesystemNearlyFull), wantFixed(5*time.Minute, "FilesystemFullFor after 85%"), wantStaleAt(layerGuest, 5*time.Minute)),
		},
		{
			name:    "B2: 85% for eleven minutes: Degraded (KubeVirt's warning), dated when the ten minutes ended",
			in:      input(withGuest(filesystems(fsSteps("/", 85, step(85, -11*time.Minute))))),
			overall: "Degraded/FilesystemNearlyFull", guest: "Degraded/FilesystemNearlyFull",
			check: all(wantGuestSince(-time.Minute), wantLayerMessage(layerGuest, "/ 85% used (85% or more for 10m0s, or 95% or more)")),
		},
		{
			name:    "B2: 95% seen a minute ago: Degraded at once (KubeVirt's critical)",
			in:      input(withGuest(filesystems(fsSteps("/data", 95, step(95, -time.Minute))))),
			overall: "Degraded/FilesystemNearlyFull",
			check:   wantGuestSince(-time.Minute),
		},
		{
			name:    "B2: at 85% for twelve minutes, at 90% for two: the ten minutes count from 85%",
			in:      input(withGuest(filesystems(fsSteps("/", 90, step(85, -12*time.Minute), step(90, -2*time.Minute))))),
			overall: "Degraded/FilesystemNearlyFull",
			check:   wantGuestSince(-2 * time.Minute),
		},
		{
			name: "B2: the thresholds and the duration are policy: 99% critical, 30m at 85%",
			in: input(withGuest(filesystems(fsSteps("/", 95, step(85, -20*time.Minute), step(95, -15*time.Minute)))),
				policy(func(p *Policy) { p.FilesystemCriticalPercent, p.FilesystemFullFor = 99, 30*time.Minute })),
			overall: "Healthy/Running",
			check:   all(wantNote(layerGuest, v1alpha1.ReasonFilesystemNearlyFull), wantFixed(10*time.Minute, "30m after 85%")),
		},
		{
			name:    "B2: a filesystem whose level the facts do not date is judged as if its time had come",
			in:      input(withGuest(filesystems(vmifacts.GuestFilesystem{MountPoint: "/", Type: "xfs", UsedPercent: 90}))),
			overall: "Degraded/FilesystemNearlyFull",
		},
		{
			name: "B2: with the probe unavailable nothing is judged",
			in: input(withGuest(func(g *vmifacts.GuestFacts) {
				*g = vmifacts.GuestFacts{Unavailable: "virt-api's subresource API is unavailable", Filesystems: []vmifacts.GuestFilesystem{fsSteps("/", 100, step(100, -time.Hour))}}
			})),
			overall: "Healthy/Running",
			check:   wantNoReason(v1alpha1.ReasonFilesystemNearlyFull),
		},
	}
}

// plugin binds the primary interface with the network binding plugin name.
func plugin(name string) vmiMod {
	return func(v *kubevirtv1.VirtualMachineInstance) {
		ifc := &v.Spec.Domain.Devices.Interfaces[0]
		ifc.InterfaceBindingMethod = kubevirtv1.InterfaceBindingMethod{}
		ifc.Binding = &kubevirtv1.PluginBinding{Name: name}
	}
}
