package verdict

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/storagefacts"
)

// The storage tables: vm1 with one volume "rootdisk" on claim rootdisk
// (a DataVolume's claim where the case says so), StorageClass "standard",
// bound to PersistentVolume pv-rootdisk.

const (
	claim  = "rootdisk"
	pvName = "pv-rootdisk"
)

// boundVolume is the volume with its claim Bound on an Immediate class.
func boundVolume(mods ...func(*storagefacts.Volume)) storagefacts.Volume {
	v := storagefacts.Volume{
		Name: claim, ClaimName: claim,
		PVC: &storagefacts.PVC{
			Name: claim, Phase: string(corev1.ClaimBound), Created: now.Add(-3 * time.Hour),
			StorageClassName: "standard", VolumeName: pvName, AccessModes: []string{"ReadWriteOnce"},
			Class: &storagefacts.StorageClass{Name: "standard", Exists: true, Provisioner: "csi.example.com", BindingMode: "Immediate"},
		},
	}
	for _, m := range mods {
		m(&v)
	}
	return v
}

// pendingClaim makes the claim Pending, created age ago.
func pendingClaim(age time.Duration) func(*storagefacts.Volume) {
	return func(v *storagefacts.Volume) {
		v.PVC.Phase, v.PVC.VolumeName, v.PVC.Created = string(corev1.ClaimPending), "", now.Add(-age)
	}
}

func wffc(v *storagefacts.Volume) { v.PVC.Class.BindingMode = storagefacts.WaitForFirstConsumer }

// dataVolume backs the volume by DataVolume rootdisk in phase with the
// given restarts.
func dataVolume(phase, progress string, restarts int32, conds ...storagefacts.Condition) func(*storagefacts.Volume) {
	return func(v *storagefacts.Volume) {
		v.DataVolume = claim
		v.DV = &storagefacts.DataVolume{Name: claim, Phase: phase, Progress: progress, RestartCount: restarts, Conditions: conds}
	}
}

func attachment(node string, mods ...func(*storagefacts.Attachment)) func(*storagefacts.Volume) {
	return func(v *storagefacts.Volume) {
		a := storagefacts.Attachment{Name: "csi-0123", Node: node, Attached: true}
		for _, m := range mods {
			m(&a)
		}
		v.Attachments = append(v.Attachments, a)
	}
}

// withStorage gives the input storage facts: CDI served, the volumes and
// the Warning Events of the VM's objects.
func withStorage(vols []storagefacts.Volume, events ...storagefacts.Event) inputMod {
	return func(in *Input) {
		in.Storage = &storagefacts.Facts{DataVolumesRead: true, Volumes: vols, Events: events}
	}
}

// podEvent is a Warning Event on the launcher pod, first seen ago and last
// seen last ago.
func podEvent(reason, component, msg string, first, last time.Duration) storagefacts.Event {
	return storagefacts.Event{
		Kind: storagefacts.KindPod, Name: podName, Reason: reason, Message: msg, Component: component,
		Count: 4, First: now.Add(-first), Last: now.Add(-last),
	}
}

// creating is the VMI Scheduling for age with its launcher pod on node-a
// in ContainerCreating: scheduled, not Ready.
func creating(age time.Duration) inputMod {
	return func(in *Input) {
		in.VMI = pendingVMI(kubevirtv1.Scheduling, age)
		in.Pods = []*corev1.Pod{launcherPod(func(p *corev1.Pod) {
			p.CreationTimestamp = at(-age)
			p.Status = corev1.PodStatus{
				Phase: corev1.PodPending,
				Conditions: []corev1.PodCondition{
					{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: at(-age)},
					{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", LastTransitionTime: at(-age)},
				},
				ContainerStatuses: []corev1.ContainerStatus{{
					Name:  "compute",
					State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}},
				}},
			}
		})}
	}
}

// waitingVM is the VM with no VMI yet, starting.
func waitingVM(in *Input) {
	in.VM = vm(func(v *kubevirtv1.VirtualMachine) {
		v.Status.Created, v.Status.Ready = false, false
		v.Status.PrintableStatus = kubevirtv1.VirtualMachineStatusProvisioning
		v.Status.Conditions = nil
		v.CreationTimestamp = at(-3 * time.Hour)
	})
	in.VMI, in.Pods = nil, nil
}

