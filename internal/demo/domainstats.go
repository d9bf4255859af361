package demo

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/internal/simulator"
	"github.com/vmobs/vmobs/internal/testenv"
)

// errNoPrometheus says why the domain-stats scenarios cannot play.
var errNoPrometheus = errors.New("bin/prometheus not built (make prometheus)")

// prometheusBuilt says whether the Prometheus server the demo runs for
// the domain-stats scenarios is there; without it they are skipped.
func prometheusBuilt() error {
	fi, err := os.Stat(testenv.PrometheusBinary())
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return errNoPrometheus
		}
		return fmt.Errorf("%w: %w", errNoPrometheus, err)
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return fmt.Errorf("%w: %s is not an executable", errNoPrometheus, displayPath(testenv.PrometheusBinary()))
	}
	return nil
}

// domainStats is the chain the domain-stats scenarios read through:
// the simulator's virt-handler metrics served on a local listener, and a
// real Prometheus scraping one target per node, as KubeVirt's
// ServiceMonitor has it scrape every virt-handler pod.
type domainStats struct {
	prom     *testenv.Prometheus
	exporter net.Listener
	srv      *http.Server
	// nodes are the nodes scraped, sorted.
	nodes []string
	// syncDone closes when the loop that follows the Nodes has returned;
	// nil before it starts.
	syncDone <-chan struct{}
}

// startDomainStats serves sim's virt-handler metrics and starts
// Prometheus scraping them for nodes.
func startDomainStats(sim *simulator.Simulator, scrapeEvery time.Duration, nodes []string) (*domainStats, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("virt-handler metrics listener: %w", err)
	}
	ds := &domainStats{exporter: ln, srv: &http.Server{Handler: sim.VirtHandlerMetrics(), ReadHeaderTimeout: 5 * time.Second}}
	go func() { _ = ds.srv.Serve(ln) }()
	ds.nodes = sortedUnique(nodes)
	ds.prom, err = testenv.StartPrometheus(testenv.PrometheusOptions{ScrapeInterval: scrapeEvery, Jobs: ds.jobs(ds.nodes)})
	if err != nil {
		_ = ds.srv.Close()
		return nil, err
	}
	return ds, nil
}

// jobs is the virt-handler scrape job for nodes.
func (ds *domainStats) jobs(nodes []string) []testenv.ScrapeJob {
	job := testenv.ScrapeJob{Name: simulator.VirtHandlerJob, HonorLabels: simulator.VirtHandlerHonorLabels}
	for _, t := range simulator.VirtHandlerTargets(ds.exporter.Addr().String(), nodes...) {
		job.Targets = append(job.Targets, testenv.ScrapeTarget{Address: t.Address, MetricsPath: t.MetricsPath, Labels: t.Labels})
	}
	return []testenv.ScrapeJob{job}
}

// followNodes adds a scrape target for every Node the fleet gains (the
// node-loss scenarios bring their own), checking every interval until
// ctx ends. Nodes are never dropped: a lost node's virt-handler stays in
// the Service's endpoints until its pod is deleted.
func (ds *domainStats) followNodes(ctx context.Context, c client.Reader, every time.Duration, fail func(format string, a ...any)) {
	ds.syncDone = simulator.GoDone(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			var list corev1.NodeList
			if err := c.List(ctx, &list); err != nil {
				if ctx.Err() == nil {
					fail("listing nodes for the virt-handler scrape targets: %v", err)
				}
				continue
			}
			nodes := slices.Clone(ds.nodes)
			for _, n := range list.Items {
				nodes = append(nodes, n.Name)
			}
			nodes = sortedUnique(nodes)
			if slices.Equal(nodes, ds.nodes) {
				continue
			}
			if err := ds.prom.SetJobs(ctx, ds.jobs(nodes)); err != nil {
				if ctx.Err() == nil {
					fail("updating Prometheus' virt-handler targets: %v", err)
				}
				continue
			}
			ds.nodes = nodes
		}
	})
}

// stop waits for followNodes, then stops Prometheus and the exporter.
func (ds *domainStats) stop() error {
	if ds.syncDone != nil {
		<-ds.syncDone
	}
	err := ds.prom.Stop()
	_ = ds.srv.Close()
	return err
}

func sortedUnique(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return slices.Compact(out)
}
