package simulator

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/internal/membership"
)

// Info sources of VMI interfaces (kv:pkg/network/vmispec/infosource.go),
// joined with ", ".
const (
	InfoSourceDomain       = "domain"
	InfoSourceGuestAgent   = "guest-agent"
	InfoSourceMultusStatus = "multus-status"
)

// GuestOSInfo is what the guest agent reports and virt-handler copies into
// status.guestOSInfo.
var GuestOSInfo = kubevirtv1.VirtualMachineInstanceGuestOSInfo{
	Name: "Fedora Linux", KernelRelease: "6.11.4-301.fc41.x86_64", Version: "41 (Cloud Edition)",
	PrettyName: "Fedora Linux 41 (Cloud Edition)", VersionID: "41", KernelVersion: "#1 SMP PREEMPT_DYNAMIC Sun Oct 20 15:02:33 UTC 2024",
	Machine: "x86_64", ID: "fedora",
}

// Boot drives the VM's VMI from wherever it stands to Running on node, one
// step at a time: CreateLauncherPod (Pending → Scheduling), StartLauncherPod
// (→ Scheduled), StartDomain (→ Running), and ConnectAgent when the VM was
// created with GuestAgent. The VMI must exist (CreateVM with a running run
// strategy, or Start).
func (s *Simulator) Boot(ctx context.Context, ns, name, node string) error {
	for {
		vmi, err := s.getVMI(ctx, ns, name)
		if err != nil {
			return err
		}
		switch vmi.Status.Phase {
		case "", kubevirtv1.Pending:
			err = s.CreateLauncherPod(ctx, ns, name)
		case kubevirtv1.Scheduling:
			err = s.StartLauncherPod(ctx, ns, name, node)
		case kubevirtv1.Scheduled:
			err = s.StartDomain(ctx, ns, name)
		case kubevirtv1.Running:
			if sp, ok := s.spec(ns, name); ok && sp.GuestAgent && vmiCond(vmi, kubevirtv1.VirtualMachineInstanceAgentConnected) == nil {
				return s.ConnectAgent(ctx, ns, name)
			}
			return nil
		default:
			return fmt.Errorf("Boot: VMI %s/%s is %s", ns, name, vmi.Status.Phase)
		}
		if err != nil {
			return err
		}
	}
}

// CreateLauncherPod is virt-controller's step from Pending to Scheduling: it
// creates the virt-launcher pod (unbound, owned by the VMI, labels
// kubevirt.io=virt-launcher and kubevirt.io/created-by=<VMI UID>, annotation
// kubevirt.io/domain), sets its readiness gate, and moves the VMI to
// Scheduling with the pod in activePods (on node "").
func (s *Simulator) CreateLauncherPod(ctx context.Context, ns, name string) error {
	vmi, err := s.vmiInPhase(ctx, ns, name, "CreateLauncherPod", "", kubevirtv1.Pending)
	if err != nil {
		return err
	}
	if _, err := s.createLauncherPod(ctx, vmi, nil); err != nil {
		return err
	}
	return s.syncPods(ctx, vmi, kubevirtv1.Scheduling)
}

// pendingLauncher returns the VMI's newest pod that is not bound to a node.
func (s *Simulator) pendingLauncher(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance) (*corev1.Pod, error) {
	pods, err := s.LauncherPods(ctx, vmi)
	if err != nil {
		return nil, err
	}
	for i := len(pods) - 1; i >= 0; i-- {
		if pods[i].Spec.NodeName == "" && pods[i].DeletionTimestamp == nil && !podDone(&pods[i]) {
			return &pods[i], nil
		}
	}
	return nil, fmt.Errorf("VMI %s/%s has no unscheduled launcher pod", vmi.Namespace, vmi.Name)
}

