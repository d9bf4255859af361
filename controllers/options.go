package controllers

import (
	"errors"
	"flag"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"github.com/vmobs/vmobs/internal/cachestore"
	"github.com/vmobs/vmobs/internal/incident"
	"github.com/vmobs/vmobs/internal/metrics"
	"github.com/vmobs/vmobs/internal/verdict"
)

// Options configure the controller. SetupWithManager takes them, as Flux's
// kustomize-controller's SetupWithManager takes its options: the caller
// composes them and sets no field of the Reconciler, and the reconciler
// never changes them.
type Options struct {
	// Policy holds the default thresholds; a VMObservation's spec.policy
	// overrides them. The caller derives it once from its options
	// (internal/app: RenewingEvidence with the evidence refresh,
	// DomainStatsInterval with the domain stats' interval).
	Policy verdict.Policy
	// AutoCreate creates a VMObservation for every VM and VMI in scope;
	// when false only user-declared ones are kept up to date.
	AutoCreate bool
	// Write holds the write policy's settings (writepolicy.go).
	Write WriteOptions
	// Shard is the label selector of this instance's VMs (--vm-selector);
	// nil or empty is every VM. See shard.go.
	Shard labels.Selector
	// HandoverGrace is how long to wait for another shard to release a
	// VMObservation before taking it over; 0 is DefaultHandoverGrace.
	HandoverGrace time.Duration
	// DomainStats, when set, reads virt-handler's domain stats from
	// Prometheus (factsources.go).
	DomainStats *DomainStats
	// GuestProbe, when set, probes the guest agents through virt-api's
	// subresources (factsources.go).
	GuestProbe *GuestProbe
	// Storage reads the VMs' claims, StorageClasses, VolumeAttachments,
	// CDI DataVolumes (when served) and Warning Events for the storage
	// layer (storage.go); off, the storage layer judges only what the VM
	// and VMI say.
	Storage bool
	// StorageStores hold the claims, VolumeAttachments, DataVolumes (when
	// CDI's CRD is served) and Warning Events the storage rules read,
	// required with Storage. The caller runs them
	// (cachestore.StorageStores.Runnables, as the cache runs the
	// informers); the controller reads them and waits for their first
	// lists.
	StorageStores *cachestore.StorageStores
	// Incidents, when set, groups the VMs that turn non-Healthy for a
	// shared cause (incident.go); the IncidentReconciler reads the same
	// Tracker. Sharded, it is not used: a shard sees part of the VMs.
	Incidents *incident.Tracker
	// FactSourceMetrics holds the families every source of facts shares;
	// nil sets none.
	FactSourceMetrics *metrics.FactSources
	// Controller are controller-runtime's options of the controller (the
	// workers); SetupWithManager fills the queue and the logger when they
	// are unset.
	Controller controller.Options
}

// WriteOptions are the write policy's settings: when a status whose only
// change moves by itself is written (writepolicy.go).
type WriteOptions struct {
	// EvidenceRefreshInterval, when positive, opts in to the periodic
	// evidence refresh: the engine cites renewing sources (virt-handler's
	// heartbeat) by value and deadline (Policy.RenewingEvidence), and a
	// status whose only change is those timestamps is written at most once
	// per interval. 0 writes a status only when its evidence changes: an
	// unchanging fleet costs no writes.
	EvidenceRefreshInterval time.Duration
	// EvidenceRefreshQPS bounds timestamp-only status writes across all
	// VMs, per second; 0 leaves them unbounded.
	EvidenceRefreshQPS float64
	// ProgressCoalesceWindow coalesces changes between Progressing states
	// (a boot, a migration) to one write per window; 0 writes each.
	ProgressCoalesceWindow time.Duration
}

// BindFlags defines the write policy's flags on fs, defaulting to o's
// values.
func (o *WriteOptions) BindFlags(fs *flag.FlagSet) {
	fs.DurationVar(&o.EvidenceRefreshInterval, "evidence-refresh-interval", o.EvidenceRefreshInterval, "Opt in to the periodic evidence refresh: put virt-handler's heartbeat and its deadline into every status and rewrite it at most this often to keep them true (a write per VM per interval). 0, the default, writes a status only when its evidence changes (docs/controller.md, Freshness without writes).")
	fs.Float64Var(&o.EvidenceRefreshQPS, "evidence-refresh-qps", o.EvidenceRefreshQPS, "At most this many timestamp-only status writes per second across all VMs (20 covers 6,000 VMs at a 5m interval; more VMs stretch the interval); 0 is no limit.")
	fs.DurationVar(&o.ProgressCoalesceWindow, "progress-coalesce-window", o.ProgressCoalesceWindow, "Coalesce status changes between Progressing states (a boot, a migration) to one write per window.")
}

// Validate checks the settings the flags gave.
func (o WriteOptions) Validate() error {
	if o.EvidenceRefreshQPS < 0 {
		return errors.New("--evidence-refresh-qps must not be negative")
	}
	return nil
}
