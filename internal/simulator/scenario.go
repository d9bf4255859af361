package simulator

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/api/v1alpha1"
)

// ScenarioNodes are the shared nodes scenarios boot and migrate VMs on;
// Play creates them if missing. Scenarios that take a node down use a node
// of their own (ScenarioNode).
var ScenarioNodes = []string{"node-a", "node-b"}

// NodeLostNeighbours are the VMs the node-lost scenario boots beside vm on
// its node, so that the node's loss is an incident of its NodeObservation:
// with vm, as many VMs as the default --node-incident-threshold (3).
func NodeLostNeighbours(vm string) []string {
	return []string{vm + "-neighbour-1", vm + "-neighbour-2"}
}

// ScenarioNode is the dedicated node of the node-loss scenarios for VM vm
// in namespace ns, so that losing it affects no other VM.
func ScenarioNode(ns, vm string) string { return ns + "-" + vm + "-host" }

// Scenario is a named situation the simulator drives a VM into, with the
// layer verdict and reason it is built to produce.
type Scenario struct {
	// Name is a short kebab-case identifier.
	Name string
	// Description says what happens to the VM.
	Description string
	// Layer is the VMObservation layer that carries the verdict, one of
	// v1alpha1.LayerNames.
	Layer string
	// Verdict and Reason (one of the v1alpha1.Reason constants) are what
	// that layer should say.
	Verdict v1alpha1.Verdict
	Reason  string
	// Wait is how far the clock must move past the end of Play before the
	// verdict holds (a deadline such as the scheduling timeout or the
	// heartbeat timeout); zero means at once.
	Wait time.Duration
	// DomainStats says the verdict comes from virt-handler's domain
	// stats, read through Prometheus: playing the scenario needs
	// VirtHandlerMetrics scraped and the manager pointed at the server.
	DomainStats bool
	// GuestProbe says the verdict comes from the manager's probes of the
	// guest agent through virt-api's subresources: playing the scenario
	// needs VirtAPI served (ServeVirtAPI) and the manager's probes on.
	GuestProbe bool
	// Storage says the scenario is a storage play (StorageScenarios):
	// playing it needs the real kube-controller-manager
	// (testenv.Options.ControllerManager) and CDI's CRD
	// (testenv.Options.CDI), and it waits for their writes (StorageWait).
	Storage bool
	// Play drives VM vm in namespace ns (which it creates if missing) to
	// the scenario's end state, without sleeping (a storage play waits
	// for kube-controller-manager).
	Play func(ctx context.Context, s *Simulator, ns, vm string) error
}

