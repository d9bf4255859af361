package verdict

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/api/v1alpha1"
)

// The situations in this file are partial input as vmobs analyze meets it
// (pastes, must-gathers, a status that lags in the cluster), and deletions
// that outlive their grace whatever the VMI's phase: each a rule, not a
// case.

// liveMigratable is the condition virt-handler adds in every status update
// (kv:pkg/virt-handler/vm.go:747-765).
func liveMigratable(v *kubevirtv1.VirtualMachineInstance) {
	withCondition(kubevirtv1.VirtualMachineInstanceCondition{
		Type: kubevirtv1.VirtualMachineInstanceIsMigratable, Status: corev1.ConditionTrue,
		LastTransitionTime: at(-4 * time.Minute),
	})(v)
}

// pasted says the input holds no pods and no Nodes at all, as a pasted VMI.
func pasted(in *Input) { in.Uncaptured = Uncaptured{Pods: true, Nodes: true} }

// deleting gives the VMI a deletionTimestamp d ago and virt-controller's
// finalizer.
func deleting(d time.Duration) vmiMod {
	return func(v *kubevirtv1.VirtualMachineInstance) {
		v.DeletionTimestamp = atp(d)
		v.Finalizers = []string{kubevirtv1.VirtualMachineInstanceFinalizer}
	}
}

// podDeleting gives the pod a deletionTimestamp d ago, as on a node that
// cannot confirm the deletion.
func podDeleting(d time.Duration) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.DeletionTimestamp = atp(d) }
}

// sidecarExited makes a launcher container other than compute exit, and
// the pod and the VMI's copy of its readiness turn not ready.
func sidecarExited(name string, init bool) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		st := corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: 1, Reason: "Error", FinishedAt: at(-10 * time.Minute),
		}}}
		list := &p.Status.ContainerStatuses
		if init {
			list = &p.Status.InitContainerStatuses
		}
		found := false
		for i := range *list {
			if (*list)[i].Name == name {
				(*list)[i], found = st, true
			}
		}
		if !found {
			*list = append(*list, st)
		}
		for i := range p.Status.Conditions {
			if c := &p.Status.Conditions[i]; c.Type == corev1.PodReady || c.Type == corev1.ContainersReady {
				c.Status, c.Reason, c.LastTransitionTime = corev1.ConditionFalse, "ContainersNotReady", at(-10*time.Minute)
			}
		}
	}
}

func failedTarget(p *corev1.Pod) {
	podPhase(corev1.PodFailed)(p)
	p.Status.Reason = ""
}

func TestPartialInput(t *testing.T) { run(t, partialSituations()) }

