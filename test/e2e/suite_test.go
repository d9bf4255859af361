// Package e2e runs the vmobs manager in-process against a real
// kube-apiserver, with the simulator playing KubeVirt's part, and asserts the
// VMObservations that result and how many writes they cost.
package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/app"
	"github.com/vmobs/vmobs/internal/simulator"
	"github.com/vmobs/vmobs/internal/testenv"
	"github.com/vmobs/vmobs/internal/verdict"
	"github.com/vmobs/vmobs/test/support"
)

// Test timing: the thresholds are seconds instead of minutes so each
// deadline is crossed within the test, by the controller's own requeue.
var policy = func() verdict.Policy {
	p := verdict.DefaultPolicy()
	p.SchedulingTimeout = 6 * time.Second
	p.MigrationPhaseTimeout = 6 * time.Second
	p.HeartbeatTimeout = 5 * time.Second
	p.AgentGracePeriod = 4 * time.Second
	p.HotplugTimeout = 6 * time.Second
	p.FilesystemsFrozenAfter = 6 * time.Second
	p.StalledAfter = time.Minute
	p.GuestAgentExpected = true
	return p
}()

// heartbeatEvery is virt-handler's heartbeat period in the scenarios: a
// beat a second, so that a status that moved with heartbeats would show.
const heartbeatEvery = time.Second

var (
	suite    *support.Suite
	ctx      context.Context
	env      *testenv.Env
	k8s      client.Client
	sim      *simulator.Simulator
	counter  *testenv.RequestCounter
	registry *prometheus.Registry

	mgrMu sync.Mutex
	mgr   *app.InProcess
)

func TestE2E(t *testing.T) {
	support.RunSpecs(t, "vmobs end-to-end suite", support.Timing{Eventually: 30 * time.Second, Polling: 100 * time.Millisecond})
}

var _ = BeforeSuite(func() {
	// Aggregation: the guest probe specs serve the simulator's virt-api
	// as an aggregated API.
	suite = support.StartSuite(testenv.Options{Aggregation: true}, 7)
	ctx, env, k8s, sim = suite.Ctx, suite.Env, suite.K8s, suite.Sim
	counter = testenv.NewRequestCounter()
	startManager()

	// virt-handler on every node of the suite writes its heartbeat, except
	// on nodes a scenario silenced (to see the deadline pass) or lost.
	go sim.RunHeartbeats(ctx, simulator.Heartbeats{Every: heartbeatEvery, Nodes: beating})
})

var _ = AfterSuite(stopManager)

// startManager runs the manager in-process, its requests counted.
func startManager() { startManagerWith(nil) }

// startManagerWith is startManager with the options edited.
func startManagerWith(edit func(*app.Options)) {
	mgrMu.Lock()
	defer mgrMu.Unlock()
	registry = prometheus.NewRegistry()
	opts := app.InProcessOptions()
	opts.Registry = registry
	opts.Policy = policy
	if edit != nil {
		edit(&opts)
	}
	var err error
	mgr, err = app.StartInProcess(ctx, counter.Wrap(env.Config), opts)
	Expect(err).NotTo(HaveOccurred())
}

func stopManager() {
	mgrMu.Lock()
	defer mgrMu.Unlock()
	if mgr == nil {
		return
	}
	Expect(mgr.Stop()).To(Succeed())
	mgr = nil
}

// newWorld makes a namespace and a node of its own for one scenario, so
// scenarios never see each other's objects, and beats on the node.
func newWorld(name string) (ns, node string) {
	ns, node = suite.World("e2e", name)
	track(node)
	return ns, node
}

// layerIs matches a VMObservation whose layer has the verdict and reason.
func layerIs(layer string, verdict v1alpha1.Verdict, reason string) OmegaMatcher {
	return WithTransform(func(o *v1alpha1.VMObservation) string {
		if o == nil || o.Status.Layers == nil {
			return "no status"
		}
		var l v1alpha1.LayerStatus
		if p := o.Status.Layers.Get(layer); p != nil {
			l = *p
		}
		return fmt.Sprintf("%s %s/%s", layer, l.Verdict, l.Reason)
	}, Equal(fmt.Sprintf("%s %s/%s", layer, verdict, reason)))
}

