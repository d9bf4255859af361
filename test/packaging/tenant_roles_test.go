package packaging

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/scheme"
	"github.com/vmobs/vmobs/internal/testenv"
	"github.com/vmobs/vmobs/test/support"
)

// testTenantRoles checks vmobs-view, vmobs-edit and vmobs-admin on the real
// API server, after `kubectl apply -k config/default`, and who reads the
// cluster-scoped objects (testFleetObjects).
//
// kube-apiserver creates Kubernetes' view, edit and admin ClusterRoles
// itself (its rbac/bootstrap-roles post-start hook), each with an
// aggregationRule; the rules are filled in by the clusterrole-aggregation
// controller of kube-controller-manager, which envtest does not run. So
// the test (1) checks that our roles' labels are selected by the
// aggregationRules of the API server's own roles, (2) binds users to our
// roles directly and asks SubjectAccessReviews and real requests, and
// (3) does what the aggregation controller does (each role's rules become
// the union of the rules of the ClusterRoles its selectors match) and
// binds users to view and edit, as a cluster administrator grants a
// tenant.
func testTenantRoles(ctx context.Context, t *testing.T, env *testenv.Env, admin client.Client) {
	for _, want := range tenantRoles {
		builtin := &rbacv1.ClusterRole{}
		if err := admin.Get(ctx, client.ObjectKey{Name: want.aggregateTo}, builtin); err != nil {
			t.Fatalf("the API server's own %s ClusterRole: %v", want.aggregateTo, err)
		}
		ours := &rbacv1.ClusterRole{}
		if err := admin.Get(ctx, client.ObjectKey{Name: want.name}, ours); err != nil {
			t.Fatalf("%s was not installed by config/default: %v", want.name, err)
		}
		if !selectedBy(t, builtin, ours) {
			t.Errorf("%s (labels %v) is not selected by the aggregationRule of %s: %+v", ours.Name, ours.Labels, builtin.Name, builtin.AggregationRule)
		}
	}
	// view's rules go into edit's (view carries aggregate-to-edit), edit's
	// into admin's: aggregate in that order.
	for _, name := range []string{"view", "edit", "admin"} {
		aggregate(ctx, t, admin, name)
	}

	const tenant, other = "tenant-a", "tenant-b"
	for _, ns := range []string{tenant, other} {
		if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	// A VMObservation in each namespace, to read and to list.
	for _, ns := range []string{tenant, other} {
		support.MustCreate(ctx, t, admin, &v1alpha1.VMObservation{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "existing"}, Spec: v1alpha1.VMObservationSpec{VMName: "existing"},
		})
	}

	sa := func(name string) envtest.User {
		return envtest.User{
			Name:   "system:serviceaccount:" + tenant + ":" + name,
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + tenant, "system:authenticated"},
		}
	}
	user := func(name string) envtest.User {
		return envtest.User{Name: name, Groups: []string{"system:authenticated"}}
	}
	// A VM owner reads, a tenant's GitOps ServiceAccount (Argo CD's or
	// Flux's, impersonated) declares, a namespace admin may also clear
	// them all; each bound to Kubernetes' role and to ours directly.
	subjects := []struct {
		id      string // names its RoleBinding and the VMObservation it declares
		user    envtest.User
		subject rbacv1.Subject
		role    string // bound in tenant-a by a RoleBinding
	}{
		{"owner", user("vm-owner"), rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "vm-owner"}, "view"},
		{"owner-direct", user("vm-owner-2"), rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "vm-owner-2"}, "vmobs-view"},
		{"gitops", sa("gitops"), rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: tenant, Name: "gitops"}, "edit"},
		{"gitops-direct", sa("gitops-2"), rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: tenant, Name: "gitops-2"}, "vmobs-edit"},
		{"ns-admin", user("ns-admin"), rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "ns-admin"}, "admin"},
	}
	for _, s := range subjects {
		support.MustCreate(ctx, t, admin, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: s.id},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: s.role},
			Subjects:   []rbacv1.Subject{s.subject},
		})
	}

	reads := []string{"get", "list", "watch"}
	writes := []string{"create", "update", "patch", "delete"}
	for _, s := range subjects {
		t.Run(s.id+"/"+s.role, func(t *testing.T) {
			canWrite := s.role != "view" && s.role != "vmobs-view"
			for _, verb := range append(slices.Clone(reads), writes...) {
				allowed := slices.Contains(reads, verb) || canWrite
				checkTenantAccess(ctx, t, admin, s.user, verb, "", tenant, allowed)
				// Nothing in a namespace the tenant was not given.
				checkTenantAccess(ctx, t, admin, s.user, verb, "", other, false)
			}
			checkTenantAccess(ctx, t, admin, s.user, "deletecollection", "", tenant, s.role == "admin")
			// Never the status: only the controller writes a verdict.
			for _, verb := range []string{"update", "patch"} {
				checkTenantAccess(ctx, t, admin, s.user, verb, "status", tenant, false)
			}
			// Nor anything cluster-wide.
			checkTenantAccess(ctx, t, admin, s.user, "list", "", "", false)

			// The same through real requests with the user's credentials.
			c := userClient(t, env, s.user)
			list := &v1alpha1.VMObservationList{}
			if err := c.List(ctx, list, client.InNamespace(tenant)); err != nil || len(list.Items) == 0 {
				t.Errorf("listing VMObservations in %s: %v (%d items)", tenant, err, len(list.Items))
			}
			if err := c.List(ctx, list, client.InNamespace(other)); !apierrors.IsForbidden(err) {
				t.Errorf("listing VMObservations in %s: %v, want Forbidden", other, err)
			}
			declared := &v1alpha1.VMObservation{
				ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "vm-" + s.id},
				Spec:       v1alpha1.VMObservationSpec{VMName: "vm-" + s.id},
			}
			err := c.Create(ctx, declared)
			switch {
			case canWrite && err != nil:
				t.Errorf("declaring a VMObservation in %s: %v", tenant, err)
			case !canWrite && !apierrors.IsForbidden(err):
				t.Errorf("declaring a VMObservation in %s: %v, want Forbidden", tenant, err)
			}
			if !canWrite {
				return
			}
			patch := client.MergeFrom(declared.DeepCopy())
			declared.Spec.Policy = &v1alpha1.PolicyOverrides{GuestAgentExpected: ptr.To(true)}
			if err := c.Patch(ctx, declared, patch); err != nil {
				t.Errorf("patching its own VMObservation: %v", err)
			}
			declared.Status.Verdict, declared.Status.Reason = v1alpha1.VerdictHealthy, v1alpha1.ReasonRunning
			if err := c.Status().Update(ctx, declared); !apierrors.IsForbidden(err) {
				t.Errorf("writing a verdict into status: %v, want Forbidden", err)
			}
		})
	}

	testFleetObjects(ctx, t, env, admin, tenant, subjects[0].user, subjects[2].user, subjects[4].user)
}

