// Package reliability injects faults into a running vmobs on the real control
// plane and checks that it converges and loses no update: leader hand-over
// and leader crash, and a client that fights over the VMObservation's
// metadata while its status changes.
package reliability

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/app"
	"github.com/vmobs/vmobs/internal/simulator"
	"github.com/vmobs/vmobs/internal/testenv"
	"github.com/vmobs/vmobs/test/support"
)

// suite is the control plane, its client and the simulator, for every
// spec.
var suite *support.Suite

func TestReliability(t *testing.T) {
	support.RunSpecs(t, "vmobs reliability suite", support.Timing{Eventually: 60 * time.Second, Polling: 50 * time.Millisecond})
}

var _ = BeforeSuite(func() {
	// A certificate directory of our own survives kube-apiserver restarts.
	certDir, err := os.MkdirTemp("", "vmobs-reliability-certs-")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(os.RemoveAll, certDir)
	// kube-apiserver that has not drained in 10s is killed, as after a
	// crash: the restart test needs both kinds of stop to be survivable.
	suite = support.StartSuite(testenv.Options{CertDir: certDir, StopTimeout: 10 * time.Second}, 11)
})

// breaker is a transport that can be made to drop every request, as a
// leader whose network died.
type breaker struct{ broken atomic.Bool }

func (b *breaker) wrap(cfg *rest.Config) *rest.Config {
	return testenv.Intercept(cfg, func(r *http.Request, next http.RoundTripper) (*http.Response, error) {
		if b.broken.Load() {
			return nil, errors.New("injected fault: network down")
		}
		return next.RoundTrip(r)
	})
}

// instance is one running manager.
type instance struct {
	*app.InProcess
	name    string
	breaker *breaker
	counter *testenv.RequestCounter
}

// startInstance runs a manager; an empty leaseID turns leader election off.
func startInstance(name, leaseID string) *instance {
	in := &instance{name: name, breaker: &breaker{}, counter: testenv.NewRequestCounter()}
	opts := app.InProcessOptions()
	opts.LeaderElection = leaseID != ""
	opts.LeaderElectionID = leaseID
	opts.LeaderElectionNamespace = "default"
	opts.ReleaseLeaderOnCancel = true
	var err error
	in.InProcess, err = app.StartInProcess(suite.Ctx, in.counter.Wrap(in.breaker.wrap(suite.Env.Config)), opts)
	Expect(err).NotTo(HaveOccurred())
	return in
}

func (in *instance) elected() bool {
	select {
	case <-in.Elected():
		return true
	default:
		return false
	}
}

func (in *instance) statusWrites() int {
	return in.counter.Get("apply vmobservations/status")
}

func world(name string) (ns, node string) { return suite.World("rel", name) }

// failover measures the time from the fault to the first status write of
// the new leader: right after the fault the VM is paused, a change only a
// working leader can write.
func failover(fault func(old *instance)) time.Duration {
	lease := fmt.Sprintf("vmobs-failover-%d", time.Now().UnixNano()%100000)
	ns, node := world("failover")
	Expect(suite.Sim.CreateVM(suite.Ctx, simulator.VMSpec{Namespace: ns, Name: "vm1", GuestAgent: true})).To(Succeed())
	Expect(suite.Sim.Boot(suite.Ctx, ns, "vm1", node)).To(Succeed())

	a := startInstance("a", lease)
	Eventually(a.elected).Should(BeTrue())
	b := startInstance("b", lease)
	defer func() {
		a.Cancel()
		b.Cancel()
	}()
	Eventually(suite.Observation(ns, "vm1")).Should(WithTransform(support.ReasonOf, Equal("Healthy/Running")))
	Consistently(b.elected, 2*time.Second).Should(BeFalse())
	Expect(b.statusWrites()).To(BeZero(), "a follower writes nothing")

	start := time.Now()
	fault(a)
	Expect(suite.Sim.Pause(suite.Ctx, ns, "vm1", simulator.PausedByUser)).To(Succeed())
	Eventually(suite.Observation(ns, "vm1")).Should(WithTransform(support.ReasonOf, Equal("Suspended/PausedByUser")))
	took := time.Since(start)
	Expect(b.elected()).To(BeTrue())
	// The write is counted when its response comes back, which may be
	// after the test's own read saw the new status.
	Eventually(b.statusWrites).Should(BeNumerically(">=", 1), "the new leader made the write")
	return took
}

