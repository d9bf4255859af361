package kubectlvmobs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/scheme"
)

// Exit statuses.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

const usage = `kubectl vmobs shows VMObservations: the health of KubeVirt VMs per layer.

Usage:
  kubectl vmobs [get] [-A] [-n NAMESPACE] [NAME...]     a table, like kubectl get vmobs
  kubectl vmobs describe [-A] [-n NAMESPACE] [NAME...]  a tree per VM: layers, evidence, pods, migration, interfaces
  kubectl vmobs NAME                                    the same as describe NAME
  add --watch (-w) to re-render on every change, --no-color for plain text

Flags:
`

// options are the plugin's own flags.
type options struct {
	allNamespaces bool
	watch         bool
	noColor       bool
	help          bool
}

// Run runs the plugin with args (without the program name), writing to
// stdout and stderr, and returns the exit status: 0, 1 on an error (a
// missing VMObservation, an unreachable cluster), 2 on a usage error.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("kubectl-vmobs", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "list VMObservations in all namespaces")
	fs.BoolVarP(&o.watch, "watch", "w", false, "re-render on every change until interrupted")
	fs.BoolVar(&o.noColor, "no-color", false, "never colour the output (the default colours only a terminal; NO_COLOR is honoured too)")
	fs.BoolVarP(&o.help, "help", "h", false, "show this help")
	cf := genericclioptions.NewConfigFlags(true)
	cf.AddFlags(fs)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return exitOK
		}
		fmt.Fprintf(stderr, "error: %v\nSee 'kubectl vmobs --help'.\n", err)
		return exitUsage
	}
	if o.help {
		fmt.Fprint(stdout, usage)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		return exitOK
	}

	verb, names := "get", fs.Args()
	if len(names) > 0 {
		switch names[0] {
		case "get", "list", "ls":
			verb, names = "get", names[1:]
		case "describe", "desc":
			verb, names = "describe", names[1:]
		case "help":
			fmt.Fprint(stdout, usage)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return exitOK
		default:
			verb = "describe"
		}
	}
	if o.allNamespaces && len(names) > 0 {
		fmt.Fprintln(stderr, "error: a name cannot be given with --all-namespaces")
		return exitUsage
	}

	namespace, _, err := cf.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return exitFail
	}
	cfg, err := cf.ToRESTConfig()
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return exitFail
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return exitFail
	}
	if o.allNamespaces {
		namespace = ""
	}

	ropts := RenderOptions{
		AllNamespaces: o.allNamespaces,
		Color:         !o.noColor && os.Getenv("NO_COLOR") == "" && isTerminal(stdout),
	}
	render := func(objs []v1alpha1.VMObservation) string {
		ropts.Now = time.Now()
		if verb == "describe" {
			return RenderDescribe(objs, ropts)
		}
		return RenderTable(objs, ropts)
	}

	objs, err := fetch(ctx, c, namespace, names)
	if err != nil {
		if meta.IsNoMatchError(err) {
			err = fmt.Errorf("the cluster does not serve VMObservations (%s): is the vmobs CRD installed? %w", v1alpha1.GroupVersion, err)
		}
		fmt.Fprintf(stderr, "error: %v\n", err)
		return exitFail
	}
	if len(objs) == 0 && !o.watch {
		if namespace == "" {
			fmt.Fprintln(stderr, "No VMObservations found.")
		} else {
			fmt.Fprintf(stderr, "No VMObservations found in %s namespace.\n", namespace)
		}
		return exitOK
	}
	fmt.Fprint(stdout, render(objs))
	if !o.watch {
		return exitOK
	}
	if err := watchLoop(ctx, c, namespace, names, objs, func(objs []v1alpha1.VMObservation) {
		if ropts.Color {
			// On a terminal, redraw in place.
			fmt.Fprint(stdout, "\x1b[H\x1b[2J")
		} else {
			fmt.Fprintln(stdout)
		}
		fmt.Fprint(stdout, render(objs))
	}); err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return exitFail
	}
	return exitOK
}

// fetch reads the named VMObservations, or all in namespace ("" for every
// namespace) when names is empty. A missing name is an error that says
// which and where.
func fetch(ctx context.Context, c client.Client, namespace string, names []string) ([]v1alpha1.VMObservation, error) {
	if len(names) == 0 {
		var list v1alpha1.VMObservationList
		var opts []client.ListOption
		if namespace != "" {
			opts = append(opts, client.InNamespace(namespace))
		}
		if err := c.List(ctx, &list, opts...); err != nil {
			return nil, fmt.Errorf("listing VMObservations: %w", err)
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
			out = append(out, o)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("VMObservation %q not found in namespace %q", strings.Join(missing, `", "`), namespace)
	}
	return out, nil
}

// watchLoop watches the VMObservations fetch read and calls show with the
// current set after every change, until ctx ends. When the API server ends
// the watch (as it does every few minutes), it lists and watches again.
func watchLoop(ctx context.Context, c client.WithWatch, namespace string, names []string, objs []v1alpha1.VMObservation, show func([]v1alpha1.VMObservation)) error {
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
	opts := []client.ListOption{}
	if namespace != "" {
		opts = append(opts, client.InNamespace(namespace))
	}
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
					next[o.Namespace+"/"+o.Name] = o
				}
			}
			if !sameVersions(cur, next) {
				cur = next
				show(snapshot())
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
		if err := drain(ctx, w, want, cur, func() { show(snapshot()) }); err != nil {
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

// drain applies the events of one watch to cur until the watch or ctx ends.
func drain(ctx context.Context, w watch.Interface, want map[string]bool, cur map[string]v1alpha1.VMObservation, changed func()) error {
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
				cur[key] = *o
			default:
				continue
			}
			changed()
		}
	}
}

// isTerminal says whether w is a character device (a terminal), without a
// dependency on a terminal library.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
