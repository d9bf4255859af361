package verdict

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/membership"
)

// The situations in this file are the classes of misses found on objects
// from real clusters (the accuracy corpus, internal/analyze/testdata/real):
// each is a rule fixed everywhere, tested here on KubeVirt-shaped fixtures.

// handlerSync is the Synchronized=False that virt-handler writes
// (kv:pkg/virt-handler/vm.go handleSyncError).
func handlerSync(msg string) vmiMod {
	return withCondition(kubevirtv1.VirtualMachineInstanceCondition{
		Type: kubevirtv1.VirtualMachineInstanceSynchronized, Status: corev1.ConditionFalse,
		Reason: syncDomainFailed, Message: msg, LastTransitionTime: at(-4 * time.Minute),
	})
}

func readyFalse(reason string) vmiMod {
	return withCondition(kubevirtv1.VirtualMachineInstanceCondition{
		Type: kubevirtv1.VirtualMachineInstanceReady, Status: corev1.ConditionFalse, Reason: reason,
		LastTransitionTime: at(-3 * time.Minute),
	})
}

// noStatusPhase strips the phase and its history, as pastes and stale
// caches do, keeping everything else.
func noStatusPhase(v *kubevirtv1.VirtualMachineInstance) {
	v.Status.Phase = ""
	v.Status.PhaseTransitionTimestamps = nil
}

func TestAttributionByWriter(t *testing.T) { run(t, attributionSituations()) }

func attributionSituations() []situation {
	return []situation{
		{
			name: "no /dev/kvm: virt-handler cannot sync the domain of a Scheduled VMI",
			in: input(func(in *Input) {
				in.VMI = pendingVMI(kubevirtv1.Scheduled, 5*time.Minute, handlerSync(
					"virError(Code=8, Domain=44, Message='invalid argument: could not find capabilities for domaintype=kvm ')"))
			}),
			overall: "Degraded/DomainSyncFailed", cp: "Progressing/Starting", node: "Degraded/DomainSyncFailed",
			check: func(t *testing.T, r Result) {
				if !hasEvidence(r.Status.Layers.Node, kindVMI, vmName, "status.conditions[Synchronized].message") {
					t.Errorf("evidence %+v", r.Status.Layers.Node.Evidence)
				}
			},
		},
		{
			name: "permission denied on a disk image while Running: node Degraded, guest no better than Unknown",
			in: input(func(in *Input) {
				in.VMI = runningVMI(handlerSync("server error. command SyncVMI failed: \"LibvirtError(Code=38, Domain=18, Message='Cannot access storage file '/var/run/kubevirt-private/vmi-disks/disk0/disk.img': Permission denied')\""))
			}),
			overall: "Degraded/DomainSyncFailed", cp: "Healthy/Running", node: "Degraded/DomainSyncFailed", guest: "Unknown/EvidenceStale",
		},
		{
			name: "a Synchronized=False without handleSyncError's reason on a Running VMI is still virt-handler's",
			in: input(func(in *Input) {
				in.VMI = runningVMI(withCondition(kubevirtv1.VirtualMachineInstanceCondition{
					Type: kubevirtv1.VirtualMachineInstanceSynchronized, Status: corev1.ConditionFalse, Reason: "FailedSync",
				}))
			}),
			overall: "Degraded/DomainSyncFailed", cp: "Healthy/Running", node: "Degraded/DomainSyncFailed",
		},
		{
			name: "FailedCreate before scheduling stays with virt-controller",
			in: input(func(in *Input) {
				in.VMI = pendingVMI(kubevirtv1.Pending, 2*time.Minute, withCondition(kubevirtv1.VirtualMachineInstanceCondition{
					Type: kubevirtv1.VirtualMachineInstanceSynchronized, Status: corev1.ConditionFalse, Reason: syncFailedCreate,
					Message: "failed to create virtual machine pod: pods \"virt-launcher-vm1-\" is forbidden: exceeded quota",
				}))
				in.Pods = nil
			}),
			overall: "Degraded/LauncherCreateFailed", cp: "Degraded/LauncherCreateFailed", node: "Progressing/NotScheduled",
		},
		{
			name: "a Failed VMI whose launcher the node shut down",
			in: input(func(in *Input) {
				in.VMI = runningVMI(vmiPhase(kubevirtv1.Failed, -time.Minute))
				in.Pods = []*corev1.Pod{launcherPod(podPhase(corev1.PodFailed), func(p *corev1.Pod) {
					p.Status.Reason, p.Status.Message = "Terminated", "Pod was terminated in response to imminent node shutdown."
				})}
			}),
			overall: "Failed/VMIFailed", node: "Failed/LauncherPodFailed",
		},
		{
			name: "a Failed VMI whose domain could not be synced names the node's cause",
			in: input(func(in *Input) {
				in.VMI = runningVMI(vmiPhase(kubevirtv1.Failed, -time.Minute), handlerSync("virt-launcher crashed due to a network error"))
				in.Pods = []*corev1.Pod{launcherPod(podPhase(corev1.PodFailed))}
			}),
			overall: "Failed/VMIFailed", cp: "Failed/VMIFailed", node: "Degraded/DomainSyncFailed", guest: "Unknown/NotRunning",
		},
	}
}

