package verdict

import (
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/api/v1alpha1"
)

// waitingForSyncMessage is the message of DecentralizedLiveMigrationFailure
// while a receiver waits for its source, a normal step. The API module has
// no constant for it.
const waitingForSyncMessage = "waiting for incoming synchronization, unable to proceed" // kv:pkg/synchronization-controller/synchronization-controller.go:67

// manualRecovery is the VM's ManualRecoveryRequired condition when True.
// virt-controller sets it when the VMI was removed or became final while a
// volume migration was in progress, and then refuses to start the VM
// (kv:pkg/virt-controller/watch/vm/vm.go:1636-1646 syncVolumeMigration,
// :1268-1271 startVMI); virt-api refuses a start as well
// (kv:pkg/virt-api/rest/lifecycle.go:63). It goes once the VM's volumes
// point at the original ones again (vm.go:1629-1635).
func manualRecovery(vm *kubevirtv1.VirtualMachine) *kubevirtv1.VirtualMachineCondition {
	if vm == nil {
		return nil
	}
	if c := vmCond(vm, kubevirtv1.VirtualMachineManualRecoveryRequired); c != nil && c.Status == corev1.ConditionTrue {
		return c
	}
	return nil
}

// manualRecoveryMessage says what ManualRecoveryRequired means for a VM.
func manualRecoveryMessage(c *kubevirtv1.VirtualMachineCondition, what string) string {
	msg := what + ": a volume migration did not finish (ManualRecoveryRequired"
	if c.Reason != "" {
		msg += ": " + c.Reason
	}
	return msg + "); point the VM's volumes back at the original claims or finish the migration by hand"
}

// cpManualRecovery judges a VM that should run and has no VMI while
// ManualRecoveryRequired holds: virt-controller will not create one, so
// the VM is Degraded at once rather than Starting.
func (e *engine) cpManualRecovery(l *layer) bool {
	f := &e.f
	c := manualRecovery(f.vm)
	if c == nil {
		return false
	}
	since := mt(c.LastTransitionTime)
	l.add(v1alpha1.VerdictDegraded, v1alpha1.ReasonManualRecoveryRequired,
		manualRecoveryMessage(c, "the VM should run but virt-controller refuses to start it"), since)
	l.cite(kindVM, f.vm.Name, "status.conditions[ManualRecoveryRequired].status", string(c.Status), since)
	return true
}

// vmStateNotes reads what the VM's status says beyond its lifecycle: each
// is a step or a wait a user expects to see, none a fault KubeVirt reports,
// so they are notes (docs/verdicts.md, Decisions).
func (e *engine) vmStateNotes(l *layer) {
	f := &e.f
	vm := f.vm
	if c := manualRecovery(vm); c != nil && f.lc != lcStarting {
		// A VM that should run is judged in cpStarting; elsewhere the
		// condition says that the next start will be refused.
		since := mt(c.LastTransitionTime)
		l.note(v1alpha1.ReasonManualRecoveryRequired, manualRecoveryMessage(c, "virt-controller will refuse to start the VM"), since)
		l.cite(kindVM, vm.Name, "status.conditions[ManualRecoveryRequired].status", string(c.Status), since)
	}
	// RestartRequired: a change to the VM's template cannot reach the
	// running VMI; it takes effect at the next start
	// (kv:pkg/virt-controller/watch/vm/vm.go:2978-2987 setRestartRequired,
	// :2989-3062 syncRestartRequired).
	if c := vmCond(vm, kubevirtv1.VirtualMachineRestartRequired); c != nil && c.Status == corev1.ConditionTrue && f.vmi != nil {
		since := mt(c.LastTransitionTime)
		l.note(v1alpha1.ReasonRestartRequired, withDetail("changes to the VM wait for a restart of its VMI", c.Message), since)
		l.cite(kindVM, vm.Name, "status.conditions[RestartRequired].status", string(c.Status), since)
	}
	e.memoryDumpNote(l)
	// The VM records the volumes being migrated to new storage
	// (kv:pkg/virt-controller/watch/vm/vm.go:938-945) until the migration
	// ends or is cancelled (:1629-1657). The VMI's VolumesChange says more
	// when the VMI is in the input (vmiStateNotes).
	if st := vm.Status.VolumeUpdateState; st != nil && st.VolumeMigrationState != nil && len(st.VolumeMigrationState.MigratedVolumes) > 0 &&
		(f.vmi == nil || f.vmiCond(kubevirtv1.VirtualMachineInstanceVolumesChange) == nil) {
		n := len(st.VolumeMigrationState.MigratedVolumes)
		l.note(v1alpha1.ReasonVolumeMigration,
			"the VM records a storage migration of "+strconv.Itoa(n)+" volume(s) to new claims", time.Time{})
		l.cite(kindVM, vm.Name, "status.volumeUpdateState.volumeMigrationState.migratedVolumes[0].volumeName",
			st.VolumeMigrationState.MigratedVolumes[0].VolumeName, time.Time{})
	}
}

