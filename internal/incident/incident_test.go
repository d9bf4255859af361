package incident

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/storagefacts"
)

// now is the fixed clock of every table.
var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

var (
	ceph = v1alpha1.IncidentCause{Kind: v1alpha1.CauseStorageClass, Name: "ceph-rbd"}
	rbd  = v1alpha1.IncidentCause{Kind: v1alpha1.CauseCSIDriver, Name: "rbd.csi.ceph.com"}
)

func TestName(t *testing.T) {
	long := make([]byte, 300)
	for i := range long {
		long[i] = 'a'
	}
	for _, tc := range []struct {
		cause v1alpha1.IncidentCause
		want  string
	}{
		{ceph, "storageclass-ceph-rbd"},
		{rbd, "csidriver-rbd.csi.ceph.com"},
		{v1alpha1.IncidentCause{Kind: v1alpha1.CauseVirtAPI}, "virtapi"},
		{v1alpha1.IncidentCause{Kind: v1alpha1.CauseDomainStats}, "domainstats"},
		// Not a valid name part: cleaned, and a hash keeps it apart from
		// "fast-ssd".
		{v1alpha1.IncidentCause{Kind: v1alpha1.CauseStorageClass, Name: "Fast_SSD"}, "storageclass-fast-ssd-" + hash("Fast_SSD")},
	} {
		if got := Name(tc.cause); got != tc.want {
			t.Errorf("Name(%v) = %q, want %q", tc.cause, got, tc.want)
		}
	}
	n := Name(v1alpha1.IncidentCause{Kind: v1alpha1.CauseStorageClass, Name: string(long)})
	if len(n) > maxName || n == Name(v1alpha1.IncidentCause{Kind: v1alpha1.CauseStorageClass, Name: string(long[:299])}) {
		t.Errorf("a long name: %q (%d characters), or not apart from a shorter one", n, len(n))
	}
}

func hash(s string) string {
	n := Name(v1alpha1.IncidentCause{Kind: "x", Name: s})
	return n[len(n)-8:]
}

// status builds a VMObservation status whose layer name says verdict for
// reason, turned at since.
func status(layer string, verdict v1alpha1.Verdict, reason string, since time.Time) *v1alpha1.VMObservationStatus {
	st := &v1alpha1.VMObservationStatus{Layers: &v1alpha1.Layers{}}
	for name, l := range st.Layers.All() {
		*l = v1alpha1.LayerStatus{Verdict: v1alpha1.VerdictHealthy, Reason: "Fine"}
		if name == layer {
			*l = v1alpha1.LayerStatus{Verdict: verdict, Reason: reason, Message: reason + " here",
				LastTransitionTime: &metav1.Time{Time: since},
				Evidence:           []v1alpha1.Evidence{{Kind: "Pod", Name: "virt-launcher-x", Field: "events", Value: reason}}}
		}
	}
	return st
}

func volumes(classes ...string) *storagefacts.Facts {
	f := &storagefacts.Facts{}
	for i, c := range classes {
		f.Volumes = append(f.Volumes, storagefacts.Volume{Name: fmt.Sprint("v", i), ClaimName: fmt.Sprint("c", i),
			PVC: &storagefacts.PVC{StorageClassName: c, Class: &storagefacts.StorageClass{Name: c, Exists: true, Provisioner: "rbd.csi.ceph.com"}}})
	}
	return f
}

func causes(cs []Claim) []string {
	var out []string
	for _, c := range cs {
		out = append(out, Name(c.Cause))
	}
	return out
}