func storageMessage(parts ...string) func(*testing.T, Result) {
	return wantLayerMessage(layerStorage, parts...)
}

func noStaleAt(t *testing.T, r Result) {
	t.Helper()
	if s := r.Status.Layers.Storage.StaleAt; s != nil {
		t.Errorf("storage staleAt %v, want none", s)
	}
}

func storageSituations() []situation {
	importing := dataVolume("ImportInProgress", "45.20%", 0,
		storagefacts.Condition{Type: "Running", Status: "True", Reason: "Pod is running"})
	return []situation{
		{
			// A claim the cache does not hold under a running domain (a
			// namespace the cache misses, an informer behind): the
			// kubelet mounted it, so it is no binding problem.
			name:    "a running VM whose claim is not in the cache: its volumes were mounted",
			in:      input(withStorage([]storagefacts.Volume{boundVolume(func(v *storagefacts.Volume) { v.PVC = nil })})),
			overall: "Healthy/Running", storage: "Healthy/VolumesReady",
		},
		{
			name:    "container disk and cloud-init only: nothing persistent, Healthy and said so",
			in:      input(),
			overall: "Healthy/Running", storage: "Healthy/NoPersistentVolumes",
			check: storageMessage("no persistent volumes"),
		},
		{
			name: "a claim not read (a pasted VMI): the running domain has its volumes",
			in: input(func(in *Input) {
				in.VMI.Spec.Volumes = append(in.VMI.Spec.Volumes, kubevirtv1.Volume{Name: claim, VolumeSource: kubevirtv1.VolumeSource{
					PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}},
				}})
			}),
			overall: "Healthy/Running", storage: "Healthy/VolumesReady",
			check: storageMessage("were bound and mounted", "not read"),
		},
		{
			name:    "bound, attached and mounted",
			in:      input(withStorage([]storagefacts.Volume{boundVolume(attachment(nodeA))})),
			overall: "Healthy/Running", storage: "Healthy/VolumesReady",
			check: storageMessage("rootdisk", "attached and mounted in launcher pod "+podName),
		},
		{
			name: "the VM stopped: its volumes wait",
			in: input(func(in *Input) {
				in.VM = vm(withRunStrategy(kubevirtv1.RunStrategyHalted), vmStopped())
				in.VMI, in.Pods = nil, nil
			}, withStorage([]storagefacts.Volume{boundVolume()})),
			overall: "Suspended/Stopped", storage: "Suspended/Stopped",
		},
		// VolumeNotBound.
		{
			name: "WaitForFirstConsumer before the launcher pod is scheduled: normal, Progressing with no deadline",
			in: input(waitingVM, func(in *Input) { in.VM.Status.PrintableStatus = kubevirtv1.VirtualMachineStatusWaitingForVolumeBinding },
				withStorage([]storagefacts.Volume{boundVolume(pendingClaim(2*time.Hour), wffc)})),
			storage: "Progressing/VolumeNotBound",
			check:   all(storageMessage("WaitForFirstConsumer"), noStaleAt),
		},
		{
			name: "WaitForFirstConsumer with the node chosen, Pending 11 minutes: Degraded",
			in: input(creating(12*time.Minute), withStorage([]storagefacts.Volume{boundVolume(pendingClaim(11*time.Minute), wffc,
				func(v *storagefacts.Volume) { v.PVC.SelectedNode = nodeA })})),
			storage: "Degraded/VolumeNotBound",
			check:   all(storageMessage("on node "+nodeA, "longer than 10m0s"), evidenceIs(layerStorage, "metadata.annotations["+storagefacts.SelectedNodeAnnotation+"]", nodeA)),
		},
		{
			name: "the StorageClass does not exist, a minute old: Progressing with the cause until the timeout",
			in: input(creating(time.Minute), withStorage([]storagefacts.Volume{boundVolume(pendingClaim(time.Minute), func(v *storagefacts.Volume) {
				v.PVC.Class = &storagefacts.StorageClass{Name: "fast"}
			})})),
			storage: "Progressing/VolumeNotBound",
			check:   all(storageMessage("StorageClass fast does not exist"), wantStaleAt(layerStorage, 9*time.Minute)),
		},
		{
			name: "the StorageClass does not exist for 11 minutes: Degraded",
			in: input(creating(12*time.Minute), withStorage([]storagefacts.Volume{boundVolume(pendingClaim(11*time.Minute), func(v *storagefacts.Volume) {
				v.PVC.Class = &storagefacts.StorageClass{Name: "fast"}
			})})),
			storage: "Degraded/VolumeNotBound",
			check:   storageMessage("StorageClass fast does not exist"),
		},
		{
			name: "no provisioner and the provisioner's ProvisioningFailed: both causes said",
			in: input(creating(12*time.Minute), withStorage([]storagefacts.Volume{boundVolume(pendingClaim(11*time.Minute), func(v *storagefacts.Volume) {
				v.PVC.Class.Provisioner = storagefacts.NoProvisioner
				v.PVC.Events = []storagefacts.Event{{Kind: storagefacts.KindPVC, Name: claim, Reason: eventProvisioningFailed,
					Component: "persistentvolume-controller", Message: "storageclass.storage.k8s.io \"standard\" not found", Last: now.Add(-time.Minute)}}
			})})),
			storage: "Degraded/VolumeNotBound",
			check:   all(storageMessage("has no provisioner", "ProvisioningFailed (persistentvolume-controller)"), evidenceIs(layerStorage, "events[ProvisioningFailed]", "storageclass.storage.k8s.io \"standard\" not found")),
		},
		{
			name:    "PVC Lost: Failed",
			in:      input(withStorage([]storagefacts.Volume{boundVolume(func(v *storagefacts.Volume) { v.PVC.Phase = string(corev1.ClaimLost) })})),
			overall: "Failed/PVCLost", storage: "Failed/PVCLost",
			check: storageMessage("PersistentVolume " + pvName + " is gone"),
		},
		// DataVolumes.
		{
			name:    "a DataVolume importing for three hours is Progressing, never Degraded, in both layers",
			in:      input(waitingVM, withStorage([]storagefacts.Volume{boundVolume(pendingClaim(3*time.Hour), importing)})),
			overall: "Progressing/Provisioning", cp: "Progressing/Provisioning", storage: "Progressing/DataVolumeImporting",
			check: all(storageMessage("ImportInProgress (45.20%)"), noStaleAt),
		},
		{
			name: "a VMI Provisioning for three hours while its DataVolume imports: no StuckProvisioning",
			in: input(func(in *Input) {
				in.VMI = pendingVMI(kubevirtv1.Pending, 3*time.Hour, withCondition(kubevirtv1.VirtualMachineInstanceCondition{
					Type: kubevirtv1.VirtualMachineInstanceProvisioning, Status: corev1.ConditionTrue, LastTransitionTime: at(-3 * time.Hour)}))
				in.Pods = nil
			}, withStorage([]storagefacts.Volume{boundVolume(importing)})),
			cp: "Progressing/Provisioning", storage: "Progressing/DataVolumeImporting",
		},
		{
			name: "without storage facts the same wait is still timed",
			in: input(func(in *Input) {
				in.VMI = pendingVMI(kubevirtv1.Pending, 3*time.Hour, withCondition(kubevirtv1.VirtualMachineInstanceCondition{
					Type: kubevirtv1.VirtualMachineInstanceProvisioning, Status: corev1.ConditionTrue, LastTransitionTime: at(-3 * time.Hour)}))
				in.Pods = nil
			}),
			cp: "Degraded/StuckProvisioning",
		},
		{
			name: "an importer that restarted twice is still importing, with its error said",
			in: input(waitingVM, withStorage([]storagefacts.Volume{boundVolume(dataVolume("ImportInProgress", "N/A", 2,
				storagefacts.Condition{Type: "Running", Status: "False", Reason: "Error", Message: "Unable to connect to http data source: 404 Not Found"}))})),
			storage: "Progressing/DataVolumeImporting",
			check:   storageMessage("retrying after Error: Unable to connect"),
		},
		{
			// CDI restarts the importer once when the image needs scratch
			// space; meanwhile Running is False with reason Error and
			// virt-controller shows the VM DataVolumeError
			// (kubevirt/containerized-data-importer#3762, "intended
			// behavior"): a normal import, which the soak plays.
			name: "an importer restarted once for scratch space, the VM DataVolumeError meanwhile: still Provisioning",
			in: input(waitingVM, func(in *Input) {
				in.VM.Status.PrintableStatus = kubevirtv1.VirtualMachineStatusDataVolumeError
			}, withStorage([]storagefacts.Volume{boundVolume(dataVolume("ImportInProgress", "0.00%", 1,
				storagefacts.Condition{Type: "Running", Status: "False", Reason: "Error", Message: "scratch space required and none found", LastTransition: now.Add(-10 * time.Second)}))})),
			overall: "Progressing/Provisioning", cp: "Progressing/Provisioning", storage: "Progressing/DataVolumeImporting",
			check: storageMessage("retrying after Error: scratch space required"),
		},
		{
			name: "an importer that restarted four times: DataVolumeFailed with CDI's message",
			in: input(waitingVM, withStorage([]storagefacts.Volume{boundVolume(dataVolume("ImportInProgress", "N/A", 4,
				storagefacts.Condition{Type: "Running", Status: "False", Reason: "Error", Message: "Unable to connect to http data source: 404 Not Found", LastTransition: now.Add(-time.Minute)}))})),
			overall: "Degraded/DataVolumeFailed", storage: "Degraded/DataVolumeFailed",
			check: all(storageMessage("after 4 restarts", "404 Not Found"), evidenceIs(layerStorage, "status.restartCount", "4")),
		},
		{
			name: "a DataVolume Failed: the newest event explains it",
			in: input(waitingVM, withStorage([]storagefacts.Volume{boundVolume(dataVolume("Failed", "", 0), func(v *storagefacts.Volume) {
				v.DV.Events = []storagefacts.Event{{Kind: storagefacts.KindDataVolume, Name: claim, Reason: "CloneValidationFailed", Message: "source PVC too large", Last: now.Add(-time.Minute)}}
			})})),
			storage: "Degraded/DataVolumeFailed",
			check:   storageMessage("CloneValidationFailed: source PVC too large"),
		},
		// Attach and mount.
		{
			name: "the external attacher's attach error",
			in: input(creating(3*time.Minute), withStorage([]storagefacts.Volume{boundVolume(attachment(nodeA, func(a *storagefacts.Attachment) {
				a.Attached, a.AttachError = false, &storagefacts.VolumeError{Message: "rpc error: code = Internal desc = volume not found", Time: now.Add(-time.Minute)}
			}))})),
			overall: "Degraded/VolumeAttachFailed", storage: "Degraded/VolumeAttachFailed",
			check: evidenceIs(layerStorage, "status.attachError.message", "rpc error: code = Internal desc = volume not found"),
		},
		{
			name: "FailedAttachVolume on the launcher pod",
			in: input(creating(3*time.Minute), withStorage([]storagefacts.Volume{boundVolume()},
				podEvent(eventFailedAttach, "attachdetach-controller", "AttachVolume.Attach failed for volume \"pv-rootdisk\" : timed out", 2*time.Minute, 30*time.Second))),
			storage: "Degraded/VolumeAttachFailed",
			check:   storageMessage("FailedAttachVolume (attachdetach-controller, 4 times)"),
		},
		{
			name: "a Multi-Attach error on the launcher pod",
			in: input(creating(3*time.Minute), withStorage([]storagefacts.Volume{boundVolume()},
				podEvent(eventFailedAttach, "attachdetach-controller", "Multi-Attach error for volume \"pv-rootdisk\" Volume is already used by pod(s) virt-launcher-vm1-old", 2*time.Minute, 30*time.Second))),
			overall: "Degraded/VolumeMultiAttach", storage: "Degraded/VolumeMultiAttach",
			check: evidenceIs(layerStorage, "events[FailedAttachVolume]", "Multi-Attach error for volume \"pv-rootdisk\" Volume is already used by pod(s) virt-launcher-vm1-old"),
		},
		{
			// Kubernetes 1.37's wording of the same refusal, as its real
			// attach-detach controller writes it in test/storage.
			name: "a volume waiting for its detach from another node (Kubernetes 1.37's Multi-Attach)",
			in: input(creating(3*time.Minute), withStorage([]storagefacts.Volume{boundVolume()},
				podEvent(eventFailedAttach, "attachdetach-controller", "Waiting for detach for volume \"pv-rootdisk\" Volume is already used by pod(s) virt-launcher-vm1-old", 2*time.Minute, 30*time.Second))),
			overall: "Degraded/VolumeMultiAttach", storage: "Degraded/VolumeMultiAttach",
			check: evidenceIs(layerStorage, "events[FailedAttachVolume]", "Waiting for detach for volume \"pv-rootdisk\" Volume is already used by pod(s) virt-launcher-vm1-old"),
		},
		{
			name: "FailedMount and FailedMapVolume on the launcher pod",
			in: input(creating(3*time.Minute), withStorage([]storagefacts.Volume{boundVolume()},
				podEvent(eventFailedMap, "kubelet", "MapVolume.SetUpDevice failed for volume \"pv-rootdisk\"", 2*time.Minute, 10*time.Second))),
			storage: "Degraded/VolumeMountFailed",
			check:   storageMessage("FailedMapVolume (kubelet"),
		},
		{
			// A pasted `kubectl describe` of the launcher pod: its events,
			// no claim. The claim is unknown, not missing, and the event
			// still explains the pod.
			name: "FailedMapVolume on the launcher pod of facts that read no claim: no VolumeNotBound",
			in: input(creating(3*time.Minute), func(in *Input) {
				in.Storage = &storagefacts.Facts{ClaimsNotRead: true,
					Volumes: []storagefacts.Volume{{Name: claim, ClaimName: claim}},
					Events:  []storagefacts.Event{podEvent(eventFailedMap, "kubelet", "MapVolume.MapPodDevice failed for volume \"pv-rootdisk\"", 2*time.Minute, 10*time.Second)}}
			}),
			overall: "Degraded/VolumeMountFailed", storage: "Degraded/VolumeMountFailed",
			check: all(storageMessage("FailedMapVolume (kubelet"), func(t *testing.T, r Result) {
				t.Helper()
				for _, e := range r.Status.Layers.Storage.Evidence {
					if e.Kind == kindPVC {
						t.Errorf("a claim not read is cited: %+v", e)
					}
				}
			}),
		},
		{
			name: "the same facts without the event: the claims unknown, nothing said of them",
			in: input(creating(3*time.Minute), func(in *Input) {
				in.Storage = &storagefacts.Facts{ClaimsNotRead: true, Volumes: []storagefacts.Volume{{Name: claim, ClaimName: claim}}}
			}),
			storage: "Unknown/NotInInput",
		},
		{
			name: "a FailedMount older than the pod's readiness explains nothing: the pod moved on",
			in: input(withStorage([]storagefacts.Volume{boundVolume(attachment(nodeA))},
				podEvent(eventFailedMount, "kubelet", "Unable to attach or mount volumes", 2*time.Hour+time.Minute, 2*time.Hour))),
			overall: "Healthy/Running", storage: "Healthy/VolumesReady",
		},
		{
			name: "an event of a pod that is not the VMI's says nothing",
			in: input(creating(3*time.Minute), withStorage([]storagefacts.Volume{boundVolume()}, func() storagefacts.Event {
				e := podEvent(eventFailedMount, "kubelet", "x", time.Minute, time.Minute)
				e.Name = "virt-launcher-other-xyz"
				return e
			}())),
			storage: "Healthy/VolumesReady",
		},
		{
			name:    "an attachment held for a NotReady node while the VMI waits elsewhere",
			in:      input(creating(3*time.Minute), withStorage([]storagefacts.Volume{boundVolume(attachment(nodeB, func(a *storagefacts.Attachment) { a.NodeNotReady = true }))})),
			storage: "Degraded/VolumeAttachmentStale",
			check:   all(storageMessage("still attached for node "+nodeB+", which is NotReady"), evidenceIs(layerStorage, "spec.nodeName", nodeB)),
		},
		{
			name: "a ReadWriteMany volume's attachment on a NotReady node keeps nothing from attaching",
			in: input(creating(3*time.Minute), withStorage([]storagefacts.Volume{boundVolume(attachment(nodeB, func(a *storagefacts.Attachment) { a.NodeNotReady = true }),
				func(v *storagefacts.Volume) { v.PVC.AccessModes = []string{"ReadWriteMany"} })})),
			storage: "Healthy/VolumesReady",
		},
		{
			name:    "a VM running Ready elsewhere: an old attachment on a gone node is no fault of its storage",
			in:      input(withStorage([]storagefacts.Volume{boundVolume(attachment(nodeA), attachment(nodeB, func(a *storagefacts.Attachment) { a.Name, a.Attached, a.NodeMissing = "csi-old", false, true }))})),
			storage: "Healthy/VolumesReady",
		},
		{
			name:    "an attachment on the VMI's own NotReady node is the node layer's",
			in:      input(withStorage([]storagefacts.Volume{boundVolume(attachment(nodeA, func(a *storagefacts.Attachment) { a.NodeNotReady = true }))})),
			storage: "Healthy/VolumesReady",
		},
		{
			name:    "a claim that does not exist yet, with the VMI created a minute ago",
			in:      input(creating(time.Minute), withStorage([]storagefacts.Volume{{Name: claim, ClaimName: claim}})),
			storage: "Progressing/VolumeNotBound",
			check:   storageMessage("claim rootdisk of volume rootdisk does not exist"),
		},
	}
}

