package demo

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/testenv"
)

// liveView redraws the VMObservations in place on a terminal, grouped by
// overall verdict, with the latest changes below.
type liveView struct {
	out   io.Writer
	fd    int
	tr    *tracker
	start time.Time
	head  func(now time.Time, s snapshot) []string
}

func newLiveView(out io.Writer, fd int, tr *tracker, pace Pace, opts Options, hints []hint, start time.Time) *liveView {
	head := func(now time.Time, s snapshot) []string {
		scripted := 0
		for _, v := range s.VMs {
			if v.Scenario != "" {
				scripted++
			}
		}
		lines := []string{
			fmt.Sprintf("vmobs demo · %d VMs (%d scripted) · seed %d · up %s · Ctrl-C to stop", len(s.VMs), scripted, opts.Seed, now.Sub(start).Round(time.Second)),
			"thresholds: " + pace.Thresholds(),
		}
		for _, h := range hints {
			lines = append(lines, h.what+": "+h.cmd)
		}
		return append(lines, scenarioProgress(s.Scenarios, now.Sub(start)))
	}
	return &liveView{out: out, fd: fd, tr: tr, start: start, head: head}
}

// run redraws on every change, and every second for the clock, until ctx
// ends; it leaves the last frame on the screen.
func (v *liveView) run(ctx context.Context) {
	fmt.Fprint(v.out, "\x1b[?25l\x1b[H\x1b[2J") // hide the cursor, clear
	defer fmt.Fprint(v.out, "\x1b[?25h")        // show it again
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var drawn uint64
	var at time.Time
	for {
		now := time.Now()
		if ver := v.tr.currentVersion(); ver != drawn || now.Sub(at) >= time.Second {
			v.draw(now)
			drawn, at = ver, now
		}
		select {
		case <-ctx.Done():
			v.draw(time.Now())
			return
		case <-tick.C:
		}
	}
}

func (v *liveView) draw(now time.Time) {
	w, h := termSize(v.fd)
	s := v.tr.snapshot()
	lines := renderView(v.head(now, s), s, v.start, w, h-1)
	var b strings.Builder
	b.WriteString("\x1b[H")
	for i, l := range lines {
		if i > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString(colorize(truncate(l, w)))
		b.WriteString("\x1b[K")
	}
	b.WriteString("\x1b[J")
	_, _ = io.WriteString(v.out, b.String())
}

// scenarioProgress says how far the scripted scenarios are.
func scenarioProgress(sc []ScenarioResult, elapsed time.Duration) string {
	var seen, waiting, toPlay int
	next := ""
	for _, s := range sc {
		switch {
		case s.Seen:
			seen++
		case s.Played:
			waiting++
		default:
			toPlay++
			if next == "" {
				if in := s.PlayAt - elapsed; in >= time.Second {
					next = fmt.Sprintf(" (next: %s in %s)", s.Name, in.Round(time.Second))
				} else {
					next = fmt.Sprintf(" (next: %s)", s.Name)
				}
			}
		}
	}
	line := fmt.Sprintf("scenarios: %d of %d diagnosed as built", seen, len(sc))
	if waiting > 0 {
		line += fmt.Sprintf(" · %d waiting for their verdict", waiting)
	}
	if toPlay > 0 {
		line += fmt.Sprintf(" · %d still to play%s", toPlay, next)
	}
	return line
}

// group is the VMs of one overall verdict.
type group struct {
	verdict string
	vms     []vmState
}

// groups sorts the VMs into verdict groups, worst first; VMs with no
// status yet come last.
func groups(vms []vmState) []group {
	by := map[string][]vmState{}
	for _, v := range vms {
		k := v.Overall.Verdict
		if !v.HasStatus {
			k = "(no status yet)"
		}
		by[k] = append(by[k], v)
	}
	var out []group
	for _, k := range append(append([]string(nil), verdictOrder...), "(no status yet)") {
		if len(by[k]) > 0 {
			out = append(out, group{k, by[k]})
			delete(by, k)
		}
	}
	var rest []string
	for k := range by {
		rest = append(rest, k)
	}
	sort.Strings(rest)
	for _, k := range rest {
		out = append(out, group{k, by[k]})
	}
	return out
}

