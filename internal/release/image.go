package release

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image runs vmobs as distroless's nonroot user: the same UID and GID,
// so that runAsNonRoot holds without a runAsUser in the pod.
const (
	nonrootUID = 65532
	// ImageUser is the image's USER.
	ImageUser = "65532:65532"
	// ImageBinary is where the image holds vmobs.
	ImageBinary = "/vmobs"
)

// ImageEntrypoint is the image's ENTRYPOINT: the manager, as
// config/manager's command.
var ImageEntrypoint = []string{ImageBinary, "manager"}

// Image says what goes into the manager's image.
type Image struct {
	// Version (v0.2.0), Revision (the commit) and Source (the repository's
	// URL) become the org.opencontainers.image.* labels and annotations.
	Version, Revision, Source string
	// Created is the time of every file and of the config: the commit's
	// time, so that the same commit builds the same digests.
	Created time.Time
	// Binaries are the static vmobs binaries, one per platform.
	Binaries []PlatformBinary
	// License is a file copied to /licenses/LICENSE; empty leaves it out.
	License string
}

// PlatformBinary is a binary built for one OS and architecture.
type PlatformBinary struct {
	OS, Arch string
	Path     string
}

// Labels are the image's OCI labels (org.opencontainers.image.*).
func (c Image) Labels() map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":       "vmobs",
		"org.opencontainers.image.description": "vmobs: one VMObservation per KubeVirt VM, with a verdict per layer",
		"org.opencontainers.image.version":     c.Version,
		"org.opencontainers.image.revision":    c.Revision,
		"org.opencontainers.image.source":      c.Source,
		"org.opencontainers.image.licenses":    "Apache-2.0",
		"org.opencontainers.image.created":     c.Created.UTC().Format(time.RFC3339),
	}
}

// BuildImage builds the multi-platform image, no container engine needed:
// for each binary, an image of two layers, the distroless-like base
// (/etc/passwd and /etc/group naming the nonroot user, its home, /tmp,
// the license) and the binary, with no shell or anything else to run. The
// manifests and config use OCI media types.
func BuildImage(c Image) (v1.ImageIndex, error) {
	if len(c.Binaries) == 0 {
		return nil, errors.New("no binaries to put in the image")
	}
	base, err := baseLayer(c)
	if err != nil {
		return nil, err
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, b := range c.Binaries {
		bin, err := binaryLayer(b.Path, c.Created)
		if err != nil {
			return nil, err
		}
		img, err := mutate.AppendLayers(empty.Image, base, bin)
		if err != nil {
			return nil, err
		}
		platform := v1.Platform{OS: b.OS, Architecture: b.Arch, Variant: variant(b.Arch)}
		cfg, err := img.ConfigFile()
		if err != nil {
			return nil, err
		}
		cfg = cfg.DeepCopy()
		cfg.OS, cfg.Architecture, cfg.Variant = platform.OS, platform.Architecture, platform.Variant
		cfg.Created = v1.Time{Time: c.Created.UTC()}
		cfg.Author = "The vmobs Authors"
		cfg.Config = v1.Config{
			Entrypoint: ImageEntrypoint,
			User:       ImageUser,
			WorkingDir: "/",
			Labels:     c.Labels(),
		}
		img, err = mutate.ConfigFile(img, cfg)
		if err != nil {
			return nil, err
		}
		img = mutate.MediaType(img, types.OCIManifestSchema1)
		img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
		img = mutate.Annotations(img, c.Labels()).(v1.Image)
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &platform}})
	}
	return mutate.Annotations(idx, c.Labels()).(v1.ImageIndex), nil
}

// variant is the CPU variant registries and runtimes expect next to the
// architecture: v8 for arm64, as Docker's and distroless's images say.
func variant(arch string) string {
	if arch == "arm64" {
		return "v8"
	}
	return ""
}