func TestMissingFieldBlindsNothingElse(t *testing.T) { run(t, partialStatusSituations()) }

func partialStatusSituations() []situation {
	failedMig := func(in *Input) {
		in.Migrations = []*kubevirtv1.VirtualMachineInstanceMigration{vmim(vmimIn(kubevirtv1.MigrationFailed, -5*time.Minute))}
	}
	return []situation{
		{
			name:    "no phase, Ready=True: Running is inferred and said so",
			in:      input(func(in *Input) { in.VMI = runningVMI(noStatusPhase) }),
			overall: "Healthy/Running", cp: "Healthy/Running", node: "Healthy/LauncherRunning", guest: "Healthy/GuestAgentConnected",
			check: func(t *testing.T, r Result) {
				for _, e := range r.Status.Layers.ControlPlane.Evidence {
					if e.Field == "status.phase" && strings.Contains(e.Value, "inferred from status.conditions[Ready]") {
						return
					}
				}
				t.Errorf("evidence does not say the phase was inferred: %+v", r.Status.Layers.ControlPlane.Evidence)
			},
		},
		{
			name: "no phase but phase transitions: the newest one is the phase",
			in: input(func(in *Input) {
				in.VMI = runningVMI(func(v *kubevirtv1.VirtualMachineInstance) { v.Status.Phase = "" })
			}),
			overall: "Healthy/Running",
		},
		{
			name: "only metadata and a failed migration: still a failed migration",
			in: input(failedMig, func(in *Input) {
				in.VMI = runningVMI(func(v *kubevirtv1.VirtualMachineInstance) { v.Status = kubevirtv1.VirtualMachineInstanceStatus{} })
			}),
			cp: "Degraded/MigrationFailed",
		},
		{
			name: "only a failed migrationState in the status",
			in: input(func(in *Input) {
				in.VMI = runningVMI(func(v *kubevirtv1.VirtualMachineInstance) {
					v.Status = kubevirtv1.VirtualMachineInstanceStatus{}
				}, migrationState(func(st *kubevirtv1.VirtualMachineInstanceMigrationState) {
					st.Failed, st.Completed, st.EndTimestamp = true, true, atp(-2*time.Minute)
					st.FailureReason = "Live migration failed: error encountered during MigrateToURI3 libvirt api call"
				}))
				in.Pods = nil
			}),
			cp: "Degraded/MigrationFailed",
		},
		{
			name: "an empty status with no creation time: not processed yet",
			in: input(func(in *Input) {
				in.VMI = runningVMI(func(v *kubevirtv1.VirtualMachineInstance) {
					v.Status = kubevirtv1.VirtualMachineInstanceStatus{}
					v.CreationTimestamp = metav1.Time{}
				})
				in.Pods = nil
			}),
			overall: "Progressing/Scheduling", cp: "Progressing/Scheduling",
		},
		{
			name:    "the VM says its VMI exists and is Running, the VMI is not in the input",
			in:      input(func(in *Input) { in.VMI, in.Pods = nil, nil }),
			overall: "Unknown/VMINotObserved", cp: "Healthy/Running", node: "Unknown/VMINotObserved", guest: "Unknown/VMINotObserved",
		},
		{
			name: "a RerunOnFailure VM with created=true and ErrorUnschedulable is never stopped as declared",
			in: input(func(in *Input) {
				in.VM = vm(withRunStrategy(kubevirtv1.RunStrategyRerunOnFailure), func(v *kubevirtv1.VirtualMachine) {
					v.Status.PrintableStatus = kubevirtv1.VirtualMachineStatusUnschedulable
					v.Status.Ready = false
				})
				in.VMI, in.Pods = nil, nil
			}),
			overall: "Degraded/Unschedulable", cp: "Degraded/Unschedulable", node: "Unknown/VMINotObserved",
		},
		{
			name: "a Manual VM with created=true whose VMI was not captured, printableStatus DataVolumeError",
			in: input(func(in *Input) {
				in.VM = vm(withRunStrategy(kubevirtv1.RunStrategyManual), func(v *kubevirtv1.VirtualMachine) {
					v.Status.PrintableStatus = kubevirtv1.VirtualMachineStatusDataVolumeError
				})
				in.VMI, in.Pods = nil, nil
			}),
			overall: "Degraded/DataVolumeError", cp: "Degraded/DataVolumeError",
		},
		{
			name: "a Halted VM whose status says Stopped is stopped, though created lags by one sync",
			in: input(func(in *Input) {
				in.VM = vm(withRunStrategy(kubevirtv1.RunStrategyHalted), func(v *kubevirtv1.VirtualMachine) {
					v.Status.PrintableStatus = kubevirtv1.VirtualMachineStatusStopped
				})
				in.VMI, in.Pods = nil, nil
			}),
			overall: "Suspended/Stopped",
		},
		{
			name: "an Always VM between its final VMI and the next: restarting",
			in: input(func(in *Input) {
				in.VM = vm(func(v *kubevirtv1.VirtualMachine) { v.Status.PrintableStatus = kubevirtv1.VirtualMachineStatusStopped })
				in.VMI, in.Pods = nil, nil
			}),
			cp: "Progressing/Restarting",
		},
		{
			name: "created=true, printableStatus Paused: the VMI's layers are unknown",
			in: input(func(in *Input) {
				in.VM = vm(func(v *kubevirtv1.VirtualMachine) { v.Status.PrintableStatus = kubevirtv1.VirtualMachineStatusPaused })
				in.VMI, in.Pods = nil, nil
			}),
			overall: "Unknown/VMINotObserved", cp: "Unknown/VMINotObserved",
		},
		{
			name: "Pending VMI with the VM's ErrorPvcNotFound as its only cause",
			in: input(func(in *Input) {
				in.VM = vm(func(v *kubevirtv1.VirtualMachine) {
					v.Status.PrintableStatus = kubevirtv1.VirtualMachineStatusPvcNotFound
				})
				in.VMI = pendingVMI(kubevirtv1.Pending, time.Minute)
				in.Pods = nil
			}),
			overall: "Degraded/PVCNotFound", cp: "Degraded/PVCNotFound",
		},
	}
}

