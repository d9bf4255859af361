package flux

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/polling"
	"github.com/fluxcd/cli-utils/pkg/kstatus/polling/clusterreader"
	"github.com/fluxcd/cli-utils/pkg/kstatus/polling/engine"
	"github.com/fluxcd/cli-utils/pkg/object"
	"github.com/fluxcd/pkg/apis/kustomize"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/cel"
	"github.com/fluxcd/pkg/runtime/statusreaders"
	"github.com/fluxcd/pkg/ssa"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/kvtest"
	"github.com/vmobs/vmobs/internal/scheme"
	"github.com/vmobs/vmobs/internal/testenv"
	"github.com/vmobs/vmobs/internal/testsupport"
	"github.com/vmobs/vmobs/internal/verdict"
)

// fluxObject is what a recipe's Kustomization or HelmRelease says about
// applying and health-checking, in the field names and types of
// kustomize-controller's and helm-controller's v1/v2 APIs.
type fluxObject struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		// Kustomization
		Path         string                               `json:"path"`
		Wait         bool                                 `json:"wait"`
		HealthChecks []meta.NamespacedObjectKindReference `json:"healthChecks"`
		// HelmRelease
		ChartRef *struct {
			Name string `json:"name"`
		} `json:"chartRef"`
		Install *struct {
			DisableWait bool `json:"disableWait"`
		} `json:"install"`
		Upgrade *struct {
			DisableWait bool `json:"disableWait"`
		} `json:"upgrade"`
		WaitStrategy *struct {
			Name string `json:"name"`
		} `json:"waitStrategy"`
		// Both
		HealthCheckExprs []kustomize.CustomHealthCheck `json:"healthCheckExprs"`
	} `json:"spec"`
}

func (o fluxObject) String() string { return o.Kind + "/" + o.Metadata.Name }

// source tells which objects a Kustomization's path or a HelmRelease's
// chart applies: the Git repository and the charts the recipes speak of.
func source(o fluxObject) (kinds []string, err error) {
	vms, observations := "VirtualMachine", "VMObservation"
	switch {
	case o.Kind == "Kustomization" && o.Spec.Path == "./clusters/prod/vms":
		return []string{vms}, nil
	case o.Kind == "Kustomization" && o.Spec.Path == "./clusters/prod/vmobservations":
		return []string{observations}, nil
	case o.Kind == "Kustomization" && o.Spec.Path == "./clusters/prod/vms-and-vmobservations":
		return []string{vms, observations}, nil
	case o.Kind == "HelmRelease" && o.Spec.ChartRef != nil && o.Spec.ChartRef.Name == "vms":
		return []string{vms}, nil
	case o.Kind == "HelmRelease" && o.Spec.ChartRef != nil && o.Spec.ChartRef.Name == "vms-health":
		return []string{observations}, nil
	}
	return nil, fmt.Errorf("%s: the test knows no path or chart %q/%+v: add it to source()", o, o.Spec.Path, o.Spec.ChartRef)
}

// toCheck is the set of objects Flux waits for after applying `applied`:
// kustomize-controller's checkHealth (internal/controller/
// kustomization_controller.go: every applied object with wait, else the
// healthChecks), and helm-controller's waiter (internal/action/wait.go:
// every object of the release unless the action's disableWait).
func toCheck(t *testing.T, o fluxObject, applied object.ObjMetadataSet) object.ObjMetadataSet {
	t.Helper()
	switch o.Kind {
	case "Kustomization":
		if o.Spec.Wait {
			return applied
		}
		var set object.ObjMetadataSet
		for _, ref := range o.Spec.HealthChecks {
			gv, err := schema.ParseGroupVersion(ref.APIVersion)
			if err != nil {
				t.Fatalf("%s: healthChecks %+v: %v", o, ref, err)
			}
			set = append(set, object.ObjMetadata{
				GroupKind: schema.GroupKind{Group: gv.Group, Kind: ref.Kind}, Namespace: ref.Namespace, Name: ref.Name,
			})
		}
		return set
	case "HelmRelease":
		// The recipe installs; an upgrade must behave the same.
		install := o.Spec.Install != nil && o.Spec.Install.DisableWait
		upgrade := o.Spec.Upgrade != nil && o.Spec.Upgrade.DisableWait
		if install != upgrade {
			t.Errorf("%s: install.disableWait=%v but upgrade.disableWait=%v", o, install, upgrade)
		}
		if install {
			return nil
		}
		if o.Spec.WaitStrategy != nil && o.Spec.WaitStrategy.Name != "poller" && len(o.Spec.HealthCheckExprs) > 0 {
			t.Errorf("%s: healthCheckExprs are read only with waitStrategy poller, not %q", o, o.Spec.WaitStrategy.Name)
		}
		return applied
	}
	t.Fatalf("%s: not a Kustomization or HelmRelease", o)
	return nil
}