// renderView lays out one frame of at most height lines.
func renderView(head []string, s snapshot, start time.Time, width, height int) []string {
	nameW := 12
	for _, v := range s.VMs {
		nameW = max(nameW, len(v.key()))
	}
	nameW = min(nameW, 44)
	const reasonW = 26
	row := func(name, reason, cp, node, guest string) string {
		return fmt.Sprintf("  %-*s  %-*s  %-13s %-12s %-12s", nameW, name, reasonW, reason, cp, node, guest)
	}

	lines := append([]string(nil), head...)
	lines = append(lines, "", strings.TrimRight(row("VM", "REASON", "CONTROL-PLANE", "NODE", "GUEST"), " "))

	// The recent changes get about a quarter of the screen.
	nRecent := min(len(s.Recent), max(3, min(10, (height-len(lines))/4)))
	budget := height - len(lines) - 2 - nRecent
	if len(s.Recent) == 0 {
		budget = height - len(lines)
	}

	// Each group: a header line and one line per VM; Healthy VMs are
	// listed several to a line.
	type block struct {
		header string
		items  []string
		shown  int
	}
	var blocks []*block
	for _, g := range groups(s.VMs) {
		b := &block{header: fmt.Sprintf("%s (%d)", g.verdict, len(g.vms))}
		if g.verdict == string(v1alpha1.VerdictHealthy) || g.verdict == "(no status yet)" {
			line := " "
			for _, v := range g.vms {
				if len(line)+1+len(v.key()) > width-1 && line != " " {
					b.items = append(b.items, line)
					line = " "
				}
				line += " " + v.key()
			}
			b.items = append(b.items, line)
		} else {
			for _, v := range g.vms {
				b.items = append(b.items, row(v.key(), v.Overall.Reason, v.Layers[0].Verdict, v.Layers[1].Verdict, v.Layers[2].Verdict))
			}
		}
		b.shown = len(b.items)
		blocks = append(blocks, b)
	}
	used := func() int {
		n := 0
		for _, b := range blocks {
			n += 1 + b.shown
			if b.shown < len(b.items) {
				n++ // the "… more" line
			}
		}
		return n
	}
	for used() > budget {
		var big *block
		for _, b := range blocks {
			if b.shown > 0 && (big == nil || b.shown > big.shown) {
				big = b
			}
		}
		if big == nil {
			break
		}
		big.shown--
	}
	for _, b := range blocks {
		lines = append(lines, b.header)
		lines = append(lines, b.items[:b.shown]...)
		if b.shown < len(b.items) {
			lines = append(lines, fmt.Sprintf("  … and %d more lines", len(b.items)-b.shown))
		}
	}
	if nRecent > 0 {
		lines = append(lines, "", "Recent changes")
		for _, c := range s.Recent[len(s.Recent)-nRecent:] {
			lines = append(lines, "  "+c.Line(start))
		}
	}
	if len(lines) > height {
		lines = lines[:max(0, height)]
	}
	return lines
}

// truncate cuts s to width runes.
func truncate(s string, width int) string {
	r := []rune(s)
	if width <= 1 || len(r) <= width {
		return s
	}
	return string(r[:width-1]) + "…"
}

var verdictColors = map[string]string{
	string(v1alpha1.VerdictHealthy):     "\x1b[32m",
	string(v1alpha1.VerdictProgressing): "\x1b[36m",
	string(v1alpha1.VerdictSuspended):   "\x1b[34m",
	string(v1alpha1.VerdictUnknown):     "\x1b[35m",
	string(v1alpha1.VerdictDegraded):    "\x1b[33m",
	string(v1alpha1.VerdictFailed):      "\x1b[31m",
	"✓":                                 "\x1b[32m",
	"✗":                                 "\x1b[31m",
}

// colorize colours the verdict words of a line (whole words, or the
// verdict before a "/reason").
func colorize(line string) string {
	words := strings.Split(line, " ")
	for i, w := range words {
		v, _, _ := strings.Cut(w, "/")
		if c, ok := verdictColors[v]; ok {
			words[i] = c + v + "\x1b[0m" + w[len(v):]
		}
	}
	return strings.Join(words, " ")
}

