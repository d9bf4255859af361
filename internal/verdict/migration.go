package verdict

import (
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/api/v1alpha1"
)

// migration is the newest migration of the VMI, with its live state.
type migration struct {
	present bool
	vmim    *kubevirtv1.VirtualMachineInstanceMigration // nil when only the VMI's migrationState tells
	uid     types.UID
	name    string
	phase   kubevirtv1.VirtualMachineInstanceMigrationPhase
	known   bool // phase is one KubeVirt v1.9 defines
	since   time.Time
	created time.Time
	// state is the live state: the VMI's migrationState when it refers to
	// this migration (VMIM.status.migrationState is filled only at the end,
	// kv:pkg/virt-controller/watch/migration/migration.go), else the VMIM's.
	state      *kubevirtv1.VirtualMachineInstanceMigrationState
	inProgress bool
	failed     bool
	succeeded  bool
	aborted    bool
}

var knownMigrationPhases = [...]kubevirtv1.VirtualMachineInstanceMigrationPhase{
	kubevirtv1.MigrationPhaseUnset, kubevirtv1.MigrationPending, kubevirtv1.MigrationScheduling,
	kubevirtv1.MigrationScheduled, kubevirtv1.MigrationPreparingTarget, kubevirtv1.MigrationTargetReady,
	kubevirtv1.MigrationRunning, kubevirtv1.MigrationSucceeded, kubevirtv1.MigrationFailed,
	kubevirtv1.MigrationWaitingForSync, kubevirtv1.MigrationSynchronizing,
}

// selectMigration picks the newest VMIM of the VMI by creationTimestamp,
// then name, then UID, so the choice does not depend on input order. The
// VMI's own migrationState wins when it refers to a migration newer than
// every VMIM given (the VMIM was garbage-collected or not captured).
func (f *facts) selectMigration() {
	var newest *kubevirtv1.VirtualMachineInstanceMigration
	for _, m := range f.in.Migrations {
		if m == nil || !f.migrationOfVMI(m) {
			continue
		}
		if newest == nil || newerVMIM(m, newest) {
			newest = m
		}
	}
	var vmiState *kubevirtv1.VirtualMachineInstanceMigrationState
	if f.vmi != nil {
		vmiState = f.vmi.Status.MigrationState
	}
	m := &f.mig
	if newest != nil {
		m.present, m.vmim = true, newest
		m.uid, m.name = newest.UID, newest.Name
		m.phase = newest.Status.Phase
		m.created = mt(newest.CreationTimestamp)
		m.since = vmimPhaseSince(newest, m.phase)
		if m.since.IsZero() {
			m.since = m.created
		}
		m.state = newest.Status.MigrationState
		if vmiState != nil && vmiState.MigrationUID != "" && vmiState.MigrationUID == newest.UID {
			m.state = vmiState
		}
	}
	if f.stateStandsAlone(vmiState, newest) {
		t := mtp(vmiState.StartTimestamp)
		if t.IsZero() {
			t = mtp(vmiState.EndTimestamp)
		}
		if newest == nil || t.After(m.created) {
			*m = migration{present: true, uid: vmiState.MigrationUID, state: vmiState, created: t}
			switch {
			case vmiState.Failed:
				m.phase = kubevirtv1.MigrationFailed
			case vmiState.Completed:
				m.phase = kubevirtv1.MigrationSucceeded
			default:
				m.phase = kubevirtv1.MigrationRunning
			}
			m.since = t
		}
	}
	if !m.present {
		return
	}
	for _, p := range knownMigrationPhases {
		if m.phase == p {
			m.known = true
		}
	}
	m.failed = m.phase == kubevirtv1.MigrationFailed || (m.state != nil && m.state.Failed)
	m.succeeded = !m.failed && m.phase == kubevirtv1.MigrationSucceeded
	m.aborted = m.state != nil && m.state.AbortStatus == kubevirtv1.MigrationAbortSucceeded
	m.inProgress = m.known && !m.failed && !m.succeeded
}

