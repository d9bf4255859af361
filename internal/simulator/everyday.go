package simulator

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// The everyday operations of a fleet that Everyday plays: none of them is a
// fault, so none may turn a VMObservation layer Degraded, Failed or
// Unknown. The names are the keys of EverydayReport.Operations.
const (
	// OpBoot: a VM boots and its guest agent connects before DHCP has
	// given the guest an address: the primary interface has no IP for 20
	// to 150 seconds, then gets one.
	OpBoot = "boot-agent-before-dhcp"
	// OpReboot: the guest reboots: the agent disconnects (AgentConnected
	// removed, guestOSInfo stays) and connects again, before DHCP again.
	OpReboot = "guest-reboot"
	// OpPause: the user pauses the VM and unpauses it: Paused removed
	// first, then the launcher pod's unpaused readiness gate, then the
	// kubelet's Ready.
	OpPause = "user-pause-unpause"
	// OpMigration: a `virtctl migrate` live migration, run to success.
	OpMigration = "live-migration"
	// OpMigrationQueued: a migration that waited in Pending for a slot
	// under parallelMigrationsPerCluster or
	// parallelOutboundMigrationsPerNode.
	OpMigrationQueued = "migration-queued"
	// OpMigrationSlowTarget: a migration whose target pod waited in
	// Scheduling for a while (an image pull on a node that lacks it).
	OpMigrationSlowTarget = "migration-slow-target"
	// OpPostCopy: a migration switched to post-copy: the source domain
	// paused, migrationState.mode PostCopy, until the handoff.
	OpPostCopy = "migration-post-copy"
	// OpCPUHotplug and OpMemoryHotplug: a CPU or memory hotplug applied
	// through the workload updater's live migration.
	OpCPUHotplug    = "cpu-hotplug"
	OpMemoryHotplug = "memory-hotplug"
	// OpMemoryDump: `virtctl memory-dump`: the domain paused while the
	// dump is written, VM status.memoryDumpRequest InProgress, then
	// Completed.
	OpMemoryDump = "memory-dump"
	// OpFreezeThaw: a snapshot's filesystem freeze, then thaw.
	OpFreezeThaw = "snapshot-freeze-thaw"
	// OpDrain: a node drained under evictionStrategy LiveMigrate: cordon,
	// evictions, evacuation migrations, uncordon.
	OpDrain = "node-drain"
	// OpEvacuation: one evacuation migration of a drain.
	OpEvacuation = "evacuation-migration"
	// OpFullByDesign: a guest whose agent lists squashfs, iso9660 or
	// "System Reserved" filesystems at 100 %.
	OpFullByDesign = "filesystems-full-by-design"
	// OpSwap: a guest swapping with plenty of memory headroom.
	OpSwap = "swap-with-headroom"
	// OpScrapeSkipped: one virt-handler scrape fails, once.
	OpScrapeSkipped = "scrape-skipped"
	// OpHeartbeat: a round of virt-handler heartbeats on every node.
	OpHeartbeat = "heartbeat"
)

// EverydayOperations lists the operations Everyday plays, in a stable
// order.
var EverydayOperations = []string{
	OpBoot, OpReboot, OpPause, OpMigration, OpMigrationQueued, OpMigrationSlowTarget, OpPostCopy,
	OpCPUHotplug, OpMemoryHotplug, OpMemoryDump, OpFreezeThaw, OpDrain, OpEvacuation,
	OpFullByDesign, OpSwap, OpScrapeSkipped, OpHeartbeat,
}

// DomainSwapWithHeadroom: the guest swaps 2 MiB/s in and 4 MiB/s out, as
// under DomainMemoryPressure, while its memory has plenty of headroom (a
// swappiness that pages out idle memory). A high bit, apart from the faults
// of domainstats.go.
const DomainSwapWithHeadroom DomainFault = 1 << 15

// Operations are the operations the life plays: EverydayOperations, and
// EverydayStorageOperations when Storage is set.
func (e *Everyday) Operations() []string {
	if e.Storage {
		return slices.Concat(EverydayOperations, EverydayStorageOperations)
	}
	return EverydayOperations
}

// EverydayLife is the life's length in simulated time: every operation
// has ended by about 10 minutes; 12 leave a margin.
const EverydayLife = 12 * time.Minute

// KubeVirt's defaults that the fleet's life depends on.
const (
	// ParallelMigrationsPerCluster and ParallelOutboundMigrationsPerNode
	// are the KubeVirt CR's migration limits (kv:pkg/virt-config
	// ParallelMigrationsPerClusterDefault, ParallelOutboundMigrationsPerNodeDefault);
	// a migration over them waits in Pending without a target pod
	// (kv:pkg/virt-controller/watch/migration/migration.go:1369-1383).
	ParallelMigrationsPerCluster      = 5
	ParallelOutboundMigrationsPerNode = 2
	// VirtHandlerScrapeEvery is the scrape interval of KubeVirt's
	// ServiceMonitor for virt-handler.
	VirtHandlerScrapeEvery = 30 * time.Second
	// HeartbeatEvery is virt-handler's heartbeat period.
	HeartbeatEvery = time.Minute
)

