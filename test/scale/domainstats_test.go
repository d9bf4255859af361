package scale

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/internal/domainstats"
	"github.com/vmobs/vmobs/internal/factsource"
	"github.com/vmobs/vmobs/internal/scheme"
	"github.com/vmobs/vmobs/internal/simulator"
	"github.com/vmobs/vmobs/internal/testenv"
)

var (
	flagDomainN      = flag.Int("scale.domain-stats-n", 0, "VMs for TestScaleDomainStats; 0 runs its smoke version (N=50); see docs/domain-stats.md")
	flagDomainScrape = flag.Duration("scale.domain-stats-scrape", 0, "Prometheus' scrape interval of the simulated virt-handlers (default 15s; smoke 1s)")
	flagDomainRounds = flag.Int("scale.domain-stats-rounds", 0, "rounds of queries measured (default 10; smoke 6); the first three also settle the facts (a storage baseline needs three samples)")
)

// domainStatsFigures is the row TestScaleDomainStats adds to
// bin/scale-results.json.
type domainStatsFigures struct {
	N               int     `json:"n"`
	Smoke           bool    `json:"smoke"`
	ScrapeSeconds   float64 `json:"scrape_interval_seconds"`
	WindowSeconds   float64 `json:"rate_window_seconds"`
	Rounds          int     `json:"rounds"`
	QueriesPerRound int     `json:"queries_per_round"`
	// Per query, over every query of every round.
	QueryMSP50 float64 `json:"query_ms_p50"`
	QueryMSP99 float64 `json:"query_ms_p99"`
	QueryMSMax float64 `json:"query_ms_max"`
	// Bytes of Prometheus' answer per query: the largest signal's, and all
	// sixteen together.
	AnswerBytesMax   int     `json:"answer_bytes_max"`
	AnswerBytesRound int     `json:"answer_bytes_per_round"`
	RoundMSP50       float64 `json:"round_ms_p50"`
	RoundMSMax       float64 `json:"round_ms_max"`
	// HeapBytesPerVM is the heap the source keeps (facts and fold state)
	// after its rounds, over N, measured after a GC.
	HeapBytesPerVM float64 `json:"heap_bytes_per_vm"`
	// Exported is how many of the N VMIs the last round saw exported;
	// SteadyNotified how many VMIs were enqueued by the rounds after the
	// first settleRounds (an unchanging fleet: 0 is the goal), Notified
	// how many each round enqueued.
	Exported       int   `json:"exported"`
	SteadyNotified int   `json:"steady_notified"`
	Notified       []int `json:"notified_per_round"`
}

// settleRounds: the first round folds every VMI, and the third adds its
// storage baseline.
const settleRounds = 3

// timedQuerier records each query's time and answer size.
type timedQuerier struct {
	q     domainstats.Querier
	mu    sync.Mutex
	ms    []float64
	bytes []int
}

func (t *timedQuerier) Query(ctx context.Context, q string, at time.Time) ([]domainstats.Sample, int, error) {
	start := time.Now()
	s, n, err := t.q.Query(ctx, q, at)
	t.mu.Lock()
	t.ms = append(t.ms, float64(time.Since(start).Microseconds())/1000)
	t.bytes = append(t.bytes, n)
	t.mu.Unlock()
	return s, n, err
}

