// Package guestprobe asks the guest agents of running VMs what only they
// know — the OS, the logged-in users, how full each filesystem is —
// through KubeVirt's subresource API (the path of virtctl guestosinfo,
// userlist and fslist: the API server → virt-api → virt-handler →
// virt-launcher → the QEMU guest agent), on a budget: each VM at most once
// per interval at a slot fixed by its UID, a fleet-wide rate, a bounded
// pool of workers of its own and a timeout per call, so that neither a
// slow virt-api nor a stuck guest holds a reconcile or the other probes.
// The answers are folded into small per-VMI facts (vmifacts.GuestFacts),
// bounded and rounded; a VM is reconciled only when its facts change.
//
// An API that cannot be used is a fact for the whole fleet, never a
// failure of each guest: when the API server or virt-api refuses,
// throttles or does not answer, or when a large share of the fleet's
// probes fail alike, probing pauses with backoff, no agent is charged,
// and if it lasts every VMI's facts say Unavailable, which the engine
// turns into a note.
package guestprobe

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"hash/fnv"
	"math"
	"slices"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/types"

	"github.com/vmobs/vmobs/internal/factsource"
	"github.com/vmobs/vmobs/internal/vmifacts"
)

// Name is the source's in logs and in the source label of the shared
// metrics.
const Name = "guest_probe"

// Defaults are the Options a Config leaves zero: each VM probed every 5
// minutes (--guest-probe-interval), each GET within 10 seconds, unavailable
// after 3 attempts in a row that found the API unusable.
var Defaults = factsource.Options{Interval: 5 * time.Minute, Timeout: 10 * time.Second, UnavailableAfter: 3}

// Defaults of the Config's own fields.
const (
	DefaultQPS     = 5.0
	DefaultWorkers = 4
)

// The fleet-wide rule: among the newest outcome of each of the VMs probed
// last (at most recentOutcomes VMs, none older than an interval), failures
// of one kind that are at least half of them and at least
// fleetMinFailures VMs are virt-api's or virt-handler's, not each guest's.
// The rule waits for 2×fleetMinFailures VMs (or the whole fleet, if
// smaller) to have an outcome; in a fleet of fewer than fleetMinFailures
// VMs it never applies: too few to tell.
const (
	recentOutcomes   = 64
	fleetMinFailures = 5
)

// minBackoff is the first pause after the API failed; it doubles up to
// the interval (at most maxBackoff).
const (
	minBackoff = time.Second
	maxBackoff = 5 * time.Minute
)

// Config configures a Source: the Options (Interval between two probes
// of a VM, --guest-probe-interval, 0 turning probing off: the controller
// builds no Source; Timeout of each GET, the Client's; UnavailableAfter
// attempts in a row that find the API unusable, a shorter outage keeping
// the last facts) and the probes' own.
type Config struct {
	factsource.Options
	// QPS bounds probes per second across the fleet (each probe is three
	// GETs).
	QPS float64
	// Workers is how many probes may run at once.
	Workers int
}

// BindFlags defines the probes' flags on fs, defaulting to c's values.
func (c *Config) BindFlags(fs *flag.FlagSet) {
	fs.DurationVar(&c.Interval, "guest-probe-interval", c.Interval, "Probe each VM's guest agent (OS info, users, filesystems) through virt-api's subresources at most this often, at a slot fixed by the VM; 0 turns the probes off (docs/guest-probe.md).")
	fs.Float64Var(&c.QPS, "guest-probe-qps", c.QPS, "At most this many guest agent probes per second across all VMs (each is three GETs through the API server to virt-api).")
	fs.IntVar(&c.Workers, "guest-probe-workers", c.Workers, "Guest agent probes running at once, on workers of their own (never the reconcile workers).")
	fs.DurationVar(&c.Timeout, "guest-probe-timeout", c.Timeout, "Time a guest agent has to answer each of a probe's GETs.")
}

