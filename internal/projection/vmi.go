package projection

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

var vmiAnnotations = []string{kubevirtv1.AllowPodBridgeNetworkLiveMigrationAnnotation}

// VMI is a VirtualMachineInstance as the engine reads it. Of the spec: the
// interfaces' binding methods, the networks, how many host devices and
// GPUs, whether there is a readiness probe, the eviction strategy, the
// termination grace period, the guest memory and the vCPU topology. Of the
// status: what the engine reads, the migration state trimmed to its own
// fields.
type VMI struct {
	Meta
	// Rare holds what few VMIs have; nil when a VMI has none of it.
	Rare       *VMIRare
	Interfaces []SpecInterface
	Networks   []Network
	Probe      bool
	// GraceSet tells a TerminationGracePeriodSeconds of 0 from none.
	GraceSet bool
	Grace    int64
	Eviction optSym

	Phase, Reason, NodeName Sym
	Conditions              []VMICond
	PhaseTransitions        []PhaseTime
	ActivePods              []ActivePod
	Status                  []Interface
	// GuestOSInfo is shared by every VMI with the same guest OS; nil when
	// empty.
	GuestOSInfo  *kubevirtv1.VirtualMachineInstanceGuestOSInfo
	VolumeStatus []VolumeState
	// Volumes are spec.volumes backed by a claim (the storage layer's).
	Volumes []ClaimVolume

	// QOSClass and FSFreezeStatus take a few values fleet-wide.
	QOSClass, FSFreezeStatus Sym
	// SELinuxContext is not interned: container runtimes give pods
	// categories of their own, so the value rarely repeats.
	SELinuxContext string
	// Resources is shared by every VMI with the same memory and vCPUs; nil
	// when the VMI says nothing of either.
	Resources *Resources
}

// VMIRare is what few VMIs have: their fields cost every VMI's projection
// 112 bytes in place, a pointer here.
type VMIRare struct {
	// Owners are kept only when sharded: a VMI no VM controls is sharded
	// by its own labels.
	Owners             Owners
	EvacuationNodeName Sym
	// MigrationState: a VMI that never migrated has none.
	MigrationState  *kubevirtv1.VirtualMachineInstanceMigrationState
	MigratedVolumes []kubevirtv1.StorageMigratedVolumeInfo
	// Backup is status.changedBlockTracking.backupStatus without its
	// volumes and checkpoint: the name, times and outcome.
	Backup      *kubevirtv1.VirtualMachineInstanceBackupStatus
	HostDevices uint8 // saturates: the engine asks for > 0
	GPUs        uint8 // saturates: the engine asks for > 1
	// Finalizers are kept while the VMI is being deleted: the engine
	// cites what holds a deletion that outlives its grace.
	Finalizers []string
}

// Resources is what the status shows of a VMI's memory and vCPUs: the
// guest memory of the spec and of status.memory as quantity strings (empty
// when absent), and the vCPU topology of spec.domain.cpu and of
// status.currentCPUTopology.
type Resources struct {
	Guest, GuestAtBoot, GuestRequested, GuestCurrent Sym
	CPU, CurrentCPU                                  Topology
	// MaxGuest and MaxSockets say whether KubeVirt hotplugs memory and
	// vCPUs into the VMI at all (the engine asks MaxGuest != nil and
	// MaxSockets != 0).
	MaxGuest   Sym
	MaxSockets uint32
}

// Topology is a vCPU topology; Set tells a zero topology from none.
type Topology struct {
	Set                     bool
	Sockets, Cores, Threads uint32
}

var resources table[Resources]

// SpecInterface is a spec interface: its name and binding methods.
type SpecInterface struct {
	Name    Sym
	Plugin  optSym // binding.name, set when a binding plugin is used
	Binding uint8  // a bit per binding method set
}

// Binding method bits.
const (
	bindBridge uint8 = 1 << iota
	bindSlirp
	bindMasquerade
	bindSRIOV
	bindMacvtap
	// bindPasst is core passtBinding (v1.8+); the passt field KubeVirt
	// discontinued in v1.3 is not kept (the engine does not read it).
	bindPasst
)

// Network is a spec network; the pod and Multus sources are shared by
// every VMI that declares the same.
type Network struct {
	Name   Sym
	Pod    *kubevirtv1.PodNetwork
	Multus *kubevirtv1.MultusNetwork
}

