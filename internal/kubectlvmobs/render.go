// Package kubectlvmobs is the kubectl-vmobs plugin: a table of
// VMObservations (`kubectl vmobs get`) and a tree per VM (`kubectl vmobs
// describe NAME`). The renderers are pure functions of the objects and the
// time they are rendered at, so they can be tested with golden files.
package kubectlvmobs

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/vmobs/vmobs/api/v1alpha1"
)

// RenderOptions say how to render.
type RenderOptions struct {
	// Now is the time ages are computed against.
	Now time.Time
	// AllNamespaces adds a NAMESPACE column to the table and the namespace
	// to each describe tree's headline.
	AllNamespaces bool
	// Color turns on ANSI colours.
	Color bool
	// Wide adds the table's priority-1 columns (-o wide).
	Wide bool
	// NoHeaders leaves out the table's header line.
	NoHeaders bool
	// ShowLabels adds a LABELS column to the table.
	ShowLabels bool
	// LabelColumns adds a column per label key to the table (-L).
	LabelColumns []string
}

// ANSI SGR codes.
const (
	sgrReset   = "\x1b[0m"
	sgrBold    = "\x1b[1m"
	sgrFaint   = "\x1b[2m"
	sgrRed     = "\x1b[31m"
	sgrGreen   = "\x1b[32m"
	sgrYellow  = "\x1b[33m"
	sgrBlue    = "\x1b[34m"
	sgrMagenta = "\x1b[35m"
	sgrCyan    = "\x1b[36m"
)

// none is what an empty cell shows.
const none = "<none>"

// verdictColor is the colour of a verdict word.
func verdictColor(v string) string {
	switch v1alpha1.Verdict(v) {
	case v1alpha1.VerdictHealthy:
		return sgrGreen
	case v1alpha1.VerdictProgressing:
		return sgrBlue
	case v1alpha1.VerdictSuspended:
		return sgrCyan
	case v1alpha1.VerdictDegraded:
		return sgrYellow
	case v1alpha1.VerdictFailed:
		return sgrRed
	case v1alpha1.VerdictUnknown:
		return sgrMagenta
	}
	return ""
}

// cell is one piece of text and its colour (empty for none).
type cell struct {
	text  string
	color string
}

func plain(s string) cell { return cell{text: s} }

// width is the printed width of a cell: its runes, not its bytes.
func (c cell) width() int { return utf8.RuneCountInString(c.text) }

// painter writes cells with or without colour.
type painter struct{ color bool }

func (p painter) paint(c cell) string {
	if !p.color || c.color == "" || c.text == "" {
		return c.text
	}
	return c.color + c.text + sgrReset
}

func (p painter) verdict(v v1alpha1.Verdict) cell {
	if v == "" {
		return plain(none)
	}
	return cell{text: string(v), color: verdictColor(string(v))}
}

// row joins cells padded to widths with sep between them; the last cell is
// not padded and trailing blanks are trimmed, so no line ends in spaces.
func (p painter) row(cells []cell, widths []int, sep string) string {
	var b strings.Builder
	for i, c := range cells {
		if i > 0 {
			b.WriteString(sep)
		}
		b.WriteString(p.paint(c))
		if i < len(cells)-1 && i < len(widths) {
			if pad := widths[i] - c.width(); pad > 0 {
				b.WriteString(strings.Repeat(" ", pad))
			}
		}
	}
	return strings.TrimRight(b.String(), " ")
}

// table renders rows of cells in aligned columns.
func (p painter) table(rows [][]cell, sep string) []string {
	var widths []int
	for _, r := range rows {
		for i, c := range r {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], c.width())
		}
	}
	out := make([]string, 0, len(rows))
	for _, r := range rows {
		out = append(out, p.row(r, widths, sep))
	}
	return out
}

// age is how long ago t was, the way kubectl prints ages ("3m", "2d5h").
func age(t time.Time, now time.Time) string {
	return duration.HumanDuration(now.Sub(t))
}

