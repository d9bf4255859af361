package verdict

import (
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/storagefacts"
)

// Kinds of the storage layer's evidence.
const (
	kindPVC = storagefacts.KindPVC
	kindDV  = storagefacts.KindDataVolume
	kindSC  = "StorageClass"
	kindVA  = "VolumeAttachment"
)

// Event reasons the storage rules read, as their writers spell them.
const (
	// The attach-detach controller (k8s:pkg/controller/volume/attachdetach,
	// reconciler.go) and the kubelet's volume manager
	// (k8s:pkg/kubelet/volumemanager) on the launcher pod.
	eventFailedAttach = storagefacts.ReasonFailedAttachVolume
	eventFailedMount  = storagefacts.ReasonFailedMount
	eventFailedMap    = storagefacts.ReasonFailedMapVolume
	// multiAttach and waitingForDetach start the attach-detach
	// controller's message for a ReadWriteOnce volume still attached
	// elsewhere (k8s:pkg/controller/volume/attachdetach/reconciler
	// reportMultiAttachError): "Multi-Attach error for volume …" up to
	// Kubernetes 1.36, "Waiting for detach for volume …" from 1.37
	// (reconciler.go:396 and :432 at v1.37.2), with the same reason.
	multiAttach      = "Multi-Attach error"
	waitingForDetach = "Waiting for detach"
	// The PV binder and the external provisioner on the claim
	// (k8s:pkg/controller/volume/persistentvolume/pv_controller.go,
	// sigs.k8s.io/sig-storage-lib-external-provisioner controller.go).
	eventProvisioningFailed = storagefacts.ReasonProvisioningFailed
)

// dvRestartLimit: a DataVolume whose importer, cloner or uploader pod
// restarted more than this many times is failing, as CDI's
// CDIDataVolumeUnusualRestartCount alert says (restartCount > 3).
const dvRestartLimit = 3

// dvSucceeded and dvFailed are CDI's final DataVolume phases
// (containerized-data-importer-api pkg/apis/core/v1beta1/types.go).
const (
	dvSucceeded = storagefacts.DataVolumeSucceeded
	dvFailed    = "Failed"
)

// storage are the facts of the VM's storage when the caller read them.
func (f *facts) storage() *storagefacts.Facts { return f.in.Storage }

// storageVolumes are the VM's claim-backed volumes: the facts' when read,
// else as the VM and VMI name them.
func (f *facts) storageVolumes() []storagefacts.Volume {
	if s := f.storage(); s != nil {
		return s.Volumes
	}
	refs := storagefacts.VolumesOf(f.vm, f.vmi)
	if len(refs) == 0 {
		return nil
	}
	out := make([]storagefacts.Volume, len(refs))
	for i, r := range refs {
		out[i] = storagefacts.Volume{Name: r.Name, ClaimName: r.ClaimName, DataVolume: r.DataVolume, Hotplug: r.Hotplug}
	}
	return out
}

// storageLayer judges the VM's volumes: the claims and DataVolumes behind
// them (the PV binder, the external provisioner, CDI), their attachment
// and mount on the launcher's node (the external attacher, the
// attach-detach controller, the kubelet) and the I/O the domain does
// (QEMU's pause on an I/O error, the latency virt-handler exports).
func (e *engine) storageLayer() {
	f := &e.f
	l := &e.storage
	// A stopped VM's volumes are still judged: its claims and DataVolumes
	// exist and can fail while nothing runs.
	if l.judgeNothingRuns(f.lc, "there is neither VM nor VMI, so no volumes to judge", "") {
		return
	}
	if f.lc == lcRunning {
		e.pausedIOError(l)
		e.domainStorage(l)
		e.hotplugVolumeRules(l)
	}
	vols := f.storageVolumes()
	if len(vols) == 0 {
		l.add(v1alpha1.VerdictHealthy, v1alpha1.ReasonNoPersistentVolumes,
			"the VM has no persistent volumes (container disks, cloud-init and the like live with the launcher pod)", time.Time{})
		return
	}
	live := f.lc != lcStopped && f.lc != lcSucceeded
	if s := f.storage(); s != nil {
		for i := range vols {
			e.judgeVolume(l, &vols[i], live)
		}
		if live {
			e.launcherVolumeEvents(l, s)
		}
	}
	names := volumeNames(vols)
	switch {
	case !live:
		l.add(v1alpha1.VerdictSuspended, v1alpha1.ReasonStopped, "the VM does not run; its volumes ("+names+") wait", time.Time{})
	case f.storage() != nil && !f.storage().ClaimsNotRead:
		l.add(v1alpha1.VerdictHealthy, v1alpha1.ReasonVolumesReady, "the VM's volumes ("+names+") are bound"+e.attachedSuffix(), time.Time{})
	case f.lc == lcRunning:
		// The kubelet starts the launcher's containers only once every
		// volume is attached and mounted: a running domain has them.
		l.add(v1alpha1.VerdictHealthy, v1alpha1.ReasonVolumesReady,
			"the VMI runs, so its volumes ("+names+") were bound and mounted (the claims themselves were not read)", f.phaseSince)
	default:
		l.nothingToJudge("the VM's claims (" + names + ") are not in the input")
	}
}

