// Package domainstats reads what libvirt sees of every running domain —
// virt-handler's domain stats, scraped by Prometheus — with one instant
// query per signal for the whole fleet per interval, and folds the answers
// into small per-VMI facts (vmifacts.DomainFacts). A VMI's facts change only
// when a bucketed value or a state does; only then is its VM reconciled, so
// domain stats never turn into status churn.
//
// A Prometheus that cannot be read is a fact too, for the whole fleet: after
// a few failed rounds every VMI's facts say Unavailable, which the engine
// turns into a note, never a verdict. An outage of Prometheus never pages a
// VM.
package domainstats

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/vmobs/vmobs/internal/factsource"
	"github.com/vmobs/vmobs/internal/vmifacts"
)

// Name is the source's in logs and in the source label of the shared
// metrics.
const Name = "domain_stats"

// Defaults are the Options a Config leaves zero: a round a minute
// (--domain-stats-interval), each query within 10 seconds, unavailable
// after 3 failed rounds in a row.
var Defaults = factsource.Options{Interval: time.Minute, Timeout: 10 * time.Second, UnavailableAfter: 3}

// parallelQueries bounds the queries of a round in flight at once.
const parallelQueries = 4

// Config configures a Source: the Options (Interval between rounds,
// Timeout of each query, UnavailableAfter failed rounds in a row; a single
// failed round keeps the last facts) and the queries' own.
type Config struct {
	factsource.Options
	// Window is the range of the rate() queries; 0 is twice the interval,
	// at least two minutes, so that it spans several of virt-handler's
	// scrapes (30s in KubeVirt's ServiceMonitor).
	Window time.Duration
	// MemoryPressure holds the thresholds the fold keeps the onset of
	// memory pressure with (the controller's flags,
	// verdict.Policy.MemoryThresholds; zero keeps no onset). A VM's spec
	// overrides judge the current sample in the engine; the onset is the
	// flags'.
	MemoryPressure vmifacts.MemoryThresholds
}

// BindFlags defines the queries' flags on fs: the interval defaults to
// Defaults', the window to 0 (derived from the interval). Where Prometheus
// is and how to reach it are the manager's (internal/app).
func (c *Config) BindFlags(fs *flag.FlagSet) {
	fs.DurationVar(&c.Interval, "domain-stats-interval", Defaults.Interval, "Query Prometheus for the whole fleet's domain stats this often (one instant query per signal, never one per VM).")
	fs.DurationVar(&c.Window, "domain-stats-window", 0, "Range of the rate() queries; 0 is twice --domain-stats-interval, at least 2m, to span several of virt-handler's scrapes.")
}

// WithDefaults is c with every zero field at its default: the
// configuration a Source runs with.
func (c Config) WithDefaults() Config {
	c.Options = c.Options.WithDefaults(Defaults)
	if c.Window <= 0 {
		c.Window = max(2*c.Interval, 2*time.Minute)
	}
	return c
}

// Querier runs an instant query (Client.Query).
type Querier interface {
	Query(ctx context.Context, q string, t time.Time) ([]Sample, int, error)
}

// Source runs the rounds and holds the facts (a factsource.Source). Facts
// is safe to call from any goroutine; Start runs the rounds.
type Source struct {
	factsource.Kit
	cfg     Config
	q       Querier
	metrics *Metrics

	mu    sync.RWMutex
	facts map[types.NamespacedName]*vmifacts.DomainFacts
	// state is touched by the round only.
	state map[types.NamespacedName]*vmiState
	// lastErr is the newest failed round's error, logged when it changes.
	lastErr string
	// annotated holds the PromQL annotations already logged, so each is
	// logged once (bounded: maxAnnotationsLogged).
	annoMu    sync.Mutex
	annotated map[string]bool
}

// maxAnnotationsLogged bounds the distinct annotations a Source logs: a
// query that draws one per VMI must not flood the log.
const maxAnnotationsLogged = 32

