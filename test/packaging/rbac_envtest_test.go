package packaging

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/app"
	"github.com/vmobs/vmobs/internal/scheme"
	"github.com/vmobs/vmobs/internal/simulator"
	"github.com/vmobs/vmobs/internal/testenv"
	"github.com/vmobs/vmobs/test/support"
)

// The controller's identity as the API server sees a pod of the Deployment
// of config/default: the ServiceAccount's user name and groups. envtest
// authenticates users by client certificate, so a user with exactly this
// name and these groups is, for RBAC, that ServiceAccount.
var saUser = envtest.User{
	Name:   "system:serviceaccount:" + support.SystemNS + ":" + support.ServiceAccount,
	Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + support.SystemNS, "system:authenticated"},
}

// TestManifestsOnAPIServer installs config/default with the real kubectl on
// a real kube-apiserver, then checks that the controller's RBAC allows what
// it needs and nothing more (SubjectAccessReviews), runs the manager as that
// ServiceAccount through a VM's life, has the restricted Pod Security
// admission judge the manager's pod, and checks the tenant roles
// (vmobs-view, vmobs-edit, vmobs-admin) as a namespace user and a tenant's
// GitOps ServiceAccount.
func TestManifestsOnAPIServer(t *testing.T) {
	// Aggregation: the guest probe's calls go through virt-api, an
	// aggregated API, which the simulator serves.
	env, admin := testenv.StartForTest(t, testenv.Options{Aggregation: true})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.Kubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	// What a user runs. The CRD is already installed by testenv; applying
	// it again must be a no-op.
	out, err := testenv.Kubectl(kubeconfig, "apply", "-k", filepath.Join(support.RepoRoot(t), "config", "default"))
	if err != nil {
		t.Fatalf("kubectl apply -k config/default: %v\n%s", err, out)
	}
	t.Logf("kubectl apply -k config/default:\n%s", out)

	user, err := env.AddUser(saUser, env.Config)
	if err != nil {
		t.Fatal(err)
	}
	userCfg := user.Config()

	t.Run("SubjectAccessReviews", func(t *testing.T) {
		checks := []sarCheck{
			// What the controller needs.
			{"list", "kubevirt.io", "virtualmachineinstances", "", "", true},
			{"watch", "kubevirt.io", "virtualmachineinstances", "", "", true},
			{"get", "kubevirt.io", "virtualmachines", "", "vms-prod", true},
			{"watch", "kubevirt.io", "virtualmachineinstancemigrations", "", "", true},
			{"list", "", "pods", "", "", true},
			{"watch", "", "nodes", "", "", true},
			{"create", "observability.vmobs.io", "vmobservations", "", "vms-prod", true},
			{"patch", "observability.vmobs.io", "vmobservations", "status", "vms-prod", true},
			{"create", "events.k8s.io", "events", "", "vms-prod", true},
			{"create", "coordination.k8s.io", "leases", "", support.SystemNS, true},
			{"update", "coordination.k8s.io", "leases", "", support.SystemNS, true},
			{"create", "authentication.k8s.io", "tokenreviews", "", "", true},
			{"create", "authorization.k8s.io", "subjectaccessreviews", "", "", true},
			// What it must not have.
			{"get", "", "secrets", "", "", false},
			{"get", "", "secrets", "", support.SystemNS, false},
			{"list", "", "secrets", "", "vms-prod", false},
			{"get", "", "configmaps", "", "vms-prod", false},
			{"patch", "kubevirt.io", "virtualmachineinstances", "", "vms-prod", false},
			{"update", "kubevirt.io", "virtualmachines", "", "vms-prod", false},
			{"delete", "kubevirt.io", "virtualmachineinstances", "", "vms-prod", false},
			{"create", "kubevirt.io", "virtualmachineinstancemigrations", "", "vms-prod", false},
			{"patch", "kubevirt.io", "virtualmachineinstances", "status", "vms-prod", false},
			{"delete", "", "pods", "", "vms-prod", false},
			{"create", "", "pods", "eviction", "vms-prod", false},
			{"patch", "", "nodes", "", "", false},
			{"create", "coordination.k8s.io", "leases", "", "kube-system", false},
			{"create", "rbac.authorization.k8s.io", "clusterrolebindings", "", "", false},
		}
		checks = append(checks, guestSubresourceChecks()...)
		for _, c := range checks {
			sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User: saUser.Name, Groups: saUser.Groups,
				ResourceAttributes: &authorizationv1.ResourceAttributes{
					Verb: c.verb, Group: c.group, Resource: c.resource, Subresource: c.sub, Namespace: c.ns,
				},
			}}
			if err := admin.Create(ctx, sar); err != nil {
				t.Fatal(err)
			}
			if sar.Status.Allowed != c.allowed {
				where := c.ns
				if where == "" {
					where = "all namespaces"
				}
				t.Errorf("%s %s.%s/%s in %s: allowed=%v, want %v (%s)", c.verb, c.resource, c.group, c.sub, where,
					sar.Status.Allowed, c.allowed, sar.Status.Reason)
			}
		}
		// And the user's own client is refused.
		userClient, err := client.New(userCfg, client.Options{Scheme: scheme.New()})
		if err != nil {
			t.Fatal(err)
		}
		err = userClient.Get(ctx, client.ObjectKey{Namespace: support.SystemNS, Name: "anything"}, &corev1.Secret{})
		if !apierrors.IsForbidden(err) {
			t.Errorf("reading a Secret as the controller: %v, want Forbidden", err)
		}
	})

	t.Run("GuestAgentThroughVirtAPI", func(t *testing.T) {
		testGuestAgentThroughVirtAPI(ctx, t, env, admin, userCfg)
	})

	t.Run("ManagerAsServiceAccount", func(t *testing.T) {
		testManagerAsServiceAccount(ctx, t, admin, userCfg)
	})

	t.Run("MetricsBehindTokenAndAccessReviews", func(t *testing.T) {
		testMetricsBehindReviews(ctx, t, admin, userCfg)
	})

	t.Run("PodSecurityRestricted", func(t *testing.T) {
		testPodSecurity(ctx, t, admin, managerDeployment(t, render(t, "config/default")))
	})

	t.Run("TenantRoles", func(t *testing.T) {
		testTenantRoles(ctx, t, env, admin)
	})
}