// StartLauncherPod takes the VMI from Scheduling to Scheduled on node:
// kube-scheduler binds the launcher pod (PodScheduled=True), Multus writes
// its k8s.v1.cni.cncf.io/network-status, the kubelet runs it (Running,
// Ready), and virt-controller hands the VMI to virt-handler: phase
// Scheduled, status.nodeName and the kubevirt.io/nodeName label,
// activePods, qosClass, launcher image, and the Multus interfaces (info
// source multus-status); the pod gets the kubevirt.io/nodeName label too.
func (s *Simulator) StartLauncherPod(ctx context.Context, ns, name, node string) error {
	vmi, err := s.vmiInPhase(ctx, ns, name, "StartLauncherPod", kubevirtv1.Scheduling)
	if err != nil {
		return err
	}
	pod, err := s.pendingLauncher(ctx, vmi)
	if err != nil {
		return err
	}
	if err := s.bindPod(ctx, pod, node); err != nil {
		return err
	}
	return s.runLauncher(ctx, vmi, pod, node)
}

// runLauncher is the launcher pod bound to node starting: Multus wires it,
// the kubelet runs it, and virt-controller hands the VMI to virt-handler
// (StartLauncherPod's steps after the binding).
func (s *Simulator) runLauncher(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, pod *corev1.Pod, node string) error {
	ns, name := vmi.Namespace, vmi.Name
	podIP, hostIP, err := s.wirePod(ctx, ns, pod.Name, node, vmi)
	if err != nil {
		return err
	}
	pod, err = s.runPod(ctx, ns, pod.Name, podIP, hostIP)
	if err != nil {
		return err
	}
	pods, err := s.LauncherPods(ctx, vmi)
	if err != nil {
		return err
	}
	now := s.now()
	if _, err := s.updateVMI(ctx, ns, name, managerVirtController, func(vmi *kubevirtv1.VirtualMachineInstance) error {
		s.handToHandler(vmi, pod, pods, node, now)
		return nil
	}); err != nil {
		return err
	}
	if _, err := s.updatePod(ctx, ns, pod.Name, managerVirtController, func(p *corev1.Pod) error {
		setLabel(p, kubevirtv1.NodeNameLabel, node)
		return nil
	}); err != nil {
		return err
	}
	return s.syncVM(ctx, ns, name)
}

// handToHandler is virt-controller's write that hands the VMI to
// virt-handler once its launcher pod runs on node: phase Scheduled,
// status.nodeName and the kubevirt.io/nodeName label, activePods, Ready from
// the pod, qosClass, launcher image, and the Multus interfaces.
func (s *Simulator) handToHandler(vmi *kubevirtv1.VirtualMachineInstance, pod *corev1.Pod, pods []corev1.Pod, node string, now metav1.Time) {
	setVMIPhase(vmi, kubevirtv1.Scheduled, now)
	vmi.Status.NodeName = node
	setLabel(vmi, kubevirtv1.NodeNameLabel, node)
	syncActivePods(vmi, pods)
	removeVMICond(vmi, kubevirtv1.VirtualMachineInstanceConditionType(corev1.PodScheduled))
	removeVMICond(vmi, kubevirtv1.VirtualMachineInstanceSynchronized)
	syncReady(vmi, pod, now)
	vmi.Status.QOSClass = ptr.To(pod.Status.QOSClass)
	if *vmi.Status.QOSClass == "" {
		vmi.Status.QOSClass = ptr.To(corev1.PodQOSBurstable)
	}
	vmi.Status.LauncherContainerImageVersion = s.LauncherImage
	vmi.Status.MigrationTransport = kubevirtv1.MigrationTransportUnix
	vmi.Status.RuntimeUser = 107
	vmi.Status.Interfaces = mergeInterfaces(vmi, pod, false, false)
}

// StartDomain is virt-handler starting the domain: phase Running with the
// LiveMigratable and StorageLiveMigratable conditions it computes, the
// domain's interfaces (info source "domain", the pod IP on the primary
// one), machine type, CPU topology, memory and volume targets; then
// virt-controller copies the pod's Ready=True into the VMI.
func (s *Simulator) StartDomain(ctx context.Context, ns, name string) error {
	vmi, pod, err := s.vmiAndLauncher(ctx, ns, name, "StartDomain", kubevirtv1.Scheduled)
	if err != nil {
		return err
	}
	if pod == nil {
		return fmt.Errorf("StartDomain: VMI %s/%s has no launcher pod on %s", ns, name, vmi.Status.NodeName)
	}
	shared, err := s.sharedClaims(ctx, vmi)
	if err != nil {
		return err
	}
	now := s.now()
	if _, err := s.updateVMI(ctx, ns, name, managerVirtHandler, func(vmi *kubevirtv1.VirtualMachineInstance) error {
		domainStarted(vmi, shared, now)
		vmi.Status.Interfaces = mergeInterfaces(vmi, pod, true, false)
		return nil
	}); err != nil {
		return err
	}
	return s.controllerSync(ctx, ns, name)
}

