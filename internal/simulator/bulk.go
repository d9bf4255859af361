package simulator

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// BulkOptions tune CreateRunningVMs.
type BulkOptions struct {
	// Workers is the number of VMs created in parallel; 0 means 8.
	Workers int
	// Node names the node the i-th spec runs on. It is required.
	Node func(i int) string
	// Progress, when set, is called after each VM with the number done.
	// It may be called from several goroutines.
	Progress func(done int)
	// BootWarnings records, for each DataVolume VM, the BootWarnings
	// Warning Events its first start left behind (bootWarnings).
	BootWarnings bool
}

// CreateRunningVMs populates a cluster at scale: it creates each VM of
// specs already booted on its node, in the state CreateVM followed by Boot
// leaves it: the VM with its finalizer and a Running status; the VMI Running
// with phase transition timestamps, Ready, LiveMigratable and
// StorageLiveMigratable conditions, activePods, interfaces (and, with
// GuestAgent, AgentConnected and guestOSInfo); the launcher pod created,
// bound, wired by Multus (network-status annotation) and Running. Every
// write is made by the component that makes it in a real cluster, so
// managedFields carry the same managers as after Boot.
//
// It costs about a third of the requests of CreateVM and Boot: the VM and
// VMI writes go through the objects just written instead of re-reading
// them, and virt-controller's and virt-handler's VMI updates between
// Pending and Running are one update per component and step. The launcher
// pod goes through the same steps as in Boot. Timestamps come from the
// Clock; specs' namespaces and nodes must exist. The first error stops the
// remaining work and is returned.
func (s *Simulator) CreateRunningVMs(ctx context.Context, specs []VMSpec, opts BulkOptions) error {
	if opts.Node == nil {
		return fmt.Errorf("CreateRunningVMs: BulkOptions.Node is required")
	}
	workers := opts.Workers
	if workers <= 0 {
		workers = 8
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		next, done atomic.Int64
		errOnce    sync.Once
		firstErr   error
		wg         sync.WaitGroup
	)
	for range min(workers, len(specs)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(specs) || ctx.Err() != nil {
					return
				}
				if err := s.createRunning(ctx, specs[i], opts.Node(i), opts.BootWarnings); err != nil {
					errOnce.Do(func() { firstErr = err; cancel() })
					return
				}
				if n := done.Add(1); opts.Progress != nil {
					opts.Progress(int(n))
				}
			}
		})
	}
	wg.Wait()
	return firstErr
}