// Validate checks the configuration the flags gave: an interval that is
// not negative and, with probes on, a positive budget.
func (c Config) Validate() error {
	if c.Interval < 0 || (c.Interval > 0 && (!(c.QPS > 0) || c.Workers < 1 || c.Timeout <= 0)) {
		return errors.New("--guest-probe-interval must not be negative; with probes on, --guest-probe-qps, --guest-probe-workers and --guest-probe-timeout must be positive")
	}
	return nil
}

// WithDefaults is c with every zero field at its default: the
// configuration a Source runs with.
func (c Config) WithDefaults() Config {
	c.Options = c.Options.WithDefaults(Defaults)
	if !(c.QPS > 0) {
		c.QPS = DefaultQPS
	}
	if c.Workers <= 0 {
		c.Workers = DefaultWorkers
	}
	return c
}

// entry is what the source holds of one target.
type entry struct {
	uid types.UID
	// slot is the VM's offset within the interval; next when it is due.
	slot     time.Duration
	next     time.Time
	inflight bool
	// gen is the target refresh that last saw it.
	gen uint64
	// facts are folded from the probes (never Unavailable), nil before the
	// first probe that counted; pub is what the engine reads: facts, the
	// fleet's Unavailable, or nil. Both are never written through: a change
	// folds new facts, so unchanged facts cost nothing and are shared.
	facts *vmifacts.GuestFacts
	pub   *vmifacts.GuestFacts
	// run is the kind of the newest failures in a row, since runStart;
	// prior the facts before them, restored if the fleet-wide rule finds
	// they were not the guest's.
	run      Kind
	runStart time.Time
	prior    *vmifacts.GuestFacts
}

// outage is the state of an API that cannot be used.
type outage struct {
	// kind is "" while the API works.
	kind Kind
	// epoch moves with each attempt that failed (the Kit's Avail counts
	// them), so that probes sent before it do not count it again.
	epoch   uint64
	until   time.Time
	backoff time.Duration
	// canary: the one probe that tests the API is in flight.
	canary bool
}

type outcome struct {
	key  types.NamespacedName
	kind Kind
	at   time.Time
}

type job struct {
	t     factsource.Target
	epoch uint64
}

// Source schedules the probes, runs them on its workers and holds the
// facts (a factsource.Source). Facts is safe from any goroutine; Start
// runs the rest. The Kit's Avail is touched under mu.
type Source struct {
	factsource.Kit
	cfg     Config
	api     API
	limiter *rate.Limiter
	metrics *Metrics
	work    chan job
	// running counts the probes sent to the workers and not settled.
	running     sync.WaitGroup
	tick        time.Duration
	refreshRate time.Duration

	mu          sync.RWMutex
	entries     map[types.NamespacedName]*entry
	out         outage
	recent      []outcome
	gen         uint64
	lastRefresh time.Time
}

var _ factsource.Source[vmifacts.GuestFacts] = &Source{}

// NewSource builds a Source that probes through api; deps.Targets lists
// the Running VMIs whose agent is connected; m may be nil.
func NewSource(cfg Config, api API, m *Metrics, deps factsource.Deps) *Source {
	cfg = cfg.WithDefaults()
	tick := min(max(cfg.Interval/64, 10*time.Millisecond), time.Second)
	return &Source{
		Kit: factsource.NewKit(cfg.Options, deps),
		cfg: cfg, api: api, metrics: m,
		limiter:     rate.NewLimiter(rate.Limit(cfg.QPS), max(1, int(math.Ceil(cfg.QPS)))),
		work:        make(chan job),
		tick:        tick,
		refreshRate: min(max(cfg.Interval/8, tick), 10*time.Second),
		entries:     map[types.NamespacedName]*entry{},
		recent:      make([]outcome, 0, recentOutcomes),
	}
}

// Facts returns a copy of the VMI's facts, nil when it has none yet. The
// copy shares Filesystems, which is never written after it is published.
func (s *Source) Facts(key types.NamespacedName) *vmifacts.GuestFacts {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e := s.entries[key]
	if e == nil || e.pub == nil {
		return nil
	}
	c := *e.pub
	return &c
}

