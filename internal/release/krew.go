package release

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"slices"
	"text/template"
	"time"
)

// PluginBinary is the kubectl plugin's executable, in its krew archive and
// once installed: kubectl runs kubectl-vmobs as `kubectl vmobs`.
const PluginBinary = "kubectl-vmobs"

// KrewArchiveName is the name of the plugin's archive for one platform,
// as the release publishes it.
func KrewArchiveName(version, goos, arch string) string {
	return fmt.Sprintf("%s_%s_%s_%s.tar.gz", PluginBinary, version, goos, arch)
}

// WriteKrewArchive writes the .tar.gz krew installs from: the plugin's
// binary at the top and, when license is set, the LICENSE that the
// krew-index asks every archive to carry. Times are mtime, so the same
// binary gives the same archive and sha256.
func WriteKrewArchive(w io.Writer, binary, license string, mtime time.Time) error {
	bin, err := os.ReadFile(binary)
	if err != nil {
		return err
	}
	files := []tarFile{{name: PluginBinary, mode: 0o755, data: bin}}
	if license != "" {
		lic, err := os.ReadFile(license)
		if err != nil {
			return err
		}
		files = append(files, tarFile{name: "LICENSE", mode: 0o644, data: lic})
	}
	zw, err := gzip.NewWriterLevel(w, gzip.BestCompression)
	if err != nil {
		return err
	}
	if err := writeTar(zw, files, mtime); err != nil {
		return err
	}
	return zw.Close()
}

// krewPlatforms are the OS/architecture pairs krew installs plugins on:
// krew v0.4.3's validate-krew-manifest, which the krew-index runs on every
// manifest, refuses a selector for any other (linux/s390x among them).
var krewPlatforms = []string{
	"darwin/386", "darwin/amd64", "darwin/arm64",
	"linux/386", "linux/amd64", "linux/arm", "linux/arm64",
	"windows/386", "windows/amd64", "windows/arm64",
}

// KrewSupports says whether krew installs plugins on goos/arch, so whether
// a release makes a krew archive for that build of the plugin; the others
// ship as plain binaries only.
func KrewSupports(goos, arch string) bool {
	return slices.Contains(krewPlatforms, goos+"/"+arch)
}

// Krew is what fills the krew manifest's template.
type Krew struct {
	// Version is the release, v0.2.0.
	Version string
	// Homepage is the project's URL.
	Homepage string
	// Platforms are the archives, one per OS and architecture.
	Platforms []KrewPlatform
}

// KrewPlatform is one archive of the plugin.
type KrewPlatform struct {
	OS, Arch string
	// URI is where krew downloads the archive from.
	URI string
	// SHA256 is the archive's, hex.
	SHA256 string
	// Bin is the executable's path in the archive.
	Bin string
}

// ReleaseDownloadURL is where a GitHub release of repo (its https URL)
// serves the file name attached to the release tagged version.
func ReleaseDownloadURL(repo, version, name string) string {
	return repo + "/releases/download/" + version + "/" + name
}

// KrewManifest fills the template (hack/krew/vmobs.yaml.tmpl, in
// text/template syntax) with k: the plugin manifest in krew's index format
// (krew.googlecontainertools.github.com/v1alpha2 Plugin).
func KrewManifest(tmpl string, k Krew) ([]byte, error) {
	t, err := template.New("krew").Option("missingkey=error").Parse(tmpl)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := t.Execute(&b, k); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// FileSHA256 is the hex sha256 of the file at path.
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
