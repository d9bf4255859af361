package controllers

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/vmobs/vmobs/api/v1alpha1"
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

// TestHistoryRidesOnWritesThatHappen: a new history entry alone decides
// no write; a write decided for another change carries it, and the
// memory of that write is of the status written.
func TestHistoryRidesOnWritesThatHappen(t *testing.T) {
	key := types.NamespacedName{Namespace: "prod", Name: "vm1"}
	stored := withHistory(status("Healthy", t0), v1alpha1.EventVMIStarted)

	p := newWritePolicy(0, time.Second, 0)
	carried := withHistory(status("Healthy", t0), v1alpha1.EventVMIStarted)
	record := withHistory(status("Healthy", t0), v1alpha1.EventVMIStarted, v1alpha1.EventLauncherOOMKilled)
	if d := p.decide(writeRequest{key: key, uid: "u", stored: sumsOf(stored), next: carried, record: record, now: t0.Add(time.Hour)}); d.write {
		t.Fatalf("a life event alone was written: %+v", d)
	}

	next := withHistory(status("Degraded", t0), v1alpha1.EventVMIStarted)
	record = withHistory(status("Degraded", t0), v1alpha1.EventVMIStarted, v1alpha1.EventLauncherOOMKilled)
	req := writeRequest{key: key, uid: "u", stored: sumsOf(stored), next: next, record: record, now: t0.Add(time.Hour)}
	d := p.decide(req)
	if !d.write || d.written != sumsOf(record).whole || d.sum != sumsOf(next).whole {
		t.Fatalf("decide = %+v: want a write of the record", d)
	}
	p.wrote(key, "u", req.now, d)
	// The cache still holds the old status: no second write.
	req.now = req.now.Add(100 * time.Millisecond)
	if again := p.decide(req); again.write {
		t.Errorf("written again before the cache caught up: %+v", again)
	}
	// The cache's copy of what was decided is not what was written.
	p.caughtUp(key, "u", sumsOf(next).whole)
	if p.recent.size() != 1 {
		t.Errorf("memory dropped on a status that is not the one written")
	}
	p.caughtUp(key, "u", sumsOf(record).whole)
	if p.recent.size() != 0 {
		t.Errorf("memory kept once the cache holds the status written")
	}
}
