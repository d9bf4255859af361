package packaging

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/vmobs/vmobs/internal/testenv"
	"github.com/vmobs/vmobs/test/support"
)

// controlPlaneBinaries are what hack/build-controlplane.sh puts in place.
var controlPlaneBinaries = []string{"kube-apiserver", "kubectl", "etcd"}

// runControlPlaneScript runs hack/build-controlplane.sh (`make
// envtest-bin`) into dir with the given environment, and returns what it
// printed. kube-controller-manager, which the script always builds, is
// left out: each new dir would cost a link of it.
func runControlPlaneScript(t *testing.T, dir string, env ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("bash", filepath.Join(support.RepoRoot(t), "hack", "build-controlplane.sh"))
	cmd.Env = append(os.Environ(), append([]string{"ENVTEST_DIR=" + dir, "K8S_VERSION=" + testenv.KubernetesVersion, "CONTROLLER_MANAGER=skip"}, env...)...)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("build-controlplane.sh %s (%s):\n%s", strings.Join(env, " "), time.Since(start).Round(time.Millisecond), out)
	return string(out), err
}

// envtestIndex serves what setup-envtest reads: an index in the format of
// controller-tools' envtest-releases.yaml naming one envtest archive of
// this machine's platform, and that archive, made of the control plane
// binaries `make envtest-bin` put in place (so they run).
func envtestIndex(t *testing.T) *httptest.Server {
	t.Helper()
	if err := testenv.CheckAssets(); err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(t.TempDir(), "envtest.tar.gz")
	f, err := os.Create(archive)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha512.New()
	// No compression: the binaries are 200 MB and the test is about the
	// script, not gzip.
	gz, err := gzip.NewWriterLevel(io.MultiWriter(f, sum), gzip.NoCompression)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(gz)
	for _, bin := range controlPlaneBinaries {
		src, err := os.Open(filepath.Join(testenv.AssetsDir(), bin))
		if err != nil {
			t.Fatal(err)
		}
		st, err := src.Stat()
		if err != nil {
			t.Fatal(err)
		}
		// The layout of controller-tools' envtest archives.
		if err := tw.WriteHeader(&tar.Header{Name: "controller-tools/envtest/" + bin, Mode: 0o755, Size: st.Size(), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(tw, src); err != nil {
			t.Fatal(err)
		}
		src.Close()
	}
	for _, c := range []io.Closer{tw, gz, f} {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	name := fmt.Sprintf("envtest-v%s-%s-%s.tar.gz", testenv.KubernetesVersion, runtime.GOOS, runtime.GOARCH)
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	index := fmt.Sprintf("releases:\n  v%s:\n    %s:\n      hash: %s\n      selfLink: %s/%s\n",
		testenv.KubernetesVersion, name, hex.EncodeToString(sum.Sum(nil)), srv.URL, name)
	mux.HandleFunc("/envtest-releases.yaml", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, index) })
	mux.HandleFunc("/"+name, func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, archive) })
	return srv
}