// Everyday plays the normal life of a fleet through a Simulator: boots,
// reboots, pauses, migrations queued behind KubeVirt's limits, a post-copy,
// hotplugs, a memory dump, snapshot freezes, a drain, guests with
// filesystems full by design and swap with headroom, a skipped scrape and
// heartbeats, written as KubeVirt writes them. Every timer of the life is
// in simulated time and runs Factor times faster on the wall clock; a
// caller that accelerates must scale the engine's policy by the same
// factor.
type Everyday struct {
	Sim *Simulator
	// Fleet are the VMs, created by Play; when nil, VMs VMs named
	// vm-000, vm-001, … in Namespace. From 24 VMs on, every operation has
	// VMs of its own.
	Fleet     []types.NamespacedName
	Namespace string
	VMs       int
	// Nodes the fleet runs on (at least 2); from 3 on, the last one is
	// drained.
	Nodes []string
	// Factor is how many simulated seconds pass in a second of the wall
	// clock (1 or more).
	Factor float64
	// Duration is how long the life plays at least, in simulated time
	// (at least 10 minutes); Play returns once it has passed and every
	// operation has ended.
	Duration time.Duration
	// Seed seeds the random timings.
	Seed int64
	// SetScrapeDown, when set, is how a scrape is skipped: the caller's
	// Prometheus misses node's virt-handler for one scrape. Nil skips it
	// through SetVirtHandlerMetricsDown.
	SetScrapeDown func(node string, down bool)
	// Note, when set, is told each operation as it starts.
	Note func(format string, a ...any)
	// Storage adds the storage life (everyday_storage.go): VMs booting
	// from claims and imported DataVolumes, a DataVolume hot-plugged. It
	// needs kube-controller-manager's PV binder and attach-detach
	// controller and CDI's CRD (testenv.Options ControllerManager, CDI).
	Storage bool

	mu      sync.Mutex
	rnd     *rand.Rand
	start   time.Time
	ops     map[string]int
	errs    []error
	running int
	out     map[string]int // node → outbound migrations running
	slot    *sync.Cond
	node    map[types.NamespacedName]string        // VM → node
	booted  map[types.NamespacedName]chan struct{} // closed once the VM's boot has ended
}

// GoDone runs f in a goroutine; the channel closes when f returns.
func GoDone(f func()) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	return done
}

// EverydayReport is what Play did.
type EverydayReport struct {
	// Operations counts each operation that completed.
	Operations map[string]int
	// Errors are the steps that failed (none in a good run).
	Errors []string
	// Wall is how long the play took on the wall clock.
	Wall time.Duration
}

// wall converts simulated time to wall-clock time.
func (e *Everyday) wall(d time.Duration) time.Duration {
	return time.Duration(float64(d) / e.Factor)
}

// sleep waits d of simulated time, or until ctx ends.
func (e *Everyday) sleep(ctx context.Context, d time.Duration) bool {
	return Sleep(ctx, e.wall(d))
}

// Sleep waits d of wall-clock time or until ctx ends, and says whether to
// go on: false once ctx has ended.
func Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// until waits until simulated time at since the start.
func (e *Everyday) until(ctx context.Context, at time.Duration) bool {
	return e.sleep(ctx, at-time.Duration(float64(time.Since(e.start))*e.Factor))
}

// between is a random simulated duration in [lo, hi].
func (e *Everyday) between(lo, hi time.Duration) time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	return lo + time.Duration(e.rnd.Int64N(int64(hi-lo)+1))
}

func (e *Everyday) count(op string) {
	e.mu.Lock()
	e.ops[op]++
	e.mu.Unlock()
}

func (e *Everyday) fail(ctx context.Context, err error) {
	if err == nil || ctx.Err() != nil {
		return
	}
	e.mu.Lock()
	e.errs = append(e.errs, err)
	e.mu.Unlock()
}

func (e *Everyday) note(format string, a ...any) {
	if e.Note != nil {
		e.Note(format, a...)
	}
}

// Validate checks the fleet is big enough for every operation.
func (e *Everyday) Validate() error {
	switch {
	case e.Sim == nil:
		return errors.New("everyday: no simulator")
	case len(e.Fleet) == 0 && e.VMs < 1:
		return errors.New("everyday: no VMs")
	case len(e.Nodes) < 2:
		return fmt.Errorf("everyday: %d nodes, want at least 2 (for migrations)", len(e.Nodes))
	case e.Factor < 1:
		return fmt.Errorf("everyday: factor %v, want 1 or more", e.Factor)
	case e.Duration < 10*time.Minute:
		return fmt.Errorf("everyday: %s of life, want at least 10m", e.Duration)
	}
	return nil
}

// The fleet's plan, in simulated time from the start: each VM boots in the
// first minute, every operation but the fleet-wide ones has VMs of its own
// (roles), and they start once the boots have settled.
const (
	bootSpread   = time.Minute
	opsStart     = 3 * time.Minute
	drainAt      = 4*time.Minute + 30*time.Second
	scrapeSkipAt = 5 * time.Minute
	// memoryDumpTakes is the dump of a large guest to a PVC: 64 GiB at
	// about 200 MB/s.
	memoryDumpTakes = 6 * time.Minute
)

// role is what a VM does besides booting and living.
type role int

const (
	roleIdle role = iota
	roleReboot
	rolePause
	roleFreeze
	roleMemoryDump
	roleCPUHotplug
	roleMemoryHotplug
	roleMigrate
	roleMigrateSlowTarget
	rolePostCopy
	roleSwap
)