// waitFor waits as the Flux controller of o does for the set: the same
// status readers in the same order, the same poller, ssa's WaitForSet.
func waitFor(ctx context.Context, t *testing.T, c client.Client, o fluxObject, set object.ObjMetadataSet, timeout time.Duration) error {
	t.Helper()
	ctor, err := cel.NewStatusReader(o.Spec.HealthCheckExprs)
	if err != nil {
		t.Fatalf("%s: healthCheckExprs: %v", o, err)
	}
	mapper := c.RESTMapper()
	var readers []engine.StatusReader
	opts := polling.Options{}
	switch o.Kind {
	case "Kustomization":
		// kustomization_controller.go getClientAndPoller.
		readers = append(readers, statusreaders.NewCustomJobStatusReader(mapper))
		if len(o.Spec.HealthCheckExprs) > 0 {
			readers = append(readers, ctor(mapper))
		}
	case "HelmRelease":
		// helmrelease_controller.go: the spec's readers, then (for Wait)
		// none; a direct cluster reader.
		readers = append(readers, ctor(mapper))
		opts.ClusterReaderFactory = engine.ClusterReaderFactoryFunc(clusterreader.NewDirectClusterReader)
	}
	opts.CustomStatusReaders = readers
	poller := polling.NewStatusPoller(c, mapper, opts)
	return ssa.NewResourceManager(c, poller, ssa.Owner{}).WaitForSetWithContext(ctx, set, ssa.WaitOptions{
		Interval: 250 * time.Millisecond, Timeout: timeout,
	})
}

// recipes reads every Kustomization and HelmRelease of the recipe files and
// of docs/flux.md's YAML blocks.
func recipes(t *testing.T) []fluxObject {
	t.Helper()
	root := testenv.RepoRoot()
	var texts []string
	for _, f := range []string{"flux-healthcheck.yaml", "flux-helmrelease.yaml"} {
		b, err := os.ReadFile(filepath.Join(root, "docs", f))
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, string(b))
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "flux.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, block := range testsupport.CodeBlocks(string(doc), "yaml") {
		if block != texts[0] && block != texts[1] {
			texts = append(texts, block)
		}
	}
	var out []fluxObject
	for _, text := range texts {
		d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader([]byte(text)), 4096)
		for {
			var raw map[string]any
			if err := d.Decode(&raw); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				t.Fatal(err)
			}
			if raw == nil {
				continue
			}
			b, _ := yaml.Marshal(raw)
			var o fluxObject
			if err := yaml.Unmarshal(b, &o); err != nil {
				t.Fatal(err)
			}
			if o.Kind == "Kustomization" && o.APIVersion == "kustomize.toolkit.fluxcd.io/v1" ||
				o.Kind == "HelmRelease" && o.APIVersion == "helm.toolkit.fluxcd.io/v2" {
				out = append(out, o)
			}
		}
	}
	return out
}

// The VMs of the test, kvtest's objects in the docs' namespace: rhel9-db
// runs and has a restart pending (a template change KubeVirt applies at
// the next restart), build-runner is stopped as declared; ci-7, added
// later, is still booting.
const ns = "vms-prod"

// cluster is what the recipes' sources put on the API server, with the
// statuses KubeVirt and vmobs write.
type cluster struct {
	vms    object.ObjMetadataSet
	vmobs  object.ObjMetadataSet
	byKind map[string]object.ObjMetadataSet
}