func partialSituations() []situation {
	return []situation{
		// C2: LiveMigratable is Scheduled or later, not Running.
		{
			name: "no phase, LiveMigratable and virt-handler's Synchronized=False: a failed start, not a running VM",
			in: input(func(in *Input) {
				in.VMI = pendingVMI(kubevirtv1.Scheduled, 4*time.Minute, noStatusPhase, liveMigratable,
					handlerSync("virError(Code=8, Domain=44, Message='invalid argument: could not find capabilities for domaintype=kvm ')"))
				in.VMI.Status.Conditions = in.VMI.Status.Conditions[1:] // Ready cut by the paste
				in.Pods = nil
				pasted(in)
			}),
			overall: "Degraded/DomainSyncFailed", cp: "Progressing/Starting", node: "Degraded/DomainSyncFailed",
		},
		{
			name: "no phase, only LiveMigratable: Scheduled, starting",
			in: input(func(in *Input) {
				in.VMI = pendingVMI(kubevirtv1.Scheduled, 4*time.Minute, noStatusPhase, liveMigratable)
				in.VMI.Status.Conditions = in.VMI.Status.Conditions[1:]
				in.Pods = nil
				pasted(in)
			}),
			overall: "Progressing/Starting", cp: "Progressing/Starting",
		},

		// C3: a deletion older than grace + margin is stuck, whatever the phase.
		{
			name: "Succeeded VMI of a Halted VM held by its finalizer: the launcher pod stuck Terminating on a NotReady node",
			in: input(func(in *Input) {
				in.VM = vm(withRunStrategy(kubevirtv1.RunStrategyHalted))
				in.VMI = runningVMI(vmiPhase(kubevirtv1.Succeeded, -20*time.Minute), deleting(-20*time.Minute))
				in.Pods = []*corev1.Pod{launcherPod(podDeleting(-20 * time.Minute))}
				in.Nodes[nodeA] = node(nodeA, nodeReady(corev1.ConditionUnknown))
			}),
			overall: "Degraded/StuckStopping", cp: "Degraded/StuckStopping",
			check: func(t *testing.T, r Result) {
				cp := r.Status.Layers.ControlPlane
				for _, ev := range []struct{ kind, name, field string }{
					{kindVMI, vmName, "metadata.deletionTimestamp"},
					{kindVMI, vmName, "metadata.finalizers"},
					{kindPod, podName, "metadata.deletionTimestamp"},
					{kindNode, nodeA, "status.conditions[Ready].status"},
				} {
					if !hasEvidence(cp, ev.kind, ev.name, ev.field) {
						t.Errorf("no evidence %s %s %s in %+v", ev.kind, ev.name, ev.field, cp.Evidence)
					}
				}
				if !strings.Contains(cp.Message, podName+" on "+nodeA+" (node readiness Unknown)") {
					t.Errorf("message %q does not name the pod and its node", cp.Message)
				}
			},
		},
		{
			name: "the same deletion within the grace: still stopped as declared, looked at again at the deadline",
			in: input(func(in *Input) {
				in.VM = vm(withRunStrategy(kubevirtv1.RunStrategyHalted))
				in.VMI = runningVMI(vmiPhase(kubevirtv1.Succeeded, -time.Minute), deleting(-time.Minute))
				in.Pods = []*corev1.Pod{launcherPod(podDeleting(-time.Minute))}
			}),
			overall: "Suspended/Stopped", cp: "Suspended/Stopped",
			check: func(t *testing.T, r Result) {
				// grace 180s + margin 2m from a minute ago.
				if want := 4 * time.Minute; r.NextDeadline != want {
					t.Errorf("NextDeadline = %v, want %v", r.NextDeadline, want)
				}
			},
		},
		{
			name: "Succeeded VMI under Always held by its finalizer: not Restarting forever",
			in: input(func(in *Input) {
				in.VMI = runningVMI(vmiPhase(kubevirtv1.Succeeded, -30*time.Minute), deleting(-30*time.Minute))
				in.Pods = []*corev1.Pod{launcherPod(podDeleting(-30 * time.Minute))}
			}),
			overall: "Degraded/StuckStopping", cp: "Degraded/StuckStopping",
		},
		{
			name: "a VMI without a phase whose deletion outlived its grace",
			in: input(func(in *Input) {
				in.VMI = runningVMI(func(v *kubevirtv1.VirtualMachineInstance) {
					v.Status = kubevirtv1.VirtualMachineInstanceStatus{}
					v.CreationTimestamp = at(-2 * time.Minute)
					v.Spec.TerminationGracePeriodSeconds = ptr(int64(30))
				}, deleting(-3*time.Minute))
				in.Pods = nil
				pasted(in)
			}),
			overall: "Degraded/StuckStopping", cp: "Degraded/StuckStopping",
			check: func(t *testing.T, r Result) {
				if !strings.Contains(r.Status.Layers.ControlPlane.Message, "grace period 30s") {
					t.Errorf("message %q", r.Status.Layers.ControlPlane.Message)
				}
			},
		},
		{
			name: "VMI not in the input, the VM Stopping for 20 minutes: stuck",
			in: input(func(in *Input) {
				in.VM = vm(func(v *kubevirtv1.VirtualMachine) {
					v.Status.PrintableStatus = kubevirtv1.VirtualMachineStatusStopping
					v.Status.Conditions = []kubevirtv1.VirtualMachineCondition{{
						Type: kubevirtv1.VirtualMachineReady, Status: corev1.ConditionFalse, Reason: "PodTerminating",
						LastTransitionTime: at(-20 * time.Minute),
					}}
				})
				in.VMI, in.Pods = nil, nil
				in.Uncaptured = Uncaptured{VMIs: true, Pods: true, Nodes: true}
			}),
			overall: "Degraded/StuckStopping", cp: "Degraded/StuckStopping",
		},
		{
			name: "VMI not in the input, the VM Stopping for a minute: Progressing with a deadline",
			in: input(func(in *Input) {
				in.VM = vm(func(v *kubevirtv1.VirtualMachine) {
					v.Status.PrintableStatus = kubevirtv1.VirtualMachineStatusStopping
					v.Status.Conditions = []kubevirtv1.VirtualMachineCondition{{
						Type: kubevirtv1.VirtualMachineReady, Status: corev1.ConditionFalse, Reason: "PodTerminating",
						LastTransitionTime: at(-time.Minute),
					}}
				})
				in.VMI, in.Pods = nil, nil
				in.Uncaptured = Uncaptured{VMIs: true, Pods: true, Nodes: true}
			}),
			cp: "Progressing/Stopping",
			check: func(t *testing.T, r Result) {
				if want := 4 * time.Minute; r.NextDeadline != want {
					t.Errorf("NextDeadline = %v, want %v", r.NextDeadline, want)
				}
			},
		},

		// A Running VMI without Ready lacks evidence about the launcher.
		{
			name: "Running without a Ready condition, no pod in the input, the Node there: node Unknown, the control plane Healthy",
			in: input(func(in *Input) {
				in.VMI = runningVMI(withoutCondition(kubevirtv1.VirtualMachineInstanceReady))
				in.Pods = nil
				in.Uncaptured.Pods = true
			}),
			cp: "Healthy/Running", node: "Unknown/ReadyConditionMissing",
			check: func(t *testing.T, r Result) {
				if !hasEvidence(r.Status.Layers.Node, kindVMI, vmName, "status.conditions[Ready]") {
					t.Errorf("evidence %+v", r.Status.Layers.Node.Evidence)
				}
			},
		},
		{
			name: "Running without a Ready condition, neither pod nor Node in the input: the control plane decides",
			in: input(func(in *Input) {
				in.VMI = runningVMI(withoutCondition(kubevirtv1.VirtualMachineInstanceReady))
				in.Pods, in.Nodes = nil, nil
				pasted(in)
			}),
			overall: "Healthy/Running", cp: "Healthy/Running", node: "Unknown/NotInInput",
		},

		// A launcher pod proves virt-controller processed the VMI.
		{
			name: "VMI without a status, its launcher pod Failed: the VM did not start",
			in: input(func(in *Input) {
				in.VMI = runningVMI(func(v *kubevirtv1.VirtualMachineInstance) {
					v.Status = kubevirtv1.VirtualMachineInstanceStatus{}
					v.CreationTimestamp = at(-2 * time.Minute)
				})
				in.Pods = []*corev1.Pod{launcherPod(podPhase(corev1.PodFailed))}
			}),
			overall: "Failed/LauncherPodFailed", node: "Failed/LauncherPodFailed", guest: "Unknown/NotRunning",
		},
		{
			name: "Scheduled VMI behind its pod: the compute container terminated",
			in: input(func(in *Input) {
				in.VMI = pendingVMI(kubevirtv1.Scheduled, 3*time.Minute)
				in.Pods = []*corev1.Pod{launcherPod(computeTerminated("Error", 1))}
			}),
			overall: "Failed/ComputeContainerTerminated", cp: "Degraded/StatusLagging", node: "Failed/ComputeContainerTerminated",
		},
		{
			name: "Scheduled VMI whose pod ended a moment ago: the phase may still follow",
			in: input(func(in *Input) {
				in.VMI = pendingVMI(kubevirtv1.Scheduled, 3*time.Minute)
				in.Pods = []*corev1.Pod{launcherPod(func(p *corev1.Pod) {
					computeTerminated("Error", 1)(p)
					p.Status.ContainerStatuses[0].State.Terminated.FinishedAt = at(-5 * time.Second)
				})}
			}),
			cp: "Progressing/Starting", node: "Failed/ComputeContainerTerminated",
		},
		{
			name: "Scheduling VMI whose pod was OOM-killed, no node in the status yet: named once",
			in: input(func(in *Input) {
				in.VMI = pendingVMI(kubevirtv1.Scheduling, 3*time.Minute)
				in.Pods = []*corev1.Pod{launcherPod(podPhase(corev1.PodFailed), computeTerminated("OOMKilled", 137))}
			}),
			node: "Failed/ComputeContainerOOMKilled",
			check: func(t *testing.T, r Result) {
				if n := strings.Count(r.Status.Layers.Node.Message, "OOM-killed"); n != 1 {
					t.Errorf("OOM kill said %d times: %q", n, r.Status.Layers.Node.Message)
				}
			},
		},
		{
			name: "the migration target pod failed while the VMIM still says Running: a failed migration, not the VM's launcher",
			in: input(func(in *Input) {
				in.VMI = runningVMI(migrationState())
				in.Pods = []*corev1.Pod{launcherPod(), targetPod(failedTarget)}
				in.Migrations = []*kubevirtv1.VirtualMachineInstanceMigration{vmim()}
			}),
			overall: "Degraded/MigrationFailed", cp: "Degraded/MigrationFailed", node: "Healthy/LauncherRunning",
			check: func(t *testing.T, r Result) {
				if !hasEvidence(r.Status.Layers.ControlPlane, kindPod, pod2Name, "metadata.labels[kubevirt.io/migrationJobUID]") {
					t.Errorf("evidence %+v", r.Status.Layers.ControlPlane.Evidence)
				}
			},
		},
		{
			name: "a paste without the VMIM and the VMI's phase: the failed target pod is the migration's",
			in: input(func(in *Input) {
				in.VMI = runningVMI(func(v *kubevirtv1.VirtualMachineInstance) { v.Status.Phase, v.Status.NodeName = "", "" })
				in.Pods = []*corev1.Pod{launcherPod(), targetPod(failedTarget)}
			}),
			overall: "Degraded/MigrationFailed", cp: "Degraded/MigrationFailed", node: "Healthy/LauncherRunning",
		},
		{
			name: "no node in the VMI's status, both launchers live: the VM's own launcher is active, not the migration target",
			in: input(func(in *Input) {
				in.VMI = runningVMI(func(v *kubevirtv1.VirtualMachineInstance) { v.Status.NodeName = "" })
				in.Pods = []*corev1.Pod{launcherPod(), targetPod()}
			}),
			check: func(t *testing.T, r Result) {
				for _, p := range r.Status.LauncherPods {
					if p.Role == v1alpha1.RoleActive && p.Name != podName {
						t.Errorf("active pod %s, want %s", p.Name, podName)
					}
				}
			},
		},

		{
			name: "PodScheduled=False Unschedulable on the VMI while its launcher pod is bound to a node: a stale copy, still starting",
			in: input(func(in *Input) {
				in.VMI = pendingVMI(kubevirtv1.Scheduling, 2*time.Minute, withCondition(kubevirtv1.VirtualMachineInstanceCondition{
					Type: kubevirtv1.VirtualMachineInstanceConditionType(corev1.PodScheduled), Status: corev1.ConditionFalse,
					Reason: corev1.PodReasonUnschedulable, Message: "0/1 nodes are available: 1 MatchNodeSelector.",
					LastTransitionTime: at(-2 * time.Minute),
				}))
				in.Pods = []*corev1.Pod{launcherPod(func(p *corev1.Pod) {
					p.Status.Phase, p.Status.Conditions = corev1.PodPending, nil
					p.Status.ContainerStatuses[0].Ready = false
					p.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}
				})}
			}),
			overall: "Progressing/Scheduling", cp: "Progressing/Scheduling",
		},
		{
			name: "PodScheduled=False Unschedulable and a pod no node took: blocked",
			in: input(func(in *Input) {
				in.VMI = pendingVMI(kubevirtv1.Scheduling, 2*time.Minute, withCondition(kubevirtv1.VirtualMachineInstanceCondition{
					Type: kubevirtv1.VirtualMachineInstanceConditionType(corev1.PodScheduled), Status: corev1.ConditionFalse,
					Reason: corev1.PodReasonUnschedulable, LastTransitionTime: at(-2 * time.Minute),
				}))
				in.Pods = []*corev1.Pod{launcherPod(podUnschedulable())}
			}),
			cp: "Degraded/Unschedulable",
		},

		{
			name: "a pasted pod row without its node, Running and ready: the VMI's launcher, not a missing one",
			in: input(func(in *Input) {
				in.Pods = []*corev1.Pod{launcherPod(func(p *corev1.Pod) { p.Spec.NodeName = "" })}
				in.Nodes = nil
				in.Uncaptured.Nodes = true
			}),
			overall: "Healthy/Running", node: "Healthy/LauncherRunning",
		},
		{
			name: "a Pending pod without a node under a Running VMI is not its launcher",
			in: input(func(in *Input) {
				in.Pods = []*corev1.Pod{launcherPod(podUnschedulable())}
			}),
			node: "Unknown/LauncherPodMissing",
		},

		// A container beside compute that exits.
		{
			name: "guest-console-log exited: node Degraded naming it, the guest still judged",
			in: input(func(in *Input) {
				in.VMI = runningVMI(readyFalse("ContainersNotReady"))
				in.Pods = []*corev1.Pod{launcherPod(sidecarExited("guest-console-log", true))}
			}),
			overall: "Degraded/LauncherSidecarExited", node: "Degraded/LauncherSidecarExited", guest: "Healthy/GuestAgentConnected",
			check: func(t *testing.T, r Result) {
				n := r.Status.Layers.Node
				if !strings.Contains(n.Message, "container guest-console-log of launcher pod "+podName+" exited") {
					t.Errorf("message %q", n.Message)
				}
				if !hasEvidence(n, kindPod, podName, "status.initContainerStatuses[guest-console-log].state.terminated.reason") {
					t.Errorf("evidence %+v", n.Evidence)
				}
			},
		},
		{
			name: "a hook sidecar exited: the same",
			in: input(func(in *Input) {
				in.VMI = runningVMI(readyFalse("ContainersNotReady"))
				in.Pods = []*corev1.Pod{launcherPod(sidecarExited("hook-sidecar-0", false))}
			}),
			node: "Degraded/LauncherSidecarExited", guest: "Healthy/GuestAgentConnected",
		},
		{
			name: "a VMI without a status whose launcher's guest-console-log exited: the pod speaks, the guest is still starting",
			in: input(func(in *Input) {
				in.VMI = runningVMI(func(v *kubevirtv1.VirtualMachineInstance) {
					v.Status = kubevirtv1.VirtualMachineInstanceStatus{}
					v.CreationTimestamp = at(-2 * time.Minute)
				})
				in.Pods = []*corev1.Pod{launcherPod(sidecarExited("guest-console-log", true))}
			}),
			overall: "Degraded/LauncherSidecarExited", node: "Degraded/LauncherSidecarExited", guest: "Progressing/GuestStarting",
		},
		{
			name: "a finished init container is not a sidecar that exited",
			in: input(func(in *Input) {
				in.Pods = []*corev1.Pod{launcherPod(func(p *corev1.Pod) {
					p.Spec.InitContainers = []corev1.Container{{Name: "container-disk-binary"}}
				})}
			}),
			overall: "Healthy/Running", node: "Healthy/LauncherRunning",
		},

		// Clocks fall back to metadata.
		{
			name: "a migration without phase timestamps is timed from its creation",
			in: input(func(in *Input) {
				in.VMI = runningVMI(migrationState(func(s *kubevirtv1.VirtualMachineInstanceMigrationState) { s.StartTimestamp = nil }))
				in.Migrations = []*kubevirtv1.VirtualMachineInstanceMigration{vmim(func(m *kubevirtv1.VirtualMachineInstanceMigration) {
					m.Status.Phase = kubevirtv1.MigrationPreparingTarget
					m.Status.PhaseTransitionTimestamps = nil
					m.CreationTimestamp = at(-40 * time.Minute)
				})}
				in.Pods = []*corev1.Pod{launcherPod(), targetPod()}
			}),
			cp: "Degraded/MigrationStuck",
		},

		// What the VMI's other fields say of a domain that ran.
		{
			name: "migrationState failed with a reason, no UID, no VMIM, no phase: a failed migration quoting it",
			in: input(func(in *Input) {
				in.VMI = runningVMI(noStatusPhase, func(v *kubevirtv1.VirtualMachineInstance) {
					v.Status.MigrationState = &kubevirtv1.VirtualMachineInstanceMigrationState{
						Failed: true, FailureReason: "Live migration failed: virError(Code=1, Domain=7, Message='internal error: unable to execute QEMU command')",
					}
				})
				in.Pods = nil
				pasted(in)
			}),
			overall: "Degraded/MigrationFailed", cp: "Degraded/MigrationFailed",
			check: func(t *testing.T, r Result) {
				if !strings.Contains(r.Status.Layers.ControlPlane.Message, "unable to execute QEMU command") {
					t.Errorf("message %q", r.Status.Layers.ControlPlane.Message)
				}
			},
		},
		{
			name: "no phase, fsFreezeStatus frozen: the domain ran",
			in: input(func(in *Input) {
				in.VMI = runningVMI(func(v *kubevirtv1.VirtualMachineInstance) {
					v.Status = kubevirtv1.VirtualMachineInstanceStatus{FSFreezeStatus: "frozen", NodeName: nodeA}
				})
				pasted(in)
				in.Pods = nil
			}),
			check: func(t *testing.T, r Result) {
				if !hasEvidenceValue(r.Status.Layers.ControlPlane, "status.phase", "absent; Running inferred from status.fsFreezeStatus") {
					t.Errorf("evidence %+v", r.Status.Layers.ControlPlane.Evidence)
				}
			},
		},
		{
			name: "no phase, two activePods: the domain ran (a second pod is a migration's target)",
			in: input(func(in *Input) {
				in.VMI = runningVMI(func(v *kubevirtv1.VirtualMachineInstance) {
					v.Status = kubevirtv1.VirtualMachineInstanceStatus{NodeName: nodeB, ActivePods: map[types.UID]string{podUID: nodeA, pod2UID: nodeB}}
				})
				pasted(in)
				in.Pods = nil
			}),
			check: func(t *testing.T, r Result) {
				if !hasEvidenceValue(r.Status.Layers.ControlPlane, "status.phase", "absent; Running inferred from status.activePods") {
					t.Errorf("evidence %+v", r.Status.Layers.ControlPlane.Evidence)
				}
			},
		},
		{
			name: "no phase, a completed migrationState: the domain ran",
			in: input(func(in *Input) {
				in.VMI = runningVMI(func(v *kubevirtv1.VirtualMachineInstance) {
					v.Status = kubevirtv1.VirtualMachineInstanceStatus{NodeName: nodeB}
				}, migrationState(func(s *kubevirtv1.VirtualMachineInstanceMigrationState) {
					s.Completed, s.EndTimestamp = true, atp(-time.Minute)
				}))
				pasted(in)
				in.Pods = nil
			}),
			cp: "Healthy/Running",
		},
	}
}

// hasEvidenceValue says whether l cites field with exactly value.
func hasEvidenceValue(l v1alpha1.LayerStatus, field, value string) bool {
	for _, e := range l.Evidence {
		if e.Field == field && e.Value == value {
			return true
		}
	}
	return false
}