// Start runs the workers and the schedule until ctx ends. It is a manager
// Runnable that needs leader election: only the leader probes.
func (s *Source) Start(ctx context.Context) error {
	for range s.cfg.Workers {
		go s.worker(ctx)
	}
	t := time.NewTicker(s.tick)
	defer t.Stop()
	for {
		s.step(ctx)
		select {
		case <-ctx.Done():
			s.running.Wait()
			return nil
		case <-t.C:
		}
	}
}

// step refreshes the targets when due and sends the probes that are due
// to the workers, as the rate allows; it blocks while every worker is busy.
func (s *Source) step(ctx context.Context) {
	now := s.Deps.Now()
	if s.lastRefresh.IsZero() || now.Sub(s.lastRefresh) >= s.refreshRate {
		s.lastRefresh = now
		s.Notify(ctx, s.refresh(s.Deps.Targets(), now)...)
	}
	jobs := s.due(now)
	for i, j := range jobs {
		if s.limiter.Wait(ctx) != nil || !s.current(j.epoch) {
			s.release(jobs[i:])
			return
		}
		s.running.Add(1)
		select {
		case s.work <- j:
		case <-ctx.Done():
			s.running.Done()
			s.release(jobs[i:])
			return
		}
	}
}

func (s *Source) worker(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case j := <-s.work:
			s.metrics.started()
			start := time.Now()
			r := s.probe(ctx, j.t.Key)
			s.finish(ctx, j, r, time.Since(start))
			s.running.Done()
		}
	}
}

// refresh makes the entries the targets: new ones get their slot, gone
// ones (and a VMI recreated under the same name) lose their facts. It
// returns the keys whose published facts changed.
func (s *Source) refresh(targets []factsource.Target, now time.Time) []types.NamespacedName {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gen++
	var changed []types.NamespacedName
	for _, t := range targets {
		e := s.entries[t.Key]
		if e != nil && e.uid == t.UID {
			e.gen = s.gen
			continue
		}
		why := s.Avail.Unavailable()
		if (e != nil && e.pub != nil) || why != "" {
			changed = append(changed, t.Key)
		}
		slot := slotOf(t.UID, s.cfg.Interval)
		e = &entry{uid: t.UID, slot: slot, next: nextSlot(now, s.cfg.Interval, slot), gen: s.gen}
		if why != "" {
			e.pub = &vmifacts.GuestFacts{Unavailable: why, VMIUID: t.UID}
		}
		s.entries[t.Key] = e
	}
	for k, e := range s.entries {
		if e.gen != s.gen {
			delete(s.entries, k)
			if e.pub != nil {
				changed = append(changed, k)
			}
		}
	}
	s.metrics.targeted(len(s.entries))
	return changed
}

// due lists the probes to send now, the most overdue first, and marks
// them in flight. While the API is out, it sends one probe (the canary)
// once the backoff has passed, and waits for its answer.
func (s *Source) due(now time.Time) []job {
	s.mu.Lock()
	defer s.mu.Unlock()
	type dueEntry struct {
		key types.NamespacedName
		e   *entry
	}
	var ds []dueEntry
	for k, e := range s.entries {
		if !e.inflight && !e.next.After(now) {
			ds = append(ds, dueEntry{k, e})
		}
	}
	slices.SortFunc(ds, func(a, b dueEntry) int {
		return cmp.Or(a.e.next.Compare(b.e.next), cmp.Compare(a.key.Namespace, b.key.Namespace), cmp.Compare(a.key.Name, b.key.Name))
	})
	if s.out.kind != "" {
		if s.out.canary || now.Before(s.out.until) || len(ds) == 0 {
			return nil
		}
		ds, s.out.canary = ds[:1], true
	}
	jobs := make([]job, len(ds))
	for i, d := range ds {
		d.e.inflight = true
		jobs[i] = job{t: factsource.Target{Key: d.key, UID: d.e.uid}, epoch: s.out.epoch}
	}
	return jobs
}

