// Package incident groups the VMs that turn non-Healthy at once for a
// cause they share: a StorageClass or CSI driver, virt-api, the
// domain-stats source, each named by a VMIncident, and a node, named by its
// NodeObservation (internal/nodeverdict judges that incident; here a VM
// learns that it is a member). ClaimsOf reads a VM's status for the
// causes it may share, Qualifies says whether enough VMs share one to name
// it, and Judge computes the VMIncident's status from its members and the
// stored one.
// Each is a pure function of its input and now. Tracker holds, in memory,
// the claims of the VMs the controller evaluated, so that a VM learns its
// incident before its status is written, in the same write
// (docs/incidents.md).
package incident

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/storagefacts"
)

const (
	// DefaultThreshold is how many VMs must turn non-Healthy for a shared
	// cause within Window for it to be named (--incident-threshold); the
	// node incident's default (--node-incident-threshold) is the same.
	DefaultThreshold = 3
	// DefaultWindow: the VMs that open an incident turned within this of
	// each other. A VM unhealthy for longer has a cause of its own.
	DefaultWindow = 5 * time.Minute
	// DefaultRetention is how long a resolved VMIncident stays, so that who
	// was hit, and for how long, can still be read.
	DefaultRetention = time.Hour
	// MaxMembers is the CRD's MaxItems of status.members.
	MaxMembers = 64
	// maxName is the longest object name.
	maxName = 253
)

// CauseNode is a VM's node failing it (its kubelet or virt-handler): the
// incident is the NodeObservation's (status.incident), never a VMIncident.
// It is not one of the VMIncident's cause kinds.
const CauseNode v1alpha1.IncidentCauseKind = "Node"

// Policy holds the grouping's knobs; a zero field is its default.
type Policy struct {
	Threshold int
	Window    time.Duration
	Retention time.Duration
	// Nodes counts the VMs' node claims (CauseNode): only when the
	// NodeObservations are kept, so that the pointer names one.
	Nodes bool
	// NodeThreshold is Threshold for a node cause
	// (--node-incident-threshold, the NodeObservation's own).
	NodeThreshold int
}

func (p Policy) withDefaults() Policy {
	p.Threshold = cmp.Or(p.Threshold, DefaultThreshold)
	p.NodeThreshold = cmp.Or(p.NodeThreshold, DefaultThreshold)
	p.Window = cmp.Or(p.Window, DefaultWindow)
	p.Retention = cmp.Or(p.Retention, DefaultRetention)
	return p
}

// Claim is one VM's finding that a shared cause may explain.
type Claim struct {
	Cause v1alpha1.IncidentCause
	// Layer, Reason, Message and Evidence are the finding's layer's.
	Layer, Reason, Message string
	Evidence               *v1alpha1.Evidence
	// Since is when the layer turned (its lastTransitionTime).
	Since time.Time
	// Class is the StorageClass behind a CSIDriver claim.
	Class string
	// Node is the VM's node, for a node's or a rollout's claim.
	Node string
}

// Rollout says which revision of virt-handler's DaemonSet (its pod's
// controller-revision-hash) runs on node, "" when none is known, and
// whether another node runs another one: a rollout in progress. nil
// knows none.
type Rollout func(node string) (revision string, inProgress bool)

// Member is a VM with its claim on an incident's cause.
type Member struct {
	Namespace, Name string
	Claim
}

// Ref is what a member's status.incident says of cause: its
// NodeObservation for a node, else its VMIncident.
func Ref(c v1alpha1.IncidentCause) v1alpha1.IncidentRef {
	if c.Kind == CauseNode {
		return v1alpha1.IncidentRef{Kind: v1alpha1.IncidentKindNodeObservation, Name: c.Name}
	}
	return v1alpha1.IncidentRef{Kind: v1alpha1.IncidentKindVMIncident, Name: Name(c)}
}

