package incident

import (
	"cmp"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/vmobs/vmobs/api/v1alpha1"
)

// Tracker holds the claims of the VMs the controller evaluated, in memory:
// the VMObservation reconciler tells it each VM's claims before it decides
// a write (Observe) and learns the incident the VM is a member of, so
// that the pointer goes out in the same status write as the transition;
// the VMIncident reconciler reads the groups (Groups). A node's incident
// is its NodeObservation's: the Tracker only tells its members that they
// are. A Tracker is safe for concurrent use.
type Tracker struct {
	policy Policy
	// stored says whether the incident ref points at is stored Open: an
	// incident opened before a restart, or a node's that its
	// NodeObservation opened, stays open for the VMs that claim it,
	// however long ago they turned.
	stored func(ref v1alpha1.IncidentRef) bool
	// changed is signalled (never blocking) when a group changes.
	changed chan struct{}

	mu sync.Mutex
	// vms are the VMs with a claim or an assignment.
	vms map[types.NamespacedName]vmEntry
	// claimants are the VMs with a claim on each incident (by key).
	claimants map[string]map[types.NamespacedName]struct{}
	// opened are the incidents that qualified in memory; they stay open
	// while a VM claims them.
	opened map[string]bool
	// warm is set once every VM was evaluated once after a start.
	warm bool
}

type vmEntry struct {
	claims []Claim
	// assigned is the key of the incident the VM is a member of, and
	// rank its cause's.
	assigned string
	rank     int
}

// rank orders the causes a VM is a member of first, whatever incident
// it is in already: a virt-handler rollout, then its node; the others
// rank last, and among them the VM keeps its incident.
func rank(k v1alpha1.IncidentCauseKind) int {
	switch k {
	case v1alpha1.CauseVirtHandlerRollout:
		return 0
	case CauseNode:
		return 1
	}
	return 2
}

// keyOf is a Tracker's name for the incident of cause: kind and name, so
// that a node named like a VMIncident stays apart from it.
func keyOf(c v1alpha1.IncidentCause) string {
	r := Ref(c)
	return r.Kind + "/" + r.Name
}

// NewTracker makes a Tracker; stored says whether an incident is stored
// Open (nil: none is).
func NewTracker(p Policy, stored func(ref v1alpha1.IncidentRef) bool) *Tracker {
	if stored == nil {
		stored = func(v1alpha1.IncidentRef) bool { return false }
	}
	return &Tracker{
		policy: p, stored: stored, changed: make(chan struct{}, 1),
		vms: map[types.NamespacedName]vmEntry{}, claimants: map[string]map[types.NamespacedName]struct{}{},
		opened: map[string]bool{},
	}
}

// Changed is signalled when a group changed.
func (t *Tracker) Changed() <-chan struct{} { return t.changed }

// Assignment is what Observe tells the VMObservation reconciler.
type Assignment struct {
	// Incident is the incident the VM is a member of, nil for none.
	Incident *v1alpha1.IncidentRef
	// Quiet are the layers whose transitions the incident's Event speaks
	// for: the layer of the claim the VM joins or leaves, for a
	// VMIncident (a NodeObservation posts no Event: a node incident's
	// members post their own).
	Quiet []string
	// Wake are the other VMs that became members of an incident this
	// VM's claim opened: they were evaluated before it was, and are
	// evaluated again to point at it.
	Wake []types.NamespacedName
}