func TestNoHealthyWithoutEvidence(t *testing.T) { run(t, evidenceSituations()) }

func evidenceSituations() []situation {
	return []situation{
		{
			name:    "no agent, VMI Ready: the launcher says the domain runs",
			in:      input(func(in *Input) { in.VMI = runningVMI(noAgentEver()) }),
			overall: "Healthy/Running", guest: "Healthy/NoGuestAgent",
		},
		{
			name: "no agent, no Ready anywhere: nothing says the domain runs",
			in: input(func(in *Input) {
				// The pod turned not Ready 2s ago: within the lag grace
				// the node layer does not judge it, and nothing says the
				// domain runs.
				in.VMI = runningVMI(noAgentEver(), readyFalse("ContainersNotReady"))
				in.Pods = []*corev1.Pod{launcherPod(func(p *corev1.Pod) {
					for i := range p.Status.Conditions {
						if p.Status.Conditions[i].Type == corev1.PodReady {
							p.Status.Conditions[i].Status, p.Status.Conditions[i].LastTransitionTime = corev1.ConditionFalse, at(-2*time.Second)
						}
					}
				})}
			}),
			node: "Progressing/LauncherPodNotReady", guest: "Unknown/NoGuestAgent",
		},
		{
			name:    "Running without a Ready condition, the launcher pod in the input: the pod speaks for itself",
			in:      input(func(in *Input) { in.VMI = runningVMI(withoutCondition(kubevirtv1.VirtualMachineInstanceReady)) }),
			overall: "Healthy/Running", cp: "Healthy/Running", node: "Healthy/LauncherRunning",
		},
		{
			name: "Ready=False PodNotExists, pod not in the input: the VMI says the launcher is gone",
			in: input(func(in *Input) {
				in.VMI = runningVMI(readyFalse(kubevirtv1.PodNotExistsReason))
				in.Pods = nil
			}),
			overall: "Degraded/LauncherPodMissing", node: "Degraded/LauncherPodMissing", guest: "Unknown/EvidenceStale",
		},
		{
			name: "no launcher pod in the input and Ready=False without a reason: the agent's condition is a leftover",
			in: input(func(in *Input) {
				in.VMI = runningVMI(readyFalse(""))
				in.Pods = nil
			}),
			node: "Degraded/LauncherPodNotReady", guest: "Unknown/EvidenceStale",
		},
		{
			name: "Ready=False PodTerminating, pod not in the input",
			in: input(func(in *Input) {
				in.VMI = runningVMI(readyFalse(kubevirtv1.PodTerminatingReason))
				in.Pods = nil
			}),
			node: "Progressing/LauncherPodTerminating",
		},
		{
			name: "Ready=False ContainersNotReady, pod not in the input",
			in: input(func(in *Input) {
				in.VMI = runningVMI(readyFalse("ContainersNotReady"))
				in.Pods = nil
			}),
			overall: "Degraded/LauncherPodNotReady", node: "Degraded/LauncherPodNotReady", guest: "Unknown/EvidenceStale",
		},
		{
			name: "Ready=False ReadinessGatesNotReady while paused: Paused explains it",
			in: input(func(in *Input) {
				in.VMI = runningVMI(paused(pausedByUser), readyFalse("ReadinessGatesNotReady"))
				in.Pods = []*corev1.Pod{launcherPod(func(p *corev1.Pod) {
					for i := range p.Status.Conditions {
						if p.Status.Conditions[i].Type == corev1.PodReady {
							p.Status.Conditions[i].Status, p.Status.Conditions[i].Reason = corev1.ConditionFalse, "ReadinessGatesNotReady"
						}
					}
				})}
			}),
			cp: "Suspended/PausedByUser", guest: "Suspended/PausedByUser",
		},
		{
			name: "the agent condition on a VMI whose launcher is dead is a leftover",
			in: input(func(in *Input) {
				in.Pods = []*corev1.Pod{launcherPod(computeTerminated("Error", 1))}
			}),
			node: "Failed/ComputeContainerTerminated", guest: "Unknown/NotRunning",
		},
	}
}

