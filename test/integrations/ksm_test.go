package integrations

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/vmobs/vmobs/internal/metrics"
	"github.com/vmobs/vmobs/test/support"
)

// These checks need no binary; ksm_real_test.go runs the real
// kube-state-metrics (built by `make kube-state-metrics` in its own tool
// module, so its dependencies stay out of ours) on the same config. These
// types mirror the fields of
// pkg/customresourcestate (config.go, config_metrics_types.go) as its docs
// describe them, and the config is decoded strictly into them: a misspelt
// or misplaced field fails here as it would be ignored there.
type ksmConfig struct {
	Kind string `json:"kind"`
	Spec struct {
		Resources []ksmResource `json:"resources"`
	} `json:"spec"`
}

type ksmLabels struct {
	CommonLabels   map[string]string   `json:"commonLabels,omitempty"`
	LabelsFromPath map[string][]string `json:"labelsFromPath,omitempty"`
}

type ksmResource struct {
	ksmLabels
	MetricNamePrefix *string `json:"metricNamePrefix,omitempty"`
	GroupVersionKind struct {
		Group   string `json:"group"`
		Version string `json:"version"`
		Kind    string `json:"kind"`
	} `json:"groupVersionKind"`
	ResourcePlural string         `json:"resourcePlural,omitempty"`
	Metrics        []ksmGenerator `json:"metrics"`
	ErrorLogV      int            `json:"errorLogV,omitempty"`
}

type ksmGenerator struct {
	ksmLabels
	Name      string    `json:"name"`
	Help      string    `json:"help"`
	Each      ksmMetric `json:"each"`
	ErrorLogV int       `json:"errorLogV,omitempty"`
}

type ksmMeta struct {
	LabelsFromPath map[string][]string `json:"labelsFromPath,omitempty"`
	Path           []string            `json:"path"`
}

type ksmMetric struct {
	Type  string `json:"type"`
	Gauge *struct {
		ksmMeta
		LabelFromKey string   `json:"labelFromKey,omitempty"`
		ValueFrom    []string `json:"valueFrom,omitempty"`
		ValueType    string   `json:"valueType,omitempty"`
		NilIsZero    bool     `json:"nilIsZero,omitempty"`
	} `json:"gauge,omitempty"`
	StateSet *struct {
		ksmMeta
		List      []string `json:"list"`
		LabelName string   `json:"labelName"`
		ValueFrom []string `json:"valueFrom,omitempty"`
	} `json:"stateSet,omitempty"`
	Info *struct {
		ksmMeta
		LabelFromKey string `json:"labelFromKey,omitempty"`
	} `json:"info,omitempty"`
}

// schemaAt walks an OpenAPI schema along a kube-state-metrics path: a plain
// part is an object property, "[key=value]" selects an item of a list.
func schemaAt(s *apiextensionsv1.JSONSchemaProps, path []string) (*apiextensionsv1.JSONSchemaProps, string) {
	for i, p := range path {
		if strings.HasPrefix(p, "[") && strings.HasSuffix(p, "]") {
			if s.Type != "array" || s.Items == nil || s.Items.Schema == nil {
				return nil, strings.Join(path[:i+1], ".") + " selects from a non-list"
			}
			key, _, ok := strings.Cut(p[1:len(p)-1], "=")
			if !ok {
				return nil, p + " is not a [key=value] lookup"
			}
			s = s.Items.Schema
			if _, ok := s.Properties[key]; !ok {
				return nil, strings.Join(path[:i+1], ".") + ": list items have no " + key
			}
			continue
		}
		next, ok := s.Properties[p]
		if !ok {
			return nil, strings.Join(path[:i+1], ".") + " is not in the schema"
		}
		s = &next
	}
	return s, ""
}

// metadataSchema stands in for metadata, which a CRD's schema leaves open.
var metadataSchema = apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
	"name": {Type: "string"}, "namespace": {Type: "string"}, "generation": {Type: "integer"}, "uid": {Type: "string"},
}}

// mustSchemaAt is schemaAt that fails the test on a path the schema lacks.
func mustSchemaAt(t *testing.T, s *apiextensionsv1.JSONSchemaProps, path []string) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	got, bad := schemaAt(s, path)
	if bad != "" {
		t.Fatal(bad)
	}
	return got
}

// countTrue counts the conditions that hold.
func countTrue(conds ...bool) int {
	n := 0
	for _, c := range conds {
		if c {
			n++
		}
	}
	return n
}

