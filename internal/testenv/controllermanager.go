package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// StorageControllers are the kube-controller-manager controllers
// Options.ControllerManager runs (their names in
// k8s.io/kubernetes/cmd/kube-controller-manager/names): the PV binder, which
// binds PVCs to PVs and asks external provisioners for volumes, and the
// attach-detach controller, which creates the VolumeAttachments of the
// volumes the pods on a node use. Nothing else runs: no garbage collector,
// no namespace, node lifecycle or PVC protection controller, so the tests
// keep the objects they write as they wrote them.
var StorageControllers = []string{"persistentvolume-binder-controller", "persistentvolume-attach-detach-controller"}

// ControllerManagerBinary is kube-controller-manager of the control
// plane's Kubernetes release, which `make envtest-bin` builds beside
// kube-apiserver (setup-envtest's releases do not carry it).
func ControllerManagerBinary() string { return filepath.Join(AssetsDir(), "kube-controller-manager") }

// controllerManager is a kube-controller-manager started by Start.
type controllerManager struct {
	daemon
}

// startControllerManager runs kube-controller-manager against e with only
// StorageControllers, as a client in system:masters (each controller would
// otherwise need its service account and the token controller), without
// leader election or a cloud provider, serving /healthz on a free loopback
// port; it returns once /healthz answers 200.
func startControllerManager(e *Env) (*controllerManager, error) {
	m := &controllerManager{daemon: daemon{name: "kube-controller-manager"}}
	err := m.launch(ControllerManagerBinary(), "run `make envtest-bin` (it builds it from the Go module proxy)", time.Minute, func(dir string) ([]string, string, error) {
		kubeconfig := filepath.Join(dir, "kubeconfig")
		if err := e.userKubeconfig(envtest.User{Name: "system:kube-controller-manager", Groups: []string{"system:masters"}}, kubeconfig); err != nil {
			return nil, "", fmt.Errorf("writing kube-controller-manager's kubeconfig: %w", err)
		}
		addr, err := freeLocalAddress()
		if err != nil {
			return nil, "", err
		}
		_, port, _ := strings.Cut(addr, ":")
		return []string{
			"--kubeconfig=" + kubeconfig,
			// Delegated authentication and authorization of its own
			// endpoints; /healthz is always allowed.
			"--authentication-kubeconfig=" + kubeconfig,
			"--authorization-kubeconfig=" + kubeconfig,
			"--bind-address=127.0.0.1",
			"--secure-port=" + port,
			"--cert-dir=" + filepath.Join(dir, "certs"),
			"--controllers=" + strings.Join(StorageControllers, ","),
			"--use-service-account-credentials=false",
			// The PV binder re-reads its claims every 15 s by default;
			// some of its events (WaitForPodScheduled) come only from
			// that pass, and a test should not wait for them that long.
			"--pvclaimbinder-sync-period=2s",
			"--leader-elect=false",
			// Tests write fast; the default 20 QPS would hold the
			// controllers' writes back.
			"--kube-api-qps=200",
			"--kube-api-burst=400",
			"--v=2",
		}, "https://" + addr + "/healthz", nil
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// userKubeconfig writes a kubeconfig for user into path.
func (e *Env) userKubeconfig(user envtest.User, path string) error {
	u, err := e.ControlPlane.AddUser(user, nil)
	if err != nil {
		return err
	}
	kc, err := u.KubeConfig()
	if err != nil {
		return err
	}
	if _, err := clientcmd.Load(kc); err != nil {
		return err
	}
	return os.WriteFile(path, kc, 0o600)
}

// ControllerManagerLog is what kube-controller-manager has written, for a
// failing test's message; empty without Options.ControllerManager.
func (e *Env) ControllerManagerLog() string {
	if e.kcm == nil {
		return ""
	}
	return e.kcm.Log()
}
