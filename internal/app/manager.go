// Package app assembles the vmobs manager: cache bounds, indexes, the
// reconciler, metrics and health checks. `vmobs manager`, `vmobs demo` and
// the end-to-end tests all build it here, so they run the same thing.
package app

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"hash/fnv"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/controllers"
	"github.com/vmobs/vmobs/internal/cachestore"
	"github.com/vmobs/vmobs/internal/domainstats"
	"github.com/vmobs/vmobs/internal/guestprobe"
	"github.com/vmobs/vmobs/internal/incident"
	"github.com/vmobs/vmobs/internal/metrics"
	"github.com/vmobs/vmobs/internal/metricsauth"
	"github.com/vmobs/vmobs/internal/nodeverdict"
	"github.com/vmobs/vmobs/internal/projection"
	"github.com/vmobs/vmobs/internal/scheme"
	"github.com/vmobs/vmobs/internal/startupgc"
	"github.com/vmobs/vmobs/internal/verdict"
	"github.com/vmobs/vmobs/internal/version"
)

// Options configure the manager. Zero values mean the documented defaults
// only where Defaults says so; build them with Defaults().
type Options struct {
	// MetricsAddr is where /metrics listens; "0" turns it off.
	MetricsAddr string
	// SecureMetrics serves /metrics over HTTPS behind Kubernetes authn/authz,
	// as the kubebuilder scaffold does.
	SecureMetrics bool
	// MetricsCertDir holds the metrics server's certificate and key
	// (MetricsCertName, MetricsKeyName; tls.crt and tls.key when empty), as
	// cert-manager or OpenShift's service CA write them into a Secret; they
	// are reloaded when they change. Empty serves a self-signed certificate.
	MetricsCertDir, MetricsCertName, MetricsKeyName string
	// EnableHTTP2 lets the metrics server speak HTTP/2. It is off by
	// default: HTTP/2's stream handling has been the way in for denial of
	// service (CVE-2023-44487 rapid reset, CVE-2023-39325), and a scrape
	// gains nothing from it.
	EnableHTTP2 bool
	// ProbeAddr is where /healthz and /readyz listen; "0" turns them off.
	ProbeAddr string
	// LeaderElection turns leader election on, with a Lease named
	// LeaseName() in LeaderElectionNamespace.
	LeaderElection          bool
	LeaderElectionID        string
	LeaderElectionNamespace string
	// LeaseDuration, RenewDeadline and RetryPeriod tune leader election;
	// zero keeps controller-runtime's 15s/10s/2s.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// ReleaseLeaderOnCancel hands the lease over at once on shutdown.
	ReleaseLeaderOnCancel bool

	// Namespaces limits the controller to these namespaces; empty is all.
	Namespaces []string
	// VMSelector limits the controller to the VMs (and standalone VMIs)
	// whose own labels match, so several instances can shard a large
	// cluster (controllers/shard.go).
	VMSelector labels.Selector
	// AutoCreate creates a VMObservation for every VM and VMI in scope.
	AutoCreate bool
	// Storage reads claims, StorageClasses, VolumeAttachments, CDI
	// DataVolumes and Warning Events for the storage layer.
	Storage bool
	// WriteOptions are the write policy's settings: the periodic evidence
	// refresh (EvidenceRefreshInterval, 0 by default: a status is written
	// only when its evidence changes), its rate across the fleet
	// (EvidenceRefreshQPS, so that the refreshes of a fleet written in one
	// cold start do not all fall due together) and the coalescing of
	// Progressing states (ProgressCoalesceWindow).
	controllers.WriteOptions
	// Policy holds the engine's default thresholds.
	Policy verdict.Policy
	// MaxConcurrentReconciles is the number of workers.
	MaxConcurrentReconciles int
	// KubeAPIQPS and KubeAPIBurst set a client-side rate limit on requests
	// to the API server. KubeAPIQPS 0 turns it off: the workers bound how
	// many requests are in flight and the server's API Priority and
	// Fairness protects it, as controller-runtime does by default.
	// client-go's own default (5 per second) would make a cold start over
	// 5,000 VMs take more than half an hour.
	KubeAPIQPS float32
	// KubeAPIBurst is the burst above KubeAPIQPS; 0 is twice KubeAPIQPS.
	KubeAPIBurst int
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Registry receives vmobs' metrics; nil is controller-runtime's global
	// registry, which /metrics serves.
	Registry prometheus.Registerer
	// SkipNameValidation allows several managers in one process (tests).
	SkipNameValidation bool

	// PrometheusURL, when set, turns on reading virt-handler's domain
	// stats from Prometheus (or Thanos Querier) at that address.
	PrometheusURL string
	// PrometheusBearerTokenFile is sent as a bearer token, read before each
	// query (OpenShift's thanos-querier wants the ServiceAccount's).
	PrometheusBearerTokenFile string
	// PrometheusCAFile signs Prometheus' serving certificate.
	PrometheusCAFile string
	// DomainStats tunes the queries (interval, rate window, timeout).
	DomainStats domainstats.Config
	// GuestProbe tunes the probes of the guest agents through virt-api's
	// subresources (interval, rate, workers, timeout); Interval 0 turns
	// them off.
	GuestProbe guestprobe.Config
	// NodeObservations runs the NodeObservation controller: one
	// NodeObservation per node that runs VMs or virt-handler
	// (docs/nodeobservation.md).
	NodeObservations bool
	// NodeIncidentThreshold is how many of a node's VMs must turn
	// non-Healthy under a node cause for its NodeObservation to name an
	// incident.
	NodeIncidentThreshold int
	// Incidents runs the VMIncident controller: one VMIncident per shared
	// cause that is not a node (a StorageClass, a CSI driver, virt-api,
	// the domain-stats source), docs/incidents.md.
	Incidents bool
	// IncidentThreshold is how many VMs must turn non-Healthy for a
	// shared cause within incident.DefaultWindow to open a VMIncident.
	IncidentThreshold int
	// IncidentCoalesce is how long the VMIncident controller waits to
	// write the changes of a burst together; 0 is its default. Tests that
	// scale the alerts' `for` down scale it too.
	IncidentCoalesce time.Duration
	// StartupGCPercent is the collector's GC percent until the caches have
	// synced (at most MaxStartup), so that the projections of the initial
	// lists sit densely in the heap (internal/startupgc); 0 leaves the
	// collector as GOGC sets it, and an explicit GOGC wins.
	StartupGCPercent int
}

