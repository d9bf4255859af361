package release

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

var created = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// fakeImage is an Image of three small fake binaries, each saying its
// platform, so a test can tell which one landed where.
func fakeImage(t *testing.T) Image {
	t.Helper()
	dir := t.TempDir()
	c := Image{Version: "v0.2.0", Revision: "0123abc", Source: "https://github.com/vmobs/vmobs", Created: created, License: filepath.Join(dir, "LICENSE")}
	if err := os.WriteFile(c.License, []byte("Apache License\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, arch := range []string{"amd64", "arm64", "s390x"} {
		p := filepath.Join(dir, "vmobs_linux_"+arch)
		if err := os.WriteFile(p, []byte("\x7fELF vmobs for linux/"+arch), 0o755); err != nil {
			t.Fatal(err)
		}
		c.Binaries = append(c.Binaries, PlatformBinary{OS: "linux", Arch: arch, Path: p})
	}
	return c
}

// filesOf reads the image's flattened file system: each path with its
// header and content.
func filesOf(t *testing.T, img v1.Image) map[string]struct {
	hdr  tar.Header
	data string
} {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	files := map[string]struct {
		hdr  tar.Header
		data string
	}{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = struct {
			hdr  tar.Header
			data string
		}{*h, string(b)}
	}
}

// TestImageLayout builds the image into a layout as `make release` does
// and reads it back the way a registry client would.
func TestImageLayout(t *testing.T) {
	c := fakeImage(t)
	idx, err := BuildImage(c)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "image")
	if err := WriteLayout(dir, c.Version, idx); err != nil {
		t.Fatal(err)
	}

	top, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	topManifest, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(topManifest.Manifests) != 1 {
		t.Fatalf("index.json lists %d manifests, want the one multi-platform index", len(topManifest.Manifests))
	}
	ref := topManifest.Manifests[0]
	if ref.MediaType != types.OCIImageIndex || ref.Annotations["org.opencontainers.image.ref.name"] != "v0.2.0" {
		t.Errorf("index.json entry: media type %s, annotations %v; want an OCI index named v0.2.0", ref.MediaType, ref.Annotations)
	}
	multi, err := top.ImageIndex(ref.Digest)
	if err != nil {
		t.Fatal(err)
	}
	im, err := multi.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if im.Annotations["org.opencontainers.image.version"] != "v0.2.0" {
		t.Errorf("index annotations %v", im.Annotations)
	}

	var platforms []string
	for _, desc := range im.Manifests {
		platforms = append(platforms, desc.Platform.String())
		if desc.MediaType != types.OCIManifestSchema1 {
			t.Errorf("%s: manifest media type %s", desc.Platform, desc.MediaType)
		}
		img, err := multi.Image(desc.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.OS != desc.Platform.OS || cfg.Architecture != desc.Platform.Architecture || cfg.Variant != desc.Platform.Variant {
			t.Errorf("%s: config says %s/%s/%s", desc.Platform, cfg.OS, cfg.Architecture, cfg.Variant)
		}
		if !slices.Equal(cfg.Config.Entrypoint, []string{"/vmobs", "manager"}) || cfg.Config.Cmd != nil {
			t.Errorf("%s: entrypoint %q, cmd %q", desc.Platform, cfg.Config.Entrypoint, cfg.Config.Cmd)
		}
		if cfg.Config.User != "65532:65532" || cfg.Config.WorkingDir != "/" {
			t.Errorf("%s: user %q, working dir %q", desc.Platform, cfg.Config.User, cfg.Config.WorkingDir)
		}
		if !cfg.Created.Equal(created) {
			t.Errorf("%s: created %s", desc.Platform, cfg.Created)
		}
		want := map[string]string{
			"org.opencontainers.image.title":    "vmobs",
			"org.opencontainers.image.version":  "v0.2.0",
			"org.opencontainers.image.revision": "0123abc",
			"org.opencontainers.image.source":   "https://github.com/vmobs/vmobs",
			"org.opencontainers.image.licenses": "Apache-2.0",
			"org.opencontainers.image.created":  "2026-11-30T12:00:00Z",
		}
		for k, v := range want {
			if cfg.Config.Labels[k] != v {
				t.Errorf("%s: label %s = %q, want %q", desc.Platform, k, cfg.Config.Labels[k], v)
			}
		}
		if mt, _ := img.MediaType(); mt != types.OCIManifestSchema1 {
			t.Errorf("%s: image media type %s", desc.Platform, mt)
		}

		// The file system (Extract drops directories' trailing
		// slashes): the nonroot user, the binary for this
		// platform, and nothing to run besides it (no shell).
		files := filesOf(t, img)
		names := slices.Sorted(maps.Keys(files))
		wantNames := []string{"etc", "etc/group", "etc/passwd", "home", "home/nonroot", "licenses", "licenses/LICENSE", "tmp", "vmobs"}
		if !slices.Equal(names, wantNames) {
			t.Errorf("%s: files %q, want %q", desc.Platform, names, wantNames)
		}
		for name, f := range files {
			if f.hdr.Typeflag == tar.TypeReg && f.hdr.Mode&0o111 != 0 && name != "vmobs" {
				t.Errorf("%s: %s is executable", desc.Platform, name)
			}
			if !f.hdr.ModTime.Equal(created) {
				t.Errorf("%s: %s has mtime %s", desc.Platform, name, f.hdr.ModTime)
			}
		}
		if bin := files["vmobs"]; bin.data != "\x7fELF vmobs for linux/"+desc.Platform.Architecture || bin.hdr.Mode != 0o755 {
			t.Errorf("%s: /vmobs is %q, mode %o", desc.Platform, bin.data, bin.hdr.Mode)
		}
		if !strings.Contains(files["etc/passwd"].data, "nonroot:x:65532:65532:") {
			t.Errorf("%s: /etc/passwd %q", desc.Platform, files["etc/passwd"].data)
		}
		if h := files["tmp"].hdr; h.Mode != 0o1777 {
			t.Errorf("%s: /tmp mode %o, want 1777", desc.Platform, h.Mode)
		}
		if h := files["home/nonroot"].hdr; h.Uid != 65532 || h.Mode != 0o700 {
			t.Errorf("%s: /home/nonroot owned by %d, mode %o", desc.Platform, h.Uid, h.Mode)
		}
	}
	slices.Sort(platforms)
	if want := []string{"linux/amd64", "linux/arm64/v8", "linux/s390x"}; !slices.Equal(platforms, want) {
		t.Errorf("platforms %q, want %q", platforms, want)
	}

	// A second release writes into an empty directory only.
	if err := WriteLayout(dir, c.Version, idx); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("writing into the filled layout: %v, want a not-empty error", err)
	}
}

