package e2e

import (
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/simulator"
)

// policySources is status.policy.sources as "policy:field,field" strings,
// spec.policy's as ":field".
func policySources(o *v1alpha1.VMObservation) []string {
	if o == nil || o.Status.Policy == nil {
		return nil
	}
	var out []string
	for _, s := range o.Status.Policy.Sources {
		out = append(out, s.Policy+":"+strings.Join(s.Fields, ","))
	}
	return out
}

func overruled(o *v1alpha1.VMObservation) []string {
	if o == nil || o.Status.Policy == nil {
		return nil
	}
	return o.Status.Policy.Overruled
}

func agentPolicy(ns, name string, expected bool, sel map[string]string) *v1alpha1.VMObservationPolicy {
	return &v1alpha1.VMObservationPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.VMObservationPolicySpec{
			Selector: metav1.LabelSelector{MatchLabels: sel},
			Policy:   v1alpha1.PolicyOverrides{GuestAgentExpected: ptr.To(expected)},
		},
	}
}

// policyStatus reads a VMObservationPolicy's selected count, Ready and
// overruled list as one string.
func policyStatus(ns, name string) func() (string, error) {
	return func() (string, error) {
		p := &v1alpha1.VMObservationPolicy{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
			return "", err
		}
		ready := "absent"
		for _, c := range p.Status.Conditions {
			if c.Type == v1alpha1.ConditionReady {
				ready = string(c.Status)
			}
		}
		return fmt.Sprintf("selected=%d ready=%s overruled=%s", p.Status.SelectedVMs, ready, strings.Join(p.Status.Overruled, ",")), nil
	}
}

var _ = Describe("VMObservationPolicy", func() {
	It("sets the policy of the VMs it selects; the most specific policy and the VM's own spec.policy win, and a tie is named", func() {
		ns, node := newWorld("policy")
		// The suite's flags expect a guest agent; this VM has none.
		Expect(sim.CreateVM(ctx, simulator.VMSpec{Namespace: ns, Name: vm})).To(Succeed())
		labelVM(ns, vm, map[string]string{"os": "linux"})

		By("a policy for every Linux VM of the namespace: no agent expected")
		Expect(k8s.Create(ctx, agentPolicy(ns, "linux", false, map[string]string{"os": "linux"}))).To(Succeed())
		Expect(sim.Boot(ctx, ns, vm, node)).To(Succeed())
		Eventually(suite.Observation(ns, vm), 20*time.Second).Should(And(
			layerIs("guest", v1alpha1.VerdictHealthy, v1alpha1.ReasonNoGuestAgent),
			WithTransform(policySources, Equal([]string{"linux:guestAgentExpected"})),
		))
		Eventually(policyStatus(ns, "linux")).Should(Equal("selected=1 ready=True overruled="))

		By("a more specific policy for the Linux databases: an agent expected")
		Expect(k8s.Create(ctx, agentPolicy(ns, "linux-db", true, map[string]string{"os": "linux", "tier": "db"}))).To(Succeed())
		Eventually(policyStatus(ns, "linux-db")).Should(Equal("selected=0 ready=True overruled="))
		labelVM(ns, vm, map[string]string{"os": "linux", "tier": "db"})
		Eventually(suite.Observation(ns, vm), 20*time.Second).Should(And(
			layerIs("guest", v1alpha1.VerdictDegraded, v1alpha1.ReasonAgentNeverConnected),
			WithTransform(policySources, Equal([]string{"linux-db:guestAgentExpected"})),
		))
		Eventually(policyStatus(ns, "linux-db")).Should(Equal("selected=1 ready=True overruled="))

		By("a policy as specific, later by name, that disagrees: overruled, and named")
		Expect(k8s.Create(ctx, agentPolicy(ns, "linux-db-legacy", false, map[string]string{"os": "linux", "tier": "db"}))).To(Succeed())
		Eventually(suite.Observation(ns, vm)).Should(And(
			layerIs("guest", v1alpha1.VerdictDegraded, v1alpha1.ReasonAgentNeverConnected),
			WithTransform(overruled, Equal([]string{"linux-db-legacy"})),
		))
		Eventually(policyStatus(ns, "linux-db-legacy")).Should(Equal("selected=1 ready=True overruled=linux-db"))

		By("the VMObservation's own spec.policy wins over every policy")
		o := &v1alpha1.VMObservation{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: vm}, o)).To(Succeed())
		base := o.DeepCopy()
		o.Spec.Policy = &v1alpha1.PolicyOverrides{GuestAgentExpected: ptr.To(false)}
		Expect(k8s.Patch(ctx, o, client.MergeFrom(base))).To(Succeed())
		Eventually(suite.Observation(ns, vm), 20*time.Second).Should(And(
			layerIs("guest", v1alpha1.VerdictHealthy, v1alpha1.ReasonNoGuestAgent),
			WithTransform(policySources, Equal([]string{":guestAgentExpected"})),
		))

		By("deleting the policies leaves spec.policy alone")
		for _, name := range []string{"linux", "linux-db", "linux-db-legacy"} {
			Expect(k8s.Delete(ctx, &v1alpha1.VMObservationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})).To(Succeed())
		}
		Eventually(suite.Observation(ns, vm)).Should(WithTransform(overruled, BeEmpty()))
		Expect(suite.Observation(ns, vm)()).To(WithTransform(policySources, Equal([]string{":guestAgentExpected"})))
	})
})

// labelVM sets the VirtualMachine's labels, as its owner would.
func labelVM(ns, name string, labels map[string]string) {
	v := &kubevirtv1.VirtualMachine{}
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, v)).To(Succeed())
	base := v.DeepCopy()
	v.Labels = labels
	Expect(k8s.Patch(ctx, v, client.MergeFrom(base))).To(Succeed())
}
