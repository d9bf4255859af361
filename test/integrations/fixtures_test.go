// Package integrations tests what reads vmobs' output: the Argo CD health
// check's test data (Argo CD's own code runs the check in hack/argocd), the
// kstatus reading of a VMObservation and the Flux recipes' doc snippets, the
// kube-state-metrics config (and the real binary), the PrometheusRule and
// the runbooks with promtool and kubectl, the Grafana dashboards' queries
// and the domain-stats source on real Prometheus data, and the same source
// through Thanos Querier.
package integrations

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/history"
	"github.com/vmobs/vmobs/internal/verdict"
	"github.com/vmobs/vmobs/test/support"
)

// The VMObservations the integration tests feed to Argo CD's Lua, kstatus
// and CEL are not written by hand: each scenario below builds the KubeVirt
// objects of support.Fixtures and runs the verdict engine on them, as the
// controller does.

// scenario is one VMObservation and what each tool must read from it.
type scenario struct {
	name string
	obs  *v1alpha1.VMObservation
	// verdict and reason the engine must produce, so a change in the engine
	// that invalidates the scenario fails loudly rather than silently
	// testing something else.
	verdict v1alpha1.Verdict
	reason  string
	// argo is Argo CD's health status; kstatus is kstatus' status.
	argo, kstatus string
}

func evaluate(in verdict.Input) *v1alpha1.VMObservationStatus {
	res := verdict.Evaluate(in)
	// The status the controller writes: with status.vm and status.history.
	history.Apply(nil, &res.Status, in)
	return res.Status.DeepCopy()
}

