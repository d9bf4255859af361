package scale

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/vmobs/vmobs/internal/testenv"
)

// The manager does not run as the control plane's admin: system:masters is
// exempt from API Priority and Fairness and skips authorization, which no
// deployed vmobs is. It runs as a user of its own bound to the ClusterRole
// it ships with (config/rbac/role.yaml), so that a missing permission fails
// here too, and so that a FlowSchema can name it (the overload phase). The
// floor runs as another such user: same authorization and priority level
// as the manager, and a transport of its own (client-go shares one between
// configs with the same credentials, which would mix the two processes'
// connections in the CPU profile).
const (
	managerUser = "vmobs-scale-manager"
	floorUser   = "vmobs-scale-floor"
)

// identity is a user bound to the manager's ClusterRole.
type identity struct {
	name string
	cfg  *rest.Config
	// kubeconfig is a file for child processes and the built binary.
	kubeconfig string
}

// addIdentity provisions a user (a client certificate the test API server
// trusts) bound to the ClusterRole of config/rbac/role.yaml.
func addIdentity(ctx context.Context, e *testenv.Env, admin client.Client, name, dir string) (*identity, error) {
	role, err := managerRole()
	if err != nil {
		return nil, err
	}
	if err := admin.Create(ctx, role); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating the manager's ClusterRole: %w", err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: name}},
	}
	if err := admin.Create(ctx, binding); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("binding the manager's ClusterRole to %s: %w", name, err)
	}
	user, err := e.ControlPlane.AddUser(envtest.User{Name: name}, nil)
	if err != nil {
		return nil, fmt.Errorf("adding user %s: %w", name, err)
	}
	cfg := rest.CopyConfig(user.Config())
	// As testenv's admin config: the harness's own clients are not
	// measured by client-go's default 5 requests per second.
	// app.NewManager sets the manager's own limit (none by default).
	cfg.QPS, cfg.Burst = e.Config.QPS, e.Config.Burst
	kc, err := user.KubeConfig()
	if err != nil {
		return nil, err
	}
	if _, err := clientcmd.Load(kc); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, name+".kubeconfig")
	if err := os.WriteFile(path, kc, 0o600); err != nil {
		return nil, err
	}
	return &identity{name: name, cfg: cfg, kubeconfig: path}, nil
}

// managerRole is the ClusterRole `make manifests` generates from the
// reconciler's RBAC markers.
func managerRole() (*rbacv1.ClusterRole, error) {
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "config", "rbac", "role.yaml"))
	if err != nil {
		return nil, err
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.UnmarshalStrict(b, role); err != nil {
		return nil, fmt.Errorf("config/rbac/role.yaml: %w", err)
	}
	return role, nil
}
