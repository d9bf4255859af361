package kubectlvmobs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/vmobs/vmobs/api/v1alpha1"
)

// genExamples are gen's examples.
const genExamples = `  kubectl vmobs gen -f vms/ > vmobservations.yaml       # one VMObservation per VM of the directory's manifests
  kubectl vmobs gen -f vm.yaml -f other.yaml -n prod     # VMs without a namespace get prod
  kustomize build overlays/prod | kubectl vmobs gen -f -  # what a kustomization renders`

// newGenCommand is `kubectl vmobs gen`: VirtualMachine manifests in, one
// VMObservation per VM out, with no cluster involved. A VMObservation
// declared next to its VM in Git is what Argo CD and Flux read a VM's
// health from (docs/argocd.md); policy defaults belong in a
// VMObservationPolicy, so the VMObservations stay one line of spec each.
func newGenCommand(o *options, stdout io.Writer) *cobra.Command {
	var files []string
	recursive := false
	cmd := &cobra.Command{
		Use:   "gen -f FILE|DIR|- ...",
		Short: "Write a VMObservation for each VirtualMachine of some manifests (files, directories or stdin), as YAML",
		Long: `kubectl vmobs gen reads VirtualMachine manifests (YAML or JSON, several documents
a file, List kinds too; other kinds are skipped) and writes one VMObservation per
VirtualMachine, with the VM's name and namespace, sorted by namespace and name. A
VM without a namespace gets the one of --namespace, or none. It reads no cluster.`,
		Example:           genExamples,
		Args:              cobra.NoArgs,
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(files) == 0 {
				return usageError{err: errors.New("give the manifests with -f (a file, a directory, or - for stdin)"), command: cmd.CommandPath()}
			}
			ns := ""
			if o.config.Namespace != nil {
				ns = *o.config.Namespace
			}
			var docs []source
			for _, f := range files {
				d, err := readManifests(f, recursive, cmd.InOrStdin())
				if err != nil {
					return err
				}
				docs = append(docs, d...)
			}
			out, err := Generate(docs, ns)
			if err != nil {
				return err
			}
			_, err = stdout.Write(out)
			return err
		},
	}
	cmd.Flags().StringSliceVarP(&files, "filename", "f", nil, "A manifest file, a directory of them (.yaml, .yml, .json), or - for stdin; may be repeated.")
	cmd.Flags().BoolVarP(&recursive, "recursive", "R", false, "Read the directories given with -f recursively.")
	return cmd
}

// source is one file's content and its name, for errors.
type source struct {
	name string
	data []byte
}

// readManifests reads a file, the manifest files of a directory (its
// subdirectories with recursive), or stdin for "-".
func readManifests(path string, recursive bool, stdin io.Reader) ([]source, error) {
	if path == "-" {
		b, err := io.ReadAll(stdin)
		if err != nil {
			return nil, fmt.Errorf("reading stdin: %w", err)
		}
		return []source{{"stdin", b}}, nil
	}
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		b, err := os.ReadFile(path)
		return []source{{path, b}}, err
	}
	var out []source
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != path && !recursive {
				return filepath.SkipDir
			}
			return nil
		}
		switch strings.ToLower(filepath.Ext(p)) {
		case ".yaml", ".yml", ".json":
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out = append(out, source{p, b})
		}
		return nil
	})
	return out, err
}

// Generate returns the VMObservations of the VirtualMachines in the
// manifests as a YAML stream: one per VM, with the VM's name and
// namespace (namespace for a VM that has none), sorted by namespace and
// name. A VM named twice, or no VM at all, is an error.
func Generate(docs []source, namespace string) ([]byte, error) {
	type key struct{ ns, name string }
	seen := map[key]string{}
	for _, d := range docs {
		objs, err := decodeAll(d.data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", d.name, err)
		}
		for _, u := range objs {
			if u.GetKind() != "VirtualMachine" || !strings.HasPrefix(u.GetAPIVersion(), "kubevirt.io/") {
				continue
			}
			if u.GetName() == "" {
				return nil, fmt.Errorf("%s: a VirtualMachine has no metadata.name (generateName cannot be followed)", d.name)
			}
			k := key{u.GetNamespace(), u.GetName()}
			if k.ns == "" {
				k.ns = namespace
			}
			if prev, dup := seen[k]; dup {
				return nil, fmt.Errorf("%s: VirtualMachine %s is also in %s", d.name, strings.TrimPrefix(k.ns+"/"+k.name, "/"), prev)
			}
			seen[k] = d.name
		}
	}
	if len(seen) == 0 {
		return nil, errors.New("no VirtualMachine (kubevirt.io) in the manifests")
	}
	keys := make([]key, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int {
		if c := strings.Compare(a.ns, b.ns); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	var buf bytes.Buffer
	for i, k := range keys {
		meta := map[string]any{"name": k.name}
		if k.ns != "" {
			meta["namespace"] = k.ns
		}
		b, err := yaml.Marshal(map[string]any{
			"apiVersion": v1alpha1.GroupVersion.String(),
			"kind":       "VMObservation",
			"metadata":   meta,
			"spec":       map[string]any{"vmName": k.name},
		})
		if err != nil {
			return nil, err
		}
		if i > 0 {
			buf.WriteString("---\n")
		}
		buf.Write(b)
	}
	return buf.Bytes(), nil
}

// decodeAll decodes a YAML or JSON stream, flattening List kinds.
func decodeAll(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		if m == nil {
			continue // an empty document
		}
		u := &unstructured.Unstructured{Object: m}
		if u.IsList() {
			err := u.EachListItem(func(o runtime.Object) error {
				if item, ok := o.(*unstructured.Unstructured); ok {
					out = append(out, item)
				}
				return nil
			})
			if err != nil {
				return nil, err
			}
			continue
		}
		out = append(out, u)
	}
}
