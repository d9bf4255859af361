package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/vmobs/vmobs/internal/app"
	"github.com/vmobs/vmobs/internal/verdict"
	"github.com/vmobs/vmobs/internal/version"
)

func init() {
	register("manager", command{
		summary: "run the controller that keeps one VMObservation per VM true",
		run:     runManager,
	})
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

// managerFlags are what `vmobs manager`'s flags set: the manager's options,
// and the values validate checks or converts before they join them. Each
// option group binds and checks its own flags (verdict.Policy, the write
// policy's controllers.WriteOptions, each source's Config); the manager's
// own are here.
type managerFlags struct {
	opts       app.Options
	kubeconfig string
	namespaces stringList
	selector   string
	// policy completes opts.Policy's int32 thresholds.
	policy *verdict.PolicyFlags
	// qps is KubeAPIQPS, a float32, read as a float64.
	qps float64
	zap zap.Options
}

// newManagerFlags defines `vmobs manager`'s flags, defaulting to
// app.Defaults(), on a FlagSet of their own: runManager parses it, and
// TestFlagsReference generates docs/flags.md from it.
func newManagerFlags() (*managerFlags, *flag.FlagSet) {
	f := &managerFlags{opts: app.Defaults()}
	opts := &f.opts
	fs := flag.NewFlagSet("vmobs manager", flag.ContinueOnError)
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "Path to a kubeconfig; empty uses $KUBECONFIG or the in-cluster config.")
	fs.StringVar(&opts.MetricsAddr, "metrics-bind-address", opts.MetricsAddr, "Address of the metrics endpoint; 0 turns it off.")
	fs.BoolVar(&opts.SecureMetrics, "metrics-secure", opts.SecureMetrics, "Serve metrics over HTTPS behind Kubernetes authentication and authorization.")
	fs.StringVar(&opts.MetricsCertDir, "metrics-cert-dir", "", "Directory with the metrics server's certificate and key (a mounted cert-manager or OpenShift service-CA Secret), reloaded when they change; empty serves a self-signed certificate.")
	fs.StringVar(&opts.MetricsCertName, "metrics-cert-name", "tls.crt", "File name of the metrics server's certificate in --metrics-cert-dir.")
	fs.StringVar(&opts.MetricsKeyName, "metrics-key-name", "tls.key", "File name of the metrics server's key in --metrics-cert-dir.")
	fs.BoolVar(&opts.EnableHTTP2, "enable-http2", false, "Let the metrics server speak HTTP/2; off, it speaks HTTP/1.1 only, out of reach of HTTP/2's denial-of-service flaws (rapid reset, CVE-2023-44487).")
	fs.StringVar(&opts.ProbeAddr, "health-probe-bind-address", opts.ProbeAddr, "Address of /healthz and /readyz; 0 turns them off.")
	fs.BoolVar(&opts.LeaderElection, "leader-elect", false, "Elect a leader so that only one replica works at a time.")
	fs.StringVar(&opts.LeaderElectionID, "leader-election-id", opts.LeaderElectionID, "Name of the leader election Lease; with --vm-selector, the default becomes a Lease of the shard's own (vmobs-shard-<hash of the selector>.observability.vmobs.io).")
	fs.StringVar(&opts.LeaderElectionNamespace, "leader-election-namespace", "", "Namespace of the Lease; empty is the pod's namespace.")
	fs.Var(&f.namespaces, "namespace", "Watch only this namespace; repeat or comma-separate for several. Empty watches all.")
	fs.StringVar(&f.selector, "vm-selector", "", "Label selector on the VM's own labels (a standalone VMI's): observe only the VMs that match, to shard a large cluster over several instances (docs/sharding.md).")
	fs.BoolVar(&opts.AutoCreate, "auto-create", opts.AutoCreate, "Create a VMObservation for every VM and VMI in scope; false keeps only the user-declared ones.")
	fs.BoolVar(&opts.NodeObservations, "node-observations", opts.NodeObservations, "Keep one NodeObservation per node that runs VMs or virt-handler: the kubelet, virt-handler, domain stats and the launcher path of the node, and its VMs by verdict (docs/nodeobservation.md); false runs the VMObservation controller alone. An instance limited by --namespace or --vm-selector never runs it.")
	fs.BoolVar(&opts.Incidents, "incidents", opts.Incidents, "Keep one VMIncident per shared cause other than a node (a StorageClass, a CSI driver, virt-api, the domain-stats source) under which several VMs turn non-Healthy at once, and point their VMObservations at it (docs/incidents.md). An instance limited by --namespace or --vm-selector never runs it.")
	fs.IntVar(&opts.IncidentThreshold, "incident-threshold", opts.IncidentThreshold, "A VMIncident opens once this many VMs turn Unknown, Degraded or Failed for a shared cause within 5 minutes of each other (docs/incidents.md).")
	fs.IntVar(&opts.NodeIncidentThreshold, "node-incident-threshold", opts.NodeIncidentThreshold, "A node's NodeObservation names an incident once this many of its VMs are Unknown, Degraded or Failed under a cause of the node's own (its kubelet or virt-handler layer), docs/nodeobservation.md.")
	fs.BoolVar(&opts.Storage, "storage", opts.Storage, "Read the VMs' PersistentVolumeClaims, StorageClasses, VolumeAttachments, CDI DataVolumes (when CDI's CRD is served) and Warning Events for the storage layer; false judges storage only from what the VM and VMI say.")
	opts.WriteOptions.BindFlags(fs)
	f.policy = opts.Policy.BindFlags(fs)
	fs.StringVar(&opts.PrometheusURL, "prometheus-url", "", "Read virt-handler's domain stats from the Prometheus (or Thanos Querier) at this URL, e.g. http://prometheus-operated.monitoring:9090 or https://thanos-querier.openshift-monitoring.svc:9091; empty leaves them out (docs/domain-stats.md).")
	fs.StringVar(&opts.PrometheusBearerTokenFile, "prometheus-bearer-token-file", "", "Send the token in this file (read before each query) to Prometheus, e.g. /var/run/secrets/kubernetes.io/serviceaccount/token for OpenShift's thanos-querier.")
	fs.StringVar(&opts.PrometheusCAFile, "prometheus-ca-file", "", "PEM bundle that signs Prometheus' serving certificate, e.g. /var/run/secrets/kubernetes.io/serviceaccount/service-ca.crt on OpenShift.")
	opts.DomainStats.BindFlags(fs)
	opts.GuestProbe.BindFlags(fs)
	fs.IntVar(&opts.StartupGCPercent, "startup-gc-percent", opts.StartupGCPercent, "The garbage collector's GC percent while the informers decode their initial lists (until the caches have synced, at most 5m), so that what the cache keeps of them sits densely in the heap; 0 leaves the collector as GOGC sets it, and an explicit GOGC wins (docs/scale.md).")
	fs.IntVar(&opts.MaxConcurrentReconciles, "max-concurrent-reconciles", opts.MaxConcurrentReconciles, "Number of workers.")
	fs.Float64Var(&f.qps, "kube-api-qps", float64(opts.KubeAPIQPS), "Client-side limit on requests per second to the API server; 0 turns it off (the workers bound the load and API Priority and Fairness protects the server).")
	fs.IntVar(&opts.KubeAPIBurst, "kube-api-burst", opts.KubeAPIBurst, "Burst above --kube-api-qps; 0 is twice --kube-api-qps.")
	f.zap.BindFlags(fs)
	return f, fs
}

