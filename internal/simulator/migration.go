package simulator

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// MigrationOutcome is how a simulated migration ends.
type MigrationOutcome int

const (
	// MigrationSucceeds: Pending → Scheduling → Scheduled →
	// PreparingTarget → TargetReady → Running → Succeeded; the VMI moves
	// to the target node and the source pod ends Succeeded.
	MigrationSucceeds MigrationOutcome = iota
	// MigrationFails: the migration proceeds to phase MigrationOptions.At
	// (default Running), then the target pod goes down: the target pod
	// ends Failed, the VMIM Failed, the VMI stays on its source with
	// migrationState.failed and failureReason.
	MigrationFails
	// MigrationTargetUnschedulable: the target pod stays Pending with
	// PodScheduled=False reason Unschedulable and the VMIM stays in
	// Scheduling (KubeVirt fails it after 5 minutes: Migration.Fail).
	MigrationTargetUnschedulable
	// MigrationStuck: the migration stops advancing once it reaches
	// phase MigrationOptions.At (default Running).
	MigrationStuck
)

// DefaultFailureReason is the failure reason virt-controller writes when
// the target pod goes down.
const DefaultFailureReason = "Target pod is down"

// ErrMigrationDone is returned by Migration.Step once the migration has
// reached its outcome.
var ErrMigrationDone = errors.New("migration has reached its outcome")

// MigrationOptions shape a migration.
type MigrationOptions struct {
	// TargetNode is where the target pod is scheduled. Empty picks the
	// first Ready, schedulable node other than the source.
	TargetNode string
	// Outcome is how the migration ends.
	Outcome MigrationOutcome
	// At is the phase in which a MigrationFails migration fails or a
	// MigrationStuck migration stops (default Running).
	At kubevirtv1.VirtualMachineInstanceMigrationPhase
	// FailureReason for MigrationFails (default DefaultFailureReason).
	FailureReason string
	// Evacuation makes the VMIM look like the evacuation controller's
	// (generateName kubevirt-evacuation-, annotation
	// kubevirt.io/evacuationMigration) instead of `virtctl migrate`'s.
	Evacuation bool
	// Name of the VMIM; empty generates one.
	Name string
}

// Migration steps one VirtualMachineInstanceMigration through its phases.
// Create it with StartMigration; each Step writes what virt-controller and
// the two virt-handlers write to reach the next phase.
type Migration struct {
	// Namespace, VMIName and Name identify the VMI and the VMIM.
	Namespace, VMIName, Name string
	// UID is the VMIM's UID (migrationState.migrationUid, the target pod's
	// kubevirt.io/migrationJobUID label).
	UID types.UID
	// SourceNode and SourcePod are where the VMI ran when the migration
	// started; TargetNode and TargetPod where it goes (TargetPod is set
	// once the target pod exists).
	SourceNode, SourcePod, TargetNode, TargetPod string

	s       *Simulator
	opts    MigrationOptions
	phase   kubevirtv1.VirtualMachineInstanceMigrationPhase
	done    bool
	handoff bool
}

// Phase is the VMIM phase the migration has reached ("" before the first
// Step).
func (m *Migration) Phase() kubevirtv1.VirtualMachineInstanceMigrationPhase { return m.phase }

// Done says the migration reached its outcome: Succeeded, Failed, or the
// phase it is stuck in.
func (m *Migration) Done() bool { return m.done }

// Migrate runs a migration of the VMI to targetNode to its outcome in one
// go (StartMigration, then Run).
func (s *Simulator) Migrate(ctx context.Context, ns, name, targetNode string, outcome MigrationOutcome) (*Migration, error) {
	m, err := s.StartMigration(ctx, ns, name, MigrationOptions{TargetNode: targetNode, Outcome: outcome})
	if err != nil {
		return nil, err
	}
	return m, m.Run(ctx)
}

