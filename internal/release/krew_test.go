package release

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"
)

// krewTemplate is the template `make release` fills.
const krewTemplate = "../../hack/krew/vmobs.yaml.tmpl"

// krewPlugin is the part of krew's Plugin type (sigs.k8s.io/krew
// pkg/index) this test reads; test/packaging runs krew's own validator.
type krewPlugin struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version          string `json:"version"`
		Homepage         string `json:"homepage"`
		ShortDescription string `json:"shortDescription"`
		Description      string `json:"description"`
		Caveats          string `json:"caveats"`
		Platforms        []struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			URI    string `json:"uri"`
			SHA256 string `json:"sha256"`
			Bin    string `json:"bin"`
			Files  []struct {
				From string `json:"from"`
				To   string `json:"to"`
			} `json:"files"`
		} `json:"platforms"`
	} `json:"spec"`
}

func TestKrewManifest(t *testing.T) {
	tmpl, err := os.ReadFile(krewTemplate)
	if err != nil {
		t.Fatal(err)
	}
	k := Krew{Version: "v0.2.0", Homepage: "https://github.com/vmobs/vmobs"}
	for _, p := range [][2]string{{"linux", "amd64"}, {"linux", "arm64"}, {"linux", "s390x"}, {"darwin", "amd64"}, {"darwin", "arm64"}} {
		k.Platforms = append(k.Platforms, KrewPlatform{
			OS: p[0], Arch: p[1], Bin: PluginBinary, SHA256: "ab01" + p[0] + p[1],
			URI: ReleaseDownloadURL(k.Homepage, k.Version, KrewArchiveName(k.Version, p[0], p[1])),
		})
	}
	b, err := KrewManifest(string(tmpl), k)
	if err != nil {
		t.Fatal(err)
	}
	var got krewPlugin
	if err := yaml.UnmarshalStrict(b, &got); err != nil {
		t.Fatalf("%v:\n%s", err, b)
	}
	if got.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || got.Kind != "Plugin" || got.Metadata.Name != "vmobs" {
		t.Errorf("%s %s %s", got.APIVersion, got.Kind, got.Metadata.Name)
	}
	if got.Spec.Version != "v0.2.0" || got.Spec.Homepage != k.Homepage || got.Spec.ShortDescription == "" {
		t.Errorf("spec %+v", got.Spec)
	}
	if want := "https://github.com/vmobs/vmobs/releases/download/v0.2.0/install.yaml"; !bytes.Contains([]byte(got.Spec.Caveats), []byte(want)) {
		t.Errorf("caveats do not point at the release's install.yaml:\n%s", got.Spec.Caveats)
	}
	if len(got.Spec.Platforms) != len(k.Platforms) {
		t.Fatalf("%d platforms, want %d", len(got.Spec.Platforms), len(k.Platforms))
	}
	for i, p := range got.Spec.Platforms {
		w := k.Platforms[i]
		if p.Selector.MatchLabels["os"] != w.OS || p.Selector.MatchLabels["arch"] != w.Arch || len(p.Selector.MatchLabels) != 2 {
			t.Errorf("platform %d: selector %v", i, p.Selector.MatchLabels)
		}
		if want := "https://github.com/vmobs/vmobs/releases/download/v0.2.0/kubectl-vmobs_v0.2.0_" + w.OS + "_" + w.Arch + ".tar.gz"; p.URI != want {
			t.Errorf("platform %d: uri %s, want %s", i, p.URI, want)
		}
		if p.SHA256 != w.SHA256 || p.Bin != "kubectl-vmobs" || len(p.Files) != 2 || p.Files[1].From != "LICENSE" {
			t.Errorf("platform %d: %+v", i, p)
		}
	}

	if _, err := KrewManifest("{{ .Nope }}", k); err == nil {
		t.Error("a template naming an unknown field filled without error")
	}
}

func TestKrewArchive(t *testing.T) {
	dir := t.TempDir()
	bin, lic := filepath.Join(dir, "kubectl-vmobs"), filepath.Join(dir, "LICENSE")
	if err := os.WriteFile(bin, []byte("plugin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lic, []byte("Apache License"), 0o644); err != nil {
		t.Fatal(err)
	}
	archive := func() []byte {
		var b bytes.Buffer
		if err := WriteKrewArchive(&b, bin, lic, created); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	a := archive()
	if !bytes.Equal(a, archive()) {
		t.Error("two archives of the same binary differ, so would their sha256")
	}
	zr, err := gzip.NewReader(bytes.NewReader(a))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	got := map[string]int64{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got[h.Name] = h.Mode
	}
	if len(got) != 2 || got["kubectl-vmobs"] != 0o755 || got["LICENSE"] != 0o644 {
		t.Errorf("archive holds %v, want kubectl-vmobs (755) and LICENSE (644)", got)
	}

	path := filepath.Join(dir, "a.tar.gz")
	if err := os.WriteFile(path, a, 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err := FileSHA256(path)
	if err != nil || len(sum) != 64 {
		t.Errorf("sha256 %q, %v", sum, err)
	}
	if err := WriteKrewArchive(io.Discard, bin+".missing", lic, created); err == nil {
		t.Error("a missing binary archived without error")
	}
}
