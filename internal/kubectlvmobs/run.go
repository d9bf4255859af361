package kubectlvmobs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/scheme"
	"github.com/vmobs/vmobs/internal/version"
)

const long = `kubectl vmobs shows VMObservations: the health of KubeVirt VMs per layer.

With no command, it lists the VMObservations (get); with names, it describes
them. drain-check predicts what a drain of a node does to each VM on it.
Its exit status is the health of the VMs it showed: 0 when every one is
Healthy or Suspended, 1 Degraded, 2 Failed, 3 Unknown, plus 8 when one is
Progressing; 128 on an error. --fail-on raises the verdict that fails.`

const examples = `  kubectl vmobs get -A                                 # every VM's verdict per layer
  kubectl vmobs describe -n finance ledger-01 --watch  # one VM's tree, redrawn on every change
  kubectl vmobs summary -A                             # the fleet by verdict and reason, per namespace and node
  kubectl vmobs history -n finance ledger-01 --since=24h  # what happened to one VM, newest first
  kubectl vmobs nodes                                  # every node that runs VMs: its verdict per layer, its VMs by verdict
  kubectl vmobs drain-check node-a                     # what a drain of node-a does to each VM, and why
  kubectl vmobs gen -f vms/ > vmobservations.yaml      # a VMObservation per VirtualMachine manifest, for Git
  kubectl vmobs get -A -o jsonpath='{range .items[*]}{.metadata.name}{"\t"}{.status.verdict}{"\n"}{end}'
  kubectl vmobs get -l tier=db --sort-by=.status.verdict -o wide
  kubectl vmobs get -A --fail-on=Degraded >/dev/null || echo "some VM is Degraded or Failed"`

// verb is what a command shows by default.
type verb int

const (
	verbGet verb = iota
	verbDescribe
	verbSummary
	verbHistory
)

// options are the plugin's flags.
type options struct {
	config        *genericclioptions.ConfigFlags
	print         *genericclioptions.PrintFlags
	allNamespaces bool
	selector      string
	sortBy        string
	failOn        string
	watch         bool
	noColor       bool
	noHeaders     bool
	showLabels    bool
	labelColumns  []string
	// since leaves history entries older than this out (history only).
	since time.Duration
}

// usageError is a mistake in the command line, reported with a pointer to
// the help.
type usageError struct {
	err     error
	command string
}

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// Run runs the plugin with args (without the program name), writing to
// stdout and stderr, and returns the exit status: the health of the VMs
// shown (see healthCode), or ExitError.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runIO(ctx, args, os.Stdin, stdout, stderr)
}

// runIO is Run with stdin given (gen -f - reads it).
func runIO(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	code := ExitOK
	root := newCommand(&code, stdout, stderr)
	root.SetIn(stdin)
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		if ue, ok := errors.AsType[usageError](err); ok {
			fmt.Fprintf(stderr, "See '%s --help'.\n", ue.command)
		}
		return ExitError
	}
	return code
}

