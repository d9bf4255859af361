package controllers

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/projection"
	"github.com/vmobs/vmobs/internal/scheme"
	"github.com/vmobs/vmobs/internal/verdict"
)

// withHistory is s with a history of the given events, one a minute from t0.
func withHistory(s *v1alpha1.VMObservationStatus, events ...v1alpha1.HistoryEvent) *v1alpha1.VMObservationStatus {
	s = s.DeepCopy()
	s.History = &v1alpha1.History{}
	for i, e := range events {
		s.History.Entries = append(s.History.Entries, v1alpha1.HistoryEntry{Time: metav1.NewTime(t0.Add(time.Duration(i) * time.Minute)), Event: e, Layer: "node"})
	}
	return s
}

// TestHistoryDecidesNoWrite: a status that differs from the stored one
// only by its history is not written; one that differs otherwise is.
func TestHistoryDecidesNoWrite(t *testing.T) {
	key := types.NamespacedName{Namespace: "prod", Name: "vm1"}
	stored := withHistory(status("Healthy", t0), v1alpha1.EventVMIStarted)
	p := newWritePolicy(0, time.Second, 0)
	more := withHistory(status("Healthy", t0), v1alpha1.EventVMIStarted, v1alpha1.EventLauncherOOMKilled)
	if d := p.decide(writeRequest{key: key, uid: "u", stored: sumsOf(stored), next: more, now: t0.Add(time.Hour)}); d.write {
		t.Errorf("a history entry alone was written: %+v", d)
	}
	if d := p.decide(writeRequest{key: key, uid: "u", stored: sumsOf(stored), next: status("Healthy", t0), now: t0.Add(time.Hour)}); d.write {
		t.Errorf("a status without its history was written: %+v", d)
	}
	if d := p.decide(writeRequest{key: key, uid: "u", stored: sumsOf(stored), next: withHistory(status("Degraded", t0)), now: t0.Add(time.Hour)}); !d.write {
		t.Errorf("a verdict change was not written: %+v", d)
	}
}

// TestAddHistory: a decided write carries the stored history, read from
// the API server, with the entries since, each once; a stored object of
// another UID (deleted and recreated) lends no history.
func TestAddHistory(t *testing.T) {
	stored := &v1alpha1.VMObservation{
		ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: "vm1", UID: "obs-uid"},
		Status:     *withHistory(status("Healthy", t0), v1alpha1.EventVMIStarted, v1alpha1.EventAgentConnected),
	}
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(stored).Build()
	r := &Reconciler{Client: c}
	obs := projection.FromObservation(stored)
	prev := obs.Previous()
	if prev.History != nil {
		t.Fatal("the projection keeps the history")
	}
	next := status("Degraded", t0.Add(time.Hour))
	added := addHistory(mustStored(t, r, obs), prev, next, verdict.Input{Now: t0.Add(2 * time.Hour)})
	if len(added) == 0 || next.History == nil || len(next.History.Entries) != len(stored.Status.History.Entries)+len(added) {
		t.Fatalf("added %v; history %+v: want the stored entries and the new ones", added, next.History)
	}
	// The write made; the cache still holds the status before it: the
	// stored one counts, and the same world adds nothing.
	again := status("Degraded", t0.Add(time.Hour))
	stored.Status = *next
	if err := c.Update(context.Background(), stored); err != nil {
		t.Fatal(err)
	}
	if added = addHistory(mustStored(t, r, obs), prev, again, verdict.Input{Now: t0.Add(3 * time.Hour)}); len(added) != 0 {
		t.Errorf("the same world again added %v", added)
	}

	other := projection.FromObservation(&v1alpha1.VMObservation{ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: "vm1", UID: "new-uid"}})
	fresh := status("Healthy", t0)
	if whole := mustStored(t, r, other); whole != nil {
		t.Fatalf("the stored object of another UID was read as this one's: %v", whole.UID)
	}
	addHistory(nil, other.Previous(), fresh, verdict.Input{Now: t0})
	for _, e := range fresh.History.Entries {
		if e.Event == v1alpha1.EventVMIStarted {
			t.Errorf("the history of a deleted VMObservation was carried into its successor")
		}
	}
}

func mustStored(t *testing.T, r *Reconciler, obs *projection.Observation) *v1alpha1.VMObservation {
	t.Helper()
	whole, err := r.stored(context.Background(), obs)
	if err != nil {
		t.Fatal(err)
	}
	return whole
}
