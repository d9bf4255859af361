package simulator

import (
	"cmp"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// VMSpec describes a VM to create. The zero value of every field but Name
// and Namespace gives a plain VM: runStrategy Always, one masquerade
// interface on the pod network, a containerDisk root disk (live-migratable),
// no host device, no guest agent.
type VMSpec struct {
	// Name and Namespace of the VM (and of its VMI).
	Name, Namespace string
	// RunStrategy of the VM; empty means Always. Always, RerunOnFailure
	// and Once make virt-controller create the VMI at once; Halted and
	// Manual leave the VM Stopped until Start.
	RunStrategy kubevirtv1.VirtualMachineRunStrategy
	// GuestAgent says the guest runs qemu-guest-agent: Boot connects it
	// once the domain runs.
	GuestAgent bool
	// Interfaces is the number of network interfaces: 0 or 1 is the pod
	// network with masquerade binding; 2 adds a bridge interface on the
	// Multus network MultusNetwork.
	Interfaces int
	// HostDevice passes a PCI host device (a GPU) through, which makes
	// the VMI not live-migratable (HostDeviceNotLiveMigratable).
	HostDevice bool
	// NonSharedDisk puts the root disk on a ReadWriteOnce PVC, which makes
	// the VMI not live-migratable (DisksNotLiveMigratable).
	NonSharedDisk bool
	// RootClaim puts the root disk on the existing PVC of that name
	// (CreateClaim) instead of a containerDisk; like NonSharedDisk, the
	// VMI is then not live-migratable.
	RootClaim string
	// DataVolume puts the root disk on the DataVolume <name>-rootdisk of
	// the VM's dataVolumeTemplates, imported over HTTP by CDI into a PVC
	// of StorageClass (cdi.go). CreateVM has virt-controller create the
	// DataVolume and, as KubeVirt waits for it, no VMI: the VM says
	// Provisioning until the import succeeds (CompleteImport), then
	// virt-controller creates the VMI. Needs CDI's CRD
	// (testenv.Options.CDI).
	DataVolume bool
	// StorageClass is the class of the DataVolume's PVC; empty is
	// StorageClassImmediate.
	StorageClass string
	// SharedDisk puts the root disk on the PersistentVolumeClaim
	// <name>-rootdisk, as NonSharedDisk does; the caller creates that claim
	// ReadWriteMany (shared storage), and the VMI stays live-migratable.
	// With DataVolume, the DataVolume's claim is ReadWriteMany instead of
	// ReadWriteOnce.
	SharedDisk bool
	// EvictionStrategy of the VMI; empty is LiveMigrate.
	EvictionStrategy kubevirtv1.EvictionStrategy
	// NodeSelector is the VMI's spec.nodeSelector, which virt-controller
	// copies into the launcher pod's: it pins the VMI to the nodes it
	// selects.
	NodeSelector map[string]string
	// Standalone creates a bare VMI with no VM (CreateVM then writes no
	// VM object).
	Standalone bool
	// Labels are added to the VM's template, hence to the VMI and its
	// launcher pods.
	Labels map[string]string
}

const (
	// MultusNetwork is the NetworkAttachmentDefinition the second
	// interface attaches to.
	MultusNetwork = "blue-net"
	// ContainerDiskImage is the root disk image of VMs without NonSharedDisk.
	ContainerDiskImage = "quay.io/containerdisks/fedora:41"
	// hostDeviceResource is the device-plugin resource of the host device.
	hostDeviceResource = "nvidia.com/GA102GL_A10"

	// PodNetworkName is the name of the default network in the pods'
	// k8s.v1.cni.cncf.io/network-status annotation.
	PodNetworkName = "ovn-kubernetes"
	// networksAnnotation is the Multus request KubeVirt writes on the pod.
	networksAnnotation = "k8s.v1.cni.cncf.io/networks"
)

func (sp VMSpec) runStrategy() kubevirtv1.VirtualMachineRunStrategy {
	if sp.RunStrategy == "" {
		return kubevirtv1.RunStrategyAlways
	}
	return sp.RunStrategy
}

// vmiSpec is the VMI spec as the VM's template carries it after virt-api's
// defaulting, with room for CPU and memory hotplug (four times the sockets
// and the memory, KubeVirt's default maxHotplugRatio, kv:pkg/defaults).
func (s *Simulator) vmiSpec(sp VMSpec) kubevirtv1.VirtualMachineInstanceSpec {
	mem, maxMem := resource.MustParse("2Gi"), resource.MustParse("8Gi")
	spec := kubevirtv1.VirtualMachineInstanceSpec{
		Domain: kubevirtv1.DomainSpec{
			Resources: kubevirtv1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: mem}},
			CPU:       &kubevirtv1.CPU{Cores: 1, Sockets: 1, Threads: 1, MaxSockets: 4, Model: kubevirtv1.CPUModeHostModel},
			Memory:    &kubevirtv1.Memory{Guest: &mem, MaxGuest: &maxMem},
			Machine:   &kubevirtv1.Machine{Type: "q35"},
			Firmware:  &kubevirtv1.Firmware{UUID: types.UID(s.uuid())},
			Features:  &kubevirtv1.Features{ACPI: kubevirtv1.FeatureState{Enabled: ptr.To(true)}},
			Devices: kubevirtv1.Devices{
				Disks: []kubevirtv1.Disk{
					{Name: "rootdisk", DiskDevice: kubevirtv1.DiskDevice{Disk: &kubevirtv1.DiskTarget{Bus: kubevirtv1.DiskBusVirtio}}},
					{Name: "cloudinitdisk", DiskDevice: kubevirtv1.DiskDevice{Disk: &kubevirtv1.DiskTarget{Bus: kubevirtv1.DiskBusVirtio}}},
				},
				Interfaces: []kubevirtv1.Interface{{
					Name:                   "default",
					InterfaceBindingMethod: kubevirtv1.InterfaceBindingMethod{Masquerade: &kubevirtv1.InterfaceMasquerade{}},
					MacAddress:             s.mac(),
				}},
			},
		},
		Networks:                      []kubevirtv1.Network{{Name: "default", NetworkSource: kubevirtv1.NetworkSource{Pod: &kubevirtv1.PodNetwork{}}}},
		EvictionStrategy:              ptr.To(cmp.Or(sp.EvictionStrategy, kubevirtv1.EvictionStrategyLiveMigrate)),
		TerminationGracePeriodSeconds: ptr.To[int64](180),
		NodeSelector:                  maps.Clone(sp.NodeSelector),
	}
	if sp.Interfaces >= 2 {
		spec.Domain.Devices.Interfaces = append(spec.Domain.Devices.Interfaces, kubevirtv1.Interface{
			Name:                   "blue",
			InterfaceBindingMethod: kubevirtv1.InterfaceBindingMethod{Bridge: &kubevirtv1.InterfaceBridge{}},
			MacAddress:             s.mac(),
		})
		spec.Networks = append(spec.Networks, kubevirtv1.Network{Name: "blue", NetworkSource: kubevirtv1.NetworkSource{Multus: &kubevirtv1.MultusNetwork{NetworkName: MultusNetwork}}})
	}
	if sp.HostDevice {
		spec.Domain.Devices.HostDevices = []kubevirtv1.HostDevice{{Name: "gpu1", DeviceName: hostDeviceResource}}
	}
	root := kubevirtv1.Volume{Name: "rootdisk", VolumeSource: kubevirtv1.VolumeSource{ContainerDisk: &kubevirtv1.ContainerDiskSource{Image: ContainerDiskImage}}}
	switch {
	case sp.DataVolume:
		root.VolumeSource = kubevirtv1.VolumeSource{DataVolume: &kubevirtv1.DataVolumeSource{Name: RootDataVolume(sp.Name)}}
	case sp.NonSharedDisk || sp.SharedDisk || sp.RootClaim != "":
		root.VolumeSource = kubevirtv1.VolumeSource{PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{
			PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: cmpOr(sp.RootClaim, sp.Name+"-rootdisk")},
		}}
	}
	userData := "#cloud-config\nuser: fedora\npassword: fedora\nchpasswd: { expire: False }\n"
	if sp.GuestAgent {
		userData += "packages:\n  - qemu-guest-agent\nruncmd:\n  - [systemctl, enable, --now, qemu-guest-agent]\n"
	}
	spec.Volumes = []kubevirtv1.Volume{root, {Name: "cloudinitdisk", VolumeSource: kubevirtv1.VolumeSource{CloudInitNoCloud: &kubevirtv1.CloudInitNoCloudSource{UserData: userData}}}}
	return spec
}

