package verdict

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/api/v1alpha1"
)

// hotMemory is virt-controller's answer to a memory hotplug request: the
// VMI's spec raised to guest (handleMemoryHotplugRequest), and
// HotMemoryChange=True with neither time nor reason (syncHotplugCondition).
func hotMemory(guest string) vmiMod {
	return func(v *kubevirtv1.VirtualMachineInstance) {
		v.Spec.Domain.Memory.Guest = ptr(resource.MustParse(guest))
		withCondition(kubevirtv1.VirtualMachineInstanceCondition{
			Type: kubevirtv1.VirtualMachineInstanceMemoryChange, Status: corev1.ConditionTrue,
		})(v)
	}
}

// memoryNotTaken is a memory hotplug virt-handler applied on the target of
// a migration that ended `ended` ago (guestRequested raised, the condition
// removed) while the guest still has only its boot memory.
func memoryNotTaken(guest string, ended time.Duration) vmiMod {
	return func(v *kubevirtv1.VirtualMachineInstance) {
		q := resource.MustParse(guest)
		v.Spec.Domain.Memory.Guest, v.Status.Memory.GuestRequested = ptr(q), ptr(q)
		migrationState(func(st *kubevirtv1.VirtualMachineInstanceMigrationState) {
			st.SourceNode, st.SourcePod, st.TargetNode, st.TargetPod = nodeB, pod2Name, nodeA, podName
			st.Completed, st.EndTimestamp = true, atp(ended)
		})(v)
	}
}

// hotCPU is virt-controller's answer to a CPU hotplug request: the VMI's
// spec raised to sockets (handleCPUChangeRequest) and HotVCPUChange=True.
func hotCPU(sockets uint32) vmiMod {
	return func(v *kubevirtv1.VirtualMachineInstance) {
		v.Spec.Domain.CPU.Sockets = sockets
		withCondition(kubevirtv1.VirtualMachineInstanceCondition{
			Type: kubevirtv1.VirtualMachineInstanceVCPUChange, Status: corev1.ConditionTrue,
		})(v)
	}
}

// frozen is what virt-handler writes while the guest agent reports the
// filesystems frozen.
func frozen(v *kubevirtv1.VirtualMachineInstance) { v.Status.FSFreezeStatus = fsFrozen }

// seen is a previous status of the VMI uid with its first sightings.
func seen(uid types.UID, hotplug, frozenAt *metav1.Time) *v1alpha1.VMObservationStatus {
	return &v1alpha1.VMObservationStatus{VMI: &v1alpha1.VMISummary{Name: vmName, UID: uid, HotplugSince: hotplug, FSFrozenSince: frozenAt}}
}

func wantStaleAt(layer int, d time.Duration) func(*testing.T, Result) {
	return func(t *testing.T, r Result) {
		t.Helper()
		l := layerAt(r, layer)
		if l.StaleAt == nil || !l.StaleAt.Time.Equal(now.Add(d)) {
			t.Errorf("staleAt %v, want now+%v", l.StaleAt, d)
		}
	}
}

func wantSince(field string, d time.Duration) func(*testing.T, Result) {
	return func(t *testing.T, r Result) {
		t.Helper()
		got := map[string]*metav1.Time{"hotplug": r.Status.VMI.HotplugSince, "frozen": r.Status.VMI.FSFrozenSince}[field]
		if got == nil || !got.Time.Equal(now.Add(d)) {
			t.Errorf("%s since %v, want now%+v", field, got, d)
		}
	}
}

func wantLayerMessage(layer int, parts ...string) func(*testing.T, Result) {
	return func(t *testing.T, r Result) {
		t.Helper()
		l := layerAt(r, layer)
		for _, p := range parts {
			if !strings.Contains(l.Message, p) {
				t.Errorf("layer message %q lacks %q", l.Message, p)
			}
		}
	}
}

func all(checks ...func(*testing.T, Result)) func(*testing.T, Result) {
	return func(t *testing.T, r Result) {
		t.Helper()
		for _, c := range checks {
			c(t, r)
		}
	}
}

func TestRuntimeDetails(t *testing.T) { run(t, runtimeSituations()) }

