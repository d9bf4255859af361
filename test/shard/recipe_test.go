package shard

import (
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/vmobs/vmobs/internal/testenv"
	"github.com/vmobs/vmobs/test/support"
)

// shardDeployment is what the recipe runs for one shard.
type shardDeployment struct {
	name, selector, leaseID string
	podLabels               map[string]string
}

// recipe renders config/shards as `kubectl apply -k` would and returns its
// Deployments' shard flags.
func recipe() ([]shardDeployment, *corev1.Namespace) {
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	res, err := k.Run(filesys.MakeFsOnDisk(), filepath.Join(testenv.RepoRoot(), "config", "shards"))
	Expect(err).NotTo(HaveOccurred(), "kustomize build config/shards")
	var out []shardDeployment
	var ns *corev1.Namespace
	for _, r := range res.Resources() {
		m, err := r.Map()
		Expect(err).NotTo(HaveOccurred())
		switch r.GetKind() {
		case "Namespace":
			ns = &corev1.Namespace{}
			Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(m, ns)).To(Succeed())
		case "Deployment":
			d := &appsv1.Deployment{}
			Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(m, d)).To(Succeed())
			sd := shardDeployment{name: d.Name, podLabels: d.Spec.Template.Labels}
			Expect(labels.SelectorFromSet(d.Spec.Selector.MatchLabels).Matches(labels.Set(d.Spec.Template.Labels))).To(BeTrue(), d.Name)
			for _, a := range d.Spec.Template.Spec.Containers[0].Args {
				if v, ok := strings.CutPrefix(a, "--vm-selector="); ok {
					sd.selector = v
				}
				if v, ok := strings.CutPrefix(a, "--leader-election-id="); ok {
					sd.leaseID = v
				}
			}
			out = append(out, sd)
		}
	}
	return out, ns
}

var _ = Describe("The recipe (config/shards)", func() {
	It("deploys disjoint shards, each on its own Lease, that split the VMs by the VM's label", func() {
		shards, namespace := recipe()
		Expect(shards).To(HaveLen(2))
		Expect(namespace).NotTo(BeNil())
		Expect(namespace.Labels).To(HaveKeyWithValue("pod-security.kubernetes.io/enforce", "restricted"))
		a, b := shards[0], shards[1]
		for _, s := range shards {
			Expect(s.selector).NotTo(BeEmpty(), "%s has a --vm-selector", s.name)
		}
		Expect(a.leaseID).NotTo(Equal(b.leaseID))
		// Each Deployment's pods are its own: the other's selector does
		// not pick them.
		Expect(labels.SelectorFromSet(map[string]string{shardLabel: "a"}).Matches(labels.Set(b.podLabels))).To(BeFalse())
		Expect(labels.SelectorFromSet(map[string]string{shardLabel: "b"}).Matches(labels.Set(a.podLabels))).To(BeFalse())

		// Run both as deployed.
		ns, node, _, _ := world("recipe")
		sa := startInstance("a", a.selector, a.leaseID)
		defer sa.stop()
		sb := startInstance("b", b.selector, b.leaseID)
		defer sb.stop()
		Expect(sa.opts.LeaseName()).To(Equal(a.leaseID))
		runningVM(ns, "vm-a", node, "a", "")
		runningVM(ns, "vm-b", node, "b", "")
		for _, vm := range []struct{ name, shard string }{{"vm-a", "a"}, {"vm-b", "b"}} {
			Eventually(suite.Observation(ns, vm.name)).Should(And(
				WithTransform(support.ReasonOf, Equal("Healthy/Running")),
				WithTransform(shardOf, Equal(vm.shard)),
			), vm.name)
		}
		Expect(sa.counter.ObjectWrites("vmobservations", ns, "vm-b")).To(BeEmpty())
		Expect(sb.counter.ObjectWrites("vmobservations", ns, "vm-a")).To(BeEmpty())
		Expect(sa.counter.ObjectWrites("vmobservations", ns, "vm-a")).To(HaveKey("apply vmobservations/status"))
		Expect(sb.counter.ObjectWrites("vmobservations", ns, "vm-b")).To(HaveKey("apply vmobservations/status"))
	})
})
