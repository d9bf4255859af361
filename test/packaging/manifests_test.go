// Package packaging tests what installs vmobs: the kustomize manifests and
// their RBAC (statically and on a real kube-apiserver, with the manager
// running as the ServiceAccount), the tenant roles, the monitoring
// overlays, the Helm chart (helm lint, helm template, helm install on the
// API server), the krew manifest with krew's own validator, the release's
// install.yaml and the control plane download script.
package packaging

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/vmobs/vmobs/test/support"
)

// render runs kustomize (the library kubectl and the kustomize CLI use) on
// a directory under config/ and returns the objects.
func render(t testing.TB, dir string) []*unstructured.Unstructured {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	resMap, err := k.Run(filesys.MakeFsOnDisk(), filepath.Join(support.RepoRoot(t), dir))
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	var out []*unstructured.Unstructured
	for _, r := range resMap.Resources() {
		m, err := r.Map()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
	return out
}

func find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

func mustFind(t testing.TB, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	o := find(objs, kind, name)
	if o == nil {
		var have []string
		for _, o := range objs {
			have = append(have, o.GetKind()+"/"+o.GetName())
		}
		t.Fatalf("no %s %q in the rendered manifests; have %s", kind, name, strings.Join(have, ", "))
	}
	return o
}

// eachYAMLFile calls read with the path and content of every .yaml file
// under root, in lexical order; a file it cannot read fails the test.
func eachYAMLFile(t testing.TB, root string, read func(path string, content []byte)) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		read(path, b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func convert[T any](t testing.TB, u *unstructured.Unstructured) *T {
	t.Helper()
	out := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, out, true); err != nil {
		t.Fatalf("%s/%s: %v", u.GetKind(), u.GetName(), err)
	}
	return out
}

// managerClusterRole is the ClusterRole the ClusterRoleBinding gives the
// controller's ServiceAccount (its name comes from `make manifests`).
func managerClusterRole(t testing.TB, objs []*unstructured.Unstructured) *rbacv1.ClusterRole {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() != "ClusterRoleBinding" {
			continue
		}
		b := convert[rbacv1.ClusterRoleBinding](t, o)
		for _, s := range b.Subjects {
			if s.Kind == "ServiceAccount" && s.Name == support.ServiceAccount && s.Namespace == support.SystemNS {
				return convert[rbacv1.ClusterRole](t, mustFind(t, objs, "ClusterRole", b.RoleRef.Name))
			}
		}
	}
	t.Fatal("no ClusterRoleBinding binds the controller's ServiceAccount")
	return nil
}

func managerDeployment(t testing.TB, objs []*unstructured.Unstructured) *appsv1.Deployment {
	return convert[appsv1.Deployment](t, mustFind(t, objs, "Deployment", "vmobs-controller-manager"))
}

