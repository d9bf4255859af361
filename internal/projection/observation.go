package projection

import (
	"encoding/json"
	"hash/fnv"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/membership"
)

var (
	observationLabels = []string{membership.ManagedByLabel}
	observationVocab  = map[string]bool{membership.ManagedByLabel: true}
)

// Observation is a VMObservation as the controller reads it: identity,
// owners, the managed-by label and the policy overrides; of the status a
// hash (for the write decision), when vmobs last wrote it (from
// managedFields), and what the engine, the Events and the metrics read of
// the previous status. The whole status is not kept: it is as large as
// the VM's other objects together, and the controller only needs to know
// whether the status it computes is the one stored.
type Observation struct {
	Meta
	// Generation is the one projection's generation read: its status
	// carries it, and a spec edit moves it.
	Generation int64
	Owners     Owners
	Policy     *v1alpha1.PolicyOverrides
	// LastWrite is when vmobs last wrote the status (its managedFields
	// entry for the status subresource): it survives restarts, unlike the
	// controller's memory, so a restarted controller does not rewrite
	// every status at once.
	LastWrite Time
	// Hash is StatusHash of the stored status, TimelessHash its hash
	// without evidence times.
	Hash, TimelessHash uint64

	Verdict Sym
	// Reason is status.reason and NodeName status.vmi.nodeName: the
	// metrics label each VM's series with them (internal/metrics).
	Reason, NodeName Sym
	// VMIUID is status.vmi.uid: the previous status is of this VMI only if
	// the UIDs match.
	VMIUID UID
	// VMIPhase and VMIReason are status.vmi.phase and .reason: a restart
	// records the replaced VMI's last ones (internal/history).
	VMIPhase, VMIReason Sym
	// Incident is status.incident.name: the VMIncident (or, with
	// IncidentOnNode, the NodeObservation) the VM is a member of, which
	// the metrics label its series vmobs_incident_member with and the
	// next status keeps while the VM still claims it.
	Incident       Sym
	AgentConnected bool
	HasLayers      bool
	// IncidentOnNode says that status.incident.kind is NodeObservation.
	IncidentOnNode bool
	// The stored conditions: those of vmobs' own types in place, in
	// conditionTypes order (a status of 0 is none), any other in
	// Rare.OtherConditions. A list of the six cost 152 bytes; in place
	// they make the struct 32 bytes larger (480 instead of 448).
	CondStatus [len(conditionTypes)]condStatus
	// Restarts is status.vm.restarts: the next status counts on from it,
	// and the metrics export it. (Here it fills the padding after
	// CondStatus.)
	Restarts int32
	CondTime [len(conditionTypes)]Time
	Layers   [len(v1alpha1.LayerNames)]Layer // in v1alpha1.LayerNames order
	// Rare holds what few VMObservations have; nil when one has none of
	// it, as most. Its four fields in place would cost every projection
	// 32 bytes: 536 bytes, the 576-byte size class; with the pointer, 504
	// and 512 (TestProjectionSizeClasses).
	Rare *ObservationRare
}

// ObservationRare is what few VMObservations have.
type ObservationRare struct {
	// Since holds status.vmi's first sightings, which the engine carries
	// from one status to the next (fsFrozenSince, hotplugSince,
	// agentDisconnectedSince, hotplugVolumeSince).
	Since [4]Time
	// OtherConditions are the stored conditions not of vmobs' own types.
	OtherConditions []Condition
	// LastRestart is status.vm.lastRestart (a VM that restarted). The
	// status.history is not kept (up to 4 KiB a VM): the controller reads
	// it from the API server when it writes (internal/history).
	LastRestart *v1alpha1.Restart
	// EndedVMI is status.vm.endedVMI: the VMI of a VM between a VMI's end
	// and its replacement.
	EndedVMI *v1alpha1.EndedVMI
}

// noObservationRare is the ObservationRare of a VMObservation with none
// of it.
var noObservationRare ObservationRare

// rare is o.Rare, or an empty one; not to be changed.
func (o *Observation) rare() *ObservationRare {
	if o.Rare == nil {
		return &noObservationRare
	}
	return o.Rare
}

