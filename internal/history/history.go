// Package history keeps a VM's flight recorder: status.history, a bounded
// ring of verdict transitions and of the life events that explain them, and
// status.vm, the VM's uptime and restarts. It is pure: Observe reads the life
// events off the objects' own timestamps, Next folds them and the engine's
// new verdicts into the stored history, with now passed in. Nothing is kept
// between reconciles: an event the objects still show at the next write is
// recorded then, and an entry already stored is recognised by its key
// (time, event, layer, object), so a restarted controller adds no
// duplicate (docs/history.md).
package history

import (
	"cmp"
	"encoding/json"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/verdict"
)

// MaxBytes bounds the serialized history: entries are dropped, oldest
// first, until status.history's JSON fits.
const MaxBytes = 4096

// maxText bounds an entry's reason and message (the CRD's MaxLength).
const maxText = 128

// messageCut is the length a verdict's message is cut to in an entry: the
// full message is in the layer; the entry only recalls it.
const messageCut = 48

// maxObject bounds an entry's Kind/name (the CRD's MaxLength).
const maxObject = 320

// Input is what Next folds.
type Input struct {
	// Previous is the stored status (nil for a new VMObservation): its
	// verdicts, VMI, status.vm and history.
	Previous *v1alpha1.VMObservationStatus
	// Next is the engine's new status.
	Next *v1alpha1.VMObservationStatus
	// Seen is what Observe read off the objects.
	Seen Seen
	// Now is the evaluation time.
	Now time.Time
	// Limit is the number of entries kept; 0 or less is the default policy's.
	Limit int32
	// Stopped says the VM is stopped on purpose (its run strategy): a
	// VMI that ends then is not replaced, and the next one is a start, not
	// a restart.
	Stopped bool
}

// Record is the new history and status.vm.
type Record struct {
	VM      *v1alpha1.VMLife
	History *v1alpha1.History
	// New are the entries added, newest first: the controller logs each
	// once it has written them.
	New []v1alpha1.HistoryEntry
}

// Next folds the engine's new verdicts and the life events seen into the
// stored history. Given the same stored history and the same objects it
// returns the same record, so that recomputing it (another reconcile, a
// restarted controller) adds nothing twice.
func Next(in Input) Record {
	prev := in.Previous
	if prev == nil {
		prev = &v1alpha1.VMObservationStatus{}
	}
	limit := int(in.Limit)
	if limit <= 0 {
		limit = int(verdict.DefaultPolicy().HistoryLimit)
	}
	now := metav1.NewTime(in.Now.Truncate(time.Second))

	vm, restart := life(prev, in.Next, in.Seen, in.Stopped, now)
	candidates := slices.Clone(in.Seen.Events)
	if restart != nil {
		candidates = append(candidates, *restart)
	}
	candidates = append(candidates, transitions(prev, in.Next, now)...)

	var stored []v1alpha1.HistoryEntry
	var dropped int64
	if prev.History != nil {
		stored, dropped = slices.Clone(prev.History.Entries), prev.History.Dropped
	}
	have := make(map[key]bool, len(stored))
	for i := range stored {
		have[keyOf(&stored[i])] = true
	}
	// An event not newer than the oldest stored entry of a ring that has
	// dropped entries may be one that was dropped: it is not added again.
	// Times are whole seconds, so an event of the oldest entry's second may
	// have been dropped with its neighbours of that second.
	var floor time.Time
	if dropped > 0 && len(stored) > 0 {
		floor = stored[len(stored)-1].Time.Time
	}
	// added are the entries that go into the ring; logged[i] is what the
	// log says of added[i]: the transition as it happened, where the ring
	// keeps it folded into the one of its second (fold).
	var added, logged []v1alpha1.HistoryEntry
	var folded []v1alpha1.HistoryEntry // transitions folded away: logged only
	for _, e := range candidates {
		e = cut(e)
		raw := e
		if e.Event == v1alpha1.EventVerdictChanged {
			var gone *v1alpha1.HistoryEntry
			var keep bool
			stored, gone, keep = fold(stored, &e)
			if gone != nil {
				delete(have, keyOf(gone))
			}
			if !keep {
				folded = append(folded, raw)
				continue
			}
		}
		k := keyOf(&e)
		if have[k] {
			continue
		}
		switch {
		case e.Event == v1alpha1.EventVerdictChanged && e.Time.Time.Before(floor):
			// A transition is new whatever its time: it goes
			// straight to the dropped count.
			dropped++
			continue
		case e.Event != v1alpha1.EventVerdictChanged && !floor.IsZero() && !e.Time.Time.After(floor):
			continue
		}
		have[k] = true
		added = append(added, e)
		logged = append(logged, raw)
	}
	if len(added) == 0 && len(folded) == 0 && prev.History == nil {
		return Record{VM: vm}
	}
	// The entries added go first: at the same second they are newer than
	// the stored ones, and the sort is stable.
	entries := append(slices.Clone(added), stored...)
	sortNewestFirst(entries)
	h := &v1alpha1.History{Entries: entries, Dropped: dropped}
	bound(h, limit)
	// What the log says: every transition as it happened (those folded
	// away too) and every entry added that the bounds kept, newest first.
	fresh := slices.Clone(folded)
	for _, e := range h.Entries {
		for i := range added {
			if keyOf(&e) == keyOf(&added[i]) {
				fresh = append(fresh, logged[i])
				break
			}
		}
	}
	sortNewestFirst(fresh)
	if len(h.Entries) == 0 && h.Dropped == 0 {
		h = nil
	}
	return Record{VM: vm, History: h, New: fresh}
}