func TestKustomizeDefault(t *testing.T) {
	objs := render(t, "config/default")

	crd := mustFind(t, objs, "CustomResourceDefinition", "vmobservations.observability.vmobs.io")
	if crd.GetNamespace() != "" {
		t.Errorf("the CRD got namespace %q", crd.GetNamespace())
	}
	ns := convert[corev1.Namespace](t, mustFind(t, objs, "Namespace", support.SystemNS))
	if ns.Labels["pod-security.kubernetes.io/enforce"] != "restricted" {
		t.Errorf("namespace %s does not enforce the restricted Pod Security Standard: %v", support.SystemNS, ns.Labels)
	}
	for _, o := range objs {
		switch o.GetKind() {
		case "CustomResourceDefinition", "Namespace", "ClusterRole", "ClusterRoleBinding":
			if o.GetNamespace() != "" {
				t.Errorf("cluster-scoped %s/%s has namespace %q", o.GetKind(), o.GetName(), o.GetNamespace())
			}
		default:
			if o.GetNamespace() != support.SystemNS {
				t.Errorf("%s/%s is in namespace %q, want %s", o.GetKind(), o.GetName(), o.GetNamespace(), support.SystemNS)
			}
		}
		if o.GetKind() != "CustomResourceDefinition" && o.GetKind() != "Namespace" && !strings.HasPrefix(o.GetName(), "vmobs-") {
			t.Errorf("%s/%s lacks the vmobs- prefix", o.GetKind(), o.GetName())
		}
		if o.GetLabels()["app.kubernetes.io/part-of"] != "vmobs" {
			t.Errorf("%s/%s lacks app.kubernetes.io/part-of=vmobs", o.GetKind(), o.GetName())
		}
	}

	mustFind(t, objs, "ServiceAccount", support.ServiceAccount)
	cr := managerClusterRole(t, objs)
	if !slices.ContainsFunc(cr.Rules, func(r rbacv1.PolicyRule) bool {
		return slices.Contains(r.Resources, "vmobservations/status") && slices.Contains(r.Verbs, "patch")
	}) {
		t.Errorf("ClusterRole %s cannot patch vmobservations/status: %+v", cr.Name, cr.Rules)
	}

	// Leader election: a namespaced Role on leases in vmobs-system, bound
	// to the ServiceAccount.
	role := convert[rbacv1.Role](t, mustFind(t, objs, "Role", "vmobs-leader-election-role"))
	if !slices.ContainsFunc(role.Rules, func(r rbacv1.PolicyRule) bool {
		return slices.Contains(r.APIGroups, "coordination.k8s.io") && slices.Contains(r.Resources, "leases") &&
			len(r.Verbs) == 7 && slices.Contains(r.Verbs, "create") && slices.Contains(r.Verbs, "watch")
	}) {
		t.Errorf("leader election Role lacks leases get/list/watch/create/update/patch/delete: %+v", role.Rules)
	}
	rb := convert[rbacv1.RoleBinding](t, mustFind(t, objs, "RoleBinding", "vmobs-leader-election-rolebinding"))
	if rb.RoleRef.Name != role.Name || len(rb.Subjects) != 1 || rb.Subjects[0].Name != support.ServiceAccount || rb.Subjects[0].Namespace != support.SystemNS {
		t.Errorf("leader election RoleBinding: %+v", rb)
	}
	mr := convert[rbacv1.ClusterRole](t, mustFind(t, objs, "ClusterRole", "vmobs-metrics-reader"))
	if len(mr.Rules) != 1 || !slices.Equal(mr.Rules[0].NonResourceURLs, []string{"/metrics"}) || !slices.Equal(mr.Rules[0].Verbs, []string{"get"}) {
		t.Errorf("metrics-reader ClusterRole: %+v", mr.Rules)
	}

	checkTenantRoles(t, objs)

	dep := managerDeployment(t, objs)
	pod := dep.Spec.Template.Spec
	if pod.ServiceAccountName != support.ServiceAccount {
		t.Errorf("Deployment runs as ServiceAccount %q", pod.ServiceAccountName)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("want one container, got %d", len(pod.Containers))
	}
	c := pod.Containers[0]
	if c.Image != "ghcr.io/vmobs/vmobs:latest" {
		t.Errorf("image %q, want the latest release's, ghcr.io/vmobs/vmobs:latest", c.Image)
	}
	if cmd := strings.Join(append(slices.Clone(c.Command), c.Args...), " "); cmd != "/vmobs manager --leader-elect --health-probe-bind-address=:8081 --metrics-bind-address=:8443" {
		t.Errorf("command line %q", cmd)
	}
	sc := c.SecurityContext
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.Capabilities == nil ||
		!slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("container securityContext is not restricted: %+v", sc)
	}
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" || c.LivenessProbe.HTTPGet.Port.IntValue() != 8081 {
		t.Errorf("liveness probe: %+v", c.LivenessProbe)
	}
	if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" || c.ReadinessProbe.HTTPGet.Port.IntValue() != 8081 {
		t.Errorf("readiness probe: %+v", c.ReadinessProbe)
	}
	if i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "GOMEMLIMIT" }); i < 0 ||
		c.Env[i].ValueFrom == nil || c.Env[i].ValueFrom.ResourceFieldRef == nil ||
		c.Env[i].ValueFrom.ResourceFieldRef.Resource != "limits.memory" || c.Env[i].ValueFrom.ResourceFieldRef.ContainerName != c.Name {
		t.Errorf("GOMEMLIMIT does not come from the container's memory limit: %+v", c.Env)
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, lim := c.Resources.Requests[r], c.Resources.Limits[r]
		if req.IsZero() || lim.IsZero() || req.Cmp(lim) > 0 {
			t.Errorf("%s: request %s, limit %s", r, req.String(), lim.String())
		}
	}

	svc := convert[corev1.Service](t, mustFind(t, objs, "Service", "vmobs-controller-manager-metrics"))
	for k, v := range svc.Spec.Selector {
		if dep.Spec.Template.Labels[k] != v {
			t.Errorf("the metrics Service selects %s=%s, which the manager's pods lack", k, v)
		}
	}
}

