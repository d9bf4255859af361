// Package storage_test runs the storage path of a VM on the real control
// plane with the real kube-controller-manager (the PV binder and the
// attach-detach controllers): PVCs are bound and VolumeAttachments created
// by Kubernetes' own code, and the simulator plays only what the CSI
// sidecars, the kubelet and CDI write.
package storage_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	kubevirtv1 "kubevirt.io/api/core/v1"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/internal/simulator"
	"github.com/vmobs/vmobs/internal/testenv"
	"github.com/vmobs/vmobs/test/support"
)

var (
	env   *testenv.Env
	k8s   client.Client
	sim   *simulator.Simulator
	nsSeq atomic.Int32
)

func TestMain(m *testing.M) {
	support.RunWithStorage(m, testenv.Options{CDI: true}, func(w support.StorageWorld) { env, k8s, sim = w.Env, w.K8s, w.Sim })
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func namespace(t *testing.T) string {
	t.Helper()
	ns := fmt.Sprintf("storage-%d", nsSeq.Add(1))
	must(t, sim.EnsureNamespace(context.Background(), ns))
	return ns
}

// eventually polls cond every 100 ms for up to 30 s.
func eventually(t *testing.T, what string, cond func(context.Context) (bool, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, cond); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func claim(t *testing.T, ns, name string) *corev1.PersistentVolumeClaim {
	t.Helper()
	pvc := &corev1.PersistentVolumeClaim{}
	must(t, k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, pvc))
	return pvc
}

// managedBy says whether a field manager of obj is manager.
func managedBy(obj client.Object, manager string) bool {
	for _, f := range obj.GetManagedFields() {
		if f.Manager == manager {
			return true
		}
	}
	return false
}

// TestPVBinderAndAttachDetachController: a VM's PVC is bound by the PV
// binder to the PV the simulated external-provisioner created; once the
// launcher pod is on a node, the attach-detach controller creates the
// VolumeAttachment (named as its CSI plugin names it), the simulated
// external-attacher marks it attached, the controller reports the volume
// attached in the Node's status, and the VM boots.
func TestPVBinderAndAttachDetachController(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	vm, node := "vm-pvc", simulator.ScenarioNodes[0]
	rootClaim := simulator.RootClaim(vm)
	must(t, sim.CreateClaim(ctx, simulator.ClaimSpec{Namespace: ns, Name: rootClaim}))
	must(t, sim.CreateVM(ctx, simulator.VMSpec{Namespace: ns, Name: vm, RootClaim: rootClaim}))

	// The binder hands the claim to the driver; the provisioner answers.
	eventually(t, "the PV binder hands the claim to "+simulator.CSIDriver, func(context.Context) (bool, error) {
		return claim(t, ns, rootClaim).Annotations[simulator.StorageProvisionerAnnotation] == simulator.CSIDriver, nil
	})
	pvName, err := sim.AwaitBound(ctx, ns, rootClaim)
	must(t, err)
	pvc := claim(t, ns, rootClaim)
	if pvName != "pvc-"+string(pvc.UID) {
		t.Errorf("bound to %q, want the provisioned pvc-%s", pvName, pvc.UID)
	}
	if pvc.Annotations["pv.kubernetes.io/bind-completed"] != "yes" {
		t.Errorf("claim annotations %v: the PV binder's bind-completed is missing", pvc.Annotations)
	}
	pv := &corev1.PersistentVolume{}
	must(t, k8s.Get(ctx, client.ObjectKey{Name: pvName}, pv))
	if pv.Status.Phase != corev1.VolumeBound {
		t.Errorf("PV %s is %s, want Bound", pvName, pv.Status.Phase)
	}

	// No pod on a node, no attachment.
	vas, err := sim.VolumeAttachments(ctx, ns, rootClaim)
	must(t, err)
	if len(vas) != 0 {
		t.Fatalf("VolumeAttachments before the pod is scheduled: %v", vas)
	}

	must(t, sim.PlaceLauncherPod(ctx, ns, vm, node))
	var va storagev1.VolumeAttachment
	eventually(t, "the attach-detach controller creates the VolumeAttachment", func(ctx context.Context) (bool, error) {
		vas, err := sim.VolumeAttachments(ctx, ns, rootClaim)
		if err != nil || len(vas) == 0 {
			return false, err
		}
		va = vas[0]
		return true, nil
	})
	want := fmt.Sprintf("csi-%x", sha256.Sum256([]byte(pv.Spec.CSI.VolumeHandle+simulator.CSIDriver+node)))
	if va.Name != want || va.Spec.NodeName != node || va.Spec.Attacher != simulator.CSIDriver {
		t.Errorf("VolumeAttachment %s on %s by %s, want %s on %s by %s", va.Name, va.Spec.NodeName, va.Spec.Attacher, want, node, simulator.CSIDriver)
	}
	if !managedBy(&va, "kube-controller-manager") {
		t.Errorf("VolumeAttachment %s was not written by kube-controller-manager: %v", va.Name, va.ManagedFields)
	}
	if va.Status.Attached {
		t.Errorf("VolumeAttachment %s attached before the external-attacher ran", va.Name)
	}

	att, err := sim.AwaitAttachment(ctx, ns, rootClaim, node)
	must(t, err)
	if !att.Status.Attached || att.Status.AttachmentMetadata["devicePath"] == "" {
		t.Errorf("VolumeAttachment status %+v, want attached with a device path", att.Status)
	}
	unique := corev1.UniqueVolumeName("kubernetes.io/csi/" + simulator.CSIDriver + "^" + pv.Spec.CSI.VolumeHandle)
	eventually(t, "the attach-detach controller reports the volume attached to "+node, func(ctx context.Context) (bool, error) {
		n := &corev1.Node{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
			return false, err
		}
		for _, v := range n.Status.VolumesAttached {
			if v.Name == unique {
				return true, nil
			}
		}
		return false, nil
	})

	must(t, sim.RunLauncherPod(ctx, ns, vm))
	must(t, sim.Boot(ctx, ns, vm, node))
	vmi := &kubevirtv1.VirtualMachineInstance{}
	must(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: vm}, vmi))
	if vmi.Status.Phase != kubevirtv1.Running || vmi.Status.NodeName != node {
		t.Errorf("VMI %s on %q, want Running on %s", vmi.Status.Phase, vmi.Status.NodeName, node)
	}
}

