package main

// These tests need no API server. The round trip through a real
// kube-apiserver (envtest) cannot live in this module: controller-runtime
// v0.25 needs k8s.io/apimachinery v0.37, which does not compile against the
// k8s.io/kube-openapi version kubevirt.io/client-go v1.9.0 pins with its
// replace (undefined: util.OpenAPIModelNamer). The schema walk below is the
// offline stand-in: it applies the pruning and null rules of structural
// schemas to the fixtures in testdata/.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

const crdDir = "../../test/crds/kubevirt"

// TestGeneratedFilesAreCurrent regenerates the CRDs into a temporary
// directory and compares them with the committed ones.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	dir := t.TempDir()
	if err := run(dir); err != nil {
		t.Fatal(err)
	}
	for _, c := range crds {
		name := group + "_" + c.plural + ".yaml"
		want, err := os.ReadFile(filepath.Join(crdDir, name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run hack/kubevirt-crds.sh", name)
		}
	}
}

func TestDefinitions(t *testing.T) {
	g := newGenerator()
	if n := len(g.defs); n != 811 {
		t.Errorf("%d OpenAPI definitions, want 811 (is the k8s.io/kube-openapi replace in place?)", n)
	}
	if n := len(g.defs[apiPkg+"VirtualMachineInstanceStatus"].Schema.Properties); n != 27 {
		t.Errorf("VirtualMachineInstanceStatus has %d properties, want 27", n)
	}
}

func TestNames(t *testing.T) {
	want := map[string]struct {
		kind    string
		short   []string
		status  bool
		columns []string
	}{
		"virtualmachineinstances":          {"VirtualMachineInstance", []string{"vmi", "vmis"}, false, []string{"Age", "Phase", "IP", "NodeName", "Ready", "Live-Migratable", "Paused"}},
		"virtualmachines":                  {"VirtualMachine", []string{"vm", "vms"}, true, []string{"Age", "Status", "Ready"}},
		"virtualmachineinstancemigrations": {"VirtualMachineInstanceMigration", []string{"vmim", "vmims"}, true, []string{"Phase", "VMI"}},
	}
	for plural, w := range want {
		crd := loadCRD(t, plural)
		spec := crd["spec"].(map[string]any)
		names := spec["names"].(map[string]any)
		if names["kind"] != w.kind || names["listKind"] != w.kind+"List" || names["singular"] != strings.ToLower(w.kind) ||
			!reflect.DeepEqual(names["shortNames"], toAny(w.short)) || !reflect.DeepEqual(names["categories"], []any{"all"}) {
			t.Errorf("%s: names %v", plural, names)
		}
		if spec["group"] != "kubevirt.io" || spec["scope"] != "Namespaced" {
			t.Errorf("%s: group %v scope %v", plural, spec["group"], spec["scope"])
		}
		versions := spec["versions"].([]any)
		if len(versions) != 2 {
			t.Fatalf("%s: %d versions", plural, len(versions))
		}
		var schemas []any
		for i, name := range []string{"v1", "v1alpha3"} {
			v := versions[i].(map[string]any)
			if v["name"] != name || v["served"] != true || v["storage"] != (name == "v1") {
				t.Errorf("%s: version %d is %v served=%v storage=%v", plural, i, v["name"], v["served"], v["storage"])
			}
			_, hasSub := v["subresources"]
			if hasSub != w.status || (w.status && !reflect.DeepEqual(v["subresources"], map[string]any{"status": map[string]any{}})) {
				t.Errorf("%s %s: subresources %v", plural, name, v["subresources"])
			}
			var cols []string
			for _, c := range v["additionalPrinterColumns"].([]any) {
				cols = append(cols, c.(map[string]any)["name"].(string))
			}
			if !reflect.DeepEqual(cols, w.columns) {
				t.Errorf("%s %s: printer columns %v, want %v", plural, name, cols, w.columns)
			}
			schemas = append(schemas, v["schema"])
		}
		if !reflect.DeepEqual(schemas[0], schemas[1]) {
			t.Errorf("%s: v1 and v1alpha3 schemas differ", plural)
		}
	}
}

