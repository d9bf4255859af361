package kubectlvmobs

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/drain"
)

// Exit statuses of drain-check: bits, so that a script can test each
// (docs/drain-check.md has the table). 0 says every VM live-migrates or is
// unaffected; ExitError (128) that nothing could be predicted.
const (
	// ExitDrainShutDown: a VM would be shut down (restarted elsewhere or
	// not).
	ExitDrainShutDown = 1
	// ExitDrainBlocks: the drain would block on a VM.
	ExitDrainBlocks = 2
	// ExitDrainUndecided: a VM is left to an external controller, or its
	// outcome is Unknown (an input could not be read).
	ExitDrainUndecided = 4
)

// DrainCheckKind is the kind `kubectl vmobs drain-check -o json|yaml`
// prints: computed by the plugin, not served by the API server.
const DrainCheckKind = "DrainCheck"

// DrainCheck is what drain-check prints: the prediction per node and, for a
// node being drained (cordoned), the progress of each VM.
type DrainCheck struct {
	metav1.TypeMeta `json:",inline"`
	Nodes           []drain.Prediction `json:"nodes"`
	// Progress holds the nodes that are cordoned.
	Progress []drain.Progress `json:"progress,omitempty"`
}

const drainCheckLong = `drain-check predicts what draining each NODE does to every VM on it, as
KubeVirt's eviction admitter and evacuation controller answer a drain's
evictions: LiveMigrates, RestartsElsewhere, StaysDown, BlocksDrain or
LeftToExternal, with every reason. It reads VMIs, VMs, launcher pods,
PodDisruptionBudgets, PersistentVolumeClaims, nodes and the KubeVirt CR with
your kubeconfig; what it may not read is named in the output. On a node
already cordoned it shows each VM's progress too.

Exit status (bits, added): 0 every VM live-migrates or is unaffected; 1 a VM
would be shut down; 2 the drain would block; 4 a VM is left to an external
controller or could not be predicted; 128 an error.`

const drainCheckExamples = `  kubectl vmobs drain-check node-a                  # a table: VM, OUTCOME, REASONS, then every reason
  kubectl vmobs drain-check node-a node-b -o yaml   # the prediction as a document
  kubectl vmobs drain-check node-a && kubectl drain node-a --ignore-daemonsets --delete-emptydir-data`

// drainCheckCommand is `drain-check NODE...`.
func (o *options) drainCheckCommand(code *int, stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:               "drain-check NODE...",
		Aliases:           []string{"drain"},
		Short:             "Predict what draining nodes does to every VM on them, with every reason",
		Long:              drainCheckLong,
		Example:           drainCheckExamples,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: o.completeNodes,
		RunE: func(cmd *cobra.Command, nodes []string) error {
			c, err := o.drainCheck(cmd, nodes, stdout)
			*code = c
			return err
		},
	}
}

// drainCheck gathers the objects, predicts per node and prints.
func (o *options) drainCheck(cmd *cobra.Command, nodes []string, stdout io.Writer) (int, error) {
	usage := func(err error) (int, error) { return ExitError, usageError{err: err, command: cmd.CommandPath()} }
	for _, f := range []string{"selector", "sort-by", "watch", "all-namespaces", "fail-on", "show-labels", "label-columns"} {
		if cmd.Flags().Changed(f) {
			return usage(fmt.Errorf("--%s does not apply to drain-check", f))
		}
	}
	format := *o.print.OutputFormat
	if format != "" && format != "json" && format != "yaml" {
		return usage(fmt.Errorf("drain-check prints a table, json or yaml, not %q", format))
	}
	c, namespace, err := o.client()
	if err != nil {
		return ExitError, err
	}
	now := time.Now()
	in, err := gatherDrain(cmd.Context(), c, nodes, namespace, now)
	if err != nil {
		return ExitError, err
	}
	out := DrainCheck{TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: DrainCheckKind}}
	for _, node := range nodes {
		in.Node = node
		p := drain.Predict(in)
		out.Nodes = append(out.Nodes, p)
		if progress := drain.Track(p, in); progress.Draining {
			out.Progress = append(out.Progress, progress)
		}
	}
	if format == "" {
		_, err = io.WriteString(stdout, RenderDrainCheck(out, o.noHeaders))
	} else {
		var m map[string]any
		if m, err = runtime.DefaultUnstructuredConverter.ToUnstructured(&out); err == nil {
			var p printers.ResourcePrinter = &printers.JSONPrinter{}
			if format == "yaml" {
				p = &printers.YAMLPrinter{}
			}
			err = p.PrintObj(&unstructured.Unstructured{Object: m}, stdout)
		}
	}
	if err != nil {
		return ExitError, err
	}
	return drainCode(out.Nodes), nil
}

