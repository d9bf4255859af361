// Package factsource is the one shape of every source of facts about VMIs
// that the cluster's objects do not hold (internal/domainstats reads
// Prometheus, internal/guestprobe asks the guest agents): the contract the
// controller runs them by, the options they all take, what the controller
// hands them (Deps), how they count their failures (Availability) and the
// event source through which they enqueue the VMs whose facts changed.
//
// A new source is a package that embeds Kit and writes only its own
// gathering and folding: NewKit(opts, deps) in its constructor, Start
// running its rounds (Notify for the keys whose facts changed,
// Avail.Failed and Avail.Succeeded for how its rounds fared), Facts
// returning a copy of a VMI's facts (a vmifacts type that is Scoped).
// docs/development.md walks through adding one.
package factsource

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Source is what the controller runs every fact source by. F is the
// source's facts of one VMI (a vmifacts type).
type Source[F any] interface {
	// Facts returns a copy of the VMI's facts, nil when it has none yet.
	// It is safe from any goroutine.
	Facts(key types.NamespacedName) *F
	// Start gathers until ctx ends: a manager Runnable that runs on the
	// leader only, once the cache has synced (Deps.Targets reads it).
	Start(ctx context.Context) error
	// Interval is how often the source looks at each VMI.
	Interval() time.Duration
	// Changes is a ready event source of the VMs whose facts changed, for
	// the controller's WatchesRawSource.
	Changes() source.Source
}

// Options are what every source is configured with; each source's Config
// embeds them next to its own settings.
type Options struct {
	// Interval is how often the source looks at each VMI.
	Interval time.Duration
	// Timeout bounds each call the source makes.
	Timeout time.Duration
	// UnavailableAfter is how many failures in a row make the source
	// unavailable: every VMI's facts then say why (a note, never a
	// verdict); a shorter outage keeps the last facts.
	UnavailableAfter int
}

// WithDefaults is o with every field that is not positive at d's.
func (o Options) WithDefaults(d Options) Options {
	if o.Interval <= 0 {
		o.Interval = d.Interval
	}
	if o.Timeout <= 0 {
		o.Timeout = d.Timeout
	}
	if o.UnavailableAfter <= 0 {
		o.UnavailableAfter = d.UnavailableAfter
	}
	return o
}

// Target is a VMI a source gathers facts for.
type Target struct {
	Key types.NamespacedName
	UID types.UID
	// Node is the VMI's status.nodeName.
	Node string
}

// Deps is what the controller that runs a source hands it.
type Deps struct {
	// Targets lists the VMIs to gather facts for, from the controller's
	// cache.
	Targets func() []Target
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Log is the source's logger.
	Log logr.Logger
	// Available and LastSuccess are the source's series of the shared
	// families (metrics.FactSources.For); nil ones are not set.
	Available, LastSuccess prometheus.Gauge
	// Notify, when set, is told the keys whose facts changed in place of
	// the event source (Changes): for a source run without a controller.
	Notify func(types.NamespacedName)
}

// Kit is what every source shares; a source embeds it.
type Kit struct {
	// Deps are the source's, Now never nil.
	Deps Deps
	// Avail counts the source's failures in a row.
	Avail *Availability

	interval time.Duration
	changes  chan event.GenericEvent
	events   source.Source
}

// changesBuffer bounds the VMs whose facts changed that wait for the
// controller's queue; a source that notifies more blocks until the
// workers drain it.
const changesBuffer = 1024

// NewKit builds the kit of a source configured with opts (defaults
// applied).
func NewKit(opts Options, deps Deps) Kit {
	if deps.Now == nil {
		deps.Now = time.Now
	}
	changes := make(chan event.GenericEvent, changesBuffer)
	return Kit{
		Deps:     deps,
		Avail:    NewAvailability(opts.UnavailableAfter, deps.Available, deps.LastSuccess),
		interval: opts.Interval,
		changes:  changes,
		events:   source.Channel[client.Object](changes, &handler.EnqueueRequestForObject{}),
	}
}

// Interval implements Source.
func (k *Kit) Interval() time.Duration { return k.interval }

// Changes implements Source.
func (k *Kit) Changes() source.Source { return k.events }

// Notify enqueues the VMs whose facts changed, until ctx ends.
func (k *Kit) Notify(ctx context.Context, keys ...types.NamespacedName) {
	for _, key := range keys {
		if ctx.Err() != nil {
			return
		}
		if k.Deps.Notify != nil {
			k.Deps.Notify(key)
			continue
		}
		ev := event.GenericEvent{Object: &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}}
		select {
		case k.changes <- ev:
		case <-ctx.Done():
			return
		}
	}
}

// Availability counts a source's failures in a row: after a number of
// them the source is unavailable (its facts say why), until it succeeds
// again. Its gauges are 1 until the source is known to be unavailable:
// also before the first round and on a standby replica, which runs no
// source, so that an alert can take the minimum over replicas. It is not
// safe for concurrent use: a source calls it from its rounds only, or
// under its own lock.
type Availability struct {
	after       int
	failures    int
	why         string
	lastSuccess time.Time
	available   prometheus.Gauge
	lastGauge   prometheus.Gauge
}

// NewAvailability makes an Availability that turns unavailable after
// failures in a row (at least 1); the gauges may be nil.
func NewAvailability(after int, available, lastSuccess prometheus.Gauge) *Availability {
	a := &Availability{after: max(1, after), available: available, lastGauge: lastSuccess}
	if available != nil {
		available.Set(1)
	}
	return a
}

// Failed counts a failure whose cause is why (short, the same for one
// outage: each change is a write per VM). It returns the reason the
// facts must say, "" while the source still counts as available, and
// whether that reason is new.
func (a *Availability) Failed(why string) (unavailable string, changed bool) {
	a.failures++
	if a.failures < a.after {
		return "", false
	}
	changed = why != a.why
	a.why = why
	if a.available != nil {
		a.available.Set(0)
	}
	return why, changed
}

// Succeeded ends the failures in a row: the source read what it asked at
// at. It returns the reason the facts said until now ("" when they said
// none).
func (a *Availability) Succeeded(at time.Time) (was string) {
	was = a.why
	a.failures, a.why, a.lastSuccess = 0, "", at
	if a.available != nil {
		a.available.Set(1)
	}
	if a.lastGauge != nil {
		a.lastGauge.Set(float64(at.Unix()))
	}
	return was
}

// Failures is the failures in a row.
func (a *Availability) Failures() int { return a.failures }

// Unavailable is why the source is unavailable, "" while it is not.
func (a *Availability) Unavailable() string { return a.why }

// LastSuccess is the time of the last success, zero before it.
func (a *Availability) LastSuccess() time.Time { return a.lastSuccess }
