// Package testenv starts the real test control plane (kube-apiserver and etcd
// built by `make envtest-bin`) with our CRD and KubeVirt's installed. Test
// suites, the demo and the scale harness all start it the same way.
package testenv

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/vmobs/vmobs/internal/scheme"
)

// KubernetesVersion is the version of the control plane `make envtest-bin`
// builds.
const KubernetesVersion = "1.37.2"

// RepoRoot finds the root of the vmobs checkout from this source file, so
// tests find bin/ and the CRDs from any package directory.
func RepoRoot() string {
	if root := os.Getenv("VMOBS_ROOT"); root != "" {
		return root
	}
	_, file, _, ok := runtime.Caller(0)
	if ok {
		root := filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			return root
		}
	}
	wd, _ := os.Getwd()
	for dir := wd; dir != filepath.Dir(dir); dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "PROJECT")); err == nil {
			return dir
		}
	}
	return wd
}

// AssetsDir is where the control plane binaries are: KUBEBUILDER_ASSETS when
// set, else bin/k8s/<version>-<os>-<arch> in the checkout.
func AssetsDir() string {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir
	}
	return filepath.Join(RepoRoot(), "bin", "k8s", fmt.Sprintf("%s-%s-%s", KubernetesVersion, runtime.GOOS, runtime.GOARCH))
}

// CheckAssets says clearly what is missing of the control plane and the
// kubectl the tests run, instead of letting envtest fail with a download
// error it cannot recover from here.
func CheckAssets() error { return checkBinaries("kube-apiserver", "etcd", "kubectl") }

// CheckControlPlane is CheckAssets for what Start runs: kube-apiserver and
// etcd. envtest does not run kubectl, so the demo can start before it is
// built.
func CheckControlPlane() error { return checkBinaries("kube-apiserver", "etcd") }

func checkBinaries(names ...string) error {
	dir := AssetsDir()
	for _, bin := range names {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
			return fmt.Errorf("control plane binary %s not found in %s: run `make envtest-bin` (or set KUBEBUILDER_ASSETS)", bin, dir)
		}
	}
	return nil
}

// KubeVirtReleases are the KubeVirt releases whose CRDs the tests can run
// on (docs/compatibility.md), oldest first; the last is the default.
var KubeVirtReleases = []string{"v1.5", "v1.6", "v1.7", "v1.8", "v1.9"}

// CRDDirs are our CRD and the KubeVirt CRDs generated for tests, of the
// default release.
func CRDDirs() []string {
	dirs, _ := crdDirs("")
	return dirs
}

// crdDirs are our CRD and the KubeVirt CRDs of release: "" or the newest
// in test/crds/kubevirt, an older one in test/crds/kubevirt-vX.Y
// (hack/kubevirt-crds.sh).
func crdDirs(release string) ([]string, error) {
	root := RepoRoot()
	kubevirt := filepath.Join(root, "test", "crds", "kubevirt")
	switch {
	case release == "" || release == KubeVirtReleases[len(KubeVirtReleases)-1]:
	case slices.Contains(KubeVirtReleases, release):
		kubevirt += "-" + release
	default:
		return nil, fmt.Errorf("no CRDs of KubeVirt %q for tests: the releases are %v", release, KubeVirtReleases)
	}
	return []string{filepath.Join(root, "config", "crd", "bases"), kubevirt}, nil
}

// MonitoringCRDDirs are the CRDs of the operators whose objects config/
// ships, generated for tests by hack/monitoring-crds.sh: prometheus-operator's
// ServiceMonitor and PrometheusRule, cert-manager's Certificate and Issuer.
func MonitoringCRDDirs() []string {
	root := RepoRoot()
	return []string{
		filepath.Join(root, "test", "crds", "prometheus-operator"),
		filepath.Join(root, "test", "crds", "cert-manager"),
	}
}

// CDICRDDir holds CDI's DataVolume CRD, generated for tests from
// kubevirt.io/containerized-data-importer-api by hack/cdi-crds.sh.
func CDICRDDir() string { return filepath.Join(RepoRoot(), "test", "crds", "cdi") }

// Options tune the control plane.
type Options struct {
	// KubeVirt is the release whose CRDs are installed (one of
	// KubeVirtReleases); empty is the newest. The API server prunes what
	// an older release's schema does not know, as a cluster of that
	// release would.
	KubeVirt string
	// ExtraCRDDirs are installed next to CRDDirs (MonitoringCRDDirs, for
	// a test that applies config/'s monitoring objects).
	ExtraCRDDirs []string
	// APIServerFlags are extra kube-apiserver flags.
	APIServerFlags map[string]string
	// CertDir keeps kube-apiserver's certificates in this directory (the
	// caller removes it), so RestartAPIServer brings it back with the same
	// certificates; empty lets envtest pick a directory it removes itself.
	CertDir string
	// StopTimeout is how long kube-apiserver and etcd get to stop on
	// SIGTERM before they are killed; zero is a minute.
	StopTimeout time.Duration
	// ControllerManager starts kube-controller-manager (built by `make
	// envtest-bin` beside kube-apiserver) with only StorageControllers,
	// so that PVCs bind and VolumeAttachments are created by Kubernetes'
	// own code. Off, nothing binds a PVC or attaches a volume.
	ControllerManager bool
	// CDI installs CDI's DataVolume CRD (CDICRDDir). Off, the cluster has
	// no CDI, as many KubeVirt clusters do not.
	CDI bool
	// Aggregation gives kube-apiserver what API aggregation needs: a
	// front-proxy CA and client certificate, the request-header flags,
	// aggregator routing to endpoints, and an egress proxy that reaches
	// servers on loopback (see aggregation.go). Register an aggregated
	// API with Env.RegisterAggregatedAPI.
	Aggregation bool
}