// TestFixturesAreKept checks that the fixtures (what KubeVirt writes) would
// be neither pruned nor rejected by the generated schemas.
func TestFixturesAreKept(t *testing.T) {
	for file, f := range map[string]struct {
		plural string
		typed  any
	}{
		"vmi-running.json":    {"virtualmachineinstances", &kubevirtv1.VirtualMachineInstance{}},
		"vm-running.json":     {"virtualmachines", &kubevirtv1.VirtualMachine{}},
		"vmim-succeeded.json": {"virtualmachineinstancemigrations", &kubevirtv1.VirtualMachineInstanceMigration{}},
	} {
		t.Run(file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", file))
			if err != nil {
				t.Fatal(err)
			}
			// Every field of the fixture must be a field of the KubeVirt Go
			// type, so that a typo cannot hide a pruning problem.
			dec := json.NewDecoder(bytes.NewReader(data))
			dec.DisallowUnknownFields()
			if err := dec.Decode(f.typed); err != nil {
				t.Fatalf("fixture does not match the KubeVirt types: %v", err)
			}
			var obj map[string]any
			if err := json.Unmarshal(data, &obj); err != nil {
				t.Fatal(err)
			}
			versions := loadCRD(t, f.plural)["spec"].(map[string]any)["versions"].([]any)
			schema := versions[0].(map[string]any)["schema"].(map[string]any)["openAPIV3Schema"].(map[string]any)
			var problems []string
			walk(schema, obj, "", &problems)
			sort.Strings(problems)
			for _, p := range problems {
				t.Error(p)
			}
		})
	}
}

// walk applies a subset of the API server's rules for structural schemas:
// fields without a schema are pruned, nulls are dropped unless nullable,
// types, enums and required fields are validated.
func walk(s map[string]any, v any, path string, problems *[]string) {
	report := func(format string, args ...any) {
		*problems = append(*problems, fmt.Sprintf("%s: %s", path, fmt.Sprintf(format, args...)))
	}
	if v == nil {
		if s["nullable"] != true {
			report("null would be dropped (not nullable)")
		}
		return
	}
	if s["x-kubernetes-int-or-string"] == true {
		switch v.(type) {
		case string, float64:
		default:
			report("not an int or string: %v", v)
		}
		return
	}
	switch s["type"] {
	case nil:
		if s["x-kubernetes-preserve-unknown-fields"] != true {
			report("schema without type")
		}
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			report("not an object: %v", v)
			return
		}
		if req, ok := s["required"].([]any); ok {
			for _, r := range req {
				if _, ok := m[r.(string)]; !ok {
					report("required field %s missing", r)
				}
			}
		}
		props, _ := s["properties"].(map[string]any)
		addl, _ := s["additionalProperties"].(map[string]any)
		for k, fv := range m {
			switch {
			case path == "" && k == "metadata":
				// The API server handles the root metadata itself.
			case props[k] != nil:
				walk(props[k].(map[string]any), fv, path+"."+k, problems)
			case addl != nil:
				walk(addl, fv, path+"."+k, problems)
			case s["x-kubernetes-preserve-unknown-fields"] == true:
			default:
				report("field %q would be pruned", k)
			}
		}
	case "array":
		a, ok := v.([]any)
		if !ok {
			report("not an array: %v", v)
			return
		}
		for i, item := range a {
			walk(s["items"].(map[string]any), item, fmt.Sprintf("%s[%d]", path, i), problems)
		}
	case "string":
		if _, ok := v.(string); !ok {
			report("not a string: %v", v)
		}
	case "integer":
		if f, ok := v.(float64); !ok || f != float64(int64(f)) {
			report("not an integer: %v", v)
		}
	case "number":
		if _, ok := v.(float64); !ok {
			report("not a number: %v", v)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			report("not a boolean: %v", v)
		}
	}
	if enum, ok := s["enum"].([]any); ok {
		found := false
		for _, e := range enum {
			found = found || e == v
		}
		if !found {
			report("%v is not in enum %v", v, enum)
		}
	}
}

func loadCRD(t *testing.T, plural string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(crdDir, group+"_"+plural+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd map[string]any
	if err := yaml.Unmarshal(data, &crd); err != nil {
		t.Fatal(err)
	}
	return crd
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i := range s {
		out[i] = s[i]
	}
	return out
}
