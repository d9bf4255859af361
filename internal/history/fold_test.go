package history

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/verdict"
)

// transitionsOf outlines the history's transitions of one layer, newest
// first, as from>to.
func transitionsOf(h *v1alpha1.History, layer string) string {
	var out []string
	if h != nil {
		for _, e := range h.Entries {
			if e.Event == v1alpha1.EventVerdictChanged && e.Layer == layer {
				out = append(out, string(e.From)+">"+string(e.To))
			}
		}
	}
	return strings.Join(out, " ")
}

// A verdict that changes several times within one second keeps one entry
// per layer for that second, from where it was to where it ended; the log
// says every transition as it happened.
func TestFoldWithinASecond(t *testing.T) {
	running := status("a", v1alpha1.VerdictHealthy, "Running", at(10*time.Second))
	unknown := status("a", v1alpha1.VerdictUnknown, "NodeNotReady", at(10*time.Second))
	progressing := status("a", v1alpha1.VerdictProgressing, "Migrating", at(10*time.Second))
	failed := status("a", v1alpha1.VerdictFailed, "LauncherOOMKilled", at(10*time.Second))
	in := verdict.Input{VMI: vmi("a")}
	second := t0.Add(2 * time.Minute)

	for _, c := range []struct {
		name  string
		steps []*v1alpha1.VMObservationStatus
		want  string // overall, newest first
		logs  string // the overall transitions logged, oldest first
	}{
		{"a flap back leaves nothing of its second", []*v1alpha1.VMObservationStatus{unknown, running},
			"Unknown>Healthy", "Healthy>Unknown Unknown>Healthy"},
		// CI's TestHistoryAcrossAManagerRestart: the second
		// Unknown → Progressing of one second was lost, and the chain broke.
		{"a flap and a repeat keep one transition", []*v1alpha1.VMObservationStatus{unknown, progressing, unknown, progressing},
			"Healthy>Progressing Unknown>Healthy", "Healthy>Unknown Unknown>Progressing Progressing>Unknown Unknown>Progressing"},
		{"two steps fold into one with the last reason", []*v1alpha1.VMObservationStatus{progressing, failed},
			"Healthy>Failed Unknown>Healthy", "Healthy>Progressing Progressing>Failed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, _ := step(nil, running, in, t0.Add(time.Minute))
			var logs []string
			for _, next := range c.steps {
				var rec Record
				st, rec = step(st, next, in, second.Add(300*time.Millisecond))
				for i := len(rec.New) - 1; i >= 0; i-- {
					if e := rec.New[i]; e.Event == v1alpha1.EventVerdictChanged && e.Layer == v1alpha1.LayerOverall {
						logs = append(logs, string(e.From)+">"+string(e.To))
					}
				}
			}
			if got := transitionsOf(st.History, v1alpha1.LayerOverall); got != c.want {
				t.Errorf("overall transitions, newest first: %s\nwant %s", got, c.want)
			}
			if got := strings.Join(logs, " "); got != c.logs {
				t.Errorf("logged: %s\nwant %s", got, c.logs)
			}
			if e := st.History.Entries[0]; e.Event == v1alpha1.EventVerdictChanged && e.Reason != st.Reason {
				t.Errorf("the folded entry's reason %s, want the last one's %s", e.Reason, st.Reason)
			}
		})
	}
}

