package membership

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

func TestNodeNames(t *testing.T) {
	vmi := &kubevirtv1.VirtualMachineInstance{Status: kubevirtv1.VirtualMachineInstanceStatus{
		NodeName:           "node-a",
		EvacuationNodeName: "node-a",
		MigrationState:     &kubevirtv1.VirtualMachineInstanceMigrationState{SourceNode: "node-a", TargetNode: "node-b"},
		ActivePods:         map[types.UID]string{"p1": "node-a", "p2": "node-c"},
	}}
	got := NodeNames(vmi, []*corev1.Pod{{Spec: corev1.PodSpec{NodeName: "node-d"}}, nil, {}})
	if want := []string{"node-a", "node-b", "node-c", "node-d"}; !slices.Equal(got, want) {
		t.Errorf("NodeNames = %v, want %v", got, want)
	}
	evac := &kubevirtv1.VirtualMachineInstance{Status: kubevirtv1.VirtualMachineInstanceStatus{EvacuationNodeName: "drained"}}
	if got := NodeNames(evac, nil); !slices.Equal(got, []string{"drained"}) {
		t.Errorf("NodeNames of an evacuated VMI = %v, want the evacuated node", got)
	}
	if got := NodeNames(nil, nil); len(got) != 0 {
		t.Errorf("NodeNames(nil) = %v", got)
	}
}

func TestIsLauncherOf(t *testing.T) {
	vmi := &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "vm1", UID: "uid-1"}}
	ctrlRef := func(kind, apiVersion, name string, uid types.UID) metav1.OwnerReference {
		yes := true
		return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: uid, Controller: &yes}
	}
	pod := func(refs []metav1.OwnerReference, labels, annotations map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", OwnerReferences: refs, Labels: labels, Annotations: annotations}}
	}
	for _, c := range []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"controlled by the VMI", pod([]metav1.OwnerReference{ctrlRef("VirtualMachineInstance", "kubevirt.io/v1", "vm1", "uid-1")}, nil, nil), true},
		{"controlled by an earlier VMI of the same name", pod([]metav1.OwnerReference{ctrlRef("VirtualMachineInstance", "kubevirt.io/v1", "vm1", "uid-0")}, nil, nil), false},
		{"controlled by another VMI", pod([]metav1.OwnerReference{ctrlRef("VirtualMachineInstance", "kubevirt.io/v1", "vm2", "")}, nil, nil), false},
		{"an older API version of the same group", pod([]metav1.OwnerReference{ctrlRef("VirtualMachineInstance", "kubevirt.io/v1alpha3", "vm1", "uid-1")}, nil, nil), true},
		{"a hotplug attachment pod, controlled by the launcher", pod([]metav1.OwnerReference{ctrlRef("Pod", "v1", "virt-launcher-vm1-abcde", "x")},
			map[string]string{kubevirtv1.AppLabel: "hotplug-disk"}, nil), false},
		{"a WFFC provisioning pod", pod(nil, nil, map[string]string{kubevirtv1.EphemeralProvisioningObject: "true"}), false},
		{"created-by label only", pod(nil, map[string]string{kubevirtv1.CreatedByLabel: "uid-1"}, nil), true},
		{"created-by label of another VMI", pod(nil, map[string]string{kubevirtv1.CreatedByLabel: "uid-9"}, nil), false},
		{"nothing claimed: as the caller found it", pod(nil, nil, nil), true},
		{"nil", nil, false},
	} {
		if got := IsLauncherOf(c.pod, vmi); got != c.want {
			t.Errorf("%s: IsLauncherOf = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestOwner(t *testing.T) {
	vm := &kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "vm1", UID: "vm-uid"}}
	vmi := &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "vm1", UID: "vmi-uid"}}
	if ref, ok := Owner(vm, vmi); !ok || ref.Kind != "VirtualMachine" || ref.UID != "vm-uid" || ref.Controller != nil || ref.BlockOwnerDeletion != nil {
		t.Errorf("Owner(vm, vmi) = %+v, %v: want the VM, not a controller reference", ref, ok)
	}
	if ref, ok := Owner(nil, vmi); !ok || ref.Kind != "VirtualMachineInstance" || !IsOwnerKind(ref) {
		t.Errorf("Owner(nil, vmi) = %+v, %v", ref, ok)
	}
	if _, ok := Owner(nil, nil); ok {
		t.Error("Owner(nil, nil) is ok")
	}
}