// stateStandsAlone says the VMI's migrationState is a migration of its own:
// one no given VMIM is, or, without a UID (a cut paste), the VMI's only
// migration when no VMIM is given, whose failed flag and reason stand.
func (f *facts) stateStandsAlone(st *kubevirtv1.VirtualMachineInstanceMigrationState, newest *kubevirtv1.VirtualMachineInstanceMigration) bool {
	if st == nil {
		return false
	}
	if st.MigrationUID == "" {
		return newest == nil
	}
	return !f.hasVMIM(st.MigrationUID)
}

func (f *facts) migrationOfVMI(m *kubevirtv1.VirtualMachineInstanceMigration) bool {
	n := m.Spec.VMIName
	return n == "" || n == f.name || (f.vmi != nil && n == f.vmi.Name)
}

func (f *facts) hasVMIM(uid types.UID) bool {
	for _, m := range f.in.Migrations {
		if m != nil && m.UID == uid && f.migrationOfVMI(m) {
			return true
		}
	}
	return false
}

func newerVMIM(a, b *kubevirtv1.VirtualMachineInstanceMigration) bool {
	ta, tb := a.CreationTimestamp.Time, b.CreationTimestamp.Time
	if !ta.Equal(tb) {
		return ta.After(tb)
	}
	if a.Name != b.Name {
		return a.Name > b.Name
	}
	return a.UID > b.UID
}

func vmimPhaseSince(m *kubevirtv1.VirtualMachineInstanceMigration, phase kubevirtv1.VirtualMachineInstanceMigrationPhase) time.Time {
	return phaseSince(m.Status.PhaseTransitionTimestamps, func(ts *kubevirtv1.VirtualMachineInstanceMigrationPhaseTransitionTimestamp) (bool, metav1.Time) {
		return ts.Phase == phase, ts.PhaseTransitionTimestamp
	})
}

// endTime is when the migration ended, as well as the objects say.
func (m *migration) endTime() time.Time {
	if m.state != nil {
		if t := mtp(m.state.EndTimestamp); !t.IsZero() {
			return t
		}
	}
	if m.vmim != nil && (m.phase == kubevirtv1.MigrationFailed || m.phase == kubevirtv1.MigrationSucceeded) {
		if t := vmimPhaseSince(m.vmim, m.phase); !t.IsZero() {
			return t
		}
	}
	return m.since
}

func (m *migration) kindName() (string, string) {
	if m.vmim != nil {
		return kindVMIM, m.name
	}
	return "", ""
}

// summary fills the status' migration block.
func (e *engine) migrationSummary() *v1alpha1.MigrationSummary {
	m := &e.f.mig
	if !m.present {
		return nil
	}
	s := &e.a.mig
	s.Name, s.UID, s.Phase = m.name, m.uid, bound(string(m.phase), maxPhase)
	s.PhaseSince = e.a.time(m.since)
	if st := m.state; st != nil {
		s.SourceNode, s.TargetNode = st.SourceNode, st.TargetNode
		s.SourcePod, s.TargetPod = st.SourcePod, st.TargetPod
		s.StartTime, s.EndTime = e.a.time(mtp(st.StartTimestamp)), e.a.time(mtp(st.EndTimestamp))
		s.Completed, s.Failed = st.Completed, st.Failed
		s.FailureReason = bound(st.FailureReason, maxValue)
		s.AbortStatus = string(st.AbortStatus)
		s.Mode = bound(string(st.Mode), maxPhase)
	}
	// While Pending, only the VMIM's own state names the source pod.
	if s.SourcePod == "" && m.vmim != nil && m.vmim.Status.MigrationState != nil {
		s.SourcePod = m.vmim.Status.MigrationState.SourcePod
	}
	return s
}