// TestKustomizeOtherDirs renders the other kustomizations and checks that
// the ServiceMonitor finds the metrics Service of config/default.
func TestKustomizeOtherDirs(t *testing.T) {
	def := render(t, "config/default")
	svc := convert[corev1.Service](t, mustFind(t, def, "Service", "vmobs-controller-manager-metrics"))

	prom := render(t, "config/prometheus")
	sm := mustFind(t, prom, "ServiceMonitor", "vmobs-controller-manager-metrics-monitor")
	if sm.GetNamespace() != support.SystemNS {
		t.Errorf("ServiceMonitor in %q", sm.GetNamespace())
	}
	sel, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	for k, v := range sel {
		if svc.Labels[k] != v {
			t.Errorf("the ServiceMonitor selects %s=%s, which Service %s lacks (%v)", k, v, svc.Name, svc.Labels)
		}
	}
	eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(eps) != 1 || eps[0].(map[string]any)["port"] != svc.Spec.Ports[0].Name || eps[0].(map[string]any)["honorLabels"] != true {
		t.Errorf("ServiceMonitor endpoints %v: want port %q and honorLabels (the metrics carry their own namespace label)", eps, svc.Spec.Ports[0].Name)
	}
	mustFind(t, prom, "PrometheusRule", "vmobs-alerts")

	crd := render(t, "config/crd")
	if len(crd) != 4 {
		t.Errorf("config/crd renders %d objects, want the VMObservation, VMObservationPolicy, NodeObservation and VMIncident CRDs", len(crd))
	}
	samples := render(t, "config/samples")
	if len(samples) == 0 {
		t.Fatal("config/samples is empty")
	}
	for _, s := range samples {
		if s.GetKind() != "VMObservation" {
			continue
		}
		vmName, _, _ := unstructured.NestedString(s.Object, "spec", "vmName")
		if vmName != s.GetName() {
			t.Errorf("sample %s: spec.vmName %q must equal metadata.name", s.GetName(), vmName)
		}
	}
}

// tenantRoles are the ClusterRoles config/default renders for the users of
// VMObservations, the user-facing ClusterRole each aggregates into, and the
// verbs each grants on vmobservations (and nothing else).
var tenantRoles = []struct {
	name, aggregateTo string
	verbs             []string
}{
	{"vmobs-view", "view", []string{"get", "list", "watch"}},
	{"vmobs-edit", "edit", []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
	{"vmobs-admin", "admin", []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}},
}

// fleetView is the ClusterRole for the people who run the fleet: it reads
// the cluster-scoped objects, for a ClusterRoleBinding, and is aggregated
// into OpenShift's cluster-reader only, never into view (a VMIncident
// lists the VMs of every namespace).
const fleetView = "vmobs-fleet-view"

// fleetResources are what fleetView reads, and all it grants.
var fleetResources = []string{"vmincidents", "nodeobservations"}