func (cl *cluster) add(vm *kubevirtv1.VirtualMachine, obs *v1alpha1.VMObservation) {
	cl.vms = append(cl.vms, object.ObjMetadata{GroupKind: schema.GroupKind{Group: "kubevirt.io", Kind: "VirtualMachine"}, Namespace: vm.Namespace, Name: vm.Name})
	cl.vmobs = append(cl.vmobs, object.ObjMetadata{GroupKind: schema.GroupKind{Group: v1alpha1.GroupVersion.Group, Kind: "VMObservation"}, Namespace: obs.Namespace, Name: obs.Name})
	cl.byKind = map[string]object.ObjMetadataSet{"VirtualMachine": cl.vms, "VMObservation": cl.vmobs}
}

func (cl *cluster) applied(t *testing.T, o fluxObject) object.ObjMetadataSet {
	t.Helper()
	kinds, err := source(o)
	if err != nil {
		t.Fatal(err)
	}
	var set object.ObjMetadataSet
	for _, k := range kinds {
		set = append(set, cl.byKind[k]...)
	}
	return set
}

// createVM creates vm as the user does, then writes its status as
// virt-controller does; with a template change after creation when
// restartPending.
func createVM(ctx context.Context, t *testing.T, c client.Client, vm *kubevirtv1.VirtualMachine, restartPending bool) {
	t.Helper()
	st := vm.Status
	vm.UID, vm.ResourceVersion, vm.Generation, vm.CreationTimestamp = "", "", 0, metav1.Time{}
	if err := c.Create(ctx, vm); err != nil {
		t.Fatal(err)
	}
	if restartPending {
		// More memory: not live-updatable here, so virt-controller keeps
		// the VMI as it is and says RestartRequired; the VMI's generation
		// annotation, which status.observedGeneration copies
		// (kv:pkg/virt-controller/watch/vm/vm.go syncGenerationInfo),
		// stays at the old generation.
		vm.Spec.Template.Spec.Domain.Memory.Guest = ptrTo(resource.MustParse("8Gi"))
		if err := c.Update(ctx, vm); err != nil {
			t.Fatal(err)
		}
		st.ObservedGeneration, st.DesiredGeneration = vm.Generation-1, vm.Generation
		st.Conditions = append(st.Conditions, kubevirtv1.VirtualMachineCondition{
			Type: kubevirtv1.VirtualMachineRestartRequired, Status: corev1.ConditionTrue,
			Message: "a non-live-updatable field was changed in the template spec", LastTransitionTime: kvtest.At(-time.Minute),
		})
	} else {
		st.ObservedGeneration, st.DesiredGeneration = vm.Generation, vm.Generation
	}
	vm.Status = st
	if err := c.Status().Update(ctx, vm); err != nil {
		t.Fatal(err)
	}
}

// createObservation declares the VMObservation (as Git does) and writes the
// status the verdict engine gives for in (as vmobs does).
func createObservation(ctx context.Context, t *testing.T, c client.Client, in verdict.Input, want v1alpha1.Verdict, reason string) *v1alpha1.VMObservation {
	t.Helper()
	st := verdict.Evaluate(in).Status
	if st.Verdict != want || st.Reason != reason {
		t.Fatalf("%s: the engine says %s/%s (%s), the test expects %s/%s: fix the fixture", in.Name, st.Verdict, st.Reason, st.Message, want, reason)
	}
	obs := &v1alpha1.VMObservation{
		ObjectMeta: metav1.ObjectMeta{Namespace: in.Namespace, Name: in.Name},
		Spec:       v1alpha1.VMObservationSpec{VMName: in.Name},
	}
	if err := c.Create(ctx, obs); err != nil {
		t.Fatal(err)
	}
	obs.Status = *st.DeepCopy()
	obs.Status.ObservedGeneration = obs.Generation
	if err := c.Status().Update(ctx, obs); err != nil {
		t.Fatal(err)
	}
	return obs
}

func ptrTo[T any](v T) *T { return &v }