// setRare is o.Rare, made when missing.
func (o *Observation) setRare() *ObservationRare {
	if o.Rare == nil {
		o.Rare = &ObservationRare{}
	}
	return o.Rare
}

// LastRestart is status.vm.lastRestart, nil for a VM that never
// restarted.
func (o *Observation) LastRestart() *v1alpha1.Restart { return o.rare().LastRestart }

// Layer is what is read of a stored layer: the verdict with its reason and
// transition time (a verdict kept through the lag grace keeps them), and
// the evidence times the metrics export. Not its message: four messages
// cost a VM about 300 bytes, and the engine reads one only for a verdict
// kept through the lag grace, when the controller reads the stored status
// (PreviousOf, verdict.Result.NeedsMessages).
type Layer struct {
	Verdict, Reason                       Sym
	LastTransition, EvidenceTime, StaleAt Time
}

// Condition is what the engine reads of a stored condition: whether its
// status changed, and since when.
type Condition struct {
	Type, Status   Sym
	LastTransition Time
}

// conditionTypes are the condition types vmobs writes.
var conditionTypes = [...]string{
	v1alpha1.ConditionReady, v1alpha1.ConditionReconciling, v1alpha1.ConditionStalled,
	v1alpha1.ConditionControlPlaneHealthy, v1alpha1.ConditionNodeHealthy, v1alpha1.ConditionGuestHealthy,
	v1alpha1.ConditionStorageHealthy,
}

// condStatus is a condition's status: 0 none, else 1 + its index in
// condStatuses.
type condStatus uint8

var condStatuses = [...]metav1.ConditionStatus{metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown}

// setCondition keeps c in place when it is of one of vmobs' types with a
// status of the three, for the first time; else in OtherConditions.
func (o *Observation) setCondition(c *metav1.Condition) {
	if i := slices.Index(conditionTypes[:], c.Type); i >= 0 && o.CondStatus[i] == 0 {
		if j := slices.Index(condStatuses[:], c.Status); j >= 0 {
			o.CondStatus[i], o.CondTime[i] = condStatus(j+1), metaTime(c.LastTransitionTime)
			return
		}
	}
	r := o.setRare()
	r.OtherConditions = append(r.OtherConditions, Condition{Type: Intern(c.Type), Status: Intern(string(c.Status)), LastTransition: metaTime(c.LastTransitionTime)})
}

// FromObservation projects a VMObservation.
func FromObservation(o *v1alpha1.VMObservation) *Observation { return fromObservation(o, Sharding{}) }

func fromObservation(o *v1alpha1.VMObservation, s Sharding) *Observation {
	out := observationOf(o, s)
	out.Hash, out.TimelessHash = StatusHash(&o.Status), StatusHash(WithoutTimestamps(&o.Status))
	return out
}

// observationOf is fromObservation but the status's hashes, which only
// the write decision reads.
func observationOf(o *v1alpha1.VMObservation, s Sharding) *Observation {
	st := &o.Status
	labels := observationLabels
	if len(s.Labels) > 0 {
		labels = append(slices.Clip(observationLabels), s.Labels...)
	}
	out := &Observation{
		Meta:       metaOf(&o.ObjectMeta, labels, nil, observationVocab),
		Generation: o.Generation,
		Owners:     ownersOf(o.OwnerReferences, o.Name),
		Policy:     o.Spec.Policy.DeepCopy(),
		LastWrite:  timeOf(lastStatusWrite(o)),
		Verdict:    Intern(string(st.Verdict)),
		Reason:     Intern(st.Reason),
	}
	if st.VMI != nil {
		out.VMIUID = uidOf(st.VMI.UID)
		out.NodeName = Intern(st.VMI.NodeName)
		out.VMIPhase, out.VMIReason = Intern(st.VMI.Phase), Intern(st.VMI.Reason)
		if since := [4]Time{timePtr(st.VMI.FSFrozenSince), timePtr(st.VMI.HotplugSince), timePtr(st.VMI.AgentDisconnectedSince),
			timePtr(st.VMI.HotplugVolumeSince)}; since != ([4]Time{}) {
			out.setRare().Since = since
		}
	}
	out.AgentConnected = st.Guest != nil && st.Guest.AgentConnected
	if st.Incident != nil {
		out.Incident = Intern(st.Incident.Name)
		out.IncidentOnNode = st.Incident.Kind == v1alpha1.IncidentKindNodeObservation
	}
	if vm := st.VM; vm != nil {
		out.Restarts = vm.Restarts
		if vm.LastRestart != nil || vm.EndedVMI != nil {
			r := out.setRare()
			r.LastRestart, r.EndedVMI = vm.LastRestart.DeepCopy(), vm.EndedVMI.DeepCopy()
		}
	}
	if st.Layers != nil {
		out.HasLayers = true
		for i, name := range v1alpha1.LayerNames {
			l := st.Layers.Get(name)
			out.Layers[i] = Layer{
				Verdict: Intern(string(l.Verdict)), Reason: Intern(l.Reason),
				LastTransition: timePtr(l.LastTransitionTime), EvidenceTime: timePtr(l.EvidenceTime), StaleAt: timePtr(l.StaleAt),
			}
		}
	}
	for i := range st.Conditions {
		out.setCondition(&st.Conditions[i])
	}
	if r := out.Rare; r != nil {
		r.OtherConditions = slices.Clip(r.OtherConditions)
	}
	return out
}