// domainStarted is what virt-handler writes into the VMI when the domain
// starts, but for the interfaces (mergeInterfaces): phase Running, the
// LiveMigratable and StorageLiveMigratable conditions, machine type, CPU
// topology, memory, migration method, SELinux context and volume targets.
// shared holds the claims that are ReadWriteMany.
func domainStarted(vmi *kubevirtv1.VirtualMachineInstance, shared map[string]bool, now metav1.Time) {
	setVMIPhase(vmi, kubevirtv1.Running, now)
	for _, c := range migratableConditions(vmi, shared) {
		setVMICond(vmi, c, now)
	}
	vmi.Status.Machine = &kubevirtv1.Machine{Type: "pc-q35-rhel9.6.0"}
	vmi.Status.CurrentCPUTopology = &kubevirtv1.CPUTopology{Cores: 1, Sockets: 1, Threads: 1}
	if g := vmi.Spec.Domain.Memory; g != nil && g.Guest != nil {
		vmi.Status.Memory = &kubevirtv1.MemoryStatus{GuestAtBoot: g.Guest, GuestCurrent: g.Guest, GuestRequested: g.Guest}
	}
	vmi.Status.MigrationMethod = kubevirtv1.LiveMigration
	for _, v := range vmi.Spec.Volumes {
		if v.ContainerDisk != nil {
			vmi.Status.MigrationMethod = kubevirtv1.BlockMigration
		}
	}
	vmi.Status.SelinuxContext = "none"
	vmi.Status.VolumeStatus = volumeStatus(vmi, shared)
}

// sharedClaims are the VMI's claims (PersistentVolumeClaim and DataVolume
// volumes) that exist and are ReadWriteMany, which live migration needs
// (kv:pkg/virt-handler/vm.go); a claim not found counts as not shared.
func (s *Simulator) sharedClaims(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance) (map[string]bool, error) {
	shared := map[string]bool{}
	for _, v := range vmi.Spec.Volumes {
		claim := volumeClaim(v)
		if claim == "" {
			continue
		}
		pvc := &corev1.PersistentVolumeClaim{}
		err := s.Client.Get(ctx, key(vmi.Namespace, claim), pvc)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading PersistentVolumeClaim %s/%s: %w", vmi.Namespace, claim, err)
		}
		shared[claim] = slices.Contains(pvc.Spec.AccessModes, corev1.ReadWriteMany)
	}
	return shared, nil
}

// volumeClaim is the claim a PersistentVolumeClaim or DataVolume volume
// mounts, else "".
func volumeClaim(v kubevirtv1.Volume) string {
	switch {
	case v.PersistentVolumeClaim != nil:
		return v.PersistentVolumeClaim.ClaimName
	case v.DataVolume != nil:
		return v.DataVolume.Name
	}
	return ""
}

// ConnectAgent is the guest agent connecting: virt-handler adds
// AgentConnected=True, copies guestOSInfo and adds the agent's data to the
// interfaces (in-guest names, info source "domain, guest-agent"). The
// masquerade interface keeps the pod IP, as KubeVirt keeps an address
// family the status already has.
func (s *Simulator) ConnectAgent(ctx context.Context, ns, name string) error {
	return s.connectAgent(ctx, ns, name, "ConnectAgent", true)
}

