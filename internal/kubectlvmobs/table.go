package kubectlvmobs

import (
	"io"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/vmobs/vmobs/api/v1alpha1"
)

// tableColumns are the CRD's printer columns (api/v1alpha1, the
// +kubebuilder:printcolumn markers), so `kubectl vmobs get` prints what
// `kubectl get vmobs` does, and -o wide adds the priority-1 columns. A test
// keeps the two in step.
var tableColumns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name"},
	{Name: "Verdict", Type: "string"},
	{Name: "Control-Plane", Type: "string"},
	{Name: "Node", Type: "string"},
	{Name: "Guest", Type: "string"},
	{Name: "Storage", Type: "string"},
	{Name: "Reason", Type: "string"},
	{Name: "Age", Type: "date"},
	{Name: "Phase", Type: "string", Priority: 1},
	{Name: "Node-Name", Type: "string", Priority: 1},
	{Name: "Migration", Type: "string", Priority: 1},
	{Name: "Agent", Type: "boolean", Priority: 1},
	{Name: "Incident", Type: "string", Priority: 1},
}

// firstVerdictColumn is the index of Verdict in tableColumns; the four
// layer verdicts follow it.
const firstVerdictColumn = 1

// Table is the VMObservations as a metav1.Table, in the order given, with
// ages computed against now. A missing verdict or reason reads <none>, so
// that every cell up to the reason is one word (paintVerdicts relies on
// it); the wide columns after it are left blank when missing, as kubectl
// prints a CRD's printer columns (`kubectl get vmobs -o wide`).
func Table(objs []v1alpha1.VMObservation, now time.Time) *metav1.Table {
	t := &metav1.Table{ColumnDefinitions: tableColumns, Rows: make([]metav1.TableRow, 0, len(objs))}
	for i := range objs {
		o := &objs[i]
		st := &o.Status
		var cp, node, guest, storage v1alpha1.Verdict
		if l := st.Layers; l != nil {
			cp, node, guest, storage = l.ControlPlane.Verdict, l.Node.Verdict, l.Guest.Verdict, l.Storage.Verdict
		}
		a := none
		if !o.CreationTimestamp.IsZero() {
			a = age(o.CreationTimestamp.Time, now)
		}
		var phase, nodeName, migration string
		if st.VMI != nil {
			phase, nodeName = st.VMI.Phase, st.VMI.NodeName
		}
		if st.Migration != nil {
			migration = st.Migration.Phase
		}
		var agent any
		if st.Guest != nil {
			agent = st.Guest.AgentConnected
		}
		var inc string
		if st.Incident != nil {
			inc = st.Incident.Name
		}
		t.Rows = append(t.Rows, metav1.TableRow{
			Cells: []any{
				o.Name, orNone(string(st.Verdict)), orNone(string(cp)), orNone(string(node)), orNone(string(guest)),
				orNone(string(storage)), orNone(st.Reason), a, phase, nodeName, migration, agent, inc,
			},
			// The printer reads the namespace and labels from the object.
			Object: runtime.RawExtension{Object: o},
		})
	}
	return t
}

// printTable writes the table with cli-runtime's table printer, the one
// kubectl uses. That printer escapes ESC in cells (kubernetes/kubernetes
// #101695), so with opts.Color the verdicts are coloured afterwards.
func printTable(w io.Writer, objs []v1alpha1.VMObservation, opts RenderOptions) error {
	p := printers.NewTablePrinter(printers.PrintOptions{
		WithNamespace: opts.AllNamespaces,
		Wide:          opts.Wide,
		NoHeaders:     opts.NoHeaders,
		ShowLabels:    opts.ShowLabels,
		ColumnLabels:  opts.LabelColumns,
	})
	if !opts.Color {
		return p.PrintObj(Table(objs, opts.Now), w)
	}
	var b strings.Builder
	if err := p.PrintObj(Table(objs, opts.Now), &b); err != nil {
		return err
	}
	first := firstVerdictColumn
	if opts.AllNamespaces {
		first++
	}
	_, err := io.WriteString(w, paintVerdicts(b.String(), first, first+4))
	return err
}

// paintVerdicts colours the verdicts in the fields first to last (counted
// from 0) of each line of an aligned table. Every cell up to the last
// verdict is one word and never empty (an empty one reads <none>), so the
// blank-separated fields of a line are its cells; the header's words are
// no verdicts and stay plain.
func paintVerdicts(table string, first, last int) string {
	p := painter{color: true}
	var b strings.Builder
	for _, line := range strings.SplitAfter(table, "\n") {
		field, pos := 0, 0
		for pos < len(line) && field <= last {
			start := pos
			for start < len(line) && (line[start] == ' ' || line[start] == '\n') {
				start++
			}
			end := start
			for end < len(line) && line[end] != ' ' && line[end] != '\n' {
				end++
			}
			if start == end {
				break
			}
			b.WriteString(line[pos:start])
			if word := line[start:end]; field >= first {
				b.WriteString(p.paint(p.verdict(v1alpha1.Verdict(word))))
			} else {
				b.WriteString(word)
			}
			pos = end
			field++
		}
		b.WriteString(line[pos:])
	}
	return b.String()
}

// RenderTable renders VMObservations, in the order given, as `kubectl get
// vmobs` does (-o wide with opts.Wide). It renders nothing for an empty
// list; callers say "No VMObservations found" themselves.
func RenderTable(objs []v1alpha1.VMObservation, opts RenderOptions) (string, error) {
	var b strings.Builder
	err := printTable(&b, objs, opts)
	return b.String(), err
}