// TestScaleDomainStats measures what reading domain stats costs: N Running
// VMIs on simulated nodes whose virt-handlers a real Prometheus scrapes, and
// the controller's source querying it round after round: the time and size
// of each fleet-wide query, and the heap the folded facts keep per VM.
func TestScaleDomainStats(t *testing.T) {
	n, scrape, rounds, smoke := *flagDomainN, *flagDomainScrape, *flagDomainRounds, false
	if n <= 0 {
		n, smoke = 50, true
	}
	if scrape <= 0 {
		scrape = 15 * time.Second
		if smoke {
			scrape = time.Second
		}
	}
	if rounds <= 0 {
		rounds = 10
		if smoke {
			rounds = 6
		}
	}
	env := controlPlane(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := client.New(env.Config, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	sim := simulator.New(c, simulator.WithSeed(11))
	const perNode, perNS = 50, 100
	nodes := (n + perNode - 1) / perNode
	var nodeNames []string
	for i := range nodes {
		name := fmt.Sprintf("ds-node-%03d", i)
		if err := sim.AddNode(ctx, name); err != nil {
			t.Fatal(err)
		}
		nodeNames = append(nodeNames, name)
	}
	specs := make([]simulator.VMSpec, n)
	for i := range specs {
		ns := fmt.Sprintf("ds-%03d", i/perNS)
		if i%perNS == 0 {
			if err := sim.EnsureNamespace(ctx, ns); err != nil {
				t.Fatal(err)
			}
		}
		specs[i] = simulator.VMSpec{Namespace: ns, Name: fmt.Sprintf("vm-%05d", i), GuestAgent: true}
	}
	start := time.Now()
	if err := sim.CreateRunningVMs(ctx, specs, simulator.BulkOptions{Workers: *flagWorkers, Node: func(i int) string { return nodeNames[i/perNode] }}); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d running VMs on %d nodes in %s", n, nodes, time.Since(start).Round(time.Second))

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: sim.VirtHandlerMetrics(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	defer srv.Close()
	job := testenv.ScrapeJob{Name: simulator.VirtHandlerJob, HonorLabels: simulator.VirtHandlerHonorLabels}
	for _, tg := range simulator.VirtHandlerTargets(l.Addr().String(), nodeNames...) {
		job.Targets = append(job.Targets, testenv.ScrapeTarget{Address: tg.Address, MetricsPath: tg.MetricsPath, Labels: tg.Labels})
	}
	prom, err := testenv.StartPrometheus(testenv.PrometheusOptions{ScrapeInterval: scrape, Jobs: []testenv.ScrapeJob{job}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = prom.Stop() }()

	var vmis kubevirtv1.VirtualMachineInstanceList
	if err := c.List(ctx, &vmis); err != nil {
		t.Fatal(err)
	}
	targets := make([]factsource.Target, 0, len(vmis.Items))
	for i := range vmis.Items {
		v := &vmis.Items[i]
		targets = append(targets, factsource.Target{Key: types.NamespacedName{Namespace: v.Namespace, Name: v.Name}, UID: v.UID, Node: v.Status.NodeName})
	}
	vmis = kubevirtv1.VirtualMachineInstanceList{}

	window := 4 * scrape
	pc, err := domainstats.NewClient(prom.URL, "", "")
	if err != nil {
		t.Fatal(err)
	}
	tq := &timedQuerier{q: pc}
	var notified []int
	var mu sync.Mutex
	count := 0
	// Wait until Prometheus holds a rate for every VMI: two scrapes of
	// each node within the window.
	cfg := domainstats.Config{Options: factsource.Options{Interval: scrape}, Window: window}
	probe := domainstats.NewSource(cfg, pc, nil, factsource.Deps{
		Targets: func() []factsource.Target { return targets }, Notify: func(types.NamespacedName) {}, Log: logr.Discard(),
	})
	deadline := time.Now().Add(3*scrape + 2*time.Minute)
	for {
		probe.Round(ctx)
		ok := 0
		for _, tg := range targets {
			if f := probe.Facts(tg.Key); f != nil && f.Exported && f.VCPUUsage.OK {
				ok++
			}
		}
		if ok == len(targets) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s, Prometheus has a vCPU rate for %d of %d VMIs", 3*scrape+2*time.Minute, ok, len(targets))
		}
		time.Sleep(scrape / 2)
	}
	probe = nil

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	src := domainstats.NewSource(cfg, tq, nil, factsource.Deps{
		Targets: func() []factsource.Target { return targets },
		Notify:  func(types.NamespacedName) { mu.Lock(); count++; mu.Unlock() }, Log: logr.Discard(),
	})
	var roundMS []float64
	for r := range rounds {
		rs := time.Now()
		src.Round(ctx)

		roundMS = append(roundMS, float64(time.Since(rs).Microseconds())/1000)
		mu.Lock()
		notified = append(notified, count)
		count = 0
		mu.Unlock()
		if r < rounds-1 {
			time.Sleep(scrape)
		}
	}
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	exported := 0
	for _, tg := range targets {
		if f := src.Facts(tg.Key); f != nil && f.Exported {
			exported++
		}
	}
	runtime.KeepAlive(src)

	fig := domainStatsFigures{
		N: n, Smoke: smoke, ScrapeSeconds: scrape.Seconds(), WindowSeconds: window.Seconds(), Rounds: rounds,
		QueriesPerRound: len(tq.ms) / rounds,
		HeapBytesPerVM:  math.Round(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(n)),
		Exported:        exported,
	}
	fig.Notified = notified
	for _, v := range notified[min(settleRounds, len(notified)):] {
		fig.SteadyNotified += v
	}
	ms := slices.Clone(tq.ms)
	slices.Sort(ms)
	fig.QueryMSP50, fig.QueryMSP99, fig.QueryMSMax = pct(ms, 0.5), pct(ms, 0.99), ms[len(ms)-1]
	slices.Sort(roundMS)
	fig.RoundMSP50, fig.RoundMSMax = pct(roundMS, 0.5), roundMS[len(roundMS)-1]
	for i, b := range tq.bytes {
		fig.AnswerBytesMax = max(fig.AnswerBytesMax, b)
		if i >= len(tq.bytes)-len(tq.bytes)/rounds {
			fig.AnswerBytesRound += b
		}
	}
	t.Logf("domain stats at N=%d: %d queries a round, query p50 %.1f ms p99 %.1f ms max %.1f ms, round p50 %.0f ms; answers up to %d B, %d B a round; heap %.0f B/VM; %d/%d exported; %d VMIs enqueued after the first %d rounds (notified per round %v)",
		n, fig.QueriesPerRound, fig.QueryMSP50, fig.QueryMSP99, fig.QueryMSMax, fig.RoundMSP50, fig.AnswerBytesMax, fig.AnswerBytesRound,
		fig.HeapBytesPerVM, exported, n, fig.SteadyNotified, settleRounds, notified)
	if exported != n {
		t.Errorf("the last round saw %d of %d VMIs exported", exported, n)
	}
	if want := len(domainstats.Queries(time.Minute)); fig.QueriesPerRound != want {
		t.Errorf("%d queries a round, want one per signal (%d), whatever N", fig.QueriesPerRound, want)
	}
	if err := mergeDomainStats(resultsPath(t, smoke), fig); err != nil {
		t.Fatal(err)
	}
}

// pct is the q-quantile of sorted values (nearest rank).
func pct(sorted []float64, q float64) float64 {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// mergeDomainStats adds the figures to the results file, keyed by N, and
// the two headline keys of the largest N measured.
func mergeDomainStats(path string, fig domainStatsFigures) error {
	return mergeFigures(path, "domain_stats", fig.N, fig, map[string]any{
		"domain_stats_query_ms_p99":      fig.QueryMSP99,
		"domain_stats_heap_bytes_per_vm": fig.HeapBytesPerVM,
	})
}

// mergeFigures adds fig to the results file under section, keyed by n,
// and sets the headline keys when n is the largest N of the section.
func mergeFigures(path, section string, n int, fig any, headline map[string]any) error {
	all := map[string]any{}
	if b, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(b, &all); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	rows, _ := all[section].(map[string]any)
	if rows == nil {
		rows = map[string]any{}
	}
	rows[fmt.Sprint(n)] = fig
	all[section] = rows
	largest := 0
	for k := range rows {
		var v int
		if _, err := fmt.Sscan(k, &v); err == nil && v >= largest {
			largest = v
		}
	}
	if largest == n {
		maps.Copy(all, headline)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(all, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