// connectAgent is ConnectAgent; without ips the agent reports no IPv4 and
// virt-handler clears the primary interface's address
// (ConnectAgentWithoutIP).
func (s *Simulator) connectAgent(ctx context.Context, ns, name, step string, ips bool) error {
	_, pod, err := s.vmiAndLauncher(ctx, ns, name, step, kubevirtv1.Running)
	if err != nil {
		return err
	}
	now := s.now()
	if _, err := s.updateVMI(ctx, ns, name, managerVirtHandler, func(vmi *kubevirtv1.VirtualMachineInstance) error {
		setVMICond(vmi, kubevirtv1.VirtualMachineInstanceCondition{
			Type: kubevirtv1.VirtualMachineInstanceAgentConnected, Status: corev1.ConditionTrue,
			LastProbeTime: now, LastTransitionTime: now,
		}, now)
		if vmi.Status.GuestOSInfo.Name != GuestOSInfo.Name {
			vmi.Status.GuestOSInfo = GuestOSInfo
		}
		vmi.Status.Interfaces = mergeInterfaces(vmi, pod, true, true)
		if !ips && len(vmi.Status.Interfaces) > 0 {
			vmi.Status.Interfaces[0].IP, vmi.Status.Interfaces[0].IPs = "", nil
		}
		return nil
	}); err != nil {
		return err
	}
	return s.syncVM(ctx, ns, name)
}

// DisconnectAgent is the guest agent going away: virt-handler removes
// AgentConnected (it is never set False) and the agent's interface data;
// guestOSInfo stays, as KubeVirt never clears it.
func (s *Simulator) DisconnectAgent(ctx context.Context, ns, name string) error {
	_, pod, err := s.vmiAndLauncher(ctx, ns, name, "DisconnectAgent")
	if err != nil {
		return err
	}
	if _, err := s.updateVMI(ctx, ns, name, managerVirtHandler, func(vmi *kubevirtv1.VirtualMachineInstance) error {
		removeVMICond(vmi, kubevirtv1.VirtualMachineInstanceAgentConnected)
		vmi.Status.Interfaces = mergeInterfaces(vmi, pod, vmi.Status.Phase == kubevirtv1.Running, false)
		return nil
	}); err != nil {
		return err
	}
	return s.syncVM(ctx, ns, name)
}

// mergeInterfaces computes status.interfaces the way virt-handler's netstat
// and virt-controller's Multus sync combine them: domain interfaces (when
// the domain runs) carry the spec MAC and, for the pod network, the pod IP;
// guest-agent data adds the in-guest name; Multus adds its IPs and
// "multus-status". The primary interface comes first.
func mergeInterfaces(vmi *kubevirtv1.VirtualMachineInstance, pod *corev1.Pod, domain, agent bool) []kubevirtv1.VirtualMachineInstanceNetworkInterface {
	multus := map[string]NetworkStatus{}
	var podIPs []string
	if pod != nil {
		var st []NetworkStatus
		if raw := pod.Annotations[membership.NetworkStatusAnnotation]; raw != "" {
			_ = json.Unmarshal([]byte(raw), &st)
		}
		for _, n := range st {
			multus[n.Interface] = n
		}
		for _, ip := range pod.Status.PodIPs {
			podIPs = append(podIPs, ip.IP)
		}
	}
	var out []kubevirtv1.VirtualMachineInstanceNetworkInterface
	for i, iface := range vmi.Spec.Domain.Devices.Interfaces {
		var net *kubevirtv1.Network
		for j := range vmi.Spec.Networks {
			if vmi.Spec.Networks[j].Name == iface.Name {
				net = &vmi.Spec.Networks[j]
			}
		}
		primary := net != nil && net.Pod != nil
		podIface := podInterfaceName(iface.Name, primary)
		st := kubevirtv1.VirtualMachineInstanceNetworkInterface{Name: iface.Name, PodInterfaceName: podIface}
		var sources []string
		if domain {
			sources = append(sources, InfoSourceDomain)
			st.MAC = iface.MacAddress
			st.QueueCount = 1
			st.LinkState = "up"
			if primary {
				st.IPs = append([]string(nil), podIPs...)
			}
		}
		if agent && domain {
			sources = append(sources, InfoSourceGuestAgent)
			st.InterfaceName = fmt.Sprintf("eth%d", i)
		}
		if n, ok := multus[podIface]; ok && !primary {
			sources = append(sources, InfoSourceMultusStatus)
			st.IPs = append([]string(nil), n.IPs...)
			if st.MAC == "" {
				st.MAC = n.MAC
			}
		}
		if len(sources) == 0 {
			continue
		}
		st.InfoSource = joinSources(sources)
		if len(st.IPs) > 0 {
			st.IP = st.IPs[0]
		}
		out = append(out, st)
	}
	return out
}

