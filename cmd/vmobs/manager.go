package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/vmobs/vmobs/internal/app"
	"github.com/vmobs/vmobs/internal/domainstats"
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
// and the values runManager checks or converts before they join them.
type managerFlags struct {
	opts       app.Options
	kubeconfig string
	namespaces stringList
	selector   string
	// The int32 options, read as int and range checked by runManager.
	memPct, slowFactor, notConverging, fsUsed, fsCritical, unresponsive, historyLimit int

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
	fs.DurationVar(&opts.EvidenceRefreshInterval, "evidence-refresh-interval", opts.EvidenceRefreshInterval, "Opt in to the periodic evidence refresh: put virt-handler's heartbeat and its deadline into every status and rewrite it at most this often to keep them true (a write per VM per interval). 0, the default, writes a status only when its evidence changes (docs/controller.md, Freshness without writes).")
	fs.Float64Var(&opts.EvidenceRefreshQPS, "evidence-refresh-qps", opts.EvidenceRefreshQPS, "At most this many timestamp-only status writes per second across all VMs (20 covers 6,000 VMs at a 5m interval; more VMs stretch the interval); 0 is no limit.")
	fs.DurationVar(&opts.ProgressCoalesceWindow, "progress-coalesce-window", opts.ProgressCoalesceWindow, "Coalesce status changes between Progressing states (a boot, a migration) to one write per window.")
	fs.DurationVar(&opts.Policy.SchedulingTimeout, "scheduling-timeout", opts.Policy.SchedulingTimeout, "Pending/Scheduling longer than this is StuckScheduling.")
	fs.DurationVar(&opts.Policy.MigrationPhaseTimeout, "migration-phase-timeout", opts.Policy.MigrationPhaseTimeout, "A migration in one phase longer than this is stuck.")
	fs.DurationVar(&opts.Policy.HeartbeatTimeout, "heartbeat-timeout", opts.Policy.HeartbeatTimeout, "virt-handler heartbeat older than this makes the node layer Unknown.")
	fs.DurationVar(&opts.Policy.AgentGracePeriod, "agent-grace-period", opts.Policy.AgentGracePeriod, "Time after Running for the guest agent to connect.")
	fs.DurationVar(&opts.Policy.StalledAfter, "stalled-after", opts.Policy.StalledAfter, "A layer Degraded longer than this sets Stalled=True.")
	fs.DurationVar(&opts.Policy.LagGrace, "lag-grace", opts.Policy.LagGrace, "How long KubeVirt's objects may contradict each other (status lags reality: a migration's handoff, a pod Ready before the VMI follows) before the contradiction becomes a verdict.")
	fs.BoolVar(&opts.Policy.GuestAgentExpected, "guest-agent-expected", opts.Policy.GuestAgentExpected, "A missing guest agent is Degraded rather than a note.")
	fs.DurationVar(&opts.Policy.HotplugTimeout, "hotplug-timeout", opts.Policy.HotplugTimeout, "A memory or CPU hotplug requested and not applied for longer than this is HotplugStuck (before: MemoryHotplugPending).")
	fs.DurationVar(&opts.Policy.MigrationPendingPodTimeout, "migration-pending-pod-timeout", opts.Policy.MigrationPendingPodTimeout, "A migration in Scheduling (target pod pending) longer than this is MigrationStuck, unless the migration's kubevirt.io/migrationPendingPodTimeoutSeconds annotation says otherwise (KubeVirt's catch-all is 15m).")
	fs.DurationVar(&opts.Policy.UnhealthyStateTimeout, "unhealthy-state-timeout", opts.Policy.UnhealthyStateTimeout, "A VM waiting for its volumes (Provisioning, WaitingForVolumeBinding), or starting with its VMI not seen, longer than this is StuckProvisioning or StuckStarting (KubeVirt's VirtualMachineStuckInUnhealthyState alert waits 10m).")
	fs.DurationVar(&opts.Policy.HotplugVolumeTimeout, "hotplug-volume-timeout", opts.Policy.HotplugVolumeTimeout, "A hotplugged volume not Ready for longer than this (since vmobs first saw it so) is HotplugVolumeStuck (before: HotplugVolumePending).")
	fs.DurationVar(&opts.Policy.FilesystemsFrozenAfter, "filesystems-frozen-after", opts.Policy.FilesystemsFrozenAfter, "Guest filesystems frozen (a snapshot or backup) for longer than this make the guest layer Degraded (FilesystemsFrozen; before, a note).")
	fs.StringVar(&opts.PrometheusURL, "prometheus-url", "", "Read virt-handler's domain stats from the Prometheus (or Thanos Querier) at this URL, e.g. http://prometheus-operated.monitoring:9090 or https://thanos-querier.openshift-monitoring.svc:9091; empty leaves them out (docs/domain-stats.md).")
	fs.StringVar(&opts.PrometheusBearerTokenFile, "prometheus-bearer-token-file", "", "Send the token in this file (read before each query) to Prometheus, e.g. /var/run/secrets/kubernetes.io/serviceaccount/token for OpenShift's thanos-querier.")
	fs.StringVar(&opts.PrometheusCAFile, "prometheus-ca-file", "", "PEM bundle that signs Prometheus' serving certificate, e.g. /var/run/secrets/kubernetes.io/serviceaccount/service-ca.crt on OpenShift.")
	fs.DurationVar(&opts.DomainStats.Interval, "domain-stats-interval", domainstats.DefaultInterval, "Query Prometheus for the whole fleet's domain stats this often (one instant query per signal, never one per VM).")
	fs.DurationVar(&opts.DomainStats.Window, "domain-stats-window", 0, "Range of the rate() queries; 0 is twice --domain-stats-interval, at least 2m, to span several of virt-handler's scrapes.")
	fs.DurationVar(&opts.Policy.DomainStatsGrace, "domain-stats-grace", opts.Policy.DomainStatsGrace, "A VMI Running longer than two domain-stats intervals plus this with no series from virt-handler is DomainStatsMissing.")
	fs.DurationVar(&opts.Policy.GuestCPUStalledAfter, "guest-cpu-stalled-after", opts.Policy.GuestCPUStalledAfter, "vCPU time standing still this long in a running, unpaused domain is GuestCPUStalled.")
	fs.IntVar(&f.memPct, "guest-memory-available-percent", int(opts.Policy.GuestMemoryAvailablePercent), "Guest memory the guest can still use under this share (%) of its memory is low headroom: a note (GuestMemoryAvailableLow), and with thrashing GuestMemoryPressure.")
	fs.Float64Var(&opts.Policy.GuestSwapRate, "guest-swap-rate", opts.Policy.GuestSwapRate, "With low headroom, guest swap traffic, in and out, at or above this many bytes per second is thrashing (GuestMemoryPressure).")
	fs.Float64Var(&opts.Policy.GuestMajorFaultRate, "guest-major-fault-rate", opts.Policy.GuestMajorFaultRate, "With low headroom, guest major page faults above this many per second are thrashing (GuestMemoryPressure), as in KubeVirt's KubeVirtVMGuestMemoryPressure alert.")
	fs.DurationVar(&opts.Policy.GuestMemoryPressureAfter, "guest-memory-pressure-after", opts.Policy.GuestMemoryPressureAfter, "Low headroom and thrashing lasting this long are GuestMemoryPressure (KubeVirt's alert waits 5m).")
	fs.IntVar(&f.slowFactor, "storage-slow-factor", int(opts.Policy.StorageSlowFactor), "Time per I/O operation at least this many times the VM's own baseline (and above --storage-slow-latency) is StorageSlow.")
	fs.DurationVar(&opts.Policy.StorageSlowLatency, "storage-slow-latency", opts.Policy.StorageSlowLatency, "Time per I/O operation under which storage never counts as slow.")
	fs.Float64Var(&opts.Policy.NetworkErrorRate, "network-error-rate", opts.Policy.NetworkErrorRate, "Network errors both ways and transmit drops at or above this many per second are NetworkErrors; receive drops at this rate are a note (GuestNetworkDrops).")
	fs.IntVar(&f.notConverging, "migration-not-converging-samples", int(opts.Policy.MigrationNotConvergingSamples), "A live migration whose remaining data has not shrunk over this many domain-stats samples is MigrationNotConverging.")
	fs.DurationVar(&opts.GuestProbe.Interval, "guest-probe-interval", opts.GuestProbe.Interval, "Probe each VM's guest agent (OS info, users, filesystems) through virt-api's subresources at most this often, at a slot fixed by the VM; 0 turns the probes off (docs/guest-probe.md).")
	fs.Float64Var(&opts.GuestProbe.QPS, "guest-probe-qps", opts.GuestProbe.QPS, "At most this many guest agent probes per second across all VMs (each is three GETs through the API server to virt-api).")
	fs.IntVar(&opts.GuestProbe.Workers, "guest-probe-workers", opts.GuestProbe.Workers, "Guest agent probes running at once, on workers of their own (never the reconcile workers).")
	fs.DurationVar(&opts.GuestProbe.Timeout, "guest-probe-timeout", opts.GuestProbe.Timeout, "Time a guest agent has to answer each of a probe's GETs.")
	fs.IntVar(&f.fsUsed, "filesystem-used-percent", int(opts.Policy.FilesystemUsedPercent), "A guest filesystem used at or above this share (%) for --filesystem-full-for is FilesystemNearlyFull (KubeVirt's GuestFilesystemAlmostOutOfSpace warning).")
	fs.IntVar(&f.fsCritical, "filesystem-critical-percent", int(opts.Policy.FilesystemCriticalPercent), "A guest filesystem used at or above this share (%) is FilesystemNearlyFull at once (KubeVirt's critical GuestFilesystemAlmostOutOfSpace).")
	fs.DurationVar(&opts.Policy.FilesystemFullFor, "filesystem-full-for", opts.Policy.FilesystemFullFor, "How long a guest filesystem must stay at or above --filesystem-used-percent to be FilesystemNearlyFull.")
	fs.IntVar(&f.unresponsive, "agent-unresponsive-probes", int(opts.Policy.AgentUnresponsiveProbes), "A VMI whose guest agent it calls connected and whose last this many probes failed is GuestInfoUnreachable (node layer): virt-api cannot read its guest information through virt-handler and virt-launcher.")
	fs.IntVar(&f.historyLimit, "history-limit", int(opts.Policy.HistoryLimit), "Keep this many entries in each VMObservation's status.history, the VM's flight recorder, newest first; older ones are dropped and counted (docs/history.md).")
	fs.IntVar(&opts.StartupGCPercent, "startup-gc-percent", opts.StartupGCPercent, "The garbage collector's GC percent while the informers decode their initial lists (until the caches have synced, at most 5m), so that what the cache keeps of them sits densely in the heap; 0 leaves the collector as GOGC sets it, and an explicit GOGC wins (docs/scale.md).")
	fs.IntVar(&opts.MaxConcurrentReconciles, "max-concurrent-reconciles", opts.MaxConcurrentReconciles, "Number of workers.")
	fs.Float64Var(&f.qps, "kube-api-qps", float64(opts.KubeAPIQPS), "Client-side limit on requests per second to the API server; 0 turns it off (the workers bound the load and API Priority and Fairness protects the server).")
	fs.IntVar(&opts.KubeAPIBurst, "kube-api-burst", opts.KubeAPIBurst, "Burst above --kube-api-qps; 0 is twice --kube-api-qps.")
	f.zap.BindFlags(fs)
	return f, fs
}