// StartMigration creates the VMIM for a Running VMI, as `virtctl migrate`
// (or, with Evacuation, the evacuation controller) does; its phase is unset
// until the first Step. Like virt-api's admission webhook it refuses a VMI
// whose LiveMigratable condition is False.
func (s *Simulator) StartMigration(ctx context.Context, ns, name string, opts MigrationOptions) (*Migration, error) {
	vmi, src, err := s.vmiAndLauncher(ctx, ns, name, "StartMigration", kubevirtv1.Running)
	if err != nil {
		return nil, err
	}
	if c := vmiCond(vmi, kubevirtv1.VirtualMachineInstanceIsMigratable); c != nil && c.Status == corev1.ConditionFalse {
		return nil, fmt.Errorf("admission webhook \"migration-create-validator.kubevirt.io\" denied the request: Cannot migrate VMI, Reason: %s, Message: %s", c.Reason, c.Message)
	}
	switch opts.At {
	case "":
		opts.At = kubevirtv1.MigrationRunning
	case kubevirtv1.MigrationPending, kubevirtv1.MigrationScheduling, kubevirtv1.MigrationScheduled,
		kubevirtv1.MigrationPreparingTarget, kubevirtv1.MigrationTargetReady, kubevirtv1.MigrationRunning:
	default:
		return nil, fmt.Errorf("StartMigration: At must be a phase from Pending to Running, not %q", opts.At)
	}
	if opts.FailureReason == "" {
		opts.FailureReason = DefaultFailureReason
	}
	if src == nil {
		return nil, fmt.Errorf("StartMigration: VMI %s/%s has no launcher pod on %s", ns, name, vmi.Status.NodeName)
	}
	if opts.TargetNode == "" && opts.Outcome != MigrationTargetUnschedulable {
		if opts.TargetNode, err = s.firstReadyNode(ctx, vmi.Status.NodeName); err != nil {
			return nil, fmt.Errorf("StartMigration: %w", err)
		}
	}
	if opts.TargetNode != "" && opts.TargetNode == vmi.Status.NodeName {
		return nil, fmt.Errorf("StartMigration: VMI %s/%s already runs on %s", ns, name, opts.TargetNode)
	}
	vmim := &kubevirtv1.VirtualMachineInstanceMigration{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: opts.Name},
		Spec:       kubevirtv1.VirtualMachineInstanceMigrationSpec{VMIName: name},
	}
	manager := managerVirtctl
	if opts.Evacuation {
		manager = managerVirtController
		vmim.GenerateName = "kubevirt-evacuation-"
		vmim.Annotations = map[string]string{kubevirtv1.EvacuationMigrationAnnotation: vmi.Status.NodeName}
	} else {
		vmim.GenerateName = "kubevirt-migrate-vm-"
	}
	generated := vmim.Name == ""
	if generated {
		vmim.Name = s.generateName(vmim.GenerateName)
	}
	err = s.Client.Create(ctx, vmim, client.FieldOwner(manager))
	for try := 0; generated && apierrors.IsAlreadyExists(err) && try < 8; try++ {
		vmim.Name = s.generateName(vmim.GenerateName)
		err = s.Client.Create(ctx, vmim, client.FieldOwner(manager))
	}
	if err != nil {
		return nil, fmt.Errorf("creating migration for VMI %s/%s: %w", ns, name, err)
	}
	return &Migration{
		Namespace: ns, VMIName: name, Name: vmim.Name, UID: vmim.UID,
		SourceNode: vmi.Status.NodeName, SourcePod: src.Name, TargetNode: opts.TargetNode,
		s: s, opts: opts,
	}, nil
}

