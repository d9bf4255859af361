package simulator

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// The storage operations Everyday plays when Everyday.Storage is set: the
// normal life of VMs whose disks are claims and CDI DataVolumes. They need
// the real kube-controller-manager (the PV binder and the attach-detach
// controller) and CDI's CRD, as the storage plays do.
const (
	// OpDataVolumeImport: a VM whose root disk is a DataVolume: CDI
	// creates its claim (Pending), the PV binder binds it, the import
	// runs for minutes with its progress, succeeds, and the VM boots
	// through the attached volume.
	OpDataVolumeImport = "datavolume-import"
	// OpImportScratchRestart: a DataVolume import whose importer exits
	// once for scratch space and is restarted (restartCount 1, Running
	// False with reason Error, the VM DataVolumeError meanwhile), then
	// goes on.
	OpImportScratchRestart = "datavolume-import-scratch-restart"
	// OpClaimWFFC: a VM whose root disk is a claim of a
	// WaitForFirstConsumer class: Pending until kube-scheduler has chosen
	// the launcher pod's node, then provisioned there, bound, attached.
	OpClaimWFFC = "pvc-wait-for-first-consumer"
	// OpClaimImmediate: a VM whose root disk is a claim of an Immediate
	// class, provisioned and bound before the launcher pod is placed.
	OpClaimImmediate = "pvc-immediate"
	// OpHotplugDataVolume: a DataVolume imported while the VM runs, then
	// hot-plugged into it (virtctl addvolume): attachment pod, attach,
	// Ready.
	OpHotplugDataVolume = "hotplug-datavolume"
)

// EverydayStorageOperations lists the storage operations, in a stable
// order; Everyday plays them when Storage is set.
var EverydayStorageOperations = []string{OpDataVolumeImport, OpImportScratchRestart, OpClaimWFFC, OpClaimImmediate, OpHotplugDataVolume}

// The storage fleet's plan: how many VMs of each kind, and how long an
// import takes in simulated time (a 5 GiB image at 20 to 40 MB/s, in
// importSteps progress reports).
const (
	storageDataVolumeVMs = 4
	storageClaimVMs      = 4
	importSteps          = 6
	importStepMin        = 20 * time.Second
	importStepMax        = 45 * time.Second
)

// storageVM is one VM of the storage fleet and what it does.
type storageVM struct {
	name types.NamespacedName
	node string
	// dataVolume: the root disk is a DataVolume; else a claim of class.
	dataVolume bool
	class      string
	// scratch: the import restarts once for scratch space.
	scratch bool
	// hotplug: once running, a DataVolume is imported and hot-plugged.
	hotplug bool
}

// storageFleet is the storage VMs, spread over the nodes that are not
// drained (a ReadWriteOnce volume does not live-migrate).
func (e *Everyday) storageFleet(ns string) []storageVM {
	var nodes []string
	for _, n := range e.Nodes {
		if n != e.drained() {
			nodes = append(nodes, n)
		}
	}
	var out []storageVM
	for i := range storageDataVolumeVMs {
		out = append(out, storageVM{
			name: types.NamespacedName{Namespace: ns, Name: fmt.Sprintf("vm-dv-%02d", i)},
			node: nodes[i%len(nodes)], dataVolume: true, scratch: i%2 == 1,
		})
	}
	for i := range storageClaimVMs {
		class := StorageClassWFFC
		if i%2 == 1 {
			class = StorageClassImmediate
		}
		out = append(out, storageVM{
			name: types.NamespacedName{Namespace: ns, Name: fmt.Sprintf("vm-pvc-%02d", i)},
			node: nodes[(i+1)%len(nodes)], class: class, hotplug: i < 2,
		})
	}
	return out
}

// prepareStorage installs the CSI driver and registers its node plugin on
// every node of the life.
func (e *Everyday) prepareStorage(ctx context.Context) error {
	if err := e.Sim.InstallCSIDriver(ctx); err != nil {
		return err
	}
	for _, n := range e.Nodes {
		if err := e.Sim.RegisterCSINode(ctx, n); err != nil {
			return err
		}
	}
	return nil
}

// storageLife plays every storage VM's life; it returns when they have
// all ended.
func (e *Everyday) storageLife(ctx context.Context, ns string) {
	var wg sync.WaitGroup
	for i, v := range e.storageFleet(ns) {
		wg.Go(func() {
			if !e.until(ctx, time.Duration(i)*bootSpread/storageDataVolumeVMs/2) {
				return
			}
			e.fail(ctx, e.storageVMLife(ctx, v))
		})
	}
	wg.Wait()
}