// roleOf spreads the roles over the VMs that do not run on the drained
// node (whose VMs are evacuated), the memory dump on an early boot so
// that its six minutes end within ten.
func roleOf(i int) role {
	return [...]role{
		roleReboot, rolePause, roleFreeze, roleMemoryDump, roleCPUHotplug, roleMemoryHotplug, roleMigrateSlowTarget, roleSwap,
		roleReboot, rolePostCopy, roleMigrate, roleCPUHotplug, roleMemoryHotplug, roleFreeze, rolePause, roleReboot,
	}[i%16]
}

// Play plays the fleet's life for Duration and reports it; it returns an
// error only when the plan cannot start.
func (e *Everyday) Play(ctx context.Context) (*EverydayReport, error) {
	if err := e.Validate(); err != nil {
		return nil, err
	}
	e.rnd = rand.New(rand.NewPCG(uint64(e.Seed), 0xda7))
	e.ops = map[string]int{}
	e.out = map[string]int{}
	e.node = map[types.NamespacedName]string{}
	e.booted = map[types.NamespacedName]chan struct{}{}
	e.slot = sync.NewCond(&e.mu)
	if e.Fleet == nil {
		for i := range e.VMs {
			e.Fleet = append(e.Fleet, types.NamespacedName{Namespace: e.Namespace, Name: fmt.Sprintf("vm-%03d", i)})
		}
	}
	namespaces := map[string]bool{}
	for _, v := range e.Fleet {
		if !namespaces[v.Namespace] {
			namespaces[v.Namespace] = true
			if err := e.Sim.EnsureNamespace(ctx, v.Namespace); err != nil {
				return nil, err
			}
		}
	}
	for _, n := range e.Nodes {
		if err := e.Sim.EnsureNode(ctx, n); err != nil {
			return nil, err
		}
	}
	if e.Storage {
		if err := e.prepareStorage(ctx); err != nil {
			return nil, err
		}
	}
	// Wake the migrations waiting for a slot when the caller gives up.
	stop := context.AfterFunc(ctx, func() {
		e.mu.Lock()
		e.slot.Broadcast()
		e.mu.Unlock()
	})
	defer stop()
	e.start = time.Now()

	// Every operation starts within the first minutes and runs to its
	// end, however slow the API server; the heartbeats go on until the
	// operations have ended and Duration has passed.
	drained := e.drained()
	var ops sync.WaitGroup
	ops.Go(func() { e.skipScrape(ctx) })
	var drainVMs []types.NamespacedName
	k := 0
	for i, v := range e.Fleet {
		node := e.Nodes[i%len(e.Nodes)]
		e.node[v] = node
		e.booted[v] = make(chan struct{})
		r := roleIdle
		if node == drained {
			drainVMs = append(drainVMs, v)
		} else {
			r = roleOf(k)
			k++
		}
		nics := 1 + i%3/2
		ops.Go(func() { e.live(ctx, v, node, nics, i, r) })
	}
	if drained != "" {
		ops.Go(func() { e.drain(ctx, drained, drainVMs) })
	}
	if e.Storage {
		ops.Go(func() { e.storageLife(ctx, e.Fleet[0].Namespace) })
	}
	beat, stopBeats := context.WithCancel(ctx)
	beats := GoDone(func() { e.heartbeats(beat) })
	ops.Wait()
	e.until(ctx, e.Duration)
	stopBeats()
	<-beats

	rep := &EverydayReport{Operations: map[string]int{}, Wall: time.Since(e.start)}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, op := range e.Operations() {
		rep.Operations[op] = e.ops[op]
	}
	for _, err := range e.errs {
		rep.Errors = append(rep.Errors, err.Error())
	}
	sort.Strings(rep.Errors)
	return rep, nil
}

// live is one VM's life: its filesystems, its boot, then its role.
func (e *Everyday) live(ctx context.Context, v types.NamespacedName, node string, nics, i int, r role) {
	ns, name, s := v.Namespace, v.Name, e.Sim
	// Filesystems full by design, in the agent from the first answer:
	// snaps (squashfs) on every third guest, a mounted ISO on every
	// fifth, a Windows "System Reserved" volume on every seventh.
	var full []GuestFilesystem
	if i%3 == 0 {
		full = append(full, GuestFilesystem{MountPoint: "/snap/core22/1621", Type: "squashfs", Disk: "loop0", TotalBytes: 77_725_696, UsedBytes: 77_725_696})
	}
	if i%5 == 0 {
		full = append(full, GuestFilesystem{MountPoint: "/media/cdrom", Type: "iso9660", Disk: "sr0", TotalBytes: 2_147_483_648, UsedBytes: 2_147_483_648})
	}
	if i%7 == 0 {
		full = append(full, GuestFilesystem{MountPoint: "System Reserved", Type: "NTFS", Disk: "vda1", TotalBytes: 52_424_704, UsedBytes: 52_424_704})
	}
	if len(full) > 0 {
		s.AddGuestFilesystems(ns, name, full...)
		e.count(OpFullByDesign)
	}
	if !e.until(ctx, time.Duration(i)*bootSpread/time.Duration(len(e.Fleet))) {
		return
	}
	err := e.boot(ctx, v, node, nics)
	close(e.booted[v])
	if err != nil {
		e.fail(ctx, fmt.Errorf("boot %s: %w", name, err))
		return
	}
	start := opsStart + e.between(0, time.Minute)
	if r == roleMemoryDump {
		start = 0 // at once: it is the longest
	}
	if !e.until(ctx, start) {
		return
	}
	switch r {
	case roleReboot:
		err = e.reboot(ctx, v)
	case rolePause:
		err = e.pause(ctx, v)
	case roleFreeze:
		err = e.freezeThaw(ctx, v)
	case roleMemoryDump:
		err = e.memoryDump(ctx, v)
	case roleCPUHotplug, roleMemoryHotplug:
		err = e.hotplug(ctx, v, r == roleCPUHotplug)
	case roleMigrate, roleMigrateSlowTarget:
		err = e.migrate(ctx, v, migrateOpts{slowTarget: r == roleMigrateSlowTarget})
	case rolePostCopy:
		err = e.migrate(ctx, v, migrateOpts{postCopy: true})
	case roleSwap:
		err = e.swap(ctx, v)
	}
	e.fail(ctx, err)
}