// memoryDumpNote reads the VM's status.memoryDumpRequest, which
// virt-controller's VM controller advances through Associating,
// InProgress, Unmounting, Completed and Dissociating, or Failed
// (api:core/v1/types.go MemoryDumpPhase;
// kv:pkg/virt-controller/watch/vm/vm.go). libvirt pauses a non-live dump,
// so a dump explains a domain whose vCPUs stand still meanwhile. A failed
// dump leaves the VM running as it was: a note, as the user who asked for
// it retries.
func (e *engine) memoryDumpNote(l *layer) {
	f := &e.f
	r := f.vm.Status.MemoryDumpRequest
	if r == nil {
		return
	}
	claim := orUnknown(r.ClaimName)
	var msg string
	since := mtp(r.StartTimestamp)
	switch r.Phase {
	case kubevirtv1.MemoryDumpAssociating, kubevirtv1.MemoryDumpInProgress, kubevirtv1.MemoryDumpUnmounting:
		msg = "a memory dump of the VM to claim " + claim + " is in progress (phase " + string(r.Phase) + ")"
		if !since.IsZero() {
			msg += " since " + rfc(since)
		}
	case kubevirtv1.MemoryDumpFailed:
		msg = withDetail("a memory dump of the VM to claim "+claim+" failed", r.Message)
		if t := mtp(r.EndTimestamp); !t.IsZero() {
			since = t
		}
	default:
		return
	}
	l.note(v1alpha1.ReasonMemoryDump, msg, since)
	l.cite(kindVM, f.vm.Name, "status.memoryDumpRequest.phase", string(r.Phase), since)
}