// Name is the VMIncident's name for cause: the kind and the source's
// name, lower case. A source name that is not a valid object name part
// is cleaned and a hash of the original keeps it apart from another one
// that cleans to the same.
func Name(c v1alpha1.IncidentCause) string {
	base := strings.ToLower(string(c.Kind))
	if c.Name == "" {
		return base
	}
	clean := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '.':
			return r
		case r >= 'A' && r <= 'Z':
			return r - 'A' + 'a'
		}
		return '-'
	}, c.Name)
	clean = strings.Trim(clean, "-.")
	name := base + "-" + clean
	if clean != c.Name || len(name) > maxName {
		h := fnv.New32a()
		_, _ = h.Write([]byte(c.Name))
		suffix := fmt.Sprintf("-%08x", h.Sum32())
		name = strings.TrimRight(name[:min(len(name), maxName-len(suffix))], "-.") + suffix
	}
	return name
}

// notHealthy: the verdicts a member has.
func notHealthy(v v1alpha1.Verdict) bool {
	s := v.Severity()
	return s >= v1alpha1.VerdictUnknown.Severity() && s <= v1alpha1.VerdictFailed.Severity()
}

// handlerReasons are the node reasons that say virt-handler on the node
// stopped beating (its heartbeat stale, malformed or from the future,
// and virt-controller's verdict on that, NodeUnresponsive).
var handlerReasons = []string{
	v1alpha1.ReasonNodeAgentStale, v1alpha1.ReasonMalformedHeartbeat, v1alpha1.ReasonFutureTimestamp, v1alpha1.ReasonNodeUnresponsive,
}

// nodeReasons are the node layer's reasons that are its node's own
// signals, judged by the rules a NodeObservation's kubelet and virtHandler
// layers share (internal/verdict/noderules.go), and virt-controller's
// word on the same (NodeUnresponsive). NodeMissing is not: a deleted
// Node has no NodeObservation to name it.
var nodeReasons = []string{
	v1alpha1.ReasonNodeNotReady, v1alpha1.ReasonNodeAgentStale, v1alpha1.ReasonMalformedHeartbeat,
	v1alpha1.ReasonFutureTimestamp, v1alpha1.ReasonNodeUnresponsive,
}

// ClaimsOf lists the causes st may share with other VMs, in the order
// Tracker prefers them in: a virt-handler rollout, then the node (their
// failure explains the rest: a lost node's VMs miss their domain stats
// and fail their guest probe too), then the broadest first:
//   - the node layer Unknown or worse because virt-handler stopped
//     beating (NodeAgentStale, a malformed or future heartbeat,
//     NodeUnresponsive) on a node that runs a revision of virt-handler
//     while another node runs another (rollout): that revision;
//   - the node layer Unknown or worse for one of its node's own signals
//     (NodeNotReady and the above): the node (CauseNode,
//     status.vmi.nodeName);
//   - the storage layer Degraded or Failed: the CSI driver of each claim's
//     StorageClass, then each StorageClass (storage's facts name them);
//   - a layer Unknown or worse for GuestInfoUnreachable (the guest probe
//     through virt-api fails): VirtAPI;
//   - a layer Unknown or worse for DomainStatsMissing: DomainStats.
//
// storage may be nil (the storage source is off): no storage claim then;
// rollout may be nil: no rollout claim.
func ClaimsOf(st *v1alpha1.VMObservationStatus, storage *storagefacts.Facts, rollout Rollout) []Claim {
	if st == nil || st.Layers == nil {
		return nil
	}
	var out []Claim
	claim := func(kind v1alpha1.IncidentCauseKind, name, class, layer string, l *v1alpha1.LayerStatus) {
		c := Claim{Cause: v1alpha1.IncidentCause{Kind: kind, Name: name}, Class: class, Layer: layer, Reason: l.Reason, Message: l.Message}
		if l.LastTransitionTime != nil {
			c.Since = l.LastTransitionTime.Time
		}
		if len(l.Evidence) > 0 {
			ev := l.Evidence[0]
			c.Evidence = &ev
		}
		out = append(out, c)
	}
	if l := st.Layers.Get(v1alpha1.LayerNode); l != nil && st.VMI != nil && st.VMI.NodeName != "" &&
		notHealthy(l.Verdict) && slices.Contains(nodeReasons, l.Reason) {
		node := st.VMI.NodeName
		if rollout != nil && slices.Contains(handlerReasons, l.Reason) {
			if rev, inProgress := rollout(node); rev != "" && inProgress {
				claim(v1alpha1.CauseVirtHandlerRollout, rev, "", v1alpha1.LayerNode, l)
			}
		}
		claim(CauseNode, node, "", v1alpha1.LayerNode, l)
		for i := range out {
			out[i].Node = node
		}
	}
	if l := st.Layers.Get(v1alpha1.LayerStorage); l != nil && storage != nil &&
		(l.Verdict == v1alpha1.VerdictDegraded || l.Verdict == v1alpha1.VerdictFailed) {
		classes := classesOf(storage)
		var drivers []string
		for _, c := range classes {
			if c.driver != "" && !slices.Contains(drivers, c.driver) {
				drivers = append(drivers, c.driver)
				claim(v1alpha1.CauseCSIDriver, c.driver, c.class, v1alpha1.LayerStorage, l)
			}
		}
		for _, c := range classes {
			claim(v1alpha1.CauseStorageClass, c.class, c.class, v1alpha1.LayerStorage, l)
		}
	}
	for _, s := range []struct {
		reason string
		kind   v1alpha1.IncidentCauseKind
	}{{v1alpha1.ReasonGuestInfoUnreachable, v1alpha1.CauseVirtAPI}, {v1alpha1.ReasonDomainStatsMissing, v1alpha1.CauseDomainStats}} {
		for name, l := range st.Layers.All() {
			if l.Reason == s.reason && notHealthy(l.Verdict) {
				claim(s.kind, "", "", name, l)
				break
			}
		}
	}
	return out
}