// checkTenantRoles checks the rendered vmobs-view, vmobs-edit and
// vmobs-admin: the aggregation label, exactly their verbs on vmobservations
// and vmobservationpolicies, never the status subresource; and that no rendered ClusterRole takes the
// name of Kubernetes' own view, edit or admin.
func checkTenantRoles(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, want := range tenantRoles {
		cr := convert[rbacv1.ClusterRole](t, mustFind(t, objs, "ClusterRole", want.name))
		if cr.Labels["rbac.authorization.k8s.io/aggregate-to-"+want.aggregateTo] != "true" {
			t.Errorf("%s lacks rbac.authorization.k8s.io/aggregate-to-%s: \"true\": %v", cr.Name, want.aggregateTo, cr.Labels)
		}
		if len(cr.Rules) != 1 || !slices.Equal(cr.Rules[0].APIGroups, []string{"observability.vmobs.io"}) ||
			!slices.Equal(cr.Rules[0].Resources, []string{"vmobservations", "vmobservationpolicies"}) || !slices.Equal(cr.Rules[0].Verbs, want.verbs) {
			t.Errorf("%s: rules %+v, want %v on vmobservations and vmobservationpolicies.observability.vmobs.io only", cr.Name, cr.Rules, want.verbs)
		}
	}
	cr := convert[rbacv1.ClusterRole](t, mustFind(t, objs, "ClusterRole", fleetView))
	if want := map[string]string{"rbac.authorization.k8s.io/aggregate-to-cluster-reader": "true"}; !maps.Equal(aggregationLabels(cr.Labels), want) {
		t.Errorf("%s: aggregation labels %v, want %v only", fleetView, aggregationLabels(cr.Labels), want)
	}
	if len(cr.Rules) != 1 || !slices.Equal(cr.Rules[0].APIGroups, []string{"observability.vmobs.io"}) ||
		!slices.Equal(cr.Rules[0].Resources, fleetResources) || !slices.Equal(cr.Rules[0].Verbs, []string{"get", "list", "watch"}) {
		t.Errorf("%s: rules %+v, want get, list, watch on %v only", fleetView, cr.Rules, fleetResources)
	}
	for _, o := range objs {
		if o.GetKind() == "ClusterRole" && slices.Contains([]string{"view", "edit", "admin"}, o.GetName()) {
			t.Errorf("config/default renders a ClusterRole named %q, which would replace Kubernetes' own", o.GetName())
		}
	}
}

// aggregationLabels are the rbac.authorization.k8s.io/aggregate-to-*
// labels of l.
func aggregationLabels(l map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range l {
		if strings.HasPrefix(k, "rbac.authorization.k8s.io/aggregate-to-") {
			out[k] = v
		}
	}
	return out
}

// rbacObjects reads every RBAC object under config/, rendered or not, so a
// stray file cannot slip a broad rule past the test.
// The second map tells which of them carry an aggregate-to-* label, and
// into what (view, edit, admin, cluster-reader).
func rbacObjects(t *testing.T) (map[string][]rbacv1.PolicyRule, map[string]string) {
	t.Helper()
	out := map[string][]rbacv1.PolicyRule{}
	aggregated := map[string]string{}
	root := filepath.Join(support.RepoRoot(t), "config")
	eachYAMLFile(t, root, func(path string, b []byte) {
		for i, doc := range strings.Split(string(b), "\n---") {
			var obj struct {
				Kind     string `json:"kind"`
				Metadata struct {
					Name   string            `json:"name"`
					Labels map[string]string `json:"labels"`
				} `json:"metadata"`
				Rules []rbacv1.PolicyRule `json:"rules"`
			}
			if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
				continue // not every YAML under config/ is an object (e.g. Argo's test list)
			}
			if obj.Kind == "Role" || obj.Kind == "ClusterRole" {
				rel, _ := filepath.Rel(root, path)
				key := fmt.Sprintf("%s#%d %s/%s", rel, i, obj.Kind, obj.Metadata.Name)
				out[key] = obj.Rules
				for l := range aggregationLabels(obj.Metadata.Labels) {
					aggregated[key] = strings.TrimPrefix(l, "rbac.authorization.k8s.io/aggregate-to-")
				}
			}
		}
	})
	return out, aggregated
}

