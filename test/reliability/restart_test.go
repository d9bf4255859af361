package reliability

import (
	"encoding/json"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/simulator"
	"github.com/vmobs/vmobs/internal/verdict"
	"github.com/vmobs/vmobs/test/support"
)

// truth runs the engine on a fresh LIST of the VM's objects, straight from
// the API server, and returns "verdict/reason" per layer.
func truth(ns, name string, previous *v1alpha1.VMObservationStatus) []string {
	in := verdict.Input{Namespace: ns, Name: name, Policy: verdict.DefaultPolicy(), Previous: previous, Now: time.Now()}
	vm := &kubevirtv1.VirtualMachine{}
	if err := suite.K8s.Get(suite.Ctx, client.ObjectKey{Namespace: ns, Name: name}, vm); err == nil {
		in.VM = vm
	} else {
		Expect(apierrors.IsNotFound(err)).To(BeTrue())
	}
	vmi := &kubevirtv1.VirtualMachineInstance{}
	if err := suite.K8s.Get(suite.Ctx, client.ObjectKey{Namespace: ns, Name: name}, vmi); err == nil {
		in.VMI = vmi
	} else {
		Expect(apierrors.IsNotFound(err)).To(BeTrue())
	}
	if in.VMI != nil {
		migrations := &kubevirtv1.VirtualMachineInstanceMigrationList{}
		Expect(suite.K8s.List(suite.Ctx, migrations, client.InNamespace(ns))).To(Succeed())
		for i := range migrations.Items {
			if migrations.Items[i].Spec.VMIName == name {
				in.Migrations = append(in.Migrations, &migrations.Items[i])
			}
		}
		pods := &corev1.PodList{}
		Expect(suite.K8s.List(suite.Ctx, pods, client.InNamespace(ns), client.MatchingLabels{kubevirtv1.CreatedByLabel: string(vmi.UID)})).To(Succeed())
		in.Nodes = map[string]*corev1.Node{}
		for i := range pods.Items {
			in.Pods = append(in.Pods, &pods.Items[i])
		}
		for _, n := range []string{vmi.Status.NodeName} {
			node := &corev1.Node{}
			if err := suite.K8s.Get(suite.Ctx, client.ObjectKey{Name: n}, node); err == nil {
				in.Nodes[n] = node
			}
		}
		for _, p := range in.Pods {
			node := &corev1.Node{}
			if err := suite.K8s.Get(suite.Ctx, client.ObjectKey{Name: p.Spec.NodeName}, node); err == nil {
				in.Nodes[p.Spec.NodeName] = node
			}
		}
	}
	st := verdict.Evaluate(in).Status
	return layerReasons(&st)
}

// statusJSON is the stored VMObservation's resourceVersion and status.
func statusJSON(ns, name string) string {
	o, err := suite.Observation(ns, name)()
	Expect(err).NotTo(HaveOccurred())
	b, err := json.Marshal(o.Status)
	Expect(err).NotTo(HaveOccurred())
	return o.ResourceVersion + " " + string(b)
}

func layerReasons(st *v1alpha1.VMObservationStatus) []string {
	if st.Layers == nil {
		return nil
	}
	return []string{
		string(st.Layers.ControlPlane.Verdict) + "/" + st.Layers.ControlPlane.Reason,
		string(st.Layers.Node.Verdict) + "/" + st.Layers.Node.Reason,
		string(st.Layers.Guest.Verdict) + "/" + st.Layers.Guest.Reason,
	}
}