// TestWaitForFirstConsumer: a WaitForFirstConsumer claim waits for its
// pod; kube-scheduler's selected node (played) makes the PV binder hand it
// to the provisioner, whose PV is pinned to that node.
func TestWaitForFirstConsumer(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	vm, node := "vm-wffc", simulator.ScenarioNodes[1]
	rootClaim := simulator.RootClaim(vm)
	must(t, sim.CreateClaim(ctx, simulator.ClaimSpec{Namespace: ns, Name: rootClaim, StorageClass: simulator.StorageClassWFFC}))
	must(t, sim.CreateVM(ctx, simulator.VMSpec{Namespace: ns, Name: vm, RootClaim: rootClaim}))
	if _, err := sim.AwaitEvent(ctx, "PersistentVolumeClaim", ns, rootClaim, "WaitForFirstConsumer"); err != nil {
		t.Fatal(err)
	}
	if made, err := sim.Provision(ctx); err != nil || len(made) != 0 {
		t.Fatalf("the provisioner made %v (%v) for a claim without a selected node", made, err)
	}
	must(t, sim.BootWithVolumes(ctx, ns, vm, node))
	pvc := claim(t, ns, rootClaim)
	if pvc.Annotations[simulator.SelectedNodeAnnotation] != node || pvc.Status.Phase != corev1.ClaimBound {
		t.Fatalf("claim %s with selected node %q, want Bound on %s", pvc.Status.Phase, pvc.Annotations[simulator.SelectedNodeAnnotation], node)
	}
	pv := &corev1.PersistentVolume{}
	must(t, k8s.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, pv))
	terms := pv.Spec.NodeAffinity.Required.NodeSelectorTerms
	if len(terms) != 1 || terms[0].MatchExpressions[0].Values[0] != node {
		t.Errorf("PV node affinity %+v, want %s", terms, node)
	}
}