func TestRootCauseOverSymptom(t *testing.T) { run(t, rootCauseSituations()) }

func rootCauseSituations() []situation {
	notReadyPod := func(p *corev1.Pod) {
		for i := range p.Status.Conditions {
			if p.Status.Conditions[i].Type == corev1.PodReady {
				p.Status.Conditions[i].Status = corev1.ConditionFalse
				p.Status.Conditions[i].LastTransitionTime = at(-4 * time.Minute)
			}
		}
	}
	return []situation{
		{
			name: "NotReady node with a stale heartbeat explains the not-ready launcher",
			in: input(func(in *Input) {
				in.Nodes[nodeA] = node(nodeA, nodeReady(corev1.ConditionUnknown), heartbeatAt(-10*time.Minute))
				in.Pods = []*corev1.Pod{launcherPod(notReadyPod)}
			}),
			overall: "Unknown/NodeNotReady", node: "Unknown/NodeNotReady", guest: "Unknown/EvidenceStale",
			check: func(t *testing.T, r Result) {
				if m := r.Status.Layers.Node.Message; !strings.Contains(m, v1alpha1.ReasonLauncherPodNotReady) {
					t.Errorf("node message %q lacks the consequence", m)
				}
			},
		},
		{
			name: "a stale heartbeat on a Ready node explains the missing launcher",
			in: input(func(in *Input) {
				in.Nodes[nodeA] = node(nodeA, heartbeatAt(-10*time.Minute))
				in.Pods = nil
			}),
			node: "Unknown/NodeAgentStale", guest: "Unknown/EvidenceStale",
		},
		{
			name: "a not-ready launcher on a healthy node is the launcher's",
			in: input(func(in *Input) {
				in.Pods = []*corev1.Pod{launcherPod(notReadyPod)}
			}),
			overall: "Degraded/LauncherPodNotReady", node: "Degraded/LauncherPodNotReady", guest: "Unknown/EvidenceStale",
		},
	}
}

func TestRulesFollowKubeVirt(t *testing.T) { run(t, kubevirtRuleSituations()) }