func runManager(ctx context.Context, args []string) int {
	f, fs := newManagerFlags()
	if err := fs.Parse(args); err != nil {
		return 2
	}
	opts, selector := &f.opts, f.selector
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&f.zap)))
	log := ctrl.Log.WithName("setup")

	if f.qps < 0 || opts.KubeAPIBurst < 0 || opts.EvidenceRefreshQPS < 0 || opts.StartupGCPercent < 0 {
		fmt.Fprintf(stderr(ctx), "vmobs manager: --kube-api-qps, --kube-api-burst, --evidence-refresh-qps and --startup-gc-percent must not be negative\n")
		return 2
	}
	if g := opts.GuestProbe; g.Interval < 0 || (g.Interval > 0 && (!(g.QPS > 0) || g.Workers < 1 || g.Timeout <= 0)) {
		fmt.Fprintf(stderr(ctx), "vmobs manager: --guest-probe-interval must not be negative; with probes on, --guest-probe-qps, --guest-probe-workers and --guest-probe-timeout must be positive\n")
		return 2
	}
	for _, n := range []struct {
		flag     string
		v        int
		min, max int
		dst      *int32
	}{
		{"guest-memory-available-percent", f.memPct, 1, 99, &opts.Policy.GuestMemoryAvailablePercent},
		{"storage-slow-factor", f.slowFactor, 2, 1 << 20, &opts.Policy.StorageSlowFactor},
		{"migration-not-converging-samples", f.notConverging, 2, 1 << 10, &opts.Policy.MigrationNotConvergingSamples},
		{"filesystem-used-percent", f.fsUsed, 50, 100, &opts.Policy.FilesystemUsedPercent},
		{"filesystem-critical-percent", f.fsCritical, 50, 100, &opts.Policy.FilesystemCriticalPercent},
		{"agent-unresponsive-probes", f.unresponsive, 1, 10, &opts.Policy.AgentUnresponsiveProbes},
		{"history-limit", f.historyLimit, 1, 100, &opts.Policy.HistoryLimit},
	} {
		if n.v < n.min || n.v > n.max {
			fmt.Fprintf(stderr(ctx), "vmobs manager: --%s must be between %d and %d\n", n.flag, n.min, n.max)
			return 2
		}
		*n.dst = int32(n.v)
	}
	if opts.PrometheusURL == "" && (opts.PrometheusBearerTokenFile != "" || opts.PrometheusCAFile != "") {
		fmt.Fprintf(stderr(ctx), "vmobs manager: --prometheus-bearer-token-file and --prometheus-ca-file need --prometheus-url\n")
		return 2
	}
	opts.KubeAPIQPS = float32(f.qps)
	opts.Namespaces = f.namespaces
	if selector != "" {
		sel, err := labels.Parse(selector)
		if err != nil {
			fmt.Fprintf(stderr(ctx), "vmobs manager: --vm-selector: %v\n", err)
			return 2
		}
		opts.VMSelector = sel
	}

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
	log.Info("Starting manager", "version", version.Get().Version, "commit", version.Get().Commit, "namespaces", opts.Namespaces, "vmSelector", selector, "autoCreate", opts.AutoCreate, "leaderElection", opts.LeaderElection, "lease", opts.LeaseName(), "domainStats", opts.PrometheusURL != "", "guestProbeInterval", opts.GuestProbe.Interval)
	if err := mgr.Start(ctx); err != nil {
		log.Error(err, "Manager stopped with an error")
		return 1
	}
	return 0
}
