package verdict

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/vmobs/vmobs/internal/kvtest"
	"github.com/vmobs/vmobs/internal/vmifacts"
)

// The engine's tables build their objects with internal/kvtest, written the
// way KubeVirt v1.9 writes them: a VM vm1 in namespace prod, its VMI running
// on node-a in virt-launcher-vm1-abcde, a masquerade pod network and a bridge
// Multus network, a connected guest agent. The short names below keep the
// tables readable; the objects are built only in kvtest.

var now = kvtest.Now

const (
	ns       = kvtest.Namespace
	vmName   = kvtest.VMName
	vmiUID   = kvtest.VMIUID
	podUID   = kvtest.PodUID
	pod2UID  = kvtest.Pod2UID
	migUID   = kvtest.MigUID
	podName  = kvtest.PodName
	pod2Name = kvtest.Pod2Name
	nodeA    = kvtest.NodeA
	nodeB    = kvtest.NodeB
	migName  = kvtest.MigName
	secIface = kvtest.SecIface
)

type (
	vmMod  = kvtest.VMMod
	vmiMod = kvtest.VMIMod
)

var (
	at  = kvtest.At
	atp = kvtest.Atp

	vm              = kvtest.VM
	withRunStrategy = kvtest.WithRunStrategy
	vmStopped       = kvtest.VMStopped

	runningVMI       = kvtest.RunningVMI
	pendingVMI       = kvtest.PendingVMI
	vmiPhase         = kvtest.VMIPhase
	withCondition    = kvtest.WithCondition
	withoutCondition = kvtest.WithoutCondition
	agentGone        = kvtest.AgentGone
	noAgentEver      = kvtest.NoAgentEver
	paused           = kvtest.Paused
	migrationState   = kvtest.MigrationState
	evacuating       = kvtest.Evacuating
	guestIP          = kvtest.GuestIP
	onTarget         = kvtest.OnTarget

	launcherPod       = kvtest.LauncherPod
	targetPod         = kvtest.TargetPod
	podPhase          = kvtest.PodPhase
	computeTerminated = kvtest.ComputeTerminated
	podUnschedulable  = kvtest.PodUnschedulable

	node        = kvtest.Node
	heartbeatAt = kvtest.HeartbeatAt
	nodeReady   = kvtest.NodeReady

	vmim      = kvtest.VMIM
	vmimIn    = kvtest.VMIMIn
	vmimFinal = kvtest.VMIMFinal
)

func ptr[T any](v T) *T { return &v }

// ---- Input

type inputMod func(*Input)

// input is the healthy running VM: VM, VMI, its launcher pod and its node.
func input(mods ...inputMod) Input {
	in := Input{
		Namespace: ns, Name: vmName,
		VM:     vm(),
		VMI:    runningVMI(),
		Pods:   []*corev1.Pod{launcherPod()},
		Nodes:  map[string]*corev1.Node{nodeA: node(nodeA), nodeB: node(nodeB)},
		Policy: DefaultPolicy(),
		Now:    now,
	}
	for _, m := range mods {
		m(&in)
	}
	return in
}

// ---- Domain stats

// withDomain gives the input the domain stats of the running VMI as the
// fold hands them over: exported on node-a, sampled 20 s ago, a guest at
// a quarter of a core with 4 GiB of memory, storage at its usual 2 ms per
// operation, no network errors. mods change them.
func withDomain(mods ...func(*vmifacts.DomainFacts)) inputMod {
	return func(in *Input) {
		d := &vmifacts.DomainFacts{
			VMIUID:              vmiUID,
			SampledAt:           now.Add(-20 * time.Second),
			Exported:            true,
			Node:                nodeA,
			NodeExports:         true,
			VCPUUsage:           sample(0.25),
			MemoryDomain:        sample(4 << 30),
			MemoryAvailable:     sample(4 << 30),
			MemoryUsable:        sample(2.5 * (1 << 30)),
			SwapRate:            sample(0),
			StorageLatency:      sample(0.002),
			StorageBaseline:     sample(0.002),
			StorageReadRate:     sample(1 << 20),
			StorageWriteRate:    sample(512 << 10),
			NetworkReceiveRate:  sample(64 << 10),
			NetworkTransmitRate: sample(32 << 10),
			NetworkErrorRate:    sample(0),
		}
		for _, m := range mods {
			m(d)
		}
		in.Domain = d
	}
}

// ---- Guest probe

// withGuest gives the input the guest agent's answers to the probe as the
// fold hands them over: answered 30 s ago by the running VMI's agent, a
// Fedora guest with two users and its root filesystem 40% used. mods change
// them.
func withGuest(mods ...func(*vmifacts.GuestFacts)) inputMod {
	return func(in *Input) {
		g := &vmifacts.GuestFacts{
			VMIUID:        vmiUID,
			ProbedAt:      now.Add(-30 * time.Second),
			Answered:      true,
			Hostname:      "vm-1.example.org",
			OSName:        "Fedora Linux 41 (Cloud Edition)",
			KernelRelease: "6.11.4-301.fc41.x86_64",
			Timezone:      "UTC, 0",
			Users:         2,
			UsersKnown:    true,
			Filesystems: []vmifacts.GuestFilesystem{
				{MountPoint: "/", Type: "xfs", UsedPercent: 40, Since: now.Add(-time.Hour)},
				{MountPoint: "/boot", Type: "ext4", UsedPercent: 20, Since: now.Add(-time.Hour)},
			},
		}
		for _, m := range mods {
			m(g)
		}
		in.Guest = g
	}
}

// sample is a value that is there.
func sample(v float64) vmifacts.Value { return vmifacts.Value{V: v, OK: true} }