func vmiOwnerRef(vmi *kubevirtv1.VirtualMachineInstance) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: kubevirtv1.SchemeGroupVersion.String(), Kind: "VirtualMachineInstance",
		Name: vmi.Name, UID: vmi.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}
}

// CreateVM creates the VM as a user would and lets virt-controller react:
// the VM gets its finalizer; with a running run strategy virt-controller
// creates the VMI from the template (owned by the VM, phase Pending, Ready
// False PodNotExists), and the VM's status says Starting; otherwise the VM
// says Stopped. With spec.Standalone only the VMI is created, by the user.
// The namespace must exist (EnsureNamespace).
func (s *Simulator) CreateVM(ctx context.Context, spec VMSpec) error {
	if spec.Name == "" || spec.Namespace == "" {
		return fmt.Errorf("CreateVM: name and namespace are required")
	}
	s.rememberSpec(spec)
	labels := map[string]string{"kubevirt.io/domain": spec.Name}
	for k, v := range spec.Labels {
		labels[k] = v
	}
	vmiSpec := s.vmiSpec(spec)
	if spec.Standalone {
		vmi := &kubevirtv1.VirtualMachineInstance{
			ObjectMeta: metav1.ObjectMeta{Namespace: spec.Namespace, Name: spec.Name, Labels: labels},
			Spec:       vmiSpec,
		}
		if err := s.Client.Create(ctx, vmi, client.FieldOwner(managerUser)); err != nil {
			return fmt.Errorf("creating VMI %s/%s: %w", spec.Namespace, spec.Name, err)
		}
		return s.acceptVMI(ctx, spec.Namespace, spec.Name)
	}
	vm := &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Namespace: spec.Namespace, Name: spec.Name},
		Spec: kubevirtv1.VirtualMachineSpec{
			RunStrategy: ptr.To(spec.runStrategy()),
			Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       vmiSpec,
			},
		},
	}
	if spec.DataVolume {
		vm.Spec.DataVolumeTemplates = []kubevirtv1.DataVolumeTemplateSpec{dataVolumeTemplate(spec)}
	}
	if err := s.Client.Create(ctx, vm, client.FieldOwner(managerUser)); err != nil {
		return fmt.Errorf("creating VM %s/%s: %w", spec.Namespace, spec.Name, err)
	}
	if _, err := s.updateVM(ctx, spec.Namespace, spec.Name, managerVirtController, func(vm *kubevirtv1.VirtualMachine) error {
		addFinalizer(vm, kubevirtv1.VirtualMachineControllerFinalizer)
		setAnnotation(vm, kubevirtv1.ControllerAPILatestVersionObservedAnnotation, "v1")
		setAnnotation(vm, kubevirtv1.ControllerAPIStorageVersionObservedAnnotation, "v1")
		return nil
	}); err != nil {
		return err
	}
	if spec.DataVolume {
		// virt-controller creates the DataVolumes first and the VMI only
		// once they are ready (CompleteImport).
		created := &kubevirtv1.VirtualMachine{}
		if err := s.Client.Get(ctx, key(spec.Namespace, spec.Name), created); err != nil {
			return fmt.Errorf("reading VM %s/%s: %w", spec.Namespace, spec.Name, err)
		}
		if err := s.createDataVolumes(ctx, created); err != nil {
			return err
		}
		return s.syncVM(ctx, spec.Namespace, spec.Name)
	}
	switch spec.runStrategy() {
	case kubevirtv1.RunStrategyAlways, kubevirtv1.RunStrategyRerunOnFailure, kubevirtv1.RunStrategyOnce:
		return s.createVMIFromVM(ctx, spec.Namespace, spec.Name)
	}
	return s.syncVM(ctx, spec.Namespace, spec.Name)
}

