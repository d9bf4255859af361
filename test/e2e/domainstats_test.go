package e2e

import (
	"net"
	"net/http"
	"sort"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/app"
	"github.com/vmobs/vmobs/internal/domainstats"
	"github.com/vmobs/vmobs/internal/factsource"
	"github.com/vmobs/vmobs/internal/simulator"
	"github.com/vmobs/vmobs/internal/testenv"
)

// Domain stats through the real chain: the simulator serves each node's
// virt-handler metrics, a real Prometheus scrapes them every second, and
// the manager queries it once a second with a 4 s rate window.
var _ = Describe("Domain stats from Prometheus", Ordered, func() {
	var (
		prom     *testenv.Prometheus
		exporter net.Listener
	)

	// scrapeAll points Prometheus at the virt-handler of every node the
	// suite has, as KubeVirt's ServiceMonitor would.
	scrapeAll := func() {
		nodesMu.Lock()
		var names []string
		for n := range nodes {
			names = append(names, n)
		}
		nodesMu.Unlock()
		sort.Strings(names)
		job := testenv.ScrapeJob{Name: simulator.VirtHandlerJob, HonorLabels: simulator.VirtHandlerHonorLabels}
		for _, t := range simulator.VirtHandlerTargets(exporter.Addr().String(), names...) {
			job.Targets = append(job.Targets, testenv.ScrapeTarget{Address: t.Address, MetricsPath: t.MetricsPath, Labels: t.Labels})
		}
		Expect(prom.SetJobs(ctx, []testenv.ScrapeJob{job})).To(Succeed())
	}
	world := func(name string) (ns, node string) {
		ns, node = newWorld(name)
		scrapeAll()
		return ns, node
	}
	domainOf := func(o *v1alpha1.VMObservation) *v1alpha1.DomainSummary { return o.Status.Domain }

	BeforeAll(func() {
		var err error
		exporter, err = net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		srv := &http.Server{Handler: sim.VirtHandlerMetrics(), ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(exporter) }()
		DeferCleanup(srv.Close)
		prom, err = testenv.StartPrometheus(testenv.PrometheusOptions{ScrapeInterval: time.Second})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = prom.Stop() })
		scrapeAll()

		stopManager()
		startManagerWith(func(o *app.Options) {
			o.PrometheusURL = prom.URL
			o.DomainStats = domainstats.Config{Options: factsource.Options{Interval: time.Second}, Window: 4 * time.Second}
			// A new node's series are due two intervals and this grace after
			// the VMI runs. Prometheus must first reload its targets and
			// scrape, which on a loaded CI machine can take longer than a
			// few seconds; 8 s still keeps the missing-domain spec quick.
			o.Policy.DomainStatsGrace = 8 * time.Second
			o.Policy.GuestCPUStalledAfter = 3 * time.Second
			o.Policy.GuestMemoryPressureAfter = 3 * time.Second
		})
		DeferCleanup(func() {
			stopManager()
			startManager()
		})
	})

	It("summarises the domain and costs no write while it runs unchanged", func() {
		ns, node := world("dshealthy")
		bootHealthy(ns, node)
		Eventually(suite.Observation(ns, vm), time.Minute).Should(WithTransform(func(o *v1alpha1.VMObservation) bool {
			d := domainOf(o)
			return d != nil && d.Node == node && d.VCPUUsage != nil && d.MemoryAvailable != nil && d.MemoryUsed != nil
		}, BeTrue()))
		Expect(suite.Observation(ns, vm)()).To(overallIs(v1alpha1.VerdictHealthy, v1alpha1.ReasonRunning))
		settle(ns)
		before := statusWrites(ns, vm)
		Consistently(suite.Observation(ns, vm), 20*time.Second, time.Second).Should(overallIs(v1alpha1.VerdictHealthy, v1alpha1.ReasonRunning))
		writes := statusWrites(ns, vm) - before
		GinkgoWriter.Printf("WRITES domain stats idle 20s, sampled every second: %d\n", writes)
		AddReportEntry("writes domain stats idle 20s", writes)
		Expect(writes).To(BeZero())
	})

	It("domain-not-exported: tells a domain virt-handler cannot read from an exporter that is down", func() {
		ns, node := world("dsmissing")
		// A VM on a second node keeps domain series in Prometheus when this
		// node's exporter goes down: with none at all for any VMI, the
		// source judges Prometheus's scrape configuration, not the node.
		elsewhere := node + "-b"
		Expect(sim.AddNode(ctx, elsewhere)).To(Succeed())
		track(elsewhere)
		scrapeAll()
		Expect(sim.CreateVM(ctx, simulator.VMSpec{Namespace: ns, Name: "vm3", GuestAgent: true})).To(Succeed())
		Expect(sim.Boot(ctx, ns, "vm3", elsewhere)).To(Succeed())
		bootHealthy(ns, node)
		other := "vm2"
		Expect(sim.CreateVM(ctx, simulator.VMSpec{Namespace: ns, Name: other, GuestAgent: true})).To(Succeed())
		Expect(sim.Boot(ctx, ns, other, node)).To(Succeed())
		Eventually(suite.Observation(ns, vm), time.Minute).Should(WithTransform(domainOf, Not(BeNil())))

		sim.SetDomainFault(ns, vm, simulator.DomainNotExported, true)
		Eventually(suite.Observation(ns, vm), time.Minute).Should(And(
			layerIs("node", v1alpha1.VerdictUnknown, v1alpha1.ReasonDomainStatsMissing),
			WithTransform(func(o *v1alpha1.VMObservation) string { return o.Status.Layers.Node.Message },
				ContainSubstring("exports other domains but cannot read this domain's stats from its virt-launcher")),
		))
		Expect(suite.Observation(ns, other)()).To(layerIs("node", v1alpha1.VerdictHealthy, v1alpha1.ReasonLauncherRunning))

		sim.SetVirtHandlerMetricsDown(node, true)
		DeferCleanup(sim.SetVirtHandlerMetricsDown, node, false)
		Eventually(suite.Observation(ns, other), time.Minute).Should(And(
			layerIs("node", v1alpha1.VerdictUnknown, v1alpha1.ReasonDomainStatsMissing),
			WithTransform(func(o *v1alpha1.VMObservation) string { return o.Status.Layers.Node.Message },
				ContainSubstring("exports no domain at all, though other VMIs run there")),
		))
		// The control plane and the guest still say what KubeVirt says.
		Expect(suite.Observation(ns, other)()).To(layerIs("guest", v1alpha1.VerdictHealthy, v1alpha1.ReasonGuestAgentConnected))
	})

	It("guest-cpu-stalled: vCPU time that stops advancing degrades the guest", func() {
		ns, node := world("dscpu")
		bootHealthy(ns, node)
		Eventually(suite.Observation(ns, vm), time.Minute).Should(WithTransform(domainOf, Not(BeNil())))
		sim.SetDomainFault(ns, vm, simulator.DomainVCPUFrozen, true)
		Eventually(suite.Observation(ns, vm), time.Minute).Should(And(
			layerIs("guest", v1alpha1.VerdictDegraded, v1alpha1.ReasonGuestCPUStalled),
			overallIs(v1alpha1.VerdictDegraded, v1alpha1.ReasonGuestCPUStalled),
		))
		sim.SetDomainFault(ns, vm, simulator.DomainVCPUFrozen, false)
		Eventually(suite.Observation(ns, vm), time.Minute).Should(overallIs(v1alpha1.VerdictHealthy, v1alpha1.ReasonRunning))
	})

	It("guest-memory-pressure: a guest out of memory and swapping is Degraded", func() {
		ns, node := world("dsmem")
		bootHealthy(ns, node)
		sim.SetDomainFault(ns, vm, simulator.DomainMemoryPressure, true)
		Eventually(suite.Observation(ns, vm), time.Minute).Should(And(
			layerIs("guest", v1alpha1.VerdictDegraded, v1alpha1.ReasonGuestMemoryPressure),
			WithTransform(func(o *v1alpha1.VMObservation) bool {
				return o.Status.Domain != nil && o.Status.Domain.SwapRate != nil && !o.Status.Domain.SwapRate.IsZero()
			}, BeTrue()),
		))
	})

	It("migration-not-converging: predicts the failure of a live migration before any timeout", func() {
		ns, node := world("dsmig")
		target := node + "-b"
		Expect(sim.AddNode(ctx, target)).To(Succeed())
		track(target)
		scrapeAll()
		bootHealthy(ns, node)
		sim.SetDomainFault(ns, vm, simulator.DomainMigrationNotConverging, true)
		m, err := sim.StartMigration(ctx, ns, vm, simulator.MigrationOptions{TargetNode: target, Outcome: simulator.MigrationSucceeds})
		Expect(err).NotTo(HaveOccurred())
		for m.Phase() != kubevirtv1.MigrationRunning {
			Expect(m.Step(ctx)).To(Succeed())
		}
		Eventually(suite.Observation(ns, vm), time.Minute).Should(And(
			layerIs("controlPlane", v1alpha1.VerdictDegraded, v1alpha1.ReasonMigrationNotConverging),
			WithTransform(func(o *v1alpha1.VMObservation) string { return o.Status.Layers.ControlPlane.Message },
				And(ContainSubstring("dirt"), ContainSubstring("/s"))),
		))
		// The migration ends after all (a post-copy switch, say): the
		// prediction goes with it.
		Expect(m.Run(ctx)).To(Succeed())
		Eventually(suite.Observation(ns, vm), time.Minute).Should(overallIs(v1alpha1.VerdictHealthy, v1alpha1.ReasonRunning))
	})

	It("keeps every verdict, with a note, when Prometheus goes away, and pages no VM", func() {
		ns, node := world("dsdown")
		bootHealthy(ns, node)
		Eventually(suite.Observation(ns, vm), time.Minute).Should(WithTransform(domainOf, Not(BeNil())))
		Expect(prom.Stop()).To(Succeed())
		Eventually(suite.Observation(ns, vm), time.Minute).Should(And(
			overallIs(v1alpha1.VerdictHealthy, v1alpha1.ReasonRunning),
			WithTransform(func(o *v1alpha1.VMObservation) string { return o.Status.Layers.Node.Message },
				ContainSubstring(v1alpha1.ReasonDomainStatsUnavailable)),
			WithTransform(func(o *v1alpha1.VMObservation) []string {
				var values []string
				for _, e := range o.Status.Layers.Node.Evidence {
					values = append(values, e.Value)
				}
				return values
			}, ContainElement("Prometheus cannot be reached")),
			WithTransform(domainOf, BeNil()),
		))
		Expect(sourceAvailable(domainstats.Name)).To(BeZero())
		Expect(strings.Join(warningEvents(ns), "\n")).To(BeEmpty())
	})
})

// sourceAvailable is vmobs_fact_source_available of the source.
func sourceAvailable(source string) float64 {
	mfs, err := registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	for _, mf := range mfs {
		if mf.GetName() != "vmobs_fact_source_available" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "source" && l.GetValue() == source {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	Fail("no vmobs_fact_source_available{source=" + source + "}")
	return 0
}