// fold folds transition c into the transition of its layer the ring
// already holds for the same second, if that one ends where c starts: the
// history's resolution is a second, and a verdict that flaps within one
// (Unknown → Progressing → Unknown → Progressing while a restarted
// controller's sources warm up) keeps one entry per layer and second, so
// that a flap neither fills the ring nor breaks the chain of from and to.
// W → X then X → Y becomes W → Y with c's reason and evidence; W → X then
// X → W leaves nothing of that second. It returns the entries, the entry
// removed (nil for none) and whether c is still to be added.
func fold(stored []v1alpha1.HistoryEntry, c *v1alpha1.HistoryEntry) ([]v1alpha1.HistoryEntry, *v1alpha1.HistoryEntry, bool) {
	i := slices.IndexFunc(stored, func(e v1alpha1.HistoryEntry) bool {
		return e.Event == v1alpha1.EventVerdictChanged && e.Layer == c.Layer && e.Time.Unix() == c.Time.Unix()
	})
	if i < 0 || stored[i].To != c.From {
		return stored, nil, true
	}
	gone := stored[i]
	stored = slices.Delete(stored, i, i+1)
	if gone.From == c.To {
		return stored, &gone, false
	}
	c.From = gone.From
	return stored, &gone, true
}

// key identifies an entry: an event of one object at one second is
// recorded once.
type key struct {
	at       int64
	event    v1alpha1.HistoryEvent
	layer    string
	object   string
	from, to v1alpha1.Verdict
}

func keyOf(e *v1alpha1.HistoryEntry) key {
	return key{at: e.Time.Unix(), event: e.Event, layer: e.Layer, object: e.Object, from: e.From, to: e.To}
}

// sortNewestFirst orders entries newest first. The objects' times have
// a second's resolution and one cause often has several effects within
// it (a launcher killed, the VMI failed, a new VMI started), so at the
// same second the order is causal: the later in causalOrder first, the
// transitions they cause above them all; then by layer and event, so that
// the order is the same on every evaluation.
func sortNewestFirst(entries []v1alpha1.HistoryEntry) {
	slices.SortStableFunc(entries, func(a, b v1alpha1.HistoryEntry) int {
		if c := b.Time.Compare(a.Time.Time); c != 0 {
			return c
		}
		if c := cmp.Compare(eventRank(b.Event), eventRank(a.Event)); c != 0 {
			return c
		}
		if c := cmp.Compare(layerRank(a.Layer), layerRank(b.Layer)); c != 0 {
			return c
		}
		return cmp.Compare(a.Object, b.Object)
	})
}

// causalOrder lists the events in the order one causes the next within a
// second, oldest first; a verdict transition follows them all.
var causalOrder = []v1alpha1.HistoryEvent{
	v1alpha1.EventNodeNotReady, v1alpha1.EventLauncherEvicted, v1alpha1.EventLauncherOOMKilled, v1alpha1.EventAgentDisconnected,
	v1alpha1.EventVMIFinished, v1alpha1.EventVMIReplaced, v1alpha1.EventVMIStarted, v1alpha1.EventAgentConnected,
	v1alpha1.EventMigrationStarted, v1alpha1.EventMigrationSucceeded, v1alpha1.EventMigrationFailed, v1alpha1.EventMigrationAborted,
	v1alpha1.EventNodeReady, v1alpha1.EventVerdictChanged,
}