// createRunning writes one VM, its VMI and its launcher pod on node, ending
// where Boot ends; a DataVolume VM's storage first (bulkDataVolume), and
// with warnings its boot's Warning Events last.
func (s *Simulator) createRunning(ctx context.Context, sp VMSpec, node string, warnings bool) error {
	if sp.Name == "" || sp.Namespace == "" {
		return fmt.Errorf("CreateRunningVMs: name and namespace are required")
	}
	if node == "" {
		return fmt.Errorf("CreateRunningVMs: no node for %s/%s", sp.Namespace, sp.Name)
	}
	s.rememberSpec(sp)
	ns, name := sp.Namespace, sp.Name
	labels := map[string]string{"kubevirt.io/domain": name}
	for k, v := range sp.Labels {
		labels[k] = v
	}
	vmiSpec := s.vmiSpec(sp)
	now := s.now()

	// The VM, as a user creates it, then virt-controller's first pass
	// (CreateVM), written on the object just created.
	vmi := &kubevirtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec:       vmiSpec,
	}
	vmiCreator := managerUser
	var (
		pvc *corev1.PersistentVolumeClaim
		dv  *cdiv1.DataVolume
	)
	if !sp.Standalone {
		vm := &kubevirtv1.VirtualMachine{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: kubevirtv1.VirtualMachineSpec{
				RunStrategy: ptr.To(sp.runStrategy()),
				Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec:       *vmiSpec.DeepCopy(),
				},
			},
		}
		if sp.DataVolume {
			vm.Spec.DataVolumeTemplates = []kubevirtv1.DataVolumeTemplateSpec{dataVolumeTemplate(sp)}
		}
		if err := s.Client.Create(ctx, vm, client.FieldOwner(managerUser)); err != nil {
			return fmt.Errorf("creating VM %s/%s: %w", ns, name, err)
		}
		addFinalizer(vm, kubevirtv1.VirtualMachineControllerFinalizer)
		setAnnotation(vm, kubevirtv1.ControllerAPILatestVersionObservedAnnotation, "v1")
		setAnnotation(vm, kubevirtv1.ControllerAPIStorageVersionObservedAnnotation, "v1")
		if err := s.Client.Update(ctx, vm, client.FieldOwner(managerVirtController)); err != nil {
			return fmt.Errorf("updating VM %s/%s as %s: %w", ns, name, managerVirtController, err)
		}
		var err error
		if pvc, dv, err = s.bulkDataVolume(ctx, vm, node); err != nil {
			return err
		}
		// virt-controller creates the VMI from the template and accepts it
		// (createVMIFromVM, acceptVMI).
		vmiCreator = managerVirtController
		vmi.Annotations = map[string]string{
			kubevirtv1.ControllerAPILatestVersionObservedAnnotation:  "v1",
			kubevirtv1.ControllerAPIStorageVersionObservedAnnotation: "v1",
			kubevirtv1.VirtualMachineGenerationAnnotation:            fmt.Sprint(vm.Generation),
		}
		vmi.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: kubevirtv1.SchemeGroupVersion.String(), Kind: "VirtualMachine",
			Name: vm.Name, UID: vm.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
		}}
		vmi.Finalizers = []string{kubevirtv1.VirtualMachineControllerFinalizer, kubevirtv1.VirtualMachineInstanceFinalizer}
		vmi.Status.VirtualMachineRevisionName = fmt.Sprintf("revision-start-vm-%s-%d", vm.UID, vm.Generation)
		setVMIPhase(vmi, kubevirtv1.Pending, now)
		setVMICond(vmi, kubevirtv1.VirtualMachineInstanceCondition{
			Type: kubevirtv1.VirtualMachineInstanceReady, Status: corev1.ConditionFalse,
			Reason: kubevirtv1.PodNotExistsReason, Message: "virt-launcher pod has not yet been scheduled",
		}, now)
	}
	if err := s.Client.Create(ctx, vmi, client.FieldOwner(vmiCreator)); err != nil {
		return fmt.Errorf("creating VMI %s/%s: %w", ns, name, err)
	}

	// The launcher pod, through the same steps as in Boot: virt-controller
	// creates it, kube-scheduler binds it, Multus wires it, the kubelet
	// runs it.
	pod, err := s.createLauncherPod(ctx, vmi, nil)
	if err != nil {
		return err
	}
	podIP, hostIP, err := s.placePod(ctx, pod, node, vmi)
	if err != nil {
		return err
	}
	if _, err := s.runPod(ctx, ns, pod.Name, podIP, hostIP); err != nil {
		return err
	}
	pod, err = s.updatePod(ctx, ns, pod.Name, managerVirtController, func(p *corev1.Pod) error {
		setLabel(p, kubevirtv1.NodeNameLabel, node)
		return nil
	})
	if err != nil {
		return err
	}
	pods := []corev1.Pod{*pod}

	// virt-controller: Scheduling and Scheduled (CreateLauncherPod,
	// StartLauncherPod), in one update.
	addFinalizer(vmi, kubevirtv1.VirtualMachineInstanceFinalizer)
	setVMIPhase(vmi, kubevirtv1.Pending, now)
	setVMIPhase(vmi, kubevirtv1.Scheduling, now)
	s.handToHandler(vmi, pod, pods, node, now)
	if err := s.Client.Update(ctx, vmi, client.FieldOwner(managerVirtController)); err != nil {
		return fmt.Errorf("updating VMI %s/%s as %s: %w", ns, name, managerVirtController, err)
	}

	// virt-handler: the domain runs (StartDomain) and, with a guest agent,
	// the agent connects (ConnectAgent).
	var shared map[string]bool
	if pvc != nil {
		shared = map[string]bool{pvc.Name: slices.Contains(pvc.Spec.AccessModes, corev1.ReadWriteMany)}
	}
	domainStarted(vmi, shared, now)
	if sp.GuestAgent {
		setVMICond(vmi, kubevirtv1.VirtualMachineInstanceCondition{
			Type: kubevirtv1.VirtualMachineInstanceAgentConnected, Status: corev1.ConditionTrue,
			LastProbeTime: now, LastTransitionTime: now,
		}, now)
		vmi.Status.GuestOSInfo = GuestOSInfo
	}
	vmi.Status.Interfaces = mergeInterfaces(vmi, pod, true, sp.GuestAgent)
	if err := s.Client.Update(ctx, vmi, client.FieldOwner(managerVirtHandler)); err != nil {
		return fmt.Errorf("updating VMI %s/%s as %s: %w", ns, name, managerVirtHandler, err)
	}

	// virt-controller copies the pod's Ready=True (controllerSync), and
	// the VM's status follows.
	syncActivePods(vmi, pods)
	syncReady(vmi, pod, now)
	if err := s.Client.Update(ctx, vmi, client.FieldOwner(managerVirtController)); err != nil {
		return fmt.Errorf("updating VMI %s/%s as %s: %w", ns, name, managerVirtController, err)
	}
	if err := s.syncVM(ctx, ns, name); err != nil {
		return err
	}
	if warnings && pvc != nil {
		return s.bootWarnings(ctx, vmi, pod, pvc, dv, now.Time)
	}
	return nil
}
