package verdict

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/kvtest"
)

// The control-plane rules that read what KubeVirt v1.7-v1.9 says of waits
// and operations beyond the lifecycle: migration timeouts and backups,
// stuck provisioning, manual recovery, storage migrations, memory dumps,
// hotplug queues and an unpause.

func TestKubeVirtWaits(t *testing.T) { run(t, kubevirtWaitSituations()) }

// withVMIMCondition adds a condition to a migration.
func withVMIMCondition(c kubevirtv1.VirtualMachineInstanceMigrationCondition) kvtest.VMIMMod {
	return func(m *kubevirtv1.VirtualMachineInstanceMigration) {
		m.Status.Conditions = append(m.Status.Conditions, c)
	}
}

func withVMIMAnnotation(k, v string) kvtest.VMIMMod {
	return func(m *kubevirtv1.VirtualMachineInstanceMigration) { m.Annotations[k] = v }
}

func withVMCondition(c kubevirtv1.VirtualMachineCondition) vmMod {
	return func(v *kubevirtv1.VirtualMachine) { v.Status.Conditions = append(v.Status.Conditions, c) }
}

// vmUnseen is a VM whose status says its VMI exists, in printableStatus
// ps since `since`, with the VMI not in the input.
func vmUnseen(ps kubevirtv1.VirtualMachinePrintableStatus, since time.Duration) inputMod {
	return func(in *Input) {
		in.VM = vm(func(v *kubevirtv1.VirtualMachine) {
			v.Status.PrintableStatus, v.Status.Ready = ps, false
			v.Status.Conditions = []kubevirtv1.VirtualMachineCondition{{
				Type: kubevirtv1.VirtualMachineReady, Status: corev1.ConditionFalse, LastTransitionTime: at(since),
			}}
		})
		in.VMI, in.Pods = nil, nil
	}
}

// hotplugVolume is a hotplugged volume as virt-controller writes it while
// its claim is not bound (kv:pkg/virt-controller/watch/vmi/storage.go
// getVolumePhaseMessageReason).
func hotplugVolume(name, msg string) vmiMod {
	return func(v *kubevirtv1.VirtualMachineInstance) {
		v.Status.VolumeStatus = append(v.Status.VolumeStatus, kubevirtv1.VolumeStatus{
			Name: name, Phase: kubevirtv1.VolumePending, Reason: "PVCNotReady", Message: msg,
			HotplugVolume: &kubevirtv1.HotplugVolumeStatus{},
		})
	}
}

// pausedFor is a launcher pod not Ready since a pause at since.
func pausedFor(since time.Duration) kvtest.PodMod {
	return func(p *corev1.Pod) {
		for i := range p.Status.Conditions {
			if c := &p.Status.Conditions[i]; c.Type == corev1.PodReady {
				c.Status, c.Reason, c.LastTransitionTime = corev1.ConditionFalse, "ReadinessGatesNotReady", at(since)
			}
		}
	}
}

// unpauseGate is the pod's kubevirt.io/virtual-machine-unpaused condition
// as virt-controller writes it (syncPausedConditionToPod).
func unpauseGate(s corev1.ConditionStatus, since time.Duration) kvtest.PodMod {
	return func(p *corev1.Pod) {
		reason := "NotPaused"
		if s != corev1.ConditionTrue {
			reason = "Paused"
		}
		for i := range p.Status.Conditions {
			if c := &p.Status.Conditions[i]; c.Type == kubevirtv1.VirtualMachineUnpaused {
				c.Status, c.Reason, c.LastTransitionTime = s, reason, at(since)
			}
		}
	}
}

// vmWaitingToStart is a VM that should run and has no VMI yet.
func vmWaitingToStart(mods ...vmMod) inputMod {
	return func(in *Input) {
		in.VM = vm(append([]vmMod{vmStopped(), func(v *kubevirtv1.VirtualMachine) {
			v.Status.PrintableStatus = kubevirtv1.VirtualMachineStatusStopped
			v.Status.Conditions[0].LastTransitionTime = at(-20 * time.Second)
		}}, mods...)...)
		in.VMI, in.Pods = nil, nil
	}
}