// WriteLayout writes the image into dir as an OCI image layout whose
// index.json names it ref (org.opencontainers.image.ref.name), the form
// `skopeo copy oci:DIR:REF`, `crane push DIR` and `oras cp --from-oci-layout
// DIR:REF` read. dir must not exist yet or be empty.
func WriteLayout(dir, ref string, idx v1.ImageIndex) error {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return fmt.Errorf("%s is not empty", dir)
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	return p.AppendIndex(idx, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": ref}))
}

// WriteDockerTar writes the index's one image into w as a `docker save`
// archive tagged tag, the form every Docker engine, `podman load` and `kind
// load image-archive` read (`make image`). An index of several platforms
// has no such form: it fails.
func WriteDockerTar(w io.Writer, tag string, idx v1.ImageIndex) error {
	t, err := name.NewTag(tag)
	if err != nil {
		return err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	if len(im.Manifests) != 1 {
		return fmt.Errorf("a docker archive holds one platform; the image has %d", len(im.Manifests))
	}
	img, err := idx.Image(im.Manifests[0].Digest)
	if err != nil {
		return err
	}
	return tarball.Write(t, img, w)
}

// baseLayer is what distroless static's nonroot image gives a static binary,
// less the CA bundle and time zones vmobs does not read.
func baseLayer(c Image) (v1.Layer, error) {
	files := []tarFile{
		{name: "etc/", mode: 0o755},
		{name: "etc/passwd", mode: 0o644, data: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{name: "etc/group", mode: 0o644, data: []byte("root:x:0:\nnonroot:x:65532:\n")},
		{name: "home/", mode: 0o755},
		{name: "home/nonroot/", mode: 0o700, uid: nonrootUID},
		{name: "tmp/", mode: 0o1777},
	}
	if c.License != "" {
		lic, err := os.ReadFile(c.License)
		if err != nil {
			return nil, err
		}
		files = append(files, tarFile{name: "licenses/", mode: 0o755}, tarFile{name: "licenses/LICENSE", mode: 0o644, data: lic})
	}
	return layer(files, c.Created)
}

func binaryLayer(path string, created time.Time) (v1.Layer, error) {
	bin, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return layer([]tarFile{{name: filepath.Base(ImageBinary), mode: 0o755, data: bin}}, created)
}

// layer is a gzip-compressed OCI layer of files, built in memory (the
// binary is tens of MB) so that ggcr can read it twice, for the digest
// and for the blob.
func layer(files []tarFile, mtime time.Time) (v1.Layer, error) {
	var buf bytes.Buffer
	if err := writeTar(&buf, files, mtime); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil },
		tarball.WithMediaType(types.OCILayer), tarball.WithCompressionLevel(gzip.BestCompression))
}

// tarFile is one entry of a tar archive; a name ending in / is a
// directory.
type tarFile struct {
	name string
	mode int64
	uid  int
	data []byte
}

// writeTar writes files in the order given, owned by uid (root unless
// set), with mtime to the second: the same inputs give the same bytes.
func writeTar(w io.Writer, files []tarFile, mtime time.Time) error {
	tw := tar.NewWriter(w)
	for _, f := range files {
		h := &tar.Header{
			Name:     f.name,
			Mode:     f.mode,
			Uid:      f.uid,
			Gid:      f.uid,
			ModTime:  mtime.UTC().Truncate(time.Second),
			Typeflag: tar.TypeReg,
			Size:     int64(len(f.data)),
		}
		if strings.HasSuffix(f.name, "/") {
			h.Typeflag = tar.TypeDir
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(f.data); err != nil {
			return err
		}
	}
	return tw.Close()
}

// WriteDirTar writes the files under dir (an image layout) into w as a tar
// archive, paths relative to dir, in lexical order, with mtime: the form
// `docker load`, `podman load` and `skopeo copy oci-archive:` read.
func WriteDirTar(w io.Writer, dir string, mtime time.Time) error {
	var files []tarFile
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			files = append(files, tarFile{name: rel + "/", mode: 0o755})
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files = append(files, tarFile{name: rel, mode: 0o644, data: data})
		return nil
	})
	if err != nil {
		return err
	}
	return writeTar(w, files, mtime)
}