// Run steps the migration until it reaches its outcome.
func (m *Migration) Run(ctx context.Context) error {
	for !m.done {
		if err := m.Step(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Step advances the migration by one VMIM phase, or ends it (Succeeded or
// Failed) when that is next. It returns ErrMigrationDone once Done.
//
//   - → Pending: virt-controller labels the VMIM (kubevirt.io/vmi-name),
//     adds its finalizer; migrationState holds only the source pod.
//   - → Scheduling: virt-controller creates the target pod (label
//     kubevirt.io/migrationJobUID=<VMIM UID>); activePods lists two pods.
//   - → Scheduled: the target pod is bound to the target node and runs.
//   - → PreparingTarget: virt-controller hands off: the VMI's
//     migrationState names source and target node and pod, and the VMI
//     gets the kubevirt.io/migrationTargetNodeName label.
//   - → TargetReady: the target virt-handler publishes its address.
//   - → Running: the source virt-handler starts the migration
//     (startTimestamp); the VM says Migrating.
//   - → Succeeded: the domain is detected on the target, the source
//     virt-handler sets endTimestamp and completed and moves
//     status.nodeName to the target, the source pod ends Succeeded (and
//     stays in activePods), the VMIM gets the final migrationState.
func (m *Migration) Step(ctx context.Context) error {
	if m.done {
		return ErrMigrationDone
	}
	if m.opts.Outcome == MigrationFails && m.phase == m.opts.At {
		return m.Fail(ctx, m.opts.FailureReason)
	}
	var err error
	switch m.phase {
	case "":
		err = m.toPending(ctx)
	case kubevirtv1.MigrationPending:
		err = m.toScheduling(ctx)
	case kubevirtv1.MigrationScheduling:
		err = m.toScheduled(ctx)
	case kubevirtv1.MigrationScheduled:
		err = m.toPreparingTarget(ctx)
	case kubevirtv1.MigrationPreparingTarget:
		err = m.toTargetReady(ctx)
	case kubevirtv1.MigrationTargetReady:
		err = m.toRunning(ctx)
	case kubevirtv1.MigrationRunning:
		err = m.toSucceeded(ctx)
	default:
		err = fmt.Errorf("migration %s/%s in unexpected phase %s", m.Namespace, m.Name, m.phase)
	}
	if err != nil {
		return err
	}
	if m.opts.Outcome == MigrationStuck && m.phase == m.opts.At {
		m.done = true
	}
	return nil
}

func (m *Migration) setPhase(ctx context.Context, phase kubevirtv1.VirtualMachineInstanceMigrationPhase, fn func(*kubevirtv1.VirtualMachineInstanceMigration)) error {
	now := m.s.now()
	if _, err := m.s.updateVMIMStatus(ctx, m.Namespace, m.Name, managerVirtController, func(vmim *kubevirtv1.VirtualMachineInstanceMigration) error {
		setVMIMPhase(vmim, phase, now)
		if fn != nil {
			fn(vmim)
		}
		return nil
	}); err != nil {
		return err
	}
	m.phase = phase
	return nil
}

func (m *Migration) toPending(ctx context.Context) error {
	if _, err := m.s.updateVMIM(ctx, m.Namespace, m.Name, managerVirtController, func(vmim *kubevirtv1.VirtualMachineInstanceMigration) error {
		setLabel(vmim, kubevirtv1.MigrationSelectorLabel, m.VMIName)
		addFinalizer(vmim, kubevirtv1.VirtualMachineInstanceMigrationFinalizer)
		return nil
	}); err != nil {
		return err
	}
	return m.setPhase(ctx, kubevirtv1.MigrationPending, func(vmim *kubevirtv1.VirtualMachineInstanceMigration) {
		vmim.Status.MigrationState = &kubevirtv1.VirtualMachineInstanceMigrationState{SourcePod: m.SourcePod}
	})
}

func (m *Migration) toScheduling(ctx context.Context) error {
	vmi, err := m.s.getVMI(ctx, m.Namespace, m.VMIName)
	if err != nil {
		return err
	}
	pod, err := m.s.createLauncherPod(ctx, vmi, &migrationTarget{name: m.Name, uid: m.UID, sourceNode: m.SourceNode})
	if err != nil {
		return err
	}
	m.TargetPod = pod.Name
	if m.opts.Outcome == MigrationTargetUnschedulable {
		n := m.s.countNodes(ctx)
		msg := fmt.Sprintf("0/%d nodes are available: 1 node(s) didn't match pod anti-affinity rules, %d Insufficient devices.kubevirt.io/kvm. preemption: 0/%d nodes are available: %d No preemption victims found for incoming pod.", n, n-1, n, n)
		if err := m.s.markUnschedulable(ctx, m.Namespace, pod.Name, msg); err != nil {
			return err
		}
	}
	if err := m.s.controllerSync(ctx, m.Namespace, m.VMIName); err != nil {
		return err
	}
	if err := m.setPhase(ctx, kubevirtv1.MigrationScheduling, nil); err != nil {
		return err
	}
	if m.opts.Outcome == MigrationTargetUnschedulable {
		m.done = true
	}
	return nil
}

func (m *Migration) toScheduled(ctx context.Context) error {
	pod := &corev1.Pod{}
	if err := m.s.Client.Get(ctx, key(m.Namespace, m.TargetPod), pod); err != nil {
		return fmt.Errorf("reading target pod %s/%s: %w", m.Namespace, m.TargetPod, err)
	}
	vmi, err := m.s.getVMI(ctx, m.Namespace, m.VMIName)
	if err != nil {
		return err
	}
	podIP, hostIP, err := m.s.placePod(ctx, pod, m.TargetNode, vmi)
	if err != nil {
		return err
	}
	if _, err := m.s.runPod(ctx, m.Namespace, pod.Name, podIP, hostIP); err != nil {
		return err
	}
	if err := m.s.controllerSync(ctx, m.Namespace, m.VMIName); err != nil {
		return err
	}
	return m.setPhase(ctx, kubevirtv1.MigrationScheduled, nil)
}

func (m *Migration) toPreparingTarget(ctx context.Context) error {
	if _, err := m.s.updateVMI(ctx, m.Namespace, m.VMIName, managerVirtController, func(vmi *kubevirtv1.VirtualMachineInstance) error {
		vmi.Status.MigrationState = &kubevirtv1.VirtualMachineInstanceMigrationState{
			TargetNode: m.TargetNode, TargetPod: m.TargetPod,
			SourceNode: m.SourceNode, SourcePod: m.SourcePod,
			MigrationUID: m.UID,
		}
		setLabel(vmi, kubevirtv1.MigrationTargetNodeNameLabel, m.TargetNode)
		return nil
	}); err != nil {
		return err
	}
	m.handoff = true
	return m.setPhase(ctx, kubevirtv1.MigrationPreparingTarget, nil)
}

func (m *Migration) toTargetReady(ctx context.Context) error {
	hostIP, _ := m.s.nodeNet(ctx, m.TargetNode)
	ports := []int{30000 + int(m.s.randBytes(1)[0])*100, 40000 + int(m.s.randBytes(1)[0])*100}
	if _, err := m.s.updateVMI(ctx, m.Namespace, m.VMIName, managerVirtHandler, func(vmi *kubevirtv1.VirtualMachineInstance) error {
		ms := vmi.Status.MigrationState
		if ms == nil || ms.MigrationUID != m.UID {
			return fmt.Errorf("VMI %s/%s is not handed off to migration %s", m.Namespace, m.VMIName, m.Name)
		}
		ms.TargetNodeAddress = hostIP
		ms.TargetDirectMigrationNodePorts = map[string]int{strconv.Itoa(ports[0]): 0, strconv.Itoa(ports[1]): 49152}
		return nil
	}); err != nil {
		return err
	}
	return m.setPhase(ctx, kubevirtv1.MigrationTargetReady, nil)
}

func (m *Migration) toRunning(ctx context.Context) error {
	now := m.s.now()
	if _, err := m.s.updateVMI(ctx, m.Namespace, m.VMIName, managerVirtHandler, func(vmi *kubevirtv1.VirtualMachineInstance) error {
		ms := vmi.Status.MigrationState
		if ms == nil || ms.MigrationUID != m.UID {
			return fmt.Errorf("VMI %s/%s is not handed off to migration %s", m.Namespace, m.VMIName, m.Name)
		}
		ms.StartTimestamp = &now
		ms.Mode = kubevirtv1.MigrationPreCopy
		return nil
	}); err != nil {
		return err
	}
	if err := m.s.syncVM(ctx, m.Namespace, m.VMIName); err != nil {
		return err
	}
	return m.setPhase(ctx, kubevirtv1.MigrationRunning, nil)
}

func (m *Migration) toSucceeded(ctx context.Context) error {
	s, ns := m.s, m.Namespace
	now := s.now()
	// The target virt-handler sees the domain arrive; virt-controller
	// stamps the target pod.
	if _, err := s.updateVMI(ctx, ns, m.VMIName, managerVirtHandler, func(vmi *kubevirtv1.VirtualMachineInstance) error {
		vmi.Status.MigrationState.TargetNodeDomainDetected = true
		vmi.Status.MigrationState.TargetNodeDomainReadyTimestamp = &now
		return nil
	}); err != nil {
		return err
	}
	if _, err := s.updatePod(ctx, ns, m.TargetPod, managerVirtController, func(p *corev1.Pod) error {
		setAnnotation(p, kubevirtv1.MigrationTargetReadyTimestamp, now.String())
		return nil
	}); err != nil {
		return err
	}
	// The source virt-handler finishes and hands the VMI to the target.
	if _, err := s.updateVMI(ctx, ns, m.VMIName, managerVirtHandler, func(vmi *kubevirtv1.VirtualMachineInstance) error {
		vmi.Status.MigrationState.EndTimestamp = &now
		vmi.Status.MigrationState.Completed = true
		vmi.Status.NodeName = m.TargetNode
		setLabel(vmi, kubevirtv1.NodeNameLabel, m.TargetNode)
		return nil
	}); err != nil {
		return err
	}
	// The target virt-handler takes over and reports the interfaces from
	// the new pod.
	target := &corev1.Pod{}
	if err := s.Client.Get(ctx, key(ns, m.TargetPod), target); err != nil {
		return fmt.Errorf("reading target pod %s/%s: %w", ns, m.TargetPod, err)
	}
	if _, err := s.updateVMI(ctx, ns, m.VMIName, managerVirtHandler, func(vmi *kubevirtv1.VirtualMachineInstance) error {
		delete(vmi.Labels, kubevirtv1.MigrationTargetNodeNameLabel)
		agent := vmiCond(vmi, kubevirtv1.VirtualMachineInstanceAgentConnected) != nil
		vmi.Status.Interfaces = mergeInterfaces(vmi, target, true, agent)
		return nil
	}); err != nil {
		return err
	}
	// virt-launcher on the source exits.
	if _, err := s.terminatePod(ctx, ns, m.SourcePod, corev1.PodSucceeded, "Completed", 0); err != nil {
		return err
	}
	// virt-controller: dynamic labels to the new current pod, the VMI's
	// Ready from it, the eviction settled, the VMIM final.
	if _, err := s.updatePod(ctx, ns, m.TargetPod, managerVirtController, func(p *corev1.Pod) error {
		setLabel(p, kubevirtv1.NodeNameLabel, m.TargetNode)
		return nil
	}); err != nil {
		return err
	}
	if _, err := s.updateVMI(ctx, ns, m.VMIName, managerVirtController, func(vmi *kubevirtv1.VirtualMachineInstance) error {
		if vmi.Status.EvacuationNodeName != "" && vmi.Status.EvacuationNodeName != vmi.Status.NodeName {
			vmi.Status.EvacuationNodeName = ""
			removeVMICond(vmi, kubevirtv1.VirtualMachineInstanceEvictionRequested)
		}
		return nil
	}); err != nil {
		return err
	}
	if err := s.controllerSync(ctx, ns, m.VMIName); err != nil {
		return err
	}
	return m.finish(ctx, kubevirtv1.MigrationSucceeded)
}

// finish writes the final phase with the VMI's migrationState copied in
// (the VMIM carries it only once final) and drops the VMIM's finalizer.
func (m *Migration) finish(ctx context.Context, phase kubevirtv1.VirtualMachineInstanceMigrationPhase) error {
	vmi, err := m.s.getVMI(ctx, m.Namespace, m.VMIName)
	if err != nil {
		return err
	}
	if err := m.setPhase(ctx, phase, func(vmim *kubevirtv1.VirtualMachineInstanceMigration) {
		if ms := vmi.Status.MigrationState; ms != nil && ms.MigrationUID == m.UID {
			vmim.Status.MigrationState = ms.DeepCopy()
		}
	}); err != nil {
		return err
	}
	if _, err := m.s.updateVMIM(ctx, m.Namespace, m.Name, managerVirtController, func(vmim *kubevirtv1.VirtualMachineInstanceMigration) error {
		removeFinalizer(vmim, kubevirtv1.VirtualMachineInstanceMigrationFinalizer)
		return nil
	}); err != nil {
		return err
	}
	m.done = true
	return nil
}

// Fail ends the migration now, in whatever phase it is, with reason (empty
// means DefaultFailureReason), as when its target pod goes down or
// KubeVirt's timeout for an unschedulable target pod expires: an unbound
// target pod is deleted, a bound one ends Failed; after the handoff the
// VMI's migrationState gets failed, completed, endTimestamp and
// failureReason (virt-controller fills startTimestamp too if the source
// never started); the VMIM ends Failed. The VMI stays on its source.
func (m *Migration) Fail(ctx context.Context, reason string) error {
	if m.done && (m.phase == kubevirtv1.MigrationSucceeded || m.phase == kubevirtv1.MigrationFailed) {
		return ErrMigrationDone
	}
	if reason == "" {
		reason = DefaultFailureReason
	}
	s, ns := m.s, m.Namespace
	if m.TargetPod != "" {
		pod := &corev1.Pod{}
		err := s.Client.Get(ctx, key(ns, m.TargetPod), pod)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return fmt.Errorf("reading target pod %s/%s: %w", ns, m.TargetPod, err)
		case pod.Spec.NodeName == "":
			if err := s.Client.Delete(ctx, pod); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("deleting target pod %s/%s: %w", ns, m.TargetPod, err)
			}
		case !podDone(pod):
			if _, err := s.terminatePod(ctx, ns, pod.Name, corev1.PodFailed, CrashError, 1); err != nil {
				return err
			}
		}
	}
	if m.handoff {
		now := s.now()
		manager := managerVirtHandler
		if m.phase != kubevirtv1.MigrationRunning {
			manager = managerVirtController
		}
		if _, err := s.updateVMI(ctx, ns, m.VMIName, manager, func(vmi *kubevirtv1.VirtualMachineInstance) error {
			ms := vmi.Status.MigrationState
			if ms == nil || ms.MigrationUID != m.UID {
				return fmt.Errorf("VMI %s/%s is not handed off to migration %s", ns, m.VMIName, m.Name)
			}
			if ms.StartTimestamp == nil {
				ms.StartTimestamp = &now
			}
			ms.EndTimestamp = &now
			ms.Failed, ms.Completed = true, true
			ms.FailureReason = reason
			delete(vmi.Labels, kubevirtv1.MigrationTargetNodeNameLabel)
			return nil
		}); err != nil {
			return err
		}
	}
	if err := s.controllerSync(ctx, ns, m.VMIName); err != nil {
		return err
	}
	return m.finish(ctx, kubevirtv1.MigrationFailed)
}