// migrationRules judges the newest migration of a running VMI.
func (e *engine) migrationRules(l *layer) {
	f := &e.f
	m := &f.mig
	if !m.present {
		return
	}
	kind, name := m.kindName()
	if kind == "" {
		kind, name = kindVMI, f.vmi.Name
	}
	label := "migration"
	if m.name != "" {
		label = "migration " + m.name
	}
	switch {
	case !m.known:
		l.add(v1alpha1.VerdictUnknown, v1alpha1.ReasonUnknownPhase,
			label+" reports phase "+quote(bound(string(m.phase), maxPhase))+", which KubeVirt v1.9 does not define", time.Time{})
		l.cite(kind, name, "status.phase", string(m.phase), time.Time{})

	case m.aborted:
		l.note(v1alpha1.ReasonMigrationAborted,
			label+" was aborted on request; the VM runs on "+orUnknown(f.vmi.Status.NodeName), m.endTime())
		e.citeMigrationState(l, "abortStatus", string(m.state.AbortStatus))

	case m.failed:
		end := m.endTime()
		msg := label + " failed"
		if m.state != nil && m.state.TargetNode != "" {
			msg += " on " + m.state.TargetNode
		}
		if m.state != nil && m.state.FailureReason != "" {
			msg += ": " + m.state.FailureReason
		}
		// A failed migration leaves the VM running on its source. It
		// degrades the VM while it is recent, or while the VMI still has to
		// move (eviction, MigrationRequired): after that it is history, and
		// a newer migration (which becomes the newest) supersedes it anyway.
		mustMove := f.evicting() || f.vmiCondTrue(kubevirtv1.VirtualMachineInstanceMigrationRequired) != nil
		ttlEnd := ceilSec(end.Add(f.pol.MigrationFailureTTL))
		if mustMove || end.IsZero() || f.now.Before(ttlEnd) {
			if !mustMove && !end.IsZero() {
				e.deadline(ttlEnd)
			}
			if f.lc == lcRunning {
				msg += "; the VM still runs on " + orUnknown(f.vmi.Status.NodeName)
			}
			l.add(v1alpha1.VerdictDegraded, v1alpha1.ReasonMigrationFailed, msg, end)
		} else {
			l.note(v1alpha1.ReasonLastMigrationFailed, msg+" at "+end.Format(time.RFC3339)+"; the VM runs on "+orUnknown(f.vmi.Status.NodeName), end)
		}
		if m.vmim != nil {
			l.cite(kindVMIM, m.name, "status.phase", string(m.phase), m.since)
		}
		if m.state != nil && (m.state.Failed || m.state.FailureReason != "") {
			e.citeMigrationState(l, "failureReason", m.state.FailureReason)
		}

	case m.inProgress:
		if e.migrationBlocked(l, label) {
			return
		}
		e.migrationInProgress(l, label)

	case m.succeeded && m.vmim != nil:
		l.context(kindVMIM, m.name, "status.phase", string(m.phase), m.since)
	}
}

// blockingMigrationConditions are the VMIM conditions with which
// virt-controller's migration controller says a migration cannot proceed
// until something else changes (api:core/v1/types.go).
var blockingMigrationConditions = [...]kubevirtv1.VirtualMachineInstanceMigrationConditionType{
	kubevirtv1.VirtualMachineInstanceMigrationRejectedByResourceQuota,
	kubevirtv1.VirtualMachineInstanceMigrationBlockedByUtilityVolumes,
	kubevirtv1.VirtualMachineInstanceDecentralizedMigrationBlocked,
}