// boot creates the VM and boots it as KubeVirt does, a step at a time
// with the lags between the components, and the guest agent connecting
// before DHCP.
func (e *Everyday) boot(ctx context.Context, v types.NamespacedName, node string, nics int) error {
	ns, name, s := v.Namespace, v.Name, e.Sim
	if err := s.CreateVM(ctx, VMSpec{Namespace: ns, Name: name, GuestAgent: true, Interfaces: nics}); err != nil {
		return err
	}
	steps := []struct {
		lag  [2]time.Duration
		step func() error
	}{
		{[2]time.Duration{time.Second, 3 * time.Second}, func() error { return s.CreateLauncherPod(ctx, ns, name) }},
		{[2]time.Duration{2 * time.Second, 8 * time.Second}, func() error { return s.StartLauncherPod(ctx, ns, name, node) }},
		{[2]time.Duration{3 * time.Second, 10 * time.Second}, func() error { return s.StartDomain(ctx, ns, name) }},
	}
	for _, st := range steps {
		if !e.sleep(ctx, e.between(st.lag[0], st.lag[1])) {
			return nil
		}
		if err := st.step(); err != nil {
			return err
		}
	}
	if !e.agentBeforeDHCP(ctx, v) {
		return nil
	}
	e.count(OpBoot)
	return nil
}

// agentBeforeDHCP is a guest coming up: the agent starts 10 to 30 seconds
// into the boot and virt-handler's interface poller runs at once
// (kv:pkg/virt-handler/agent-poller/agent_poller.go): it finds no IPv4 on
// the interfaces and clears the address from the status
// (kv:pkg/network/netstat: "in case GA does not include IP data, it will
// clear IP status data"); DHCP answers 20 to 150 seconds later and the
// next poll reports the address. It says whether ctx is still live.
func (e *Everyday) agentBeforeDHCP(ctx context.Context, v types.NamespacedName) bool {
	if !e.sleep(ctx, e.between(10*time.Second, 30*time.Second)) {
		return false
	}
	if err := e.Sim.ConnectAgentWithoutIP(ctx, v.Namespace, v.Name); err != nil {
		e.fail(ctx, fmt.Errorf("agent of %s: %w", v, err))
		return false
	}
	if !e.sleep(ctx, e.between(20*time.Second, 150*time.Second)) {
		return false
	}
	if err := e.Sim.ReportGuestIPs(ctx, v.Namespace, v.Name); err != nil {
		e.fail(ctx, fmt.Errorf("DHCP of %s: %w", v, err))
		return false
	}
	return true
}

// reboot is `reboot` in the guest: the virtio-serial port closes and
// virt-handler removes AgentConnected (kv:pkg/virt-handler/vm.go, the
// agent channel's state), guestOSInfo stays; the guest is back after 20 to
// 60 seconds and its agent connects before DHCP again.
func (e *Everyday) reboot(ctx context.Context, v types.NamespacedName) error {
	e.note("%s: guest reboot", v)
	if err := e.Sim.DisconnectAgent(ctx, v.Namespace, v.Name); err != nil {
		return fmt.Errorf("reboot %s: %w", v, err)
	}
	if e.agentBeforeDHCP(ctx, v) {
		e.count(OpReboot)
	}
	return nil
}

// pause is `virtctl pause`, 1 to 3 minutes, then `virtctl unpause` the way
// KubeVirt writes it: virt-handler removes the Paused condition; then
// virt-controller flips the pod's kubevirt.io/virtual-machine-unpaused
// readiness gate (kv:pkg/virt-controller/watch/vmi/lifecycle.go:932-950,
// syncPausedConditionToPod); then the kubelet re-evaluates the pod's Ready
// on its next status sync and virt-controller copies it into the VMI. A
// paused domain's vCPUs use no time.
func (e *Everyday) pause(ctx context.Context, v types.NamespacedName) error {
	ns, name, s := v.Namespace, v.Name, e.Sim
	e.note("%s: user pause", v)
	if err := s.Pause(ctx, ns, name, PausedByUser); err != nil {
		return fmt.Errorf("pause %s: %w", name, err)
	}
	s.SetDomainFault(ns, name, DomainVCPUFrozen, true)
	if !e.sleep(ctx, e.between(time.Minute, 3*time.Minute)) {
		return nil
	}
	vmi, err := s.updateVMI(ctx, ns, name, managerVirtHandler, func(vmi *kubevirtv1.VirtualMachineInstance) error {
		removeVMICond(vmi, kubevirtv1.VirtualMachineInstancePaused)
		return nil
	})
	if err != nil {
		return fmt.Errorf("unpause %s: %w", name, err)
	}
	s.SetDomainFault(ns, name, DomainVCPUFrozen, false)
	if err := s.syncVM(ctx, ns, name); err != nil {
		return err
	}
	if !e.sleep(ctx, e.between(time.Second, 3*time.Second)) {
		return nil
	}
	pod, err := s.currentLauncher(ctx, vmi)
	if err != nil {
		return fmt.Errorf("unpause %s: %w", name, err)
	}
	if pod == nil {
		return fmt.Errorf("unpause %s: no launcher pod on %s", name, vmi.Status.NodeName)
	}
	if _, err := s.updatePodStatus(ctx, pod.Namespace, pod.Name, managerVirtController, func(p *corev1.Pod) error {
		setPodCond(p, corev1.PodCondition{Type: kubevirtv1.VirtualMachineUnpaused, Status: corev1.ConditionTrue, Reason: "NotPaused"}, s.now())
		return nil
	}); err != nil {
		return err
	}
	if !e.sleep(ctx, e.between(time.Second, 10*time.Second)) {
		return nil
	}
	if _, err := s.updatePodStatus(ctx, pod.Namespace, pod.Name, managerKubelet, func(p *corev1.Pod) error {
		kubeletReady(p, s.now())
		return nil
	}); err != nil {
		return err
	}
	if err := s.controllerSync(ctx, ns, name); err != nil {
		return err
	}
	e.count(OpPause)
	return nil
}