func TestClaimsOf(t *testing.T) {
	for name, tc := range map[string]struct {
		st      *v1alpha1.VMObservationStatus
		storage *storagefacts.Facts
		want    []string
	}{
		"storage Degraded: the driver, then the class": {
			st:      status(v1alpha1.LayerStorage, v1alpha1.VerdictDegraded, v1alpha1.ReasonVolumeAttachFailed, now),
			storage: volumes("ceph-rbd", "ceph-rbd"),
			want:    []string{"csidriver-rbd.csi.ceph.com", "storageclass-ceph-rbd"},
		},
		"storage Degraded over two classes of one driver": {
			st:      status(v1alpha1.LayerStorage, v1alpha1.VerdictFailed, v1alpha1.ReasonPVCLost, now),
			storage: volumes("b", "a"),
			want:    []string{"csidriver-rbd.csi.ceph.com", "storageclass-a", "storageclass-b"},
		},
		"storage Healthy: no claim": {
			st:      status(v1alpha1.LayerStorage, v1alpha1.VerdictHealthy, v1alpha1.ReasonVolumesReady, now),
			storage: volumes("ceph-rbd"),
		},
		"storage Progressing (an import on its way): no claim": {
			st:      status(v1alpha1.LayerStorage, v1alpha1.VerdictProgressing, v1alpha1.ReasonDataVolumeImporting, now),
			storage: volumes("ceph-rbd"),
		},
		"storage source off: no claim": {
			st: status(v1alpha1.LayerStorage, v1alpha1.VerdictDegraded, v1alpha1.ReasonVolumeAttachFailed, now),
		},
		"domain stats missing": {
			st:   status(v1alpha1.LayerGuest, v1alpha1.VerdictUnknown, v1alpha1.ReasonDomainStatsMissing, now),
			want: []string{"domainstats"},
		},
		"guest info unreachable through virt-api": {
			st:   status(v1alpha1.LayerNode, v1alpha1.VerdictDegraded, v1alpha1.ReasonGuestInfoUnreachable, now),
			want: []string{"virtapi"},
		},
		"a node cause is the node's incident, not one of these": {
			st: status(v1alpha1.LayerNode, v1alpha1.VerdictUnknown, v1alpha1.ReasonNodeAgentStale, now),
		},
		"no status": {st: &v1alpha1.VMObservationStatus{}},
	} {
		t.Run(name, func(t *testing.T) {
			got := causes(ClaimsOf(tc.st, tc.storage, nil))
			if !slices.Equal(got, tc.want) {
				t.Errorf("claims %v, want %v", got, tc.want)
			}
		})
	}
}

func member(name string, cause v1alpha1.IncidentCause, class string, since time.Time) Member {
	return Member{Namespace: "prod", Name: name, Claim: Claim{Cause: cause, Class: class, Layer: v1alpha1.LayerStorage,
		Reason: v1alpha1.ReasonVolumeAttachFailed, Message: "attach failed for " + name, Since: since,
		Evidence: &v1alpha1.Evidence{Kind: "Pod", Name: "virt-launcher-" + name, Field: "events"}}}
}

func TestQualifies(t *testing.T) {
	p := Policy{Threshold: 3, Window: 5 * time.Minute}
	at := func(mins ...int) []Member {
		var out []Member
		for i, m := range mins {
			out = append(out, member(fmt.Sprint("vm-", i), ceph, "ceph-rbd", now.Add(time.Duration(m)*time.Minute)))
		}
		return out
	}
	for name, tc := range map[string]struct {
		kind    v1alpha1.IncidentCauseKind
		members []Member
		want    bool
	}{
		"three at once":                       {members: at(0, 0, 0), want: true},
		"two":                                 {members: at(0, 0)},
		"three within the window":             {members: at(0, 2, 5), want: true},
		"three spread past the window":        {members: at(0, 6, 12)},
		"three of five within a window":       {members: at(-30, 0, 1, 20, 2), want: true},
		"a driver over one class":             {kind: v1alpha1.CauseCSIDriver, members: at(0, 0, 0)},
		"no members":                          {},
		"a zero time counts as the same time": {members: []Member{member("a", ceph, "c", time.Time{}), member("b", ceph, "c", time.Time{}), member("c", ceph, "c", time.Time{})}, want: true},
	} {
		t.Run(name, func(t *testing.T) {
			kind := tc.kind
			if kind == "" {
				kind = v1alpha1.CauseStorageClass
			}
			if got := Qualifies(p, kind, tc.members); got != tc.want {
				t.Errorf("Qualifies = %v, want %v", got, tc.want)
			}
		})
	}
	driver := []Member{member("a", rbd, "x", now), member("b", rbd, "x", now), member("c", rbd, "y", now)}
	if !Qualifies(p, v1alpha1.CauseCSIDriver, driver) {
		t.Error("a driver over two classes, three VMs at once, does not qualify")
	}
}