// migrationBlocked reads the migration object's own conditions.
func (e *engine) migrationBlocked(l *layer, label string) bool {
	m := &e.f.mig
	if m.vmim == nil {
		return false
	}
	for i := range m.vmim.Status.Conditions {
		c := &m.vmim.Status.Conditions[i]
		if c.Status != corev1.ConditionTrue || !slices.Contains(blockingMigrationConditions[:], c.Type) {
			continue
		}
		msg := withDetail(label+" is blocked ("+string(c.Type)+")", c.Message)
		l.add(v1alpha1.VerdictDegraded, v1alpha1.ReasonMigrationBlocked, msg, mt(c.LastTransitionTime))
		l.cite(kindVMIM, m.name, "status.conditions["+string(c.Type)+"].status", string(c.Status), mt(c.LastTransitionTime))
		return true
	}
	// A backup of the VMI holds its migration back: the migration
	// controller requeues it until the backup completes, or, for a
	// system-critical migration (an evacuation), aborts the backup
	// (kv:pkg/virt-controller/watch/migration/migration.go:1581-1640
	// handleVMBackup, messages at :78-79). A step, not a fault; the backup
	// has its own progress, and a guest frozen too long for it is
	// FilesystemsFrozen on the guest layer.
	for i := range m.vmim.Status.Conditions {
		c := &m.vmim.Status.Conditions[i]
		if c.Type != kubevirtv1.VirtualMachineInstanceMigrationBlockedByBackup || c.Status != corev1.ConditionTrue {
			continue
		}
		since := mt(c.LastProbeTime)
		if t := mt(c.LastTransitionTime); !t.IsZero() {
			since = t
		}
		msg := label + " waits for a backup of the VMI to complete"
		if c.Message != "" {
			msg = label + " waits: " + c.Message
		}
		l.add(v1alpha1.VerdictProgressing, v1alpha1.ReasonMigrationWaitingForBackup, msg, since)
		l.cite(kindVMIM, m.name, "status.conditions["+string(c.Type)+"].message", c.Message, since)
		if cbt := e.f.vmi.Status.ChangedBlockTracking; cbt != nil && cbt.BackupStatus != nil && cbt.BackupStatus.BackupName != "" {
			l.cite(kindVMI, e.f.vmi.Name, "status.changedBlockTracking.backupStatus.backupName", cbt.BackupStatus.BackupName, mtp(cbt.BackupStatus.StartTimestamp))
		}
		return true
	}
	return false
}

func (e *engine) migrationInProgress(l *layer, label string) {
	f := &e.f
	m := &f.mig
	var deadline time.Time
	var since time.Time
	switch m.phase {
	case kubevirtv1.MigrationPending, kubevirtv1.MigrationPhaseUnset:
		// A Pending migration is often queued behind KubeVirt's
		// parallel-migration limits during a drain; KubeVirt times out only
		// its target pod (kv:pkg/virt-controller/watch/migration/
		// migration.go handlePendingPodTimeout), which the node layer
		// judges (TargetPodUnschedulable). No deadline here.
	case kubevirtv1.MigrationRunning:
		// Memory transfer may take long; KubeVirt's progressTimeout and
		// completionTimeoutPerGiB abort a transfer that stalls. Running is
		// stuck only once the VMI says the transfer completed and the VMIM
		// still does not finish (kubevirt#17203).
		if m.state != nil && m.state.Completed {
			since = mtp(m.state.EndTimestamp)
		}
	default:
		since = m.since
	}
	timeout := f.pol.MigrationPhaseTimeout
	if m.phase == kubevirtv1.MigrationScheduling {
		timeout = pendingPodTimeout(m.vmim, f.pol.MigrationPendingPodTimeout)
	}
	if !since.IsZero() {
		deadline = ceilSec(since.Add(timeout))
		l.stale(deadline)
	}
	phase := bound(string(m.phase), maxPhase)
	if phase == "" {
		phase = "(unset)"
	}
	kind, name := m.kindName()
	if kind == "" {
		kind, name = kindVMI, f.vmi.Name
	}
	if f.future(m.since) || f.future(m.created) {
		t := m.since
		if !f.future(t) {
			t = m.created
		}
		e.futureEnds(t)
		l.add(v1alpha1.VerdictUnknown, v1alpha1.ReasonFutureTimestamp,
			label+" phase "+phase+" has a timestamp in the future ("+rfc(t)+"); its age cannot be judged", time.Time{})
		l.cite(kind, name, "status.phaseTransitionTimestamps", phase, t)
		return
	}
	if !deadline.IsZero() && !f.now.Before(deadline) {
		msg := label + " has been in phase " + phase + " since " + since.Format(time.RFC3339) +
			", longer than " + timeout.String()
		if m.state != nil && m.state.TargetNode != "" {
			msg += " (target node " + m.state.TargetNode + ")"
		}
		l.add(v1alpha1.VerdictDegraded, v1alpha1.ReasonMigrationStuck, msg, deadline)
	} else {
		e.deadline(deadline)
		msg := label + " is in phase " + phase
		if m.phase == kubevirtv1.MigrationPending || m.phase == kubevirtv1.MigrationPhaseUnset {
			msg = label + " is queued (phase " + phase + "): KubeVirt starts it when the parallel-migration limits allow"
		}
		if m.state != nil && m.state.TargetNode != "" {
			msg += ", from " + orUnknown(m.state.SourceNode) + " to " + m.state.TargetNode
		}
		l.add(v1alpha1.VerdictProgressing, v1alpha1.ReasonMigrating, msg, m.since)
	}
	l.cite(kind, name, "status.phase", phase, m.since)
	if v, ok := vmimAnnotation(m.vmim, kubevirtv1.MigrationPendingPodTimeoutSecondsAnnotation); ok && m.phase == kubevirtv1.MigrationScheduling {
		l.cite(kindVMIM, m.name, "metadata.annotations["+kubevirtv1.MigrationPendingPodTimeoutSecondsAnnotation+"]", v, time.Time{})
	}
	if m.state != nil && m.state.TargetPod != "" {
		e.citeMigrationState(l, "targetPod", m.state.TargetPod)
	}
}