var (
	podNetworks    table[kubevirtv1.PodNetwork]
	multusNetworks table[kubevirtv1.MultusNetwork]
	guestOSInfos   table[kubevirtv1.VirtualMachineInstanceGuestOSInfo]
)

// PhaseTime is a status.phaseTransitionTimestamps entry.
type PhaseTime struct {
	Phase Sym
	At    Time
}

// ActivePod is a status.activePods entry.
type ActivePod struct {
	UID  UID
	Node Sym
}

// Interface is a status interface.
type Interface struct {
	Name Sym
	IP   string
	// IPs is nil when it is exactly [IP] (or empty with no IP), as
	// virt-handler writes it for a single address.
	IPs                                     *[]string
	MAC                                     MAC
	InterfaceName, InfoSource, PodInterface Sym
	LinkState                               Sym
}

func specInterface(s *kubevirtv1.Interface) SpecInterface {
	o := SpecInterface{Name: Intern(s.Name)}
	if s.Binding != nil {
		o.Plugin = some(s.Binding.Name)
	}
	for _, b := range [...]struct {
		set bool
		bit uint8
	}{
		{s.Bridge != nil, bindBridge}, {s.DeprecatedSlirp != nil, bindSlirp}, {s.Masquerade != nil, bindMasquerade},
		{s.SRIOV != nil, bindSRIOV}, {s.DeprecatedMacvtap != nil, bindMacvtap}, {s.PasstBinding != nil, bindPasst},
	} {
		if b.set {
			o.Binding |= b.bit
		}
	}
	return o
}

func (s *SpecInterface) spec() kubevirtv1.Interface {
	out := kubevirtv1.Interface{Name: s.Name.String()}
	if s.Plugin.set() {
		out.Binding = &kubevirtv1.PluginBinding{Name: s.Plugin.s.String()}
	}
	m := &out.InterfaceBindingMethod
	if s.Binding&bindBridge != 0 {
		m.Bridge = &kubevirtv1.InterfaceBridge{}
	}
	if s.Binding&bindSlirp != 0 {
		m.DeprecatedSlirp = &kubevirtv1.DeprecatedInterfaceSlirp{}
	}
	if s.Binding&bindMasquerade != 0 {
		m.Masquerade = &kubevirtv1.InterfaceMasquerade{}
	}
	if s.Binding&bindSRIOV != 0 {
		m.SRIOV = &kubevirtv1.InterfaceSRIOV{}
	}
	if s.Binding&bindMacvtap != 0 {
		m.DeprecatedMacvtap = &kubevirtv1.DeprecatedInterfaceMacvtap{}
	}
	if s.Binding&bindPasst != 0 {
		m.PasstBinding = &kubevirtv1.InterfacePasstBinding{}
	}
	return out
}

func network(n *kubevirtv1.Network) Network {
	out := Network{Name: Intern(n.Name)}
	if n.Pod != nil {
		out.Pod = podNetworks.intern(*n.Pod)
	}
	if n.Multus != nil {
		out.Multus = multusNetworks.intern(*n.Multus)
	}
	return out
}

func iface(s *kubevirtv1.VirtualMachineInstanceNetworkInterface) Interface {
	out := Interface{
		Name: Intern(s.Name), IP: s.IP, MAC: macOf(s.MAC), InterfaceName: Intern(s.InterfaceName),
		InfoSource: Intern(s.InfoSource), PodInterface: Intern(s.PodInterfaceName), LinkState: Intern(s.LinkState),
	}
	if same := len(s.IPs) == 1 && s.IPs[0] == s.IP; !same && (len(s.IPs) > 0 || s.IP != "") {
		ips := clone(s.IPs)
		out.IPs = &ips
	}
	return out
}

func (s *Interface) status() kubevirtv1.VirtualMachineInstanceNetworkInterface {
	out := kubevirtv1.VirtualMachineInstanceNetworkInterface{
		Name: s.Name.String(), IP: s.IP, MAC: s.MAC.String(), InterfaceName: s.InterfaceName.String(),
		InfoSource: s.InfoSource.String(), PodInterfaceName: s.PodInterface.String(), LinkState: s.LinkState.String(),
	}
	switch {
	case s.IPs != nil:
		out.IPs = *s.IPs
	case s.IP != "":
		out.IPs = []string{s.IP}
	}
	return out
}

