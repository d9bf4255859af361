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
// the VMIncident reconciler reads the groups (Groups). A Tracker is safe
// for concurrent use.
type Tracker struct {
	policy Policy
	// stored says whether a VMIncident of that name is stored Open: an
	// incident opened before a restart stays open for the VMs that still
	// claim it, however long ago they turned.
	stored func(name string) bool
	// changed is signalled (never blocking) when a group changes.
	changed chan struct{}

	mu sync.Mutex
	// vms are the VMs with a claim or an assignment.
	vms map[types.NamespacedName]vmEntry
	// claimants are the VMs with a claim on each incident name.
	claimants map[string]map[types.NamespacedName]struct{}
	// opened are the incidents that qualified in memory; they stay open
	// while a VM claims them.
	opened map[string]bool
	// warm is set once every VM was evaluated once after a start.
	warm bool
}

type vmEntry struct {
	claims   []Claim
	assigned string
}

// NewTracker makes a Tracker; stored says whether a VMIncident is stored
// Open (nil: none is).
func NewTracker(p Policy, stored func(name string) bool) *Tracker {
	if stored == nil {
		stored = func(string) bool { return false }
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
	// Incident is the VMIncident the VM is a member of, "" for none.
	Incident string
	// Quiet are the layers whose transitions the incident's Event speaks
	// for: the layer of the claim the VM joins or leaves.
	Quiet []string
	// Wake are the other VMs that became members of an incident this
	// VM's claim opened: they were evaluated before it was, and are
	// evaluated again to point at it.
	Wake []types.NamespacedName
}

// Observe records the claims of the VM key (ClaimsOf its new status) and
// says which incident it is a member of. current is the incident its
// stored status points at: kept while the VM still claims it and it is
// open, so that a broader cause opening later does not move members
// (which would cost a write each).
func (t *Tracker) Observe(key types.NamespacedName, current string, claims []Claim) Assignment {
	t.mu.Lock()
	defer t.mu.Unlock()
	old := t.vms[key]
	for _, c := range old.claims {
		n := Name(c.Cause)
		if !slices.ContainsFunc(claims, func(d Claim) bool { return Name(d.Cause) == n }) {
			t.unclaim(n, key)
		}
	}
	var a Assignment
	for _, c := range claims {
		n := Name(c.Cause)
		set := t.claimants[n]
		if set == nil {
			set = map[types.NamespacedName]struct{}{}
			t.claimants[n] = set
		}
		set[key] = struct{}{}
	}
	e := vmEntry{claims: claims}
	t.vms[key] = e
	open := func(c Claim) bool {
		n := Name(c.Cause)
		if t.opened[n] || t.stored(n) {
			return true
		}
		if Qualifies(t.policy, c.Cause.Kind, t.members(n, c.Cause, false)) {
			t.opened[n] = true
			for k := range t.claimants[n] {
				if k != key && t.vms[k].assigned == "" {
					a.Wake = append(a.Wake, k)
				}
			}
			return true
		}
		return false
	}
	var layer string
	for _, c := range claims {
		if n := Name(c.Cause); n == current && open(c) {
			e.assigned, layer = n, c.Layer
		}
	}
	if e.assigned == "" {
		for _, c := range claims {
			if open(c) {
				e.assigned, layer = Name(c.Cause), c.Layer
				break
			}
		}
	}
	if e.assigned == "" && len(claims) == 0 {
		delete(t.vms, key)
	} else {
		t.vms[key] = e
	}
	a.Incident = e.assigned
	if layer != "" {
		a.Quiet = append(a.Quiet, layer)
	}
	if old.assigned != "" {
		for _, c := range old.claims {
			if Name(c.Cause) == old.assigned && !slices.Contains(a.Quiet, c.Layer) {
				a.Quiet = append(a.Quiet, c.Layer)
			}
		}
	}
	slices.SortFunc(a.Wake, func(x, y types.NamespacedName) int {
		return cmp.Or(cmp.Compare(x.Namespace, y.Namespace), cmp.Compare(x.Name, y.Name))
	})
	if old.assigned != e.assigned || !slices.Equal(claimNames(old.claims), claimNames(claims)) {
		t.signal()
	}
	return a
}

// Forget drops a deleted VM.
func (t *Tracker) Forget(key types.NamespacedName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	old, ok := t.vms[key]
	if !ok {
		return
	}
	for _, c := range old.claims {
		t.unclaim(Name(c.Cause), key)
	}
	delete(t.vms, key)
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

// Group is an incident's cause and the VMs assigned to it.
type Group struct {
	Name    string
	Cause   v1alpha1.IncidentCause
	Members []Member
}

// Groups lists the incidents with members, by name.
func (t *Tracker) Groups() []Group {
	t.mu.Lock()
	defer t.mu.Unlock()
	byName := map[string]*Group{}
	for key, e := range t.vms {
		if e.assigned == "" {
			continue
		}
		for _, c := range e.claims {
			if Name(c.Cause) != e.assigned {
				continue
			}
			g := byName[e.assigned]
			if g == nil {
				g = &Group{Name: e.assigned, Cause: c.Cause}
				byName[e.assigned] = g
			}
			g.Members = append(g.Members, Member{Namespace: key.Namespace, Name: key.Name, Claim: c})
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
func (t *Tracker) members(n string, cause v1alpha1.IncidentCause, assignedOnly bool) []Member {
	var out []Member
	for k := range t.claimants[n] {
		e := t.vms[k]
		if assignedOnly && e.assigned != n {
			continue
		}
		for _, c := range e.claims {
			if c.Cause == cause {
				out = append(out, Member{Namespace: k.Namespace, Name: k.Name, Claim: c})
			}
		}
	}
	return out
}

func (t *Tracker) unclaim(n string, key types.NamespacedName) {
	set := t.claimants[n]
	delete(set, key)
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

func claimNames(cs []Claim) []string {
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, Name(c.Cause))
	}
	return out
}
