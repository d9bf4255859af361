package app

import (
	"errors"
	"flag"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/vmobs/vmobs/internal/verdict"
)

// Flags hold the manager's options on a command line (Options.BindFlags):
// the values Validate checks or converts before they join the Options.
type Flags struct {
	o          *Options
	namespaces stringList
	// Selector is --vm-selector as given.
	Selector string
	// policy completes the Policy's int32 thresholds.
	policy *verdict.PolicyFlags
	// qps is KubeAPIQPS, a float32, read as a float64.
	qps float64
}

// BindFlags defines the manager's flags on fs, defaulting to o's values
// (Defaults()): its own and those of each option group, which binds and
// checks its own (verdict.Policy, the write policy's
// controllers.WriteOptions, each source's Config). The returned Flags'
// Validate must run after the parse.
func (o *Options) BindFlags(fs *flag.FlagSet) *Flags {
	f := &Flags{o: o}
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", o.MetricsAddr, "Address of the metrics endpoint; 0 turns it off.")
	fs.BoolVar(&o.SecureMetrics, "metrics-secure", o.SecureMetrics, "Serve metrics over HTTPS behind Kubernetes authentication and authorization.")
	fs.StringVar(&o.MetricsCertDir, "metrics-cert-dir", "", "Directory with the metrics server's certificate and key (a mounted cert-manager or OpenShift service-CA Secret), reloaded when they change; empty serves a self-signed certificate.")
	fs.StringVar(&o.MetricsCertName, "metrics-cert-name", "tls.crt", "File name of the metrics server's certificate in --metrics-cert-dir.")
	fs.StringVar(&o.MetricsKeyName, "metrics-key-name", "tls.key", "File name of the metrics server's key in --metrics-cert-dir.")
	fs.BoolVar(&o.EnableHTTP2, "enable-http2", false, "Let the metrics server speak HTTP/2; off, it speaks HTTP/1.1 only, out of reach of HTTP/2's denial-of-service flaws (rapid reset, CVE-2023-44487).")
	fs.StringVar(&o.ProbeAddr, "health-probe-bind-address", o.ProbeAddr, "Address of /healthz and /readyz; 0 turns them off.")
	fs.BoolVar(&o.LeaderElection, "leader-elect", false, "Elect a leader so that only one replica works at a time.")
	fs.StringVar(&o.LeaderElectionID, "leader-election-id", o.LeaderElectionID, "Name of the leader election Lease; with --vm-selector, the default becomes a Lease of the shard's own (vmobs-shard-<hash of the selector>.observability.vmobs.io).")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", "", "Namespace of the Lease; empty is the pod's namespace.")
	fs.Var(&f.namespaces, "namespace", "Watch only this namespace; repeat or comma-separate for several. Empty watches all.")
	fs.StringVar(&f.Selector, "vm-selector", "", "Label selector on the VM's own labels (a standalone VMI's): observe only the VMs that match, to shard a large cluster over several instances (docs/sharding.md).")
	fs.BoolVar(&o.AutoCreate, "auto-create", o.AutoCreate, "Create a VMObservation for every VM and VMI in scope; false keeps only the user-declared ones.")
	fs.BoolVar(&o.NodeObservations, "node-observations", o.NodeObservations, "Keep one NodeObservation per node that runs VMs or virt-handler: the kubelet, virt-handler, domain stats and the launcher path of the node, and its VMs by verdict (docs/nodeobservation.md); false runs the VMObservation controller alone. An instance limited by --namespace or --vm-selector never runs it.")
	fs.BoolVar(&o.Incidents, "incidents", o.Incidents, "Keep one VMIncident per shared cause other than a node (a StorageClass, a CSI driver, virt-api, the domain-stats source, a virt-handler rollout) under which several VMs turn non-Healthy at once, and point their VMObservations at it, and the VMs of a node's incident at their NodeObservation (docs/incidents.md). An instance limited by --namespace or --vm-selector never runs it.")
	fs.IntVar(&o.IncidentThreshold, "incident-threshold", o.IncidentThreshold, "A VMIncident opens once this many VMs turn Unknown, Degraded or Failed for a shared cause within 5 minutes of each other (docs/incidents.md).")
	fs.IntVar(&o.NodeIncidentThreshold, "node-incident-threshold", o.NodeIncidentThreshold, "A node's NodeObservation names an incident once this many of its VMs are Unknown, Degraded or Failed under a cause of the node's own (its kubelet or virt-handler layer), docs/nodeobservation.md.")
	fs.BoolVar(&o.Storage, "storage", o.Storage, "Read the VMs' PersistentVolumeClaims, StorageClasses, VolumeAttachments, CDI DataVolumes (when CDI's CRD is served) and Warning Events for the storage layer; false judges storage only from what the VM and VMI say.")
	o.WriteOptions.BindFlags(fs)
	f.policy = o.Policy.BindFlags(fs)
	fs.StringVar(&o.PrometheusURL, "prometheus-url", "", "Read virt-handler's domain stats from the Prometheus (or Thanos Querier) at this URL, e.g. http://prometheus-operated.monitoring:9090 or https://thanos-querier.openshift-monitoring.svc:9091; empty leaves them out (docs/domain-stats.md).")
	fs.StringVar(&o.PrometheusBearerTokenFile, "prometheus-bearer-token-file", "", "Send the token in this file (read before each query) to Prometheus, e.g. /var/run/secrets/kubernetes.io/serviceaccount/token for OpenShift's thanos-querier.")
	fs.StringVar(&o.PrometheusCAFile, "prometheus-ca-file", "", "PEM bundle that signs Prometheus' serving certificate, e.g. /var/run/secrets/kubernetes.io/serviceaccount/service-ca.crt on OpenShift.")
	o.DomainStats.BindFlags(fs)
	o.GuestProbe.BindFlags(fs)
	fs.IntVar(&o.StartupGCPercent, "startup-gc-percent", o.StartupGCPercent, "The garbage collector's GC percent while the informers decode their initial lists (until the caches have synced, at most 5m), so that what the cache keeps of them sits densely in the heap; 0 leaves the collector as GOGC sets it, and an explicit GOGC wins (docs/scale.md).")
	fs.IntVar(&o.MaxConcurrentReconciles, "max-concurrent-reconciles", o.MaxConcurrentReconciles, "Number of workers.")
	fs.Float64Var(&f.qps, "kube-api-qps", float64(o.KubeAPIQPS), "Client-side limit on requests per second to the API server; 0 turns it off (the workers bound the load and API Priority and Fairness protects the server).")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", o.KubeAPIBurst, "Burst above --kube-api-qps; 0 is twice --kube-api-qps.")
	return f
}