// migrationState keeps what the engine reads of a migration state: its
// identity, nodes, pods, times and outcome.
func migrationState(s *kubevirtv1.VirtualMachineInstanceMigrationState) *kubevirtv1.VirtualMachineInstanceMigrationState {
	if s == nil {
		return nil
	}
	return &kubevirtv1.VirtualMachineInstanceMigrationState{
		StartTimestamp: s.StartTimestamp, EndTimestamp: s.EndTimestamp,
		TargetNodeDomainReadyTimestamp: s.TargetNodeDomainReadyTimestamp, TargetNodeDomainDetected: s.TargetNodeDomainDetected,
		TargetNodeAddress: s.TargetNodeAddress, TargetNode: Intern(s.TargetNode).String(), TargetPod: s.TargetPod,
		SourceNode: Intern(s.SourceNode).String(), SourcePod: s.SourcePod,
		Completed: s.Completed, Failed: s.Failed, AbortRequested: s.AbortRequested, AbortStatus: s.AbortStatus,
		FailureReason: s.FailureReason, MigrationUID: s.MigrationUID, Mode: s.Mode,
	}
}

// VolumeState is what is kept of an entry of status.volumeStatus: the
// access modes of a volume backed by a claim (can the disks follow a
// migration), and the phase, reason and message of a hotplug volume (did
// the hotplug fail). A kubevirtv1.VolumeStatus with its claim's info cost
// every VMI 224 bytes a volume; this is 64.
type VolumeState struct {
	Name string
	// Modes are the claim's access modes (internWords).
	Modes         Sym
	Hotplug       bool
	Phase, Reason Sym
	Message       string
}

