package simulator

import (
	"context"
	"fmt"
	"hash/fnv"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// How Prometheus scrapes virt-handler in a cluster where KubeVirt's
// ServiceMonitor is installed (kv:pkg/virt-operator/resource/generate/
// components/prometheus.go NewServiceMonitorCR, deployments.go
// NewPrometheusService), for tests that configure a real Prometheus the
// same way.
const (
	// VirtHandlerJob is the job label of virt-handler's series.
	// prometheus-operator names the job after the Service the
	// ServiceMonitor selects: kubevirt-prometheus-metrics.
	VirtHandlerJob = "kubevirt-prometheus-metrics"
	// VirtHandlerHonorLabels is the ServiceMonitor's honorLabels: true.
	// The series keep their own namespace label (the VMI's) over the
	// target's (KubeVirt's); without it Prometheus would rename theirs
	// exported_namespace.
	VirtHandlerHonorLabels = true
	// KubeVirtNamespace is where KubeVirt, hence virt-handler, runs.
	KubeVirtNamespace = "kubevirt"
)

// VirtHandlerTarget is one node's virt-handler metrics endpoint as
// Prometheus finds it, served by VirtHandlerMetrics.
type VirtHandlerTarget struct {
	// Node is the node the virt-handler runs on.
	Node string
	// Address is the host:port of the listener serving VirtHandlerMetrics.
	Address string
	// MetricsPath is the node's endpoint on it, /nodes/<node>/metrics.
	MetricsPath string
	// Labels are the target labels prometheus-operator's relabelling
	// gives a virt-handler pod behind the Service (namespace, service,
	// pod, container, endpoint; kv's ServiceMonitor selects port
	// "metrics"), plus an instance of its own per node: one listener
	// serves every node here, where each virt-handler has its pod's
	// address. None of them is node: virt-handler's series carry node
	// themselves.
	Labels map[string]string
}

// VirtHandlerTargets are the scrape targets of nodes' virt-handlers, all
// served by VirtHandlerMetrics on the listener at address (host:port).
func VirtHandlerTargets(address string, nodes ...string) []VirtHandlerTarget {
	out := make([]VirtHandlerTarget, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, VirtHandlerTarget{
			Node:        n,
			Address:     address,
			MetricsPath: "/nodes/" + n + "/metrics",
			Labels: map[string]string{
				"namespace": KubeVirtNamespace,
				"service":   VirtHandlerJob,
				"pod":       virtHandlerPod(n),
				"container": "virt-handler",
				"endpoint":  "metrics",
				"instance":  n + ":8443",
			},
		})
	}
	return out
}

// virtHandlerPod names the node's virt-handler pod, a DaemonSet pod, with a
// suffix derived from the node's name.
func virtHandlerPod(node string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(node))
	v := h.Sum32()
	b := make([]byte, 5)
	for i := range b {
		b[i] = randAlphabet[v%uint32(len(randAlphabet))]
		v /= uint32(len(randAlphabet))
	}
	return "virt-handler-" + string(b)
}

// VirtHandlerMetrics serves every node's virt-handler metrics endpoint from
// one listener: GET /nodes/<node>/metrics answers, in the Prometheus text
// format, what virt-handler on <node> exports about its domains: the
// domain stats of each VMI in phase Running whose status.nodeName is the
// node, and the migration metrics of those migrating away from it (see
// SetDomainFault for what can go wrong, SetVirtHandlerMetricsDown for a
// node's endpoint going down). virt-handler's other metrics (its own
// process, work queues, version) are not served.
//
// Each request lists the node's VMIs from the API server with the
// kubevirt.io/nodeName label selector, as virt-handler's VMI informer
// filters them, and computes their values at the simulator's clock. When
// that list is slow (a loaded API server or test machine) and an earlier
// one for the node is at hand, the request answers from the earlier one
// after vmiListPatience, as virt-handler answers from its informer's
// cache, rather than running past Prometheus' scrape timeout: a scrape
// that times out drops every series of the node, which the engine reads
// as domain stats gone missing.
func (s *Simulator) VirtHandlerMetrics() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /nodes/{node}/metrics", func(w http.ResponseWriter, r *http.Request) {
		s.serveVirtHandlerMetrics(w, r, r.PathValue("node"))
	})
	return mux
}

// NodeVirtHandlerMetrics serves node's virt-handler metrics endpoint alone,
// on any path, for a listener per node.
func (s *Simulator) NodeVirtHandlerMetrics(node string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.serveVirtHandlerMetrics(w, r, node)
	})
}

func (s *Simulator) serveVirtHandlerMetrics(w http.ResponseWriter, r *http.Request, node string) {
	if s.virtHandlerDown(node) {
		http.Error(w, "virt-handler on "+node+" is down", http.StatusServiceUnavailable)
		return
	}
	samples, err := s.nodeSamples(r.Context(), node)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	// virt-handler's own handler: promhttp with default options
	// (kv:pkg/monitoring/metrics/virt-handler/handler/handler.go).
	promhttp.HandlerFor(newSampleRegistry(samples), promhttp.HandlerOpts{}).ServeHTTP(w, r)
}