// Validate checks what the flags were given, group by group, and
// completes the Options.
func (f *Flags) Validate() error {
	o := f.o
	if f.qps < 0 || o.KubeAPIBurst < 0 || o.StartupGCPercent < 0 {
		return errors.New("--kube-api-qps, --kube-api-burst and --startup-gc-percent must not be negative")
	}
	if o.IncidentThreshold < 1 {
		return errors.New("--incident-threshold must be at least 1")
	}
	if o.NodeIncidentThreshold < 1 {
		return errors.New("--node-incident-threshold must be at least 1")
	}
	for _, check := range []func() error{o.WriteOptions.Validate, o.GuestProbe.Validate, f.policy.Validate} {
		if err := check(); err != nil {
			return err
		}
	}
	if o.PrometheusURL == "" && (o.PrometheusBearerTokenFile != "" || o.PrometheusCAFile != "") {
		return errors.New("--prometheus-bearer-token-file and --prometheus-ca-file need --prometheus-url")
	}
	o.KubeAPIQPS = float32(f.qps)
	o.Namespaces = f.namespaces
	if f.Selector != "" {
		sel, err := labels.Parse(f.Selector)
		if err != nil {
			return fmt.Errorf("--vm-selector: %w", err)
		}
		o.VMSelector = sel
	}
	return nil
}

// stringList is a repeatable, comma-separable flag.
type stringList []string

func (s *stringList) String() string { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error {
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*s = append(*s, p)
		}
	}
	return nil
}