func TestJudge(t *testing.T) {
	p := Policy{Retention: time.Hour}
	three := []Member{member("vm-c", ceph, "ceph-rbd", now.Add(-time.Minute)), member("vm-a", ceph, "ceph-rbd", now.Add(-2*time.Minute)), member("vm-b", ceph, "ceph-rbd", now)}
	opened, _ := Judge(p, ceph, three, nil, now)
	resolvedAt := now.Add(10 * time.Minute)
	resolved, _ := Judge(p, ceph, nil, opened, resolvedAt)

	for name, tc := range map[string]struct {
		members []Member
		stored  *v1alpha1.VMIncidentStatus
		at      time.Time
		check   func(t *testing.T, st *v1alpha1.VMIncidentStatus, next time.Time)
	}{
		"opens with the first member's finding and start, members sorted": {
			members: three, at: now,
			check: func(t *testing.T, st *v1alpha1.VMIncidentStatus, next time.Time) {
				if st.State != v1alpha1.IncidentOpen || !st.StartTime.Equal(&metav1.Time{Time: now.Add(-2 * time.Minute)}) ||
					st.FirstEvidence == nil || st.FirstEvidence.Name != "virt-launcher-vm-a" || st.Message != "attach failed for vm-a" {
					t.Errorf("opened %+v", st)
				}
				if st.MemberCount != 3 || st.Members[0].Name != "vm-a" || st.Members[2].Name != "vm-c" {
					t.Errorf("members %d %v", st.MemberCount, st.Members)
				}
				if !next.IsZero() || st.Conditions[0].Status != metav1.ConditionFalse {
					t.Errorf("next %v, conditions %v", next, st.Conditions)
				}
			},
		},
		"stays open while a member holds, with what it opened with": {
			members: three[2:], stored: opened, at: now.Add(5 * time.Minute),
			check: func(t *testing.T, st *v1alpha1.VMIncidentStatus, _ time.Time) {
				if st.State != v1alpha1.IncidentOpen || st.MemberCount != 1 || st.FirstEvidence.Name != "virt-launcher-vm-a" || !st.StartTime.Equal(opened.StartTime) {
					t.Errorf("%+v", st)
				}
			},
		},
		"resolves when no member holds, and looks again when its retention ends": {
			stored: opened, at: resolvedAt,
			check: func(t *testing.T, st *v1alpha1.VMIncidentStatus, next time.Time) {
				if st.State != v1alpha1.IncidentResolved || !st.ResolvedTime.Time.Equal(resolvedAt) || !next.Equal(resolvedAt.Add(time.Hour)) ||
					st.Conditions[0].Status != metav1.ConditionTrue {
					t.Errorf("%+v next %v", st, next)
				}
			},
		},
		"a resolved one is kept during its retention, unchanged": {
			stored: resolved, at: resolvedAt.Add(30 * time.Minute),
			check: func(t *testing.T, st *v1alpha1.VMIncidentStatus, _ time.Time) {
				if st == nil || st.State != v1alpha1.IncidentResolved || !st.ResolvedTime.Time.Equal(resolvedAt) {
					t.Errorf("%+v", st)
				}
			},
		},
		"and deleted after it": {
			stored: resolved, at: resolvedAt.Add(time.Hour),
			check: func(t *testing.T, st *v1alpha1.VMIncidentStatus, next time.Time) {
				if st != nil || !next.IsZero() {
					t.Errorf("%+v next %v", st, next)
				}
			},
		},
		"a resolved one reopens with a new start": {
			members: three[:1], stored: resolved, at: resolvedAt.Add(time.Minute),
			check: func(t *testing.T, st *v1alpha1.VMIncidentStatus, _ time.Time) {
				if st.State != v1alpha1.IncidentOpen || st.ResolvedTime != nil || st.MemberCount != 1 {
					t.Errorf("%+v", st)
				}
			},
		},
		"nothing, and nothing stored": {
			at: now,
			check: func(t *testing.T, st *v1alpha1.VMIncidentStatus, _ time.Time) {
				if st != nil {
					t.Errorf("%+v", st)
				}
			},
		},
	} {
		t.Run(name, func(t *testing.T) {
			st, next := Judge(p, ceph, tc.members, tc.stored, tc.at)
			tc.check(t, st, next)
			// The same input gives the same status: no write at idle.
			again, _ := Judge(p, ceph, tc.members, tc.stored, tc.at)
			if !equality.Semantic.DeepEqual(again, st) {
				t.Errorf("not deterministic:\n%+v\n%+v", st, again)
			}
		})
	}
	var many []Member
	for i := range 100 {
		many = append(many, member(fmt.Sprintf("vm-%03d", i), ceph, "ceph-rbd", now))
	}
	st, _ := Judge(p, ceph, many, nil, now)
	if st.MemberCount != 100 || len(st.Members) != MaxMembers {
		t.Errorf("100 members: count %d, listed %d", st.MemberCount, len(st.Members))
	}
}