func TestStorage(t *testing.T) { run(t, storageSituations()) }

// TestUnreadEvents: the events the controller's Event store may forget
// are a launcher pod's before its readiness last changed, all of a
// finished pod's, of a claim Bound or Lost and of a Succeeded DataVolume;
// none of a pod with no readiness yet, a Pending claim or a DataVolume on
// its way. checkInvariants holds every situation to the same status
// without them.
func TestUnreadEvents(t *testing.T) {
	readySince := metav1.NewTime(now.Add(-time.Hour))
	pods := []*corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "ready"}, Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: readySince}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "done"}, Status: corev1.PodStatus{Phase: corev1.PodFailed}},
		{ObjectMeta: metav1.ObjectMeta{Name: "creating"}, Status: corev1.PodStatus{Phase: corev1.PodPending}},
	}
	s := &storagefacts.Facts{Volumes: []storagefacts.Volume{
		{Name: "a", PVC: &storagefacts.PVC{Name: "a", Phase: string(corev1.ClaimBound)}, DV: &storagefacts.DataVolume{Name: "a", Phase: storagefacts.DataVolumeSucceeded}},
		{Name: "b", PVC: &storagefacts.PVC{Name: "b", Phase: string(corev1.ClaimPending)}, DV: &storagefacts.DataVolume{Name: "b", Phase: "ImportInProgress"}},
		{Name: "c", PVC: &storagefacts.PVC{Name: "c", Phase: string(corev1.ClaimLost)}},
	}}
	want := []storagefacts.Unread{
		{Kind: storagefacts.KindPod, Name: "ready", Before: readySince.Time},
		{Kind: storagefacts.KindPod, Name: "done", All: true},
		{Kind: storagefacts.KindPVC, Name: "a", All: true},
		{Kind: storagefacts.KindDataVolume, Name: "a", All: true},
		{Kind: storagefacts.KindPVC, Name: "c", All: true},
	}
	if got := UnreadEvents(pods, s); !slices.Equal(got, want) {
		t.Errorf("unread %+v\nwant %+v", got, want)
	}
	if got := UnreadEvents(pods, nil); got != nil {
		t.Errorf("without storage facts: %+v", got)
	}
}