// TestDataVolumeImport: a DataVolume VM waits (Provisioning, no VMI) while
// CDI imports; the progress reads as CDI writes it; once it succeeds the
// VMI is created and boots through the attachment.
func TestDataVolumeImport(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	vm := "vm-dv"
	dvName := simulator.RootDataVolume(vm)
	must(t, sim.CreateVM(ctx, simulator.VMSpec{Namespace: ns, Name: vm, DataVolume: true}))
	vmObj := &kubevirtv1.VirtualMachine{}
	must(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: vm}, vmObj))
	if vmObj.Status.PrintableStatus != kubevirtv1.VirtualMachineStatusProvisioning {
		t.Errorf("VM says %s, want Provisioning", vmObj.Status.PrintableStatus)
	}
	_, err := sim.AwaitBound(ctx, ns, dvName)
	must(t, err)
	must(t, sim.ImportProgress(ctx, ns, dvName, 42))
	dv := &cdiv1.DataVolume{}
	must(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: dvName}, dv))
	if dv.Status.Phase != cdiv1.ImportInProgress || dv.Status.Progress != "42.00%" {
		t.Errorf("DataVolume %s at %s, want ImportInProgress at 42.00%%", dv.Status.Phase, dv.Status.Progress)
	}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: vm}, &kubevirtv1.VirtualMachineInstance{}); err == nil {
		t.Error("a VMI exists while its DataVolume imports")
	}
	must(t, sim.CompleteImport(ctx, ns, dvName))
	must(t, sim.BootWithVolumes(ctx, ns, vm, simulator.ScenarioNodes[0]))
	must(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: vm}, vmObj))
	if vmObj.Status.PrintableStatus != kubevirtv1.VirtualMachineStatusRunning {
		t.Errorf("VM says %s after the import, want Running", vmObj.Status.PrintableStatus)
	}
}

// event returns the newest event with reason about the object, failing the
// test when there is none.
func event(t *testing.T, kind, ns, name, reason string) corev1.Event {
	t.Helper()
	evs, err := sim.Events(context.Background(), kind, ns, name)
	must(t, err)
	for i := len(evs) - 1; i >= 0; i-- {
		if e := evs[i]; e.Reason == reason {
			t.Logf("%s %s from %s/%s: %s", e.Type, e.Reason, e.Source.Component, e.Source.Host, e.Message)
			return e
		}
	}
	t.Fatalf("no %s event on %s %s/%s among %d", reason, kind, ns, name, len(evs))
	return corev1.Event{}
}

// launcher is the VM's newest launcher pod.
func launcher(t *testing.T, ns, vm string) corev1.Pod {
	t.Helper()
	var pods corev1.PodList
	must(t, k8s.List(context.Background(), &pods, client.InNamespace(ns), client.MatchingLabels{"kubevirt.io/domain": vm}))
	if len(pods.Items) == 0 {
		t.Fatalf("VM %s/%s has no launcher pod", ns, vm)
	}
	newest := pods.Items[0]
	for _, p := range pods.Items {
		if newest.CreationTimestamp.Before(&p.CreationTimestamp) {
			newest = p
		}
	}
	return newest
}

