package e2e

import (
	"net/http"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/app"
	"github.com/vmobs/vmobs/internal/factsource"
	"github.com/vmobs/vmobs/internal/guestprobe"
	"github.com/vmobs/vmobs/internal/simulator"
)

// The guest agent through the real path: the simulator's virt-api is an
// aggregated API of the test kube-apiserver (APIService
// v1.subresources.kubevirt.io), and the manager probes every connected
// agent through kube-apiserver every two seconds, each GET cut at a
// second.
var _ = Describe("Guest agents probed through virt-api", Ordered, func() {
	const (
		probeEvery   = 2 * time.Second
		probeTimeout = time.Second
	)
	var virtAPI *simulator.VirtAPI

	guestOf := func(o *v1alpha1.VMObservation) *v1alpha1.GuestSummary { return o.Status.Guest }
	guestMessage := func(o *v1alpha1.VMObservation) string { return o.Status.Layers.Guest.Message }
	nodeMessage := func(o *v1alpha1.VMObservation) string { return o.Status.Layers.Node.Message }

	BeforeAll(func() {
		var err error
		virtAPI, err = sim.ServeVirtAPI(ctx, env)
		Expect(err).NotTo(HaveOccurred())
		stopManager()
		startManagerWith(func(o *app.Options) {
			o.GuestProbe = guestprobe.Config{Options: factsource.Options{Interval: probeEvery, Timeout: probeTimeout}, QPS: 50, Workers: 4}
		})
		// The manager stops probing before virt-api goes away, and
		// virt-api is unregistered before the control plane stops.
		DeferCleanup(func() {
			stopManager()
			Expect(virtAPI.Close()).To(Succeed())
			startManager()
		})
	})

	It("reads the guest's OS, users and filesystems, and costs no write while they stay the same", func() {
		ns, node := newWorld("gphealthy")
		sim.SetGuestUsers(ns, vm, "fedora", "root")
		bootHealthy(ns, node)
		Eventually(suite.Observation(ns, vm), time.Minute).Should(WithTransform(func(o *v1alpha1.VMObservation) bool {
			g := guestOf(o)
			return g != nil && g.Hostname != "" && g.Users != nil && len(g.Filesystems) > 0
		}, BeTrue()))
		o, err := suite.Observation(ns, vm)()
		Expect(err).NotTo(HaveOccurred())
		Expect(*o.Status.Guest.Users).To(BeEquivalentTo(2))
		Expect(o.Status.Guest.Timezone).NotTo(BeEmpty())
		for _, fs := range o.Status.Guest.Filesystems {
			Expect(fs.UsedPercent%5).To(BeZero(), "mount point %s", fs.MountPoint)
		}
		Expect(o).To(overallIs(v1alpha1.VerdictHealthy, v1alpha1.ReasonRunning))

		settle(ns)
		before := statusWrites(ns, vm)
		idle := 20 * time.Second
		Consistently(suite.Observation(ns, vm), idle, time.Second).Should(overallIs(v1alpha1.VerdictHealthy, v1alpha1.ReasonRunning))
		writes := statusWrites(ns, vm) - before
		probes := counterValue("vmobs_guest_probes_total", "result", "ok")
		GinkgoWriter.Printf("WRITES guest probe idle %s, probed every %s: %d (probes answered so far: %.0f)\n", idle, probeEvery, writes, probes)
		AddReportEntry("writes guest probe idle 20s", writes)
		Expect(writes).To(BeZero())
		Expect(probes).To(BeNumerically(">=", float64(idle/probeEvery)/2))
	})

	It("filesystem-nearly-full: a guest filesystem at 96% (KubeVirt's critical 95%) degrades the guest at once, naming the mount point", func() {
		ns, node := newWorld("gpfsfull")
		bootHealthy(ns, node)
		sim.SetGuestFilesystemUsage(ns, vm, "/", 96)
		sim.SetGuestFilesystemUsage(ns, vm, "/var/lib/data", 41)
		Eventually(suite.Observation(ns, vm), time.Minute).Should(And(
			layerIs("guest", v1alpha1.VerdictDegraded, v1alpha1.ReasonFilesystemNearlyFull),
			overallIs(v1alpha1.VerdictDegraded, v1alpha1.ReasonFilesystemNearlyFull),
			WithTransform(guestMessage, ContainSubstring("/ 95%")),
		))
		o, err := suite.Observation(ns, vm)()
		Expect(err).NotTo(HaveOccurred())
		fs := o.Status.Guest.Filesystems
		Expect(len(fs)).To(BeNumerically("<=", 16))
		// Fullest first, in 5-point buckets.
		Expect(fs[0]).To(Equal(v1alpha1.GuestFilesystem{MountPoint: "/", Type: fs[0].Type, UsedPercent: 95}))
		Expect(fs).To(ContainElement(v1alpha1.GuestFilesystem{MountPoint: "/var/lib/data", Type: "ext4", UsedPercent: 40}))

		// A change within the bucket is no change at all.
		settle(ns)
		before := statusWrites(ns, vm)
		sim.SetGuestFilesystemUsage(ns, vm, "/", 97)
		Consistently(suite.Observation(ns, vm), 4*probeEvery, time.Second).Should(layerIs("guest", v1alpha1.VerdictDegraded, v1alpha1.ReasonFilesystemNearlyFull))
		Expect(statusWrites(ns, vm) - before).To(BeZero())

		sim.SetGuestFilesystemUsage(ns, vm, "/", 60)
		Eventually(suite.Observation(ns, vm), time.Minute).Should(overallIs(v1alpha1.VerdictHealthy, v1alpha1.ReasonRunning))
		writesReport(ns, "filesystem-nearly-full")
	})

	It("guest-info-unreachable: guest-information calls that stop answering while AgentConnected stays True make the node layer Unknown, with the error", func() {
		ns, node := newWorld("gpunresp")
		bootHealthy(ns, node)
		Eventually(suite.Observation(ns, vm), time.Minute).Should(WithTransform(func(o *v1alpha1.VMObservation) bool {
			return guestOf(o) != nil && guestOf(o).Hostname != ""
		}, BeTrue()))
		sim.SetGuestAgentFault(ns, vm, simulator.GuestAgentUnresponsive, true)
		Eventually(suite.Observation(ns, vm), time.Minute).Should(And(
			layerIs("node", v1alpha1.VerdictUnknown, v1alpha1.ReasonGuestInfoUnreachable),
			WithTransform(nodeMessage, And(ContainSubstring("through virt-handler"), ContainSubstring("in the last"))),
		))
		o, err := suite.Observation(ns, vm)()
		Expect(err).NotTo(HaveOccurred())
		// KubeVirt still says connected: the agent's channel is open.
		Expect(o.Status.Guest.AgentConnected).To(BeTrue())
		GinkgoWriter.Printf("guest-info-unreachable: %s\n", nodeMessage(o))
		// The error is the probe's: no answer within the call's timeout.
		Expect(nodeMessage(o)).To(ContainSubstring("did not answer within " + probeTimeout.String()))

		sim.SetGuestAgentFault(ns, vm, simulator.GuestAgentUnresponsive, false)
		Eventually(suite.Observation(ns, vm), time.Minute).Should(overallIs(v1alpha1.VerdictHealthy, v1alpha1.ReasonRunning))
		writesReport(ns, "guest-info-unreachable")
	})

	It("notes a virt-api outage on every VM and pages none", func() {
		ns, node := newWorld("gpoutage")
		bootHealthy(ns, node)
		other := "vm2"
		Expect(sim.CreateVM(ctx, simulator.VMSpec{Namespace: ns, Name: other, GuestAgent: true})).To(Succeed())
		Expect(sim.Boot(ctx, ns, other, node)).To(Succeed())
		for _, name := range []string{vm, other} {
			Eventually(suite.Observation(ns, name), time.Minute).Should(WithTransform(func(o *v1alpha1.VMObservation) bool {
				return guestOf(o) != nil && guestOf(o).Hostname != ""
			}, BeTrue()))
		}

		sim.SetVirtAPIFailure(http.StatusServiceUnavailable, 0, time.Hour)
		DeferCleanup(sim.SetVirtAPIFailure, 0, time.Duration(0), time.Duration(0))
		for _, name := range []string{vm, other} {
			Eventually(suite.Observation(ns, name), time.Minute).Should(And(
				overallIs(v1alpha1.VerdictHealthy, v1alpha1.ReasonRunning),
				WithTransform(func(o *v1alpha1.VMObservation) v1alpha1.Verdict { return o.Status.Layers.Guest.Verdict }, Equal(v1alpha1.VerdictHealthy)),
				WithTransform(guestMessage, ContainSubstring(v1alpha1.ReasonGuestProbeUnavailable)),
				WithTransform(func(o *v1alpha1.VMObservation) []string {
					var values []string
					for _, e := range o.Status.Layers.Guest.Evidence {
						values = append(values, e.Value)
					}
					return values
				}, ContainElement(ContainSubstring("virt-api's subresource API is unavailable"))),
			), "VM %s", name)
		}
		Expect(sourceAvailable(guestprobe.Name)).To(BeZero())
		// Not one VM paged while it lasts: no GuestInfoUnreachable, no Warning.
		Consistently(suite.Observation(ns, vm), 4*probeEvery, time.Second).Should(overallIs(v1alpha1.VerdictHealthy, v1alpha1.ReasonRunning))
		Expect(strings.Join(warningEvents(ns), "\n")).To(BeEmpty())

		sim.SetVirtAPIFailure(0, 0, 0)
		Eventually(suite.Observation(ns, vm), time.Minute).Should(WithTransform(guestMessage, Not(ContainSubstring(v1alpha1.ReasonGuestProbeUnavailable))))
		Expect(sourceAvailable(guestprobe.Name)).To(Equal(1.0))
	})
})

// counterValue reads one series of a counter from the manager's registry
// (0 when it has no such series yet).
func counterValue(name, label, value string) float64 {
	mfs, err := registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