// TestStorageEventsDoNotLeak checks that the events of the storage facts
// never reach another layer's verdict: they explain storage only.
func TestStorageEventsDoNotLeak(t *testing.T) {
	for _, c := range storageSituations() {
		st := Evaluate(c.in).Status
		for name, l := range st.Layers.All() {
			if name == v1alpha1.LayerStorage {
				continue
			}
			for _, e := range l.Evidence {
				if strings.HasPrefix(e.Field, "events[") {
					t.Errorf("%s: layer %s cites %s", c.name, name, e.Field)
				}
			}
		}
	}
}

// FuzzStorage feeds the engine storage facts of any shape (JSON-decoded:
// missing claims, classes, DataVolumes, events of any time and kind) with
// a running VM, one starting on a scheduled launcher and one with no VMI
// yet: no panic, and the invariants of every status hold.
func FuzzStorage(f *testing.F) {
	for _, c := range storageSituations() {
		if c.in.Storage != nil {
			b, err := json.Marshal(c.in.Storage)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var s storagefacts.Facts
		if json.Unmarshal(b, &s) != nil {
			return
		}
		for _, in := range []Input{input(), input(creating(3 * time.Minute)), input(waitingVM)} {
			in.Storage = &s
			checkInvariants(t, in, Evaluate(in))
		}
	})
}
