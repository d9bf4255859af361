package release

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
)

// configDir is the repository's config/, which the release renders.
const configDir = "../../config"

func decodeAll(t *testing.T, b []byte) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if err.Error() == "EOF" {
				return objs
			}
			t.Fatal(err)
		}
		if m != nil {
			objs = append(objs, &unstructured.Unstructured{Object: m})
		}
	}
}

// TestRenderInstall renders install.yaml into a temporary directory, as
// `make release` does into dist/, and reads it back.
func TestRenderInstall(t *testing.T) {
	in := Install{Version: "v0.2.0", ImageRepo: "registry.example/team/vmobs"}
	b, err := RenderInstall(configDir, in)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "install.yaml")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	b, err = os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), "# vmobs v0.2.0: ") {
		t.Errorf("no header naming the release:\n%.300s", b)
	}
	objs := decodeAll(t, b)

	kinds := map[string]int{}
	var images []string
	for _, o := range objs {
		kinds[o.GetKind()]++
		if v := o.GetLabels()["app.kubernetes.io/version"]; v != "v0.2.0" {
			t.Errorf("%s/%s: app.kubernetes.io/version %q", o.GetKind(), o.GetName(), v)
		}
		switch o.GetKind() {
		case "Namespace":
			l := o.GetLabels()
			if o.GetName() != "vmobs-system" || l["pod-security.kubernetes.io/enforce"] != "restricted" {
				t.Errorf("namespace %s, labels %v: want vmobs-system enforcing the restricted Pod Security Standard", o.GetName(), l)
			}
		case "Deployment":
			containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			for _, c := range containers {
				images = append(images, c.(map[string]any)["image"].(string))
			}
			// The version label stays off the pod template and the
			// selector, which cannot change between releases.
			sel, _, _ := unstructured.NestedStringMap(o.Object, "spec", "selector", "matchLabels")
			if _, ok := sel["app.kubernetes.io/version"]; ok {
				t.Errorf("the Deployment's selector has the version: %v", sel)
			}
		}
	}
	if len(images) != 1 || images[0] != "registry.example/team/vmobs:v0.2.0" {
		t.Errorf("manager images %q, want [registry.example/team/vmobs:v0.2.0]", images)
	}
	for _, k := range []string{"CustomResourceDefinition", "Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Deployment", "Service"} {
		if kinds[k] == 0 {
			t.Errorf("no %s in install.yaml (have %v)", k, kinds)
		}
	}
	if strings.Contains(string(b), ImageName+":latest") {
		t.Error("install.yaml still names the latest image")
	}
}

func TestRenderInstallErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		dir string
		in  Install
	}{
		"no version":    {configDir, Install{ImageRepo: "ghcr.io/vmobs/vmobs"}},
		"no repository": {configDir, Install{Version: "v0.2.0"}},
		"no config":     {t.TempDir(), Install{Version: "v0.2.0", ImageRepo: "ghcr.io/vmobs/vmobs"}},
	} {
		if _, err := RenderInstall(tc.dir, tc.in); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestRenderInstallPinsDigest: with the index's digest, the manager's image
// is named by digest, so what runs is what was built whatever the tag
// becomes on the registry; a malformed digest is refused.
func TestRenderInstallPinsDigest(t *testing.T) {
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	in := Install{Version: "v0.2.0", ImageRepo: "registry.example/team/vmobs", Digest: digest}
	b, err := RenderInstall(configDir, in)
	if err != nil {
		t.Fatal(err)
	}
	var images []string
	for _, o := range decodeAll(t, b) {
		if o.GetKind() != "Deployment" {
			continue
		}
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		for _, c := range containers {
			images = append(images, c.(map[string]any)["image"].(string))
		}
	}
	want := "registry.example/team/vmobs:v0.2.0@" + digest
	if len(images) != 1 || images[0] != want {
		t.Errorf("manager images %q, want [%s]", images, want)
	}
	if !strings.Contains(string(b), "(image "+want+")") {
		t.Errorf("the header does not name %s:\n%.300s", want, b)
	}
	in.Digest = "sha256:latest"
	if _, err := RenderInstall(configDir, in); err == nil || !strings.Contains(err.Error(), "sha256:latest") {
		t.Errorf("digest sha256:latest: err %v, want one naming it", err)
	}
}