// freezeThaw is a VMSnapshot's freeze: the agent freezes the filesystems
// for 3 to 15 seconds, then thaws them.
func (e *Everyday) freezeThaw(ctx context.Context, v types.NamespacedName) error {
	ns, name, s := v.Namespace, v.Name, e.Sim
	e.note("%s: snapshot freeze", v)
	if err := s.FreezeFilesystems(ctx, ns, name); err != nil {
		return fmt.Errorf("freeze %s: %w", name, err)
	}
	if !e.sleep(ctx, e.between(3*time.Second, 15*time.Second)) {
		return nil
	}
	if err := s.ThawFilesystems(ctx, ns, name); err != nil {
		return fmt.Errorf("thaw %s: %w", name, err)
	}
	e.count(OpFreezeThaw)
	return nil
}

// swap is a guest that swaps a little for the rest of its life while most
// of its memory is free.
func (e *Everyday) swap(_ context.Context, v types.NamespacedName) error {
	e.note("%s: swap with headroom", v)
	e.Sim.SetDomainFault(v.Namespace, v.Name, DomainSwapWithHeadroom, true)
	e.count(OpSwap)
	return nil
}

// memoryDump is `virtctl memory-dump get --claim-name=…` of a large guest
// (memoryDumpTakes): virt-api sets the VM's memoryDumpRequest Associating;
// virt-controller, once the volume is in the VM, sets InProgress
// (kv:pkg/storage/memorydump/memorydump.go:128-177); virt-handler reports
// the dump volume MemoryDumpInProgress while virt-launcher dumps without
// DUMP_LIVE, so libvirt pauses the domain (its vCPUs use no time, and no
// Paused condition is written); then MemoryDumpCompleted, and
// virt-controller moves the request to Unmounting, then Completed once the
// volume is gone from the VMI.
func (e *Everyday) memoryDump(ctx context.Context, v types.NamespacedName) error {
	ns, name, s := v.Namespace, v.Name, e.Sim
	claim := name + "-dump"
	e.note("%s: memory dump", v)
	setReq := func(manager string, fn func(*kubevirtv1.VirtualMachineMemoryDumpRequest)) error {
		_, err := s.updateVMStatus(ctx, ns, name, manager, func(vm *kubevirtv1.VirtualMachine) error {
			if vm.Status.MemoryDumpRequest == nil {
				vm.Status.MemoryDumpRequest = &kubevirtv1.VirtualMachineMemoryDumpRequest{ClaimName: claim}
			}
			fn(vm.Status.MemoryDumpRequest)
			return nil
		})
		return err
	}
	setVolume := func(fn func(vmi *kubevirtv1.VirtualMachineInstance)) error {
		_, err := s.updateVMI(ctx, ns, name, managerVirtHandler, func(vmi *kubevirtv1.VirtualMachineInstance) error {
			fn(vmi)
			return nil
		})
		return err
	}
	if err := setReq(managerVirtAPI, func(r *kubevirtv1.VirtualMachineMemoryDumpRequest) { r.Phase = kubevirtv1.MemoryDumpAssociating }); err != nil {
		return fmt.Errorf("memory dump %s: %w", name, err)
	}
	if !e.sleep(ctx, e.between(2*time.Second, 5*time.Second)) {
		return nil
	}
	if err := setReq(managerVirtController, func(r *kubevirtv1.VirtualMachineMemoryDumpRequest) { r.Phase = kubevirtv1.MemoryDumpInProgress }); err != nil {
		return err
	}
	started := s.now()
	target := fmt.Sprintf("%s-%s-%s.memory.dump", name, claim, started.UTC().Format("20060102-150405"))
	if err := setVolume(func(vmi *kubevirtv1.VirtualMachineInstance) {
		vmi.Status.VolumeStatus = append(vmi.Status.VolumeStatus, kubevirtv1.VolumeStatus{
			Name: claim, Phase: kubevirtv1.MemoryDumpVolumeInProgress, Reason: "MemoryDumpInProgress",
			Message:          "Memory dump Volume is attached, memory dump in progress",
			HotplugVolume:    &kubevirtv1.HotplugVolumeStatus{},
			MemoryDumpVolume: &kubevirtv1.DomainMemoryDumpInfo{StartTimestamp: &started, ClaimName: claim, TargetFileName: target},
		})
	}); err != nil {
		return err
	}
	s.SetDomainFault(ns, name, DomainVCPUFrozen, true)
	if !e.sleep(ctx, memoryDumpTakes) {
		return nil
	}
	s.SetDomainFault(ns, name, DomainVCPUFrozen, false)
	ended := s.now()
	if err := setVolume(func(vmi *kubevirtv1.VirtualMachineInstance) {
		for i := range vmi.Status.VolumeStatus {
			if v := &vmi.Status.VolumeStatus[i]; v.Name == claim && v.MemoryDumpVolume != nil {
				v.Phase, v.Reason, v.Message = kubevirtv1.MemoryDumpVolumeCompleted, "MemoryDumpCompleted", "Memory dump completed successfully"
				v.MemoryDumpVolume.EndTimestamp = &ended
			}
		}
	}); err != nil {
		return err
	}
	if err := setReq(managerVirtController, func(r *kubevirtv1.VirtualMachineMemoryDumpRequest) {
		r.Phase, r.StartTimestamp, r.EndTimestamp, r.FileName = kubevirtv1.MemoryDumpUnmounting, &started, &ended, &target
	}); err != nil {
		return err
	}
	if !e.sleep(ctx, e.between(2*time.Second, 5*time.Second)) {
		return nil
	}
	if err := setVolume(func(vmi *kubevirtv1.VirtualMachineInstance) {
		var keep []kubevirtv1.VolumeStatus
		for _, v := range vmi.Status.VolumeStatus {
			if v.Name != claim {
				keep = append(keep, v)
			}
		}
		vmi.Status.VolumeStatus = keep
	}); err != nil {
		return err
	}
	if err := setReq(managerVirtController, func(r *kubevirtv1.VirtualMachineMemoryDumpRequest) { r.Phase = kubevirtv1.MemoryDumpCompleted }); err != nil {
		return err
	}
	e.count(OpMemoryDump)
	return nil
}