// vmNamed is kvtest's VM renamed, with a template (the CRD requires one).
func vmNamed(name string, mods ...kvtest.VMMod) *kubevirtv1.VirtualMachine {
	vm := kvtest.VM(mods...)
	vm.Namespace, vm.Name = ns, name
	vm.Spec.Template = &kubevirtv1.VirtualMachineInstanceTemplateSpec{Spec: kvtest.RunningVMI().Spec}
	return vm
}

// renamed moves kvtest's VMI or pod next to the VM name.
func renamed[T metav1.Object](obj T, name string) T {
	obj.SetNamespace(ns)
	if name != "" {
		obj.SetName(name)
	}
	return obj
}

// launcherOf is kvtest's launcher pod in the test's namespace, owned and
// labelled as virt-controller makes it for the VMI named vmi.
func launcherOf(vmi string) *corev1.Pod {
	p := renamed(kvtest.LauncherPod(), "")
	for i := range p.OwnerReferences {
		p.OwnerReferences[i].Name = vmi
	}
	p.Labels["vm.kubevirt.io/name"] = vmi
	p.Labels[kubevirtv1.VirtualMachineInstanceIDLabel] = vmi
	p.Annotations[kubevirtv1.DomainAnnotation] = vmi
	return p
}

func nodes() map[string]*corev1.Node {
	return map[string]*corev1.Node{kvtest.NodeA: kvtest.Node(kvtest.NodeA), kvtest.NodeB: kvtest.Node(kvtest.NodeB)}
}

