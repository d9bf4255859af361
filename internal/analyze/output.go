package analyze

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"

	"github.com/vmobs/vmobs/api/v1alpha1"
)

// Output formats.
const (
	FormatTable = "table"
	FormatJSON  = "json"
	FormatYAML  = "yaml"
	// FormatDescribe is the describe tree of `kubectl vmobs describe`,
	// its history included, drawn by Config.Describe.
	FormatDescribe = "describe"
)

// tableColumns are the printer columns of `kubectl get vmobs -A -o wide`,
// without AGE (a dump has no creation time for an object it never held).
var tableColumns = []string{
	"NAMESPACE", "NAME", "VERDICT", "CONTROL-PLANE", "NODE", "GUEST", "REASON",
	"PHASE", "NODE-NAME", "MIGRATION", "AGENT",
}

// none is what kubectl prints for a column whose field is absent.
const none = "<none>"

// WriteTable writes obs as `kubectl get vmobs -A -o wide` would.
func WriteTable(w io.Writer, obs []v1alpha1.VMObservation) error {
	// kubectl's own tabwriter settings.
	tw := tabwriter.NewWriter(w, 10, 4, 3, ' ', 0)
	fmt.Fprintln(tw, strings.Join(tableColumns, "\t"))
	for i := range obs {
		fmt.Fprintln(tw, strings.Join(tableRow(&obs[i]), "\t"))
	}
	return tw.Flush()
}

func tableRow(o *v1alpha1.VMObservation) []string {
	st := &o.Status
	var cp, node, guest string
	if l := st.Layers; l != nil {
		cp, node, guest = string(l.ControlPlane.Verdict), string(l.Node.Verdict), string(l.Guest.Verdict)
	}
	var phase, nodeName, migration, agent string
	if st.VMI != nil {
		phase, nodeName = st.VMI.Phase, st.VMI.NodeName
	}
	if st.Migration != nil {
		migration = st.Migration.Phase
	}
	if st.Guest != nil {
		agent = strconv.FormatBool(st.Guest.AgentConnected)
	}
	row := []string{
		o.Namespace, o.Name, string(st.Verdict), cp, node, guest, st.Reason,
		phase, nodeName, migration, agent,
	}
	for i, c := range row {
		row[i] = cell(c)
	}
	return row
}

// cell keeps a value on its line and in its column: a dump may hold
// anything.
func cell(s string) string {
	if s == "" {
		return none
	}
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

// vList is a v1 List, as `kubectl get -o yaml` prints one.
type vList struct {
	APIVersion string                   `json:"apiVersion"`
	Items      []v1alpha1.VMObservation `json:"items"`
	Kind       string                   `json:"kind"`
	Metadata   listMeta                 `json:"metadata"`
}

type listMeta struct {
	ResourceVersion string `json:"resourceVersion"`
}

// GetObjectKind and DeepCopyObject make vList a runtime.Object for the
// apimachinery YAML serializer.
func (l *vList) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

func (l *vList) DeepCopyObject() runtime.Object {
	c := *l
	c.Items = make([]v1alpha1.VMObservation, len(l.Items))
	for i := range l.Items {
		l.Items[i].DeepCopyInto(&c.Items[i])
	}
	return &c
}

// yamlSerializer writes JSON-compatible YAML (sigs.k8s.io/yaml), as kubectl.
var yamlSerializer = kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, nil, nil, kjson.SerializerOptions{Yaml: true})

// WriteList writes obs as a v1 List in format FormatJSON or FormatYAML.
func WriteList(w io.Writer, obs []v1alpha1.VMObservation, format string) error {
	l := vList{APIVersion: "v1", Kind: "List", Items: obs}
	if l.Items == nil {
		l.Items = []v1alpha1.VMObservation{}
	}
	switch format {
	case FormatJSON:
		b, err := json.MarshalIndent(l, "", "    ")
		if err != nil {
			return err
		}
		_, err = w.Write(append(b, '\n'))
		return err
	case FormatYAML:
		return yamlSerializer.Encode(&l, w)
	}
	return fmt.Errorf("unknown output format %q", format)
}