// attachedSuffix says the volumes are attached and mounted when the
// launcher pod is Ready.
func (e *engine) attachedSuffix() string {
	if e.launcherReady() {
		return ", attached and mounted in launcher pod " + e.f.active.Name
	}
	return ""
}

func volumeNames(vols []storagefacts.Volume) string {
	var b strings.Builder
	for i := range vols {
		if i > 0 {
			b.WriteString(", ")
		}
		if i == 3 {
			b.WriteString("and " + strconv.Itoa(len(vols)-3) + " more")
			break
		}
		b.WriteString(vols[i].Name)
	}
	return b.String()
}

// pausedIOError: QEMU stopped the domain on an I/O error of a disk
// (werror/rerror=stop) and libvirt reports the pause reason, which
// virt-handler copies to the VMI (kv:pkg/virt-handler/vm.go:848-859).
func (e *engine) pausedIOError(l *layer) {
	f := &e.f
	if c := f.paused(); c != nil && c.Reason == pausedIOError {
		since := mt(c.LastTransitionTime)
		msg := withDetail("QEMU paused the domain on an I/O error of a disk", c.Message)
		l.add(v1alpha1.VerdictDegraded, v1alpha1.ReasonPausedIOError, msg, since)
		l.cite(kindVMI, f.vmi.Name, "status.conditions[Paused].reason", c.Reason, since)
	}
}

// hotplugVolumeRules reads the VMI's hotplugged volumes: virt-controller
// reports each one's way through claim, attachment pod, attach and mount
// (kv:pkg/virt-controller/watch/vmi/storage.go); one that failed is
// HotplugVolumeFailed, one not Ready yet HotplugVolumePending, and past
// Policy.HotplugVolumeTimeout from the first sighting HotplugVolumeStuck.
func (e *engine) hotplugVolumeRules(l *layer) {
	f := &e.f
	vmi := f.vmi
	for i := range vmi.Status.VolumeStatus {
		vs := &vmi.Status.VolumeStatus[i]
		if vs.HotplugVolume == nil || vs.Phase == kubevirtv1.VolumeReady {
			continue
		}
		msg := "hotplug volume " + vs.Name + " is " + orUnknown(string(vs.Phase)) + ": " + vs.Reason
		if vs.Message != "" {
			msg += " (" + vs.Message + ")"
		}
		if failureWord(vs.Reason + " " + vs.Message) {
			l.add(v1alpha1.VerdictDegraded, v1alpha1.ReasonHotplugVolumeFailed, msg, time.Time{})
		} else {
			// Any other step (a claim Pending or Lost, KubeVirt's PVCNotReady,
			// kv:pkg/virt-controller/watch/vmi/storage.go:359-372
			// getVolumePhaseMessageReason; attaching, mounting) may last
			// forever: past Policy.HotplugVolumeTimeout from the first
			// sighting it is stuck.
			e.timedProgress(l, f.hp.volumeSince, f.pol.HotplugVolumeTimeout,
				v1alpha1.ReasonHotplugVolumePending, msg,
				v1alpha1.ReasonHotplugVolumeStuck, msg+"; not Ready")
		}
		l.cite(kindVMI, vmi.Name, "status.volumeStatus["+vs.Name+"].reason", vs.Reason, time.Time{})
	}
}