func key(i int) types.NamespacedName {
	return types.NamespacedName{Namespace: "prod", Name: fmt.Sprintf("vm-%02d", i)}
}

func vmIncident(name string) *v1alpha1.IncidentRef {
	return &v1alpha1.IncidentRef{Kind: v1alpha1.IncidentKindVMIncident, Name: name}
}

// inName is the VMIncident a's VM is in, "" for none (or a node's).
func inName(a Assignment) string {
	if a.Incident == nil || a.Incident.Kind != v1alpha1.IncidentKindVMIncident {
		return ""
	}
	return a.Incident.Name
}

func storageClaims(since time.Time, classes ...string) []Claim {
	return ClaimsOf(status(v1alpha1.LayerStorage, v1alpha1.VerdictDegraded, v1alpha1.ReasonVolumeAttachFailed, since), volumes(classes...), nil)
}

// TestTrackerBurst: 40 VMs of one StorageClass turn Degraded in a burst.
// The first two learn of no incident (there is none yet); the third opens
// it and wakes them; every later one learns it in its own evaluation.
func TestTrackerBurst(t *testing.T) {
	tr := NewTracker(Policy{Threshold: 3}, nil)
	var woken []types.NamespacedName
	for i := range 40 {
		a := tr.Observe(key(i), nil, storageClaims(now, "ceph-rbd"))
		switch {
		case i < 2 && a.Incident != nil:
			t.Fatalf("VM %d of 3 is in %v", i+1, a.Incident)
		case i >= 2 && inName(a) != "storageclass-ceph-rbd":
			t.Fatalf("VM %d is in %v", i+1, a.Incident)
		}
		if i >= 2 && !slices.Equal(a.Quiet, []string{v1alpha1.LayerStorage}) {
			t.Fatalf("VM %d quiets %v", i+1, a.Quiet)
		}
		woken = append(woken, a.Wake...)
	}
	if !slices.Equal(woken, []types.NamespacedName{key(0), key(1)}) {
		t.Fatalf("woken %v, want the first two", woken)
	}
	for i := range 2 {
		if a := tr.Observe(key(i), nil, storageClaims(now, "ceph-rbd")); inName(a) != "storageclass-ceph-rbd" || len(a.Wake) != 0 {
			t.Fatalf("woken VM %d: %+v", i, a)
		}
	}
	gs := tr.Groups()
	if len(gs) != 1 || gs[0].Name != "storageclass-ceph-rbd" || len(gs[0].Members) != 40 || gs[0].Cause != ceph {
		t.Fatalf("groups %+v", gs)
	}
	// They heal: the VM leaves, and its Event is quiet for the storage
	// layer it leaves.
	for i := range 40 {
		a := tr.Observe(key(i), vmIncident("storageclass-ceph-rbd"), nil)
		if a.Incident != nil || !slices.Equal(a.Quiet, []string{v1alpha1.LayerStorage}) {
			t.Fatalf("healed VM %d: %+v", i, a)
		}
	}
	if gs := tr.Groups(); len(gs) != 0 {
		t.Fatalf("groups after healing: %+v", gs)
	}
	if len(tr.vms) != 0 || len(tr.claimants) != 0 || len(tr.opened) != 0 {
		t.Errorf("the tracker holds %d VMs, %d claims, %d opened after healing", len(tr.vms), len(tr.claimants), len(tr.opened))
	}
}