// hotplug is an instancetype or template change applied to a running VM:
// the hotplug is requested (HotVCPUChange or HotMemoryChange), the
// workload updater starts its migration only when fewer than
// parallelMigrationsPerCluster migrations run
// (kv:pkg/virt-controller/watch/workload-updater/workload-updater.go:534-545),
// and once the migration succeeds the target's virt-handler reports the new
// topology or memory and virt-controller drops the condition.
func (e *Everyday) hotplug(ctx context.Context, v types.NamespacedName, cpu bool) error {
	ns, name, s := v.Namespace, v.Name, e.Sim
	op := OpMemoryHotplug
	if cpu {
		op = OpCPUHotplug
		e.note("%s: CPU hotplug", v)
		if err := s.RequestCPUHotplug(ctx, ns, name, 2); err != nil {
			return fmt.Errorf("CPU hotplug %s: %w", name, err)
		}
	} else {
		e.note("%s: memory hotplug", v)
		if err := s.RequestMemoryHotplug(ctx, ns, name, resource.MustParse("4Gi")); err != nil {
			return fmt.Errorf("memory hotplug %s: %w", name, err)
		}
	}
	// The workload updater's round: it creates the migration only while
	// the cluster has a free slot.
	if !e.sleep(ctx, e.between(time.Second, 30*time.Second)) {
		return nil
	}
	if !e.waitSlot(ctx, "") {
		return nil
	}
	e.release("")
	if err := e.migrate(ctx, v, migrateOpts{workloadUpdate: true}); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return nil
	}
	if _, err := s.updateVMI(ctx, ns, name, managerVirtHandler, func(vmi *kubevirtv1.VirtualMachineInstance) error {
		if cpu {
			t := *vmi.Status.CurrentCPUTopology
			t.Sockets = vmi.Spec.Domain.CPU.Sockets
			vmi.Status.CurrentCPUTopology = &t
		} else if m := vmi.Status.Memory; m != nil {
			g := vmi.Spec.Domain.Memory.Guest.DeepCopy()
			m.GuestRequested, m.GuestCurrent = &g, &g
		}
		return nil
	}); err != nil {
		return err
	}
	if _, err := s.updateVMI(ctx, ns, name, managerVirtController, func(vmi *kubevirtv1.VirtualMachineInstance) error {
		removeVMICond(vmi, kubevirtv1.VirtualMachineInstanceVCPUChange)
		removeVMICond(vmi, kubevirtv1.VirtualMachineInstanceMemoryChange)
		return nil
	}); err != nil {
		return err
	}
	if err := s.syncVM(ctx, ns, name); err != nil {
		return err
	}
	e.count(op)
	return nil
}

// migrateOpts shape one of the fleet's migrations.
type migrateOpts struct {
	evacuation, workloadUpdate, postCopy, slowTarget bool
	target                                           string
}

// waitSlot waits until a migration from node may run under KubeVirt's
// limits and takes the slot (release gives it back). With node "" only the
// cluster-wide limit counts. It returns false, holding nothing, when ctx
// ends first.
func (e *Everyday) waitSlot(ctx context.Context, node string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for e.running >= ParallelMigrationsPerCluster || (node != "" && e.out[node] >= ParallelOutboundMigrationsPerNode) {
		if ctx.Err() != nil {
			return false
		}
		e.slot.Wait()
	}
	if ctx.Err() != nil {
		return false
	}
	e.running++
	if node != "" {
		e.out[node]++
	}
	return true
}