// storageVMLife is one storage VM: created, its volume provisioned (and
// for a DataVolume imported), booted through the attached volume, then,
// for some, a DataVolume hot-plugged.
func (e *Everyday) storageVMLife(ctx context.Context, v storageVM) error {
	ns, name, s := v.name.Namespace, v.name.Name, e.Sim
	spec := VMSpec{Namespace: ns, Name: name, GuestAgent: true}
	op := OpClaimImmediate
	switch {
	case v.dataVolume:
		spec.DataVolume, op = true, OpDataVolumeImport
	default:
		spec.RootClaim = RootClaim(name)
		if v.class == StorageClassWFFC {
			op = OpClaimWFFC
		}
		if err := s.CreateClaim(ctx, ClaimSpec{Namespace: ns, Name: spec.RootClaim, StorageClass: v.class}); err != nil {
			return err
		}
	}
	e.note("%s: %s", v.name, op)
	if err := s.CreateVM(ctx, spec); err != nil {
		return err
	}
	if v.dataVolume {
		if !e.importDataVolume(ctx, ns, RootDataVolume(name), v.scratch) {
			return nil
		}
	} else {
		// virt-controller creates the launcher pod; kube-scheduler's
		// volume binding takes its time (for a WaitForFirstConsumer
		// claim the claim waits for it, Pending).
		if err := s.CreateLauncherPod(ctx, ns, name); err != nil {
			return err
		}
		if !e.sleep(ctx, e.between(3*time.Second, 20*time.Second)) {
			return nil
		}
	}
	if err := s.BootWithVolumes(ctx, ns, name, v.node); err != nil {
		return fmt.Errorf("boot %s through its volumes: %w", name, err)
	}
	e.count(op)
	if !v.hotplug || !e.until(ctx, opsStart+e.between(0, time.Minute)) {
		return nil
	}
	return e.hotplugDataVolume(ctx, v)
}

// importDataVolume is CDI importing the DataVolume ns/dv: its claim bound
// by the PV binder, the importer reporting progress importSteps times
// (with scratch, exiting once for scratch space after the first report and
// restarted 5 to 20 seconds later), then Succeeded. It says whether ctx is
// still live.
func (e *Everyday) importDataVolume(ctx context.Context, ns, dv string, scratch bool) bool {
	if _, err := e.Sim.AwaitBound(ctx, ns, dv); err != nil {
		e.fail(ctx, fmt.Errorf("binding DataVolume %s/%s: %w", ns, dv, err))
		return false
	}
	for step := range importSteps {
		if err := e.Sim.ImportProgress(ctx, ns, dv, float64(step*100)/importSteps); err != nil {
			e.fail(ctx, fmt.Errorf("import of %s/%s: %w", ns, dv, err))
			return false
		}
		if !e.sleep(ctx, e.between(importStepMin, importStepMax)) {
			return false
		}
		if scratch && step == 0 {
			if !e.scratchRestart(ctx, ns, dv) {
				return false
			}
		}
	}
	if err := e.Sim.CompleteImport(ctx, ns, dv); err != nil {
		e.fail(ctx, fmt.Errorf("import of %s/%s: %w", ns, dv, err))
		return false
	}
	return true
}

// scratchRestart is the importer of ns/dv exiting for scratch space and
// restarted 5 to 20 seconds later. It says whether ctx is still live.
func (e *Everyday) scratchRestart(ctx context.Context, ns, dv string) bool {
	e.note("%s/%s: importer restarts for scratch space", ns, dv)
	if err := e.Sim.RestartImporter(ctx, ns, dv, ScratchSpaceRequired); err != nil {
		e.fail(ctx, fmt.Errorf("importer restart of %s/%s: %w", ns, dv, err))
		return false
	}
	if !e.sleep(ctx, e.between(5*time.Second, 20*time.Second)) {
		return false
	}
	if err := e.Sim.ResumeImport(ctx, ns, dv); err != nil {
		e.fail(ctx, fmt.Errorf("importer restart of %s/%s: %w", ns, dv, err))
		return false
	}
	e.count(OpImportScratchRestart)
	return true
}

// hotplugDataVolume is a user importing a data disk into a DataVolume and
// hot-plugging it into the running VM once imported (virtctl addvolume
// --volume-name=<DataVolume>): the attachment pod, the attach-detach
// controller's VolumeAttachment answered by the external-attacher, then
// virt-handler attaching the disk to the domain (Ready).
func (e *Everyday) hotplugDataVolume(ctx context.Context, v storageVM) error {
	ns, name, s := v.name.Namespace, v.name.Name, e.Sim
	dv, volume := name+"-data", "data"
	e.note("%s: hotplug DataVolume %s", v.name, dv)
	if err := s.CreateDataVolume(ctx, ns, dv, StorageClassImmediate); err != nil {
		return err
	}
	if !e.importDataVolume(ctx, ns, dv, false) {
		return nil
	}
	if err := s.HotplugVolume(ctx, ns, name, volume, dv); err != nil {
		return err
	}
	if !e.sleep(ctx, e.between(2*time.Second, 10*time.Second)) {
		return nil
	}
	if _, err := s.AwaitAttachment(ctx, ns, dv, v.node); err != nil {
		return err
	}
	if err := s.CompleteHotplug(ctx, ns, name, volume); err != nil {
		return err
	}
	e.count(OpHotplugDataVolume)
	return nil
}