var _ = Describe("Leader election", func() {
	It("hands over when the leader stops gracefully (lease released)", func() {
		took := failover(func(old *instance) {
			old.Cancel()
			Eventually(old.Done(), 30*time.Second).Should(Receive())
		})
		GinkgoWriter.Printf("FAILOVER graceful: %s\n", took)
		AddReportEntry("failover graceful", took.String())
	})

	It("takes over when the leader's network dies (lease expires)", func() {
		took := failover(func(old *instance) { old.breaker.broken.Store(true) })
		GinkgoWriter.Printf("FAILOVER crash: %s\n", took)
		AddReportEntry("failover crash", took.String())
	})
})

var _ = Describe("Conflicts", func() {
	It("loses no status update while another client rewrites labels and annotations at 50 per second", func() {
		ns, node := world("conflicts")
		Expect(suite.Sim.CreateVM(suite.Ctx, simulator.VMSpec{Namespace: ns, Name: "vm1", GuestAgent: true})).To(Succeed())
		Expect(suite.Sim.Boot(suite.Ctx, ns, "vm1", node)).To(Succeed())
		in := startInstance("solo", fmt.Sprintf("vmobs-conflicts-%d", time.Now().UnixNano()%100000))
		defer in.Cancel()
		Eventually(suite.Observation(ns, "vm1")).Should(WithTransform(support.ReasonOf, Equal("Healthy/Running")))

		// The fighter updates (not patches) metadata with the resourceVersion
		// it read, as a careless tool would, 50 times a second.
		var fights, fighterConflicts atomic.Int64
		fctx, fstop := context.WithCancel(suite.Ctx)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(20 * time.Millisecond)
			defer t.Stop()
			for i := 0; ; i++ {
				select {
				case <-fctx.Done():
					return
				case <-t.C:
				}
				o := &v1alpha1.VMObservation{}
				if err := suite.K8s.Get(fctx, client.ObjectKey{Namespace: ns, Name: "vm1"}, o); err != nil {
					continue
				}
				if o.Labels == nil {
					o.Labels = map[string]string{}
				}
				if o.Annotations == nil {
					o.Annotations = map[string]string{}
				}
				o.Labels["fight"] = fmt.Sprint(i % 7)
				o.Annotations["example.com/touched"] = fmt.Sprint(i)
				if err := suite.K8s.Update(fctx, o); err != nil {
					fighterConflicts.Add(1)
					continue
				}
				fights.Add(1)
			}
		}()

		// Meanwhile the status goes through several verdicts; each must
		// land.
		steps := []struct {
			do   func() error
			want string
		}{
			{func() error { return suite.Sim.Pause(suite.Ctx, ns, "vm1", simulator.PausedByUser) }, "Suspended/PausedByUser"},
			{func() error { return suite.Sim.Unpause(suite.Ctx, ns, "vm1") }, "Healthy/Running"},
			{func() error { return suite.Sim.Pause(suite.Ctx, ns, "vm1", simulator.PausedIOError) }, "Degraded/PausedIOError"},
			{func() error { return suite.Sim.Unpause(suite.Ctx, ns, "vm1") }, "Healthy/Running"},
			{func() error { return suite.Sim.DisconnectAgent(suite.Ctx, ns, "vm1") }, "Progressing/AgentConnecting"},
			{func() error { return suite.Sim.ConnectAgent(suite.Ctx, ns, "vm1") }, "Healthy/Running"},
		}
		for _, s := range steps {
			Expect(s.do()).To(Succeed())
			Eventually(suite.Observation(ns, "vm1"), 20*time.Second).Should(WithTransform(support.ReasonOf, Equal(s.want)))
		}
		// Keep the fight going for at least three seconds' worth of updates,
		// however fast the steps went.
		Eventually(func() int64 { return fights.Load() + fighterConflicts.Load() }, 30*time.Second).Should(BeNumerically(">=", 150))
		fstop()
		wg.Wait()
		o, err := suite.Observation(ns, "vm1")()
		Expect(err).NotTo(HaveOccurred())
		Expect(o.Labels).To(HaveKey("fight"), "the controller leaves other owners' metadata alone")
		Expect(o.Status.ObservedGeneration).To(Equal(o.Generation))
		GinkgoWriter.Printf("CONFLICTS fighter updates=%d fighter conflicts=%d controller status writes=%d (server-side apply: no resourceVersion, no conflict to retry)\n",
			fights.Load(), fighterConflicts.Load(), in.statusWrites())
		AddReportEntry("conflicts", fmt.Sprintf("fighter updates=%d conflicts=%d controller status writes=%d", fights.Load(), fighterConflicts.Load(), in.statusWrites()))
		Expect(fights.Load()).To(BeNumerically(">", 100))
	})
})