// judgeVolume runs the rules on one volume's claim, DataVolume and
// attachments. live says the VM should run (a stopped VM's claim that
// waits for its first consumer waits as designed).
func (e *engine) judgeVolume(l *layer, v *storagefacts.Volume, live bool) {
	f := &e.f
	if v.DV != nil {
		e.judgeDataVolume(l, v)
	}
	p := v.PVC
	// CDI fills a DataVolume's claim through a volume populator: the claim
	// stays Pending until the data is in (containerized-data-importer
	// pkg/controller/populators), so while the DataVolume is on its way
	// its rules speak for the claim.
	dvOnItsWay := v.DV != nil && v.DV.Phase != dvSucceeded
	switch {
	case p == nil:
		if !live || dvOnItsWay || v.DataVolume != "" && !f.storage().DataVolumesRead || f.storage().ClaimsNotRead {
			// CDI creates the claim of a DataVolume; its rules speak. A
			// claim of facts that read none is unknown, not missing.
			return
		}
		if f.lc == lcRunning {
			// The kubelet started the domain's containers, so the claim
			// was bound and mounted; one the cache does not hold now is
			// no binding problem of a running VM.
			l.note(v1alpha1.ReasonVolumesReady, "claim "+v.ClaimName+" of volume "+v.Name+" is not in the cache; the VMI runs with it", time.Time{})
			l.cite(kindPVC, v.ClaimName, "metadata.name", "", time.Time{})
			return
		}
		e.timedProgress(l, e.storageStart(time.Time{}), f.pol.VolumeBindingTimeout,
			v1alpha1.ReasonVolumeNotBound, "claim "+v.ClaimName+" of volume "+v.Name+" does not exist",
			v1alpha1.ReasonVolumeNotBound, "claim "+v.ClaimName+" of volume "+v.Name+" has not existed")
		l.cite(kindPVC, v.ClaimName, "metadata.name", "", time.Time{})
	case p.Phase == string(corev1.ClaimLost):
		// The PV binder found the claim's PersistentVolume gone
		// (k8s:pkg/controller/volume/persistentvolume/pv_controller.go
		// syncBoundClaim): the data is lost; nothing brings it back.
		l.add(v1alpha1.VerdictFailed, v1alpha1.ReasonPVCLost,
			"claim "+p.Name+" of volume "+v.Name+" is Lost: its PersistentVolume "+orUnknown(p.VolumeName)+" is gone", p.Created)
		l.cite(kindPVC, p.Name, "status.phase", p.Phase, time.Time{})
	case p.Phase == string(corev1.ClaimBound):
		if live {
			e.judgeAttachments(l, v)
		}
	default:
		if live && !dvOnItsWay {
			e.volumeNotBound(l, v)
		}
	}
}

// storageStart is when the VM's wait for its storage began, as far as the
// objects say: the VMI's creation, else the given time.
func (e *engine) storageStart(t time.Time) time.Time {
	if !e.f.created.IsZero() {
		return e.f.created
	}
	return trunc(t)
}

// volumeNotBound judges a Pending claim with its cause. A
// WaitForFirstConsumer claim waits, as designed, until the scheduler has
// chosen a node for the launcher pod (it writes the selected-node
// annotation): Progressing with no deadline, the control plane times the
// scheduling. Any other Pending claim is given Policy.VolumeBindingTimeout
// from its creation (KubeVirt's VirtualMachineStuckInUnhealthyState alert
// waits 10 minutes for WaitingForVolumeBinding).
func (e *engine) volumeNotBound(l *layer, v *storagefacts.Volume) {
	f := &e.f
	p := v.PVC
	what := "claim " + p.Name + " of volume " + v.Name + " is Pending"
	cause := ""
	c := p.Class
	switch {
	case c != nil && !c.Exists:
		cause = "StorageClass " + c.Name + " does not exist"
	case c != nil && c.Provisioner == storagefacts.NoProvisioner && p.VolumeName == "":
		cause = "StorageClass " + c.Name + " has no provisioner (" + storagefacts.NoProvisioner + "): a matching PersistentVolume must be created"
	}
	if ev := newestOf(p.Events, eventProvisioningFailed); ev != nil {
		cause = joinCause(cause, ev.Reason+" ("+orUnknown(ev.Component)+"): "+ev.Message)
	}
	waitsForConsumer := c != nil && c.Exists && c.BindingMode == storagefacts.WaitForFirstConsumer && p.SelectedNode == ""
	if waitsForConsumer && cause == "" && !e.launcherScheduled() {
		l.add(v1alpha1.VerdictProgressing, v1alpha1.ReasonVolumeNotBound,
			what+": StorageClass "+c.Name+" binds it once the launcher pod is scheduled (WaitForFirstConsumer)", p.Created)
		l.cite(kindPVC, p.Name, "status.phase", p.Phase, p.Created)
		l.cite(kindSC, c.Name, "volumeBindingMode", c.BindingMode, time.Time{})
		return
	}
	msg := what
	if cause != "" {
		msg += ": " + cause
	} else if p.SelectedNode != "" {
		msg += " on node " + p.SelectedNode
	}
	e.timedProgress(l, p.Created, f.pol.VolumeBindingTimeout,
		v1alpha1.ReasonVolumeNotBound, msg, v1alpha1.ReasonVolumeNotBound, msg+"; not bound")
	l.cite(kindPVC, p.Name, "status.phase", p.Phase, p.Created)
	if c != nil {
		if !c.Exists {
			l.cite(kindSC, c.Name, "metadata.name", "not found", time.Time{})
		} else {
			l.cite(kindSC, c.Name, "provisioner", c.Provisioner, time.Time{})
		}
	}
	if p.SelectedNode != "" {
		l.cite(kindPVC, p.Name, "metadata.annotations["+storagefacts.SelectedNodeAnnotation+"]", p.SelectedNode, time.Time{})
	}
	if ev := newestOf(p.Events, eventProvisioningFailed); ev != nil {
		l.cite(kindPVC, p.Name, "events["+ev.Reason+"]", ev.Message, ev.Last)
	}
}