func kubevirtRuleSituations() []situation {
	strategy := func(s kubevirtv1.EvictionStrategy) vmiMod {
		return func(v *kubevirtv1.VirtualMachineInstance) { v.Spec.EvictionStrategy = &s }
	}
	notMigratable := withCondition(kubevirtv1.VirtualMachineInstanceCondition{
		Type: kubevirtv1.VirtualMachineInstanceIsMigratable, Status: corev1.ConditionFalse,
		Reason:  kubevirtv1.VirtualMachineInstanceReasonDisksNotMigratable,
		Message: "cannot migrate VMI: PVC rootdisk is not shared, live migration requires that all PVCs must be shared (using ReadWriteMany access mode)",
	})
	sriov := func(v *kubevirtv1.VirtualMachineInstance) {
		v.Spec.Domain.Devices.Interfaces = append(v.Spec.Domain.Devices.Interfaces,
			kubevirtv1.Interface{Name: "sriov-net", InterfaceBindingMethod: kubevirtv1.InterfaceBindingMethod{SRIOV: &kubevirtv1.InterfaceSRIOV{}}})
		v.Spec.Networks = append(v.Spec.Networks, kubevirtv1.Network{Name: "sriov-net",
			NetworkSource: kubevirtv1.NetworkSource{Multus: &kubevirtv1.MultusNetwork{NetworkName: "sriov-nad"}}})
		// A host-device entry without a MAC: the agent's data cannot be
		// matched to it.
		v.Status.Interfaces = append(v.Status.Interfaces, kubevirtv1.VirtualMachineInstanceNetworkInterface{
			Name: "sriov-net", InfoSource: "domain"})
	}
	return []situation{
		{
			name: "External strategy marks and never migrates: Progressing",
			in: input(func(in *Input) {
				in.VMI = runningVMI(strategy(kubevirtv1.EvictionStrategyExternal), evacuating(nodeA), notMigratable)
			}),
			overall: "Progressing/EvictionExternal", cp: "Progressing/EvictionExternal",
		},
		{
			name:    "LiveMigrate and not migratable, no mark: the drain will be refused (a note)",
			in:      input(func(in *Input) { in.VMI = runningVMI(strategy(kubevirtv1.EvictionStrategyLiveMigrate), notMigratable) }),
			overall: "Healthy/Running", cp: "Healthy/Running",
			check: wantNote(layerCP, v1alpha1.ReasonNotEvictable),
		},
		{
			name: "marked under LiveMigrate, migratability lost after the mark: blocked",
			in: input(func(in *Input) {
				in.VMI = runningVMI(strategy(kubevirtv1.EvictionStrategyLiveMigrate), evacuating(nodeA), notMigratable)
			}),
			overall: "Degraded/EvictionBlocked",
		},
		{
			name: "an SR-IOV interface is not a migration blocker, and its MAC-less entry is not missing data",
			in: input(func(in *Input) {
				in.VMI = runningVMI(sriov, withCondition(kubevirtv1.VirtualMachineInstanceCondition{
					Type: kubevirtv1.VirtualMachineInstanceIsMigratable, Status: corev1.ConditionFalse,
					Reason: kubevirtv1.VirtualMachineInstanceReasonDisksNotMigratable,
				}))
			}),
			overall: "Healthy/Running", guest: "Healthy/GuestAgentConnected",
			check: func(t *testing.T, r Result) {
				if lm := r.Status.LiveMigratable; lm == nil || strings.Join(lm.Reasons, ",") != kubevirtv1.VirtualMachineInstanceReasonDisksNotMigratable {
					t.Errorf("liveMigratable %+v", lm)
				}
			},
		},
		{
			name: "a single GPU may be a migratable mediated device",
			in: input(func(in *Input) {
				in.VMI = runningVMI(notMigratable, func(v *kubevirtv1.VirtualMachineInstance) {
					v.Spec.Domain.Devices.GPUs = []kubevirtv1.GPU{{Name: "gpu1", DeviceName: "nvidia.com/GRID_T4-1Q"}}
				})
			}),
			check: func(t *testing.T, r Result) {
				if lm := r.Status.LiveMigratable; lm == nil || len(lm.Reasons) != 1 {
					t.Errorf("liveMigratable %+v", lm)
				}
			},
		},
		{
			name: "a volume being migrated is exempt from the ReadWriteOnce check",
			in: input(func(in *Input) {
				in.VMI = runningVMI(withCondition(kubevirtv1.VirtualMachineInstanceCondition{
					Type: kubevirtv1.VirtualMachineInstanceIsMigratable, Status: corev1.ConditionFalse, Reason: "InterfaceNotLiveMigratable",
				}), func(v *kubevirtv1.VirtualMachineInstance) {
					v.Status.VolumeStatus = []kubevirtv1.VolumeStatus{{Name: "rootdisk", PersistentVolumeClaimInfo: &kubevirtv1.PersistentVolumeClaimInfo{
						ClaimName: "rootdisk-dst", AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}}}}
					v.Status.MigratedVolumes = []kubevirtv1.StorageMigratedVolumeInfo{{VolumeName: "rootdisk"}}
				})
			}),
			check: func(t *testing.T, r Result) {
				if lm := r.Status.LiveMigratable; lm == nil || strings.Join(lm.Reasons, ",") != "InterfaceNotLiveMigratable" {
					t.Errorf("liveMigratable %+v", lm)
				}
			},
		},
		{
			name: "a migration rejected by a resource quota is blocked",
			in: input(func(in *Input) {
				in.Migrations = []*kubevirtv1.VirtualMachineInstanceMigration{vmim(vmimIn(kubevirtv1.MigrationPending, -time.Minute),
					func(m *kubevirtv1.VirtualMachineInstanceMigration) {
						m.Status.Conditions = []kubevirtv1.VirtualMachineInstanceMigrationCondition{{
							Type: kubevirtv1.VirtualMachineInstanceMigrationRejectedByResourceQuota, Status: corev1.ConditionTrue,
							Message: "exceeded quota: mem-quota, requested: requests.memory=2Gi"}}
					})}
			}),
			overall: "Degraded/MigrationBlocked", cp: "Degraded/MigrationBlocked",
		},
		{
			name: "a Pending migration queued for an hour is not stuck",
			in: input(func(in *Input) {
				in.Migrations = []*kubevirtv1.VirtualMachineInstanceMigration{vmim(vmimIn(kubevirtv1.MigrationPending, -time.Hour))}
			}),
			overall: "Progressing/Migrating", cp: "Progressing/Migrating",
		},
		{
			name: "masquerade with the NAT address and no launcher pod in the input",
			in: input(func(in *Input) {
				in.VMI = runningVMI(guestIP("10.0.2.2"))
				in.Pods = nil
				in.Uncaptured.Pods = true
			}),
			guest: "Degraded/GuestIPMismatch", node: "Healthy/LauncherRunning",
		},
		{
			name: "the agent reported the primary interface without any IP (kubevirt#7508)",
			in: input(func(in *Input) {
				in.VMI = runningVMI(func(v *kubevirtv1.VirtualMachineInstance) {
					v.Status.Interfaces[0].IP, v.Status.Interfaces[0].IPs = "", nil
				})
			}),
			guest: "Degraded/GuestInterfaceDataMissing",
		},
		{
			name: "a dump without Nodes or pods: the node layer rests on the VMI's Ready",
			in: input(func(in *Input) {
				in.Pods, in.Nodes = nil, nil
				in.Uncaptured = Uncaptured{Pods: true, Nodes: true}
			}),
			overall: "Healthy/Running", node: "Healthy/LauncherRunning", guest: "Healthy/GuestAgentConnected",
		},
		{
			name: "a launcher pod pasted as a table row (container statuses, no conditions): the compute container's ready flag stands in",
			in: input(func(in *Input) {
				in.Pods = []*corev1.Pod{launcherPod(func(p *corev1.Pod) { p.Status.Conditions = nil })}
			}),
			overall: "Healthy/Running", node: "Healthy/LauncherRunning",
		},
		{
			name: "a paste of a migrating VMI without conditions, pod or Node: only the control plane has a basis",
			in: input(func(in *Input) {
				in.VMI = runningVMI(func(v *kubevirtv1.VirtualMachineInstance) {
					v.Status = kubevirtv1.VirtualMachineInstanceStatus{}
				})
				in.Pods, in.Nodes = nil, nil
				in.Uncaptured = Uncaptured{Pods: true, Nodes: true}
				in.Migrations = []*kubevirtv1.VirtualMachineInstanceMigration{vmim()}
			}),
			overall: "Progressing/Migrating", cp: "Progressing/Migrating", node: "Unknown/NotInInput", guest: "Unknown/NotInInput",
		},
		{
			name: "a VM paste with neither VMI nor pods nor Nodes: Running and Ready passed up from the launcher",
			in: input(func(in *Input) {
				in.VMI, in.Pods, in.Nodes = nil, nil, nil
				in.Uncaptured = Uncaptured{VMIs: true, Pods: true, Nodes: true}
			}),
			overall: "Healthy/Running", node: "Healthy/VMINotObserved", guest: "Healthy/VMINotObserved",
		},
		{
			name: "a Halted VM whose VMI could not be deleted a second ago is stopping (kubevirt#7339)",
			in: input(func(in *Input) {
				in.VM = vm(withRunStrategy(kubevirtv1.RunStrategyHalted), func(v *kubevirtv1.VirtualMachine) {
					v.Status = kubevirtv1.VirtualMachineStatus{Conditions: []kubevirtv1.VirtualMachineCondition{{
						Type: vmFailureCondition, Status: corev1.ConditionTrue, Reason: "FailedDelete",
						Message: "Failure attempting to delete VMI: <nil>", LastTransitionTime: at(-time.Second)}}}
				})
				in.VMI, in.Pods = nil, nil
			}),
			overall: "Progressing/Stopping", cp: "Progressing/Stopping", node: "Progressing/Stopping",
		},
		{
			name: "a launcher whose compute container the kubelet cannot create, before scheduling shows in the VMI",
			in: input(func(in *Input) {
				in.VMI = runningVMI(func(v *kubevirtv1.VirtualMachineInstance) {
					v.Status = kubevirtv1.VirtualMachineInstanceStatus{}
					v.CreationTimestamp = at(-10 * time.Second)
				})
				in.Pods = []*corev1.Pod{launcherPod(func(p *corev1.Pod) {
					p.Status.Phase = corev1.PodPending
					p.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
						Reason: "CreateContainerError", Message: "failed to generate spec: not a device node"}}
				})}
			}),
			node: "Degraded/LauncherContainerError",
		},
		{
			name: "a crash-looping VM: nothing runs on the node layers",
			in: input(func(in *Input) {
				in.VM = vm(func(v *kubevirtv1.VirtualMachine) {
					v.Status = kubevirtv1.VirtualMachineStatus{PrintableStatus: kubevirtv1.VirtualMachineStatusCrashLoopBackOff}
				})
				in.VMI, in.Pods = nil, nil
			}),
			overall: "Degraded/CrashLoopBackOff", node: "Unknown/NotRunning", guest: "Unknown/NotRunning",
		},
		{
			name: "a VM pasted without spec or created, printableStatus ErrorUnschedulable: a VMI exists",
			in: input(func(in *Input) {
				in.VM = vm(func(v *kubevirtv1.VirtualMachine) {
					v.Spec = kubevirtv1.VirtualMachineSpec{}
					v.Status = kubevirtv1.VirtualMachineStatus{PrintableStatus: kubevirtv1.VirtualMachineStatusUnschedulable}
				})
				in.VMI, in.Pods = nil, nil
			}),
			overall: "Degraded/Unschedulable",
		},
		{
			name: "a stopped RerunOnFailure VM whose DataVolume waits for binding is stopped (kubevirt#12544)",
			in: input(func(in *Input) {
				in.VM = vm(withRunStrategy(kubevirtv1.RunStrategyRerunOnFailure), func(v *kubevirtv1.VirtualMachine) {
					v.Status = kubevirtv1.VirtualMachineStatus{PrintableStatus: kubevirtv1.VirtualMachineStatusWaitingForVolumeBinding}
				})
				in.VMI, in.Pods = nil, nil
			}),
			overall: "Suspended/Stopped",
		},
		{
			name: "a VMI without phase whose only condition is an invalid image name",
			in: input(func(in *Input) {
				in.VMI = runningVMI(func(v *kubevirtv1.VirtualMachineInstance) {
					v.Status = kubevirtv1.VirtualMachineInstanceStatus{Conditions: []kubevirtv1.VirtualMachineInstanceCondition{{
						Type: kubevirtv1.VirtualMachineInstanceSynchronized, Status: corev1.ConditionFalse, Reason: "InvalidImageName",
						Message: "couldn't parse image name"}}}
				})
				in.Pods = nil
			}),
			cp: "Degraded/ImagePullFailed",
		},
		{
			name: "an empty network-status annotation is absent, not malformed",
			in: input(func(in *Input) {
				in.Pods = []*corev1.Pod{launcherPod(func(p *corev1.Pod) { p.Annotations[membership.NetworkStatusAnnotation] = "" })}
			}),
			overall: "Healthy/Running",
			check: func(t *testing.T, r Result) {
				if strings.Contains(r.Status.Layers.Guest.Message, v1alpha1.ReasonMalformedNetworkStatus) {
					t.Errorf("guest %q", r.Status.Layers.Guest.Message)
				}
			},
		},
	}
}

