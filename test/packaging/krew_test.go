package packaging

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vmobs/vmobs/internal/release"
	"github.com/vmobs/vmobs/test/support"
)

// pluginPlatforms are the plugin's builds in a release (hack/release.sh);
// krewPlatforms those krew installs on, which get an archive.
var (
	pluginPlatforms = [][2]string{{"linux", "amd64"}, {"linux", "arm64"}, {"linux", "s390x"}, {"darwin", "amd64"}, {"darwin", "arm64"}}
	krewPlatforms   = slices.DeleteFunc(slices.Clone(pluginPlatforms), func(p [2]string) bool { return !release.KrewSupports(p[0], p[1]) })
)

// TestKrewManifest fills hack/krew/vmobs.yaml.tmpl as `make release` does,
// for archives of a stand-in plugin, then checks it with the real krew
// (`make krew`, the version pinned in hack/krew/go.mod): the krew-index's
// validate-krew-manifest, and `krew install --manifest --archive` of every
// platform's archive, as a user's `kubectl krew install vmobs` does once the
// archive is downloaded.
func TestKrewManifest(t *testing.T) {
	krew := support.BuiltTool(t, "krew", "KREW")
	validate := support.BuiltTool(t, "validate-krew-manifest", "VALIDATE_KREW_MANIFEST")
	root := support.RepoRoot(t)
	dir := t.TempDir()

	// A script stands in for kubectl-vmobs: what is checked is the
	// packaging, and the installed command must run.
	bin := filepath.Join(dir, "kubectl-vmobs")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho stand-in kubectl-vmobs\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tmpl, err := os.ReadFile(filepath.Join(root, "hack/krew/vmobs.yaml.tmpl"))
	if err != nil {
		t.Fatal(err)
	}
	k := release.Krew{Version: "v0.2.0", Homepage: "https://github.com/vmobs/vmobs"}
	archives := map[string]string{}
	for _, p := range krewPlatforms {
		name := release.KrewArchiveName(k.Version, p[0], p[1])
		path := filepath.Join(dir, name)
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := release.WriteKrewArchive(f, bin, filepath.Join(root, "LICENSE"), time.Unix(0, 0)); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		sum, err := release.FileSHA256(path)
		if err != nil {
			t.Fatal(err)
		}
		archives[p[0]+"/"+p[1]] = path
		k.Platforms = append(k.Platforms, release.KrewPlatform{OS: p[0], Arch: p[1], SHA256: sum, Bin: release.PluginBinary,
			URI: release.ReleaseDownloadURL(k.Homepage, k.Version, name)})
	}
	m, err := release.KrewManifest(string(tmpl), k)
	if err != nil {
		t.Fatal(err)
	}
	// validate-krew-manifest takes the plugin's name from the file's, as
	// the krew-index names it: plugins/vmobs.yaml.
	manifest := filepath.Join(dir, "vmobs.yaml")
	if err := os.WriteFile(manifest, m, 0o644); err != nil {
		t.Fatal(err)
	}

	if out, err := exec.Command(validate, "-manifest", manifest, "-skip-install").CombinedOutput(); err != nil {
		t.Fatalf("validate-krew-manifest: %v\n%s\n%s", err, out, m)
	}

	// release.KrewSupports leaves out exactly the builds krew's validator
	// refuses: the same manifest with a linux/s390x archive added fails.
	if want := [][2]string{{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "amd64"}, {"darwin", "arm64"}}; !slices.Equal(krewPlatforms, want) {
		t.Errorf("krew archives for %q, want %q", krewPlatforms, want)
	}
	withS390x := k
	withS390x.Platforms = append(slices.Clone(k.Platforms), release.KrewPlatform{OS: "linux", Arch: "s390x", SHA256: k.Platforms[0].SHA256,
		Bin: release.PluginBinary, URI: release.ReleaseDownloadURL(k.Homepage, k.Version, release.KrewArchiveName(k.Version, "linux", "s390x"))})
	ms, err := release.KrewManifest(string(tmpl), withS390x)
	if err != nil {
		t.Fatal(err)
	}
	refused := filepath.Join(t.TempDir(), "vmobs.yaml")
	if err := os.WriteFile(refused, ms, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(validate, "-manifest", refused, "-skip-install").CombinedOutput(); err == nil || !strings.Contains(string(out), "doesn't match any supported platforms") {
		t.Errorf("validate-krew-manifest on a manifest with linux/s390x: %v\n%s", err, out)
	}

	// install runs krew install into a KREW_ROOT of its own, as on a
	// machine of that OS and architecture.
	install := func(t *testing.T, manifest, goos, arch string) (krewRoot, out string, err error) {
		t.Helper()
		krewRoot = t.TempDir()
		cmd := exec.Command(krew, "install", "--manifest="+manifest, "--archive="+archives[goos+"/"+arch])
		cmd.Env = []string{"KREW_ROOT=" + krewRoot, "KREW_OS=" + goos, "KREW_ARCH=" + arch, "HOME=" + krewRoot, "PATH=" + os.Getenv("PATH")}
		b, err := cmd.CombinedOutput()
		return krewRoot, string(b), err
	}
	for _, p := range krewPlatforms {
		t.Run(p[0]+"/"+p[1], func(t *testing.T) {
			krewRoot, out, err := install(t, manifest, p[0], p[1])
			if err != nil {
				t.Fatalf("krew install: %v\n%s", err, out)
			}
			for _, f := range []string{"store/vmobs/v0.2.0/kubectl-vmobs", "store/vmobs/v0.2.0/LICENSE", "receipts/vmobs.yaml"} {
				if _, err := os.Stat(filepath.Join(krewRoot, f)); err != nil {
					t.Errorf("not installed: %v", err)
				}
			}
			if p[0] != runtime.GOOS {
				return
			}
			ran, err := exec.Command(filepath.Join(krewRoot, "bin", "kubectl-vmobs")).Output()
			if err != nil || strings.TrimSpace(string(ran)) != "stand-in kubectl-vmobs" {
				t.Errorf("the installed kubectl-vmobs: %q, %v", ran, err)
			}
		})
	}

	// krew checks the archive against the manifest's sha256: an archive
	// that is not the one the manifest names does not install.
	other := k.Platforms[0].SHA256
	tampered := filepath.Join(t.TempDir(), "vmobs.yaml")
	if err := os.WriteFile(tampered, bytes.Replace(m, []byte(other), []byte(strings.Repeat("f", 64)), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, out, err := install(t, tampered, "linux", "amd64"); err == nil || !strings.Contains(out, "checksum does not match") {
		t.Errorf("krew installed an archive whose sha256 is not the manifest's: %v\n%s", err, out)
	}
}