// drainCode is drain-check's exit status for the predictions.
func drainCode(preds []drain.Prediction) int {
	code := ExitOK
	for _, p := range preds {
		for _, v := range p.VMs {
			switch v.Outcome {
			case drain.OutcomeRestartsElsewhere, drain.OutcomeStaysDown:
				code |= ExitDrainShutDown
			case drain.OutcomeBlocksDrain:
				code |= ExitDrainBlocks
			case drain.OutcomeLeftToExternal, drain.OutcomeUnknown:
				code |= ExitDrainUndecided
			}
		}
	}
	return code
}

// gatherDrain reads what a prediction for nodes needs. The VMIs are
// required (cluster-wide, else the kubeconfig's namespace); every other
// kind the user may not read is recorded in Input.Unreadable, and the
// prediction says what that leaves open.
func gatherDrain(ctx context.Context, c client.Client, nodes []string, namespace string, now time.Time) (drain.Input, error) {
	in := drain.Input{Now: now, Unreadable: map[drain.Kind]string{}}
	tolerate := in.Tolerate

	var vmis kubevirtv1.VirtualMachineInstanceList
	err := c.List(ctx, &vmis)
	if apierrors.IsForbidden(err) && namespace != "" {
		in.Unreadable[drain.KindVMIs] = fmt.Sprintf("only namespace %s could be read: %v", namespace, err)
		err = c.List(ctx, &vmis, client.InNamespace(namespace))
	}
	if meta.IsNoMatchError(err) {
		return in, fmt.Errorf("the cluster does not serve VirtualMachineInstances: is KubeVirt installed? %w", err)
	}
	if err != nil {
		return in, fmt.Errorf("listing VirtualMachineInstances: %w", err)
	}
	namespaces := map[string]bool{}
	for _, v := range vmis.Items {
		if slices.Contains(nodes, v.Status.NodeName) {
			in.VMIs = append(in.VMIs, v)
			namespaces[v.Namespace] = true
		}
	}
	var nodeList corev1.NodeList
	if err := tolerate(drain.KindNodes, c.List(ctx, &nodeList)); err != nil {
		return in, err
	}
	in.Nodes = nodeList.Items
	var kvs kubevirtv1.KubeVirtList
	if err := tolerate(drain.KindKubeVirt, c.List(ctx, &kvs)); err != nil {
		return in, err
	}
	if len(kvs.Items) > 0 {
		slices.SortFunc(kvs.Items, func(a, b kubevirtv1.KubeVirt) int {
			return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
		})
		in.KubeVirt = &kvs.Items[0]
	}
	for _, ns := range slices.Sorted(maps.Keys(namespaces)) {
		var vms kubevirtv1.VirtualMachineList
		if err := tolerate(drain.KindVMs, c.List(ctx, &vms, client.InNamespace(ns))); err != nil {
			return in, err
		}
		in.VMs = append(in.VMs, vms.Items...)
		var pods corev1.PodList
		if err := tolerate(drain.KindPods, c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{kubevirtv1.AppLabel: "virt-launcher"})); err != nil {
			return in, err
		}
		in.Pods = append(in.Pods, pods.Items...)
		var pdbs policyv1.PodDisruptionBudgetList
		if err := tolerate(drain.KindPDBs, c.List(ctx, &pdbs, client.InNamespace(ns))); err != nil {
			return in, err
		}
		in.PDBs = append(in.PDBs, pdbs.Items...)
		var pvcs corev1.PersistentVolumeClaimList
		if err := tolerate(drain.KindPVCs, c.List(ctx, &pvcs, client.InNamespace(ns))); err != nil {
			return in, err
		}
		in.PVCs = append(in.PVCs, pvcs.Items...)
		var migs kubevirtv1.VirtualMachineInstanceMigrationList
		if err := tolerate(drain.KindMigrations, c.List(ctx, &migs, client.InNamespace(ns))); err != nil {
			return in, err
		}
		in.Migrations = append(in.Migrations, migs.Items...)
	}
	return in, nil
}