func TestTrackerSpreadAndRestart(t *testing.T) {
	// Three VMs turned an hour apart: no incident, each its own cause.
	tr := NewTracker(Policy{Threshold: 3}, nil)
	for i := range 3 {
		if a := tr.Observe(key(i), nil, storageClaims(now.Add(time.Duration(i)*time.Hour), "ceph-rbd")); a.Incident != nil {
			t.Fatalf("VM %d: %+v", i, a)
		}
	}
	// After a restart, a VMIncident stored Open keeps its members,
	// however long ago they turned.
	tr = NewTracker(Policy{Threshold: 3}, func(r v1alpha1.IncidentRef) bool { return r == *vmIncident("storageclass-ceph-rbd") })
	if a := tr.Observe(key(0), vmIncident("storageclass-ceph-rbd"), storageClaims(now.Add(-3*time.Hour), "ceph-rbd")); inName(a) != "storageclass-ceph-rbd" {
		t.Fatalf("after a restart: %+v", a)
	}
}

// TestTrackerKeepsMembers: a VM stays in the incident it points at when a
// broader one opens (moving it would cost a write), and a new one joins
// the broadest open one.
func TestTrackerKeepsMembers(t *testing.T) {
	tr := NewTracker(Policy{Threshold: 3}, nil)
	for i := range 3 {
		tr.Observe(key(i), nil, storageClaims(now, "a"))
	}
	// Two VMs of another class of the same driver: the driver now spans
	// two classes.
	a := tr.Observe(key(3), nil, storageClaims(now, "b"))
	if inName(a) != "csidriver-rbd.csi.ceph.com" {
		t.Fatalf("VM of class b: %+v", a)
	}
	if a := tr.Observe(key(0), vmIncident("storageclass-a"), storageClaims(now, "a")); inName(a) != "storageclass-a" {
		t.Fatalf("a member moved: %+v", a)
	}
	tr.Forget(key(3))
	if gs := tr.Groups(); len(gs) != 1 || gs[0].Name != "storageclass-a" {
		t.Fatalf("groups %+v", gs)
	}
}

// FuzzClaimsOf: a status and storage facts of any shape (JSON-decoded)
// never make ClaimsOf panic, and every claim names a cause Name turns into
// a valid object name.
func FuzzClaimsOf(f *testing.F) {
	seed, _ := json.Marshal(status(v1alpha1.LayerStorage, v1alpha1.VerdictDegraded, v1alpha1.ReasonVolumeAttachFailed, now))
	facts, _ := json.Marshal(volumes("ceph-rbd", "Fast_SSD"))
	f.Add(seed, facts)
	f.Add([]byte(`{"layers":{"node":{"verdict":"Unknown","reason":"DomainStatsMissing"}}}`), []byte(`{"Volumes":[{"PVC":null}]}`))
	f.Fuzz(func(t *testing.T, st, sf []byte) {
		var s v1alpha1.VMObservationStatus
		var facts *storagefacts.Facts
		if json.Unmarshal(st, &s) != nil {
			return
		}
		if len(sf) > 0 {
			facts = &storagefacts.Facts{}
			if json.Unmarshal(sf, facts) != nil {
				return
			}
		}
		for _, c := range ClaimsOf(&s, facts, rolloutOf(map[string]string{"node-a": "abc", "node-b": "def"})) {
			n := Name(c.Cause)
			if len(n) == 0 || len(n) > maxName || strings.ToLower(n) != n || strings.ContainsAny(n, " /_") {
				t.Errorf("claim %+v: name %q", c.Cause, n)
			}
		}
	})
}

// onNode builds the status of a VM on node whose node layer says verdict
// for reason, turned at since.
func onNode(node string, verdict v1alpha1.Verdict, reason string, since time.Time) *v1alpha1.VMObservationStatus {
	st := status(v1alpha1.LayerNode, verdict, reason, since)
	st.VMI = &v1alpha1.VMISummary{NodeName: node}
	return st
}