// Scenarios is the catalogue, in a stable order. Timeouts assumed: 10
// minutes for scheduling, 5 for the heartbeat, for the guest agent's grace
// period and for a hotplug, 10 for frozen filesystems; domain stats read
// every minute over a 2-minute rate window, a minute's grace for missing
// series, 3 minutes for stalled vCPUs (vmobs' defaults); Wait adds a
// minute of margin; guest agents probed every 5 minutes, each call cut at
// 10 seconds, 3 failed probes for an unresponsive agent.
var Scenarios = []Scenario{
	{
		Name:        "healthy",
		Description: "A VM with a guest agent and a Multus interface runs on node-a; all four layers are Healthy.",
		Layer:       v1alpha1.LayerControlPlane, Verdict: v1alpha1.VerdictHealthy, Reason: v1alpha1.ReasonRunning,
		Play: func(ctx context.Context, s *Simulator, ns, vm string) error {
			return s.bootScenarioVM(ctx, ns, VMSpec{Name: vm, GuestAgent: true, Interfaces: 2}, ScenarioNodes[0])
		},
	},
	{
		Name:        "stuck-scheduling",
		Description: "The launcher pod is created but never scheduled, and stays Pending past the scheduling timeout.",
		Layer:       v1alpha1.LayerControlPlane, Verdict: v1alpha1.VerdictDegraded, Reason: v1alpha1.ReasonStuckScheduling,
		Wait: 11 * time.Minute,
		Play: func(ctx context.Context, s *Simulator, ns, vm string) error {
			if err := s.createScenarioVM(ctx, ns, VMSpec{Name: vm}); err != nil {
				return err
			}
			return s.CreateLauncherPod(ctx, ns, vm)
		},
	},
	{
		Name:        "unschedulable",
		Description: "kube-scheduler finds no node for the launcher pod (PodScheduled=False, Unschedulable); the VM says ErrorUnschedulable.",
		Layer:       v1alpha1.LayerControlPlane, Verdict: v1alpha1.VerdictDegraded, Reason: v1alpha1.ReasonUnschedulable,
		Play: func(ctx context.Context, s *Simulator, ns, vm string) error {
			if err := s.createScenarioVM(ctx, ns, VMSpec{Name: vm}); err != nil {
				return err
			}
			return s.FailScheduling(ctx, ns, vm, Unschedulable)
		},
	},
	{
		Name:        "image-pull-failed",
		Description: "The launcher pod lands on node-a but its containerDisk image cannot be pulled (Synchronized=False, ErrImagePull).",
		Layer:       v1alpha1.LayerControlPlane, Verdict: v1alpha1.VerdictDegraded, Reason: v1alpha1.ReasonImagePullFailed,
		Play: func(ctx context.Context, s *Simulator, ns, vm string) error {
			if err := s.createScenarioVM(ctx, ns, VMSpec{Name: vm}); err != nil {
				return err
			}
			return s.FailScheduling(ctx, ns, vm, ErrImagePull)
		},
	},
	{
		Name:        "migration-in-progress",
		Description: "The VM live-migrates from node-a to node-b and the migration is Running: two launcher pods, migrationState started, the VM says Migrating.",
		Layer:       v1alpha1.LayerControlPlane, Verdict: v1alpha1.VerdictProgressing, Reason: v1alpha1.ReasonMigrating,
		Play: func(ctx context.Context, s *Simulator, ns, vm string) error {
			if err := s.bootScenarioVM(ctx, ns, VMSpec{Name: vm, GuestAgent: true}, ScenarioNodes[0]); err != nil {
				return err
			}
			m, err := s.StartMigration(ctx, ns, vm, MigrationOptions{TargetNode: ScenarioNodes[1], Outcome: MigrationStuck, At: kubevirtv1.MigrationRunning})
			if err != nil {
				return err
			}
			return m.Run(ctx)
		},
	},
	{
		Name:        "migration-failed",
		Description: "A migration from node-a to node-b fails while Running: the target pod goes down, the VMIM is Failed, the VM stays on node-a.",
		Layer:       v1alpha1.LayerControlPlane, Verdict: v1alpha1.VerdictDegraded, Reason: v1alpha1.ReasonMigrationFailed,
		Play: func(ctx context.Context, s *Simulator, ns, vm string) error {
			if err := s.bootScenarioVM(ctx, ns, VMSpec{Name: vm, GuestAgent: true}, ScenarioNodes[0]); err != nil {
				return err
			}
			_, err := s.Migrate(ctx, ns, vm, ScenarioNodes[1], MigrationFails)
			return err
		},
	},
	{
		Name:        "migration-target-unschedulable",
		Description: "A migration's target pod cannot be scheduled (PodScheduled=False, Unschedulable); the VMIM waits in Scheduling.",
		Layer:       v1alpha1.LayerNode, Verdict: v1alpha1.VerdictDegraded, Reason: v1alpha1.ReasonTargetPodUnschedulable,
		Play: func(ctx context.Context, s *Simulator, ns, vm string) error {
			if err := s.bootScenarioVM(ctx, ns, VMSpec{Name: vm, GuestAgent: true}, ScenarioNodes[0]); err != nil {
				return err
			}
			_, err := s.Migrate(ctx, ns, vm, "", MigrationTargetUnschedulable)
			return err
		},
	},
	{
		Name:        "node-lost",
		Description: "The VM's node, which runs two more VMs (its neighbours), goes dark (Ready=Unknown, heartbeats stop, its pods marked not Ready): the node layer names the node rather than the pod's readiness, and the node's NodeObservation names one incident for the three VMs; once the heartbeat is older than 5 minutes NodeAgentStale is added to it.",
		Layer:       v1alpha1.LayerNode, Verdict: v1alpha1.VerdictUnknown, Reason: v1alpha1.ReasonNodeNotReady,
		Play: func(ctx context.Context, s *Simulator, ns, vm string) error {
			node := ScenarioNode(ns, vm)
			for _, name := range append([]string{vm}, NodeLostNeighbours(vm)...) {
				if err := s.bootScenarioVM(ctx, ns, VMSpec{Name: name, GuestAgent: true}, node); err != nil {
					return err
				}
			}
			return s.LoseNode(ctx, node)
		},
	},
	{
		Name:        "node-unresponsive",
		Description: "After node-lost, the launcher pod is force-deleted and virt-controller marks the VMI Failed with reason NodeUnresponsive.",
		Layer:       v1alpha1.LayerControlPlane, Verdict: v1alpha1.VerdictFailed, Reason: v1alpha1.ReasonNodeUnresponsive,
		Play: func(ctx context.Context, s *Simulator, ns, vm string) error {
			node := ScenarioNode(ns, vm)
			if err := s.bootScenarioVM(ctx, ns, VMSpec{Name: vm, GuestAgent: true}, node); err != nil {
				return err
			}
			if err := s.LoseNode(ctx, node); err != nil {
				return err
			}
			return s.NodeUnresponsive(ctx, ns, vm)
		},
	},
	{
		Name:        "no-guest-agent",
		Description: "The VM runs without a guest agent; after the agent grace period the guest layer notes that none connected.",
		Layer:       v1alpha1.LayerGuest, Verdict: v1alpha1.VerdictHealthy, Reason: v1alpha1.ReasonNoGuestAgent,
		Wait: 6 * time.Minute,
		Play: func(ctx context.Context, s *Simulator, ns, vm string) error {
			return s.bootScenarioVM(ctx, ns, VMSpec{Name: vm}, ScenarioNodes[0])
		},
	},
	{
		Name:        "agent-disconnected",
		Description: "The guest agent connected, then went away (AgentConnected removed; guestOSInfo stays).",
		Layer:       v1alpha1.LayerGuest, Verdict: v1alpha1.VerdictDegraded, Reason: v1alpha1.ReasonAgentDisconnected,
		Play: func(ctx context.Context, s *Simulator, ns, vm string) error {
			if err := s.bootScenarioVM(ctx, ns, VMSpec{Name: vm, GuestAgent: true}, ScenarioNodes[0]); err != nil {
				return err
			}
			return s.DisconnectAgent(ctx, ns, vm)
		},
	},
	{
		Name:        "paused-io-error",
		Description: "QEMU pauses the domain on a disk's I/O error and libvirt says so (Paused=True, PausedIOError); the pod and VMI turn not Ready.",
		Layer:       v1alpha1.LayerStorage, Verdict: v1alpha1.VerdictDegraded, Reason: v1alpha1.ReasonPausedIOError,
		Play: func(ctx context.Context, s *Simulator, ns, vm string) error {
			if err := s.bootScenarioVM(ctx, ns, VMSpec{Name: vm, GuestAgent: true}, ScenarioNodes[0]); err != nil {
				return err
			}
			return s.Pause(ctx, ns, vm, PausedIOError)
		},
	},
	{
		Name:        "paused-by-user",
		Description: "The user pauses the VM (virtctl pause): Paused=True, PausedByUser; the VM says Paused.",
		Layer:       v1alpha1.LayerControlPlane, Verdict: v1alpha1.VerdictSuspended, Reason: v1alpha1.ReasonPausedByUser,
		Play: func(ctx context.Context, s *Simulator, ns, vm string) error {
			if err := s.bootScenarioVM(ctx, ns, VMSpec{Name: vm, GuestAgent: true}, ScenarioNodes[0]); err != nil {
				return err
			}
			return s.Pause(ctx, ns, vm, PausedByUser)
		},
	},
	{
		Name:        "stopped",
		Description: "The VM ran, then was stopped (runStrategy Halted): no VMI, no pod, the VM says Stopped.",
		Layer:       v1alpha1.LayerControlPlane, Verdict: v1alpha1.VerdictSuspended, Reason: v1alpha1.ReasonStopped,
		Play: func(ctx context.Context, s *Simulator, ns, vm string) error {
			if err := s.bootScenarioVM(ctx, ns, VMSpec{Name: vm}, ScenarioNodes[0]); err != nil {
				return err
			}
			return s.Stop(ctx, ns, vm)
		},
	},
	{
		Name:        "evicted-not-migratable",
		Description: "A VM with a PCI host device (LiveMigratable=False, HostDeviceNotLiveMigratable) is evicted by a drain: EvictionRequested, evacuationNodeName set, no migration possible.",
		Layer:       v1alpha1.LayerControlPlane, Verdict: v1alpha1.VerdictDegraded, Reason: v1alpha1.ReasonEvictionBlocked,
		Play: func(ctx context.Context, s *Simulator, ns, vm string) error {
			if err := s.bootScenarioVM(ctx, ns, VMSpec{Name: vm, GuestAgent: true, HostDevice: true}, ScenarioNodes[0]); err != nil {
				return err
			}
			return s.Evict(ctx, ns, vm)
		},
	},
	{
		Name:        "launcher-crashed",
		Description: "The launcher's compute container is OOM-killed and the pod is Failed while the VMI still says Running (status lag).",
		Layer:       v1alpha1.LayerNode, Verdict: v1alpha1.VerdictFailed, Reason: v1alpha1.ReasonComputeContainerOOMKilled,
		Play: func(ctx context.Context, s *Simulator, ns, vm string) error {
			if err := s.bootScenarioVM(ctx, ns, VMSpec{Name: vm, GuestAgent: true}, ScenarioNodes[0]); err != nil {
				return err
			}
			return s.CrashLauncher(ctx, ns, vm, CrashOOMKilled)
		},
	},
	{
		Name:        "memory-hotplug-stuck",
		Description: "The VM's guest memory is raised from 2Gi to 4Gi; virt-controller sets HotMemoryChange, but no live migration ever applies it (the KubeVirt CR does not allow LiveMigrate workload updates). The objects cannot tell that from a hotplug queued behind other migrations, so it stays Progressing, with no deadline.",
		Layer:       v1alpha1.LayerControlPlane, Verdict: v1alpha1.VerdictProgressing, Reason: v1alpha1.ReasonMemoryHotplugPending,
		Wait: 6 * time.Minute,
		Play: func(ctx context.Context, s *Simulator, ns, vm string) error {
			if err := s.bootScenarioVM(ctx, ns, VMSpec{Name: vm, GuestAgent: true}, ScenarioNodes[0]); err != nil {
				return err
			}
			return s.RequestMemoryHotplug(ctx, ns, vm, resource.MustParse("4Gi"))
		},
	},
	{
		Name:        "filesystems-frozen",
		Description: "The guest's filesystems are frozen for a snapshot (status.fsFreezeStatus frozen) and never thawed: a note at first, Degraded past the threshold.",
		Layer:       v1alpha1.LayerGuest, Verdict: v1alpha1.VerdictDegraded, Reason: v1alpha1.ReasonFilesystemsFrozen,
		Wait: 11 * time.Minute,
		Play: func(ctx context.Context, s *Simulator, ns, vm string) error {
			if err := s.bootScenarioVM(ctx, ns, VMSpec{Name: vm, GuestAgent: true}, ScenarioNodes[0]); err != nil {
				return err
			}
			return s.FreezeFilesystems(ctx, ns, vm)
		},
	},
	{
		Name:        "domain-not-exported",
		Description: "The VM runs on node-a but virt-handler exports no domain stats for it (its launcher does not answer on the socket) while it may export the node's other domains.",
		Layer:       v1alpha1.LayerNode, Verdict: v1alpha1.VerdictUnknown, Reason: v1alpha1.ReasonDomainStatsMissing,
		DomainStats: true,
		// Series are due two intervals and the grace after Running.
		Wait: 4 * time.Minute,
		Play: func(ctx context.Context, s *Simulator, ns, vm string) error {
			s.SetDomainFault(ns, vm, DomainNotExported, true)
			return s.bootScenarioVM(ctx, ns, VMSpec{Name: vm, GuestAgent: true}, ScenarioNodes[0])
		},
	},
	{
		Name:        "guest-cpu-stalled",
		Description: "The guest hangs: its vCPUs use no CPU time (kubevirt_vmi_vcpu_seconds_total stands still) while the VMI still says Running.",
		Layer:       v1alpha1.LayerGuest, Verdict: v1alpha1.VerdictDegraded, Reason: v1alpha1.ReasonGuestCPUStalled,
		DomainStats: true,
		// The rate window must see no vCPU-second, then the threshold pass.
		Wait: 7 * time.Minute,
		Play: func(ctx context.Context, s *Simulator, ns, vm string) error {
			if err := s.bootScenarioVM(ctx, ns, VMSpec{Name: vm, GuestAgent: true}, ScenarioNodes[0]); err != nil {
				return err
			}
			s.SetDomainFault(ns, vm, DomainVCPUFrozen, true)
			return nil
		},
	},
	{
		Name:        "guest-memory-pressure",
		Description: "The guest runs out of memory: usable memory falls to about 4% of what it has, it swaps several MiB/s and takes hundreds of major page faults a second.",
		Layer:       v1alpha1.LayerGuest, Verdict: v1alpha1.VerdictDegraded, Reason: v1alpha1.ReasonGuestMemoryPressure,
		DomainStats: true,
		// The swap rate needs a rate window of samples, then the pressure
		// must last GuestMemoryPressureAfter (5m).
		Wait: 9 * time.Minute,
		Play: func(ctx context.Context, s *Simulator, ns, vm string) error {
			if err := s.bootScenarioVM(ctx, ns, VMSpec{Name: vm, GuestAgent: true}, ScenarioNodes[0]); err != nil {
				return err
			}
			s.SetDomainFault(ns, vm, DomainMemoryPressure, true)
			return nil
		},
	},
	{
		Name:        "migration-not-converging",
		Description: "A live migration from node-a to node-b is Running, but the guest dirties memory faster than it is copied, so the data remaining does not shrink: the failure is predicted before any timeout.",
		Layer:       v1alpha1.LayerControlPlane, Verdict: v1alpha1.VerdictDegraded, Reason: v1alpha1.ReasonMigrationNotConverging,
		DomainStats: true,
		// Rates over a window, then samples whose remaining data does not
		// shrink.
		Wait: 5 * time.Minute,
		Play: func(ctx context.Context, s *Simulator, ns, vm string) error {
			if err := s.bootScenarioVM(ctx, ns, VMSpec{Name: vm, GuestAgent: true}, ScenarioNodes[0]); err != nil {
				return err
			}
			s.SetDomainFault(ns, vm, DomainMigrationNotConverging, true)
			m, err := s.StartMigration(ctx, ns, vm, MigrationOptions{TargetNode: ScenarioNodes[1], Outcome: MigrationStuck, At: kubevirtv1.MigrationRunning})
			if err != nil {
				return err
			}
			return m.Run(ctx)
		},
	},
	{
		Name:        "filesystem-nearly-full",
		Description: "The guest's root filesystem fills to 96% (its data disk stays at 41%), past KubeVirt's critical 95%: the guest agent reports it through virt-api's filesystemlist, and the guest layer names the mount point.",
		Layer:       v1alpha1.LayerGuest, Verdict: v1alpha1.VerdictDegraded, Reason: v1alpha1.ReasonFilesystemNearlyFull,
		GuestProbe: true,
		// The VM's next probe, at most an interval away.
		Wait: 6 * time.Minute,
		Play: func(ctx context.Context, s *Simulator, ns, vm string) error {
			s.SetGuestFilesystemUsage(ns, vm, "/", 96)
			s.SetGuestFilesystemUsage(ns, vm, "/var/lib/data", 41)
			return s.bootScenarioVM(ctx, ns, VMSpec{Name: vm, GuestAgent: true}, ScenarioNodes[0])
		},
	},
	{
		Name:        "guest-info-unreachable",
		Description: "virt-api's guest-information calls for the VM stop answering (every guestosinfo, userlist and filesystemlist call hangs, as when virt-handler or the launcher's command socket does not answer) while the VMI still says AgentConnected=True: the probes time out and the node layer names the path.",
		Layer:       v1alpha1.LayerNode, Verdict: v1alpha1.VerdictUnknown, Reason: v1alpha1.ReasonGuestInfoUnreachable,
		GuestProbe: true,
		// Three probes an interval apart, each cut at its timeout.
		Wait: 16 * time.Minute,
		Play: func(ctx context.Context, s *Simulator, ns, vm string) error {
			s.SetGuestUsers(ns, vm, "fedora")
			s.SetGuestAgentFault(ns, vm, GuestAgentUnresponsive, true)
			return s.bootScenarioVM(ctx, ns, VMSpec{Name: vm, GuestAgent: true}, ScenarioNodes[0])
		},
	},
}

// ScenarioByName returns the catalogue entry called name.
func ScenarioByName(name string) (Scenario, bool) {
	for _, sc := range Scenarios {
		if sc.Name == name {
			return sc, true
		}
	}
	return Scenario{}, false
}

// createScenarioVM makes sure the namespace and the shared nodes exist and
// creates the VM.
func (s *Simulator) createScenarioVM(ctx context.Context, ns string, spec VMSpec) error {
	if err := s.EnsureNamespace(ctx, ns); err != nil {
		return err
	}
	for _, n := range ScenarioNodes {
		if err := s.EnsureNode(ctx, n); err != nil {
			return err
		}
	}
	spec.Namespace = ns
	if err := s.CreateVM(ctx, spec); err != nil {
		return fmt.Errorf("scenario VM: %w", err)
	}
	return nil
}

// bootScenarioVM creates the VM and boots it on node (added if missing).
func (s *Simulator) bootScenarioVM(ctx context.Context, ns string, spec VMSpec, node string) error {
	if err := s.createScenarioVM(ctx, ns, spec); err != nil {
		return err
	}
	if err := s.EnsureNode(ctx, node); err != nil {
		return err
	}
	return s.Boot(ctx, ns, spec.Name, node)
}
