package packaging

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/internal/release"
	"github.com/vmobs/vmobs/internal/testenv"
	"github.com/vmobs/vmobs/test/support"
)

// TestInstallYAMLOnAPIServer renders dist/install.yaml as `make release
// VERSION=v0.2.0` does and applies it with the real kubectl, as its header
// tells users to, on a real kube-apiserver: every object in it is accepted
// and there, the manager's image is pinned to the release, and the
// namespace's Pod Security labels admit the manager's pod and refuse a
// looser one.
func TestInstallYAMLOnAPIServer(t *testing.T) {
	const version = "v0.2.0"
	b, err := release.RenderInstall(filepath.Join(support.RepoRoot(t), "config"), release.Install{Version: version, ImageRepo: release.ImageName})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "install.yaml")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatalf("install.yaml does not parse: %v", err)
		}
		if m != nil {
			objs = append(objs, &unstructured.Unstructured{Object: m})
		}
	}
	if len(objs) < 9 {
		t.Fatalf("install.yaml has %d objects", len(objs))
	}

	env, admin := testenv.StartForTest(t, testenv.Options{})
	ctx := context.Background()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.Kubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	out, err := testenv.Kubectl(kubeconfig, "apply", "-f", path)
	if err != nil {
		t.Fatalf("kubectl apply -f install.yaml: %v\n%s", err, out)
	}
	t.Logf("kubectl apply -f install.yaml:\n%s", out)

	// Every object is on the server, with the release's version label.
	for _, o := range objs {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(o.GroupVersionKind())
		if err := admin.Get(ctx, client.ObjectKeyFromObject(o), got); err != nil {
			t.Errorf("%s %s/%s is not on the API server: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
			continue
		}
		if v := got.GetLabels()["app.kubernetes.io/version"]; v != version {
			t.Errorf("%s %s: app.kubernetes.io/version %q on the server", o.GetKind(), o.GetName(), v)
		}
	}

	ns := &corev1.Namespace{}
	if err := admin.Get(ctx, client.ObjectKey{Name: support.SystemNS}, ns); err != nil {
		t.Fatal(err)
	}
	if ns.Labels["pod-security.kubernetes.io/enforce"] != "restricted" || ns.Labels["pod-security.kubernetes.io/enforce-version"] != "latest" {
		t.Errorf("namespace %s labels %v: want it to enforce the restricted Pod Security Standard, latest version", support.SystemNS, ns.Labels)
	}
	dep := &appsv1.Deployment{}
	if err := admin.Get(ctx, client.ObjectKey{Namespace: support.SystemNS, Name: "vmobs-controller-manager"}, dep); err != nil {
		t.Fatal(err)
	}
	if c := dep.Spec.Template.Spec.Containers; len(c) != 1 || c[0].Image != release.ImageName+":"+version {
		t.Fatalf("the manager's containers %+v: want one, image %s:%s", c, release.ImageName, version)
	}

	// The pod the Deployment's ReplicaSet would create is admitted under
	// the namespace's restricted Pod Security Standard.
	testPodSecurity(ctx, t, admin, dep)
}