// newCommand builds the command tree: the bare command (get, or describe
// with names), get, describe, summary, and cobra's help and completion. The
// health of what a command showed goes to *code.
func newCommand(code *int, stdout, stderr io.Writer) *cobra.Command {
	o := &options{
		config: genericclioptions.NewConfigFlags(true),
		print:  genericclioptions.NewPrintFlags("").WithTypeSetter(scheme.New()),
	}
	runAs := func(v verb) func(*cobra.Command, []string) error {
		return func(cmd *cobra.Command, args []string) error {
			if v == verbGet && cmd.Parent() == nil && len(args) > 0 {
				v = verbDescribe // kubectl vmobs NAME
			}
			c, err := o.run(cmd.Context(), cmd, v, args, stdout, stderr)
			*code = c
			return err
		}
	}
	root := &cobra.Command{
		// cobra names the command after the first word of Use: the
		// binary's name, which the completion scripts register.
		Use:               "kubectl-vmobs [NAME...]",
		Annotations:       map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl vmobs"},
		Short:             "Show the health of KubeVirt VMs per layer (VMObservations)",
		Long:              long,
		Example:           examples,
		Version:           version.Get().String(),
		Args:              cobra.ArbitraryArgs,
		ValidArgsFunction: o.completeNames,
		SilenceErrors:     true,
		SilenceUsage:      true,
		RunE:              runAs(verbGet),
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetVersionTemplate("kubectl-vmobs {{.Version}}\n")
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return usageError{err: err, command: cmd.CommandPath()}
	})
	root.AddCommand(
		&cobra.Command{
			Use:               "get [NAME...]",
			Aliases:           []string{"list", "ls"},
			Short:             "List VMObservations as a table, like kubectl get vmobs",
			Args:              cobra.ArbitraryArgs,
			ValidArgsFunction: o.completeNames,
			RunE:              runAs(verbGet),
		},
		&cobra.Command{
			Use:               "describe [NAME...]",
			Aliases:           []string{"desc"},
			Short:             "Show a tree per VM: layers, evidence, pods, migration, interfaces",
			Args:              cobra.ArbitraryArgs,
			ValidArgsFunction: o.completeNames,
			RunE:              runAs(verbDescribe),
		},
		&cobra.Command{
			Use:               "summary",
			Aliases:           []string{"sum"},
			Short:             "Count VMs by verdict and reason, per namespace and per node",
			Args:              cobra.NoArgs,
			ValidArgsFunction: cobra.NoFileCompletions,
			RunE:              runAs(verbSummary),
		},
	)
	history := &cobra.Command{
		Use:               "history [NAME...]",
		Aliases:           []string{"hist"},
		Short:             "Show each VM's flight recorder: verdict transitions and life events, newest first, and its restarts",
		Args:              cobra.ArbitraryArgs,
		ValidArgsFunction: o.completeNames,
		RunE:              runAs(verbHistory),
	}
	history.Flags().DurationVar(&o.since, "since", 0, "Show only the entries of the last duration (e.g. 2h); 0 shows them all.")
	root.AddCommand(history, o.nodesCommand(code, stdout), o.drainCheckCommand(code, stdout), newGenCommand(o, stdout))

	fs := root.PersistentFlags()
	o.config.AddFlags(fs)
	fs.BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "Show VMObservations in all namespaces.")
	fs.StringVarP(&o.selector, "selector", "l", "", "Label selector to filter on, as kubectl takes it (e.g. -l 'tier=db,env!=dev').")
	fs.StringVar(&o.sortBy, "sort-by", "", "Sort by the value of this JSONPath, as kubectl does (e.g. .status.verdict or '{.metadata.creationTimestamp}'); the default is namespace, then name. Not for summary.")
	fs.StringVar(&o.failOn, "fail-on", string(v1alpha1.VerdictProgressing), "The lowest verdict that makes the exit status non-zero: "+strings.Join(failOnValues, ", ")+". Healthy and Suspended never fail.")
	fs.BoolVarP(&o.watch, "watch", "w", false, "Render again on every change, until interrupted.")
	fs.BoolVar(&o.noColor, "no-color", false, "Never colour the output (the default colours only a terminal; NO_COLOR and TERM=dumb are honoured too).")
	fs.BoolVar(&o.noHeaders, "no-headers", false, "Leave out the table's header line.")
	fs.BoolVar(&o.showLabels, "show-labels", false, "Add the labels as the table's last column.")
	fs.StringSliceVarP(&o.labelColumns, "label-columns", "L", nil, "Add a table column per label key given (-L tier,env).")
	fs.StringVarP(o.print.OutputFormat, "output", "o", "", "Output format. One of: ("+strings.Join(append([]string{"wide"}, o.print.AllowedFormats()...), ", ")+"). The default is the table for get, the tree for describe and the text for summary.")
	o.print.OutputFlagSpecified = func() bool { return fs.Changed("output") }
	// cli-runtime binds the rest of its print flags (--template,
	// --show-managed-fields, ...) to a command's local flags: bind them to
	// a holder and share them with every command.
	holder := &cobra.Command{}
	o.print.JSONYamlPrintFlags.AddFlags(holder)
	o.print.TemplatePrinterFlags.AddFlags(holder)
	fs.AddFlagSet(holder.Flags())

	for flag, complete := range map[string]cobra.CompletionFunc{
		"namespace": o.completeNamespaces,
		"output":    cobra.FixedCompletions(append([]string{"wide"}, o.print.AllowedFormats()...), cobra.ShellCompDirectiveNoFileComp),
		"fail-on":   cobra.FixedCompletions(failOnValues, cobra.ShellCompDirectiveNoFileComp),
	} {
		if err := root.RegisterFlagCompletionFunc(flag, complete); err != nil {
			// Only a programming error (a misspelt flag) gets here.
			panic(err)
		}
	}
	return root
}