// annotatedQuerier is a Querier that also returns the answer's PromQL
// annotations (Client.QueryAnnotated).
type annotatedQuerier interface {
	QueryAnnotated(ctx context.Context, q string, t time.Time) ([]Sample, int, []string, error)
}

var _ factsource.Source[vmifacts.DomainFacts] = &Source{}

// NewSource builds a Source that asks q; deps.Targets lists the Running
// VMIs; m may be nil.
func NewSource(cfg Config, q Querier, m *Metrics, deps factsource.Deps) *Source {
	cfg = cfg.WithDefaults()
	return &Source{
		Kit: factsource.NewKit(cfg.Options, deps),
		cfg: cfg, q: q, metrics: m,
		facts:     map[types.NamespacedName]*vmifacts.DomainFacts{},
		state:     map[types.NamespacedName]*vmiState{},
		annotated: map[string]bool{},
	}
}

// Facts returns a copy of the VMI's facts, nil when it has none yet.
func (s *Source) Facts(key types.NamespacedName) *vmifacts.DomainFacts {
	s.mu.RLock()
	defer s.mu.RUnlock()
	f, ok := s.facts[key]
	if !ok {
		return nil
	}
	c := *f
	return &c
}

// Start runs a round every interval until ctx ends. It is a manager
// Runnable that needs leader election: only the leader queries Prometheus.
func (s *Source) Start(ctx context.Context) error {
	t := time.NewTicker(s.Interval())
	defer t.Stop()
	for {
		s.Round(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Round runs every query once, at the same evaluation time, and folds the
// answers. Exported for tests.
func (s *Source) Round(ctx context.Context) {
	at := s.Deps.Now().Truncate(time.Second)
	targets := s.Deps.Targets()
	a, err := s.ask(ctx, at)
	if err == nil && len(a.vals[sigPresent]) == 0 && len(targets) > 0 {
		err = errors.New("no domain series of virt-handler (kubevirt_vmi_vcpu_seconds_total and others) in Prometheus for any VMI: is virt-handler scraped?")
	}
	if err != nil {
		s.failed(ctx, targets, err)
		return
	}
	s.Avail.Succeeded(at)
	s.lastErr = ""
	for i := range targets {
		a.running[targets[i].Node]++
	}
	// Two intervals, and at least two of KubeVirt's usual 30 s scrapes: a
	// timestamped sample older than that was not renewed by the scrapes
	// since the last round either.
	a.maxAge = max(2*s.cfg.Interval, time.Minute)
	a.memory = s.cfg.MemoryPressure

	var changed []types.NamespacedName
	exported := 0
	live := make(map[types.NamespacedName]bool, len(targets))
	next := make(map[types.NamespacedName]*vmifacts.DomainFacts, len(targets))
	for i := range targets {
		t := &targets[i]
		live[t.Key] = true
		st := s.state[t.Key]
		if st == nil {
			st = &vmiState{}
			s.state[t.Key] = st
		}
		if fold(st, t, a) || s.published(t.Key) == nil || s.published(t.Key).Unavailable != "" {
			changed = append(changed, t.Key)
		}
		f := st.facts
		if f.Exported {
			exported++
		}
		next[t.Key] = &f
	}
	for k := range s.state {
		if !live[k] {
			delete(s.state, k)
		}
	}
	s.mu.Lock()
	s.facts = next
	s.mu.Unlock()
	s.metrics.folded(len(targets), exported)
	s.Notify(ctx, changed...)
}

// published is the facts the engine reads now for key.
func (s *Source) published(key types.NamespacedName) *vmifacts.DomainFacts {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.facts[key]
}

// failed handles a round that could not be read: the last facts stand
// until UnavailableAfter rounds in a row have failed, then every VMI's
// facts say why.
func (s *Source) failed(ctx context.Context, targets []factsource.Target, err error) {
	why, _ := s.Avail.Failed(unavailableReason(err))
	if why == "" {
		s.Deps.Log.Info("Reading domain stats failed; keeping the last facts", "error", err.Error(), "failedRounds", s.Avail.Failures())
		return
	}
	if s.Avail.Failures() == s.cfg.UnavailableAfter || err.Error() != s.lastErr {
		s.Deps.Log.Error(err, "Domain stats unavailable; verdicts rest on the other sources", "failedRounds", s.Avail.Failures())
	}
	s.lastErr = err.Error()
	next := make(map[types.NamespacedName]*vmifacts.DomainFacts, len(targets))
	var changed []types.NamespacedName
	for i := range targets {
		t := &targets[i]
		f := &vmifacts.DomainFacts{Unavailable: why, VMIUID: t.UID}
		if p := s.published(t.Key); p == nil || *p != *f {
			changed = append(changed, t.Key)
		}
		next[t.Key] = f
	}
	s.mu.Lock()
	s.facts = next
	s.mu.Unlock()
	s.Notify(ctx, changed...)
}

// unavailableReason is the short cause the status shows. It must not
// change from round to round for one outage (every change is a write per
// VM), so it names the kind of failure, not its details.
func unavailableReason(err error) string {
	var qe *QueryError
	if asQueryError(err, &qe) {
		switch qe.Kind {
		case "unreachable":
			return "Prometheus cannot be reached"
		case "timeout":
			return "Prometheus does not answer in time"
		case "refused":
			return "Prometheus refuses the controller's queries"
		case "http":
			return "Prometheus answers with an HTTP error"
		case "bad_response":
			return "Prometheus' answers cannot be read"
		case "query":
			return "Prometheus rejects the controller's queries"
		case "partial":
			return "Prometheus answers only in part"
		}
	}
	return "Prometheus holds no domain series of virt-handler"
}

// annotations counts a query's PromQL annotations and logs each new one
// once: they say something of the query (a function applied to a series
// of the wrong type), not of the data, so they never fail a round.
func (s *Source) annotations(sig signal, notes []string) {
	if len(notes) == 0 {
		return
	}
	s.metrics.annotated(sig, len(notes))
	s.annoMu.Lock()
	defer s.annoMu.Unlock()
	for _, n := range notes {
		if s.annotated[n] || len(s.annotated) >= maxAnnotationsLogged {
			continue
		}
		s.annotated[n] = true
		s.Deps.Log.Info("Prometheus annotated a domain stats query; the answer is used", "signal", sig.String(), "annotation", n)
	}
}

// ask runs every signal's query at the same evaluation time, a few at a
// time. Any failed query fails the round: facts folded from half the
// signals would move for no reason in the world.
func (s *Source) ask(ctx context.Context, at time.Time) (*answers, error) {
	a := newAnswers(at)
	type result struct {
		sig     signal
		samples []Sample
		err     error
	}
	results := make([]result, numSignals)
	sem := make(chan struct{}, parallelQueries)
	var wg sync.WaitGroup
	for sig := range numSignals {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			qctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
			defer cancel()
			start := time.Now()
			var samples []Sample
			var n int
			var err error
			if aq, ok := s.q.(annotatedQuerier); ok {
				var notes []string
				samples, n, notes, err = aq.QueryAnnotated(qctx, sig.query(s.cfg.Window), at)
				s.annotations(sig, notes)
			} else {
				samples, n, err = s.q.Query(qctx, sig.query(s.cfg.Window), at)
			}
			s.metrics.queried(sig, time.Since(start), n, err)
			results[sig] = result{sig, samples, err}
		}()
	}
	wg.Wait()
	var first error
	for _, r := range results {
		if r.err != nil {
			if first == nil {
				first = fmt.Errorf("query %s: %w", r.sig, r.err)
			}
			continue
		}
		if d := a.add(r.sig, r.samples); d > 0 {
			s.metrics.dropped(d)
		}
	}
	return a, first
}