// current says whether an outage began since the job was picked.
func (s *Source) current(epoch uint64) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.out.epoch == epoch
}

// release puts jobs that were not sent back to due.
func (s *Source) release(jobs []job) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, j := range jobs {
		if e := s.entries[j.t.Key]; e != nil && e.uid == j.t.UID {
			e.inflight = false
		}
		if s.out.canary && j.epoch == s.out.epoch {
			s.out.canary = false
		}
	}
}

// probe runs the three calls: guestosinfo first, and nothing more when it
// fails. userlist and filesystemlist that the agent does not support
// leave their facts unknown; any other failure fails the probe.
func (s *Source) probe(ctx context.Context, key types.NamespacedName) *result {
	r := &result{}
	ok := s.call(ctx, r, key, SubGuestOSInfo, func(body []byte) (err *Error) {
		r.info, err = decodeGuestOSInfo(body)
		return err
	})
	if !ok {
		return r
	}
	s.call(ctx, r, key, SubUserList, func(body []byte) *Error {
		users, skipped, err := decodeUserList(body)
		r.users, r.usersKnown = users, err == nil
		r.skipped += skipped
		s.metrics.skippedEntries(SubUserList, skipped)
		return err
	})
	if r.err != nil || r.canceled {
		return r
	}
	s.call(ctx, r, key, SubFilesystemList, func(body []byte) *Error {
		fs, skipped, err := decodeFilesystemList(body)
		r.fs = fs
		r.skipped += skipped
		s.metrics.skippedEntries(SubFilesystemList, skipped)
		return err
	})
	return r
}

// call GETs one subresource and decodes its answer. It says whether both
// worked; otherwise it sets r's err or canceled — except for a list the
// agent does not support, which leaves both unset.
func (s *Source) call(ctx context.Context, r *result, key types.NamespacedName, sub string, decode func([]byte) *Error) bool {
	start := time.Now()
	body, err := s.api.Get(ctx, key, sub)
	var pe *Error
	switch {
	case err == nil:
		pe = decode(body)
	case errors.As(err, &pe):
	case ctx.Err() != nil:
		r.canceled = true
		return false
	default:
		pe = &Error{Kind: KindUnreachable, Sub: sub, Msg: clean(sub + ": " + err.Error())}
	}
	s.metrics.called(sub, pe, time.Since(start))
	if pe == nil {
		return true
	}
	if pe.Kind != KindNotSupported || sub == SubGuestOSInfo {
		r.err = pe
	}
	return false
}

// finish settles a probe's result and tells the VMs whose facts changed.
func (s *Source) finish(ctx context.Context, j job, r *result, took time.Duration) {
	// Facts carry whole seconds, as statuses do; the next probe is
	// scheduled from the exact time: from the truncated one, a probe
	// that ran within a second after its slot would find the slot still
	// ahead and run again, and again, until the second is over.
	now := s.Deps.Now()
	at := now.Truncate(time.Second)
	s.mu.Lock()
	changed, label := s.settle(j, r, at, now)
	s.mu.Unlock()
	s.metrics.probed(label, took)
	s.Notify(ctx, changed...)
}