// testManagerAsServiceAccount runs the manager (leader election on, in
// vmobs-system, as the Deployment does) with the ServiceAccount's
// credentials and creates a running VM the way KubeVirt leaves one. The
// VMObservation must appear with a verdict: every read, the status write,
// the Lease and the Events went through that RBAC.
func testManagerAsServiceAccount(ctx context.Context, t *testing.T, admin client.Client, userCfg *rest.Config) {
	opts := app.InProcessOptions()
	opts.LeaderElection = true
	opts.LeaderElectionNamespace = support.SystemNS
	opts.LeaseDuration, opts.RenewDeadline, opts.RetryPeriod = 4*time.Second, 3*time.Second, time.Second
	opts.ReleaseLeaderOnCancel = true
	mgr, err := app.StartInProcess(ctx, userCfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := mgr.Stop(); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()

	// A VM running for two minutes on a node whose virt-handler just beat.
	f := support.Fixtures{Now: time.Now().UTC().Truncate(time.Second)}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: support.VMNamespace}}
	if err := admin.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	node := f.Node(support.NodeA, 0)
	node.UID, node.CreationTimestamp = "", metav1.Time{}
	nodeStatus := node.Status
	support.MustCreate(ctx, t, admin, node)
	node.Status = nodeStatus
	if err := admin.Status().Update(ctx, node); err != nil {
		t.Fatal(err)
	}

	vm := f.VM(kubevirtv1.RunStrategyAlways)
	vm.UID, vm.CreationTimestamp, vm.Generation = "", metav1.Time{}, 0
	vmStatus := vm.Status
	support.MustCreate(ctx, t, admin, vm)
	vm.Status = vmStatus
	if err := admin.Status().Update(ctx, vm); err != nil {
		t.Fatal(err)
	}

	// The VMI has no status subresource: KubeVirt writes its status with
	// the object. As virt-controller does, it is created first (Scheduling),
	// then its launcher pod, then the VMI turns Running and lists the pod in
	// activePods. Times are relative to now: running for two minutes.
	vmi := f.RunningVMI()
	vmi.UID, vmi.CreationTimestamp, vmi.Generation = "", metav1.Time{}, 0
	vmi.OwnerReferences[0].UID = vm.UID
	running := vmi.Status
	vmi.Status = kubevirtv1.VirtualMachineInstanceStatus{
		Phase: kubevirtv1.Scheduling,
		PhaseTransitionTimestamps: []kubevirtv1.VirtualMachineInstancePhaseTransitionTimestamp{
			{Phase: kubevirtv1.Pending, PhaseTransitionTimestamp: f.At(-150 * time.Second)},
			{Phase: kubevirtv1.Scheduling, PhaseTransitionTimestamp: f.At(-149 * time.Second)},
		},
	}
	support.MustCreate(ctx, t, admin, vmi)

	pod := f.LauncherPod()
	pod.UID, pod.CreationTimestamp = "", metav1.Time{}
	pod.Labels[kubevirtv1.CreatedByLabel] = string(vmi.UID)
	pod.OwnerReferences[0].UID = vmi.UID
	podStatus := pod.Status
	for i := range podStatus.Conditions {
		podStatus.Conditions[i].LastTransitionTime = f.At(-140 * time.Second)
	}
	podStatus.ContainerStatuses[0].State.Running.StartedAt = f.At(-141 * time.Second)
	podStatus.StartTime = ptr.To(f.At(-145 * time.Second))
	support.MustCreate(ctx, t, admin, pod)
	pod.Status = podStatus
	if err := admin.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}

	vmi.Status = running
	vmi.Status.PhaseTransitionTimestamps = []kubevirtv1.VirtualMachineInstancePhaseTransitionTimestamp{
		{Phase: kubevirtv1.Pending, PhaseTransitionTimestamp: f.At(-150 * time.Second)},
		{Phase: kubevirtv1.Scheduling, PhaseTransitionTimestamp: f.At(-149 * time.Second)},
		{Phase: kubevirtv1.Scheduled, PhaseTransitionTimestamp: f.At(-132 * time.Second)},
		{Phase: kubevirtv1.Running, PhaseTransitionTimestamp: f.At(-125 * time.Second)},
	}
	for i := range vmi.Status.Conditions {
		vmi.Status.Conditions[i].LastTransitionTime = f.At(-2 * time.Minute)
		if !vmi.Status.Conditions[i].LastProbeTime.IsZero() {
			vmi.Status.Conditions[i].LastProbeTime = f.At(-100 * time.Second)
		}
	}
	vmi.Status.ActivePods = map[types.UID]string{pod.UID: support.NodeA}
	if err := admin.Update(ctx, vmi); err != nil {
		t.Fatal(err)
	}

	obs := &v1alpha1.VMObservation{}
	key := client.ObjectKey{Namespace: support.VMNamespace, Name: support.VMName}
	var last string
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := admin.Get(ctx, key, obs); err != nil {
			last = err.Error()
			return false, nil
		}
		last = fmt.Sprintf("verdict %q reason %q observedGeneration %d/%d: %s", obs.Status.Verdict, obs.Status.Reason,
			obs.Status.ObservedGeneration, obs.Generation, obs.Status.Message)
		// Transient verdicts (the VMI was Scheduling a moment ago) are
		// fine on the way; the settled one must be Healthy.
		return obs.Status.Verdict == v1alpha1.VerdictHealthy && obs.Status.ObservedGeneration == obs.Generation, nil
	})
	if err != nil {
		if obs.Status.Verdict == "" {
			t.Fatalf("no VMObservation with a verdict written by the manager running as %s: %s", saUser.Name, last)
		}
		t.Fatalf("a running VM on a healthy node does not read Healthy: %s (layers %+v)", last, obs.Status.Layers)
	}
	t.Logf("VMObservation %s: %s", key, last)
	if len(obs.OwnerReferences) == 0 || obs.OwnerReferences[0].UID != vm.UID {
		t.Errorf("the VMObservation is not owned by its VM: %+v", obs.OwnerReferences)
	}

	// Leader election went through the namespaced Role.
	lease := &coordinationv1.Lease{}
	if err := admin.Get(ctx, client.ObjectKey{Namespace: support.SystemNS, Name: opts.LeaderElectionID}, lease); err != nil {
		t.Errorf("leader election Lease in %s: %v", support.SystemNS, err)
	} else if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		t.Errorf("the Lease has no holder: %+v", lease.Spec)
	}

	// A verdict transition is recorded as an Event by the controller (a
	// layer's first verdict is not, when it is Healthy): the user pauses
	// the VM.
	if err := admin.Get(ctx, client.ObjectKeyFromObject(vmi), vmi); err != nil {
		t.Fatal(err)
	}
	vmi.Status.Conditions = append(vmi.Status.Conditions, kubevirtv1.VirtualMachineInstanceCondition{
		Type: kubevirtv1.VirtualMachineInstancePaused, Status: corev1.ConditionTrue,
		Reason: "PausedByUser", LastTransitionTime: metav1.Now(),
	})
	if err := admin.Update(ctx, vmi); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		events := &eventsv1.EventList{}
		if err := admin.List(ctx, events, client.InNamespace(support.VMNamespace)); err != nil {
			return false, err
		}
		for _, e := range events.Items {
			if e.Regarding.Kind == "VMObservation" && e.Regarding.Name == support.VMName {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Errorf("no Event about the VMObservation: %v", err)
	}

	// The scrape-time collector lists VMObservations with the same rights.
	mfs, err := opts.Registry.(*prometheus.Registry).Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, mf := range mfs {
		if mf.GetName() == "vmobs_collector_errors" && mf.GetMetric()[0].GetGauge().GetValue() != 0 {
			t.Error("vmobs_collector_errors is 1: the collector cannot list VMObservations")
		}
		if mf.GetName() != "vmobs_layer_verdict" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["namespace"] == support.VMNamespace && labels["name"] == support.VMName && m.GetGauge().GetValue() == 1 {
				found = true
			}
		}
	}
	if !found {
		t.Error("no vmobs_layer_verdict series for the VM")
	}
}