// TestStoragePlays plays every storage situation and checks the writes
// that make it what it is, from the component that makes them. (The
// verdicts they lead to are the engine's tests'.)
func TestStoragePlays(t *testing.T) {
	checks := map[string]func(t *testing.T, ns, vm string){
		"volume-not-bound": func(t *testing.T, ns, vm string) {
			if p := claim(t, ns, simulator.RootClaim(vm)).Status.Phase; p != corev1.ClaimPending {
				t.Errorf("claim %s, want Pending", p)
			}
			e := event(t, "PersistentVolumeClaim", ns, simulator.RootClaim(vm), "ProvisioningFailed")
			if e.Type != corev1.EventTypeWarning || e.Source.Component != "persistentvolume-controller" ||
				e.Message != fmt.Sprintf("storageclass.storage.k8s.io %q not found", simulator.MissingStorageClass) {
				t.Errorf("ProvisioningFailed: %s from %s: %q", e.Type, e.Source.Component, e.Message)
			}
			if p := launcher(t, ns, vm); !strings.Contains(podCond(p, corev1.PodScheduled).Message, "pod has unbound immediate PersistentVolumeClaims") {
				t.Errorf("launcher pod PodScheduled %+v", podCond(p, corev1.PodScheduled))
			}
		},
		"volume-not-bound-wffc": func(t *testing.T, ns, vm string) {
			pvc := claim(t, ns, simulator.RootClaim(vm))
			if pvc.Status.Phase != corev1.ClaimPending || pvc.Annotations[simulator.SelectedNodeAnnotation] != "" {
				t.Errorf("claim %s, selected node %q: want Pending, none", pvc.Status.Phase, pvc.Annotations[simulator.SelectedNodeAnnotation])
			}
			e := event(t, "PersistentVolumeClaim", ns, pvc.Name, "WaitForPodScheduled")
			if p := launcher(t, ns, vm); e.Message != "waiting for pod "+p.Name+" to be scheduled" || e.Source.Component != "persistentvolume-controller" {
				t.Errorf("WaitForPodScheduled from %s: %q", e.Source.Component, e.Message)
			}
		},
		"import-failed": func(t *testing.T, ns, vm string) {
			dv := &cdiv1.DataVolume{}
			must(t, k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: simulator.RootDataVolume(vm)}, dv))
			if dv.Status.Phase != cdiv1.ImportInProgress || dv.Status.RestartCount != simulator.ImportFailedRestarts {
				t.Errorf("DataVolume %s with %d restarts", dv.Status.Phase, dv.Status.RestartCount)
			}
			e := event(t, "PersistentVolumeClaim", ns, dv.Name, simulator.ErrImportFailed)
			if e.Type != corev1.EventTypeWarning || e.Message != simulator.ImportErrorMessage || e.Source.Component != "import-controller" {
				t.Errorf("ErrImportFailed %s from %s: %q", e.Type, e.Source.Component, e.Message)
			}
			if e := event(t, "DataVolume", ns, dv.Name, simulator.ImportError); e.Type != corev1.EventTypeWarning {
				t.Errorf("DataVolume event %s %s", e.Type, e.Reason)
			}
			vmObj := &kubevirtv1.VirtualMachine{}
			must(t, k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: vm}, vmObj))
			if vmObj.Status.PrintableStatus != kubevirtv1.VirtualMachineStatusDataVolumeError {
				t.Errorf("VM says %s, want DataVolumeError", vmObj.Status.PrintableStatus)
			}
		},
		"attach-failed": func(t *testing.T, ns, vm string) {
			p := launcher(t, ns, vm)
			e := event(t, "Pod", ns, p.Name, "FailedAttachVolume")
			if e.Source.Component != "attachdetach-controller" || !strings.HasPrefix(e.Message, "AttachVolume.Attach failed for volume \"pvc-") ||
				!strings.HasSuffix(e.Message, simulator.AttachErrorMessage) {
				t.Errorf("FailedAttachVolume from %s: %q", e.Source.Component, e.Message)
			}
			if p.Status.Phase != corev1.PodPending {
				t.Errorf("launcher pod %s, want Pending", p.Status.Phase)
			}
		},
		"multi-attach": func(t *testing.T, ns, vm string) {
			p := launcher(t, ns, vm)
			peer := launcher(t, ns, vm+"-peer")
			e := event(t, "Pod", ns, p.Name, "FailedAttachVolume")
			// Kubernetes 1.37 words the Multi-Attach error "Waiting for
			// detach ...: Volume is already used by pod(s) ...".
			if e.Source.Component != "attachdetach-controller" || !strings.Contains(e.Message, "Volume is already used by pod(s) "+peer.Name) {
				t.Errorf("FailedAttachVolume from %s: %q", e.Source.Component, e.Message)
			}
		},
		"mount-failed": func(t *testing.T, ns, vm string) {
			p := launcher(t, ns, vm)
			e := event(t, "Pod", ns, p.Name, simulator.FailedMount)
			if e.Source.Component != "kubelet" || e.Source.Host != p.Spec.NodeName || !strings.HasPrefix(e.Message, "MountVolume.MountDevice failed for volume \"pvc-") {
				t.Errorf("FailedMount from %s on %s: %q", e.Source.Component, e.Source.Host, e.Message)
			}
		},
		"import-in-progress": func(t *testing.T, ns, vm string) {
			dv := &cdiv1.DataVolume{}
			must(t, k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: simulator.RootDataVolume(vm)}, dv))
			if dv.Status.Phase != cdiv1.ImportInProgress || dv.Status.Progress != "42.00%" || dv.Status.RestartCount != 0 {
				t.Errorf("DataVolume %s at %s with %d restarts, want ImportInProgress at 42.00%% with none", dv.Status.Phase, dv.Status.Progress, dv.Status.RestartCount)
			}
			if e := event(t, "DataVolume", ns, dv.Name, "ImportInProgress"); e.Type != corev1.EventTypeNormal || e.Source.Component != "datavolume-import-controller" {
				t.Errorf("ImportInProgress %s from %s", e.Type, e.Source.Component)
			}
			vmObj := &kubevirtv1.VirtualMachine{}
			must(t, k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: vm}, vmObj))
			if vmObj.Status.PrintableStatus != kubevirtv1.VirtualMachineStatusProvisioning {
				t.Errorf("VM says %s, want Provisioning", vmObj.Status.PrintableStatus)
			}
		},
		"pvc-lost": func(t *testing.T, ns, vm string) {
			if p := claim(t, ns, simulator.RootClaim(vm)).Status.Phase; p != corev1.ClaimLost {
				t.Errorf("claim %s, want Lost", p)
			}
			if e := event(t, "PersistentVolumeClaim", ns, simulator.RootClaim(vm), "ClaimLost"); e.Type != corev1.EventTypeWarning || e.Source.Component != "persistentvolume-controller" {
				t.Errorf("ClaimLost %s from %s", e.Type, e.Source.Component)
			}
		},
		"volume-attachment-stale": func(t *testing.T, ns, vm string) {
			node := simulator.ScenarioNode(ns, vm)
			vas, err := sim.VolumeAttachments(context.Background(), ns, simulator.RootClaim(vm))
			must(t, err)
			held := false
			for _, va := range vas {
				if va.Spec.NodeName == node && va.Status.Attached {
					held = true
				}
				if va.Spec.NodeName == simulator.ScenarioNodes[0] && va.Status.Attached {
					t.Errorf("VolumeAttachment %s attached to %s too", va.Name, va.Spec.NodeName)
				}
			}
			if !held {
				t.Fatalf("VolumeAttachments %+v, want one attached to %s", vas, node)
			}
			n := &corev1.Node{}
			must(t, k8s.Get(context.Background(), client.ObjectKey{Name: node}, n))
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status != corev1.ConditionUnknown {
					t.Errorf("node %s Ready=%s, want Unknown", node, c.Status)
				}
			}
			p := launcher(t, ns, vm)
			if p.Spec.NodeName != simulator.ScenarioNodes[0] {
				t.Errorf("launcher pod %s on %q, want %s", p.Name, p.Spec.NodeName, simulator.ScenarioNodes[0])
			}
			if e := event(t, "Pod", ns, p.Name, "FailedAttachVolume"); e.Source.Component != "attachdetach-controller" {
				t.Errorf("FailedAttachVolume from %s: %q", e.Source.Component, e.Message)
			}
		},
		"hotplug-attach-failed": func(t *testing.T, ns, vm string) {
			st := volumeStatus(t, ns, vm, "hotplug")
			if st.Phase != kubevirtv1.HotplugVolumeAttachedToNode || st.HotplugVolume.AttachPodName == "" || st.HotplugVolume.AttachPodUID != "" {
				t.Errorf("hotplug volume status %+v, want AttachedToNode with a pod that is not ready", st)
			}
			e := event(t, "Pod", ns, st.HotplugVolume.AttachPodName, "FailedAttachVolume")
			if e.Source.Component != "attachdetach-controller" || !strings.HasSuffix(e.Message, simulator.AttachErrorMessage) {
				t.Errorf("FailedAttachVolume from %s: %q", e.Source.Component, e.Message)
			}
		},
		"hotplug-volume-stuck": func(t *testing.T, ns, vm string) {
			st := volumeStatus(t, ns, vm, "hotplug")
			if st.HotplugVolume == nil || st.Phase != kubevirtv1.VolumePending || st.Reason != simulator.PVCNotReady {
				t.Errorf("hotplug volume status %+v, want Pending PVCNotReady", st)
			}
			if e := event(t, "PersistentVolumeClaim", ns, vm+"-hotplug", "ExternalProvisioning"); e.Source.Component != "persistentvolume-controller" {
				t.Errorf("ExternalProvisioning from %s", e.Source.Component)
			}
		},
	}
	for _, p := range simulator.StorageScenarios {
		t.Run(p.Name, func(t *testing.T) {
			check, ok := checks[p.Name]
			if !ok {
				t.Fatalf("no check for storage play %s", p.Name)
			}
			ns := namespace(t)
			vm := "vm-" + p.Name
			must(t, p.Play(context.Background(), sim, ns, vm))
			check(t, ns, vm)
		})
	}
}