// settle decides what a probe's result means, under s.mu: an API that
// cannot be used (the outage's attempts), a failure the whole fleet
// shares (not the guest's), the VMI gone, or an answer or failure of this
// guest, folded into its facts; at is the facts' time, now the next
// probe's reference. It returns the keys whose published facts
// changed and the probe's result label.
func (s *Source) settle(j job, r *result, at, now time.Time) ([]types.NamespacedName, string) {
	e := s.entries[j.t.Key]
	if e != nil && e.uid != j.t.UID {
		e = nil // recreated while the probe ran: its answer is the earlier VMI's
	}
	if e != nil {
		e.inflight = false
	}
	canary := s.out.kind != "" && j.epoch == s.out.epoch
	if canary {
		s.out.canary = false
	}
	kind := r.kind()
	switch {
	case r.canceled:
		return nil, "canceled"
	case kind.apiDown():
		return s.failedAttempt(j.epoch, r.err, at), "unavailable"
	case s.out.kind != "" && !canary && kind != "":
		// Sent before the outage, answered in it: the path is suspect.
		return nil, "excused"
	case s.out.kind != "" && canary && kind == s.out.kind:
		return s.failedAttempt(j.epoch, r.err, at), "excused"
	}
	var changed []types.NamespacedName
	if canary {
		changed = s.recover(at)
	}
	if e == nil {
		return changed, "gone"
	}
	if kind == KindGone {
		// Not running, or virt-api does not see the agent connected: the
		// VMI's own status will say so; nothing to fold.
		e.next = nextSlot(now, s.cfg.Interval, e.slot)
		return changed, "gone"
	}
	if s.out.kind == "" {
		if kind == "" {
			s.Avail.Succeeded(at)
		}
		s.record(j.t.Key, kind, at)
		if kind != "" && s.fleetFailing(kind, at) {
			return append(changed, s.fleetFailed(j.epoch, r.err, at)...), "excused"
		}
	}
	if kind != "" && e.run != kind {
		e.run, e.runStart, e.prior = kind, at, e.facts
	} else if kind == "" {
		e.run, e.prior = "", nil
	}
	if f, changed := fold(e.facts, e.uid, r, at); changed {
		e.facts = &f
	}
	e.next = nextSlot(now, s.cfg.Interval, e.slot)
	if s.show(e) {
		changed = append(changed, j.t.Key)
	}
	if kind != "" {
		return changed, "failed"
	}
	return changed, "ok"
}

// show publishes the entry's facts unless the engine already reads them
// or the facts say Unavailable; it says whether what the engine reads
// changed.
func (s *Source) show(e *entry) bool {
	if s.Avail.Unavailable() != "" || e.pub == e.facts {
		return false
	}
	e.pub = e.facts
	return true
}

// fleetFailing says whether failures of a kind are a large share of the
// fleet's newest outcomes.
func (s *Source) fleetFailing(kind Kind, at time.Time) bool {
	n, failed := 0, 0
	for _, o := range s.recent {
		if at.Sub(o.at) > s.cfg.Interval {
			continue
		}
		n++
		if o.kind == kind {
			failed++
		}
	}
	return failed >= fleetMinFailures && 2*failed >= n && n >= min(2*fleetMinFailures, len(s.entries))
}

// record keeps the newest outcome of each VM for the fleet-wide rule: the
// kind of a failure, "" for an answer.
func (s *Source) record(key types.NamespacedName, kind Kind, at time.Time) {
	if i := slices.IndexFunc(s.recent, func(o outcome) bool { return o.key == key }); i >= 0 {
		s.recent = slices.Delete(s.recent, i, i+1)
	} else if len(s.recent) == recentOutcomes {
		s.recent = slices.Delete(s.recent, 0, 1)
	}
	s.recent = append(s.recent, outcome{key, kind, at})
}

// fleetFailed starts an outage of the fleet-wide kind: the guests' failures
// of that kind within the interval are forgiven (their facts before them
// restored), and the probe that tipped it counts as the first attempt.
func (s *Source) fleetFailed(epoch uint64, err *Error, at time.Time) []types.NamespacedName {
	var changed []types.NamespacedName
	for k, e := range s.entries {
		if e.run == err.Kind && at.Sub(e.runStart) <= s.cfg.Interval {
			e.facts, e.run, e.prior = e.prior, "", nil
			if s.show(e) {
				changed = append(changed, k)
			}
		}
	}
	s.Deps.Log.Info("Guest probes fail alike across the fleet; not charging the agents", "kind", string(err.Kind), "error", err.Msg)
	return append(changed, s.failedAttempt(epoch, err, at)...)
}