// observesEveryVM says whether the instance watches every VM of the
// cluster: no namespace limit and no shard selector. Only then does it
// keep the NodeObservations, which count every VM of a node.
func (o Options) observesEveryVM() bool {
	return len(o.Namespaces) == 0 && (o.VMSelector == nil || o.VMSelector.Empty())
}

// MaxStartup ends the start-up when the initial lists take longer to
// reconcile, or are never reconciled (a standby replica, no VMs): its GC
// percent, if the caches have not synced yet, and the memory it freed.
const MaxStartup = 5 * time.Minute

// DefaultLeaderElectionID is the Lease of an unsharded instance.
const DefaultLeaderElectionID = "vmobs.observability.vmobs.io"

// LeaseName is the leader election Lease: LeaderElectionID, except that a
// sharded instance (VMSelector set) left at the default gets a Lease of its
// own, named after its selector. Two shards on one Lease would not fail:
// the second would stand by as the first one's replica, and its VMs would
// go unobserved.
func (o Options) LeaseName() string {
	if o.LeaderElectionID != DefaultLeaderElectionID || o.VMSelector == nil || o.VMSelector.Empty() {
		return o.LeaderElectionID
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(canonical(o.VMSelector)))
	return fmt.Sprintf("vmobs-shard-%08x.observability.vmobs.io", h.Sum32())
}

// canonical writes a selector one way for each meaning: key==v and
// key in (v) are key=v.
func canonical(sel labels.Selector) string {
	reqs, _ := sel.Requirements()
	out := labels.NewSelector()
	for _, r := range reqs {
		op, values := r.Operator(), r.Values().List()
		if op == selection.DoubleEquals || (op == selection.In && len(values) == 1) {
			op = selection.Equals
		}
		if op == selection.NotEquals && len(values) == 1 {
			op = selection.NotIn
		}
		req, err := labels.NewRequirement(r.Key(), op, values)
		if err != nil {
			return sel.String() // it parsed once; keep its own spelling
		}
		out = out.Add(*req)
	}
	return out.String()
}