// writeSummary prints what the demo saw.
func writeSummary(w io.Writer, r *Result, pace Pace, hints []hint, kubeconfigKept string) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format+"\n", a...) }
	p("")
	p("vmobs demo summary")
	p("  ran %s: control plane up in %s, fleet played %s; stopped: %s", fmtElapsed(r.Elapsed), fmtElapsed(r.ControlPlaneUp), fmtElapsed(r.Played), r.StopReason)
	if r.FirstHealthy > 0 {
		p("  first VM Healthy at +%s", fmtElapsed(r.FirstHealthy))
	}
	p("  %s on %s, seed %d, %d verdict changes; thresholds: %s", plural(r.VMs, "VM"), plural(r.Nodes, "node"), r.Seed, r.Changes, pace.Thresholds())
	p("")
	p("  %-16s %4s  %s", "VERDICT", "VMS", "REASONS")
	var vs []string
	for _, v := range verdictOrder {
		if r.Verdicts[v] > 0 {
			vs = append(vs, v)
		}
	}
	for v := range r.Verdicts {
		known := false
		for _, k := range verdictOrder {
			known = known || k == v
		}
		if !known {
			vs = append(vs, v)
		}
	}
	for _, v := range vs {
		var reasons []string
		for reason, n := range r.Reasons[v] {
			if reason == "" {
				reason = "-"
			}
			reasons = append(reasons, fmt.Sprintf("%s %d", reason, n))
		}
		sort.Slice(reasons, func(i, j int) bool {
			ni, nj := r.Reasons[v][strings.Fields(reasons[i])[0]], r.Reasons[v][strings.Fields(reasons[j])[0]]
			if ni != nj {
				return ni > nj
			}
			return reasons[i] < reasons[j]
		})
		p("  %-16s %4d  %s", v, r.Verdicts[v], strings.Join(reasons, ", "))
	}
	writeNodes(p, r.NodeObservations, r.NodeIncidents)
	ok, total := r.Diagnosed()
	p("")
	p("Scripted scenarios: %d of %d diagnosed with the layer, verdict and reason they are built to produce", ok, total)
	writeScenarios(p, r)
	if len(r.Errors) > 0 {
		p("")
		p("Problems on the way:")
		for _, e := range r.Errors {
			p("  ! %s", e)
		}
	}
	p("")
	stopped := "The control plane (kube-apiserver " + testenv.KubernetesVersion + " and etcd) is stopped"
	if r.Prometheus {
		stopped = "The control plane (kube-apiserver " + testenv.KubernetesVersion + " and etcd) and Prometheus are stopped"
	}
	p("%s and the demo's temporary files are removed.", stopped)
	if kubeconfigKept != "" {
		p("The kubeconfig stays at %s; it points at this run's API server, gone now (the next run rewrites it).", kubeconfigKept)
	}
	p("While a demo runs, it prints how to look at it with the real kubectl; this run's was:")
	for _, h := range hints {
		p("  %s: %s", h.what, h.cmd)
	}
}

// writeScenarios prints each scripted scenario's outcome, then the tools
// that joined late and the scenarios that waited for them.
func writeScenarios(p func(string, ...any), r *Result) {
	nameW := 10
	for _, s := range r.Scenarios {
		nameW = max(nameW, len(s.Name))
	}
	for _, s := range r.Scenarios {
		mark, detail := "✗", ""
		switch s.Outcome {
		case OutcomeDiagnosed:
			mark = "✓"
			detail = fmt.Sprintf("%s  seen at +%s (played +%s)", s.Expected(), fmtElapsed(s.SeenAt), fmtElapsed(s.PlayedAt))
			if now := s.Now; now != (state{s.Verdict, s.Reason}) && now.Verdict != "" {
				detail += fmt.Sprintf("; now %s", now)
			}
		case OutcomeMissed:
			if s.PlayErr != "" {
				detail = fmt.Sprintf("expected %s; playing it failed: %s", s.Expected(), s.PlayErr)
			} else {
				detail = fmt.Sprintf("expected %s, seen %s %s (VM %s) by +%s", s.Expected(), s.Layer, s.Now, s.Overall, fmtElapsed(s.Due))
			}
		case OutcomePending:
			mark = "…"
			detail = fmt.Sprintf("expected %s, seen %s %s so far; the demo ended before its deadline (+%s)", s.Expected(), s.Layer, s.Now, fmtElapsed(s.Due))
		case OutcomeNotPlayed:
			mark = "…"
			detail = fmt.Sprintf("expected %s; the demo ended before it was played", s.Expected())
		}
		p("  %s %-*s  %s", mark, nameW, s.Name, detail)
	}
	for _, l := range r.Late {
		switch {
		case l.Joined && len(l.Scenarios) > 0:
			p("  joined late, once %s was built (+%s): %s", l.Tool, fmtElapsed(l.JoinedAt), strings.Join(l.Scenarios, ", "))
		case l.Joined:
			p("  %s was built while the demo played (+%s)", l.Tool, fmtElapsed(l.JoinedAt))
		case len(l.Scenarios) > 0:
			p("  skipped, as they need %s (%s): %s", l.Tool, l.Skipped, strings.Join(l.Scenarios, ", "))
		default:
			p("  %s: %s", l.Tool, l.Skipped)
		}
	}
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// writeNodes says how many nodes are Healthy and names the others, with
// their NodeObservation's verdict and reason (kubectl get nodeobservations)
// and the size of the incident each names.
func writeNodes(p func(string, ...any), nodes map[string]string, incidents map[string]int) {
	if len(nodes) == 0 {
		return
	}
	var others []string
	healthy := 0
	for n, v := range nodes {
		if strings.HasPrefix(v, string(v1alpha1.VerdictHealthy)+"/") {
			healthy++
			continue
		}
		line := n + " " + strings.Replace(v, "/", " ", 1)
		if members, ok := incidents[n]; ok {
			line += fmt.Sprintf(", an incident of %s", plural(members, "VM"))
		}
		others = append(others, line)
	}
	sort.Strings(others)
	p("")
	p("  NodeObservations: %d Healthy of %d", healthy, len(nodes))
	for _, o := range others {
		p("    %s", o)
	}
}