// failedAttempt counts an attempt that found the API unusable, once per
// epoch: probes sent before it that fail the same way count nothing more.
// It pauses probing for a backoff (at least the server's Retry-After)
// and, after UnavailableAfter attempts, publishes Unavailable.
func (s *Source) failedAttempt(epoch uint64, err *Error, at time.Time) []types.NamespacedName {
	if epoch != s.out.epoch {
		return nil
	}
	if s.out.kind == "" {
		s.out.backoff = min(minBackoff, s.cfg.Interval)
		s.Deps.Log.Info("Guest probes paused: the API cannot be used", "kind", string(err.Kind), "error", err.Msg)
	} else {
		s.out.backoff = min(2*s.out.backoff, s.cfg.Interval, maxBackoff)
	}
	s.out.kind = err.Kind
	s.out.epoch++
	s.out.until = s.Deps.Now().Add(max(s.out.backoff, err.RetryAfter))
	s.recent = s.recent[:0]
	why, isNew := s.Avail.Failed(unavailableReason(err.Kind))
	if !isNew {
		return nil
	}
	s.Deps.Log.Error(err, "Guest agents cannot be probed; verdicts rest on the other sources", "reason", why, "attempts", s.Avail.Failures())
	var changed []types.NamespacedName
	for k, e := range s.entries {
		if e.pub == nil || e.pub.Unavailable != why {
			e.pub = &vmifacts.GuestFacts{Unavailable: why, VMIUID: e.uid}
			changed = append(changed, k)
		}
	}
	return changed
}

// recover ends an outage, at the time of the probe that found the API
// usable: the facts folded before it are the engine's again.
func (s *Source) recover(at time.Time) []types.NamespacedName {
	was, attempts := s.out, s.Avail.Failures()
	s.out = outage{epoch: was.epoch + 1}
	s.Deps.Log.Info("Guest probes resumed", "pausedFor", string(was.kind), "attempts", attempts)
	if s.Avail.Succeeded(at) == "" {
		return nil
	}
	var changed []types.NamespacedName
	for k, e := range s.entries {
		if s.show(e) {
			changed = append(changed, k)
		}
	}
	return changed
}

// unavailableReason is the short cause the facts carry. It must not
// change within an outage (each change is a write per VM), so it names the
// kind of failure, not its details.
func unavailableReason(k Kind) string {
	switch k {
	case KindThrottled:
		return "the API server throttles the controller's guest agent probes"
	case KindUnavailable:
		return "virt-api's subresource API is unavailable"
	case KindUnreachable:
		return "the API server cannot be reached"
	case KindRefused:
		return "the controller may not read virtualmachineinstances/guestosinfo, userlist and filesystemlist in subresources.kubevirt.io (RBAC)"
	case KindNotServed:
		return "the API server does not serve subresources.kubevirt.io/v1: is KubeVirt's virt-api installed?"
	case KindTimeout:
		return "guest agent probes time out across the fleet: virt-api or virt-handler does not answer"
	case KindBadAnswer:
		return "virt-api's answers cannot be read across the fleet"
	case KindNoHandler:
		return "virt-api finds no virt-handler on the nodes of the fleet's VMs"
	}
	return "guest agent probes fail alike across the fleet: virt-api or virt-handler fails"
}

// slotOf is the VM's offset within the interval, fixed by its UID (in
// 1024ths of the interval, from the low bits of its FNV-1a hash, as the
// evidence refresh spreads its writes: controllers/writepolicy.go
// refreshInterval), so that the probes of a fleet spread evenly over the
// interval instead of coming due together, and a VM keeps its slot across
// restarts of the controller.
func slotOf(uid types.UID, interval time.Duration) time.Duration {
	h := fnv.New32a()
	_, _ = h.Write([]byte(uid))
	return time.Duration(uint64(interval) / 1024 * uint64(h.Sum32()%1024))
}

// nextSlot is the first time after now at the slot's offset from a
// multiple of the interval (counted from the Unix epoch).
func nextSlot(now time.Time, interval, slot time.Duration) time.Time {
	n := now.UnixNano() - int64(slot)
	k := n / int64(interval)
	if n%int64(interval) < 0 {
		k--
	}
	return time.Unix(0, (k+1)*int64(interval)+int64(slot)).In(now.Location())
}