// Defaults returns the options the manager command starts from.
func Defaults() Options {
	return Options{
		MetricsAddr:             ":8443",
		SecureMetrics:           true,
		ProbeAddr:               ":8081",
		LeaderElectionID:        DefaultLeaderElectionID,
		AutoCreate:              true,
		NodeObservations:        true,
		NodeIncidentThreshold:   nodeverdict.DefaultIncidentThreshold,
		Incidents:               true,
		IncidentThreshold:       incident.DefaultThreshold,
		Storage:                 true,
		WriteOptions:            controllers.WriteOptions{EvidenceRefreshInterval: 0, EvidenceRefreshQPS: 20, ProgressCoalesceWindow: time.Second},
		Policy:                  verdict.DefaultPolicy(),
		MaxConcurrentReconciles: 4,
		StartupGCPercent:        startupgc.DefaultPercent,
		GuestProbe: guestprobe.Config{
			Options: guestprobe.Defaults, QPS: guestprobe.DefaultQPS, Workers: guestprobe.DefaultWorkers,
		},
	}
}

// DataVolumesServed says whether the API server serves CDI's DataVolumes
// (cdi.kubevirt.io/v1beta1): CDI is optional, as KubeVirt treats it, and
// without its CRD the storage layer reads no DataVolume. A CRD installed
// later is read after a restart.
func DataVolumesServed(cfg *rest.Config) (bool, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return false, fmt.Errorf("creating the discovery client: %w", err)
	}
	gv := projection.DataVolumeGVK.GroupVersion().String()
	list, err := dc.ServerResourcesForGroupVersion(gv)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discovering %s: %w", gv, err)
	}
	for _, r := range list.APIResources {
		if r.Kind == projection.DataVolumeGVK.Kind {
			return true, nil
		}
	}
	return false, nil
}

// NewManager builds a manager running the VMObservation reconciler.
func NewManager(cfg *rest.Config, opts Options) (ctrl.Manager, error) {
	return newManager(cfg, opts, nil)
}

// managerParts are parts of a manager that newManager hands out besides
// (InProcess reads them).
type managerParts struct {
	// Storage are the storage layer's stores; nil without storage.
	Storage *cachestore.StorageStores
}