func joinSources(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ", "
		}
		out += x
	}
	return out
}

// migratableConditions is virt-handler's LiveMigratable and
// StorageLiveMigratable for the VMI's spec (kv:pkg/virt-handler/vm.go):
// LiveMigratable carries the first blocker, StorageLiveMigratable all that
// apply to it.
func migratableConditions(vmi *kubevirtv1.VirtualMachineInstance, shared map[string]bool) []kubevirtv1.VirtualMachineInstanceCondition {
	type blocker struct{ reason, msg string }
	var live, storage []blocker
	if len(vmi.Spec.Domain.Devices.HostDevices) > 0 || len(vmi.Spec.Domain.Devices.GPUs) > 0 {
		b := blocker{kubevirtv1.VirtualMachineInstanceReasonHostDeviceNotMigratable, "VMI uses a PCI host devices"}
		live = append(live, b)
		storage = append(storage, b)
	}
	for _, v := range vmi.Spec.Volumes {
		if claim := volumeClaim(v); claim != "" && !shared[claim] {
			live = append(live, blocker{kubevirtv1.VirtualMachineInstanceReasonDisksNotMigratable,
				fmt.Sprintf("cannot migrate VMI: PVC %s is not shared, live migration requires that all PVCs must be shared (using ReadWriteMany access mode)", claim)})
			break
		}
	}
	lm := kubevirtv1.VirtualMachineInstanceCondition{Type: kubevirtv1.VirtualMachineInstanceIsMigratable, Status: corev1.ConditionTrue}
	if len(live) > 0 {
		lm.Status, lm.Reason, lm.Message = corev1.ConditionFalse, live[0].reason, live[0].msg
	}
	sm := kubevirtv1.VirtualMachineInstanceCondition{Type: kubevirtv1.VirtualMachineInstanceIsStorageLiveMigratable, Status: corev1.ConditionTrue}
	if len(storage) > 0 {
		msg := ""
		for i, b := range storage {
			if i > 0 {
				msg += ", "
			}
			msg += b.reason + ": " + b.msg
		}
		sm.Status, sm.Reason, sm.Message = corev1.ConditionFalse, kubevirtv1.VirtualMachineInstanceReasonNotMigratable, msg
	}
	return []kubevirtv1.VirtualMachineInstanceCondition{lm, sm}
}

// volumeStatus is status.volumeStatus once the domain runs: one entry per
// volume with its disk target; PVCs carry their claim info (ReadWriteMany
// when shared, else ReadWriteOnce).
func volumeStatus(vmi *kubevirtv1.VirtualMachineInstance, shared map[string]bool) []kubevirtv1.VolumeStatus {
	var out []kubevirtv1.VolumeStatus
	for i, v := range vmi.Spec.Volumes {
		vs := kubevirtv1.VolumeStatus{Name: v.Name, Target: fmt.Sprintf("vd%c", 'a'+i)}
		if claim := volumeClaim(v); claim != "" {
			size := resource.MustParse("30Gi")
			vs.PersistentVolumeClaimInfo = &kubevirtv1.PersistentVolumeClaimInfo{
				ClaimName:   claim,
				AccessModes: []corev1.PersistentVolumeAccessMode{accessMode(shared[claim])},
				VolumeMode:  ptr.To(corev1.PersistentVolumeFilesystem),
				Capacity:    corev1.ResourceList{corev1.ResourceStorage: size},
				Requests:    corev1.ResourceList{corev1.ResourceStorage: size},
			}
		}
		if v.ContainerDisk != nil {
			vs.ContainerDiskVolume = &kubevirtv1.ContainerDiskInfo{Checksum: 1867493052}
		}
		out = append(out, vs)
	}
	return out
}

func accessMode(shared bool) corev1.PersistentVolumeAccessMode {
	if shared {
		return corev1.ReadWriteMany
	}
	return corev1.ReadWriteOnce
}