func podCond(p corev1.Pod, t corev1.PodConditionType) corev1.PodCondition {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c
		}
	}
	return corev1.PodCondition{}
}

// volumeStatus is the VMI's status entry of volume.
func volumeStatus(t *testing.T, ns, vm, volume string) kubevirtv1.VolumeStatus {
	t.Helper()
	vmi := &kubevirtv1.VirtualMachineInstance{}
	must(t, k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: vm}, vmi))
	for _, st := range vmi.Status.VolumeStatus {
		if st.Name == volume {
			return st
		}
	}
	t.Fatalf("VMI %s/%s has no status for volume %s: %+v", ns, vm, volume, vmi.Status.VolumeStatus)
	return kubevirtv1.VolumeStatus{}
}

// TestHotplugVolume: a bound claim hot-plugged into a running VM gets its
// attachment pod on the VM's node, for which the attach-detach controller
// attaches the claim; then the volume is Ready in the guest.
func TestHotplugVolume(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	vm, node, hpClaim := "vm-hotplug", simulator.ScenarioNodes[1], "vm-hotplug-data"
	must(t, sim.CreateVM(ctx, simulator.VMSpec{Namespace: ns, Name: vm}))
	must(t, sim.Boot(ctx, ns, vm, node))
	must(t, sim.CreateClaim(ctx, simulator.ClaimSpec{Namespace: ns, Name: hpClaim, Block: true}))
	_, err := sim.AwaitBound(ctx, ns, hpClaim)
	must(t, err)
	must(t, sim.HotplugVolume(ctx, ns, vm, "data", hpClaim))
	st := volumeStatus(t, ns, vm, "data")
	if st.Phase != kubevirtv1.HotplugVolumeAttachedToNode || !strings.HasPrefix(st.HotplugVolume.AttachPodName, "hp-volume-") {
		t.Fatalf("volume status %+v, want AttachedToNode with an hp-volume pod", st)
	}
	va, err := sim.AwaitAttachment(ctx, ns, hpClaim, node)
	must(t, err)
	if !va.Status.Attached {
		t.Fatalf("VolumeAttachment %s: %+v", va.Name, va.Status)
	}
	must(t, sim.CompleteHotplug(ctx, ns, vm, "data"))
	st = volumeStatus(t, ns, vm, "data")
	if st.Phase != kubevirtv1.VolumeReady || st.HotplugVolume.AttachPodUID == "" || st.Target != "sda" {
		t.Errorf("volume status %+v, want Ready on sda with the attachment pod's UID", st)
	}
}