func TestClaimsOfNode(t *testing.T) {
	nodeA := v1alpha1.IncidentCause{Kind: CauseNode, Name: "node-a"}
	for _, tc := range []struct {
		name string
		st   *v1alpha1.VMObservationStatus
		want []v1alpha1.IncidentCause
	}{
		{"heartbeat stale", onNode("node-a", v1alpha1.VerdictUnknown, v1alpha1.ReasonNodeAgentStale, now), []v1alpha1.IncidentCause{nodeA}},
		{"node not ready", onNode("node-a", v1alpha1.VerdictDegraded, v1alpha1.ReasonNodeNotReady, now), []v1alpha1.IncidentCause{nodeA}},
		{"node unresponsive", onNode("node-a", v1alpha1.VerdictFailed, v1alpha1.ReasonNodeUnresponsive, now), []v1alpha1.IncidentCause{nodeA}},
		// The VM's own launcher: its matter, not the node's.
		{"launcher pod failed", onNode("node-a", v1alpha1.VerdictFailed, v1alpha1.ReasonLauncherPodFailed, now), nil},
		// A deleted Node has no NodeObservation to point at.
		{"node missing", onNode("node-a", v1alpha1.VerdictUnknown, v1alpha1.ReasonNodeMissing, now), nil},
		{"no node", status(v1alpha1.LayerNode, v1alpha1.VerdictUnknown, v1alpha1.ReasonNodeAgentStale, now), nil},
		{"guest probe", onNode("node-a", v1alpha1.VerdictUnknown, v1alpha1.ReasonGuestInfoUnreachable, now),
			[]v1alpha1.IncidentCause{{Kind: v1alpha1.CauseVirtAPI}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []v1alpha1.IncidentCause
			for _, c := range ClaimsOf(tc.st, nil, nil) {
				got = append(got, c.Cause)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("claims %v, want %v", got, tc.want)
			}
		})
	}
	// The node comes first, before the storage claims of the same VM.
	st := onNode("node-a", v1alpha1.VerdictUnknown, v1alpha1.ReasonNodeNotReady, now)
	st.Layers.Storage = v1alpha1.LayerStatus{Verdict: v1alpha1.VerdictDegraded, Reason: v1alpha1.ReasonVolumeAttachFailed}
	if cs := ClaimsOf(st, volumes("ceph-rbd"), nil); len(cs) != 3 || cs[0].Cause != nodeA || cs[0].Layer != v1alpha1.LayerNode || !cs[0].Since.Equal(now) {
		t.Fatalf("claims %+v", cs)
	}
}

// nodeClaims are the claims of a VM on node-a whose heartbeat went stale
// at since, and whose storage, with failing, failed too.
func nodeClaims(since time.Time, failing bool) []Claim {
	st := onNode("node-a", v1alpha1.VerdictUnknown, v1alpha1.ReasonNodeAgentStale, since)
	if failing {
		st.Layers.Storage = v1alpha1.LayerStatus{Verdict: v1alpha1.VerdictDegraded, Reason: v1alpha1.ReasonVolumeAttachFailed,
			LastTransitionTime: &metav1.Time{Time: since}}
	}
	return ClaimsOf(st, volumes("ceph-rbd"), nil)
}