// sarCheck is a SubjectAccessReview for the controller's ServiceAccount
// and its expected answer.
type sarCheck struct {
	verb, group, resource, sub, ns string
	allowed                        bool
}

// guestSubresourceChecks: of virt-api's subresources, the controller may
// get the guest agent's three reads, in any namespace, and nothing else:
// not another verb on them, not the subresources that act on the VM or
// open a channel into it.
func guestSubresourceChecks() []sarCheck {
	const group = kubevirtv1.SubresourceGroupName
	var checks []sarCheck
	for _, sub := range []string{"guestosinfo", "userlist", "filesystemlist"} {
		for _, ns := range []string{"", "vms-prod"} {
			checks = append(checks, sarCheck{"get", group, "virtualmachineinstances", sub, ns, true})
		}
		for _, verb := range []string{"list", "watch", "create", "update", "patch", "delete"} {
			checks = append(checks, sarCheck{verb, group, "virtualmachineinstances", sub, "vms-prod", false})
		}
	}
	// virt-api's routes: console, vnc, usbredir, vsock and portforward
	// are GETs (websockets); the actions are PUTs, hence update.
	for _, sub := range []string{"console", "vnc", "vnc/screenshot", "portforward", "usbredir", "vsock",
		"pause", "unpause", "freeze", "unfreeze", "softreboot", "reset", "addvolume", "removevolume", "backup"} {
		for _, verb := range []string{"get", "update"} {
			checks = append(checks, sarCheck{verb, group, "virtualmachineinstances", sub, "vms-prod", false})
		}
	}
	for _, sub := range []string{"start", "stop", "restart", "migrate", "portforward", "addvolume", "memorydump", "expand-spec"} {
		for _, verb := range []string{"get", "update"} {
			checks = append(checks, sarCheck{verb, group, "virtualmachines", sub, "vms-prod", false})
		}
	}
	return checks
}