// TestControlPlaneScriptDownloads: where setup-envtest's index and archive
// can be reached, `make envtest-bin` takes the official binaries, says so,
// and lays them out where KUBEBUILDER_ASSETS points; a second run does
// nothing.
func TestControlPlaneScriptDownloads(t *testing.T) {
	srv := envtestIndex(t)
	dir := filepath.Join(t.TempDir(), "k8s")
	out, err := runControlPlaneScript(t, dir, "ENVTEST_INDEX="+srv.URL+"/envtest-releases.yaml")
	if err != nil {
		t.Fatalf("build-controlplane.sh: %v", err)
	}
	if !strings.Contains(out, "downloaded the official kube-apiserver, kubectl and etcd of v"+testenv.KubernetesVersion+" with setup-envtest") {
		t.Error("the script does not say it downloaded the binaries")
	}
	if strings.Contains(out, "building") && strings.Contains(out, "from the Go module proxy") {
		t.Error("the script built what it downloaded")
	}
	for _, bin := range controlPlaneBinaries {
		got, err := os.Stat(filepath.Join(dir, bin))
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.Stat(filepath.Join(testenv.AssetsDir(), bin))
		if err != nil {
			t.Fatal(err)
		}
		if got.Size() != want.Size() || got.Mode().Perm() != 0o755 {
			t.Errorf("%s: %d bytes, mode %v; want the archive's %d bytes, mode 755", bin, got.Size(), got.Mode().Perm(), want.Size())
		}
	}
	if !strings.Contains(out, "Kubernetes v"+testenv.KubernetesVersion) {
		t.Error("the downloaded kube-apiserver did not say its version")
	}

	out, err = runControlPlaneScript(t, dir, "ENVTEST_INDEX=http://127.0.0.1:1/unreachable")
	if err != nil || !strings.Contains(out, "are up to date in "+dir) || strings.Contains(out, "setup-envtest") {
		t.Errorf("a second run: %v; want it to find the binaries up to date without asking setup-envtest", err)
	}
}

// TestControlPlaneScriptFallsBack: where the index cannot be read — no
// answer within ENVTEST_INDEX_TIMEOUT, or an error — the script says why
// and, by default, builds from the Go module proxy (here only etcd, made
// stale, so the test builds one binary); ENVTEST_SOURCE=download fails
// instead.
func TestControlPlaneScriptFallsBack(t *testing.T) {
	if err := testenv.CheckAssets(); err != nil {
		t.Fatal(err)
	}
	// A server that accepts and never answers, as behind a firewall that
	// drops packets, and one that has no index.
	hang := make(chan struct{})
	silent := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-hang }))
	t.Cleanup(func() { close(hang); silent.Close() })
	missing := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(missing.Close)

	dir := filepath.Join(t.TempDir(), "k8s")
	start := time.Now()
	out, err := runControlPlaneScript(t, dir, "ENVTEST_SOURCE=download", "ENVTEST_INDEX_TIMEOUT=2", "ENVTEST_INDEX="+silent.URL+"/envtest-releases.yaml")
	if err == nil || !strings.Contains(out, "setup-envtest could not read its index: no answer within 2s") || !strings.Contains(out, "ENVTEST_SOURCE=download and the download failed") {
		t.Errorf("an index that never answers, download only: %v; want a failure that says the index could not be read", err)
	}
	// The bound and timeout's --kill-after, with room for a loaded machine.
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("an index that never answers held the script %s; ENVTEST_INDEX_TIMEOUT=2 bounds it", took)
	}
	for _, bin := range controlPlaneBinaries {
		if _, err := os.Stat(filepath.Join(dir, bin)); err == nil {
			t.Errorf("a failed download left %s in %s", bin, dir)
		}
	}

	// The default: the binaries of `make envtest-bin`, etcd older than
	// its tool module's go.mod, and an index that is not there.
	for _, bin := range controlPlaneBinaries {
		b, err := os.ReadFile(filepath.Join(testenv.AssetsDir(), bin))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, bin), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := os.Chtimes(filepath.Join(dir, "etcd"), old, old); err != nil {
		t.Fatal(err)
	}
	out, err = runControlPlaneScript(t, dir, "ENVTEST_INDEX="+missing.URL+"/envtest-releases.yaml")
	if err != nil {
		t.Fatalf("build-controlplane.sh: %v", err)
	}
	for _, want := range []string{
		"setup-envtest could not read its index",
		"building from the Go module proxy instead",
		"kube-apiserver is up to date",
		"kubectl is up to date",
		"building etcd from go.etcd.io/etcd/server/v3",
		"built etcd in",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the script does not say %q", want)
		}
	}
	if st, err := os.Stat(filepath.Join(dir, "etcd")); err != nil || !st.ModTime().After(old) {
		t.Errorf("etcd was not rebuilt: %v", err)
	}
}