// TestFailedMapVolume: the kubelet's failure to set up a Block volume is
// FailedMapVolume, worded as its operation generator words it.
func TestFailedMapVolume(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	vm, node := "vm-block", simulator.ScenarioNodes[0]
	rootClaim := simulator.RootClaim(vm)
	must(t, sim.CreateClaim(ctx, simulator.ClaimSpec{Namespace: ns, Name: rootClaim, Block: true}))
	must(t, sim.CreateVM(ctx, simulator.VMSpec{Namespace: ns, Name: vm, RootClaim: rootClaim}))
	pv, err := sim.AwaitBound(ctx, ns, rootClaim)
	must(t, err)
	must(t, sim.PlaceLauncherPod(ctx, ns, vm, node))
	_, err = sim.AwaitAttachment(ctx, ns, rootClaim, node)
	must(t, err)
	reasons, err := sim.FailVolumeSetup(ctx, ns, vm, "rpc error: code = Internal desc = device /dev/vdc not found")
	must(t, err)
	if len(reasons) != 1 || reasons[0] != simulator.FailedMapVolume {
		t.Fatalf("reasons %v, want [%s]", reasons, simulator.FailedMapVolume)
	}
	e := event(t, "Pod", ns, launcher(t, ns, vm).Name, simulator.FailedMapVolume)
	if want := fmt.Sprintf("MapVolume.SetUpDevice failed for volume %q : rpc error: code = Internal desc = device /dev/vdc not found", pv); e.Message != want || e.Type != corev1.EventTypeWarning || e.Source.Host != node {
		t.Errorf("%s %s on %s: %q, want %q", e.Type, e.Reason, e.Source.Host, e.Message, want)
	}
}