func TestSourcesNotReadBefore(t *testing.T) { run(t, newSourceSituations()) }

func newSourceSituations() []situation {
	vmCondition := func(c kubevirtv1.VirtualMachineCondition) vmMod {
		return func(v *kubevirtv1.VirtualMachine) { v.Status.Conditions = append(v.Status.Conditions, c) }
	}
	return []situation{
		{
			name: "the VM's Failure condition: a memory hotplug failed",
			in: input(func(in *Input) {
				in.VM = vm(vmCondition(kubevirtv1.VirtualMachineCondition{Type: vmFailureCondition, Status: corev1.ConditionTrue,
					Reason: "HotPlugMemoryError", Message: "memory hotplug not supported", LastTransitionTime: at(-time.Minute)}))
			}),
			overall: "Degraded/HotplugFailed", cp: "Degraded/HotplugFailed",
		},
		{
			name: "the VM's Failure condition: the VMI cannot be updated",
			in: input(func(in *Input) {
				in.VM = vm(vmCondition(kubevirtv1.VirtualMachineCondition{Type: vmFailureCondition, Status: corev1.ConditionTrue,
					Reason: "FailedUpdateError", Message: "Error encountered while updating the VMI", LastTransitionTime: at(-time.Minute)}))
			}),
			overall: "Degraded/VMFailure",
		},
		{
			name: "HotMemoryChange=False with virt-handler's failure",
			in: input(func(in *Input) {
				in.VMI = runningVMI(withCondition(kubevirtv1.VirtualMachineInstanceCondition{
					Type: kubevirtv1.VirtualMachineInstanceMemoryChange, Status: corev1.ConditionFalse, Reason: "Memory Hotplug Failed",
					Message: "failed to hotplug memory: domain not running"}))
			}),
			cp: "Degraded/HotplugFailed",
		},
		{
			name: "a hotplug volume that reports a failure",
			in: input(func(in *Input) {
				in.VMI = runningVMI(func(v *kubevirtv1.VirtualMachineInstance) {
					v.Status.VolumeStatus = append(v.Status.VolumeStatus, kubevirtv1.VolumeStatus{
						Name: "hp-disk", Phase: kubevirtv1.VolumePending, Reason: "FailedAttachVolume",
						Message: "AttachVolume.Attach failed", HotplugVolume: &kubevirtv1.HotplugVolumeStatus{}})
				})
			}),
			storage: "Degraded/HotplugVolumeFailed",
		},
		{
			name: "access credentials could not be propagated",
			in: input(func(in *Input) {
				in.VMI = runningVMI(withCondition(kubevirtv1.VirtualMachineInstanceCondition{
					Type: kubevirtv1.VirtualMachineInstanceAccessCredentialsSynchronized, Status: corev1.ConditionFalse,
					Reason: "SSHKeyPropagationFailed", Message: "guest agent command failed"}))
			}),
			guest: "Degraded/AccessCredentialsFailed",
		},
		{
			name: "a VMI deleted 10 minutes ago that still runs is stuck stopping",
			in: input(func(in *Input) {
				in.VMI = runningVMI(func(v *kubevirtv1.VirtualMachineInstance) { v.DeletionTimestamp = atp(-10 * time.Minute) })
			}),
			overall: "Degraded/StuckStopping", cp: "Degraded/StuckStopping",
		},
		{
			name: "a VMI deleted a minute ago is stopping",
			in: input(func(in *Input) {
				in.VMI = runningVMI(func(v *kubevirtv1.VirtualMachineInstance) { v.DeletionTimestamp = atp(-time.Minute) })
			}),
			overall: "Progressing/Stopping",
			check:   wantDeadline(4*time.Minute, "180s grace + 2m margin"),
		},
		{
			name: "a launcher whose containers all terminated though its phase says Running",
			in: input(func(in *Input) {
				in.Pods = []*corev1.Pod{launcherPod(computeTerminated("Completed", 0))}
			}),
			node: "Failed/ComputeContainerTerminated",
		},
		{
			name: "DataVolumesReady=False before start: provisioning, no timeout",
			in: input(func(in *Input) {
				in.VMI = pendingVMI(kubevirtv1.Pending, time.Hour, withCondition(kubevirtv1.VirtualMachineInstanceCondition{
					Type: kubevirtv1.VirtualMachineInstanceDataVolumesReady, Status: corev1.ConditionFalse, Reason: "NotAllDVsReady"}))
				in.Pods = nil
			}),
			cp: "Progressing/Provisioning",
		},
	}
}