// pendingPodTimeout is how long a migration may stay in Scheduling, its
// target pod pending. KubeVirt deletes a target pod that is pending for any
// reason after its catch-all timeout, 15 minutes, or the migration's
// kubevirt.io/migrationPendingPodTimeoutSeconds annotation; one that is
// unschedulable after 5 minutes, which the node layer reports at once as
// TargetPodUnschedulable (kv:pkg/virt-controller/watch/migration/
// migration.go:92-99 defaultCatchAllPendingTimeoutSeconds, :1565-1579
// getCatchAllPendingTimeoutSeconds, :1717-1759 handlePendingPodTimeout).
// KubeVirt ignores an annotation that is not an integer; so does this, and
// also one that is not positive, which would make the migration stuck at
// once.
func pendingPodTimeout(m *kubevirtv1.VirtualMachineInstanceMigration, def time.Duration) time.Duration {
	v, ok := vmimAnnotation(m, kubevirtv1.MigrationPendingPodTimeoutSecondsAnnotation)
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 || n > maxPendingPodTimeoutSeconds {
		return def
	}
	return time.Duration(n) * time.Second
}

func vmimAnnotation(m *kubevirtv1.VirtualMachineInstanceMigration, key string) (string, bool) {
	if m == nil {
		return "", false
	}
	v, ok := m.Annotations[key]
	return v, ok
}

// maxPendingPodTimeoutSeconds bounds the annotation's value (a year), so
// that a huge one cannot overflow a time.Duration.
const maxPendingPodTimeoutSeconds = 365 * 24 * 3600

// citeMigrationState points at the field of whichever object carries the
// live state.
func (e *engine) citeMigrationState(l *layer, field, value string) {
	f := &e.f
	m := &f.mig
	if f.vmi != nil && f.vmi.Status.MigrationState != nil && f.vmi.Status.MigrationState == m.state {
		l.cite(kindVMI, f.vmi.Name, "status.migrationState."+field, value, mtp(m.state.EndTimestamp))
		return
	}
	if m.vmim != nil {
		l.cite(kindVMIM, m.name, "status.migrationState."+field, value, mtp(m.state.EndTimestamp))
	}
}

// migrationEnded is when the last finished migration ended, zero if none.
func (f *facts) migrationEnded() time.Time {
	if !f.mig.present || f.mig.inProgress {
		return time.Time{}
	}
	return f.mig.endTime()
}

func quote(s string) string {
	return `"` + s + `"`
}