// Observe records the claims of the VM vm (ClaimsOf its new status) and
// says which incident it is a member of: a virt-handler rollout's, else
// its node's, when open (their failure explains the rest), else the one its stored
// status points at (current) while the VM still claims it and it is
// open, so that a broader cause opening later does not move members
// (which would cost a write each), else the first open one of claims.
// A node claim counts only with Policy.Nodes.
func (t *Tracker) Observe(vm types.NamespacedName, current *v1alpha1.IncidentRef, claims []Claim) Assignment {
	if !t.policy.Nodes {
		claims = slices.DeleteFunc(slices.Clone(claims), func(c Claim) bool { return c.Cause.Kind == CauseNode })
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	old := t.vms[vm]
	for _, c := range old.claims {
		n := keyOf(c.Cause)
		if !slices.ContainsFunc(claims, func(d Claim) bool { return keyOf(d.Cause) == n }) {
			t.unclaim(n, vm)
		}
	}
	var a Assignment
	for _, c := range claims {
		n := keyOf(c.Cause)
		set := t.claimants[n]
		if set == nil {
			set = map[types.NamespacedName]struct{}{}
			t.claimants[n] = set
		}
		set[vm] = struct{}{}
	}
	e := vmEntry{claims: claims}
	t.vms[vm] = e
	open := func(c Claim) bool {
		n := keyOf(c.Cause)
		if t.opened[n] || t.stored(Ref(c.Cause)) {
			return true
		}
		if Qualifies(t.policy, c.Cause.Kind, t.members(n, c.Cause)) {
			t.opened[n] = true
			for k := range t.claimants[n] {
				// The VMs that are members now: those in no incident,
				// and those in one of a cause that ranks after this one.
				if e := t.vms[k]; k != vm && (e.assigned == "" || rank(c.Cause.Kind) < e.rank) {
					a.Wake = append(a.Wake, k)
				}
			}
			return true
		}
		return false
	}
	var joined *Claim
	cur := ""
	if current != nil {
		cur = current.Kind + "/" + current.Name
	}
	for _, pick := range []func(Claim) bool{
		func(c Claim) bool { return rank(c.Cause.Kind) == 0 },
		func(c Claim) bool { return rank(c.Cause.Kind) == 1 },
		func(c Claim) bool { return keyOf(c.Cause) == cur },
		func(Claim) bool { return true },
	} {
		for i, c := range claims {
			if pick(c) && open(c) {
				joined = &claims[i]
				break
			}
		}
		if joined != nil {
			break
		}
	}
	if joined != nil {
		e.assigned, e.rank = keyOf(joined.Cause), rank(joined.Cause.Kind)
		ref := Ref(joined.Cause)
		a.Incident = &ref
		if joined.Cause.Kind != CauseNode {
			a.Quiet = append(a.Quiet, joined.Layer)
		}
	}
	if e.assigned == "" && len(claims) == 0 {
		delete(t.vms, vm)
	} else {
		t.vms[vm] = e
	}
	if old.assigned != "" {
		for _, c := range old.claims {
			if keyOf(c.Cause) == old.assigned && c.Cause.Kind != CauseNode && !slices.Contains(a.Quiet, c.Layer) {
				a.Quiet = append(a.Quiet, c.Layer)
			}
		}
	}
	slices.SortFunc(a.Wake, func(x, y types.NamespacedName) int {
		return cmp.Or(cmp.Compare(x.Namespace, y.Namespace), cmp.Compare(x.Name, y.Name))
	})
	if old.assigned != e.assigned || !slices.Equal(claimKeys(old.claims), claimKeys(claims)) {
		t.signal()
	}
	return a
}

// Forget drops a deleted VM.
func (t *Tracker) Forget(vm types.NamespacedName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	old, ok := t.vms[vm]
	if !ok {
		return
	}
	for _, c := range old.claims {
		t.unclaim(keyOf(c.Cause), vm)
	}
	delete(t.vms, vm)
	t.signal()
}

// SetWarm records that every VM was evaluated once since the start: an
// incident no VM claims is then resolved, not merely not yet seen.
func (t *Tracker) SetWarm() {
	t.mu.Lock()
	t.warm = true
	t.mu.Unlock()
	t.signal()
}

// Warm says whether SetWarm was called.
func (t *Tracker) Warm() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.warm
}

// Group is a VMIncident's cause and the VMs assigned to it.
type Group struct {
	// Name is the VMIncident's.
	Name    string
	Cause   v1alpha1.IncidentCause
	Members []Member
}

// Groups lists the VMIncidents with members, by name; a node's incident
// is its NodeObservation's, not one of them.
func (t *Tracker) Groups() []Group {
	t.mu.Lock()
	defer t.mu.Unlock()
	byName := map[string]*Group{}
	for vm, e := range t.vms {
		if e.assigned == "" {
			continue
		}
		for _, c := range e.claims {
			if keyOf(c.Cause) != e.assigned || c.Cause.Kind == CauseNode {
				continue
			}
			n := Name(c.Cause)
			g := byName[n]
			if g == nil {
				g = &Group{Name: n, Cause: c.Cause}
				byName[n] = g
			}
			g.Members = append(g.Members, Member{Namespace: vm.Namespace, Name: vm.Name, Claim: c})
		}
	}
	out := make([]Group, 0, len(byName))
	for _, g := range byName {
		out = append(out, *g)
	}
	slices.SortFunc(out, func(a, b Group) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// members are the VMs claiming n (cause), with their claims.
func (t *Tracker) members(n string, cause v1alpha1.IncidentCause) []Member {
	var out []Member
	for k := range t.claimants[n] {
		e := t.vms[k]
		for _, c := range e.claims {
			if c.Cause == cause {
				out = append(out, Member{Namespace: k.Namespace, Name: k.Name, Claim: c})
			}
		}
	}
	return out
}

func (t *Tracker) unclaim(n string, vm types.NamespacedName) {
	set := t.claimants[n]
	delete(set, vm)
	if len(set) == 0 {
		delete(t.claimants, n)
		delete(t.opened, n)
	}
}

func (t *Tracker) signal() {
	select {
	case t.changed <- struct{}{}:
	default:
	}
}

func claimKeys(cs []Claim) []string {
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, keyOf(c.Cause))
	}
	return out
}