// validate checks what the flags were given, group by group, and
// completes the options.
func (f *managerFlags) validate() error {
	opts := &f.opts
	if f.qps < 0 || opts.KubeAPIBurst < 0 || opts.StartupGCPercent < 0 {
		return errors.New("--kube-api-qps, --kube-api-burst and --startup-gc-percent must not be negative")
	}
	if opts.IncidentThreshold < 1 {
		return errors.New("--incident-threshold must be at least 1")
	}
	if opts.NodeIncidentThreshold < 1 {
		return errors.New("--node-incident-threshold must be at least 1")
	}
	for _, check := range []func() error{opts.WriteOptions.Validate, opts.GuestProbe.Validate, f.policy.Validate} {
		if err := check(); err != nil {
			return err
		}
	}
	if opts.PrometheusURL == "" && (opts.PrometheusBearerTokenFile != "" || opts.PrometheusCAFile != "") {
		return errors.New("--prometheus-bearer-token-file and --prometheus-ca-file need --prometheus-url")
	}
	opts.KubeAPIQPS = float32(f.qps)
	opts.Namespaces = f.namespaces
	if f.selector != "" {
		sel, err := labels.Parse(f.selector)
		if err != nil {
			return fmt.Errorf("--vm-selector: %w", err)
		}
		opts.VMSelector = sel
	}
	return nil
}

func runManager(ctx context.Context, args []string) int {
	f, fs := newManagerFlags()
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&f.zap)))
	log := ctrl.Log.WithName("setup")
	if err := f.validate(); err != nil {
		fmt.Fprintf(stderr(ctx), "vmobs manager: %v\n", err)
		return 2
	}
	opts, selector := &f.opts, f.selector

	loading := clientcmd.NewDefaultClientConfigLoadingRules()
	loading.ExplicitPath = f.kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(loading, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		log.Error(err, "Loading the kubeconfig failed")
		return 1
	}
	cfg.UserAgent = "vmobs-controller"

	mgr, err := app.NewManager(cfg, *opts)
	if err != nil {
		log.Error(err, "Creating the manager failed")
		return 1
	}
	log.Info("Starting manager", "version", version.Get().Version, "commit", version.Get().Commit, "namespaces", opts.Namespaces, "vmSelector", selector, "autoCreate", opts.AutoCreate, "nodeObservations", opts.NodeObservations, "storage", opts.Storage, "leaderElection", opts.LeaderElection, "lease", opts.LeaseName(), "domainStats", opts.PrometheusURL != "", "guestProbeInterval", opts.GuestProbe.Interval)
	if err := mgr.Start(ctx); err != nil {
		log.Error(err, "Manager stopped with an error")
		return 1
	}
	return 0
}
