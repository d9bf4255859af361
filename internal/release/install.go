// Package release builds what a vmobs release publishes, from the
// repository and the binaries `make release` (hack/release.sh) compiles:
// the install manifest, the manager's image as an OCI layout built without
// a container engine, and the kubectl plugin's krew archives and manifest.
// hack/release/main.go runs it; each piece is a function the tests call on
// a temporary directory.
package release

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// digestRE is an OCI digest as the index's descriptor has it.
var digestRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// ImageName is the manager's image as config/manager names it; a release
// replaces it with the release's repository and tag.
const ImageName = "ghcr.io/vmobs/vmobs"

// Install says how to render the install manifest.
type Install struct {
	// Version is the release, v0.2.0: the image's tag and the
	// app.kubernetes.io/version label of every object.
	Version string
	// ImageRepo is the repository the image is pushed to, ghcr.io/vmobs/vmobs.
	ImageRepo string
	// Digest, sha256:..., is the image index's digest (the one `release
	// image` writes to -digest-file): the manifest then names the image by
	// tag and digest, so a tag moved on the registry cannot change what
	// runs. Empty pins the tag alone.
	Digest string
}

// Image is the manager's image reference in the manifest.
func (i Install) Image() string {
	if i.Digest != "" {
		return i.ImageRepo + ":" + i.Version + "@" + i.Digest
	}
	return i.ImageRepo + ":" + i.Version
}

// RenderInstall renders config/default (under configDir, the repository's
// config/) with kustomize, as `kubectl apply -k config/default` would,
// through an overlay that pins the manager's image to the release and
// labels every object with the version. The overlay lives next to a copy
// of config/ in memory, so the repository is never written to.
func RenderInstall(configDir string, in Install) ([]byte, error) {
	if in.Version == "" || in.ImageRepo == "" {
		return nil, fmt.Errorf("the version (%q) and the image repository (%q) must be set", in.Version, in.ImageRepo)
	}
	if in.Digest != "" && !digestRE.MatchString(in.Digest) {
		return nil, fmt.Errorf("the image digest %q is not sha256:<64 hex digits>", in.Digest)
	}
	digest := ""
	if in.Digest != "" {
		digest = "\n  digest: " + in.Digest
	}
	mem := filesys.MakeFsInMemory()
	err := filepath.WalkDir(configDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(configDir, path)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return mem.WriteFile(filepath.Join("/config", rel), data)
	})
	if err != nil {
		return nil, err
	}
	overlay := fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- ../config/default
images:
- name: %s
  newName: %s
  newTag: %s%s
labels:
- pairs:
    app.kubernetes.io/version: %s
`, ImageName, in.ImageRepo, in.Version, digest, in.Version)
	if err := mem.WriteFile("/release/kustomization.yaml", []byte(overlay)); err != nil {
		return nil, err
	}
	// The order `kustomize build` prints (legacy): the Namespace and the
	// CRD before what goes in them, so a single `kubectl apply -f` of the
	// file creates the namespace before its ServiceAccount and Role. The
	// library's default keeps the order of config/, which does not.
	opts := krusty.MakeDefaultOptions()
	opts.Reorder = krusty.ReorderOptionLegacy
	resMap, err := krusty.MakeKustomizer(opts).Run(mem, "/release")
	if err != nil {
		return nil, fmt.Errorf("kustomize build config/default: %w", err)
	}
	body, err := resMap.AsYaml()
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# vmobs %s: the VMObservation CRD, the controller's RBAC and the controller\n", in.Version)
	fmt.Fprintf(&b, "# (image %s) in the vmobs-system namespace, under the restricted Pod\n", in.Image())
	fmt.Fprintf(&b, "# Security Standard. Rendered from config/default by `make release`.\n")
	fmt.Fprintf(&b, "#   kubectl apply -f install.yaml\n")
	b.Write(body)
	return b.Bytes(), nil
}