func eventRank(e v1alpha1.HistoryEvent) int { return slices.Index(causalOrder, e) }

// layerRank orders the overall verdict first, then the layers in their
// fixed order.
func layerRank(layer string) int {
	if layer == v1alpha1.LayerOverall {
		return -1
	}
	return slices.Index(v1alpha1.LayerNames[:], layer)
}

// bound keeps the newest limit entries and at most MaxBytes of JSON,
// counting what it drops.
func bound(h *v1alpha1.History, limit int) {
	if n := len(h.Entries); n > limit {
		h.Dropped += int64(n - limit)
		h.Entries = h.Entries[:limit]
	}
	for len(h.Entries) > 0 {
		raw, err := json.Marshal(h)
		if err == nil && len(raw) <= MaxBytes {
			return
		}
		h.Entries = h.Entries[:len(h.Entries)-1]
		h.Dropped++
	}
}

// cut shortens an entry's texts to their bounds.
func cut(e v1alpha1.HistoryEntry) v1alpha1.HistoryEntry {
	e.Reason = verdict.Bound(e.Reason, maxText)
	e.Message = verdict.Bound(e.Message, messageCut)
	e.Object = verdict.Bound(e.Object, maxObject)
	e.Field = verdict.Bound(e.Field, maxText)
	return e
}

// transitions are the verdict changes from the stored status to the new
// one: one entry per layer whose verdict changed, and one for the overall
// verdict. A status with no stored verdict yet (a new VMObservation)
// records where each layer starts from Unknown.
func transitions(prev, next *v1alpha1.VMObservationStatus, now metav1.Time) []v1alpha1.HistoryEntry {
	if next == nil || next.Layers == nil {
		return nil
	}
	var out []v1alpha1.HistoryEntry
	for name, l := range next.Layers.All() {
		if l.Verdict == "" {
			// A status without this layer (one written before the
			// storage layer existed) says nothing of it.
			continue
		}
		from := v1alpha1.VerdictUnknown
		if p := prev.Layers.Get(name); p != nil && p.Verdict != "" {
			from = p.Verdict
		}
		if from == l.Verdict {
			continue
		}
		// When vmobs wrote the transition: the layer's lastTransitionTime
		// is its evidence's time, which may be older than life events
		// recorded since, and would put the transitions out of order.
		e := v1alpha1.HistoryEntry{Time: now, Event: v1alpha1.EventVerdictChanged, Layer: name, From: from, To: l.Verdict,
			Reason: l.Reason, Message: l.Message}
		if ev := deciding(l); ev != nil {
			e.Object, e.Field = ev.Kind+"/"+ev.Name, ev.Field
		}
		out = append(out, e)
	}
	from := prev.Verdict
	if from == "" {
		from = v1alpha1.VerdictUnknown
	}
	if next.Verdict != "" && from != next.Verdict {
		// The message is the worst layer's, which has its own entry.
		out = append(out, v1alpha1.HistoryEntry{Time: now, Event: v1alpha1.EventVerdictChanged, Layer: v1alpha1.LayerOverall,
			From: from, To: next.Verdict, Reason: next.Reason})
	}
	return out
}