func evidenceIs(layer int, field, value string) func(*testing.T, Result) {
	return func(t *testing.T, r Result) {
		t.Helper()
		wantEvidence(t, layerAt(r, layer), field, value)
	}
}

func wantMessageLacks(layer int, part string) func(*testing.T, Result) {
	return func(t *testing.T, r Result) {
		t.Helper()
		l := layerAt(r, layer)
		if strings.Contains(l.Message, part) {
			t.Errorf("layer message %q has %q", l.Message, part)
		}
	}
}

func kubevirtWaitSituations() []situation {
	scheduling := func(since time.Duration, mods ...kvtest.VMIMMod) inputMod {
		return func(in *Input) {
			in.Pods = []*corev1.Pod{targetPod(podPhase(corev1.PodPending)), launcherPod()}
			in.Migrations = []*kubevirtv1.VirtualMachineInstanceMigration{
				vmim(append([]kvtest.VMIMMod{vmimIn(kubevirtv1.MigrationScheduling, since)}, mods...)...),
			}
		}
	}
	blockedByBackup := withVMIMCondition(kubevirtv1.VirtualMachineInstanceMigrationCondition{
		Type: kubevirtv1.VirtualMachineInstanceMigrationBlockedByBackup, Status: corev1.ConditionTrue,
		LastTransitionTime: at(-20 * time.Minute), Message: "Waiting for backup nightly-vm1 to complete",
	})
	backupRunning := func(v *kubevirtv1.VirtualMachineInstance) {
		v.Status.ChangedBlockTracking = &kubevirtv1.ChangedBlockTrackingStatus{
			State:        kubevirtv1.ChangedBlockTrackingEnabled,
			BackupStatus: &kubevirtv1.VirtualMachineInstanceBackupStatus{BackupName: "nightly-vm1", StartTimestamp: atp(-25 * time.Minute)},
		}
	}
	manualRecovery := withVMCondition(kubevirtv1.VirtualMachineCondition{
		Type: kubevirtv1.VirtualMachineManualRecoveryRequired, Status: corev1.ConditionTrue,
		Reason: "VMI was removed or was final during the volume migration",
	})
	return []situation{
		// C4: the hotplug's clock stops while KubeVirt works through it.
		{
			name: "C4: a hotplug queued for 20 minutes behind other migrations: Progressing, no deadline",
			in: input(func(in *Input) {
				in.VMI = runningVMI(hotCPU(2))
				in.Previous = seen(vmiUID, atp(-20*time.Minute), nil)
			}),
			overall: "Progressing/MemoryHotplugPending", cp: "Progressing/MemoryHotplugPending",
			check: all(wantNoStaleAt(layerCP), wantLayerMessage(layerCP, "workload-updater queue")),
		},
		{
			name: "C4: a hotplug on a VMI that is not live-migratable: the workload updater never queues it, the clock runs",
			in: input(func(in *Input) {
				in.VMI = runningVMI(hotCPU(2), withCondition(kubevirtv1.VirtualMachineInstanceCondition{
					Type: kubevirtv1.VirtualMachineInstanceIsMigratable, Status: corev1.ConditionFalse,
					Reason: kubevirtv1.VirtualMachineInstanceReasonHostDeviceNotMigratable,
				}))
				in.Previous = seen(vmiUID, atp(-6*time.Minute), nil)
			}),
			overall: "Degraded/HotplugStuck", cp: "Degraded/HotplugStuck",
		},
		{
			name: "C4: the hotplug's own migration has run for minutes after the hotplug timeout: Migrating outranks it",
			in: input(func(in *Input) {
				in.VMI = runningVMI(hotMemory("8Gi"), migrationState(), func(v *kubevirtv1.VirtualMachineInstance) { v.Status.ActivePods[pod2UID] = nodeB })
				in.Pods = []*corev1.Pod{targetPod(), launcherPod()}
				in.Migrations = []*kubevirtv1.VirtualMachineInstanceMigration{vmim()}
				in.Previous = seen(vmiUID, atp(-12*time.Minute), nil)
			}),
			overall: "Progressing/Migrating", cp: "Progressing/Migrating",
			check: all(wantMessageLacks(layerCP, v1alpha1.ReasonHotplugStuck), wantSince("hotplug", -12*time.Minute)),
		},
		{
			name: "C4: the attempt failed 2 minutes ago: MigrationFailed, the hotplug's clock runs from its end",
			in: input(func(in *Input) {
				in.VMI = runningVMI(hotMemory("8Gi"), migrationState(func(st *kubevirtv1.VirtualMachineInstanceMigrationState) {
					st.Failed, st.EndTimestamp, st.FailureReason = true, atp(-2*time.Minute), "target pod shutdown"
				}))
				in.Migrations = []*kubevirtv1.VirtualMachineInstanceMigration{vmim(vmimFinal(kubevirtv1.MigrationFailed, in.VMI.Status.MigrationState))}
				in.Previous = seen(vmiUID, atp(-30*time.Minute), nil)
			}),
			overall: "Degraded/MigrationFailed", cp: "Degraded/MigrationFailed",
			check: all(wantMessageLacks(layerCP, v1alpha1.ReasonHotplugStuck), func(t *testing.T, r Result) {
				if r.FixedDeadline != 3*time.Minute {
					t.Errorf("FixedDeadline %v, want 3m (the hotplug timeout from the failed attempt's end)", r.FixedDeadline)
				}
			}),
		},
		{
			name: "C4: the attempt failed 6 minutes ago and none followed: HotplugStuck as well",
			in: input(func(in *Input) {
				in.VMI = runningVMI(hotMemory("8Gi"), migrationState(func(st *kubevirtv1.VirtualMachineInstanceMigrationState) {
					st.Failed, st.EndTimestamp, st.FailureReason = true, atp(-6*time.Minute), "target pod shutdown"
				}))
				in.Migrations = []*kubevirtv1.VirtualMachineInstanceMigration{vmim(vmimFinal(kubevirtv1.MigrationFailed, in.VMI.Status.MigrationState))}
				in.Previous = seen(vmiUID, atp(-30*time.Minute), nil)
			}),
			overall: "Degraded/MigrationFailed",
			check:   wantLayerMessage(layerCP, v1alpha1.ReasonHotplugStuck),
		},
		{
			name: "C4: memory in the spec above the domain's without maxGuest: no hotplug (KubeVirt needs maxGuest)",
			in: input(func(in *Input) {
				in.VMI = runningVMI(func(v *kubevirtv1.VirtualMachineInstance) {
					v.Spec.Domain.Memory.Guest, v.Spec.Domain.Memory.MaxGuest = ptr(resource.MustParse("8Gi")), nil
				})
				in.Previous = seen(vmiUID, atp(-30*time.Minute), nil)
			}),
			overall: "Healthy/Running", cp: "Healthy/Running",
		},
		{
			name: "C4: more sockets in the spec with maxSockets 0: no hotplug (KubeVirt needs maxSockets)",
			in: input(func(in *Input) {
				in.VMI = runningVMI(func(v *kubevirtv1.VirtualMachineInstance) {
					v.Spec.Domain.CPU.Sockets, v.Spec.Domain.CPU.MaxSockets = 2, 0
				})
				in.Previous = seen(vmiUID, atp(-30*time.Minute), nil)
			}),
			overall: "Healthy/Running", cp: "Healthy/Running",
		},
		// D6: a hotplugged volume that never becomes Ready.
		{
			name:    "D6: a hotplugged volume whose claim is Pending, first seen now: Progressing until a fixed deadline",
			in:      input(func(in *Input) { in.VMI = runningVMI(hotplugVolume("data1", "PVC is in phase ClaimPending")) }),
			overall: "Progressing/HotplugVolumePending", storage: "Progressing/HotplugVolumePending",
			check: all(wantStaleAt(layerStorage, 10*time.Minute), wantLayerMessage(layerStorage, "hotplug volume data1 is Pending: PVCNotReady", "ClaimPending"),
				evidenceIs(layerStorage, "status.volumeStatus[data1].reason", "PVCNotReady"), func(t *testing.T, r Result) {
					if s := r.Status.VMI.HotplugVolumeSince; s == nil || !s.Time.Equal(now) {
						t.Errorf("hotplugVolumeSince %v, want now", s)
					}
				}),
		},
		{
			name: "D6: a hotplugged volume whose claim is Lost, first seen 11 minutes ago: stuck",
			in: input(func(in *Input) {
				in.VMI = runningVMI(hotplugVolume("data1", "PVC is in phase Lost"))
				in.Previous = &v1alpha1.VMObservationStatus{VMI: &v1alpha1.VMISummary{Name: vmName, UID: vmiUID, HotplugVolumeSince: atp(-11 * time.Minute)}}
			}),
			overall: "Degraded/HotplugVolumeStuck", storage: "Degraded/HotplugVolumeStuck",
			check: wantLayerMessage(layerStorage, "PVC is in phase Lost", "longer than 10m0s"),
		},
		{
			name: "D6: an --hotplug-volume-timeout of an hour",
			in: input(func(in *Input) {
				in.VMI = runningVMI(hotplugVolume("data1", "PVC is in phase Lost"))
				in.Previous = &v1alpha1.VMObservationStatus{VMI: &v1alpha1.VMISummary{Name: vmName, UID: vmiUID, HotplugVolumeSince: atp(-11 * time.Minute)}}
				in.Policy.HotplugVolumeTimeout = time.Hour
			}),
			storage: "Progressing/HotplugVolumePending",
		},
		{
			name: "D6: all hotplugged volumes Ready: the first sighting is dropped",
			in: input(func(in *Input) {
				in.VMI = runningVMI(hotplugVolume("data1", ""), func(v *kubevirtv1.VirtualMachineInstance) {
					v.Status.VolumeStatus[len(v.Status.VolumeStatus)-1].Phase = kubevirtv1.VolumeReady
					v.Status.VolumeStatus[len(v.Status.VolumeStatus)-1].Reason = "VolumeReady"
				})
				in.Previous = &v1alpha1.VMObservationStatus{VMI: &v1alpha1.VMISummary{Name: vmName, UID: vmiUID, HotplugVolumeSince: atp(-11 * time.Minute)}}
			}),
			overall: "Healthy/Running",
			check: func(t *testing.T, r Result) {
				if r.Status.VMI.HotplugVolumeSince != nil {
					t.Errorf("hotplugVolumeSince %v", r.Status.VMI.HotplugVolumeSince)
				}
			},
		},
		// C11: the launcher pod turns Ready some seconds after an unpause.
		{
			name: "C11: unpaused 3 s ago, the gate flipped, the kubelet not yet: no Degraded",
			in: input(func(in *Input) {
				in.Pods = []*corev1.Pod{launcherPod(pausedFor(-time.Hour), unpauseGate(corev1.ConditionTrue, -3*time.Second))}
			}),
			overall: "Progressing/LauncherPodNotReady", node: "Progressing/LauncherPodNotReady",
			check: wantStaleAt(layerNode, 17*time.Second),
		},
		{
			// The soak's loaded machine: the kubelet's Ready came 4–10 s
			// after the gate and tripped a wait of one LagGrace.
			name: "C11: the gate flipped 15 s ago, the kubelet not yet: still no Degraded (twice the lag grace)",
			in: input(func(in *Input) {
				in.Pods = []*corev1.Pod{launcherPod(pausedFor(-time.Hour), unpauseGate(corev1.ConditionTrue, -15*time.Second))}
			}),
			overall: "Progressing/LauncherPodNotReady", node: "Progressing/LauncherPodNotReady",
			check: wantStaleAt(layerNode, 5*time.Second),
		},
		{
			name: "C11: the gate flipped 21 s ago and the pod is still not Ready: Degraded",
			in: input(func(in *Input) {
				in.Pods = []*corev1.Pod{launcherPod(pausedFor(-time.Hour), unpauseGate(corev1.ConditionTrue, -21*time.Second))}
			}),
			overall: "Degraded/LauncherPodNotReady", node: "Degraded/LauncherPodNotReady",
		},
		{
			name: "C11: unpaused, virt-controller has not flipped the gate yet: Progressing",
			in: input(func(in *Input) {
				in.Pods = []*corev1.Pod{launcherPod(pausedFor(-time.Hour), unpauseGate(corev1.ConditionFalse, -time.Hour))}
			}),
			overall: "Progressing/LauncherPodNotReady", node: "Progressing/LauncherPodNotReady",
			check: evidenceIs(layerNode, "status.conditions[kubevirt.io/virtual-machine-unpaused].status", "False"),
		},
		{
			name: "C11: the gate flipped a minute ago and the pod is still not Ready: Degraded",
			in: input(func(in *Input) {
				in.Pods = []*corev1.Pod{launcherPod(pausedFor(-time.Hour), unpauseGate(corev1.ConditionTrue, -time.Minute))}
			}),
			overall: "Degraded/LauncherPodNotReady", node: "Degraded/LauncherPodNotReady",
		},
		// C7: KubeVirt's catch-all for a pending target pod is 15 minutes.
		{
			name:    "C7: a migration in Scheduling for 6 minutes, its target pod pending: still migrating",
			in:      input(scheduling(-6 * time.Minute)),
			overall: "Progressing/Migrating", cp: "Progressing/Migrating",
			check: func(t *testing.T, r Result) {
				if r.FixedDeadline != 9*time.Minute {
					t.Errorf("FixedDeadline %v, want 9m (15m from entering Scheduling)", r.FixedDeadline)
				}
			},
		},
		{
			name:    "C7: a migration in Scheduling for 16 minutes: stuck",
			in:      input(scheduling(-16 * time.Minute)),
			overall: "Degraded/MigrationStuck", cp: "Degraded/MigrationStuck",
			check: wantLayerMessage(layerCP, "longer than 15m0s"),
		},
		{
			name: "C7: the migration's pending-pod annotation of 120 s shortens the wait",
			in: input(scheduling(-3*time.Minute,
				withVMIMAnnotation(kubevirtv1.MigrationPendingPodTimeoutSecondsAnnotation, "120"))),
			overall: "Degraded/MigrationStuck", cp: "Degraded/MigrationStuck",
			check: all(wantLayerMessage(layerCP, "longer than 2m0s"), func(t *testing.T, r Result) {
				wantEvidence(t, r.Status.Layers.ControlPlane, "metadata.annotations["+kubevirtv1.MigrationPendingPodTimeoutSecondsAnnotation+"]", "120")
			}),
		},
		{
			name: "C7: an annotation KubeVirt cannot parse leaves the default",
			in: input(scheduling(-6*time.Minute,
				withVMIMAnnotation(kubevirtv1.MigrationPendingPodTimeoutSecondsAnnotation, "soon"))),
			overall: "Progressing/Migrating",
		},
		{
			name: "C7: the --migration-pending-pod-timeout policy",
			in: input(scheduling(-6*time.Minute), func(in *Input) {
				in.Policy.MigrationPendingPodTimeout = 5 * time.Minute
			}),
			overall: "Degraded/MigrationStuck",
		},
		{
			name: "C7: Scheduled keeps the migration phase timeout",
			in: input(func(in *Input) {
				in.Pods = []*corev1.Pod{targetPod(), launcherPod()}
				in.Migrations = []*kubevirtv1.VirtualMachineInstanceMigration{vmim(vmimIn(kubevirtv1.MigrationScheduled, -6*time.Minute))}
			}),
			overall: "Degraded/MigrationStuck",
			check:   wantLayerMessage(layerCP, "longer than 5m0s"),
		},
		// C8: a migration waiting for a backup.
		{
			name: "C8: a Pending migration blocked by a backup waits for it",
			in: input(func(in *Input) {
				in.VMI = runningVMI(backupRunning)
				in.Migrations = []*kubevirtv1.VirtualMachineInstanceMigration{vmim(vmimIn(kubevirtv1.MigrationPending, -20*time.Minute), blockedByBackup)}
			}),
			overall: "Progressing/MigrationWaitingForBackup", cp: "Progressing/MigrationWaitingForBackup",
			check: all(wantLayerMessage(layerCP, "Waiting for backup nightly-vm1 to complete"), wantMessageLacks(layerCP, "queued"),
				wantNote(layerCP, v1alpha1.ReasonBackup),
				func(t *testing.T, r Result) {
					wantEvidence(t, r.Status.Layers.ControlPlane, "status.conditions[migrationBlockedByBackup].message", "Waiting for backup nightly-vm1 to complete")
				}),
		},
		// C10: waits for volumes time out as KubeVirt's alert does.
		{
			name:  "C10: DataVolumesReady=False for 3 minutes: provisioning, deadline at 10 minutes",
			in:    input(dataVolumesNotReadyFor(3 * time.Minute)),
			cp:    "Progressing/Provisioning",
			check: wantStaleAt(layerCP, 7*time.Minute),
		},
		{
			name: "C10: DataVolumesReady=False for 11 minutes: stuck",
			in:   input(dataVolumesNotReadyFor(11 * time.Minute)),
			cp:   "Degraded/StuckProvisioning",
		},
		{
			name:    "C10: VM Provisioning with its VMI unseen for 2 minutes",
			in:      input(vmUnseen(kubevirtv1.VirtualMachineStatusProvisioning, -2*time.Minute)),
			overall: "Progressing/Provisioning", cp: "Progressing/Provisioning",
			check: wantStaleAt(layerCP, 8*time.Minute),
		},
		{
			name:    "C10: VM WaitingForVolumeBinding with its VMI unseen for 12 minutes",
			in:      input(vmUnseen(kubevirtv1.VirtualMachineStatusWaitingForVolumeBinding, -12*time.Minute)),
			overall: "Degraded/StuckProvisioning", cp: "Degraded/StuckProvisioning",
		},
		{
			name:    "C10: VM Starting with its VMI unseen for 12 minutes",
			in:      input(vmUnseen(kubevirtv1.VirtualMachineStatusStarting, -12*time.Minute)),
			overall: "Degraded/StuckStarting", cp: "Degraded/StuckStarting",
		},
		{
			name: "C10: an --unhealthy-state-timeout of 30 minutes",
			in: input(vmUnseen(kubevirtv1.VirtualMachineStatusProvisioning, -12*time.Minute), func(in *Input) {
				in.Policy.UnhealthyStateTimeout = 30 * time.Minute
			}),
			cp: "Progressing/Provisioning",
		},
		// D1: ManualRecoveryRequired.
		{
			name:    "D1: a VM that should run with ManualRecoveryRequired: Degraded at once, not Starting",
			in:      input(vmWaitingToStart(manualRecovery)),
			overall: "Degraded/ManualRecoveryRequired", cp: "Degraded/ManualRecoveryRequired",
			check: all(wantLayerMessage(layerCP, "refuses to start", "volume migration"), func(t *testing.T, r Result) {
				wantEvidence(t, r.Status.Layers.ControlPlane, "status.conditions[ManualRecoveryRequired].status", "True")
			}),
		},
		{
			name: "D1: a stopped VM with ManualRecoveryRequired: a note",
			in: input(func(in *Input) {
				in.VM = vm(vmStopped(), withRunStrategy(kubevirtv1.RunStrategyHalted), manualRecovery)
				in.VMI, in.Pods = nil, nil
			}),
			cp:    "Suspended/Stopped",
			check: wantNote(layerCP, v1alpha1.ReasonManualRecoveryRequired),
		},
		// D4: VolumesChange, volumeUpdateState, DecentralizedLiveMigrationFailure,
		// RestartRequired, SoftwareEmulation.
		{
			name: "D4: VolumesChange=True: a note while the storage migration waits",
			in: input(func(in *Input) {
				in.VMI = runningVMI(withCondition(kubevirtv1.VirtualMachineInstanceCondition{
					Type: kubevirtv1.VirtualMachineInstanceVolumesChange, Status: corev1.ConditionTrue, Message: "migrate volumes", LastTransitionTime: at(-time.Minute),
				}))
			}),
			overall: "Healthy/Running", cp: "Healthy/Running",
			check: all(wantNote(layerCP, v1alpha1.ReasonVolumeMigration), evidenceIs(layerCP, "status.conditions[VolumesChange].status", "True")),
		},
		{
			name: "D4: a cancelled volume change: a note",
			in: input(func(in *Input) {
				in.VMI = runningVMI(withCondition(kubevirtv1.VirtualMachineInstanceCondition{
					Type: kubevirtv1.VirtualMachineInstanceVolumesChange, Status: corev1.ConditionFalse,
					Reason: kubevirtv1.VirtualMachineInstanceReasonVolumesChangeCancellation, LastTransitionTime: at(-time.Minute),
				}))
			}),
			cp:    "Healthy/Running",
			check: all(wantNote(layerCP, v1alpha1.ReasonVolumeMigration), evidenceIs(layerCP, "status.conditions[VolumesChange].status", "False")),
		},
		{
			name: "D4: the VM's volumeUpdateState without the VMI's condition",
			in: input(func(in *Input) {
				in.VM = vm(func(v *kubevirtv1.VirtualMachine) {
					v.Status.VolumeUpdateState = &kubevirtv1.VolumeUpdateState{VolumeMigrationState: &kubevirtv1.VolumeMigrationState{
						MigratedVolumes: []kubevirtv1.StorageMigratedVolumeInfo{{VolumeName: "rootdisk"}},
					}}
				})
			}),
			cp: "Healthy/Running",
			check: all(wantNote(layerCP, v1alpha1.ReasonVolumeMigration),
				evidenceIs(layerCP, "status.volumeUpdateState.volumeMigrationState.migratedVolumes[0].volumeName", "rootdisk")),
		},
		{
			name: "D4: DecentralizedLiveMigrationFailure while a receiver waits: a note",
			in: input(func(in *Input) {
				in.VMI = runningVMI(withCondition(kubevirtv1.VirtualMachineInstanceCondition{
					Type: kubevirtv1.VirtualMachineInstanceDecentralizedLiveMigrationFailure, Status: corev1.ConditionTrue,
					Reason: kubevirtv1.VirtualMachineInstanceReasonDecentralizedNotMigratable, Message: waitingForSyncMessage,
				}))
			}),
			cp: "Healthy/Running",
			check: all(wantNote(layerCP, v1alpha1.ReasonDecentralizedMigrationFailure),
				evidenceIs(layerCP, "status.conditions[DecentralizedLiveMigrationFailure].message", waitingForSyncMessage)),
		},
		{
			name: "D4: RestartRequired: a note",
			in: input(func(in *Input) {
				in.VM = vm(withVMCondition(kubevirtv1.VirtualMachineCondition{
					Type: kubevirtv1.VirtualMachineRestartRequired, Status: corev1.ConditionTrue, LastTransitionTime: at(-time.Hour),
					Message: "a non-live-updatable field was changed in the template spec",
				}))
			}),
			overall: "Healthy/Running", cp: "Healthy/Running",
			check: all(wantNote(layerCP, v1alpha1.ReasonRestartRequired), evidenceIs(layerCP, "status.conditions[RestartRequired].status", "True")),
		},
		{
			name: "D4: SoftwareEmulation: a note",
			in: input(func(in *Input) {
				in.VMI = runningVMI(withCondition(kubevirtv1.VirtualMachineInstanceCondition{
					Type: kubevirtv1.VirtualMachineInstanceSoftwareEmulation, Status: corev1.ConditionTrue, Reason: "CrossArchitectureEmulation",
					Message: "VM running with software emulation (host=amd64, guest=arm64)",
				}))
			}),
			overall: "Healthy/Running",
			check:   all(wantNote(layerCP, v1alpha1.ReasonSoftwareEmulation), evidenceIs(layerCP, "status.conditions[SoftwareEmulation].reason", "CrossArchitectureEmulation")),
		},
		// D5: memory dumps and backups.
		{
			name: "D5: a memory dump in progress: a note",
			in: input(func(in *Input) {
				in.VM = vm(func(v *kubevirtv1.VirtualMachine) {
					v.Status.MemoryDumpRequest = &kubevirtv1.VirtualMachineMemoryDumpRequest{
						ClaimName: "dump-pvc", Phase: kubevirtv1.MemoryDumpInProgress, StartTimestamp: atp(-time.Minute),
					}
				})
			}),
			overall: "Healthy/Running",
			check:   all(wantNote(layerCP, v1alpha1.ReasonMemoryDump), evidenceIs(layerCP, "status.memoryDumpRequest.phase", "InProgress")),
		},
		{
			name: "D5: a failed memory dump: a note with KubeVirt's message",
			in: input(func(in *Input) {
				in.VM = vm(func(v *kubevirtv1.VirtualMachine) {
					v.Status.MemoryDumpRequest = &kubevirtv1.VirtualMachineMemoryDumpRequest{
						ClaimName: "dump-pvc", Phase: kubevirtv1.MemoryDumpFailed, Message: "no space left on device",
					}
				})
			}),
			overall: "Healthy/Running",
			check:   all(wantNote(layerCP, v1alpha1.ReasonMemoryDump), evidenceIs(layerCP, "status.memoryDumpRequest.phase", "Failed")),
		},
		{
			name:    "D5: a backup in progress: a note",
			in:      input(func(in *Input) { in.VMI = runningVMI(backupRunning) }),
			overall: "Healthy/Running",
			check:   all(wantNote(layerCP, v1alpha1.ReasonBackup), evidenceIs(layerCP, "status.changedBlockTracking.backupStatus.backupName", "nightly-vm1")),
		},
	}
}

func wantNoStaleAt(layer int) func(*testing.T, Result) {
	return func(t *testing.T, r Result) {
		t.Helper()
		l := layerAt(r, layer)
		if l.StaleAt != nil {
			t.Errorf("staleAt %v, want none", l.StaleAt)
		}
	}
}

// dataVolumesNotReadyFor is a Pending VMI, with no launcher pod yet, whose
// DataVolumesReady condition has said False (NotAllDVsReady) for age.
func dataVolumesNotReadyFor(age time.Duration) func(*Input) {
	return func(in *Input) {
		in.VMI = pendingVMI(kubevirtv1.Pending, age, withCondition(kubevirtv1.VirtualMachineInstanceCondition{
			Type: kubevirtv1.VirtualMachineInstanceDataVolumesReady, Status: corev1.ConditionFalse, Reason: kubevirtv1.VirtualMachineInstanceReasonNotAllDVsReady,
			LastTransitionTime: at(-age),
		}))
		in.Pods = nil
	}
}