func joinCause(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// launcherScheduled says a launcher pod of the VMI was bound to a node.
func (e *engine) launcherScheduled() bool {
	for _, p := range e.f.pods {
		if !podFinished(p) && podPastScheduling(p) {
			return true
		}
	}
	return false
}

// judgeDataVolume reads what CDI writes of a DataVolume: a phase on its
// way (an import, a clone, an upload, a wait for the first consumer) is
// Progressing however long it takes, since an import lasts as long as the
// data does; a Failed phase, or more restarts of the importer than CDI's
// own alert allows, is DataVolumeFailed.
func (e *engine) judgeDataVolume(l *layer, v *storagefacts.Volume) {
	d := v.DV
	running := storagefacts.Cond(d.Conditions, storagefacts.DataVolumeRunning)
	detail := ""
	var at time.Time
	if running != nil && running.Status != string(corev1.ConditionTrue) && running.Message != "" {
		detail, at = running.Reason+": "+running.Message, running.LastTransition
	}
	if ev := newestEvent(d.Events); ev != nil && detail == "" {
		detail, at = ev.Reason+": "+ev.Message, ev.Last
	}
	switch {
	case d.Phase == dvSucceeded:
		return
	case d.Phase == dvFailed || d.RestartCount > dvRestartLimit:
		msg := "DataVolume " + d.Name + " of volume " + v.Name + " is " + orUnknown(d.Phase)
		if d.RestartCount > 0 {
			msg += " after " + strconv.Itoa(int(d.RestartCount)) + " restarts of its CDI pod"
		}
		l.add(v1alpha1.VerdictDegraded, v1alpha1.ReasonDataVolumeFailed, withDetail(msg, detail), at)
		l.cite(kindDV, d.Name, "status.phase", d.Phase, time.Time{})
		if d.RestartCount > 0 {
			l.cite(kindDV, d.Name, "status.restartCount", strconv.Itoa(int(d.RestartCount)), time.Time{})
		}
		if running != nil {
			l.cite(kindDV, d.Name, "status.conditions[Running].reason", running.Reason, running.LastTransition)
		}
	default:
		msg := "DataVolume " + d.Name + " of volume " + v.Name + " is " + orUnknown(d.Phase)
		if d.Progress != "" && d.Progress != "N/A" {
			msg += " (" + d.Progress + ")"
		}
		if d.RestartCount > 0 && detail != "" {
			msg += "; retrying after " + detail
		}
		l.add(v1alpha1.VerdictProgressing, v1alpha1.ReasonDataVolumeImporting, msg, time.Time{})
		l.cite(kindDV, d.Name, "status.phase", d.Phase, time.Time{})
		if d.Progress != "" {
			l.cite(kindDV, d.Name, "status.progress", d.Progress, time.Time{})
		}
	}
}

// dvImporting says the storage facts show a DataVolume on its way and none
// failing: CDI reports progress, so the control plane's wait for it
// (Provisioning) has no deadline.
func (f *facts) dvImporting() bool {
	s := f.storage()
	if s == nil {
		return false
	}
	on := false
	for i := range s.Volumes {
		d := s.Volumes[i].DV
		if d == nil || d.Phase == dvSucceeded {
			continue
		}
		if d.Phase == dvFailed || d.RestartCount > dvRestartLimit {
			return false
		}
		on = true
	}
	return on
}

// judgeAttachments reads the VolumeAttachments of a bound claim's
// PersistentVolume: the external attacher's attach error on the VMI's node,
// and an attachment held for a node that is gone or NotReady while the VMI
// is elsewhere or not placed yet, which keeps a ReadWriteOnce volume from
// attaching anywhere else.
func (e *engine) judgeAttachments(l *layer, v *storagefacts.Volume) {
	f := &e.f
	for i := range v.Attachments {
		a := &v.Attachments[i]
		switch {
		case a.AttachError != nil && !a.Attached:
			l.add(v1alpha1.VerdictDegraded, v1alpha1.ReasonVolumeAttachFailed,
				"volume "+v.Name+" (PersistentVolume "+v.PVC.VolumeName+") cannot be attached to node "+orUnknown(a.Node)+": "+a.AttachError.Message, a.AttachError.Time)
			l.cite(kindVA, a.Name, "status.attachError.message", a.AttachError.Message, a.AttachError.Time)
		case (a.NodeMissing || a.NodeNotReady) && a.Node != f.nodeName && exclusive(v.PVC) && !e.launcherReady():
			state := "NotReady"
			if a.NodeMissing {
				state = "gone"
			}
			l.add(v1alpha1.VerdictDegraded, v1alpha1.ReasonVolumeAttachmentStale,
				"volume "+v.Name+" (PersistentVolume "+v.PVC.VolumeName+") is still attached for node "+a.Node+", which is "+state+
					"; the attach-detach controller waits for that node before it detaches", time.Time{})
			l.cite(kindVA, a.Name, "spec.nodeName", a.Node, time.Time{})
			l.cite(kindNode, a.Node, "status.conditions[Ready].status", state, time.Time{})
		}
	}
}

// exclusive says the claim's volume attaches to one node at a time: no
// ReadWriteMany or ReadOnlyMany access mode.
func exclusive(p *storagefacts.PVC) bool {
	for _, m := range p.AccessModes {
		if m == string(corev1.ReadWriteMany) || m == string(corev1.ReadOnlyMany) {
			return false
		}
	}
	return true
}

// launcherReady says the VMI's active launcher pod is Ready: its volumes
// are attached and mounted, whatever other attachments say.
func (e *engine) launcherReady() bool {
	if p := e.f.active; p != nil {
		ready, _, _, _ := podReadiness(p)
		return ready
	}
	return false
}

// launcherVolumeEvents reads the Warning Events of the VMI's launcher pods
// about their volumes: the attach-detach controller's FailedAttachVolume
// (Multi-Attach error among them) and the kubelet's FailedMount and
// FailedMapVolume. An event explains a pod that is still not Ready; an
// event older than the pod's last readiness change, or of a pod that is
// Ready or finished, describes a past the pod has moved on from.
func (e *engine) launcherVolumeEvents(l *layer, s *storagefacts.Facts) {
	f := &e.f
	for i := range s.Events {
		ev := &s.Events[i]
		if ev.Kind != storagefacts.KindPod {
			continue
		}
		var pod *corev1.Pod
		for _, p := range f.pods {
			if p.Name == ev.Name {
				pod = p
			}
		}
		if pod == nil || podFinished(pod) {
			continue
		}
		if ready, _, _, since := podReadiness(pod); ready || (!since.IsZero() && ev.Last.Before(since)) {
			continue
		}
		var reason string
		switch {
		case ev.Reason == eventFailedAttach && (strings.Contains(ev.Message, multiAttach) || strings.HasPrefix(ev.Message, waitingForDetach)):
			reason = v1alpha1.ReasonVolumeMultiAttach
		case ev.Reason == eventFailedAttach:
			reason = v1alpha1.ReasonVolumeAttachFailed
		case ev.Reason == eventFailedMount || ev.Reason == eventFailedMap:
			reason = v1alpha1.ReasonVolumeMountFailed
		default:
			continue
		}
		if l.has(reason) {
			continue
		}
		msg := "launcher pod " + pod.Name + ": " + ev.Reason + " (" + orUnknown(ev.Component)
		if ev.Count > 1 {
			msg += ", " + strconv.Itoa(int(ev.Count)) + " times"
		}
		msg += "): " + ev.Message
		l.add(v1alpha1.VerdictDegraded, reason, msg, ev.First)
		l.cite(kindPod, pod.Name, "events["+ev.Reason+"]", ev.Message, ev.Last)
	}
}

// UnreadEvents names the Warning Events of the VM's objects that no storage
// rule can read again, whatever comes, so that the controller's Event store
// forgets them (most of a healthy fleet's events: the warnings its boots
// left behind):
//   - a launcher pod's last seen before its Ready condition last changed
//     (launcherVolumeEvents reads none of them, and the condition's
//     lastTransitionTime only moves on), and all of a finished pod's;
//   - all of a claim's that is Bound or Lost: only volumeNotBound reads
//     them, for a claim that is not, and a claim never returns to Pending;
//   - all of a Succeeded DataVolume's: judgeDataVolume reads none, and
//     Succeeded is where a DataVolume ends.
//
// A claim or DataVolume deleted and created again under the same name is
// another object, whose events come after; one that comes while the
// controller's cache still holds the old object is forgotten, and its
// writer's next retry (a count update) brings it back. pods are the
// VMI's launcher pods (Input.Pods); s may be nil (nothing to forget).
func UnreadEvents(pods []*corev1.Pod, s *storagefacts.Facts) []storagefacts.Unread {
	if s == nil {
		return nil
	}
	var out []storagefacts.Unread
	for _, p := range pods {
		if p == nil {
			continue
		}
		if podFinished(p) {
			out = append(out, storagefacts.Unread{Kind: storagefacts.KindPod, Name: p.Name, All: true})
		} else if _, _, _, since := podReadiness(p); !since.IsZero() {
			out = append(out, storagefacts.Unread{Kind: storagefacts.KindPod, Name: p.Name, Before: since})
		}
	}
	for i := range s.Volumes {
		v := &s.Volumes[i]
		if p := v.PVC; p != nil && (p.Phase == string(corev1.ClaimBound) || p.Phase == string(corev1.ClaimLost)) {
			out = append(out, storagefacts.Unread{Kind: storagefacts.KindPVC, Name: p.Name, All: true})
		}
		if d := v.DV; d != nil && d.Phase == dvSucceeded {
			out = append(out, storagefacts.Unread{Kind: storagefacts.KindDataVolume, Name: d.Name, All: true})
		}
	}
	return out
}

// newestOf is the newest event with the reason, nil with none.
func newestOf(evs []storagefacts.Event, reason string) *storagefacts.Event {
	var out *storagefacts.Event
	for i := range evs {
		if evs[i].Reason == reason && (out == nil || evs[i].Last.After(out.Last)) {
			out = &evs[i]
		}
	}
	return out
}

// newestEvent is the newest event, nil with none.
func newestEvent(evs []storagefacts.Event) *storagefacts.Event {
	var out *storagefacts.Event
	for i := range evs {
		if out == nil || evs[i].Last.After(out.Last) {
			out = &evs[i]
		}
	}
	return out
}

// domainStorage: the time per I/O operation over the domain's drives far
// above the VM's own baseline (virt-handler's block stats, what QEMU
// reports of its disks) is StorageSlow.
func (e *engine) domainStorage(l *layer) {
	f := &e.f
	d := vmiData(f, f.in.Domain)
	if d == nil {
		return
	}
	pol := &f.pol
	lat, okLat := d.StorageLatency.Valid()
	base, okBase := d.StorageBaseline.Valid()
	if okLat && okBase && lat >= float64(pol.StorageSlowFactor)*base && lat >= pol.StorageSlowLatency.Seconds() {
		msg := "I/O operations take " + secondsText(lat) + " each"
		if base > 0 {
			msg += ", " + num(lat/base) + "× the VM's usual " + secondsText(base)
		} else {
			msg += "; the VM's usual time is 0 ms"
		}
		msg += " (slow from " + strconv.Itoa(int(pol.StorageSlowFactor)) + "× and " + secondsText(pol.StorageSlowLatency.Seconds()) + ")"
		l.add(v1alpha1.VerdictDegraded, v1alpha1.ReasonStorageSlow, msg, d.SampledAt)
		l.cite(kindSeries, seriesStorageLatency, fieldRate, secondsText(lat), d.SampledAt)
		l.cite(kindSeries, seriesStorageLatency, fieldBaseline, secondsText(base), d.SampledAt)
	}
}