// life computes status.vm, and the VMIReplaced entry when a new VMI
// replaced the one the stored status named, or the one that ended before
// it (status.vm.endedVMI).
func life(prev, next *v1alpha1.VMObservationStatus, seen Seen, stopped bool, now metav1.Time) (*v1alpha1.VMLife, *v1alpha1.HistoryEntry) {
	vm := &v1alpha1.VMLife{}
	var last *v1alpha1.EndedVMI
	if prev.VM != nil {
		vm.Restarts, vm.LastRestart, last = prev.VM.Restarts, prev.VM.LastRestart.DeepCopy(), prev.VM.EndedVMI
	}
	if prev.VMI != nil && prev.VMI.UID != "" {
		last = &v1alpha1.EndedVMI{UID: prev.VMI.UID, Phase: prev.VMI.Phase, Reason: verdict.Bound(prev.VMI.Reason, maxText)}
	}
	if seen.Started != nil {
		vm.Started = seen.Started.DeepCopy()
	}
	hasVMI := next != nil && next.VMI != nil && next.VMI.UID != ""
	if !hasVMI && !stopped && last != nil {
		vm.EndedVMI = last.DeepCopy()
	}
	var entry *v1alpha1.HistoryEntry
	if !stopped && last != nil && hasVMI && last.UID != next.VMI.UID {
		prev := &v1alpha1.VMObservationStatus{VMI: &v1alpha1.VMISummary{UID: last.UID, Phase: last.Phase, Reason: last.Reason}}
		at := now
		if !seen.VMICreated.IsZero() && !seen.VMICreated.After(now.Time) {
			at = seen.VMICreated
		}
		layer := RestartLayer(prev.VMI.Phase, prev.VMI.Reason)
		vm.Restarts++
		vm.LastRestart = &v1alpha1.Restart{Time: at, OldUID: prev.VMI.UID, Phase: prev.VMI.Phase,
			Reason: verdict.Bound(prev.VMI.Reason, maxText), Layer: layer}
		msg := "old VMI " + string(prev.VMI.UID)
		if prev.VMI.Phase != "" {
			msg += " " + prev.VMI.Phase
		}
		entry = &v1alpha1.HistoryEntry{Time: at, Event: v1alpha1.EventVMIReplaced, Layer: layer,
			Reason: prev.VMI.Reason, Message: msg, Object: kindVMI + "/" + next.VMI.Name, Field: "metadata.uid"}
	}
	if *vm == (v1alpha1.VMLife{}) {
		return nil, entry
	}
	return vm, entry
}

// RestartLayer is the layer that ended a VMI, from its last phase and
// reason: a VMI that Succeeded was shut down from inside the guest; one
// that Failed lost its launcher or its node; one replaced while it ran was
// stopped or restarted through KubeVirt's API.
func RestartLayer(phase, reason string) string {
	switch {
	case phase == "Succeeded":
		return v1alpha1.LayerGuest
	case phase == "Failed", reason == "NodeUnresponsive":
		return v1alpha1.LayerNode
	}
	return v1alpha1.LayerControlPlane
}

// Life is status.vm alone, as Apply sets it, without reading the life
// events or bounding a history: what the write decision needs on every
// reconcile.
func Life(prev, next *v1alpha1.VMObservationStatus, in verdict.Input) *v1alpha1.VMLife {
	if prev == nil {
		prev = &v1alpha1.VMObservationStatus{}
	}
	var s Seen
	if vmi := in.VMI; vmi != nil {
		s.VMICreated = sec(vmi.CreationTimestamp)
		s.Started = started(vmi)
	}
	vm, _ := life(prev, next, s, stoppedOnPurpose(in), metav1.NewTime(in.Now.Truncate(time.Second)))
	return vm
}

// Apply folds the life events of the engine's input and its new status
// next into the stored status prev's history, and sets next's status.vm
// and status.history: the one call the controller and vmobs analyze make.
// prev may be nil.
func Apply(prev, next *v1alpha1.VMObservationStatus, in verdict.Input) Record {
	rec := Next(Input{Previous: prev, Next: next, Seen: Observe(in, next), Now: in.Now, Limit: in.Policy.HistoryLimit, Stopped: stoppedOnPurpose(in)})
	next.VM, next.History = rec.VM, rec.History
	return rec
}

// deciding is the evidence the layer's verdict rests on: the one whose time
// is the layer's evidence time, else the first.
func deciding(l *v1alpha1.LayerStatus) *v1alpha1.Evidence {
	if len(l.Evidence) == 0 {
		return nil
	}
	ev := l.Evidence[0]
	if l.EvidenceTime != nil {
		for _, c := range l.Evidence {
			if c.Time != nil && c.Time.Equal(l.EvidenceTime) {
				ev = c
				break
			}
		}
	}
	return &ev
}

// stoppedOnPurpose says the VM's run strategy keeps it stopped (Halted, or
// spec.running false): its VMI's end is a stop, its next VMI a start.
func stoppedOnPurpose(in verdict.Input) bool {
	if in.VM == nil {
		return false
	}
	rs, err := in.VM.RunStrategy()
	return err == nil && rs == kubevirtv1.RunStrategyHalted
}

// Outline is h's entries in one short line each, newest first: the event
// and layer, and from>to for a verdict change. Tests compare timelines by
// it and print it when they differ.
func Outline(h *v1alpha1.History) []string {
	if h == nil {
		return nil
	}
	var out []string
	for _, e := range h.Entries {
		s := string(e.Event) + "/" + e.Layer
		if e.Event == v1alpha1.EventVerdictChanged {
			s += ":" + string(e.From) + ">" + string(e.To)
		}
		out = append(out, s)
	}
	return out
}