// ago says when t was relative to now: "3m ago", or "in 3m" for a time in
// the future.
func ago(t time.Time, now time.Time) string {
	if t.After(now.Add(time.Second)) {
		return "in " + duration.HumanDuration(t.Sub(now))
	}
	return age(t, now) + " ago"
}

// since says how long a state has lasted: "since 3m", or "since +3m" when
// the clocks disagree and the state starts in the future.
func since(t time.Time, now time.Time) string {
	if t.After(now.Add(time.Second)) {
		return "since +" + duration.HumanDuration(t.Sub(now))
	}
	return "since " + age(t, now)
}

// tree builds the lines of a tree with box-drawing branches.
type tree struct {
	p     painter
	lines []string
}

// node is one branch: a headline, detail lines under it and child branches.
type node struct {
	head     string
	details  []string
	children []node
}

func (t *tree) add(prefix string, n node, last bool) {
	branch, cont := "├─ ", "│   "
	if last {
		branch, cont = "└─ ", "    "
	}
	t.lines = append(t.lines, prefix+branch+n.head)
	for _, d := range n.details {
		t.lines = append(t.lines, strings.TrimRight(prefix+cont+d, " "))
	}
	for i, c := range n.children {
		t.add(prefix+cont, c, i == len(n.children)-1)
	}
}

// RenderDescribe renders VMObservations as trees, one per VM in the order
// given, separated by a blank line.
func RenderDescribe(objs []v1alpha1.VMObservation, opts RenderOptions) string {
	var parts []string
	for _, o := range objs {
		parts = append(parts, describeOne(&o, opts))
	}
	return strings.Join(parts, "\n")
}

func describeOne(o *v1alpha1.VMObservation, opts RenderOptions) string {
	p := painter{color: opts.Color}
	now := opts.Now
	st := &o.Status
	t := &tree{p: p}

	head := []string{p.paint(cell{text: o.Name, color: sgrBold})}
	if opts.AllNamespaces {
		head[0] = p.paint(cell{text: o.Namespace + "/" + o.Name, color: sgrBold})
	}
	head = append(head, p.paint(p.verdict(st.Verdict)))
	if st.Reason != "" {
		head = append(head, st.Reason)
	}
	switch {
	case st.ObservedGeneration == 0:
	case o.Generation != 0 && st.ObservedGeneration != o.Generation:
		head = append(head, fmt.Sprintf("(observed generation %d, current %d)", st.ObservedGeneration, o.Generation))
	default:
		head = append(head, fmt.Sprintf("(observed generation %d)", st.ObservedGeneration))
	}
	t.lines = append(t.lines, strings.Join(head, "  "))

	var nodes []node
	if st.Layers == nil && st.Verdict == "" {
		nodes = append(nodes, node{head: "no status yet: the vmobs controller has not observed this VM"})
	}
	if st.Layers != nil {
		nodes = append(nodes, layerNodes(p, st.Layers, now)...)
	}
	if st.VMI != nil {
		nodes = append(nodes, vmiNode(st.VMI, now))
	}
	if st.Guest != nil {
		nodes = append(nodes, guestNode(st.Guest, now))
	}
	if len(st.LauncherPods) > 0 {
		nodes = append(nodes, launcherNode(p, st.LauncherPods))
	}
	if st.Migration != nil {
		nodes = append(nodes, migrationNode(st.Migration, now))
	}
	if lm := st.LiveMigratable; lm != nil {
		s := string(lm.Status)
		if len(lm.Reasons) > 0 {
			s += ": " + strings.Join(lm.Reasons, ", ")
		}
		nodes = append(nodes, node{head: "live-migratable  " + s})
	}
	if len(st.Interfaces) > 0 {
		nodes = append(nodes, interfacesNode(p, st.Interfaces))
	}
	if len(st.Conditions) > 0 {
		nodes = append(nodes, conditionsNode(st.Conditions))
	}
	if st.History != nil || st.VM != nil {
		nodes = append(nodes, historyNode(p, st))
	}
	for i, n := range nodes {
		t.add("", n, i == len(nodes)-1)
	}
	return strings.Join(t.lines, "\n") + "\n"
}