// testFleetObjects checks who reads the cluster-scoped VMIncidents and
// NodeObservations: no tenant (a RoleBinding cannot grant them, and a
// VMIncident lists the VMs of every namespace), who reads instead the
// incident's name on its own VMObservation; a user bound cluster-wide to
// vmobs-fleet-view reads both, writes neither, and reads no VMObservation.
// Each answer is asked twice: a SubjectAccessReview and the real
// `kubectl auth can-i`, impersonating the user.
func testFleetObjects(ctx context.Context, t *testing.T, env *testenv.Env, admin client.Client, tenant string, tenants ...envtest.User) {
	const incidentName, node = "storageclass-ceph-rbd", "node-a"
	member := &v1alpha1.VMObservation{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "member"}, Spec: v1alpha1.VMObservationSpec{VMName: "member"}}
	support.MustCreate(ctx, t, admin, member)
	member.Status.Incident = &v1alpha1.IncidentRef{Kind: v1alpha1.IncidentKindVMIncident, Name: incidentName}
	if err := admin.Status().Update(ctx, member); err != nil {
		t.Fatal(err)
	}
	support.MustCreate(ctx, t, admin, &v1alpha1.VMIncident{ObjectMeta: metav1.ObjectMeta{Name: incidentName}})
	support.MustCreate(ctx, t, admin, &v1alpha1.NodeObservation{ObjectMeta: metav1.ObjectMeta{Name: node}})

	// vmobs-fleet-view is not in view, edit or admin: a ClusterRoleBinding
	// to view would otherwise hand it out with every namespace's
	// VMObservations.
	fleet := &rbacv1.ClusterRole{}
	if err := admin.Get(ctx, client.ObjectKey{Name: fleetView}, fleet); err != nil {
		t.Fatalf("%s was not installed by config/default: %v", fleetView, err)
	}
	for _, name := range []string{"view", "edit", "admin"} {
		builtin := &rbacv1.ClusterRole{}
		if err := admin.Get(ctx, client.ObjectKey{Name: name}, builtin); err != nil {
			t.Fatal(err)
		}
		if selectedBy(t, builtin, fleet) {
			t.Errorf("%s is aggregated into %s", fleetView, name)
		}
	}
	oncall := envtest.User{Name: "oncall-1", Groups: []string{"oncall", "system:authenticated"}}
	support.MustCreate(ctx, t, admin, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "oncall-vmobs"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: fleetView},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "oncall"}},
	})

	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.Kubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	// check asks both whether user may verb resource (cluster-wide).
	check := func(t *testing.T, user envtest.User, verb, resource, sub string, want bool) {
		t.Helper()
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user.Name, Groups: user.Groups,
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Group: v1alpha1.GroupVersion.Group, Resource: resource, Subresource: sub},
		}}
		if err := admin.Create(ctx, sar); err != nil {
			t.Fatal(err)
		}
		if sar.Status.Allowed != want {
			t.Errorf("%s: %s %s/%s: allowed=%v, want %v (%s)", user.Name, verb, resource, sub, sar.Status.Allowed, want, sar.Status.Reason)
		}
		args := []string{"auth", "can-i", verb, resource + "." + v1alpha1.GroupVersion.Group, "--all-namespaces", "--as", user.Name}
		if sub != "" {
			args = append(args, "--subresource", sub)
		}
		for _, g := range user.Groups {
			args = append(args, "--as-group", g)
		}
		// can-i answers yes or no, and exits 1 on no.
		out, err := testenv.Kubectl(kubeconfig, args...)
		got := strings.TrimSpace(out)
		if (got != "yes" && got != "no") || (err == nil) != (got == "yes") {
			t.Fatalf("kubectl %s: %q, %v", strings.Join(args, " "), out, err)
		}
		if (got == "yes") != want {
			t.Errorf("kubectl %s: %s, want %v", strings.Join(args, " "), got, want)
		}
	}

	for _, u := range tenants {
		t.Run("tenant "+u.Name, func(t *testing.T) {
			for _, res := range fleetResources {
				for _, verb := range []string{"get", "list", "watch"} {
					check(t, u, verb, res, "", false)
				}
			}
			c := userClient(t, env, u)
			if err := c.Get(ctx, client.ObjectKey{Name: incidentName}, &v1alpha1.VMIncident{}); !apierrors.IsForbidden(err) {
				t.Errorf("getting VMIncident %s: %v, want Forbidden", incidentName, err)
			}
			if err := c.List(ctx, &v1alpha1.NodeObservationList{}); !apierrors.IsForbidden(err) {
				t.Errorf("listing NodeObservations: %v, want Forbidden", err)
			}
			// Its own VM's incident, by name.
			got := &v1alpha1.VMObservation{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(member), got); err != nil || got.Status.Incident == nil || got.Status.Incident.Name != incidentName {
				t.Errorf("reading its VMObservation's incident: %v, %+v", err, got.Status.Incident)
			}
		})
	}
	t.Run("fleet viewer", func(t *testing.T) {
		for _, res := range fleetResources {
			for _, verb := range []string{"get", "list", "watch"} {
				check(t, oncall, verb, res, "", true)
			}
			for _, verb := range []string{"create", "update", "patch", "delete", "deletecollection"} {
				check(t, oncall, verb, res, "", false)
			}
			check(t, oncall, "patch", res, "status", false)
		}
		check(t, oncall, "list", "vmobservations", "", false)
		c := userClient(t, env, oncall)
		if err := c.Get(ctx, client.ObjectKey{Name: incidentName}, &v1alpha1.VMIncident{}); err != nil {
			t.Errorf("getting VMIncident %s: %v", incidentName, err)
		}
		nodes := &v1alpha1.NodeObservationList{}
		if err := c.List(ctx, nodes); err != nil || len(nodes.Items) == 0 {
			t.Errorf("listing NodeObservations: %v (%d items)", err, len(nodes.Items))
		}
		if err := c.Delete(ctx, &v1alpha1.NodeObservation{ObjectMeta: metav1.ObjectMeta{Name: node}}); !apierrors.IsForbidden(err) {
			t.Errorf("deleting NodeObservation %s: %v, want Forbidden", node, err)
		}
	})
}