// testGuestAgentThroughVirtAPI calls virt-api (the simulator's, registered
// as an aggregated API) as the controller's ServiceAccount, the way the
// guest probe does: guestosinfo answers 200; vnc and console are refused
// by kube-apiserver's authorizer (403) before the request reaches virt-api.
func testGuestAgentThroughVirtAPI(ctx context.Context, t *testing.T, env *testenv.Env, admin client.Client, userCfg *rest.Config) {
	sim := simulator.New(admin)
	api, err := sim.ServeVirtAPI(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := api.Close(); err != nil {
			t.Errorf("closing virt-api: %v", err)
		}
	}()
	const ns, node, vm = "vms-guest", "node-guest", "vm-guest"
	if err := sim.EnsureNamespace(ctx, ns); err != nil {
		t.Fatal(err)
	}
	if err := sim.AddNode(ctx, node); err != nil {
		t.Fatal(err)
	}
	if err := sim.CreateVM(ctx, simulator.VMSpec{Namespace: ns, Name: vm, GuestAgent: true}); err != nil {
		t.Fatal(err)
	}
	if err := sim.Boot(ctx, ns, vm, node); err != nil {
		t.Fatal(err)
	}

	hc, err := rest.HTTPClientFor(userCfg)
	if err != nil {
		t.Fatal(err)
	}
	call := func(sub string) (int, []byte) {
		t.Helper()
		url := strings.TrimSuffix(userCfg.Host, "/") + "/apis/" + kubevirtv1.SubresourceGroupName + "/v1/namespaces/" + ns + "/virtualmachineinstances/" + vm + "/" + sub
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, body
	}

	code, body := call("guestosinfo")
	info := kubevirtv1.VirtualMachineInstanceGuestAgentInfo{}
	if code != http.StatusOK {
		t.Fatalf("guestosinfo as %s: %d %s", saUser.Name, code, body)
	}
	if err := json.Unmarshal(body, &info); err != nil || info.Hostname != vm {
		t.Errorf("guestosinfo as %s: %v %s", saUser.Name, err, body)
	}
	for _, sub := range []string{"vnc", "console"} {
		code, body := call(sub)
		st := metav1.Status{}
		_ = json.Unmarshal(body, &st)
		// kube-apiserver's refusal is a Status naming the subresource;
		// virt-api would have answered 401 or 404.
		if code != http.StatusForbidden || st.Reason != metav1.StatusReasonForbidden ||
			!strings.Contains(st.Message, `"virtualmachineinstances/`+sub+`"`) {
			t.Errorf("%s as %s: %d %s, want 403 from kube-apiserver", sub, saUser.Name, code, body)
		}
	}
}