// createVMIFromVM is virt-controller's VM controller starting the VM: a
// VMI from the template, owned by the VM; then the VMI controller accepts it.
func (s *Simulator) createVMIFromVM(ctx context.Context, ns, name string) error {
	vm := &kubevirtv1.VirtualMachine{}
	if err := s.Client.Get(ctx, key(ns, name), vm); err != nil {
		return fmt.Errorf("reading VM %s/%s: %w", ns, name, err)
	}
	if vm.Spec.Template == nil {
		return fmt.Errorf("VM %s/%s has no template", ns, name)
	}
	vmi := &kubevirtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   ns,
			Name:        name,
			Labels:      vm.Spec.Template.ObjectMeta.Labels,
			Annotations: map[string]string{kubevirtv1.ControllerAPILatestVersionObservedAnnotation: "v1", kubevirtv1.ControllerAPIStorageVersionObservedAnnotation: "v1", kubevirtv1.VirtualMachineGenerationAnnotation: strconv.FormatInt(vm.Generation, 10)},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: kubevirtv1.SchemeGroupVersion.String(), Kind: "VirtualMachine",
				Name: vm.Name, UID: vm.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
			Finalizers: []string{kubevirtv1.VirtualMachineControllerFinalizer},
		},
		Spec: *vm.Spec.Template.Spec.DeepCopy(),
		Status: kubevirtv1.VirtualMachineInstanceStatus{
			VirtualMachineRevisionName: fmt.Sprintf("revision-start-vm-%s-%d", vm.UID, vm.Generation),
		},
	}
	if err := s.Client.Create(ctx, vmi, client.FieldOwner(managerVirtController)); err != nil {
		return fmt.Errorf("creating VMI %s/%s: %w", ns, name, err)
	}
	if err := s.syncVM(ctx, ns, name); err != nil {
		return err
	}
	return s.acceptVMI(ctx, ns, name)
}