// Env is a running control plane.
type Env struct {
	*envtest.Environment
	Config *rest.Config

	agg *aggregation       // nil without Options.Aggregation
	kcm *controllerManager // nil without Options.ControllerManager
}

// Start starts etcd and kube-apiserver and installs the CRDs.
func Start(opts Options) (*Env, error) {
	if err := CheckControlPlane(); err != nil {
		return nil, err
	}
	crds, err := crdDirs(opts.KubeVirt)
	if err != nil {
		return nil, err
	}
	crds = append(crds, opts.ExtraCRDDirs...)
	if opts.CDI {
		crds = append(crds, CDICRDDir())
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory:    AssetsDir(),
		CRDDirectoryPaths:        crds,
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  cmp.Or(opts.StopTimeout, time.Minute),
	}
	api := env.ControlPlane.GetAPIServer()
	for k, v := range opts.APIServerFlags {
		api.Configure().Set(k, v)
	}
	if opts.CertDir != "" {
		api.CertDir = opts.CertDir
	}
	var agg *aggregation
	if opts.Aggregation {
		var flags map[string]string
		agg, flags, err = startAggregation()
		if err != nil {
			return nil, fmt.Errorf("preparing API aggregation: %w", err)
		}
		for k, v := range flags {
			api.Configure().Set(k, v)
		}
	}
	cfg, err := env.Start()
	if err != nil {
		if agg != nil {
			_ = agg.stop()
		}
		return nil, fmt.Errorf("starting the test control plane from %s: %w", AssetsDir(), err)
	}
	// Tests and harnesses write fast; the client's default 5 QPS would
	// measure the rate limiter, not vmobs.
	cfg.QPS, cfg.Burst = 1000, 2000
	e := &Env{Environment: env, Config: cfg, agg: agg}
	if agg != nil {
		if agg.client, err = e.Client(); err != nil {
			return nil, errors.Join(err, e.Stop())
		}
	}
	if opts.ControllerManager {
		if err := e.StartControllerManager(); err != nil {
			return nil, errors.Join(err, e.Stop())
		}
	}
	return e, nil
}

// StartControllerManager starts kube-controller-manager as
// Options.ControllerManager does, against the running control plane: the
// demo starts it once it is built. It is an error to start it twice.
func (e *Env) StartControllerManager() error {
	if e.kcm != nil {
		return errors.New("kube-controller-manager is already running")
	}
	kcm, err := startControllerManager(e)
	if err != nil {
		return err
	}
	e.kcm = kcm
	return nil
}

// Stop stops kube-controller-manager, kube-apiserver and etcd, then what
// Options.Aggregation started.
func (e *Env) Stop() error {
	var err error
	if e.kcm != nil {
		err = e.kcm.Stop()
	}
	// A process that outlives its stop timeout is killed (SIGKILL): down
	// either way, as after a crash. On a loaded machine kube-apiserver can
	// take longer than a short timeout (the restart tests use 10 s) to drain
	// its watches; that fails no test.
	err = errors.Join(err, utilerrors.FilterOut(e.Environment.Stop(), killedAfterTimeout))
	if e.agg != nil {
		err = errors.Join(err, e.agg.stop())
	}
	return err
}

// RestartAPIServer stops kube-apiserver and starts it again on the same
// etcd, port and certificates (start the Env with Options.CertDir, or the
// serving certificates change and clients stop trusting the server).
func (e *Env) RestartAPIServer() error {
	api := e.ControlPlane.GetAPIServer()
	if err := api.Stop(); err != nil && !killedAfterTimeout(err) {
		return fmt.Errorf("stopping kube-apiserver: %w", err)
	}
	if err := api.Start(); err != nil {
		return fmt.Errorf("starting kube-apiserver again: %w", err)
	}
	return nil
}

// killedAfterTimeout says whether err is envtest's "timeout waiting for
// process": the process was then sent SIGKILL, and is down as after a crash.
func killedAfterTimeout(err error) bool {
	return strings.Contains(err.Error(), "timeout waiting for process")
}

// Client returns a direct client (no cache) to the control plane that knows
// our types and KubeVirt's, as tests, the demo and the simulator use.
func (e *Env) Client() (client.WithWatch, error) {
	return client.NewWithWatch(e.Config, client.Options{Scheme: scheme.New()})
}

// Kubeconfig writes a kubeconfig for an admin user into path.
func (e *Env) Kubeconfig(path string) error {
	return e.userKubeconfig(envtest.User{Name: "vmobs-admin", Groups: []string{"system:masters"}}, path)
}

// Kubectl runs the real kubectl built by `make envtest-bin` against the
// control plane with the given kubeconfig and returns its output.
func Kubectl(kubeconfig string, args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(AssetsDir(), "kubectl"), append([]string{"--kubeconfig", kubeconfig}, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("kubectl %v: %w: %s", args, err, errOut.String())
	}
	return out.String(), nil
}

// GVR of the KubeVirt resources, for dynamic clients.
var (
	VMIResource  = schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachineinstances"}
	VMResource   = schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachines"}
	VMIMResource = schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachineinstancemigrations"}
)