// run fetches what the flags and names select, shows it, and with --watch
// shows it again on every change. It returns the health of the last set
// shown.
func (o *options) run(ctx context.Context, cmd *cobra.Command, v verb, names []string, stdout, stderr io.Writer) (int, error) {
	usage := func(err error) (int, error) { return ExitError, usageError{err: err, command: cmd.CommandPath()} }
	failOn, err := parseFailOn(o.failOn)
	if err != nil {
		return usage(err)
	}
	if o.allNamespaces && len(names) > 0 {
		return usage(errors.New("a name cannot be given with --all-namespaces"))
	}
	if o.selector != "" && len(names) > 0 {
		return usage(errors.New("a name cannot be given with --selector"))
	}
	sel, err := labels.Parse(o.selector)
	if err != nil {
		return usage(fmt.Errorf("invalid --selector: %w", err))
	}
	if o.since < 0 {
		return usage(errors.New("--since must not be negative"))
	}
	if v == verbSummary && o.sortBy != "" {
		return usage(errors.New("--sort-by does not apply to summary"))
	}
	if o.sortBy != "" {
		if _, err := relaxedJSONPath(o.sortBy); err != nil {
			return usage(err)
		}
	}
	color := !o.noColor && printers.AllowsColorOutput(stdout)
	show, human, err := o.renderer(v, len(names) == 1, color)
	if err != nil {
		return usage(err)
	}

	c, namespace, err := o.client()
	if err != nil {
		return ExitError, err
	}
	if o.allNamespaces {
		namespace = ""
	}
	objs, err := fetch(ctx, c, namespace, names, sel)
	if err != nil {
		if meta.IsNoMatchError(err) {
			err = fmt.Errorf("the cluster does not serve VMObservations (%s): is the vmobs CRD installed? %w", v1alpha1.GroupVersion, err)
		}
		return ExitError, err
	}
	ordered := func(objs []v1alpha1.VMObservation) ([]v1alpha1.VMObservation, error) {
		objs = sortObservations(objs)
		if o.sortBy == "" {
			return objs, nil
		}
		return sortBy(objs, o.sortBy)
	}
	if objs, err = ordered(objs); err != nil {
		return ExitError, err
	}
	if len(objs) == 0 && human && !o.watch {
		if namespace == "" {
			fmt.Fprintln(stderr, "No VMObservations found.")
		} else {
			fmt.Fprintf(stderr, "No VMObservations found in %s namespace.\n", namespace)
		}
		return ExitOK, nil
	}
	if err := show(stdout, objs); err != nil {
		return ExitError, err
	}
	code := healthCode(objs, failOn)
	if !o.watch {
		return code, nil
	}
	err = watchLoop(ctx, c, namespace, names, sel, objs, func(objs []v1alpha1.VMObservation) error {
		objs, err := ordered(objs)
		if err != nil {
			return err
		}
		if color {
			// On a terminal, redraw in place.
			fmt.Fprint(stdout, "\x1b[H\x1b[2J")
		} else if human {
			fmt.Fprintln(stdout)
		}
		code = healthCode(objs, failOn)
		return show(stdout, objs)
	})
	if err != nil {
		return ExitError, err
	}
	return code, nil
}