// TestRingTurnover plays random lives (verdicts that flap several times a
// second, per layer, and restarts) through a ring of the default limit, and
// checks after every write what a reader relies on: each layer's
// transitions chain (each from the previous to) and end at its verdict, a
// layer has at most one transition a second, no entry twice, the bounds
// hold, a restart's VMIReplaced is in the history written with it, and the
// log holds every transition in order.
func TestRingTurnover(t *testing.T) {
	verdicts := []v1alpha1.Verdict{v1alpha1.VerdictHealthy, v1alpha1.VerdictProgressing, v1alpha1.VerdictUnknown, v1alpha1.VerdictDegraded}
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 7))
		var st *v1alpha1.VMObservationStatus
		now := t0
		uid, created := "vmi-0", t0
		logged := map[string]v1alpha1.Verdict{}
		for i := range 60 {
			// Writes come 0 to 1.5 s apart: several share a second.
			now = now.Add(time.Duration(r.IntN(1500)) * time.Millisecond)
			restart := i > 0 && r.IntN(15) == 0
			if restart {
				created = now.Truncate(time.Second)
				uid = fmt.Sprintf("vmi-%d", i+1)
			}
			next := &v1alpha1.VMObservationStatus{Layers: &v1alpha1.Layers{}, VMI: &v1alpha1.VMISummary{Name: "vm1", UID: types.UID(uid), Phase: "Running"}}
			worst := v1alpha1.VerdictHealthy
			for _, name := range v1alpha1.LayerNames {
				v := verdicts[r.IntN(len(verdicts))]
				if r.IntN(3) > 0 && st != nil { // most layers keep their verdict
					v = st.Layers.Get(name).Verdict
				}
				*next.Layers.Get(name) = v1alpha1.LayerStatus{Verdict: v, Reason: "R" + string(v)}
				if v != v1alpha1.VerdictHealthy {
					worst = v
				}
			}
			next.Verdict, next.Reason = worst, "R"+string(worst)
			vmiObj := vmi(uid, func(v *kubevirtv1.VirtualMachineInstance) {
				v.CreationTimestamp = metav1.NewTime(created)
				v.Status.PhaseTransitionTimestamps = nil
			})
			var rec Record
			st, rec = step(st, next, verdict.Input{VMI: vmiObj}, now)
			for j := len(rec.New) - 1; j >= 0; j-- {
				e := rec.New[j]
				if e.Event != v1alpha1.EventVerdictChanged {
					continue
				}
				if from, ok := logged[e.Layer]; ok && from != e.From || !ok && e.From != v1alpha1.VerdictUnknown {
					t.Fatalf("seed %d write %d: logged %s %s>%s after %s", seed, i, e.Layer, e.From, e.To, from)
				}
				logged[e.Layer] = e.To
			}
			checkRing(t, fmt.Sprintf("seed %d write %d", seed, i), st, restart)
		}
	}
}

func checkRing(t *testing.T, where string, st *v1alpha1.VMObservationStatus, restart bool) {
	t.Helper()
	h := st.History
	if h == nil {
		// Every transition so far folded away (the layers came back to
		// Unknown within the first second).
		h = &v1alpha1.History{}
	}
	raw, _ := json.Marshal(h)
	if len(raw) > MaxBytes || int32(len(h.Entries)) > verdict.DefaultPolicy().HistoryLimit {
		t.Fatalf("%s: %d entries in %d bytes", where, len(h.Entries), len(raw))
	}
	chain := map[string]v1alpha1.Verdict{}
	perSecond := map[string]bool{}
	seen := map[key]bool{}
	for i := len(h.Entries) - 1; i >= 0; i-- {
		e := h.Entries[i]
		if k := keyOf(&e); seen[k] {
			t.Fatalf("%s: entry twice: %+v", where, e)
		} else {
			seen[k] = true
		}
		if e.Event != v1alpha1.EventVerdictChanged {
			continue
		}
		if prev, ok := chain[e.Layer]; ok && prev != e.From {
			t.Fatalf("%s: %s went %s>%s after being %s\n%s", where, e.Layer, e.From, e.To, prev, strings.Join(Outline(h), "\n"))
		}
		chain[e.Layer] = e.To
		s := fmt.Sprint(e.Layer, e.Time.Unix())
		if perSecond[s] {
			t.Fatalf("%s: two transitions of %s in one second", where, e.Layer)
		}
		perSecond[s] = true
	}
	for name, l := range st.Layers.All() {
		if v, ok := chain[name]; ok && v != l.Verdict {
			t.Fatalf("%s: %s's last transition is to %s, its verdict %s", where, name, v, l.Verdict)
		}
	}
	if v, ok := chain[v1alpha1.LayerOverall]; ok && v != st.Verdict {
		t.Fatalf("%s: the last overall transition is to %s, the verdict %s", where, v, st.Verdict)
	}
	if restart && !strings.Contains(strings.Join(Outline(h), " "), string(v1alpha1.EventVMIReplaced)) {
		t.Fatalf("%s: a restart without its VMIReplaced:\n%s", where, strings.Join(Outline(h), "\n"))
	}
}