// newManager is NewManager; parts, when not nil, receives its parts.
func newManager(cfg *rest.Config, opts Options, parts *managerParts) (ctrl.Manager, error) {
	cfg = withRateLimit(cfg, opts.KubeAPIQPS, opts.KubeAPIBurst)
	metricsOpts, err := metricsServerOptions(opts)
	if err != nil {
		return nil, err
	}
	informers := &cachestore.Informers{}
	cacheOpts := cachestore.Options(opts.Namespaces, opts.VMSelector, informers)
	dataVolumes := false
	if opts.Storage {
		if dataVolumes, err = DataVolumesServed(cfg); err != nil {
			return nil, err
		}
	}
	startup := startupgc.Begin(opts.StartupGCPercent, MaxStartup, ctrl.Log.WithName("startup"))
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        scheme.New(),
		Metrics:                       metricsOpts,
		HealthProbeBindAddress:        opts.ProbeAddr,
		LeaderElection:                opts.LeaderElection,
		LeaderElectionID:              opts.LeaseName(),
		LeaderElectionNamespace:       opts.LeaderElectionNamespace,
		LeaderElectionReleaseOnCancel: opts.ReleaseLeaderOnCancel,
		LeaseDuration:                 nonZero(opts.LeaseDuration),
		RenewDeadline:                 nonZero(opts.RenewDeadline),
		RetryPeriod:                   nonZero(opts.RetryPeriod),
		Cache:                         cacheOpts,
		Client: client.Options{Cache: &client.CacheOptions{
			// vmobs never reads Secrets or ConfigMaps; should a future
			// change do so, it must not pull every one into memory.
			DisableFor: []client.Object{&corev1.Secret{}, &corev1.ConfigMap{}},
		}},
		Controller: config.Controller{SkipNameValidation: &opts.SkipNameValidation},
	})
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}

	transitions, liveness := metrics.NewTransitions(), metrics.NewLiveness()
	// Status applies go through a REST client of their own, whose
	// responses are not decoded (controllers.Reconciler.StatusREST).
	statusREST, err := apiutil.RESTClientForGVK(v1alpha1.GroupVersion.WithKind("VMObservation"), true, false,
		mgr.GetConfig(), serializer.NewCodecFactory(mgr.GetScheme()), mgr.GetHTTPClient())
	if err != nil {
		return nil, fmt.Errorf("creating the status client: %w", err)
	}
	r := &controllers.Reconciler{
		Client:     mgr.GetClient(),
		StatusREST: statusREST,
		Recorder:   mgr.GetEventRecorder("vmobs"),
		Now:        opts.Now,
		Metrics:    transitions,
		Liveness:   liveness,
		APIReader:  mgr.GetAPIReader(),
		Informers:  informers,
		Startup:    startup,
	}
	storage, err := addStorage(mgr, opts, dataVolumes)
	if err != nil {
		return nil, err
	}
	if parts != nil {
		parts.Storage = storage
	}
	policy, sources := enginePolicy(opts), metrics.NewFactSources()
	copts := controllers.Options{
		Policy:            policy,
		AutoCreate:        opts.AutoCreate,
		Storage:           opts.Storage,
		StorageStores:     storage,
		Write:             opts.WriteOptions,
		Shard:             opts.VMSelector,
		FactSourceMetrics: sources,
		Controller:        controller.Options{MaxConcurrentReconciles: max(1, opts.MaxConcurrentReconciles)},
	}
	var domainMetrics *domainstats.Metrics
	if opts.PrometheusURL != "" {
		q, err := domainstats.NewClient(opts.PrometheusURL, opts.PrometheusBearerTokenFile, opts.PrometheusCAFile)
		if err != nil {
			return nil, err
		}
		domainMetrics = domainstats.NewMetrics()
		cfg := opts.DomainStats
		// The fold keeps the onset of memory pressure with the engine's
		// thresholds.
		cfg.MemoryPressure = policy.MemoryThresholds()
		copts.DomainStats = &controllers.DomainStats{Querier: q, Config: cfg, Metrics: domainMetrics}
	}
	var guestMetrics *guestprobe.Metrics
	if opts.GuestProbe.Interval > 0 {
		// Through the manager's config and HTTP client: its credentials,
		// its connections to the API server, which proxies to virt-api.
		api, err := guestprobe.NewClient(mgr.GetConfig(), mgr.GetHTTPClient(), opts.GuestProbe.Timeout)
		if err != nil {
			return nil, fmt.Errorf("creating the guest probe client: %w", err)
		}
		guestMetrics = guestprobe.NewMetrics()
		copts.GuestProbe = &controllers.GuestProbe{API: api, Config: opts.GuestProbe, Metrics: guestMetrics}
	}
	copts.Incidents = newIncidentTracker(mgr, opts)
	incidentCollectors, incErr := setupIncidents(mgr, opts, copts.Incidents)
	if err := errors.Join(incErr, r.SetupWithManager(mgr, copts)); err != nil {
		return nil, fmt.Errorf("setting up the controllers: %w", err)
	}
	var nodeMetrics *metrics.NodeObservations
	if opts.NodeObservations && !opts.observesEveryVM() {
		// Two instances that each see part of the VMs would each count
		// their part and overwrite each other's NodeObservations.
		ctrl.Log.WithName("setup").Info("Not running the NodeObservation controller: this instance does not observe every VM (--namespace or --vm-selector)")
	}
	if opts.NodeObservations && opts.observesEveryVM() {
		nodeMetrics = metrics.NewNodeObservations(func() ([]v1alpha1.NodeObservation, error) {
			var l v1alpha1.NodeObservationList
			err := mgr.GetCache().List(context.Background(), &l)
			return l.Items, err
		})
		nr := &controllers.NodeReconciler{
			Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Store: r.Store, Now: opts.Now, Policy: policy,
			DomainStats: copts.DomainStats != nil, GuestProbe: copts.GuestProbe != nil, Metrics: nodeMetrics,
			IncidentThreshold: opts.NodeIncidentThreshold,
		}
		// One worker: a node's events are few (a heartbeat a minute) and
		// a fleet has tens of nodes, not thousands.
		if err := nr.SetupWithManager(mgr, controller.Options{MaxConcurrentReconciles: 1}); err != nil {
			return nil, fmt.Errorf("setting up the node controller: %w", err)
		}
	}

	reg := opts.Registry
	if reg == nil {
		reg = ctrlmetrics.Registry
	}
	collectors := append(transitions.Collectors(), liveness.Collectors()...)
	collectors = append(collectors, metrics.BuildInfo(version.Get()))
	collectors = append(collectors, sources.Collectors()...)
	if domainMetrics != nil {
		collectors = append(collectors, domainMetrics.Collectors()...)
	}
	if guestMetrics != nil {
		collectors = append(collectors, guestMetrics.Collectors()...)
	}
	if nodeMetrics != nil {
		collectors = append(collectors, nodeMetrics.Collectors()...)
	}
	collectors = append(collectors, incidentCollectors...)
	for _, c := range append(collectors, &metrics.Collector{Observations: r.Store.Observations}) {
		if err := reg.Register(c); err != nil {
			var already prometheus.AlreadyRegisteredError
			if !errors.As(err, &already) {
				return nil, fmt.Errorf("registering metrics: %w", err)
			}
		}
	}
	// On every replica, leader or not: each decodes the initial lists.
	if err := mgr.Add(onCacheSync{mgr: mgr, do: startup.Synced}); err != nil {
		return nil, err
	}
	if opts.ProbeAddr != "0" && opts.ProbeAddr != "" {
		if err := addProbes(mgr, storage); err != nil {
			return nil, err
		}
	}
	return mgr, nil
}