// storageClass is a StorageClass that a VM's claims name, and its CSI
// driver ("" when the class is missing or provisions nothing).
type storageClass struct{ class, driver string }

// classesOf lists the StorageClasses the claims of storage's volumes
// name, by name.
func classesOf(storage *storagefacts.Facts) []storageClass {
	var classes []storageClass
	for _, v := range storage.Volumes {
		if v.PVC == nil || v.PVC.StorageClassName == "" {
			continue
		}
		c := storageClass{class: v.PVC.StorageClassName}
		if v.PVC.Class != nil && v.PVC.Class.Exists && v.PVC.Class.Provisioner != storagefacts.NoProvisioner {
			c.driver = v.PVC.Class.Provisioner
		}
		if !slices.Contains(classes, c) {
			classes = append(classes, c)
		}
	}
	slices.SortFunc(classes, func(a, b storageClass) int { return cmp.Compare(a.class, b.class) })
	return classes
}

// Qualifies says whether members are enough to name their cause: at
// least the threshold of them turned within the window of each other.
// A CSI driver is named only over more than one StorageClass: over one,
// the StorageClass says it more precisely; a virt-handler rollout only
// over more than one node: over one, the node says it.
func Qualifies(p Policy, kind v1alpha1.IncidentCauseKind, members []Member) bool {
	p = p.withDefaults()
	threshold := p.Threshold
	if kind == CauseNode {
		threshold = p.NodeThreshold
	}
	if len(members) < threshold {
		return false
	}
	if over := spreadOf(kind); over != nil {
		seen := map[string]bool{}
		for _, m := range members {
			seen[over(m)] = true
		}
		if len(seen) < 2 {
			return false
		}
	}
	since := make([]time.Time, 0, len(members))
	for _, m := range members {
		since = append(since, m.Since)
	}
	slices.SortFunc(since, time.Time.Compare)
	for i := 0; i+threshold-1 < len(since); i++ {
		if since[i+threshold-1].Sub(since[i]) <= p.Window {
			return true
		}
	}
	return false
}

// spreadOf is what a cause must span more than one of to be named, nil
// for none: a CSI driver its StorageClasses, a rollout its nodes.
func spreadOf(kind v1alpha1.IncidentCauseKind) func(Member) string {
	switch kind {
	case v1alpha1.CauseCSIDriver:
		return func(m Member) string { return m.Class }
	case v1alpha1.CauseVirtHandlerRollout:
		return func(m Member) string { return m.Node }
	}
	return nil
}

