package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/simulator"
	"github.com/vmobs/vmobs/internal/testenv"
)

// nodeObservation reads the NodeObservation of node, for Eventually.
func nodeObservation(node string) func() (*v1alpha1.NodeObservation, error) {
	return func() (*v1alpha1.NodeObservation, error) {
		o := &v1alpha1.NodeObservation{}
		return o, k8s.Get(ctx, client.ObjectKey{Name: node}, o)
	}
}

func nodeVerdictOf(o *v1alpha1.NodeObservation) string {
	if o == nil {
		return "none"
	}
	return string(o.Status.Verdict) + "/" + o.Status.Reason
}

// nodeObservationWrites counts the writes of NodeObservations, any node.
func nodeObservationWrites() int { return counter.Writes("nodeobservations") }

var _ = Describe("A node's NodeObservation", func() {
	It("is created for a node that runs a VM, costs no write while nothing changes, follows the node when it is lost, and goes with it", func() {
		ns, node := newWorld("nodeobs")
		bootHealthy(ns, node)
		// Three VMs: the incident threshold.
		for _, name := range []string{"vm-2", "vm-3"} {
			Expect(sim.CreateVM(ctx, simulator.VMSpec{Namespace: ns, Name: name, GuestAgent: true})).To(Succeed())
			Expect(sim.Boot(ctx, ns, name, node)).To(Succeed())
			Eventually(suite.Observation(ns, name)).Should(overallIs(v1alpha1.VerdictHealthy, v1alpha1.ReasonRunning))
		}

		By("a NodeObservation named after the node, Healthy, counting its VM")
		Eventually(nodeObservation(node)).Should(And(
			WithTransform(nodeVerdictOf, Equal("Healthy/"+v1alpha1.ReasonKubeletReady)),
			WithTransform(func(o *v1alpha1.NodeObservation) int32 { return o.Status.VMs.Healthy }, Equal(int32(3))),
		))
		o, err := nodeObservation(node)()
		Expect(err).NotTo(HaveOccurred())
		Expect(o.OwnerReferences).To(BeEmpty())
		Expect(o.Status.Layers.VirtHandler.Reason).To(Equal(v1alpha1.ReasonVirtHandlerReady))
		Expect(o.Status.Layers.DomainStats.Reason).To(Equal(v1alpha1.ReasonSourceNotConfigured))
		ready := meta(o.Status.Conditions, v1alpha1.ConditionReady)
		Expect(ready).NotTo(BeNil())
		Expect(ready.Status).To(Equal(metav1.ConditionTrue))

		By("kubectl get nodeobservations (and its short name) prints the printer columns")
		kubeconfig := filepath.Join(GinkgoT().TempDir(), "kubeconfig")
		Expect(env.Kubeconfig(kubeconfig)).To(Succeed())
		for _, resource := range []string{"nodeobservations", "nodeobs"} {
			out, err := testenv.Kubectl(kubeconfig, "get", resource, node)
			Expect(err).NotTo(HaveOccurred())
			lines := strings.Split(strings.TrimSpace(out), "\n")
			Expect(lines).To(HaveLen(2))
			Expect(strings.Fields(lines[0])).To(Equal([]string{"NAME", "VERDICT", "REASON", "VMS", "DEGRADED", "AGE"}))
			Expect(strings.Fields(lines[1])[:5]).To(Equal([]string{node, "Healthy", v1alpha1.ReasonKubeletReady, "3", "0"}))
		}

		By("no write at idle: virt-handler beats every second on every node, and no NodeObservation is written")
		// Let the VM's own writes (its VMObservation's) settle first, and
		// the nodes earlier specs left behind: their virt-handlers no
		// longer beat, so each NodeObservation turns NodeAgentStale some
		// seconds after its spec ended (a change, and its writes), which
		// with the specs in a random order can fall in the window below.
		Consistently(nodeObservation(node), 2*time.Second).Should(WithTransform(nodeVerdictOf, Equal("Healthy/"+v1alpha1.ReasonKubeletReady)))
		last := -1
		Eventually(func() bool {
			n := nodeObservationWrites()
			stable := n == last
			last = n
			return stable
		}, time.Minute, 6*time.Second).Should(BeTrue(), "NodeObservations still written after a minute")
		before := nodeObservationWrites()
		Consistently(nodeObservation(node), 8*time.Second).Should(WithTransform(nodeVerdictOf, Equal("Healthy/"+v1alpha1.ReasonKubeletReady)))
		idle := nodeObservationWrites() - before
		GinkgoWriter.Printf("WRITES nodeobservations at idle over 8s with %d beating nodes: %d\n", len(beating()), idle)
		AddReportEntry("nodeobservation writes at idle", idle)
		Expect(idle).To(BeZero())

		By("the node lost: the kubelet's Ready turns Unknown, then virt-handler's heartbeat goes stale")
		Expect(sim.LoseNode(ctx, node)).To(Succeed())
		Eventually(nodeObservation(node)).Should(And(
			WithTransform(func(o *v1alpha1.NodeObservation) string {
				return string(o.Status.Layers.Kubelet.Verdict) + "/" + o.Status.Layers.Kubelet.Reason
			}, Equal("Unknown/"+v1alpha1.ReasonNodeNotReady)),
			WithTransform(func(o *v1alpha1.NodeObservation) string {
				return string(o.Status.Layers.VirtHandler.Verdict) + "/" + o.Status.Layers.VirtHandler.Reason
			}, Equal("Unknown/"+v1alpha1.ReasonNodeAgentStale)),
			WithTransform(func(o *v1alpha1.NodeObservation) v1alpha1.Verdict { return o.Status.Verdict }, Equal(v1alpha1.VerdictUnknown)),
		))
		o, err = nodeObservation(node)()
		Expect(err).NotTo(HaveOccurred())
		fields := []string{}
		for _, e := range append(o.Status.Layers.Kubelet.Evidence, o.Status.Layers.VirtHandler.Evidence...) {
			fields = append(fields, e.Kind+" "+e.Field+"="+e.Value)
		}
		Expect(fields).To(ContainElements(
			"Node status.conditions[Ready].status=Unknown",
			ContainSubstring("Node metadata.annotations[kubevirt.io/heartbeat]=2"),
		))
		ready = meta(o.Status.Conditions, v1alpha1.ConditionReady)
		Expect(ready.Status).To(Equal(metav1.ConditionUnknown))

		By("three VMs Unknown for the lost node: one incident on the NodeObservation, naming them")
		Eventually(nodeObservation(node)).Should(WithTransform(func(o *v1alpha1.NodeObservation) string {
			i := o.Status.Incident
			if i == nil {
				return "none"
			}
			return fmt.Sprintf("%s %s/%s %d %v", i.State, i.Layer, i.Cause, i.MemberCount, i.Members)
		}, Equal(fmt.Sprintf("Open kubelet/NodeNotReady 3 [%s/vm-2 %s/vm-3 %s/%s]", ns, ns, ns, vm))))
		o, err = nodeObservation(node)()
		Expect(err).NotTo(HaveOccurred())
		Expect(o.Status.Incident.FirstEvidence).NotTo(BeNil())
		Expect(o.Status.Incident.FirstEvidence.Field).To(Equal("status.conditions[Ready].status"))

		By("each member's VMObservation points at the NodeObservation")
		incidentOf := func(o *v1alpha1.VMObservation) string {
			if o.Status.Incident == nil {
				return "none"
			}
			return o.Status.Incident.Kind + "/" + o.Status.Incident.Name
		}
		for _, name := range []string{vm, "vm-2", "vm-3"} {
			Eventually(suite.Observation(ns, name)).Should(WithTransform(incidentOf, Equal(v1alpha1.IncidentKindNodeObservation+"/"+node)))
		}

		By("the node back: the incident is resolved, and kept; its members point at it no more")
		Expect(sim.RecoverNode(ctx, node)).To(Succeed())
		Eventually(nodeObservation(node)).Should(And(
			WithTransform(nodeVerdictOf, Equal("Healthy/"+v1alpha1.ReasonKubeletReady)),
			WithTransform(func(o *v1alpha1.NodeObservation) v1alpha1.IncidentState { return o.Status.Incident.State }, Equal(v1alpha1.IncidentResolved)),
		))
		for _, name := range []string{vm, "vm-2", "vm-3"} {
			Eventually(suite.Observation(ns, name)).Should(WithTransform(incidentOf, Equal("none")))
		}

		By("the node deleted: its NodeObservation goes with it")
		Expect(k8s.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}})).To(Succeed())
		Eventually(func() bool {
			_, err := nodeObservation(node)()
			return apierrors.IsNotFound(err)
		}).Should(BeTrue())
	})
})

func meta(conds []metav1.Condition, typ string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
}