// addStorage adds the stores of the claims, VolumeAttachments, DataVolumes
// (dataVolumes: CDI's CRD is served) and Warning Events the storage rules
// read to the manager, nil without storage. They are stores of their own
// (no informer, cachestore.Kept), listed and watched by every replica, as
// the cache's informers are.
func addStorage(mgr ctrl.Manager, opts Options, dataVolumes bool) (*cachestore.StorageStores, error) {
	if !opts.Storage {
		return nil, nil
	}
	st, err := cachestore.NewStorageStores(mgr.GetConfig(), mgr.GetHTTPClient(), opts.Namespaces, dataVolumes)
	if err != nil {
		return nil, err
	}
	for _, r := range st.Runnables() {
		if err := mgr.Add(r); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// addProbes adds the health and readiness checks. Ready once the caches
// have synced and the storage stores (nil without storage) have been
// listed: before that the controller would judge VMs on a partial view.
func addProbes(mgr ctrl.Manager, storage *cachestore.StorageStores) error {
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	return mgr.AddReadyzCheck("readyz", func(req *http.Request) error {
		if !mgr.GetCache().WaitForCacheSync(req.Context()) {
			return errors.New("caches not synced")
		}
		if storage != nil && !storage.HasSynced() {
			return errors.New("storage stores not listed")
		}
		return nil
	})
}

// newIncidentTracker is the incident tracker the VMObservation and
// VMIncident controllers share (docs/incidents.md), nil when incidents are
// off or the instance does not observe every VM: one that sees part of the
// VMs would count its part and overwrite the other instances' VMIncidents.
func newIncidentTracker(mgr ctrl.Manager, opts Options) *incident.Tracker {
	if !opts.Incidents {
		return nil
	}
	if !opts.observesEveryVM() {
		ctrl.Log.WithName("setup").Info("Not running the VMIncident controller: this instance does not observe every VM (--namespace or --vm-selector)")
		return nil
	}
	// A node's incident is its NodeObservation's: its members point at
	// it only where the NodeObservations are kept.
	p := incident.Policy{Threshold: opts.IncidentThreshold, Nodes: opts.NodeObservations, NodeThreshold: opts.NodeIncidentThreshold}
	return incident.NewTracker(p, func(ref v1alpha1.IncidentRef) bool {
		if ref.Kind == v1alpha1.IncidentKindNodeObservation {
			var no v1alpha1.NodeObservation
			err := mgr.GetCache().Get(context.Background(), client.ObjectKey{Name: ref.Name}, &no)
			return err == nil && no.Status.Incident != nil && no.Status.Incident.State == v1alpha1.IncidentOpen
		}
		var inc v1alpha1.VMIncident
		err := mgr.GetCache().Get(context.Background(), client.ObjectKey{Name: ref.Name}, &inc)
		return err == nil && inc.Status.State == v1alpha1.IncidentOpen
	})
}

// setupIncidents runs the VMIncident controller on tracker's groups and
// returns its metrics' collectors; nothing without a tracker.
func setupIncidents(mgr ctrl.Manager, opts Options, tracker *incident.Tracker) ([]prometheus.Collector, error) {
	if tracker == nil {
		return nil, nil
	}
	m := metrics.NewIncidents(func() ([]v1alpha1.VMIncident, error) {
		var l v1alpha1.VMIncidentList
		err := mgr.GetCache().List(context.Background(), &l)
		return l.Items, err
	})
	ir := &controllers.IncidentReconciler{
		Client: mgr.GetClient(), Tracker: tracker, Policy: incident.Policy{Threshold: opts.IncidentThreshold}, Now: opts.Now,
		Recorder: mgr.GetEventRecorder("vmobs"), Metrics: m, Coalesce: opts.IncidentCoalesce,
	}
	// One worker and one key: every incident is one decision.
	if err := ir.SetupWithManager(mgr, controller.Options{MaxConcurrentReconciles: 1}); err != nil {
		return nil, fmt.Errorf("setting up the incident controller: %w", err)
	}
	return m.Collectors(), nil
}

// onCacheSync runs do once the manager's caches have synced, on every
// replica.
type onCacheSync struct {
	mgr ctrl.Manager
	do  func()
}

func (o onCacheSync) Start(ctx context.Context) error {
	if o.mgr.GetCache().WaitForCacheSync(ctx) {
		o.do()
	}
	return nil
}

func (onCacheSync) NeedLeaderElection() bool { return false }

// enginePolicy is the one derivation of the engine's policy from the
// options: the thresholds as given, and what other options decide. Nothing
// changes it afterwards.
func enginePolicy(opts Options) verdict.Policy {
	p := opts.Policy
	// Only a status that is rewritten may carry what moves by itself.
	p.RenewingEvidence = opts.EvidenceRefreshInterval > 0
	if opts.PrometheusURL != "" {
		// The grace for a new domain's first series counts the source's
		// rounds.
		p.DomainStatsInterval = opts.DomainStats.WithDefaults().Interval
	}
	return p
}

// metricsServerOptions are the metrics server's: HTTPS behind Kubernetes
// authentication and authorization when SecureMetrics, with the
// certificate of MetricsCertDir, and HTTP/1.1 only unless EnableHTTP2.
// controller-runtime falls back to a self-signed certificate when the files
// are missing; a directory that was asked for and lacks them is an error
// instead, so a Secret mounted at the wrong path does not go unnoticed.
func metricsServerOptions(opts Options) (metricsserver.Options, error) {
	out := metricsserver.Options{BindAddress: opts.MetricsAddr, SecureServing: opts.SecureMetrics}
	if !opts.SecureMetrics {
		if opts.MetricsCertDir != "" {
			return out, errors.New("a metrics certificate directory needs secure metrics")
		}
		return out, nil
	}
	out.FilterProvider = metricsauth.Filter
	if !opts.EnableHTTP2 {
		out.TLSOpts = append(out.TLSOpts, func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} })
	}
	if opts.MetricsCertDir != "" {
		out.CertDir = opts.MetricsCertDir
		out.CertName = cmp.Or(opts.MetricsCertName, "tls.crt")
		out.KeyName = cmp.Or(opts.MetricsKeyName, "tls.key")
		for _, f := range []string{out.CertName, out.KeyName} {
			if _, err := os.Stat(filepath.Join(out.CertDir, f)); err != nil {
				return out, fmt.Errorf("metrics certificate: %w", err)
			}
		}
	}
	return out, nil
}

func nonZero(d time.Duration) *time.Duration {
	if d == 0 {
		return nil
	}
	return &d
}

// withRateLimit returns a copy of cfg with the client-side rate limit the
// options ask for; cfg's own QPS and Burst are ignored so that every caller
// (the manager command, tests, the scale harness) runs the limit that ships.
func withRateLimit(cfg *rest.Config, qps float32, burst int) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	// In a cluster, gzip costs more CPU on both ends than the bytes it
	// saves: decompressing watch streams was 6% of a reconcile's CPU in
	// the scale harness (docs/scale.md).
	cfg.DisableCompression = true
	cfg.RateLimiter = nil
	if qps <= 0 {
		cfg.QPS, cfg.Burst = -1, 0
		return cfg
	}
	if burst <= 0 {
		burst = int(2 * qps)
	}
	if burst < 1 {
		burst = 1
	}
	cfg.QPS, cfg.Burst = qps, burst
	return cfg
}
