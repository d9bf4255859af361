package v1alpha1

import (
	"os"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// TestEveryFieldIsDescribed: every field of the CRD's schema carries a
// description (the Go comment controller-gen turns into one), so that
// `kubectl explain vmobservation.status` (and nodeobservation.status)
// documents the whole status.
func TestEveryFieldIsDescribed(t *testing.T) {
	for _, name := range []string{"vmobservations", "nodeobservations", "vmincidents"} {
		t.Run(name, func(t *testing.T) {
			everyFieldIsDescribed(t, "../../config/crd/bases/observability.vmobs.io_"+name+".yaml")
		})
	}
}

func everyFieldIsDescribed(t *testing.T, path string) {
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		t.Fatal(err)
	}
	var walk func(path string, s *apiextensionsv1.JSONSchemaProps)
	walk = func(path string, s *apiextensionsv1.JSONSchemaProps) {
		for name, p := range s.Properties {
			field := path + "." + name
			if p.Description == "" && field != ".metadata" {
				t.Errorf("%s has no description: add a comment to its Go field", field)
			}
			walk(field, &p)
			if p.Items != nil && p.Items.Schema != nil {
				walk(field+"[]", p.Items.Schema)
			}
		}
	}
	for _, v := range crd.Spec.Versions {
		walk("", v.Schema.OpenAPIV3Schema)
	}
}