// testPodSecurity has the API server admit the manager's pod, as the
// Deployment's ReplicaSet would create it, in vmobs-system, whose
// namespace enforces the restricted Pod Security Standard. A copy without
// the security context is refused, which shows the admission is on.
func testPodSecurity(ctx context.Context, t *testing.T, admin client.Client, dep *appsv1.Deployment) {
	ns := &corev1.Namespace{}
	if err := admin.Get(ctx, client.ObjectKey{Name: support.SystemNS}, ns); err != nil {
		t.Fatal(err)
	}
	if ns.Labels["pod-security.kubernetes.io/enforce"] != "restricted" {
		t.Fatalf("namespace %s is labelled %v", support.SystemNS, ns.Labels)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: support.SystemNS, GenerateName: dep.Name + "-", Labels: dep.Spec.Template.Labels},
		Spec:       *dep.Spec.Template.Spec.DeepCopy(),
	}
	if err := admin.Create(ctx, pod.DeepCopy(), client.DryRunAll); err != nil {
		t.Errorf("the manager's pod is not admitted under Pod Security %q: %v", "restricted", err)
	}

	loose := pod.DeepCopy()
	loose.Spec.SecurityContext = nil
	loose.Spec.Containers[0].SecurityContext = nil
	err := admin.Create(ctx, loose, client.DryRunAll)
	var status apierrors.APIStatus
	if err == nil || !errors.As(err, &status) || !strings.Contains(err.Error(), "PodSecurity") {
		t.Errorf("a pod without a security context was not refused by PodSecurity admission (%v): the check above proves nothing", err)
	}
}