// layerNodes renders the four layers with their names, verdicts and
// reasons aligned.
func layerNodes(p painter, l *v1alpha1.Layers, now time.Time) []node {
	layers := []struct {
		name string
		s    *v1alpha1.LayerStatus
	}{
		{"control plane", &l.ControlPlane},
		{"node", &l.Node},
		{"guest", &l.Guest},
		{"storage", &l.Storage},
	}
	if l.Storage.Verdict == "" {
		// A status written before the storage layer existed.
		layers = layers[:3]
	}
	rows := make([][]cell, 0, len(layers))
	for _, ly := range layers {
		reason := ly.s.Reason
		if reason == "" {
			reason = none
		}
		r := []cell{plain(ly.name), p.verdict(ly.s.Verdict), plain(reason)}
		var when []string
		if ly.s.LastTransitionTime != nil {
			when = append(when, since(ly.s.LastTransitionTime.Time, now))
		}
		if ly.s.StaleAt != nil {
			when = append(when, staleText(ly.s.StaleAt.Time, now))
		}
		r = append(r, plain(strings.Join(when, ", ")))
		rows = append(rows, r)
	}
	heads := p.table(rows, "  ")
	out := make([]node, 0, len(layers))
	for i, ly := range layers {
		n := node{head: heads[i]}
		if ly.s.Message != "" {
			n.details = append(n.details, ly.s.Message)
		}
		for _, e := range ly.s.Evidence {
			n.details = append(n.details, "evidence: "+evidenceText(e, now))
		}
		out = append(out, n)
	}
	return out
}

// staleText says when the evidence goes stale, or that it already has.
func staleText(t time.Time, now time.Time) string {
	if t.After(now) {
		return "stale in " + duration.HumanDuration(t.Sub(now))
	}
	return "stale since " + age(t, now)
}

// evidenceText renders one evidence pointer:
// Kind/name field=value (3m ago).
func evidenceText(e v1alpha1.Evidence, now time.Time) string {
	s := e.Kind + "/" + e.Name + " " + e.Field
	if e.Value != "" {
		s += "=" + quoteIfNeeded(e.Value)
	}
	if e.Time != nil {
		s += " (" + ago(e.Time.Time, now) + ")"
	}
	return s
}

// quoteIfNeeded quotes values with blanks or quotes in them, so where the
// value ends stays clear.
func quoteIfNeeded(v string) string {
	if strings.ContainsAny(v, " \t\n\"'") {
		return strconv.Quote(v)
	}
	return v
}

func vmiNode(v *v1alpha1.VMISummary, now time.Time) node {
	parts := []string{"vmi", v.Name}
	if v.Phase != "" {
		parts = append(parts, v.Phase)
	}
	if v.NodeName != "" {
		parts = append(parts, "on "+v.NodeName)
	}
	if v.Reason != "" {
		parts = append(parts, "reason: "+v.Reason)
	}
	if v.PhaseSince != nil {
		parts = append(parts, since(v.PhaseSince.Time, now))
	}
	return node{head: strings.Join(parts, "  ")}
}

func guestNode(g *v1alpha1.GuestSummary, now time.Time) node {
	parts := []string{"guest agent"}
	switch {
	case g.AgentConnected && g.AgentConnectedSince != nil:
		parts = append(parts, "connected "+since(g.AgentConnectedSince.Time, now))
	case g.AgentConnected:
		parts = append(parts, "connected")
	default:
		parts = append(parts, "not connected")
	}
	if !g.AgentSupported && g.AgentConnected {
		parts = append(parts, "version not supported")
	}
	if g.OSPrettyName != "" {
		parts = append(parts, g.OSPrettyName)
	}
	if g.KernelRelease != "" {
		parts = append(parts, "kernel "+g.KernelRelease)
	}
	return node{head: strings.Join(parts, "  ")}
}