func overallIs(verdict v1alpha1.Verdict, reason string) OmegaMatcher {
	return WithTransform(func(o *v1alpha1.VMObservation) string {
		if o == nil {
			return "none"
		}
		return fmt.Sprintf("%s/%s", o.Status.Verdict, o.Status.Reason)
	}, Equal(fmt.Sprintf("%s/%s", verdict, reason)))
}

func conditionIs(typ string, status metav1.ConditionStatus) OmegaMatcher {
	return WithTransform(func(o *v1alpha1.VMObservation) metav1.ConditionStatus {
		for _, c := range o.Status.Conditions {
			if c.Type == typ {
				return c.Status
			}
		}
		return "absent"
	}, Equal(status))
}

// statusWrites counts the status writes (server-side apply) the manager made
// to one VMObservation.
func statusWrites(ns, name string) int {
	return counter.ObjectWrites("vmobservations", ns, name)["apply vmobservations/status"]
}

func creates(ns string) int {
	return counter.ObjectWrites("vmobservations", ns, "")["create vmobservations"]
}

var (
	nodesMu sync.Mutex
	nodes   = map[string]bool{} // node -> silenced
)

// track adds a node to the heartbeat loop until the spec ends. The loop
// beats its nodes one after another, so nodes left beating from earlier
// specs would stretch each round as the suite goes on: with thirty of them
// on a loaded machine a round can outlast the 5 s heartbeat timeout, and
// the node of the running spec turns NodeAgentStale for no reason of its
// own. A finished spec's VMs go stale instead, where nothing looks.
func track(node string) {
	nodesMu.Lock()
	defer nodesMu.Unlock()
	nodes[node] = false
	DeferCleanup(untrack, node)
}

func untrack(node string) {
	nodesMu.Lock()
	defer nodesMu.Unlock()
	delete(nodes, node)
}

// silence stops the node's heartbeats and nothing else.
func silence(node string) {
	nodesMu.Lock()
	defer nodesMu.Unlock()
	nodes[node] = true
}

func unsilence(node string) {
	nodesMu.Lock()
	defer nodesMu.Unlock()
	nodes[node] = false
}

func beating() []string {
	nodesMu.Lock()
	defer nodesMu.Unlock()
	var out []string
	for n, silenced := range nodes {
		if !silenced {
			out = append(out, n)
		}
	}
	return out
}

// recordVerdicts watches the VMObservation from now on and returns a func
// that stops the watch and lists every distinct status it saw, as
// "overall controlPlane node guest" verdict/reason quadruples: what every
// watcher (Argo CD, Flux, kube-state-metrics) saw, transient ones included.
func recordVerdicts(ns, name string) func() []string {
	wc, err := env.Client()
	Expect(err).NotTo(HaveOccurred())
	w, err := wc.Watch(ctx, &v1alpha1.VMObservationList{}, client.InNamespace(ns))
	Expect(err).NotTo(HaveOccurred())
	var mu sync.Mutex
	var seen []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			o, ok := ev.Object.(*v1alpha1.VMObservation)
			if !ok || o.Name != name || o.Status.Layers == nil {
				continue
			}
			l := o.Status.Layers
			v := fmt.Sprintf("%s/%s %s/%s %s/%s %s/%s", o.Status.Verdict, o.Status.Reason,
				l.ControlPlane.Verdict, l.ControlPlane.Reason, l.Node.Verdict, l.Node.Reason, l.Guest.Verdict, l.Guest.Reason)
			mu.Lock()
			if len(seen) == 0 || seen[len(seen)-1] != v {
				seen = append(seen, v)
			}
			mu.Unlock()
		}
	}()
	return func() []string {
		w.Stop()
		<-done
		mu.Lock()
		defer mu.Unlock()
		GinkgoWriter.Printf("VERDICTS %s/%s: %v\n", ns, name, seen)
		return seen
	}
}

// warningEvents lists the Warning Events vmobs recorded in ns.
func warningEvents(ns string) []string {
	var evs corev1.EventList
	Expect(k8s.List(ctx, &evs, client.InNamespace(ns))).To(Succeed())
	var out []string
	for _, e := range evs.Items {
		if e.Type == corev1.EventTypeWarning && e.InvolvedObject.Kind == "VMObservation" {
			out = append(out, e.Reason+": "+e.Message)
		}
	}
	return out
}