// acceptVMI is virt-controller's first pass over a new VMI: its finalizer,
// phase Pending and Ready=False because no pod exists yet.
func (s *Simulator) acceptVMI(ctx context.Context, ns, name string) error {
	now := s.now()
	if _, err := s.updateVMI(ctx, ns, name, managerVirtController, func(vmi *kubevirtv1.VirtualMachineInstance) error {
		addFinalizer(vmi, kubevirtv1.VirtualMachineInstanceFinalizer)
		setVMIPhase(vmi, kubevirtv1.Pending, now)
		setVMICond(vmi, kubevirtv1.VirtualMachineInstanceCondition{
			Type: kubevirtv1.VirtualMachineInstanceReady, Status: corev1.ConditionFalse,
			Reason: kubevirtv1.PodNotExistsReason, Message: "virt-launcher pod has not yet been scheduled",
		}, now)
		vmi.Status.GuestOSInfo = kubevirtv1.VirtualMachineInstanceGuestOSInfo{}
		return nil
	}); err != nil {
		return err
	}
	return s.syncVM(ctx, ns, name)
}

// Start starts a stopped VM as `virtctl start` does: a Halted VM gets
// runStrategy Always (Manual and Once VMs keep theirs), then virt-controller
// creates the VMI (phase Pending). Boot takes it from there.
func (s *Simulator) Start(ctx context.Context, ns, name string) error {
	vm, err := s.updateVM(ctx, ns, name, managerVirtctl, func(vm *kubevirtv1.VirtualMachine) error {
		rs, err := vm.RunStrategy()
		if err != nil {
			return err
		}
		if rs == kubevirtv1.RunStrategyHalted {
			vm.Spec.Running = nil
			vm.Spec.RunStrategy = ptr.To(kubevirtv1.RunStrategyAlways)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := s.Client.Get(ctx, key(ns, name), &kubevirtv1.VirtualMachineInstance{}); err == nil {
		return fmt.Errorf("VM %s/%s already has a VMI", ns, vm.Name)
	} else if !apierrors.IsNotFound(err) {
		return err
	}
	return s.createVMIFromVM(ctx, ns, name)
}

// getVMI reads the VMI.
func (s *Simulator) getVMI(ctx context.Context, ns, name string) (*kubevirtv1.VirtualMachineInstance, error) {
	vmi := &kubevirtv1.VirtualMachineInstance{}
	if err := s.Client.Get(ctx, key(ns, name), vmi); err != nil {
		return nil, fmt.Errorf("reading VMI %s/%s: %w", ns, name, err)
	}
	return vmi, nil
}

// vmiInPhase reads the VMI and requires it to be in one of phases
// (requirePhase).
func (s *Simulator) vmiInPhase(ctx context.Context, ns, name, step string, phases ...kubevirtv1.VirtualMachineInstancePhase) (*kubevirtv1.VirtualMachineInstance, error) {
	vmi, err := s.getVMI(ctx, ns, name)
	if err != nil {
		return nil, err
	}
	if err := requirePhase(vmi, step, phases...); err != nil {
		return nil, err
	}
	return vmi, nil
}

// requirePhase fails unless the VMI is in one of phases ("" for unset); no
// phases allows any. step names the caller in the error, as KubeVirt's
// own steps refuse a VMI in the wrong phase.
func requirePhase(vmi *kubevirtv1.VirtualMachineInstance, step string, phases ...kubevirtv1.VirtualMachineInstancePhase) error {
	if len(phases) == 0 {
		return nil
	}
	for _, p := range phases {
		if vmi.Status.Phase == p {
			return nil
		}
	}
	want := make([]string, len(phases))
	for i, p := range phases {
		want[i] = string(p)
		if p == "" {
			want[i] = "(unset)"
		}
	}
	return fmt.Errorf("%s: VMI %s/%s is %q, want %s", step, vmi.Namespace, vmi.Name, vmi.Status.Phase, strings.Join(want, " or "))
}

// syncVM is virt-controller's VM controller updating the VM's status from
// its VMI (kv:pkg/virt-controller/watch/vm/vm.go): printableStatus in
// KubeVirt's precedence order, ready, created, the Ready condition copied
// from the VMI and every other VMI condition mirrored. It writes nothing
// when nothing changed, and nothing for a VMI without a VM.
func (s *Simulator) syncVM(ctx context.Context, ns, name string) error {
	vmi := &kubevirtv1.VirtualMachineInstance{}
	if err := s.Client.Get(ctx, key(ns, name), vmi); apierrors.IsNotFound(err) {
		vmi = nil
	} else if err != nil {
		return fmt.Errorf("reading VMI %s/%s: %w", ns, name, err)
	}
	_, err := s.updateVMStatus(ctx, ns, name, managerVirtController, func(vm *kubevirtv1.VirtualMachine) error {
		rs, _ := vm.RunStrategy()
		st := &vm.Status
		st.RunStrategy = rs
		st.ObservedGeneration = vm.Generation
		st.DesiredGeneration = vm.Generation
		st.Created = vmi != nil
		st.Ready = false
		st.PrintableStatus = printableStatus(vm, vmi, rs)
		if vmi == nil && vm.DeletionTimestamp == nil && len(vm.Spec.DataVolumeTemplates) > 0 && rs != kubevirtv1.RunStrategyHalted {
			dvs, err := s.dataVolumesStatus(ctx, vm)
			if err != nil {
				return err
			}
			if dvs != "" {
				st.PrintableStatus = dvs
			}
		}

		ready := kubevirtv1.VirtualMachineCondition{
			Type: kubevirtv1.VirtualMachineReady, Status: corev1.ConditionFalse,
			Reason: "VMINotExists", Message: "VMI does not exist",
		}
		mirrored := map[kubevirtv1.VirtualMachineConditionType]kubevirtv1.VirtualMachineCondition{}
		if vmi != nil {
			ready = kubevirtv1.VirtualMachineCondition{
				Type: kubevirtv1.VirtualMachineReady, Status: corev1.ConditionFalse,
				Reason: "VMIConditionMissing", Message: "VMI is missing the Ready condition",
			}
			for _, c := range vmi.Status.Conditions {
				vc := kubevirtv1.VirtualMachineCondition{
					Type: kubevirtv1.VirtualMachineConditionType(c.Type), Status: c.Status, Reason: c.Reason,
					Message: c.Message, LastProbeTime: c.LastProbeTime, LastTransitionTime: c.LastTransitionTime,
				}
				if c.Type == kubevirtv1.VirtualMachineInstanceReady {
					ready = vc
					st.Ready = c.Status == corev1.ConditionTrue && vmi.DeletionTimestamp == nil
					continue
				}
				mirrored[vc.Type] = vc
			}
		}
		var conds []kubevirtv1.VirtualMachineCondition
		old := map[kubevirtv1.VirtualMachineConditionType]kubevirtv1.VirtualMachineCondition{}
		for _, c := range st.Conditions {
			old[c.Type] = c
		}
		keep := func(c kubevirtv1.VirtualMachineCondition) {
			if o, ok := old[c.Type]; ok && o.Status == c.Status && o.Reason == c.Reason && o.Message == c.Message {
				c = o
			}
			if c.LastTransitionTime.IsZero() {
				c.LastTransitionTime = s.now()
			}
			conds = append(conds, c)
		}
		keep(ready)
		if vmi != nil {
			for _, c := range vmi.Status.Conditions {
				if vc, ok := mirrored[kubevirtv1.VirtualMachineConditionType(c.Type)]; ok {
					keep(vc)
				}
			}
		}
		// The VM's own conditions, which the VMI does not carry.
		for _, c := range st.Conditions {
			switch c.Type {
			case kubevirtv1.VirtualMachineFailure, kubevirtv1.VirtualMachineRestartRequired, kubevirtv1.VirtualMachineManualRecoveryRequired:
				conds = append(conds, c)
			}
		}
		st.Conditions = conds
		return nil
	})
	if apierrors.IsNotFound(err) {
		// A standalone VMI, or a VM already gone.
		return nil
	}
	return err
}

// printableStatus follows kv:pkg/virt-controller/watch/vm/vm.go: the first
// matching status wins.
func printableStatus(vm *kubevirtv1.VirtualMachine, vmi *kubevirtv1.VirtualMachineInstance, rs kubevirtv1.VirtualMachineRunStrategy) kubevirtv1.VirtualMachinePrintableStatus {
	if vm.DeletionTimestamp != nil {
		return kubevirtv1.VirtualMachineStatusTerminating
	}
	if vmi == nil {
		if rs == kubevirtv1.RunStrategyAlways {
			return kubevirtv1.VirtualMachineStatusStarting
		}
		return kubevirtv1.VirtualMachineStatusStopped
	}
	final := vmi.IsFinal()
	if !final && (vmi.DeletionTimestamp != nil || rs == kubevirtv1.RunStrategyHalted) {
		return kubevirtv1.VirtualMachineStatusStopping
	}
	if ms := vmi.Status.MigrationState; ms != nil && ms.StartTimestamp != nil && ms.EndTimestamp == nil {
		return kubevirtv1.VirtualMachineStatusMigrating
	}
	if vmi.Status.Phase == kubevirtv1.Running {
		if c := vmiCond(vmi, kubevirtv1.VirtualMachineInstancePaused); c != nil && c.Status == corev1.ConditionTrue {
			return kubevirtv1.VirtualMachineStatusPaused
		}
		return kubevirtv1.VirtualMachineStatusRunning
	}
	sync := vmiCond(vmi, kubevirtv1.VirtualMachineInstanceSynchronized)
	syncReason := ""
	if sync != nil && sync.Status == corev1.ConditionFalse {
		syncReason = sync.Reason
	}
	if syncReason == "FailedPvcNotFound" {
		return kubevirtv1.VirtualMachineStatusPvcNotFound
	}
	if c := vmiCond(vmi, kubevirtv1.VirtualMachineInstanceConditionType(corev1.PodScheduled)); c != nil &&
		c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
		return kubevirtv1.VirtualMachineStatusUnschedulable
	}
	switch syncReason {
	case "ErrImagePull":
		return kubevirtv1.VirtualMachineStatusErrImagePull
	case "ImagePullBackOff":
		return kubevirtv1.VirtualMachineStatusImagePullBackOff
	}
	if !final {
		return kubevirtv1.VirtualMachineStatusStarting
	}
	return kubevirtv1.VirtualMachineStatusStopped
}

// hostname is the launcher pod's vm.kubevirt.io/name label and hostname:
// the VMI name cut at the first "." and at 63 characters
// (kv:pkg/util/net/dns/sanitize.go).
func hostname(name string) string {
	if i := strings.IndexByte(name, '.'); i >= 0 {
		name = name[:i]
	}
	if len(name) > 63 {
		name = name[:63]
	}
	return name
}

// vmiIDLabel is the vmi.kubevirt.io/id label value: the VMI name, or for
// names over 63 characters its first 54 characters, "-" and 8 hex digits
// of its SHA-1 (kv:pkg/apimachinery/labels.go).
func vmiIDLabel(name string) string {
	if len(name) <= 63 {
		return name
	}
	sum := sha1.Sum([]byte(name))
	return name[:54] + "-" + hex.EncodeToString(sum[:])[:8]
}

// podInterfaceName is the in-pod name of a secondary interface: "pod" and
// the first 11 hex digits of the SHA-256 of the network name
// (kv:pkg/network/namescheme).
func podInterfaceName(network string, primary bool) string {
	if primary {
		return "eth0"
	}
	sum := sha256.Sum256([]byte(network))
	return "pod" + hex.EncodeToString(sum[:])[:11]
}