// TestRecipes plays a stopped VM and a running VM with a restart pending
// through each recipe, on a real API server: the health check each recipe
// configures completes (every checked object Current), where `wait: true`
// over the VirtualMachines does not. Then a VM that is still booting: the
// recipes wait for it.
func TestRecipes(t *testing.T) {
	env, err := testenv.Start(testenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stopping the control plane: %v", err)
		}
	})
	// No client-side rate limit: a HelmRelease's direct cluster reader
	// polls every object every 250 ms, and client-go's default of 5 QPS
	// would end a wait with the limiter's error before its timeout names
	// what it waits on (the controllers run with higher limits).
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS = -1
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}

	cl := &cluster{}
	// rhel9-db: runs on node-a with a restart pending.
	vm1 := vmNamed("rhel9-db")
	createVM(ctx, t, c, vm1, true)
	in1 := verdict.Input{Namespace: ns, Name: vm1.Name, VM: vm1, VMI: renamed(kvtest.RunningVMI(), vm1.Name), Pods: []*corev1.Pod{launcherOf(vm1.Name)},
		Nodes: nodes(), Policy: verdict.DefaultPolicy(), Now: kvtest.Now}
	cl.add(vm1, createObservation(ctx, t, c, in1, v1alpha1.VerdictHealthy, v1alpha1.ReasonRunning))
	// build-runner: stopped as declared.
	vm2 := vmNamed("build-runner", kvtest.WithRunStrategy(kubevirtv1.RunStrategyHalted), kvtest.VMStopped())
	createVM(ctx, t, c, vm2, false)
	in2 := verdict.Input{Namespace: ns, Name: vm2.Name, VM: vm2, Nodes: nodes(), Policy: verdict.DefaultPolicy(), Now: kvtest.Now}
	cl.add(vm2, createObservation(ctx, t, c, in2, v1alpha1.VerdictSuspended, v1alpha1.ReasonStopped))

	objs := recipes(t)
	if len(objs) < 5 {
		t.Fatalf("found %d Flux objects in the recipes, want the two Kustomizations, the two HelmReleases and the healthChecks example: %v", len(objs), objs)
	}
	waited := 0
	for _, o := range objs {
		t.Run("completes/"+o.String(), func(t *testing.T) {
			set := toCheck(t, o, cl.applied(t, o))
			for _, id := range set {
				if id.GroupKind.Kind == "VirtualMachine" {
					t.Errorf("%s health-checks VirtualMachine %s: a stopped VM or one with a restart pending would hold it", o, id.Name)
				}
			}
			if len(set) > 0 {
				waited++
			}
			if err := waitFor(ctx, t, c, o, set, 30*time.Second); err != nil {
				t.Errorf("%s's health check over %v did not complete: %v", o, set, err)
			}
		})
	}
	if waited < 3 {
		t.Errorf("only %d of the recipes' objects wait for anything; the VMObservations go unchecked", waited)
	}

	// What the recipes avoid: waiting over the VirtualMachines themselves.
	exprs := objs[len(objs)-1].Spec.HealthCheckExprs
	for _, o := range objs {
		if len(o.Spec.HealthCheckExprs) > 0 {
			exprs = o.Spec.HealthCheckExprs
			break
		}
	}
	waitAll := fluxObject{Kind: "Kustomization"}
	waitAll.Metadata.Name = "wait-over-vms"
	waitAll.Spec.Path, waitAll.Spec.Wait, waitAll.Spec.HealthCheckExprs = "./clusters/prod/vms-and-vmobservations", true, exprs
	// Nor can a healthCheckExprs entry that calls every VirtualMachine
	// Current rescue it: Flux compares observedGeneration with generation
	// before it evaluates any expression.
	forced := waitAll
	forced.Metadata.Name = "wait-over-vms-current-true"
	forced.Spec.HealthCheckExprs = append([]kustomize.CustomHealthCheck{{
		APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine",
		HealthCheckExpressions: kustomize.HealthCheckExpressions{Current: "true"},
	}}, exprs...)
	for _, tc := range []struct {
		o       fluxObject
		holding []string // the VMs the wait times out on
	}{
		{waitAll, []string{vm1.Name, vm2.Name}},
		{forced, []string{vm1.Name}},
	} {
		t.Run("hangs/"+tc.o.Metadata.Name, func(t *testing.T) {
			err := waitFor(ctx, t, c, tc.o, toCheck(t, tc.o, cl.applied(t, tc.o)), 3*time.Second)
			if err == nil {
				t.Fatalf("%s completed: waiting over the VMs should not", tc.o.Metadata.Name)
			}
			for _, name := range []string{vm1.Name, vm2.Name} {
				holds := strings.Contains(err.Error(), "VirtualMachine/"+ns+"/"+name)
				if want := slices.Contains(tc.holding, name); holds != want {
					t.Errorf("VM %s holds the wait: %v, want %v (%v)", name, holds, want, err)
				}
			}
			if strings.Contains(err.Error(), "VMObservation/") {
				t.Errorf("a VMObservation holds the wait: %v", err)
			}
			t.Logf("%s: %v", tc.o.Metadata.Name, err)
		})
	}

	// ci-7 boots: its VMObservation is Progressing (Reconciling=True), and
	// every recipe that waits keeps waiting, naming it.
	vm3 := vmNamed("ci-7", func(vm *kubevirtv1.VirtualMachine) {
		vm.Status.Ready, vm.Status.PrintableStatus = false, kubevirtv1.VirtualMachineStatusStarting
		vm.Status.Conditions[0].Status = corev1.ConditionFalse
	})
	createVM(ctx, t, c, vm3, false)
	vmi3 := renamed(kvtest.PendingVMI(kubevirtv1.Scheduling, 30*time.Second), vm3.Name)
	in3 := verdict.Input{Namespace: ns, Name: vm3.Name, VM: vm3, VMI: vmi3, Nodes: nodes(), Policy: verdict.DefaultPolicy(), Now: kvtest.Now}
	cl.add(vm3, createObservation(ctx, t, c, in3, v1alpha1.VerdictProgressing, v1alpha1.ReasonScheduling))
	for _, o := range objs {
		set := toCheck(t, o, cl.applied(t, o))
		if !set.Contains(cl.vmobs[len(cl.vmobs)-1]) {
			continue // the healthChecks example names the first two only
		}
		t.Run("waits/"+o.String(), func(t *testing.T) {
			err := waitFor(ctx, t, c, o, set, 3*time.Second)
			if err == nil || !strings.Contains(err.Error(), "VMObservation/"+ns+"/"+vm3.Name) {
				t.Errorf("%s: want a wait that times out on VMObservation %s, got %v", o, vm3.Name, err)
			}
		})
	}
}