// renderer returns what shows a set of VMObservations as the flags ask, and
// whether that is for people (the table, the tree, the summary text) rather
// than for programs. single says one name was given: the machine formats
// then print the object, not a List, as kubectl does.
func (o *options) renderer(v verb, single, color bool) (func(io.Writer, []v1alpha1.VMObservation) error, bool, error) {
	ropts := RenderOptions{
		AllNamespaces: o.allNamespaces,
		Color:         color,
		NoHeaders:     o.noHeaders,
		ShowLabels:    o.showLabels,
		LabelColumns:  o.labelColumns,
	}
	format := *o.print.OutputFormat
	templated := o.print.TemplatePrinterFlags.TemplateArgument != nil && *o.print.TemplatePrinterFlags.TemplateArgument != ""
	switch {
	case format == "" && templated:
		// --template alone means -o go-template, as in kubectl.
	case format == "" && v == verbSummary:
		return func(w io.Writer, objs []v1alpha1.VMObservation) error {
			_, err := io.WriteString(w, RenderSummary(Summarize(objs), ropts))
			return err
		}, true, nil
	case format == "" && v == verbHistory:
		return func(w io.Writer, objs []v1alpha1.VMObservation) error {
			_, err := io.WriteString(w, RenderHistory(objs, ropts, o.sinceTime(time.Now())))
			return err
		}, true, nil
	case format == "wide" && v == verbHistory:
		return nil, false, errors.New("history prints as a timeline, json, yaml, name, jsonpath or go-template, not wide")
	case format == "" && v == verbDescribe:
		return func(w io.Writer, objs []v1alpha1.VMObservation) error {
			ropts.Now = time.Now()
			_, err := io.WriteString(w, RenderDescribe(objs, ropts))
			return err
		}, true, nil
	case format == "" || format == "wide":
		if v == verbSummary {
			return nil, false, errors.New("summary prints as text, json, yaml, jsonpath or go-template, not wide")
		}
		ropts.Wide = format == "wide"
		return func(w io.Writer, objs []v1alpha1.VMObservation) error {
			ropts.Now = time.Now()
			return printTable(w, objs, ropts)
		}, true, nil
	case format == "name" && v == verbSummary:
		return nil, false, errors.New("summary prints as text, json, yaml, jsonpath or go-template, not name")
	}
	p, err := o.print.ToPrinter()
	if genericclioptions.IsNoCompatiblePrinterError(err) {
		return nil, false, fmt.Errorf("invalid --output %q: one of %s", format, strings.Join(append([]string{"wide"}, o.print.AllowedFormats()...), ", "))
	}
	if err != nil {
		return nil, false, err
	}
	return func(w io.Writer, objs []v1alpha1.VMObservation) error {
		if v == verbHistory {
			objs = historyOnly(objs, o.sinceTime(time.Now()))
		}
		obj, err := printable(v, single, objs)
		if err != nil {
			return err
		}
		return p.PrintObj(obj, w)
	}, false, nil
}

// printable is what the machine formats print: the summary, the object when
// one name was asked for, else a List of the objects, the document kubectl
// prints for a list.
func printable(v verb, single bool, objs []v1alpha1.VMObservation) (runtime.Object, error) {
	if v == verbSummary {
		return Summarize(objs).unstructured()
	}
	if single && len(objs) == 1 {
		return &objs[0], nil
	}
	list := &unstructured.UnstructuredList{Object: map[string]any{
		"apiVersion": "v1", "kind": "List", "metadata": map[string]any{"resourceVersion": ""},
	}}
	for i := range objs {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&objs[i])
		if err != nil {
			return nil, err
		}
		list.Items = append(list.Items, unstructured.Unstructured{Object: m})
	}
	return list, nil
}

