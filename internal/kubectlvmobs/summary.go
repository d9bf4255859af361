package kubectlvmobs

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/vmobs/vmobs/api/v1alpha1"
)

// SummaryKind is the kind `kubectl vmobs summary -o json|yaml` prints. The
// summary is computed by the plugin, not served by the API server, as
// kubectl's own "kind: List" is.
const SummaryKind = "VMObservationSummary"

// Summary is the fleet by verdict and reason, per namespace and per node:
// VMs that share a verdict and a reason in one place are one row, so a lost
// node reads as one line rather than a row per VM.
type Summary struct {
	metav1.TypeMeta `json:",inline"`
	// Total is the number of VMs.
	Total int `json:"total"`
	// Verdicts counts the VMs per overall verdict, worst first.
	Verdicts []VerdictCount `json:"verdicts"`
	// ByNamespace groups the VMs by namespace, in name order.
	ByNamespace []SummaryGroup `json:"byNamespace"`
	// ByNode groups the VMs by the node their VMI runs on, in name order;
	// the group with an empty name holds the VMs that run on no node
	// (stopped, or not scheduled yet).
	ByNode []SummaryGroup `json:"byNode"`
}

// VerdictCount is how many VMs have one verdict.
type VerdictCount struct {
	Verdict v1alpha1.Verdict `json:"verdict"`
	Count   int              `json:"count"`
}

// SummaryGroup is the VMs of one namespace or one node.
type SummaryGroup struct {
	// Name is the namespace or the node.
	Name string `json:"name"`
	// Total is the number of VMs in the group.
	Total int `json:"total"`
	// Rows count the VMs per verdict and reason, worst verdict first, then
	// most VMs first.
	Rows []SummaryRow `json:"rows"`
}

// SummaryRow is the VMs of a group that share a verdict and a reason.
type SummaryRow struct {
	Verdict v1alpha1.Verdict `json:"verdict"`
	Reason  string           `json:"reason"`
	Count   int              `json:"count"`
	// VMs are the VMs, namespace/name, in name order.
	VMs []string `json:"vms"`
}

// vmNode is the node a VM runs on: its VMI's, else its active launcher
// pod's (scheduled before the VMI says so), else "".
func vmNode(st *v1alpha1.VMObservationStatus) string {
	if st.VMI != nil && st.VMI.NodeName != "" {
		return st.VMI.NodeName
	}
	for _, p := range st.LauncherPods {
		if p.Role == v1alpha1.RoleActive && p.Node != "" {
			return p.Node
		}
	}
	return ""
}

// Summarize counts objs by verdict and reason, per namespace and per node.
// A VM with no status yet counts as Unknown, as the exit code counts it.
func Summarize(objs []v1alpha1.VMObservation) Summary {
	s := Summary{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: SummaryKind},
		Total:    len(objs),
	}
	verdicts := map[v1alpha1.Verdict]int{}
	type rowKey struct {
		group   string
		verdict v1alpha1.Verdict
		reason  string
	}
	byNamespace, byNode := map[rowKey]*SummaryRow{}, map[rowKey]*SummaryRow{}
	add := func(rows map[rowKey]*SummaryRow, k rowKey, vm string) {
		r := rows[k]
		if r == nil {
			r = &SummaryRow{Verdict: k.verdict, Reason: k.reason}
			rows[k] = r
		}
		r.Count++
		r.VMs = append(r.VMs, vm)
	}
	for _, o := range sortObservations(objs) {
		v := effectiveVerdict(o.Status.Verdict)
		verdicts[v]++
		vm := o.Namespace + "/" + o.Name
		add(byNamespace, rowKey{o.Namespace, v, o.Status.Reason}, vm)
		add(byNode, rowKey{vmNode(&o.Status), v, o.Status.Reason}, vm)
	}
	for v, n := range verdicts {
		s.Verdicts = append(s.Verdicts, VerdictCount{Verdict: v, Count: n})
	}
	slices.SortFunc(s.Verdicts, func(a, b VerdictCount) int { return b.Verdict.Severity() - a.Verdict.Severity() })
	groups := func(rows map[rowKey]*SummaryRow) []SummaryGroup {
		byName := map[string]*SummaryGroup{}
		for k, r := range rows {
			g := byName[k.group]
			if g == nil {
				g = &SummaryGroup{Name: k.group}
				byName[k.group] = g
			}
			g.Total += r.Count
			g.Rows = append(g.Rows, *r)
		}
		out := make([]SummaryGroup, 0, len(byName))
		for _, g := range byName {
			slices.SortFunc(g.Rows, func(a, b SummaryRow) int {
				return cmp.Or(b.Verdict.Severity()-a.Verdict.Severity(), b.Count-a.Count, cmp.Compare(a.Reason, b.Reason))
			})
			out = append(out, *g)
		}
		// By name, with the VMs on no node last.
		slices.SortFunc(out, func(a, b SummaryGroup) int {
			return cmp.Or(cmp.Compare(noNode(a.Name), noNode(b.Name)), cmp.Compare(a.Name, b.Name))
		})
		return out
	}
	s.ByNamespace, s.ByNode = groups(byNamespace), groups(byNode)
	return s
}

// noNode is 1 for the group of VMs on no node, which sorts last, else 0.
func noNode(group string) int {
	if group == "" {
		return 1
	}
	return 0
}

// unstructured is the summary as an object cli-runtime's JSON, YAML,
// JSONPath and template printers take.
func (s Summary) unstructured() (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&s)
	if err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// vmCount is "1 VM" or "n VMs".
func vmCount(n int) string {
	if n == 1 {
		return "1 VM"
	}
	return strconv.Itoa(n) + " VMs"
}

// RenderSummary renders the summary as text: one line of totals, then a
// table by namespace and one by node, a row per verdict and reason, so 14
// VMs on a lost node read
//
//	node-b   14    Unknown       NodeNotReady
//
// The group's name starts each of its rows, so grep finds them all.
func RenderSummary(s Summary, opts RenderOptions) string {
	p := painter{color: opts.Color}
	var b strings.Builder
	totals := make([]string, 0, len(s.Verdicts))
	for _, vc := range s.Verdicts {
		totals = append(totals, fmt.Sprintf("%d %s", vc.Count, p.paint(p.verdict(vc.Verdict))))
	}
	b.WriteString(vmCount(s.Total))
	if len(totals) > 0 {
		b.WriteString(": " + strings.Join(totals, ", "))
	}
	b.WriteString("\n")
	for _, sec := range []struct {
		header string
		groups []SummaryGroup
	}{{"NAMESPACE", s.ByNamespace}, {"NODE", s.ByNode}} {
		if len(sec.groups) == 0 {
			continue
		}
		rows := [][]cell{{plain(sec.header), plain("VMS"), plain("VERDICT"), plain("REASON")}}
		for _, g := range sec.groups {
			name := g.Name
			if name == "" {
				name = none
			}
			for _, r := range g.Rows {
				rows = append(rows, []cell{plain(name), plain(strconv.Itoa(r.Count)), p.verdict(r.Verdict), plain(orNone(r.Reason))})
			}
		}
		b.WriteString("\n")
		b.WriteString(strings.Join(p.table(rows, "   "), "\n"))
		b.WriteString("\n")
	}
	return b.String()
}