func runtimeSituations() []situation {
	overrides := func(o v1alpha1.PolicyOverrides) Policy { return DefaultPolicy().WithOverrides(&o) }
	return []situation{
		{
			// The workload updater's queue runs no clock (engine review C4).
			name:    "memory hotplug requested, first seen now: Progressing in the workload updater's queue",
			in:      input(func(in *Input) { in.VMI = runningVMI(hotMemory("8Gi")) }),
			overall: "Progressing/MemoryHotplugPending", cp: "Progressing/MemoryHotplugPending",
			check: all(wantNoStaleAt(layerCP), wantSince("hotplug", 0), wantLayerMessage(layerCP, "workload-updater queue"),
				wantLayerMessage(layerCP, "memory hotplug to 8Gi is requested", "HotMemoryChange"),
				func(t *testing.T, r Result) {
					wantEvidence(t, r.Status.Layers.ControlPlane, "spec.domain.memory.guest", "8Gi")
					wantEvidence(t, r.Status.Layers.ControlPlane, "status.conditions[HotMemoryChange].status", "True")
					if m := r.Status.VMI.Memory; m == nil || m.Guest.String() != "8Gi" || m.GuestRequested.String() != "4Gi" || m.GuestCurrent.String() != "4Gi" {
						t.Errorf("memory %+v", m)
					}
				}),
		},
		{
			name: "memory hotplug pending for four minutes (the previous status saw it first)",
			in: input(func(in *Input) {
				in.VMI = runningVMI(hotMemory("8Gi"))
				in.Previous = seen(vmiUID, atp(-4*time.Minute), nil)
			}),
			overall: "Progressing/MemoryHotplugPending",
			check:   all(wantNoStaleAt(layerCP), wantSince("hotplug", -4*time.Minute)),
		},
		{
			name: "memory hotplug queued past the hotplug timeout: still queued",
			in: input(func(in *Input) {
				in.VMI = runningVMI(hotMemory("8Gi"))
				in.Previous = seen(vmiUID, atp(-6*time.Minute), nil)
			}),
			overall: "Progressing/MemoryHotplugPending", cp: "Progressing/MemoryHotplugPending",
			check: wantLayerMessage(layerCP, "memory hotplug to 8Gi is requested", "workload-updater queue"),
		},
		{
			name: "the first sighting of another VMI does not count",
			in: input(func(in *Input) {
				in.VMI = runningVMI(hotMemory("8Gi"))
				in.Previous = seen("an-earlier-vmi", atp(-6*time.Minute), nil)
			}),
			overall: "Progressing/MemoryHotplugPending",
			check:   wantSince("hotplug", 0),
		},
		{
			name:    "the guest has not taken the memory a migration gave it ten minutes ago",
			in:      input(func(in *Input) { in.VMI = runningVMI(memoryNotTaken("8Gi", -10*time.Minute)) }),
			overall: "Degraded/HotplugStuck", cp: "Degraded/HotplugStuck",
			check: all(wantSince("hotplug", -10*time.Minute), wantLayerMessage(layerCP, "the domain was given 8Gi and the guest has taken 4Gi"),
				func(t *testing.T, r Result) {
					wantEvidence(t, r.Status.Layers.ControlPlane, "status.memory.guestCurrent", "4Gi")
				}),
		},
		{
			name:    "the guest takes the memory a migration gave it a minute ago",
			in:      input(func(in *Input) { in.VMI = runningVMI(memoryNotTaken("8Gi", -time.Minute)) }),
			overall: "Progressing/MemoryHotplugPending",
			check:   all(wantStaleAt(layerCP, 4*time.Minute), wantSince("hotplug", -time.Minute)),
		},
		{
			// KubeVirt: not all memory is guaranteed to be released.
			name: "a hot-unplug the guest has not fully released is no hotplug pending",
			in: input(func(in *Input) {
				in.VMI = runningVMI(func(v *kubevirtv1.VirtualMachineInstance) {
					v.Spec.Domain.Memory.Guest, v.Status.Memory.GuestRequested = ptr(resource.MustParse("2Gi")), ptr(resource.MustParse("2Gi"))
				})
			}),
			overall: "Healthy/Running",
			check: func(t *testing.T, r Result) {
				if r.Status.VMI.HotplugSince != nil {
					t.Errorf("hotplugSince %v", r.Status.VMI.HotplugSince)
				}
			},
		},
		{
			name:    "CPU hotplug requested: HotVCPUChange, more sockets in the spec than the domain runs",
			in:      input(func(in *Input) { in.VMI = runningVMI(hotCPU(2)) }),
			overall: "Progressing/MemoryHotplugPending", cp: "Progressing/MemoryHotplugPending",
			check: all(wantLayerMessage(layerCP, "CPU hotplug to 4 vCPUs", "HotVCPUChange", "runs 2 vCPUs"),
				func(t *testing.T, r Result) {
					wantEvidence(t, r.Status.Layers.ControlPlane, "spec.domain.cpu.sockets", "2")
					wantEvidence(t, r.Status.Layers.ControlPlane, "status.currentCPUTopology.sockets", "1")
					if c := r.Status.VMI.CPU; c == nil || c.Current == nil || c.Requested == nil ||
						*c.Current != (v1alpha1.CPUTopology{Sockets: 1, Cores: 2, Threads: 1}) || *c.Requested != (v1alpha1.CPUTopology{Sockets: 2, Cores: 2, Threads: 1}) {
						t.Errorf("cpu %+v", c)
					}
				}),
		},
		{
			name: "memory and CPU hotplug at once, the guest short of memory past a spec.policy.hotplugTimeout of a minute",
			in: input(func(in *Input) {
				in.VMI = runningVMI(memoryNotTaken("8Gi", -2*time.Minute), hotCPU(2))
				in.Previous = seen(vmiUID, atp(-2*time.Minute), nil)
				in.Policy = overrides(v1alpha1.PolicyOverrides{HotplugTimeout: &metav1.Duration{Duration: time.Minute}})
			}),
			overall: "Progressing/MemoryHotplugPending",
			check:   wantLayerMessage(layerCP, "memory hotplug to 8Gi and a CPU hotplug to 4 vCPUs", "workload-updater queue"),
		},
		{
			// The workload updater's live migration carries the hotplug out:
			// the migration is the step under way, the hotplug stays in the
			// message.
			name: "a hotplug whose live migration runs",
			in: input(func(in *Input) {
				in.VMI = runningVMI(hotCPU(2), migrationState(), func(v *kubevirtv1.VirtualMachineInstance) { v.Status.ActivePods[pod2UID] = nodeB })
				in.Pods = []*corev1.Pod{targetPod(), launcherPod()}
				in.Migrations = []*kubevirtv1.VirtualMachineInstanceMigration{vmim()}
			}),
			overall: "Progressing/Migrating", cp: "Progressing/Migrating",
			check: all(wantNote(layerCP, v1alpha1.ReasonMemoryHotplugPending), func(t *testing.T, r Result) {
				if r.Status.Migration == nil || r.Status.Migration.Mode != "PreCopy" {
					t.Errorf("migration %+v", r.Status.Migration)
				}
			}),
		},
		{
			name: "a memory hotplug that failed is HotplugFailed, not a wait",
			in: input(func(in *Input) {
				in.VMI = runningVMI(hotMemory("8Gi"), withCondition(kubevirtv1.VirtualMachineInstanceCondition{
					Type: kubevirtv1.VirtualMachineInstanceMemoryChange, Status: corev1.ConditionFalse, Reason: "Memory Hotplug Failed",
					Message: "memory hotplug failed, the VM configuration is not supported"}))
			}),
			overall: "Degraded/HotplugFailed", cp: "Degraded/HotplugFailed",
			check: func(t *testing.T, r Result) {
				if strings.Contains(r.Status.Layers.ControlPlane.Message, v1alpha1.ReasonMemoryHotplugPending) || r.Status.VMI.HotplugSince != nil {
					t.Errorf("a failed hotplug is also pending: %q", r.Status.Layers.ControlPlane.Message)
				}
			},
		},
		{
			name:    "filesystems frozen, first seen now: a note until a fixed deadline",
			in:      input(func(in *Input) { in.VMI = runningVMI(frozen) }),
			overall: "Healthy/Running", guest: "Healthy/GuestAgentConnected",
			check: all(wantNote(layerGuest, v1alpha1.ReasonFilesystemsFrozen), wantStaleAt(layerGuest, 10*time.Minute), wantSince("frozen", 0),
				func(t *testing.T, r Result) {
					wantEvidence(t, r.Status.Layers.Guest, "status.fsFreezeStatus", "frozen")
					if r.Status.VMI.FSFreezeStatus != "frozen" {
						t.Errorf("fsFreezeStatus %q", r.Status.VMI.FSFreezeStatus)
					}
				}),
		},
		{
			name:    "filesystems frozen for eleven minutes",
			in:      input(func(in *Input) { in.VMI = runningVMI(frozen); in.Previous = seen(vmiUID, nil, atp(-11*time.Minute)) }),
			overall: "Degraded/FilesystemsFrozen", guest: "Degraded/FilesystemsFrozen",
			check: all(wantSince("frozen", -11*time.Minute), wantLayerMessage(layerGuest, "longer than 10m0s")),
		},
		{
			name: "spec.policy.filesystemsFrozenAfter of 30 minutes: frozen for eleven is still a note",
			in: input(func(in *Input) {
				in.VMI = runningVMI(frozen)
				in.Previous = seen(vmiUID, nil, atp(-11*time.Minute))
				in.Policy = overrides(v1alpha1.PolicyOverrides{FilesystemsFrozenAfter: &metav1.Duration{Duration: 30 * time.Minute}})
			}),
			overall: "Healthy/Running", guest: "Healthy/GuestAgentConnected",
			check: all(wantNote(layerGuest, v1alpha1.ReasonFilesystemsFrozen), wantStaleAt(layerGuest, 19*time.Minute)),
		},
		{
			name:    "thawed: the first sighting is dropped",
			in:      input(func(in *Input) { in.Previous = seen(vmiUID, nil, atp(-11*time.Minute)) }),
			overall: "Healthy/Running",
			check: func(t *testing.T, r Result) {
				if r.Status.VMI.FSFrozenSince != nil || strings.Contains(r.Status.Layers.Guest.Message, v1alpha1.ReasonFilesystemsFrozen) {
					t.Errorf("fsFrozenSince %v, guest %q", r.Status.VMI.FSFrozenSince, r.Status.Layers.Guest.Message)
				}
			},
		},
		{
			name: "the VMI summary shows QoS, SELinux, memory, vCPUs and the first 16 hotplug volumes by name",
			in: input(func(in *Input) {
				in.VMI = runningVMI(func(v *kubevirtv1.VirtualMachineInstance) {
					for i := 20; i > 0; i-- {
						v.Status.VolumeStatus = append(v.Status.VolumeStatus, kubevirtv1.VolumeStatus{
							Name: fmt.Sprintf("hp-%02d", i), Phase: kubevirtv1.VolumeReady, Reason: "VolumeReady",
							HotplugVolume: &kubevirtv1.HotplugVolumeStatus{AttachPodName: "hp-volume-x"},
						})
					}
					v.Status.VolumeStatus = append(v.Status.VolumeStatus, kubevirtv1.VolumeStatus{Name: "rootdisk", Target: "vda"})
				})
			}),
			overall: "Healthy/Running",
			check: func(t *testing.T, r Result) {
				s := r.Status.VMI
				if s.QOSClass != "Burstable" || !strings.HasPrefix(s.SELinuxContext, "system_u:system_r:container_t") || s.FSFreezeStatus != "" {
					t.Errorf("summary %+v", s)
				}
				if m := s.Memory; m == nil || m.Guest.String() != "4Gi" || m.GuestAtBoot.String() != "4Gi" || m.GuestRequested.String() != "4Gi" || m.GuestCurrent.String() != "4Gi" {
					t.Errorf("memory %+v", m)
				}
				hv := s.HotplugVolumes
				if len(hv) != maxHotplugVolumes || hv[0].Name != "hp-01" || hv[15].Name != "hp-16" || hv[0].Phase != "Ready" || hv[0].Reason != "VolumeReady" {
					t.Errorf("hotplug volumes %+v", hv)
				}
			},
		},
	}
}