// The same inputs give the same digest, so a release can be rebuilt and
// checked; another version gives another one.
func TestImageReproducible(t *testing.T) {
	c := fakeImage(t)
	digest := func(c Image) v1.Hash {
		t.Helper()
		idx, err := BuildImage(c)
		if err != nil {
			t.Fatal(err)
		}
		d, err := idx.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	first := digest(c)
	if again := digest(c); again != first {
		t.Errorf("two builds of the same inputs: %s and %s", first, again)
	}
	c.Version = "v0.2.1"
	if other := digest(c); other == first {
		t.Error("another version built the same digest")
	}
}

func TestBuildImageErrors(t *testing.T) {
	c := fakeImage(t)
	for name, mutate := range map[string]func(*Image){
		"no binaries":     func(c *Image) { c.Binaries = nil },
		"missing binary":  func(c *Image) { c.Binaries[1].Path += ".missing" },
		"missing license": func(c *Image) { c.License += ".missing" },
	} {
		c := c
		c.Binaries = slices.Clone(c.Binaries)
		mutate(&c)
		if _, err := BuildImage(c); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// image.tar carries the layout as it is on disk.
func TestWriteDirTar(t *testing.T) {
	c := fakeImage(t)
	c.Binaries = c.Binaries[:1]
	idx, err := BuildImage(c)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "image")
	if err := WriteLayout(dir, c.Version, idx); err != nil {
		t.Fatal(err)
	}
	var a, b bytes.Buffer
	if err := WriteDirTar(&a, dir, created); err != nil {
		t.Fatal(err)
	}
	if err := WriteDirTar(&b, dir, created); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("two archives of the same layout differ")
	}
	tr := tar.NewReader(&a)
	var names []string
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if h.Typeflag == tar.TypeReg {
			want, err := os.ReadFile(filepath.Join(dir, h.Name))
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := io.ReadAll(tr); !bytes.Equal(got, want) {
				t.Errorf("%s differs from the layout's", h.Name)
			}
		}
	}
	for _, want := range []string{"oci-layout", "index.json", "blobs/", "blobs/sha256/"} {
		if !slices.Contains(names, want) {
			t.Errorf("image.tar has no %s: %q", want, names)
		}
	}
}

// `make image`'s bin/image.tar: one platform's image as a `docker load`
// archive under its tag, the same image as the layout's (digest, user,
// entrypoint, labels); an index of several platforms has no such form.
func TestWriteDockerTar(t *testing.T) {
	c := fakeImage(t)
	if err := WriteDockerTar(io.Discard, "vmobs:dev", mustBuild(t, c)); err == nil || !strings.Contains(err.Error(), "one platform") {
		t.Errorf("three platforms: %v, want a one-platform error", err)
	}
	c.Binaries = c.Binaries[:1]
	idx := mustBuild(t, c)
	path := filepath.Join(t.TempDir(), "image.tar")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteDockerTar(f, "vmobs:dev", idx); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	tag, err := name.NewTag("vmobs:dev")
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(path, &tag)
	if err != nil {
		t.Fatalf("reading the archive back under its tag: %v", err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	want, err := idx.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	wantCfg, err := want.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := img.ConfigName(); err != nil || got != wantCfg {
		t.Errorf("config %s (%v), want the layout image's %s", got, err, wantCfg)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Config.User != ImageUser || !slices.Equal(cfg.Config.Entrypoint, ImageEntrypoint) || !maps.Equal(cfg.Config.Labels, c.Labels()) {
		t.Errorf("user %q, entrypoint %q, labels %v", cfg.Config.User, cfg.Config.Entrypoint, cfg.Config.Labels)
	}
	if files := filesOf(t, img); files["vmobs"].data != "\x7fELF vmobs for linux/amd64" {
		t.Errorf("/vmobs is %q", files["vmobs"].data)
	}
	if err := WriteDockerTar(io.Discard, "not a tag!", idx); err == nil {
		t.Error("a malformed tag: no error")
	}
}

func mustBuild(t *testing.T, c Image) v1.ImageIndex {
	t.Helper()
	idx, err := BuildImage(c)
	if err != nil {
		t.Fatal(err)
	}
	return idx
}
