package kubectlvmobs

import (
	"fmt"
	"strings"
	"time"

	"github.com/vmobs/vmobs/api/v1alpha1"
)

// RenderHistory renders each VM's flight recorder (status.vm and
// status.history, docs/history.md) as a timeline, newest first: the view
// of `kubectl vmobs history`. Entries before since (when not zero) are
// left out.
func RenderHistory(objs []v1alpha1.VMObservation, opts RenderOptions, since time.Time) string {
	p := painter{color: opts.Color}
	var parts []string
	for i := range objs {
		o := &objs[i]
		name := o.Name
		if opts.AllNamespaces {
			name = o.Namespace + "/" + o.Name
		}
		lines := []string{strings.Join(append([]string{p.paint(cell{text: name, color: sgrBold})}, lifeText(o.Status.VM)...), "  ")}
		timeline := timelineLines(p, o.Status.History, since, !opts.NoHeaders)
		if len(timeline) == 0 {
			timeline = []string{"no history entries" + sinceText(since)}
		}
		parts = append(parts, strings.Join(append(lines, timeline...), "\n")+"\n")
	}
	return strings.Join(parts, "\n")
}

// historyNode is the describe tree's branch of the flight recorder, the
// same timeline as RenderHistory's.
func historyNode(p painter, st *v1alpha1.VMObservationStatus) node {
	n := node{head: strings.Join(append([]string{"history"}, lifeText(st.VM)...), "  ")}
	n.details = timelineLines(p, st.History, time.Time{}, false)
	return n
}

// lifeText says when the VMI started and how often the VM restarted.
func lifeText(vm *v1alpha1.VMLife) []string {
	if vm == nil {
		return []string{"restarts 0"}
	}
	parts := []string{fmt.Sprintf("restarts %d", vm.Restarts)}
	if r := vm.LastRestart; r != nil {
		last := "last " + stamp(r.Time.Time) + " (" + r.Layer
		if r.Phase != "" {
			last += ": " + r.Phase
		}
		if r.Reason != "" {
			last += ", " + r.Reason
		}
		parts = append(parts, last+")")
	}
	if vm.Started != nil {
		parts = append(parts, "started "+stamp(vm.Started.Time))
	}
	return parts
}

// timelineLines are the entries since since as aligned rows (time, layer,
// event, what), with a header when asked and a last line counting the
// entries the ring dropped.
func timelineLines(p painter, h *v1alpha1.History, since time.Time, header bool) []string {
	if h == nil {
		return nil
	}
	var rows [][]cell
	if header {
		rows = append(rows, []cell{plain("TIME"), plain("LAYER"), plain("EVENT"), plain("WHAT")})
	}
	for _, e := range h.Entries {
		if !since.IsZero() && e.Time.Time.Before(since) {
			continue
		}
		rows = append(rows, []cell{plain(stamp(e.Time.Time)), plain(e.Layer), plain(string(e.Event)), entryCell(p, &e)})
	}
	if header && len(rows) == 1 {
		rows = nil
	}
	out := p.table(rows, "  ")
	if h.Dropped > 0 {
		out = append(out, fmt.Sprintf("(%d older entries dropped)", h.Dropped))
	}
	return out
}

// entryCell says what an entry records: a transition's verdicts and
// reason, a life event's reason and detail, and the evidence pointer.
func entryCell(p painter, e *v1alpha1.HistoryEntry) cell {
	var parts []string
	if e.Event == v1alpha1.EventVerdictChanged {
		parts = append(parts, p.paint(p.verdict(e.From))+" → "+p.paint(p.verdict(e.To)))
	}
	what := e.Reason
	if e.Message != "" {
		if what != "" {
			what += ": "
		}
		what += e.Message
	}
	if what != "" {
		parts = append(parts, what)
	}
	if e.Object != "" {
		parts = append(parts, "("+strings.TrimSpace(e.Object+" "+e.Field)+")")
	}
	return plain(strings.Join(parts, "  "))
}

// stamp is a time as the timeline prints it: RFC 3339, UTC.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func sinceText(since time.Time) string {
	if since.IsZero() {
		return ""
	}
	return " since " + stamp(since)
}