// client connects as the kubeconfig flags say, and returns the namespace
// they name (the context's, unless -n).
func (o *options) client() (client.WithWatch, string, error) {
	namespace, _, err := o.config.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, "", err
	}
	cfg, err := o.config.ToRESTConfig()
	if err != nil {
		return nil, "", err
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, "", err
	}
	return c, namespace, nil
}

// completeNames offers the names of the VMObservations in the namespace the
// flags name, less those already given.
func (o *options) completeNames(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	c, namespace, err := o.client()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	var list v1alpha1.VMObservationList
	if err := c.List(cmd.Context(), &list, client.InNamespace(namespace)); err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	var out []cobra.Completion
	for _, obj := range list.Items {
		if strings.HasPrefix(obj.Name, toComplete) && !slices.Contains(args, obj.Name) {
			out = append(out, obj.Name)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeNamespaces offers the namespaces, for -n.
func (o *options) completeNamespaces(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return o.completeClusterNames(cmd, &corev1.NamespaceList{}, nil, toComplete)
}

// completeClusterNames offers the names of the cluster-scoped objects list
// holds that start with toComplete, less those given already.
func (o *options) completeClusterNames(cmd *cobra.Command, list client.ObjectList, given []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	c, _, err := o.client()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	if err := c.List(cmd.Context(), list); err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	var out []cobra.Completion
	for _, item := range items {
		obj, ok := item.(client.Object)
		if ok && strings.HasPrefix(obj.GetName(), toComplete) && !slices.Contains(given, obj.GetName()) {
			out = append(out, obj.GetName())
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// setKind fills in the TypeMeta the client leaves empty on typed objects,
// which the printers and the JSONPath of --sort-by read.
func setKind(o *v1alpha1.VMObservation) {
	o.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("VMObservation"))
}

// listOptions select the VMObservations in namespace ("" for every
// namespace) that match sel.
func listOptions(namespace string, sel labels.Selector) []client.ListOption {
	var opts []client.ListOption
	if namespace != "" {
		opts = append(opts, client.InNamespace(namespace))
	}
	if !sel.Empty() {
		opts = append(opts, client.MatchingLabelsSelector{Selector: sel})
	}
	return opts
}

// fetch reads the named VMObservations, or all in namespace ("" for every
// namespace) that match sel when names is empty. A missing name is an error
// that says which and where.
func fetch(ctx context.Context, c client.Client, namespace string, names []string, sel labels.Selector) ([]v1alpha1.VMObservation, error) {
	if len(names) == 0 {
		var list v1alpha1.VMObservationList
		if err := c.List(ctx, &list, listOptions(namespace, sel)...); err != nil {
			return nil, fmt.Errorf("listing VMObservations: %w", err)
		}
		for i := range list.Items {
			setKind(&list.Items[i])
		}
		return list.Items, nil
	}
	out := make([]v1alpha1.VMObservation, 0, len(names))
	var missing []string
	for _, n := range names {
		var o v1alpha1.VMObservation
		err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: n}, &o)
		switch {
		case apierrors.IsNotFound(err):
			missing = append(missing, n)
		case err != nil:
			return nil, fmt.Errorf("reading VMObservation %s/%s: %w", namespace, n, err)
		default:
			setKind(&o)
			out = append(out, o)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("VMObservation %q not found in namespace %q", strings.Join(missing, `", "`), namespace)
	}
	return out, nil
}

// watchLoop watches the VMObservations fetch read and calls show with the
// current set after every change, until ctx ends or show fails. When the
// API server ends the watch (as it does every few minutes), it lists and
// watches again.
func watchLoop(ctx context.Context, c client.WithWatch, namespace string, names []string, sel labels.Selector, objs []v1alpha1.VMObservation, show func([]v1alpha1.VMObservation) error) error {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	cur := map[string]v1alpha1.VMObservation{}
	for _, o := range objs {
		cur[o.Namespace+"/"+o.Name] = o
	}
	snapshot := func() []v1alpha1.VMObservation {
		out := make([]v1alpha1.VMObservation, 0, len(cur))
		for _, o := range cur {
			out = append(out, o)
		}
		return out
	}
	opts := listOptions(namespace, sel)
	if len(names) == 1 {
		opts = append(opts, client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", names[0])})
	}
	for first := true; ctx.Err() == nil; first = false {
		if !first {
			// The previous watch ended: list again, so what changed
			// (or was deleted) in between is not missed.
			var list v1alpha1.VMObservationList
			if err := c.List(ctx, &list, opts...); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("listing VMObservations: %w", err)
			}
			next := map[string]v1alpha1.VMObservation{}
			for _, o := range list.Items {
				if len(want) == 0 || want[o.Name] {
					setKind(&o)
					next[o.Namespace+"/"+o.Name] = o
				}
			}
			if !sameVersions(cur, next) {
				cur = next
				if err := show(snapshot()); err != nil {
					return err
				}
			}
		}
		var list v1alpha1.VMObservationList
		w, err := c.Watch(ctx, &list, opts...)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("watching VMObservations: %w", err)
		}
		if err := applyEvents(ctx, w, want, cur, func() error { return show(snapshot()) }); err != nil {
			return err
		}
	}
	return nil
}

// sameVersions says whether a and b hold the same objects at the same
// resource versions.
func sameVersions(a, b map[string]v1alpha1.VMObservation) bool {
	if len(a) != len(b) {
		return false
	}
	for k, o := range a {
		if p, ok := b[k]; !ok || p.ResourceVersion != o.ResourceVersion {
			return false
		}
	}
	return true
}

// applyEvents applies the events of one watch to cur until the watch or ctx ends.
func applyEvents(ctx context.Context, w watch.Interface, want map[string]bool, cur map[string]v1alpha1.VMObservation, changed func() error) error {
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				return nil
			}
			if ev.Type == watch.Error {
				return fmt.Errorf("watching VMObservations: %w", apierrors.FromObject(ev.Object))
			}
			o, ok := ev.Object.(*v1alpha1.VMObservation)
			if !ok || (len(want) > 0 && !want[o.Name]) {
				continue
			}
			key := o.Namespace + "/" + o.Name
			old, had := cur[key]
			switch ev.Type {
			case watch.Deleted:
				if !had {
					continue
				}
				delete(cur, key)
			case watch.Added, watch.Modified:
				if had && old.ResourceVersion == o.ResourceVersion {
					continue // the initial ADDED events repeat what we printed
				}
				setKind(o)
				cur[key] = *o
			default:
				continue
			}
			if err := changed(); err != nil {
				return err
			}
		}
	}
}

// sinceTime is the time --since reaches back to from now; zero for all.
func (o *options) sinceTime(now time.Time) time.Time {
	if o.since <= 0 {
		return time.Time{}
	}
	return now.Add(-o.since)
}

// historyOnly is what history prints in the machine formats: each
// VMObservation with its identity and of its status only status.vm and
// status.history, the entries before since left out.
func historyOnly(objs []v1alpha1.VMObservation, since time.Time) []v1alpha1.VMObservation {
	out := make([]v1alpha1.VMObservation, len(objs))
	for i := range objs {
		o := &objs[i]
		out[i] = v1alpha1.VMObservation{TypeMeta: o.TypeMeta, ObjectMeta: *o.ObjectMeta.DeepCopy(), Spec: o.Spec}
		out[i].ManagedFields = nil
		out[i].Status.VM = o.Status.VM.DeepCopy()
		if h := o.Status.History; h != nil {
			kept := &v1alpha1.History{Dropped: h.Dropped}
			for _, e := range h.Entries {
				if since.IsZero() || !e.Time.Time.Before(since) {
					kept.Entries = append(kept.Entries, e)
				}
			}
			out[i].Status.History = kept
		}
	}
	return out
}