func launcherNode(p painter, pods []v1alpha1.LauncherPod) node {
	rows := make([][]cell, 0, len(pods))
	for _, lp := range pods {
		ready := "not ready"
		if lp.Ready {
			ready = "ready"
		}
		nodeName, phase := lp.Node, lp.Phase
		if nodeName == "" {
			nodeName = "<unscheduled>"
		}
		if phase == "" {
			phase = none
		}
		rows = append(rows, []cell{plain(lp.Name), plain(string(lp.Role)), plain(nodeName), plain(phase), plain(ready), plain(fmt.Sprintf("restarts=%d", lp.Restarts))})
	}
	n := node{head: "launcher pods"}
	for _, l := range p.table(rows, "  ") {
		n.children = append(n.children, node{head: l})
	}
	return n
}

func migrationNode(m *v1alpha1.MigrationSummary, now time.Time) node {
	parts := []string{"migration", m.Name}
	if m.Phase != "" {
		parts = append(parts, m.Phase)
	}
	if m.SourceNode != "" || m.TargetNode != "" {
		src, dst := m.SourceNode, m.TargetNode
		if src == "" {
			src = "?"
		}
		if dst == "" {
			dst = "?"
		}
		parts = append(parts, src+" → "+dst)
	}
	if m.PhaseSince != nil {
		parts = append(parts, since(m.PhaseSince.Time, now))
	}
	n := node{head: strings.Join(parts, "  ")}
	if m.SourcePod != "" || m.TargetPod != "" {
		n.details = append(n.details, "pods: "+orNone(m.SourcePod)+" → "+orNone(m.TargetPod))
	}
	if m.StartTime != nil {
		d := "started " + ago(m.StartTime.Time, now)
		if m.EndTime != nil {
			d += ", ended " + ago(m.EndTime.Time, now)
		}
		n.details = append(n.details, d)
	}
	if m.FailureReason != "" {
		n.details = append(n.details, "reason: "+m.FailureReason)
	}
	if m.AbortStatus != "" {
		n.details = append(n.details, "abort: "+m.AbortStatus)
	}
	return n
}

func orNone(s string) string {
	if s == "" {
		return none
	}
	return s
}

func interfacesNode(p painter, ifaces []v1alpha1.InterfaceStatus) node {
	rows := make([][]cell, 0, len(ifaces))
	for _, in := range ifaces {
		ips := orNone(strings.Join(in.IPAddresses, ","))
		if len(in.InfoSources) > 0 {
			ips += " (" + strings.Join(in.InfoSources, ", ") + ")"
		}
		pod := ""
		if len(in.PodIPs) > 0 {
			pod = "pod " + strings.Join(in.PodIPs, ",")
		}
		guestName := in.InterfaceName
		if strings.ContainsAny(guestName, " \t") {
			guestName = strconv.Quote(guestName)
		}
		rows = append(rows, []cell{plain(orNone(in.Name)), plain(orNone(guestName)), plain(orNone(in.MAC)), plain(ips), plain(pod)})
	}
	n := node{head: "interfaces"}
	for _, l := range p.table(rows, "  ") {
		n.children = append(n.children, node{head: l})
	}
	return n
}

// conditionsNode lists the conditions on one line, Type=Status, with the
// reason of the kstatus conditions that are set (Reconciling, Stalled).
func conditionsNode(conds []metav1.Condition) node {
	parts := make([]string, 0, len(conds))
	for _, c := range conds {
		s := c.Type + "=" + string(c.Status)
		if (c.Type == "Stalled" || c.Type == "Reconciling") && c.Status == metav1.ConditionTrue && c.Reason != "" {
			s += " (" + c.Reason + ")"
		}
		parts = append(parts, s)
	}
	return node{head: "conditions  " + strings.Join(parts, "  ")}
}