// ToObservation rebuilds the VMObservation as far as it was kept: its
// status is the previous status as the engine reads it (see Previous).
func (o *Observation) ToObservation() *v1alpha1.VMObservation {
	out := &v1alpha1.VMObservation{ObjectMeta: o.ObjectMeta()}
	out.Generation = o.Generation
	out.OwnerReferences = o.Owners.refs(o.Name)
	out.Spec.Policy = o.Policy
	out.Status = *o.Previous()
	return out
}

// Previous is the stored status as far as the engine, the Events and the
// metrics read it: the overall and per-layer verdicts, the layers'
// reasons and times, the VMI's UID and first sightings, whether the agent
// was connected, and the conditions' statuses and transition times. Not
// the layers' messages: see PreviousOf.
func (o *Observation) Previous() *v1alpha1.VMObservationStatus {
	st := &v1alpha1.VMObservationStatus{Verdict: v1alpha1.Verdict(o.Verdict.String())}
	if !o.VMIUID.IsZero() {
		st.VMI = &v1alpha1.VMISummary{UID: o.VMIUID.UID(), Phase: o.VMIPhase.String(), Reason: o.VMIReason.String()}
		since := &o.rare().Since
		st.VMI.FSFrozenSince, st.VMI.HotplugSince = since[0].Ptr(), since[1].Ptr()
		st.VMI.AgentDisconnectedSince, st.VMI.HotplugVolumeSince = since[2].Ptr(), since[3].Ptr()
	}
	if r := o.rare(); o.Restarts != 0 || r.LastRestart != nil || r.EndedVMI != nil {
		st.VM = &v1alpha1.VMLife{Restarts: o.Restarts, LastRestart: r.LastRestart.DeepCopy(), EndedVMI: r.EndedVMI.DeepCopy()}
	}
	if o.AgentConnected {
		st.Guest = &v1alpha1.GuestSummary{AgentConnected: true}
	}
	if o.HasLayers {
		st.Layers = &v1alpha1.Layers{}
		for i, name := range v1alpha1.LayerNames {
			l := &o.Layers[i]
			*st.Layers.Get(name) = v1alpha1.LayerStatus{
				Verdict: v1alpha1.Verdict(l.Verdict.String()), Reason: l.Reason.String(),
				LastTransitionTime: l.LastTransition.Ptr(), EvidenceTime: l.EvidenceTime.Ptr(), StaleAt: l.StaleAt.Ptr(),
			}
		}
	}
	for i, s := range o.CondStatus {
		if s > 0 {
			st.Conditions = append(st.Conditions, metav1.Condition{
				Type: conditionTypes[i], Status: condStatuses[s-1], LastTransitionTime: o.CondTime[i].Meta(),
			})
		}
	}
	if o.Rare != nil {
		for _, c := range o.Rare.OtherConditions {
			st.Conditions = append(st.Conditions, metav1.Condition{
				Type: c.Type.String(), Status: metav1.ConditionStatus(c.Status.String()), LastTransitionTime: c.LastTransition.Meta(),
			})
		}
	}
	return st
}