// selectedBy tells whether one of role's aggregationRule selectors matches
// candidate's labels, as the aggregation controller decides.
func selectedBy(t *testing.T, role, candidate *rbacv1.ClusterRole) bool {
	t.Helper()
	if role.AggregationRule == nil {
		return false
	}
	for _, ls := range role.AggregationRule.ClusterRoleSelectors {
		sel, err := metav1.LabelSelectorAsSelector(&ls)
		if err != nil {
			t.Fatalf("%s: selector %+v: %v", role.Name, ls, err)
		}
		if sel.Matches(labels.Set(candidate.Labels)) {
			return true
		}
	}
	return false
}

// aggregate does for one ClusterRole what kube-controller-manager's
// clusterrole-aggregation controller does: its rules become the rules of
// every ClusterRole its aggregationRule selects, without duplicates.
func aggregate(ctx context.Context, t *testing.T, admin client.Client, name string) {
	t.Helper()
	role := &rbacv1.ClusterRole{}
	if err := admin.Get(ctx, client.ObjectKey{Name: name}, role); err != nil {
		t.Fatal(err)
	}
	all := &rbacv1.ClusterRoleList{}
	if err := admin.List(ctx, all); err != nil {
		t.Fatal(err)
	}
	var rules []rbacv1.PolicyRule
	for i := range all.Items {
		cr := &all.Items[i]
		if cr.Name == name || !selectedBy(t, role, cr) {
			continue
		}
		for _, r := range cr.Rules {
			if !slices.ContainsFunc(rules, func(have rbacv1.PolicyRule) bool { return equalRule(have, r) }) {
				rules = append(rules, r)
			}
		}
	}
	role.Rules = rules
	if err := admin.Update(ctx, role); err != nil {
		t.Fatalf("aggregating %s: %v", name, err)
	}
}