func TestLagTolerance(t *testing.T) { run(t, lagSituations()) }

func lagSituations() []situation {
	// The handoff: the migration succeeded 3s ago, the source launcher has
	// completed, the VMI still names the source node.
	handoff := func(in *Input) {
		in.VMI = runningVMI(migrationState(func(st *kubevirtv1.VirtualMachineInstanceMigrationState) {
			st.Completed, st.EndTimestamp = true, atp(-3*time.Second)
		}))
		in.Pods = []*corev1.Pod{
			launcherPod(podPhase(corev1.PodSucceeded), func(p *corev1.Pod) {
				p.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
					Reason: "Completed", FinishedAt: at(-2 * time.Second)}}
			}),
			targetPod(),
		}
		in.Migrations = []*kubevirtv1.VirtualMachineInstanceMigration{vmim(vmimFinal(kubevirtv1.MigrationSucceeded, in.VMI.Status.MigrationState))}
	}
	prevHealthy := func(in *Input) {
		r := Evaluate(input())
		in.Previous = &r.Status
	}
	return []situation{
		{
			name:    "migration handoff, no previous verdict: Progressing, not Degraded",
			in:      input(handoff),
			overall: "Progressing/StatusLagging", node: "Progressing/StatusLagging", guest: "Healthy/GuestAgentConnected",
			check: wantDeadline(8*time.Second, "the lag grace from the pod's end"),
		},
		{
			name:    "migration handoff with a previous Healthy verdict: it is kept",
			in:      input(handoff, prevHealthy),
			overall: "Healthy/Running", node: "Healthy/LauncherRunning", guest: "Healthy/GuestAgentConnected",
			check: func(t *testing.T, r Result) {
				// The kept verdict does not carry the contradiction's evidence.
				if hasEvidence(r.Status.Layers.Node, kindPod, podName, "status.phase") {
					t.Errorf("node evidence %+v", r.Status.Layers.Node.Evidence)
				}
			},
		},
		{
			name: "the same contradiction past the grace is a verdict",
			in: input(handoff, prevHealthy, func(in *Input) {
				in.Now = now.Add(30 * time.Second)
			}),
			node: "Degraded/StatusLagging", guest: "Unknown/NotRunning",
		},
		{
			// The VM migrates back to a node it left before: the launcher of
			// that earlier stay is still there, Succeeded. At the handoff the
			// VMI names the node while the VMIM is not final yet.
			name: "the handoff back to a node with a finished launcher of an earlier stay",
			in: input(func(in *Input) {
				in.VMI = runningVMI(migrationState(func(st *kubevirtv1.VirtualMachineInstanceMigrationState) {
					st.Completed, st.EndTimestamp = true, atp(-time.Second)
				}), onTarget)
				earlier := targetPod(podPhase(corev1.PodSucceeded), func(p *corev1.Pod) {
					p.Name, p.UID = "virt-launcher-vm1-earli", "earlier-uid"
					p.CreationTimestamp = at(-time.Hour)
					delete(p.Labels, kubevirtv1.MigrationJobLabel)
				})
				in.Pods = []*corev1.Pod{launcherPod(), targetPod(), earlier}
				in.Migrations = []*kubevirtv1.VirtualMachineInstanceMigration{vmim()}
			}),
			node: "Healthy/LauncherRunning",
			check: func(t *testing.T, r Result) {
				for _, p := range r.Status.LauncherPods {
					if p.Name == "virt-launcher-vm1-earli" && p.Role != v1alpha1.RoleStale {
						t.Errorf("the earlier launcher is %s, want Stale", p.Role)
					}
				}
			},
		},
		{
			name: "the source launcher deleted before the VMI names the target",
			in: input(handoff, prevHealthy, func(in *Input) {
				in.Pods = in.Pods[1:]
			}),
			overall: "Healthy/Running", node: "Healthy/LauncherRunning",
		},
		{
			name: "the VMI still shows the source pod's IPs right after the handoff",
			in: input(func(in *Input) {
				in.VMI = runningVMI(migrationState(func(st *kubevirtv1.VirtualMachineInstanceMigrationState) {
					st.Completed, st.EndTimestamp = true, atp(-2*time.Second)
				}), func(v *kubevirtv1.VirtualMachineInstance) { v.Status.NodeName = nodeB })
				in.Pods = []*corev1.Pod{targetPod()}
				in.Migrations = []*kubevirtv1.VirtualMachineInstanceMigration{vmim(vmimFinal(kubevirtv1.MigrationSucceeded, in.VMI.Status.MigrationState))}
			}),
			guest: "Progressing/GuestIPMismatch",
		},
		{
			// Seen in the soak at every handoff: the target's virt-handler
			// wrote nodeName while the migration still ran, and the status
			// still showed the source pod's addresses; the target pod was
			// created and Ready minutes before, so the grace counted from
			// it had long passed.
			name: "the VMI names the target while the migration runs and still shows the source pod's IPs",
			in: input(func(in *Input) {
				in.VMI = runningVMI(migrationState(), func(v *kubevirtv1.VirtualMachineInstance) { v.Status.NodeName = nodeB })
				in.Pods = []*corev1.Pod{launcherPod(), targetPod()}
				in.Migrations = []*kubevirtv1.VirtualMachineInstanceMigration{vmim()}
			}),
			guest: "Healthy/GuestAgentConnected",
		},
	}
}