// Judge is the status of the VMIncident of cause: members are the VMs
// assigned to it now, stored its stored status (nil when there is none).
// A nil status means there should be no VMIncident (none yet, or a
// resolved one past its retention). next is when to look again (a
// retention ending), zero for never.
func Judge(p Policy, cause v1alpha1.IncidentCause, members []Member, stored *v1alpha1.VMIncidentStatus, now time.Time) (st *v1alpha1.VMIncidentStatus, next time.Time) {
	p = p.withDefaults()
	now = now.Truncate(time.Second)
	if len(members) == 0 {
		if stored == nil {
			return nil, time.Time{}
		}
		out := stored.DeepCopy()
		if out.State != v1alpha1.IncidentResolved || out.ResolvedTime == nil {
			out.State, out.ResolvedTime = v1alpha1.IncidentResolved, &metav1.Time{Time: now}
		}
		end := out.ResolvedTime.Add(p.Retention)
		if !now.Before(end) {
			return nil, time.Time{}
		}
		setReady(out)
		return out, end
	}
	ms := slices.Clone(members)
	slices.SortFunc(ms, func(a, b Member) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	var out *v1alpha1.VMIncidentStatus
	if stored != nil && stored.State == v1alpha1.IncidentOpen {
		// The same incident while a member holds: it keeps what it
		// opened with.
		out = stored.DeepCopy()
	} else {
		first := slices.MinFunc(ms, func(a, b Member) int {
			return cmp.Or(a.Since.Compare(b.Since), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
		})
		start := first.Since
		if start.IsZero() {
			start = now
		}
		out = &v1alpha1.VMIncidentStatus{
			State: v1alpha1.IncidentOpen, Layer: first.Layer, Reason: first.Reason, Message: first.Message,
			StartTime: &metav1.Time{Time: start.Truncate(time.Second)},
		}
		if first.Evidence != nil {
			ev := *first.Evidence
			out.FirstEvidence = &ev
		}
	}
	c := cause
	out.Cause = &c
	out.MemberCount = int32(len(ms))
	out.Members = make([]v1alpha1.IncidentMember, 0, min(len(ms), MaxMembers))
	for _, m := range ms[:min(len(ms), MaxMembers)] {
		out.Members = append(out.Members, v1alpha1.IncidentMember{Namespace: m.Namespace, Name: m.Name})
	}
	setReady(out)
	return out, time.Time{}
}

// Condition reasons of a VMIncident's Ready condition.
const (
	// ReasonIncidentOpen: Ready=False, the cause holds.
	ReasonIncidentOpen = "IncidentOpen"
	// ReasonIncidentResolved: Ready=True, no member shows the cause.
	ReasonIncidentResolved = "IncidentResolved"
)

// setReady sets the one kstatus condition, Ready, from the state; its
// time is the state's, so the same incident gives the same condition.
func setReady(st *v1alpha1.VMIncidentStatus) {
	c := metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: ReasonIncidentOpen}
	if st.StartTime != nil {
		c.LastTransitionTime = *st.StartTime
	}
	c.Message = fmt.Sprintf("%d VMs share the cause %s", st.MemberCount, describe(st.Cause))
	if st.State == v1alpha1.IncidentResolved {
		c.Status, c.Reason = metav1.ConditionTrue, ReasonIncidentResolved
		c.Message = fmt.Sprintf("no VM shows the cause %s any longer", describe(st.Cause))
		if st.ResolvedTime != nil {
			c.LastTransitionTime = *st.ResolvedTime
		}
	}
	st.Conditions = []metav1.Condition{c}
}

// describe names a cause for a person: StorageClass ceph-rbd, VirtAPI.
func describe(c *v1alpha1.IncidentCause) string {
	if c == nil {
		return "unknown"
	}
	if c.Name == "" {
		return string(c.Kind)
	}
	return string(c.Kind) + " " + c.Name
}

// Describe names a cause for a person (Events, logs).
func Describe(c v1alpha1.IncidentCause) string { return describe(&c) }
