// Package shard runs two vmobs instances with disjoint --vm-selector on one
// real control plane, as the sharding recipe deploys them (docs/sharding.md),
// and checks what the recipe promises: every VM is observed by exactly one
// instance, a relabelled VM is handed over with no gap and no
// double writes, and an instance never deletes another shard's
// VMObservation.
package shard

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/app"
	"github.com/vmobs/vmobs/internal/testenv"
	"github.com/vmobs/vmobs/test/support"
)

// shardLabel is the recipe's label (config/shards).
const shardLabel = "observability.vmobs.io/shard"

// suite is the control plane, its client and the simulator, for every
// spec.
var suite *support.Suite

func TestShard(t *testing.T) {
	support.RunSpecs(t, "vmobs sharding suite", support.Timing{Eventually: 30 * time.Second, Polling: 50 * time.Millisecond})
}

var _ = BeforeSuite(func() {
	suite = support.StartSuite(testenv.Options{}, 15)
})

// instance is one shard's manager, its writes counted and timed.
type instance struct {
	*app.InProcess
	name    string
	opts    app.Options
	counter *testenv.RequestCounter
	writes  *timeline
}

// startShard runs a manager for the VMs labelled shardLabel=value, with
// leader election on the Lease derived from its selector.
func startShard(name, value string) *instance {
	return startInstance(name, shardLabel+"="+value, "")
}

// startInstance runs a manager with --vm-selector=selector and, unless
// empty, --leader-election-id=leaseID.
func startInstance(name, selector, leaseID string) *instance {
	sel, err := labels.Parse(selector)
	Expect(err).NotTo(HaveOccurred())
	opts := app.InProcessOptions()
	opts.VMSelector = sel
	if leaseID != "" {
		opts.LeaderElectionID = leaseID
	}
	opts.LeaderElection = true
	opts.LeaderElectionNamespace = "default"
	opts.ReleaseLeaderOnCancel = true
	in := &instance{name: name, opts: opts, counter: testenv.NewRequestCounter(), writes: &timeline{who: name}}
	in.InProcess, err = app.StartInProcess(suite.Ctx, in.writes.wrap(in.counter.Wrap(suite.Env.Config)), opts)
	Expect(err).NotTo(HaveOccurred())
	Eventually(in.Elected()).Should(BeClosed(), "shard %s elected on its Lease %s", name, opts.LeaseName())
	return in
}

// stop stops the manager and waits for it.
func (in *instance) stop() {
	Expect(in.Stop()).To(Succeed())
}

// timeline records every write an instance makes to VMObservations: when
// it was sent and when the API server answered.
type timeline struct {
	who     string
	mu      sync.Mutex
	entries []write
}

type write struct {
	who        string
	sent, done time.Time
	verb       string // testenv.Key: "apply vmobservations/status", "patch vmobservations", ...
	obj        string // namespace/name; namespace/ for a create
}

func (w write) String() string {
	return fmt.Sprintf("%s %s %s [%s, %s]", w.who, w.verb, w.obj, w.sent.Format("15:04:05.000"), w.done.Format("15:04:05.000"))
}

func (tl *timeline) wrap(cfg *rest.Config) *rest.Config {
	return testenv.Intercept(cfg, func(req *http.Request, next http.RoundTripper) (*http.Response, error) {
		sent := time.Now()
		resp, err := next.RoundTrip(req)
		if k, ok := testenv.AcceptedWrite(req, resp, err, "vmobservations"); ok {
			tl.mu.Lock()
			tl.entries = append(tl.entries, write{who: tl.who, sent: sent, done: time.Now(), verb: k, obj: testenv.ObjectOf(req)})
			tl.mu.Unlock()
		}
		return resp, err
	})
}

// of returns the writes to one object (creates are named by namespace
// only: pass the namespace and name "" to get them).
func (tl *timeline) of(ns, name string) []write {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	var out []write
	for _, e := range tl.entries {
		if e.obj == ns+"/"+name {
			out = append(out, e)
		}
	}
	return out
}

// world makes a namespace and a node for one spec, and shard label values
// of its own, so that its instances have Leases of their own too.
func world(name string) (ns, node, a, b string) {
	ns, node = suite.World("shard", name)
	id := ns[strings.LastIndex(ns, "-")+1:]
	return ns, node, "a-" + id, "b-" + id
}

// labelVM sets the VM's own shard label, as `kubectl label vm` does.
func labelVM(ns, name, value string) {
	Eventually(func() error {
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, shardLabel, value)
		vm := &kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		return suite.K8s.Patch(suite.Ctx, vm, client.RawPatch(types.MergePatchType, []byte(patch)))
	}).Should(Succeed())
}

func shardOf(o *v1alpha1.VMObservation) string {
	v, ok := o.Labels[shardLabel]
	if !ok {
		return "<none>"
	}
	return v
}