var _ = Describe("API server restarts", func() {
	It("survives three kube-apiserver restarts while VMs change, loses no transition and rewrites nothing unchanged", func() {
		ns, node := world("apirestart")
		const vms = 6
		name := func(i int) string { return fmt.Sprintf("vm%d", i) }
		for i := 0; i < vms; i++ {
			Expect(suite.Sim.CreateVM(suite.Ctx, simulator.VMSpec{Namespace: ns, Name: name(i), GuestAgent: true})).To(Succeed())
			Expect(suite.Sim.Boot(suite.Ctx, ns, name(i), node)).To(Succeed())
		}
		// One replica without leader election: with it, an API server down
		// for longer than the renew deadline makes controller-runtime give
		// up the lease and exit (by design: the pod restarts).
		in := startInstance("restart", "")
		defer in.Cancel()
		for i := 0; i < vms; i++ {
			Eventually(suite.Observation(ns, name(i))).Should(WithTransform(support.ReasonOf, Equal("Healthy/Running")))
		}
		// A write is counted when its response comes back, which may be
		// after the test saw the status: let the count settle, then
		// require 2 s without a write.
		settled := func() bool {
			before := in.statusWrites()
			time.Sleep(300 * time.Millisecond)
			return in.statusWrites() == before
		}
		Eventually(settled).Should(BeTrue())
		Consistently(in.statusWrites, 2*time.Second).Should(Equal(in.statusWrites()))
		quietBefore := map[string]int{}
		storedBefore := map[string]string{}
		for i := 2; i < vms; i++ {
			quietBefore[name(i)] = in.counter.ObjectWrites("vmobservations", ns, name(i))["apply vmobservations/status"]
			storedBefore[name(i)] = statusJSON(ns, name(i))
		}

		// vm0 and vm1 change around each restart: one change just before
		// the API server stops (the controller may not have seen it yet),
		// one as soon as it is back (while the watches re-establish).
		toggle := func(vm string) {
			Eventually(func() error {
				vmi := &kubevirtv1.VirtualMachineInstance{}
				if err := suite.K8s.Get(suite.Ctx, client.ObjectKey{Namespace: ns, Name: vm}, vmi); err != nil {
					return err
				}
				for _, c := range vmi.Status.Conditions {
					if c.Type == kubevirtv1.VirtualMachineInstancePaused && c.Status == corev1.ConditionTrue {
						return suite.Sim.Unpause(suite.Ctx, ns, vm)
					}
				}
				return suite.Sim.Pause(suite.Ctx, ns, vm, simulator.PausedByUser)
			}, time.Minute, 500*time.Millisecond).Should(Succeed())
		}
		start := time.Now()
		changes := 0
		for r := 1; r <= 3; r++ {
			toggle(name(0))
			changes++
			t := time.Now()
			Expect(suite.Env.RestartAPIServer()).To(Succeed())
			GinkgoWriter.Printf("RESTART %d: kube-apiserver back after %s\n", r, time.Since(t))
			toggle(name(1))
			changes++
		}
		GinkgoWriter.Printf("RESTARTS done in %s; %d source changes around them\n", time.Since(start), changes)

		select {
		case err := <-in.Done():
			Fail(fmt.Sprintf("the manager stopped: %v", err))
		default:
		}

		// Converged: every VMObservation says what the engine says on a
		// fresh LIST. Not at once: a Reflector whose watch kept failing
		// through the outages backs off, and client-go's backoff stops at
		// [30, 60) s between tries (tools/cache/reflector.go): an informer
		// may relist a minute after the server is back.
		recovery := time.Now()
		for i := 0; i < vms; i++ {
			Eventually(func() ([]string, error) {
				o, err := suite.Observation(ns, name(i))()
				if err != nil {
					return nil, err
				}
				want := truth(ns, name(i), &o.Status)
				got := layerReasons(&o.Status)
				if fmt.Sprint(got) != fmt.Sprint(want) {
					return got, fmt.Errorf("stored %v, engine on a fresh LIST %v", got, want)
				}
				return got, nil
			}, 2*time.Minute).Should(HaveLen(3))
		}
		GinkgoWriter.Printf("RESTARTS converged %s after the last restart\n", time.Since(recovery))
		AddReportEntry("apiserver restarts", fmt.Sprintf("3 restarts, %d changes, converged", changes))

		for i := 2; i < vms; i++ {
			w := in.counter.ObjectWrites("vmobservations", ns, name(i))["apply vmobservations/status"]
			// The failure says what the write changed, if anything: the
			// status before the restarts and after.
			Expect(w-quietBefore[name(i)]).To(BeZero(), "%s did not change: no write\nbefore: %s\nafter:  %s",
				name(i), storedBefore[name(i)], statusJSON(ns, name(i)))
		}
	})
})