// scenarios builds every case. Degraded past the stalled threshold needs
// the verdict's lastTransitionTime to be older than StalledAfter: the
// engine keeps it from the previous status, as the controller does.
func scenarios(t testing.TB) []scenario {
	t.Helper()
	f := support.Fixtures{Now: support.FixedNow}
	var out []scenario
	add := func(name string, in verdict.Input, v v1alpha1.Verdict, reason, argo, kst string) {
		st := evaluate(in)
		out = append(out, scenario{name: name, obs: f.Observation(st, 2, 2), verdict: v, reason: reason, argo: argo, kstatus: kst})
	}

	add("healthy", f.Input(), v1alpha1.VerdictHealthy, v1alpha1.ReasonRunning, "Healthy", "Current")

	// Stopped as declared: Suspended for vmobs, Healthy for Argo CD,
	// whose sync waits on anything but Healthy and Degraded.
	stopped := f.Input()
	stopped.VM = f.VM(kubevirtv1.RunStrategyHalted)
	stopped.VMI, stopped.Pods = nil, nil
	add("healthy-stopped-as-declared", stopped, v1alpha1.VerdictSuspended, v1alpha1.ReasonStopped, "Healthy", "Current")

	// The guest shut itself down and the run strategy leaves it so: Once
	// runs the VM once, RerunOnFailure reruns it only after a failure,
	// Manual never starts it by itself.
	add("healthy-succeeded-once", f.Succeeded(kubevirtv1.RunStrategyOnce), v1alpha1.VerdictSuspended, v1alpha1.ReasonVMISucceeded, "Healthy", "Current")
	add("healthy-succeeded-rerun-on-failure", f.Succeeded(kubevirtv1.RunStrategyRerunOnFailure), v1alpha1.VerdictSuspended, v1alpha1.ReasonVMISucceeded, "Healthy", "Current")
	add("healthy-succeeded-manual", f.Succeeded(kubevirtv1.RunStrategyManual), v1alpha1.VerdictSuspended, v1alpha1.ReasonVMISucceeded, "Healthy", "Current")

	// A VMI of its own (no VirtualMachine) that ended: nothing declared that
	// it should stay stopped, so Argo CD keeps it Suspended, as its own
	// VirtualMachineInstance check does.
	vmiOnly := f.Succeeded(kubevirtv1.RunStrategyOnce)
	vmiOnly.VM = nil
	vmiOnly.VMI.OwnerReferences = nil
	add("suspended-succeeded-without-vm", vmiOnly, v1alpha1.VerdictSuspended, v1alpha1.ReasonVMISucceeded, "Suspended", "Current")

	paused := f.Input()
	paused.VMI.Status.Conditions = append(paused.VMI.Status.Conditions, kubevirtv1.VirtualMachineInstanceCondition{
		Type: kubevirtv1.VirtualMachineInstancePaused, Status: corev1.ConditionTrue, Reason: "PausedByUser",
		Message: "VMI was paused by user", LastTransitionTime: f.At(-10 * time.Minute), LastProbeTime: f.At(-10 * time.Minute),
	})
	for i := range paused.Pods[0].Status.Conditions {
		c := &paused.Pods[0].Status.Conditions[i]
		if c.Type == kubevirtv1.VirtualMachineUnpaused || c.Type == corev1.PodReady {
			c.Status, c.LastTransitionTime = corev1.ConditionFalse, f.At(-10*time.Minute)
		}
	}
	add("suspended-paused", paused, v1alpha1.VerdictSuspended, v1alpha1.ReasonPausedByUser, "Suspended", "Current")

	scheduling := f.Input()
	scheduling.VMI = f.RunningVMI()
	scheduling.VMI.CreationTimestamp = f.At(-90 * time.Second)
	scheduling.VMI.Status = kubevirtv1.VirtualMachineInstanceStatus{
		Phase: kubevirtv1.Scheduling,
		PhaseTransitionTimestamps: []kubevirtv1.VirtualMachineInstancePhaseTransitionTimestamp{
			{Phase: kubevirtv1.Pending, PhaseTransitionTimestamp: f.At(-90 * time.Second)},
			{Phase: kubevirtv1.Scheduling, PhaseTransitionTimestamp: f.At(-89 * time.Second)},
		},
		Conditions: []kubevirtv1.VirtualMachineInstanceCondition{{
			Type: kubevirtv1.VirtualMachineInstanceReady, Status: corev1.ConditionFalse, Reason: kubevirtv1.GuestNotRunningReason,
			Message: "Guest VM is not reported as running", LastTransitionTime: f.At(-90 * time.Second),
		}},
	}
	pending := f.LauncherPod()
	pending.CreationTimestamp = f.At(-89 * time.Second)
	pending.Spec.NodeName = ""
	pending.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: corev1.PodQOSBurstable}
	scheduling.Pods = []*corev1.Pod{pending}
	scheduling.VM.Status.Ready, scheduling.VM.Status.PrintableStatus = false, kubevirtv1.VirtualMachineStatusStarting
	add("progressing-scheduling", scheduling, v1alpha1.VerdictProgressing, v1alpha1.ReasonScheduling, "Progressing", "InProgress")

	migrating := f.Input()
	migrating.Migrations = []*kubevirtv1.VirtualMachineInstanceMigration{f.Migration(kubevirtv1.MigrationScheduling, -40*time.Second, -39*time.Second)}
	migrating.VMI.Status.EvacuationNodeName = support.NodeA
	add("progressing-migrating", migrating, v1alpha1.VerdictProgressing, v1alpha1.ReasonMigrating, "Progressing", "InProgress")

	// A migration that failed three minutes ago: Degraded, not yet past the
	// stalled threshold (15m), so kstatus still waits.
	failedMig := f.Input()
	fm := f.Migration(kubevirtv1.MigrationFailed, -8*time.Minute, -3*time.Minute)
	fm.Status.MigrationState = &kubevirtv1.VirtualMachineInstanceMigrationState{
		SourcePod: support.PodName, SourceNode: support.NodeA, TargetNode: support.NodeB, TargetPod: support.TargetPodName, MigrationUID: support.MigrationUID,
		StartTimestamp: ptr.To(f.At(-7 * time.Minute)), EndTimestamp: ptr.To(f.At(-3 * time.Minute)), Failed: true,
		FailureReason: "Live migration failed: target pod virt-launcher-rhel9-db-m4q9z shut down",
	}
	failedMig.Migrations = []*kubevirtv1.VirtualMachineInstanceMigration{fm}
	failedMig.VMI.Status.MigrationState = fm.Status.MigrationState.DeepCopy()
	add("degraded-migration-failed", failedMig, v1alpha1.VerdictDegraded, v1alpha1.ReasonMigrationFailed, "Degraded", "InProgress")

	// A migration stuck in Scheduling for 40 minutes (target pod
	// unschedulable): Degraded since the phase timeout, 35 minutes ago,
	// longer than the stalled threshold: Stalled=True, kstatus Failed.
	stuck := f.Input()
	stuck.Migrations = []*kubevirtv1.VirtualMachineInstanceMigration{f.Migration(kubevirtv1.MigrationScheduling, -40*time.Minute, -40*time.Minute+time.Second)}
	stuck.VMI.Status.EvacuationNodeName = support.NodeA
	add("degraded-stalled-migration-stuck", stuck, v1alpha1.VerdictDegraded, v1alpha1.ReasonMigrationStuck, "Degraded", "Failed")

	vmiFailed := f.Ended(kubevirtv1.RunStrategyManual, kubevirtv1.Failed)
	add("failed-vmi-failed", vmiFailed, v1alpha1.VerdictFailed, v1alpha1.ReasonVMIFailed, "Degraded", "Failed")

	// virt-handler on worker-0 stopped beating 12 minutes ago: the node
	// layer cannot be judged, and neither can what the VMI says.
	stale := f.Input()
	stale.Nodes[support.NodeA] = f.Node(support.NodeA, 12*time.Minute)
	add("unknown-node-agent-stale", stale, v1alpha1.VerdictUnknown, v1alpha1.ReasonNodeAgentStale, "Unknown", "InProgress")

	// The user edited spec (generation 3) and vmobs has not caught up.
	st := evaluate(f.Input())
	out = append(out, scenario{name: "progressing-stale-generation", obs: f.Observation(st, 3, 2),
		verdict: v1alpha1.VerdictHealthy, reason: v1alpha1.ReasonRunning, argo: "Progressing", kstatus: "InProgress"})

	// Just applied from Git: no status yet. kstatus reads an object with
	// no conditions as Current (kustomize-controller#387); the recipes'
	// CEL expressions cannot read `status`, which Flux reports as Unknown
	// and waits on (hack/flux).
	out = append(out, scenario{name: "progressing-no-status", obs: f.Observation(nil, 1, 0), argo: "Progressing", kstatus: "Current"})
	return out
}

// toUnstructured turns a typed object into the map a dynamic client or a
// YAML file gives. An empty status is dropped, as the API server drops the
// status of a new object whose CRD has a status subresource.
func toUnstructured(t testing.TB, obj any) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	if st, ok := m["status"].(map[string]any); ok && len(st) == 0 {
		delete(m, "status")
	}
	return &unstructured.Unstructured{Object: m}
}

func TestScenariosAreWhatTheEngineSays(t *testing.T) {
	for _, sc := range scenarios(t) {
		if sc.verdict == "" {
			continue
		}
		if sc.obs.Status.Verdict != sc.verdict || sc.obs.Status.Reason != sc.reason {
			t.Errorf("%s: engine says %s/%s, scenario expects %s/%s (message %q): fix the fixture",
				sc.name, sc.obs.Status.Verdict, sc.obs.Status.Reason, sc.verdict, sc.reason, sc.obs.Status.Message)
		}
	}
}