// TestTrackerNode: a node's VMs learn that they are members of its
// NodeObservation's incident as a VMIncident's do: the first
// threshold-1 are woken when it opens, the rest learn it in their own
// evaluation. It is no VMIncident (no group), its members' Warning Events
// are their own, and it comes before a VMIncident a VM is already in.
func TestTrackerNode(t *testing.T) {
	nodeA := &v1alpha1.IncidentRef{Kind: v1alpha1.IncidentKindNodeObservation, Name: "node-a"}
	tr := NewTracker(Policy{Threshold: 3, Nodes: true, NodeThreshold: 4}, nil)
	// Three VMs of the node already in a StorageClass incident.
	for i := range 3 {
		if a := tr.Observe(key(i), nil, storageClaims(now, "ceph-rbd")); i == 2 && inName(a) != "storageclass-ceph-rbd" {
			t.Fatalf("VM %d: %+v", i, a)
		}
	}
	var woken []types.NamespacedName
	for i := range 10 {
		cur := (*v1alpha1.IncidentRef)(nil)
		if i < 3 {
			cur = vmIncident("storageclass-ceph-rbd")
		}
		a := tr.Observe(key(i), cur, nodeClaims(now.Add(time.Minute), i < 3))
		switch {
		case i < 3 && inName(a) != "storageclass-ceph-rbd":
			t.Fatalf("VM %d left its incident before the node's opened: %+v", i, a)
		case i == 3 && (a.Incident == nil || *a.Incident != *nodeA):
			t.Fatalf("VM %d, the threshold: %+v", i, a)
		case i > 3 && (a.Incident == nil || *a.Incident != *nodeA || len(a.Wake) != 0):
			t.Fatalf("VM %d: %+v", i, a)
		case i > 3 && len(a.Quiet) != 0:
			t.Fatalf("VM %d quiets %v: a NodeObservation posts no Event for it", i, a.Quiet)
		}
		woken = append(woken, a.Wake...)
	}
	if !slices.Equal(woken, []types.NamespacedName{key(0), key(1), key(2)}) {
		t.Fatalf("woken %v, want the first three, in the StorageClass incident", woken)
	}
	// The woken ones move to the node's: it explains their storage too.
	for i := range 3 {
		a := tr.Observe(key(i), vmIncident("storageclass-ceph-rbd"), nodeClaims(now.Add(time.Minute), true))
		if a.Incident == nil || *a.Incident != *nodeA || !slices.Equal(a.Quiet, []string{v1alpha1.LayerStorage}) {
			t.Fatalf("woken VM %d: %+v", i, a)
		}
	}
	if gs := tr.Groups(); len(gs) != 0 {
		t.Fatalf("groups %+v: a node's incident is no VMIncident", gs)
	}
	// The node recovers; the storage of the first three still fails:
	// back to their StorageClass's incident, in the same write.
	for i := range 10 {
		var claims []Claim
		if i < 3 {
			claims = storageClaims(now, "ceph-rbd")
		}
		a := tr.Observe(key(i), nodeA, claims)
		if want := i < 3; (inName(a) == "storageclass-ceph-rbd") != want || (!want && a.Incident != nil) {
			t.Fatalf("VM %d after the node recovered: %+v", i, a)
		}
	}

	// Without NodeObservations there is nothing to point at.
	tr = NewTracker(Policy{Threshold: 3}, nil)
	for i := range 5 {
		if a := tr.Observe(key(i), nil, nodeClaims(now, false)); a.Incident != nil || len(a.Wake) != 0 {
			t.Fatalf("VM %d without NodeObservations: %+v", i, a)
		}
	}
	// A node incident its NodeObservation holds open takes its VMs
	// however long ago they turned (a restart).
	tr = NewTracker(Policy{Nodes: true}, func(r v1alpha1.IncidentRef) bool { return r == *nodeA })
	if a := tr.Observe(key(0), nil, nodeClaims(now.Add(-3*time.Hour), false)); a.Incident == nil || *a.Incident != *nodeA {
		t.Fatalf("after a restart: %+v", a)
	}
}

// rolloutOf is a Rollout over the revisions by node.
func rolloutOf(revs map[string]string) Rollout {
	return func(node string) (string, bool) {
		rev := revs[node]
		for _, r := range revs {
			if r != rev {
				return rev, rev != ""
			}
		}
		return rev, false
	}
}