func (e *Everyday) release(node string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.running--
	if node != "" {
		e.out[node]--
	}
	e.slot.Broadcast()
}

// busy says whether the cluster's migration slots are all taken.
func (e *Everyday) busy(node string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.running >= ParallelMigrationsPerCluster || e.out[node] >= ParallelOutboundMigrationsPerNode
}

// migrate runs one live migration of the fleet to success: the VMIM is
// created at once and waits in Pending while KubeVirt's limits are reached;
// the target pod is scheduled and started (for a slow target, after 1 to 2
// minutes in Scheduling); the copy takes 20 to 90 seconds (a post-copy
// migration switches after 20 seconds: migrationState.mode PostCopy, the
// source domain paused until the handoff 30 to 60 seconds later).
func (e *Everyday) migrate(ctx context.Context, v types.NamespacedName, o migrateOpts) error {
	ns, name, s := v.Namespace, v.Name, e.Sim
	e.mu.Lock()
	src := e.node[v]
	e.mu.Unlock()
	target := o.target
	if target == "" {
		target = e.targetFor(src)
	}
	m, err := s.StartMigration(ctx, ns, name, MigrationOptions{TargetNode: target, Evacuation: o.evacuation})
	if err != nil {
		return fmt.Errorf("migrate %s: %w", name, err)
	}
	if err := m.Step(ctx); err != nil { // Pending
		return err
	}
	queued := e.busy(src)
	if !e.waitSlot(ctx, src) {
		return nil
	}
	defer e.release(src)
	for !m.Done() {
		lag := e.between(time.Second, 4*time.Second)
		switch m.Phase() {
		case kubevirtv1.MigrationScheduling:
			lag = e.between(3*time.Second, 10*time.Second)
			if o.slowTarget {
				lag = e.between(time.Minute, 2*time.Minute)
			}
		case kubevirtv1.MigrationRunning:
			lag = e.between(15*time.Second, 45*time.Second)
			if o.postCopy {
				if !e.sleep(ctx, 20*time.Second) {
					return nil
				}
				if err := e.postCopy(ctx, v, m); err != nil {
					return err
				}
				lag = e.between(30*time.Second, 60*time.Second)
			}
		}
		if !e.sleep(ctx, lag) {
			return nil
		}
		if err := m.Step(ctx); err != nil {
			return fmt.Errorf("migrate %s (%s): %w", name, m.Phase(), err)
		}
	}
	if o.postCopy {
		s.SetDomainFault(ns, name, DomainVCPUFrozen, false)
		e.count(OpPostCopy)
	}
	e.mu.Lock()
	e.node[v] = target
	e.mu.Unlock()
	if queued {
		e.count(OpMigrationQueued)
	}
	if o.slowTarget {
		e.count(OpMigrationSlowTarget)
	}
	switch {
	case o.evacuation:
		e.count(OpEvacuation)
	case !o.workloadUpdate:
		e.count(OpMigration)
	}
	return nil
}

// postCopy is the source virt-handler switching the running migration to
// post-copy (migrationState.mode PostCopy): libvirt pauses the source
// domain (reason Postcopy, for which virt-handler writes no Paused
// condition, kv:pkg/virt-handler/vm.go calculatePausedCondition) and its
// vCPUs use no time until the handoff.
func (e *Everyday) postCopy(ctx context.Context, v types.NamespacedName, m *Migration) error {
	e.note("%s: migration switched to post-copy", v)
	if _, err := e.Sim.updateVMI(ctx, v.Namespace, v.Name, managerVirtHandler, func(vmi *kubevirtv1.VirtualMachineInstance) error {
		ms := vmi.Status.MigrationState
		if ms == nil || ms.MigrationUID != m.UID {
			return fmt.Errorf("VMI %s is not handed off to migration %s", v, m.Name)
		}
		ms.Mode = kubevirtv1.MigrationPostCopy
		return nil
	}); err != nil {
		return err
	}
	e.Sim.SetDomainFault(v.Namespace, v.Name, DomainVCPUFrozen, true)
	return nil
}