func equalRule(a, b rbacv1.PolicyRule) bool {
	return slices.Equal(a.Verbs, b.Verbs) && slices.Equal(a.APIGroups, b.APIGroups) && slices.Equal(a.Resources, b.Resources) &&
		slices.Equal(a.ResourceNames, b.ResourceNames) && slices.Equal(a.NonResourceURLs, b.NonResourceURLs)
}

// checkTenantAccess asks the API server whether user may verb vmobservations (or a
// subresource) in ns ("" for all namespaces).
func checkTenantAccess(ctx context.Context, t *testing.T, admin client.Client, user envtest.User, verb, sub, ns string, want bool) {
	t.Helper()
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user.Name, Groups: user.Groups,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: verb, Group: v1alpha1.GroupVersion.Group, Resource: "vmobservations", Subresource: sub, Namespace: ns,
		},
	}}
	if err := admin.Create(ctx, sar); err != nil {
		t.Fatal(err)
	}
	if sar.Status.Allowed != want {
		where := ns
		if where == "" {
			where = "all namespaces"
		}
		t.Errorf("%s: %s vmobservations/%s in %s: allowed=%v, want %v (%s)", user.Name, verb, sub, where, sar.Status.Allowed, want, sar.Status.Reason)
	}
}

// userClient is a client with user's own credentials (a client
// certificate envtest issues).
func userClient(t *testing.T, env *testenv.Env, user envtest.User) client.Client {
	t.Helper()
	u, err := env.AddUser(user, env.Config)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(u.Config(), client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(fmt.Errorf("client for %s: %w", user.Name, err))
	}
	return c
}