// newSampleRegistry is a registry that gathers samples.
func newSampleRegistry(samples []sample) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	// An unchecked collector registers without fail.
	reg.MustRegister(sampleCollector(samples))
	return reg
}

// nodeSamples are the series of every domain virt-handler on node exports,
// at the clock's now.
func (s *Simulator) nodeSamples(ctx context.Context, node string) ([]sample, error) {
	vmis, err := s.domains.nodeVMIs(ctx, s.Client, node)
	if err != nil {
		return nil, err
	}
	now := s.Clock()
	var out []sample
	for i := range vmis {
		vmi := &vmis[i]
		if vmi.Status.Phase != kubevirtv1.Running || vmi.Status.NodeName != node {
			continue
		}
		h := s.faultHistory(vmi.Namespace, vmi.Name)
		if faultsAt(h, now)&DomainNotExported != 0 {
			continue
		}
		out = append(out, domainSamples(vmi, h, now)...)
		out = append(out, migrationSamples(vmi, h, now)...)
	}
	return out, nil
}

// sampleCollector hands samples to a registry as constant metrics, a
// descriptor each, as virt-handler's collectors do: the label names vary
// with each VMI's labels, so it is an unchecked collector (no Describe).
type sampleCollector []sample

func (sampleCollector) Describe(chan<- *prometheus.Desc) {}

func (c sampleCollector) Collect(ch chan<- prometheus.Metric) {
	for _, sm := range c {
		names := make([]string, len(sm.labels))
		values := make([]string, len(sm.labels))
		for i, l := range sm.labels {
			names[i], values[i] = l[0], l[1]
		}
		typ := prometheus.GaugeValue
		if sm.metric.counter {
			typ = prometheus.CounterValue
		}
		desc := prometheus.NewDesc(sm.metric.name, sm.metric.help, names, nil)
		m, err := prometheus.NewConstMetric(desc, typ, sm.value, values...)
		if err != nil {
			m = prometheus.NewInvalidMetric(desc, err)
		}
		ch <- m
	}
}

// vmiListPatience is how long a scrape waits for a node's VMI list before
// it answers from the node's previous list.
const vmiListPatience = 300 * time.Millisecond

// vmiListTimeout bounds a node's VMI list, which goes on after the scrape
// that started it has answered, to refresh the node's previous list.
const vmiListTimeout = 30 * time.Second

// nodeVMIList is a node's VMI list: the newest one that completed, and
// the one in flight.
type nodeVMIList struct {
	last     []kubevirtv1.VirtualMachineInstance
	haveLast bool
	// inflight closes when the list in flight completes; nil when none is.
	inflight chan struct{}
	err      error
}

// nodeVMIs lists the VMIs on node, joining a list in flight for it if
// there is one; after vmiListPatience it answers with the node's previous
// list, if any, and lets the list in flight refresh it.
func (d *domainState) nodeVMIs(ctx context.Context, c client.Reader, node string) ([]kubevirtv1.VirtualMachineInstance, error) {
	d.mu.Lock()
	if d.lists == nil {
		d.lists = map[string]*nodeVMIList{}
	}
	l := d.lists[node]
	if l == nil {
		l = &nodeVMIList{}
		d.lists[node] = l
	}
	done := l.inflight
	if done == nil {
		done = make(chan struct{})
		l.inflight = done
		// Not the request's context: the list outlives a scrape that
		// stopped waiting for it.
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), vmiListTimeout)
		go func() {
			defer cancel()
			var vmis kubevirtv1.VirtualMachineInstanceList
			err := c.List(lctx, &vmis, client.MatchingLabels{kubevirtv1.NodeNameLabel: node})
			d.mu.Lock()
			defer d.mu.Unlock()
			l.inflight, l.err = nil, err
			if err == nil {
				l.last, l.haveLast = vmis.Items, true
			}
			close(done)
		}()
	}
	d.mu.Unlock()

	patience := time.NewTimer(vmiListPatience)
	defer patience.Stop()
	select {
	case <-done:
	case <-patience.C:
		d.mu.Lock()
		last, ok := l.last, l.haveLast
		d.mu.Unlock()
		if ok {
			return last, nil
		}
		select {
		case <-done:
		case <-ctx.Done():
			return nil, fmt.Errorf("listing the VMIs on node %s: %w", node, ctx.Err())
		}
	case <-ctx.Done():
		return nil, fmt.Errorf("listing the VMIs on node %s: %w", node, ctx.Err())
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if l.err != nil {
		return nil, fmt.Errorf("listing the VMIs on node %s: %w", node, l.err)
	}
	return l.last, nil
}