// drain is `kubectl drain` of node: the node is cordoned, each launcher
// pod's eviction is refused by virt-api's webhook, which marks the VMI
// for evacuation (Evict), and the evacuation controller creates a
// migration for each (Evacuation), queued behind KubeVirt's limits; the
// node is uncordoned once they have all succeeded.
func (e *Everyday) drain(ctx context.Context, node string, vms []types.NamespacedName) {
	s := e.Sim
	if !e.until(ctx, drainAt) {
		return
	}
	e.note("%s: drain (%d VMs)", node, len(vms))
	cordon := func(on bool) error {
		_, err := s.updateNode(ctx, node, managerUser, func(n *corev1.Node) error {
			n.Spec.Unschedulable = on
			return nil
		})
		return err
	}
	if err := cordon(true); err != nil {
		e.fail(ctx, fmt.Errorf("cordon %s: %w", node, err))
		return
	}
	var wg sync.WaitGroup
	for i, v := range vms {
		target := e.Nodes[i%(len(e.Nodes)-1)]
		wg.Go(func() {
			// A drain evicts running VMs; one still booting is evicted
			// once it runs.
			select {
			case <-ctx.Done():
				return
			case <-e.booted[v]:
			}
			if err := s.Evict(ctx, v.Namespace, v.Name); err != nil {
				e.fail(ctx, fmt.Errorf("evict %s: %w", v, err))
				return
			}
			if !e.sleep(ctx, e.between(time.Second, 5*time.Second)) {
				return
			}
			e.fail(ctx, e.migrate(ctx, v, migrateOpts{evacuation: true, target: target}))
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return
	}
	if err := cordon(false); err != nil {
		e.fail(ctx, fmt.Errorf("uncordon %s: %w", node, err))
		return
	}
	e.count(OpDrain)
}

// Node is where the VM v runs at the end of the life (after its
// migrations).
func (e *Everyday) Node(v types.NamespacedName) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.node[v]
}

// drained is the node the life drains: the last, when there are 3 or
// more, so that two remain for the other migrations.
func (e *Everyday) drained() string {
	if len(e.Nodes) < 3 {
		return ""
	}
	return e.Nodes[len(e.Nodes)-1]
}

// targetFor is where a migration from src goes: the next node after it
// that is not drained.
func (e *Everyday) targetFor(src string) string {
	i := max(slices.Index(e.Nodes, src), 0)
	for k := 1; k < len(e.Nodes); k++ {
		if n := e.Nodes[(i+k)%len(e.Nodes)]; n != e.drained() {
			return n
		}
	}
	return e.Nodes[(i+1)%len(e.Nodes)]
}

// heartbeats is virt-handler's heartbeat on every node, every minute.
func (e *Everyday) heartbeats(ctx context.Context) {
	e.Sim.RunHeartbeats(ctx, Heartbeats{Every: e.wall(HeartbeatEvery), Round: func(_ time.Time, failed []error) {
		if len(failed) > 0 {
			e.fail(ctx, errors.Join(failed...))
			return
		}
		e.count(OpHeartbeat)
	}})
}

// skipScrape makes the first node's virt-handler miss one scrape: its
// metrics endpoint fails for one scrape interval.
func (e *Everyday) skipScrape(ctx context.Context) {
	if !e.until(ctx, scrapeSkipAt) {
		return
	}
	set := e.SetScrapeDown
	if set == nil {
		set = e.Sim.SetVirtHandlerMetricsDown
	}
	node := e.Nodes[0]
	e.note("%s: one virt-handler scrape skipped", node)
	set(node, true)
	ok := e.sleep(ctx, VirtHandlerScrapeEvery)
	set(node, false)
	if ok {
		e.count(OpScrapeSkipped)
	}
}

// ConnectAgentWithoutIP is the guest agent connecting before the guest has
// an address: as ConnectAgent, but the agent reports no IPv4, so
// virt-handler clears the primary interface's address.
func (s *Simulator) ConnectAgentWithoutIP(ctx context.Context, ns, name string) error {
	return s.connectAgent(ctx, ns, name, "ConnectAgentWithoutIP", false)
}

// ReportGuestIPs is the agent poller's next run once DHCP has answered:
// the interfaces get their addresses.
func (s *Simulator) ReportGuestIPs(ctx context.Context, ns, name string) error {
	_, pod, err := s.vmiAndLauncher(ctx, ns, name, "ReportGuestIPs", kubevirtv1.Running)
	if err != nil {
		return err
	}
	_, err = s.updateVMI(ctx, ns, name, managerVirtHandler, func(vmi *kubevirtv1.VirtualMachineInstance) error {
		vmi.Status.Interfaces = mergeInterfaces(vmi, pod, true, vmiCond(vmi, kubevirtv1.VirtualMachineInstanceAgentConnected) != nil)
		return nil
	})
	return err
}

// RequestCPUHotplug raises the VM's sockets to sockets as KubeVirt v1.9
// does, and leaves the hotplug requested: the user edits the VM's
// template; virt-controller copies the sockets into the VMI's spec (within
// maxSockets) and adds HotVCPUChange=True
// (kv:pkg/virt-controller/watch/vmi/lifecycle.go requireCPUHotplug →
// syncHotplugCondition). The migration that applies it is the caller's.
func (s *Simulator) RequestCPUHotplug(ctx context.Context, ns, name string, sockets uint32) error {
	vmi, err := s.vmiInPhase(ctx, ns, name, "RequestCPUHotplug", kubevirtv1.Running)
	if err != nil {
		return err
	}
	cpu := vmi.Spec.Domain.CPU
	if cpu == nil || cpu.MaxSockets == 0 || sockets <= cpu.Sockets || sockets > cpu.MaxSockets {
		return fmt.Errorf("RequestCPUHotplug: VMI %s/%s cannot go to %d sockets", ns, name, sockets)
	}
	if _, err := s.updateVM(ctx, ns, name, managerUser, func(vm *kubevirtv1.VirtualMachine) error {
		if vm.Spec.Template == nil || vm.Spec.Template.Spec.Domain.CPU == nil {
			return fmt.Errorf("VM %s/%s has no template CPU", ns, name)
		}
		vm.Spec.Template.Spec.Domain.CPU.Sockets = sockets
		return nil
	}); err != nil {
		return err
	}
	if _, err := s.updateVMI(ctx, ns, name, managerVirtController, func(vmi *kubevirtv1.VirtualMachineInstance) error {
		vmi.Spec.Domain.CPU.Sockets = sockets
		raiseHotplugCond(vmi, kubevirtv1.VirtualMachineInstanceVCPUChange)
		return nil
	}); err != nil {
		return err
	}
	return s.syncVM(ctx, ns, name)
}