// volumes keeps the entries with access modes or of a hotplug volume.
func volumes(in []kubevirtv1.VolumeStatus) []VolumeState {
	n := 0
	for i := range in {
		if keepVolume(&in[i]) {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	out := make([]VolumeState, 0, n)
	for i := range in {
		v := &in[i]
		if !keepVolume(v) {
			continue
		}
		k := VolumeState{Name: v.Name}
		if c := v.PersistentVolumeClaimInfo; c != nil && len(c.AccessModes) > 0 {
			k.Modes = internWords(c.AccessModes)
		}
		if v.HotplugVolume != nil {
			k.Hotplug = true
			k.Phase, k.Reason, k.Message = Intern(string(v.Phase)), Intern(v.Reason), v.Message
		}
		out = append(out, k)
	}
	return out
}

func keepVolume(v *kubevirtv1.VolumeStatus) bool {
	c := v.PersistentVolumeClaimInfo
	return (c != nil && len(c.AccessModes) > 0) || v.HotplugVolume != nil
}

// toVolumeStatus rebuilds the entries as far as they were kept.
func toVolumeStatus(in []VolumeState) []kubevirtv1.VolumeStatus {
	if in == nil {
		return nil
	}
	out := make([]kubevirtv1.VolumeStatus, len(in))
	for i, k := range in {
		out[i].Name = k.Name
		if modes := splitWords(k.Modes); modes != nil {
			info := &kubevirtv1.PersistentVolumeClaimInfo{}
			for _, mode := range modes {
				info.AccessModes = append(info.AccessModes, corev1.PersistentVolumeAccessMode(mode))
			}
			out[i].PersistentVolumeClaimInfo = info
		}
		if k.Hotplug {
			out[i].HotplugVolume = &kubevirtv1.HotplugVolumeStatus{}
			out[i].Phase, out[i].Reason, out[i].Message = kubevirtv1.VolumePhase(k.Phase.String()), k.Reason.String(), k.Message
		}
	}
	return out
}

// migrated keeps the names of the volumes being migrated, which are exempt
// from the access-mode check.
func migrated(in []kubevirtv1.StorageMigratedVolumeInfo) []kubevirtv1.StorageMigratedVolumeInfo {
	return convert(in, func(v *kubevirtv1.StorageMigratedVolumeInfo) kubevirtv1.StorageMigratedVolumeInfo {
		return kubevirtv1.StorageMigratedVolumeInfo{VolumeName: v.VolumeName}
	})
}

// VMICond is a VMI condition: the engine reads the agent's lastProbeTime.
type VMICond struct {
	Cond
	LastProbe Time
}

func vmiCond(c *kubevirtv1.VirtualMachineInstanceCondition) VMICond {
	return VMICond{Cond: newCond(string(c.Type), string(c.Status), c.Reason, c.Message, metaTime(c.LastTransitionTime)), LastProbe: metaTime(c.LastProbeTime)}
}

func sat(n int) uint8 { return uint8(min(n, 255)) }

// resourcesOf keeps the guest memory and the vCPU topologies; nil when the
// VMI has none of them.
func resourcesOf(spec *kubevirtv1.VirtualMachineInstanceSpec, st *kubevirtv1.VirtualMachineInstanceStatus) *Resources {
	var r Resources
	qty := func(q *resource.Quantity) Sym {
		if q == nil {
			return Sym{}
		}
		return Intern(q.String())
	}
	if m := spec.Domain.Memory; m != nil {
		r.Guest, r.MaxGuest = qty(m.Guest), qty(m.MaxGuest)
	}
	if m := st.Memory; m != nil {
		r.GuestAtBoot, r.GuestRequested, r.GuestCurrent = qty(m.GuestAtBoot), qty(m.GuestRequested), qty(m.GuestCurrent)
	}
	if c := spec.Domain.CPU; c != nil {
		r.CPU = Topology{Set: true, Sockets: c.Sockets, Cores: c.Cores, Threads: c.Threads}
		r.MaxSockets = c.MaxSockets
	}
	if c := st.CurrentCPUTopology; c != nil {
		r.CurrentCPU = Topology{Set: true, Sockets: c.Sockets, Cores: c.Cores, Threads: c.Threads}
	}
	if r == (Resources{}) {
		return nil
	}
	return resources.intern(r)
}

// quantity parses a kept quantity string; a fresh Quantity each time, since
// its String method caches into it.
func quantity(s Sym) *resource.Quantity {
	if s.String() == "" {
		return nil
	}
	q, err := resource.ParseQuantity(s.String())
	if err != nil {
		return nil
	}
	return &q
}

// apply writes the kept memory and vCPUs into a rebuilt VMI.
func (r *Resources) apply(spec *kubevirtv1.VirtualMachineInstanceSpec, st *kubevirtv1.VirtualMachineInstanceStatus) {
	if r == nil {
		return
	}
	if g, mg := quantity(r.Guest), quantity(r.MaxGuest); g != nil || mg != nil {
		spec.Domain.Memory = &kubevirtv1.Memory{Guest: g, MaxGuest: mg}
	}
	if r.GuestAtBoot.String() != "" || r.GuestRequested.String() != "" || r.GuestCurrent.String() != "" {
		st.Memory = &kubevirtv1.MemoryStatus{
			GuestAtBoot: quantity(r.GuestAtBoot), GuestRequested: quantity(r.GuestRequested), GuestCurrent: quantity(r.GuestCurrent),
		}
	}
	if t := r.CPU; t.Set {
		spec.Domain.CPU = &kubevirtv1.CPU{Sockets: t.Sockets, Cores: t.Cores, Threads: t.Threads, MaxSockets: r.MaxSockets}
	}
	if t := r.CurrentCPU; t.Set {
		st.CurrentCPUTopology = &kubevirtv1.CPUTopology{Sockets: t.Sockets, Cores: t.Cores, Threads: t.Threads}
	}
}

// FromVMI projects a VMI.
func FromVMI(v *kubevirtv1.VirtualMachineInstance) *VMI { return fromVMI(v, Sharding{}) }

func fromVMI(v *kubevirtv1.VirtualMachineInstance, s Sharding) *VMI {
	spec, st := &v.Spec, &v.Status
	out := &VMI{
		Meta:           metaOf(&v.ObjectMeta, s.Labels, vmiAnnotations, nil),
		Interfaces:     convert(spec.Domain.Devices.Interfaces, specInterface),
		Networks:       convert(spec.Networks, network),
		Probe:          spec.ReadinessProbe != nil,
		Eviction:       internPtr(spec.EvictionStrategy),
		Phase:          Intern(string(st.Phase)),
		Reason:         Intern(st.Reason),
		NodeName:       Intern(st.NodeName),
		Conditions:     convert(st.Conditions, vmiCond),
		Status:         convert(st.Interfaces, iface),
		VolumeStatus:   volumes(st.VolumeStatus),
		Volumes:        claimVolumes(spec.Volumes),
		FSFreezeStatus: Intern(st.FSFreezeStatus),
		SELinuxContext: st.SelinuxContext,
		Resources:      resourcesOf(spec, st),
	}
	if q := st.QOSClass; q != nil {
		out.QOSClass = Intern(string(*q))
	}
	rare := VMIRare{
		EvacuationNodeName: Intern(st.EvacuationNodeName),
		MigrationState:     migrationState(st.MigrationState),
		MigratedVolumes:    migrated(st.MigratedVolumes),
		Backup:             backupOf(st.ChangedBlockTracking),
		HostDevices:        sat(len(spec.Domain.Devices.HostDevices)),
		GPUs:               sat(len(spec.Domain.Devices.GPUs)),
	}
	if len(s.Labels) > 0 {
		rare.Owners = ownersOf(v.OwnerReferences, v.Name)
	}
	if v.DeletionTimestamp != nil && len(v.Finalizers) > 0 {
		rare.Finalizers = clone(v.Finalizers)
	}
	if rare.Owners != (Owners{}) || rare.EvacuationNodeName != (Sym{}) || rare.MigrationState != nil || rare.MigratedVolumes != nil ||
		rare.Backup != nil || rare.HostDevices > 0 || rare.GPUs > 0 || rare.Finalizers != nil {
		out.Rare = &rare
	}
	if g := spec.TerminationGracePeriodSeconds; g != nil {
		out.GraceSet, out.Grace = true, *g
	}
	if len(st.PhaseTransitionTimestamps) > 0 {
		out.PhaseTransitions = make([]PhaseTime, len(st.PhaseTransitionTimestamps))
		for i, p := range st.PhaseTransitionTimestamps {
			out.PhaseTransitions[i] = PhaseTime{Phase: Intern(string(p.Phase)), At: metaTime(p.PhaseTransitionTimestamp)}
		}
	}
	if len(st.ActivePods) > 0 {
		out.ActivePods = make([]ActivePod, 0, len(st.ActivePods))
		for uid, node := range st.ActivePods {
			out.ActivePods = append(out.ActivePods, ActivePod{UID: uidOf(uid), Node: Intern(node)})
		}
		// Sorted, so that equal maps project to equal slices.
		slices.SortFunc(out.ActivePods, func(a, b ActivePod) int { return strings.Compare(string(a.UID.UID()), string(b.UID.UID())) })
	}
	if st.GuestOSInfo != (kubevirtv1.VirtualMachineInstanceGuestOSInfo{}) {
		out.GuestOSInfo = guestOSInfos.intern(st.GuestOSInfo)
	}
	return out
}

// ToVMI rebuilds the VMI as far as it was kept. Its network sources and
// guest OS info are shared: the engine does not write into its input.
func (v *VMI) ToVMI() *kubevirtv1.VirtualMachineInstance {
	out := &kubevirtv1.VirtualMachineInstance{ObjectMeta: v.ObjectMeta()}
	spec, st := &out.Spec, &out.Status
	rare := v.rare()
	out.OwnerReferences = rare.Owners.refs(v.Name)
	out.Finalizers = clone(rare.Finalizers)
	if len(v.Interfaces) > 0 {
		spec.Domain.Devices.Interfaces = make([]kubevirtv1.Interface, len(v.Interfaces))
		for i := range v.Interfaces {
			spec.Domain.Devices.Interfaces[i] = v.Interfaces[i].spec()
		}
	}
	if len(v.Networks) > 0 {
		spec.Networks = make([]kubevirtv1.Network, len(v.Networks))
		for i, n := range v.Networks {
			spec.Networks[i] = kubevirtv1.Network{Name: n.Name.String(), NetworkSource: kubevirtv1.NetworkSource{Pod: n.Pod, Multus: n.Multus}}
		}
	}
	if rare.HostDevices > 0 {
		spec.Domain.Devices.HostDevices = make([]kubevirtv1.HostDevice, rare.HostDevices)
	}
	if rare.GPUs > 0 {
		spec.Domain.Devices.GPUs = make([]kubevirtv1.GPU, rare.GPUs)
	}
	if v.Probe {
		spec.ReadinessProbe = &kubevirtv1.Probe{}
	}
	if v.GraceSet {
		g := v.Grace
		spec.TerminationGracePeriodSeconds = &g
	}
	spec.EvictionStrategy = symPtr[kubevirtv1.EvictionStrategy](v.Eviction)

	st.Phase, st.Reason = kubevirtv1.VirtualMachineInstancePhase(v.Phase.String()), v.Reason.String()
	st.NodeName, st.EvacuationNodeName = v.NodeName.String(), rare.EvacuationNodeName.String()
	if len(v.Conditions) > 0 {
		st.Conditions = make([]kubevirtv1.VirtualMachineInstanceCondition, len(v.Conditions))
		for i, c := range v.Conditions {
			st.Conditions[i] = kubevirtv1.VirtualMachineInstanceCondition{
				Type: kubevirtv1.VirtualMachineInstanceConditionType(c.Type()), Status: corev1.ConditionStatus(c.Status()),
				Reason: c.Reason.String(), Message: c.Message(),
				LastTransitionTime: c.LastTransition.Meta(), LastProbeTime: c.LastProbe.Meta(),
			}
		}
	}
	if len(v.PhaseTransitions) > 0 {
		st.PhaseTransitionTimestamps = make([]kubevirtv1.VirtualMachineInstancePhaseTransitionTimestamp, len(v.PhaseTransitions))
		for i, p := range v.PhaseTransitions {
			st.PhaseTransitionTimestamps[i] = kubevirtv1.VirtualMachineInstancePhaseTransitionTimestamp{
				Phase: kubevirtv1.VirtualMachineInstancePhase(p.Phase.String()), PhaseTransitionTimestamp: p.At.Meta(),
			}
		}
	}
	if len(v.ActivePods) > 0 {
		st.ActivePods = make(map[types.UID]string, len(v.ActivePods))
		for _, p := range v.ActivePods {
			st.ActivePods[p.UID.UID()] = p.Node.String()
		}
	}
	if len(v.Status) > 0 {
		st.Interfaces = make([]kubevirtv1.VirtualMachineInstanceNetworkInterface, len(v.Status))
		for i := range v.Status {
			st.Interfaces[i] = v.Status[i].status()
		}
	}
	if v.GuestOSInfo != nil {
		st.GuestOSInfo = *v.GuestOSInfo
	}
	st.MigrationState = rare.MigrationState
	st.VolumeStatus = toVolumeStatus(v.VolumeStatus)
	out.Spec.Volumes = toVolumes(v.Volumes)
	st.MigratedVolumes = rare.MigratedVolumes
	if rare.Backup != nil {
		st.ChangedBlockTracking = &kubevirtv1.ChangedBlockTrackingStatus{BackupStatus: rare.Backup}
	}
	if q := v.QOSClass.String(); q != "" {
		c := corev1.PodQOSClass(q)
		st.QOSClass = &c
	}
	st.FSFreezeStatus, st.SelinuxContext = v.FSFreezeStatus.String(), v.SELinuxContext
	v.Resources.apply(spec, st)
	return out
}

// DeepCopyObject implements runtime.Object.
func (v *VMI) DeepCopyObject() runtime.Object {
	c := *v
	c.Meta = v.Meta.deepCopy()
	if v.Rare != nil {
		r := *v.Rare
		r.Owners = r.Owners.deepCopy()
		r.MigrationState = r.MigrationState.DeepCopy()
		r.MigratedVolumes = clone(r.MigratedVolumes)
		r.Finalizers = clone(r.Finalizers)
		r.Backup = r.Backup.DeepCopy()
		c.Rare = &r
	}
	c.Interfaces = clone(v.Interfaces)
	c.Networks = clone(v.Networks)
	c.Conditions = clone(v.Conditions)
	c.Volumes = clone(v.Volumes)
	c.PhaseTransitions = clone(v.PhaseTransitions)
	c.ActivePods = clone(v.ActivePods)
	c.Status = clone(v.Status)
	for i := range c.Status {
		if ips := c.Status[i].IPs; ips != nil {
			cp := clone(*ips)
			c.Status[i].IPs = &cp
		}
	}
	c.VolumeStatus = clone(v.VolumeStatus)
	return &c
}

// GetOwnerReferences implements metav1.Object.
func (v *VMI) GetOwnerReferences() []metav1.OwnerReference { return v.rare().Owners.refs(v.Name) }

var noRare VMIRare

// rare is Rare, or an empty one.
func (v *VMI) rare() *VMIRare {
	if v.Rare == nil {
		return &noRare
	}
	return v.Rare
}

// backupOf keeps what the engine reads of a VMI's backup.
func backupOf(cbt *kubevirtv1.ChangedBlockTrackingStatus) *kubevirtv1.VirtualMachineInstanceBackupStatus {
	if cbt == nil || cbt.BackupStatus == nil {
		return nil
	}
	b := cbt.BackupStatus
	return &kubevirtv1.VirtualMachineInstanceBackupStatus{
		BackupName: b.BackupName, StartTimestamp: b.StartTimestamp.DeepCopy(), EndTimestamp: b.EndTimestamp.DeepCopy(),
		Completed: b.Completed, Failed: b.Failed, BackupMsg: b.BackupMsg,
	}
}