// RenderDrainCheck renders the predictions for people: per node a line of
// totals, a table (NAMESPACE, VM, OUTCOME, REASONS; PROGRESS on a cordoned
// node), then every reason and note in words.
func RenderDrainCheck(dc DrainCheck, noHeaders bool) string {
	var b strings.Builder
	for i, p := range dc.Nodes {
		if i > 0 {
			b.WriteString("\n")
		}
		var progress *drain.Progress
		for j := range dc.Progress {
			if dc.Progress[j].Node == p.Node {
				progress = &dc.Progress[j]
			}
		}
		fmt.Fprintf(&b, "Node %s: %s", p.Node, vmCount(len(p.VMs)))
		var parts []string
		for _, oc := range drain.Outcomes {
			if n := p.Counts[oc]; n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", n, oc))
			}
		}
		if len(parts) > 0 {
			b.WriteString(": " + strings.Join(parts, ", "))
		}
		if m := p.Migrations; m.Count > 0 {
			fmt.Fprintf(&b, "; %d live migrations in %d round(s) at most %d per node, %d per cluster", m.Count, m.Rounds, m.PerNode, m.PerCluster)
		}
		if progress != nil {
			b.WriteString("; the node is cordoned")
		}
		b.WriteString("\n")
		if len(p.VMs) > 0 {
			b.WriteString("\n")
			w := printers.GetNewTabWriter(&b)
			if !noHeaders {
				fmt.Fprint(w, "NAMESPACE\tVM\tOUTCOME\tREASONS")
				if progress != nil {
					fmt.Fprint(w, "\tPROGRESS")
				}
				fmt.Fprintln(w)
			}
			for k, v := range p.VMs {
				codes := make([]string, len(v.Reasons))
				for c, r := range v.Reasons {
					codes[c] = r.Code
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s", v.Namespace, v.Name, v.Outcome, strings.Join(codes, ","))
				if progress != nil && k < len(progress.VMs) {
					fmt.Fprintf(w, "\t%s", progress.VMs[k].Phase)
				}
				fmt.Fprintln(w)
			}
			_ = w.Flush()
		}
		for _, v := range p.VMs {
			fmt.Fprintf(&b, "\n%s/%s: %s", v.Namespace, v.Name, v.Outcome)
			if v.EvictionStrategy != "" {
				fmt.Fprintf(&b, " (evictionStrategy %s from %s", v.EvictionStrategy, v.EvictionStrategySource)
				if v.RunStrategy != "" {
					fmt.Fprintf(&b, ", runStrategy %s", v.RunStrategy)
				}
				b.WriteString(")")
			}
			b.WriteString("\n")
			for _, r := range v.Reasons {
				fmt.Fprintf(&b, "  %s: %s\n", r.Code, r.Message)
			}
			for _, r := range v.Notes {
				fmt.Fprintf(&b, "  note %s: %s\n", r.Code, r.Message)
			}
		}
		for _, r := range p.Notes {
			fmt.Fprintf(&b, "note %s: %s\n", r.Code, r.Message)
		}
	}
	return b.String()
}

// completeNodes offers the node names not yet given.
func (o *options) completeNodes(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return o.completeClusterNames(cmd, &corev1.NodeList{}, args, toComplete)
}