func TestKubeStateMetricsConfig(t *testing.T) {
	root := support.RepoRoot(t)
	raw, err := os.ReadFile(filepath.Join(root, "config", "kube-state-metrics", "vmobservation-crs.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg ksmConfig
	if err := yaml.UnmarshalStrict(raw, &cfg); err != nil {
		t.Fatalf("vmobservation-crs.yaml does not decode into kube-state-metrics' config shape: %v", err)
	}
	if cfg.Kind != "CustomResourceStateMetrics" || len(cfg.Spec.Resources) != 1 {
		t.Fatalf("want kind CustomResourceStateMetrics with one resource, got %q with %d", cfg.Kind, len(cfg.Spec.Resources))
	}
	res := cfg.Spec.Resources[0]

	crdRaw, err := os.ReadFile(filepath.Join(root, "config", "crd", "bases", "observability.vmobs.io_vmobservations.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(crdRaw, crd); err != nil {
		t.Fatal(err)
	}
	gvk := res.GroupVersionKind
	if gvk.Group != crd.Spec.Group || gvk.Kind != crd.Spec.Names.Kind {
		t.Fatalf("groupVersionKind %+v does not name the CRD %s %s", gvk, crd.Spec.Group, crd.Spec.Names.Kind)
	}
	if res.ResourcePlural != "" && res.ResourcePlural != crd.Spec.Names.Plural {
		t.Errorf("resourcePlural %q, the CRD says %q", res.ResourcePlural, crd.Spec.Names.Plural)
	}
	var schema *apiextensionsv1.JSONSchemaProps
	for _, v := range crd.Spec.Versions {
		if v.Name == gvk.Version && v.Served {
			schema = v.Schema.OpenAPIV3Schema.DeepCopy()
		}
	}
	if schema == nil {
		t.Fatalf("the CRD serves no version %q", gvk.Version)
	}
	schema.Properties["metadata"] = metadataSchema
	verdictEnum := func(s *apiextensionsv1.JSONSchemaProps) []string {
		var out []string
		for _, e := range s.Enum {
			var v string
			_ = json.Unmarshal(e.Raw, &v)
			out = append(out, v)
		}
		return out
	}
	isTime := func(s *apiextensionsv1.JSONSchemaProps) bool { return s.Type == "string" && s.Format == "date-time" }
	isNumber := func(s *apiextensionsv1.JSONSchemaProps) bool {
		return s.Type == "integer" || s.Type == "number" || s.Type == "boolean" || isTime(s) ||
			(s.Type == "string" && len(s.Enum) > 0) // condition status True/False/Unknown
	}

	checkLabels := func(t *testing.T, base *apiextensionsv1.JSONSchemaProps, where string, l map[string][]string) {
		for name, p := range l {
			s, bad := schemaAt(base, p)
			if bad != "" {
				t.Errorf("%s label %s: %s", where, name, bad)
			} else if s.Type != "string" && s.Type != "integer" {
				t.Errorf("%s label %s reads a %s", where, name, s.Type)
			}
		}
	}
	checkLabels(t, schema, "resource", res.LabelsFromPath)

	names := map[string]bool{}
	stateSetLayers := map[string]bool{}
	gauges := map[string]bool{}
	for _, m := range res.Metrics {
		t.Run(m.Name, func(t *testing.T) {
			if names[m.Name] {
				t.Error("duplicate metric name: kube-state-metrics would emit two families with one name")
			}
			names[m.Name] = true
			if m.Help == "" {
				t.Error("no help")
			}
			// A metric has exactly one body, the one its type names.
			if n := countTrue(m.Each.StateSet != nil, m.Each.Gauge != nil, m.Each.Info != nil); n != 1 {
				t.Errorf("%d metric bodies", n)
			}
			switch strings.ToLower(m.Each.Type) {
			case "stateset":
				st := m.Each.StateSet
				if st == nil {
					t.Fatal("type StateSet without stateSet")
				}
				s := mustSchemaAt(t, schema, append(slices.Clone(st.Path), st.ValueFrom...))
				if enum := verdictEnum(s); !slices.Equal(enum, st.List) {
					t.Errorf("list %v differs from the schema's enum %v", st.List, enum)
				}
				if !slices.Equal(st.List, verdictStrings()) {
					t.Errorf("list %v differs from vmobs' verdicts %v", st.List, verdictStrings())
				}
				if len(st.Path) == 4 && st.Path[1] == "layers" {
					stateSetLayers[st.Path[2]] = true
					if m.CommonLabels["layer"] != st.Path[2] {
						t.Errorf("layer label %q for layer %s", m.CommonLabels["layer"], st.Path[2])
					}
				}
			case "gauge":
				g := m.Each.Gauge
				if g == nil {
					t.Fatal("type Gauge without gauge")
				}
				s := mustSchemaAt(t, schema, g.Path)
				gauges[strings.Join(append(slices.Clone(g.Path), g.ValueFrom...), ".")] = true
				var elems []*apiextensionsv1.JSONSchemaProps
				switch {
				case s.Type == "object" && g.LabelFromKey != "":
					// One series per key of the object (the layers).
					for k := range s.Properties {
						p := s.Properties[k]
						elems = append(elems, &p)
					}
				case s.Type == "array":
					elems = append(elems, s.Items.Schema)
				default:
					elems = append(elems, s)
				}
				for _, e := range elems {
					v, bad := schemaAt(e, g.ValueFrom)
					if bad != "" {
						t.Fatalf("valueFrom: %s", bad)
					}
					if !isNumber(v) {
						t.Errorf("valueFrom %v reads a %s %s, which kube-state-metrics cannot turn into a number", g.ValueFrom, v.Type, v.Format)
					}
					checkLabels(t, e, "metric", g.LabelsFromPath)
				}
			case "info":
				in := m.Each.Info
				if in == nil {
					t.Fatal("type Info without info")
				}
				s := mustSchemaAt(t, schema, in.Path)
				checkLabels(t, s, "metric", in.LabelsFromPath)
			default:
				t.Fatalf("unknown type %q", m.Each.Type)
			}
		})
	}
	for _, l := range []string{"controlPlane", "node", "guest"} {
		if !stateSetLayers[l] {
			t.Errorf("no verdict StateSet for layer %s", l)
		}
	}
	for _, g := range []string{"status.observedGeneration", "status.layers.evidenceTime", "status.layers.staleAt"} {
		if !gauges[g] {
			t.Errorf("no gauge on %s (have %v)", g, gauges)
		}
	}
}

func verdictStrings() []string {
	var out []string
	for _, v := range metrics.Verdicts {
		out = append(out, string(v))
	}
	return out
}

// TestKubeStateMetricsPathsOnEngineOutput reads each metric's path on the
// VMObservations the engine produced: every path of the config resolves on
// a running VM's status.
func TestKubeStateMetricsPathsOnEngineOutput(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(support.RepoRoot(t), "config", "kube-state-metrics", "vmobservation-crs.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg ksmConfig
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	var healthy *scenario
	all := scenarios(t)
	for _, sc := range all {
		if sc.name == "healthy" {
			healthy = &sc
		}
	}
	obj := toUnstructured(t, healthy.obs).Object
	get := func(v any, path []string) any {
		for _, p := range path {
			if strings.HasPrefix(p, "[") {
				key, val, _ := strings.Cut(p[1:len(p)-1], "=")
				list, _ := v.([]any)
				v = nil
				for _, it := range list {
					if m, ok := it.(map[string]any); ok && m[key] == val {
						v = m
					}
				}
				continue
			}
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[p]
		}
		return v
	}
	for _, m := range cfg.Spec.Resources[0].Metrics {
		var path, valueFrom []string
		switch {
		case m.Each.Gauge != nil:
			path, valueFrom = m.Each.Gauge.Path, m.Each.Gauge.ValueFrom
		case m.Each.StateSet != nil:
			path, valueFrom = m.Each.StateSet.Path, m.Each.StateSet.ValueFrom
		case m.Each.Info != nil:
			path = m.Each.Info.Path
		}
		v := get(obj, path)
		if v == nil {
			t.Errorf("%s: %v is empty on a running VM's VMObservation", m.Name, path)
			continue
		}
		if m.Each.Gauge != nil && m.Each.Gauge.LabelFromKey != "" {
			// Per layer: a layer may lack the field (a healthy VM has
			// no staleAt: none of its verdicts has a fixed deadline), but
			// some layer of some scenario has it.
			found := false
			for _, sc := range all {
				layers, _ := get(toUnstructured(t, sc.obs).Object, path).(map[string]any)
				for _, e := range layers {
					found = found || get(e, valueFrom) != nil
				}
			}
			if !found {
				t.Errorf("%s: no layer of any scenario has %v", m.Name, valueFrom)
			}
			if m.ErrorLogV == 0 {
				t.Errorf("%s: a missing field in one layer would log an error at every scrape: set errorLogV", m.Name)
			}
		}
	}
}