func TestClaimsOfRollout(t *testing.T) {
	rollout := rolloutOf(map[string]string{"node-a": "7b9c", "node-b": "7b9c", "node-c": "5d4f"})
	r7b := v1alpha1.IncidentCause{Kind: v1alpha1.CauseVirtHandlerRollout, Name: "7b9c"}
	nodeA := v1alpha1.IncidentCause{Kind: CauseNode, Name: "node-a"}
	for _, tc := range []struct {
		name    string
		st      *v1alpha1.VMObservationStatus
		rollout Rollout
		want    []v1alpha1.IncidentCause
	}{
		{"heartbeat stale during a rollout", onNode("node-a", v1alpha1.VerdictUnknown, v1alpha1.ReasonNodeAgentStale, now), rollout, []v1alpha1.IncidentCause{r7b, nodeA}},
		{"virt-controller's word on it", onNode("node-a", v1alpha1.VerdictFailed, v1alpha1.ReasonNodeUnresponsive, now), rollout, []v1alpha1.IncidentCause{r7b, nodeA}},
		// The kubelet's Ready is the node's, not virt-handler's.
		{"node not ready", onNode("node-a", v1alpha1.VerdictUnknown, v1alpha1.ReasonNodeNotReady, now), rollout, []v1alpha1.IncidentCause{nodeA}},
		{"no rollout: one revision", onNode("node-a", v1alpha1.VerdictUnknown, v1alpha1.ReasonNodeAgentStale, now),
			rolloutOf(map[string]string{"node-a": "7b9c", "node-b": "7b9c"}), []v1alpha1.IncidentCause{nodeA}},
		{"no virt-handler pod seen", onNode("node-x", v1alpha1.VerdictUnknown, v1alpha1.ReasonNodeAgentStale, now), rollout, []v1alpha1.IncidentCause{{Kind: CauseNode, Name: "node-x"}}},
		{"no rollout source", onNode("node-a", v1alpha1.VerdictUnknown, v1alpha1.ReasonNodeAgentStale, now), nil, []v1alpha1.IncidentCause{nodeA}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := ClaimsOf(tc.st, nil, tc.rollout)
			var got []v1alpha1.IncidentCause
			for _, c := range cs {
				got = append(got, c.Cause)
				if c.Node != "node-a" && c.Node != "node-x" {
					t.Errorf("claim %v has node %q", c.Cause, c.Node)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("claims %v, want %v", got, tc.want)
			}
		})
	}
	if n := Name(r7b); n != "virthandlerrollout-7b9c" {
		t.Errorf("Name(%v) = %q", r7b, n)
	}
}

// TestTrackerRollout: virt-handler's new revision stops beating on two
// nodes, three VMs on each. The rollout is one incident over both nodes,
// and comes before each node's own: the VMs that joined their node's
// before it opened are woken to move. Over one node it is that node's.
func TestTrackerRollout(t *testing.T) {
	rollout := rolloutOf(map[string]string{"node-a": "7b9c", "node-b": "7b9c", "node-c": "5d4f"})
	claims := func(node string) []Claim {
		return ClaimsOf(onNode(node, v1alpha1.VerdictUnknown, v1alpha1.ReasonNodeAgentStale, now), nil, rollout)
	}
	want := v1alpha1.IncidentRef{Kind: v1alpha1.IncidentKindVMIncident, Name: "virthandlerrollout-7b9c"}
	tr := NewTracker(Policy{Threshold: 3, Nodes: true}, nil)
	// node-a's three: over one node, the node's incident.
	for i := range 3 {
		a := tr.Observe(key(i), nil, claims("node-a"))
		if i == 2 && (a.Incident == nil || a.Incident.Kind != v1alpha1.IncidentKindNodeObservation) {
			t.Fatalf("VM %d on node-a: %+v", i, a)
		}
	}
	// node-b's first: the rollout spans two nodes now.
	a := tr.Observe(key(3), nil, claims("node-b"))
	if a.Incident == nil || *a.Incident != want || !slices.Equal(a.Wake, []types.NamespacedName{key(0), key(1), key(2)}) {
		t.Fatalf("VM 3 on node-b: %+v", a)
	}
	for i := range 3 {
		if a := tr.Observe(key(i), &v1alpha1.IncidentRef{Kind: v1alpha1.IncidentKindNodeObservation, Name: "node-a"}, claims("node-a")); a.Incident == nil || *a.Incident != want {
			t.Fatalf("woken VM %d: %+v", i, a)
		}
	}
	for i := 4; i < 6; i++ {
		if a := tr.Observe(key(i), nil, claims("node-b")); a.Incident == nil || *a.Incident != want || len(a.Wake) != 0 {
			t.Fatalf("VM %d on node-b: %+v", i, a)
		}
	}
	gs := tr.Groups()
	if len(gs) != 1 || gs[0].Name != want.Name || len(gs[0].Members) != 6 || gs[0].Cause.Kind != v1alpha1.CauseVirtHandlerRollout {
		t.Fatalf("groups %+v", gs)
	}
}
