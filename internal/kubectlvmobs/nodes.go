package kubectlvmobs

import (
	"context"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/api/v1alpha1"
)

// nodesCommand is `kubectl vmobs nodes [NODE...]`: the NodeObservations
// as a table, one line per node with each layer's verdict and its VMs by
// verdict; the exit status is the nodes' health, as get's is the VMs'.
func (o *options) nodesCommand(code *int, stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:     "nodes [NODE...]",
		Aliases: []string{"node", "nodeobs"},
		Short:   "List NodeObservations: each node's verdict per layer and its VMs by verdict",
		Args:    cobra.ArbitraryArgs,
		ValidArgsFunction: func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			return o.completeClusterNames(cmd, &v1alpha1.NodeObservationList{}, args, toComplete)
		},
		RunE: func(cmd *cobra.Command, names []string) error {
			failOn, err := parseFailOn(o.failOn)
			if err != nil {
				*code = ExitError
				return usageError{err: err, command: cmd.CommandPath()}
			}
			c, _, err := o.client()
			if err != nil {
				*code = ExitError
				return err
			}
			nodes, err := fetchNodes(cmd.Context(), c, names)
			if err != nil {
				*code = ExitError
				return err
			}
			p := printers.NewTablePrinter(printers.PrintOptions{NoHeaders: o.noHeaders})
			if err := p.PrintObj(NodeTable(nodes, time.Now()), stdout); err != nil {
				*code = ExitError
				return err
			}
			*code = verdictsCode(len(nodes), func(i int) v1alpha1.Verdict { return nodes[i].Status.Verdict }, failOn)
			return nil
		},
	}
}

// fetchNodes lists the NodeObservations, or gets those named, by name.
func fetchNodes(ctx context.Context, c client.Client, names []string) ([]v1alpha1.NodeObservation, error) {
	if len(names) > 0 {
		out := make([]v1alpha1.NodeObservation, 0, len(names))
		for _, n := range names {
			var o v1alpha1.NodeObservation
			if err := c.Get(ctx, client.ObjectKey{Name: n}, &o); err != nil {
				return nil, err
			}
			out = append(out, o)
		}
		return out, nil
	}
	var l v1alpha1.NodeObservationList
	if err := c.List(ctx, &l); err != nil {
		return nil, err
	}
	slices.SortFunc(l.Items, func(a, b v1alpha1.NodeObservation) int { return strings.Compare(a.Name, b.Name) })
	return l.Items, nil
}

var nodeColumns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string"},
	{Name: "Verdict", Type: "string"},
	{Name: "Kubelet", Type: "string"},
	{Name: "Virt-Handler", Type: "string"},
	{Name: "Domain-Stats", Type: "string"},
	{Name: "Launcher-Path", Type: "string"},
	{Name: "Reason", Type: "string"},
	{Name: "VMs", Type: "integer"},
	{Name: "Degraded", Type: "integer"},
	{Name: "Failed", Type: "integer"},
	{Name: "Unknown", Type: "integer"},
	{Name: "Age", Type: "string"},
}

// NodeTable is the NodeObservations as a metav1.Table, in the order given.
func NodeTable(nodes []v1alpha1.NodeObservation, now time.Time) *metav1.Table {
	t := &metav1.Table{ColumnDefinitions: nodeColumns, Rows: make([]metav1.TableRow, 0, len(nodes))}
	for i := range nodes {
		o := &nodes[i]
		st := &o.Status
		layer := func(name string) string {
			if l := st.Layers.Get(name); l != nil {
				return orNone(string(l.Verdict))
			}
			return none
		}
		var vms v1alpha1.VMCounts
		if st.VMs != nil {
			vms = *st.VMs
		}
		a := none
		if !o.CreationTimestamp.IsZero() {
			a = age(o.CreationTimestamp.Time, now)
		}
		t.Rows = append(t.Rows, metav1.TableRow{
			Cells: []any{
				o.Name, orNone(string(st.Verdict)), layer(v1alpha1.NodeLayerKubelet), layer(v1alpha1.NodeLayerVirtHandler),
				layer(v1alpha1.NodeLayerDomainStats), layer(v1alpha1.NodeLayerLauncherPath), orNone(st.Reason),
				vms.Total, vms.Degraded, vms.Failed, vms.Unknown, a,
			},
			Object: runtime.RawExtension{Object: o},
		})
	}
	return t
}
