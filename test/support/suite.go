package support

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/simulator"
	"github.com/vmobs/vmobs/internal/testenv"
)

// Timing is a suite's default Eventually timeout and polling interval;
// a zero one keeps Gomega's (1s, 10ms).
type Timing struct {
	Eventually, Polling time.Duration
}

// RunSpecs is the one test function of a ginkgo suite on the control
// plane: Gomega fails through Ginkgo, Eventually waits as timing says,
// and the package's specs run.
func RunSpecs(t *testing.T, description string, timing Timing) {
	gomega.RegisterFailHandler(ginkgo.Fail)
	if timing.Eventually > 0 {
		gomega.SetDefaultEventuallyTimeout(timing.Eventually)
	}
	if timing.Polling > 0 {
		gomega.SetDefaultEventuallyPollingInterval(timing.Polling)
	}
	ginkgo.RunSpecs(t, description)
}

// Suite is what a ginkgo suite on the control plane shares: a context
// ended after the suite, the control plane, an admin client and a
// simulator playing KubeVirt's part through it.
type Suite struct {
	Ctx context.Context
	Env *testenv.Env
	K8s client.WithWatch
	Sim *simulator.Simulator
}

// StartSuite, called in BeforeSuite, logs controller-runtime to the
// ginkgo.GinkgoWriter, starts the control plane with opts and a simulator with
// seed, and stops them after the suite (after its AfterSuite: a manager
// stopped there still has its API server).
func StartSuite(opts testenv.Options, seed int64) *Suite {
	ctrl.SetLogger(zap.New(zap.WriteTo(ginkgo.GinkgoWriter), zap.UseDevMode(true)))
	env, err := testenv.Start(opts)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	ginkgo.DeferCleanup(func() { gomega.Expect(env.Stop()).To(gomega.Succeed()) })
	ctx, cancel := context.WithCancel(context.Background())
	ginkgo.DeferCleanup(cancel)
	k8s, err := env.Client()
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	return &Suite{Ctx: ctx, Env: env, K8s: k8s, Sim: simulator.New(k8s, simulator.WithSeed(seed))}
}

// World makes a namespace and a node of their own for one spec, named
// prefix-name-N, so that specs never see each other's objects.
func (s *Suite) World(prefix, name string) (ns, node string) {
	ns = fmt.Sprintf("%s-%s-%d", prefix, name, time.Now().UnixNano()%100000)
	node = "node-" + ns
	gomega.Expect(s.Sim.EnsureNamespace(s.Ctx, ns)).To(gomega.Succeed())
	gomega.Expect(s.Sim.AddNode(s.Ctx, node)).To(gomega.Succeed())
	return ns, node
}

// Observation reads the VMObservation, for Eventually and Consistently.
func (s *Suite) Observation(ns, name string) func() (*v1alpha1.VMObservation, error) {
	return func() (*v1alpha1.VMObservation, error) {
		o := &v1alpha1.VMObservation{}
		return o, s.K8s.Get(s.Ctx, client.ObjectKey{Namespace: ns, Name: name}, o)
	}
}

// ReasonOf is the overall verdict and reason, "Healthy/Running".
func ReasonOf(o *v1alpha1.VMObservation) string {
	return string(o.Status.Verdict) + "/" + o.Status.Reason
}