func TestRBACLeastPrivilege(t *testing.T) {
	roles, aggregatedRoles := rbacObjects(t)
	if len(roles) < 3 {
		t.Fatalf("found only %d Roles/ClusterRoles under config/: %v", len(roles), roles)
	}
	if len(aggregatedRoles) != len(tenantRoles)+1 {
		t.Errorf("found %d aggregated ClusterRoles under config/, want %d (the tenants' and %s): %v", len(aggregatedRoles), len(tenantRoles)+1, fleetView, aggregatedRoles)
	}
	write := []string{"create", "update", "patch", "delete", "deletecollection"}
	for name, rules := range roles {
		into := aggregatedRoles[name]
		for _, r := range rules {
			switch into {
			case "":
			case "cluster-reader":
				// A cluster-wide reader: the fleet's objects, read only.
				if !slices.Equal(r.APIGroups, []string{"observability.vmobs.io"}) || !slices.Equal(r.Verbs, []string{"get", "list", "watch"}) ||
					slices.ContainsFunc(r.Resources, func(res string) bool { return !slices.Contains(fleetResources, res) }) {
					t.Errorf("%s: aggregated into cluster-reader, rule %+v does more than read %v", name, r, fleetResources)
				}
			default:
				// A rule aggregated into view, edit or admin reaches every
				// user bound to those in any namespace: vmobservations and
				// vmobservationpolicies only, and never their status,
				// which only the controller writes.
				if !slices.Equal(r.APIGroups, []string{"observability.vmobs.io"}) ||
					slices.ContainsFunc(r.Resources, func(res string) bool { return res != "vmobservations" && res != "vmobservationpolicies" }) {
					t.Errorf("%s: aggregated into %s, rule %+v reaches beyond vmobservations and vmobservationpolicies", name, into, r)
				}
			}
			for _, field := range [][]string{r.APIGroups, r.Resources, r.Verbs, r.ResourceNames, r.NonResourceURLs} {
				for _, v := range field {
					if strings.Contains(v, "*") {
						t.Errorf("%s: rule %+v has a wildcard %q", name, r, v)
					}
				}
			}
			for _, res := range r.Resources {
				base := strings.SplitN(res, "/", 2)[0]
				if base == "secrets" {
					t.Errorf("%s: rule %+v grants secrets", name, r)
				}
				writes := slices.ContainsFunc(r.Verbs, func(v string) bool { return slices.Contains(write, v) })
				if writes && slices.Contains(r.APIGroups, "kubevirt.io") {
					t.Errorf("%s: rule %+v writes KubeVirt's %s", name, r, res)
				}
				if writes && slices.Contains(r.APIGroups, "") && (base == "pods" || base == "nodes") {
					t.Errorf("%s: rule %+v writes %s", name, r, res)
				}
				// The storage layer reads what CDI, the provisioners, the
				// PV binder and the attachers write; it writes none of it.
				if writes && slices.Contains([]string{"persistentvolumeclaims", "storageclasses", "volumeattachments", "datavolumes"}, base) {
					t.Errorf("%s: rule %+v writes %s", name, r, res)
				}
				if slices.Contains(r.Verbs, "escalate") || slices.Contains(r.Verbs, "bind") || slices.Contains(r.Verbs, "impersonate") {
					t.Errorf("%s: rule %+v can escalate", name, r)
				}
				// Of virt-api's subresources, only the guest agent's
				// three reads: the others act on the VM (console, vnc,
				// portforward, pause, migrate...).
				if slices.Contains(r.APIGroups, kubevirtv1.SubresourceGroupName) &&
					(!slices.Contains(guestReads, res) || !slices.Equal(r.Verbs, []string{"get"})) {
					t.Errorf("%s: rule %+v grants %s on %s", name, r, strings.Join(r.Verbs, ","), res)
				}
			}
		}
	}
	// And the manager has exactly those.
	var granted []string
	for name, rules := range roles {
		if !strings.HasSuffix(name, " ClusterRole/manager-role") {
			continue
		}
		for _, r := range rules {
			if slices.Contains(r.APIGroups, kubevirtv1.SubresourceGroupName) && slices.Contains(r.Verbs, "get") {
				granted = append(granted, r.Resources...)
			}
		}
	}
	slices.Sort(granted)
	if want := slices.Sorted(slices.Values(guestReads)); !slices.Equal(granted, want) {
		t.Errorf("manager-role may get %v of %s, want %v", granted, kubevirtv1.SubresourceGroupName, want)
	}
}

// guestReads are the subresources the guest probe GETs through virt-api.
var guestReads = []string{
	"virtualmachineinstances/guestosinfo",
	"virtualmachineinstances/userlist",
	"virtualmachineinstances/filesystemlist",
}