// PreviousOf is the previous status the engine reads of a VMObservation
// read whole from the API server: Previous, and the layers' messages,
// which a verdict kept through the lag grace keeps
// (verdict.Result.NeedsMessages).
func PreviousOf(o *v1alpha1.VMObservation) *v1alpha1.VMObservationStatus {
	return observationOf(o, Sharding{}).PreviousWithMessages(o)
}

// PreviousWithMessages is PreviousOf(whole) for p, a projection of whole
// (or of the same resourceVersion of it): Previous, and the layers'
// messages of whole.
func (p *Observation) PreviousWithMessages(whole *v1alpha1.VMObservation) *v1alpha1.VMObservationStatus {
	st := p.Previous()
	if st.Layers != nil && whole.Status.Layers != nil {
		for name, l := range st.Layers.All() {
			l.Message = whole.Status.Layers.Get(name).Message
		}
	}
	return st
}

// IncidentRef is status.incident, nil for none.
func (o *Observation) IncidentRef() *v1alpha1.IncidentRef {
	if o.Incident.String() == "" {
		return nil
	}
	r := v1alpha1.IncidentRef{Kind: v1alpha1.IncidentKindVMIncident, Name: o.Incident.String()}
	if o.IncidentOnNode {
		r.Kind = v1alpha1.IncidentKindNodeObservation
	}
	return &r
}

// GetGeneration implements metav1.Object.
func (o *Observation) GetGeneration() int64 { return o.Generation }

// SetGeneration implements metav1.Object.
func (o *Observation) SetGeneration(g int64) { o.Generation = g }

// GetOwnerReferences implements metav1.Object.
func (o *Observation) GetOwnerReferences() []metav1.OwnerReference { return o.Owners.refs(o.Name) }

// DeepCopyObject implements runtime.Object.
func (o *Observation) DeepCopyObject() runtime.Object {
	c := *o
	c.Meta = o.Meta.deepCopy()
	c.Owners = o.Owners.deepCopy()
	c.Policy = o.Policy.DeepCopy()
	if o.Rare != nil {
		r := *o.Rare
		r.OtherConditions = clone(r.OtherConditions)
		r.LastRestart, r.EndedVMI = r.LastRestart.DeepCopy(), r.EndedVMI.DeepCopy()
		c.Rare = &r
	}
	return &c
}

// lastStatusWrite is when vmobs last wrote the status, read from the
// object's managedFields.
func lastStatusWrite(obs *v1alpha1.VMObservation) time.Time {
	var last time.Time
	for _, mf := range obs.ManagedFields {
		if mf.Manager == membership.FieldOwner && mf.Subresource == "status" && mf.Time != nil && mf.Time.After(last) {
			last = mf.Time.Time
		}
	}
	return last
}

// StatusHash is a hash of the status as it would be written, but for
// status.history: the write decision compares the hash of the computed
// status with the stored one's, and the history never decides a write (it
// rides on the writes that happen, docs/history.md).
func StatusHash(s *v1alpha1.VMObservationStatus) uint64 {
	h := fnv.New64a()
	c := *s
	c.History = nil
	raw, err := json.Marshal(&c)
	if err != nil {
		return 0
	}
	_, _ = h.Write(raw)
	return h.Sum64()
}

// WithoutTimestamps blanks what moves with renewing evidence without
// changing a verdict: evidence times, staleAt and time-valued evidence.
func WithoutTimestamps(s *v1alpha1.VMObservationStatus) *v1alpha1.VMObservationStatus {
	c := s.DeepCopy()
	if c.Layers == nil {
		return c
	}
	for _, l := range c.Layers.All() {
		l.EvidenceTime, l.StaleAt = nil, nil
		for i := range l.Evidence {
			l.Evidence[i].Time = nil
			if _, err := time.Parse(time.RFC3339, l.Evidence[i].Value); err == nil {
				l.Evidence[i].Value = ""
			}
		}
	}
	return c
}