// vmiStateNotes reads the VMI conditions and status KubeVirt writes about
// operations on a live VMI that the other rules do not judge.
func (e *engine) vmiStateNotes(l *layer) {
	f := &e.f
	vmi := f.vmi
	// VolumesChange: True while a storage migration of the VMI's volumes
	// waits for or runs in the live migration the workload updater starts
	// (kv:pkg/virt-controller/watch/vmi/storage.go:396-405 syncVolumesUpdate,
	// kv:pkg/virt-controller/watch/workload-updater/workload-updater.go:
	// 327-330); virt-handler removes it on the target when it is done
	// (kv:pkg/virt-handler/migration-target.go:1212). False with
	// VolumesChangeCancellation: the update was cancelled
	// (kv:pkg/virt-controller/watch/volume-migration/volume-migration.go:
	// 265-277). The migration's own rules judge the migration; a failed
	// one is MigrationFailed, and a VMI lost during it is the VM's
	// ManualRecoveryRequired.
	if c := f.vmiCond(kubevirtv1.VirtualMachineInstanceVolumesChange); c != nil {
		since := mt(c.LastTransitionTime)
		switch {
		case c.Status == corev1.ConditionTrue:
			l.note(v1alpha1.ReasonVolumeMigration,
				withDetail("a change of the VMI's volumes waits for or runs in a live migration (VolumesChange)", c.Message), since)
		case c.Reason == kubevirtv1.VirtualMachineInstanceReasonVolumesChangeCancellation:
			l.note(v1alpha1.ReasonVolumeMigration, "the storage migration of the VMI's volumes was cancelled", since)
		default:
			since = time.Time{}
		}
		if !since.IsZero() || c.Status == corev1.ConditionTrue {
			l.cite(kindVMI, vmi.Name, "status.conditions[VolumesChange].status", string(c.Status), since)
		}
	}
	// DecentralizedLiveMigrationFailure: the synchronization controller's
	// word on a cross-cluster migration; it also holds while a receiver
	// waits for its source ("waiting for incoming synchronization"), and
	// virt-controller copies it into the VMIM's
	// decentralizedMigrationBlocked, which the migration rules judge
	// (kv:pkg/synchronization-controller/synchronization-controller.go:
	// 405-470; kv:pkg/virt-controller/watch/migration/migration.go:678-695).
	if c := f.vmiCondTrue(kubevirtv1.VirtualMachineInstanceDecentralizedLiveMigrationFailure); c != nil {
		since := mt(c.LastTransitionTime)
		msg := withDetail("the decentralized live migration of the VMI reports a problem", c.Message)
		if c.Message == waitingForSyncMessage {
			msg = "the VMI waits for the source of its decentralized live migration to synchronize"
		}
		l.note(v1alpha1.ReasonDecentralizedMigrationFailure, msg, since)
		l.cite(kindVMI, vmi.Name, "status.conditions[DecentralizedLiveMigrationFailure].message", c.Message, since)
	}
	// SoftwareEmulation: virt-handler found the domain emulated in software
	// for another architecture (kv:pkg/virt-handler/vm.go:860-883): slow by
	// design, as the user asked for it.
	if c := f.vmiCondTrue(kubevirtv1.VirtualMachineInstanceSoftwareEmulation); c != nil {
		since := mt(c.LastTransitionTime)
		l.note(v1alpha1.ReasonSoftwareEmulation, withDetail("the VM runs with software emulation, much slower than hardware virtualization", c.Message), since)
		l.cite(kindVMI, vmi.Name, "status.conditions[SoftwareEmulation].reason", c.Reason, since)
	}
	e.backupNote(l)
}

// backupNote reads the VMI's status.changedBlockTracking.backupStatus
// (v1.8+): a backup in progress may freeze the guest's filesystems
// (quiesce) and holds the VMI's migrations back (the VMIM's
// migrationBlockedByBackup, kv:pkg/virt-controller/watch/migration/
// migration.go:1581-1640 handleVMBackup, kv:pkg/util/migrations
// IsBackupInProgress).
func (e *engine) backupNote(l *layer) {
	f := &e.f
	cbt := f.vmi.Status.ChangedBlockTracking
	if cbt == nil || cbt.BackupStatus == nil {
		return
	}
	b := cbt.BackupStatus
	name := orUnknown(b.BackupName)
	switch {
	case b.Failed:
		since := mtp(b.EndTimestamp)
		msg := "backup " + name + " of the VMI failed"
		if b.BackupMsg != nil && *b.BackupMsg != "" {
			msg += ": " + *b.BackupMsg
		}
		l.note(v1alpha1.ReasonBackup, msg, since)
		l.cite(kindVMI, f.vmi.Name, "status.changedBlockTracking.backupStatus.failed", "true", since)
	case !b.Completed:
		since := mtp(b.StartTimestamp)
		msg := "backup " + name + " of the VMI is in progress"
		if !since.IsZero() {
			msg += " since " + rfc(since)
		}
		l.note(v1alpha1.ReasonBackup, msg+"; it may freeze the guest's filesystems and holds back the VMI's migrations", since)
		l.cite(kindVMI, f.vmi.Name, "status.changedBlockTracking.backupStatus.backupName", b.BackupName, since)
	}
}
