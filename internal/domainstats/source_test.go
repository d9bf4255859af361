package domainstats

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/types"

	"github.com/vmobs/vmobs/internal/factsource"
	"github.com/vmobs/vmobs/internal/factsource/factsourcetest"
	"github.com/vmobs/vmobs/internal/verdict"
	"github.com/vmobs/vmobs/internal/vmifacts"
)

// fakeProm answers /api/v1/query the way Prometheus does, from a function
// of the query; its mode turns it into a failing Prometheus.
type fakeProm struct {
	mu    sync.Mutex
	mode  string // "", "503", "401", "garbage", "slow", "empty", "nan"
	calls int
}

func (p *fakeProm) set(mode string) { p.mu.Lock(); p.mode = mode; p.mu.Unlock() }

// queries is how many queries the server has answered.
func (p *fakeProm) queries() int { p.mu.Lock(); defer p.mu.Unlock(); return p.calls }

func (p *fakeProm) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	mode := p.mode
	p.calls++
	p.mu.Unlock()
	_ = r.ParseForm()
	q := r.Form.Get("query")
	switch mode {
	case "503":
		http.Error(w, "service unavailable", http.StatusServiceUnavailable)
		return
	case "401":
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	case "garbage":
		_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[`))
		return
	case "slow":
		// Never answers: the caller's deadline ends the request.
		<-r.Context().Done()
		return
	case "partial":
		_, _ = w.Write([]byte(`{"status":"success","warnings":["store 10.0.0.7:10901 unavailable"],"data":{"resultType":"vector","result":[]}}`))
		return
	case "badquery":
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"status":"error","errorType":"bad_data","error":"parse error"}`))
		return
	}
	type series struct {
		Metric map[string]string `json:"metric"`
		Value  [2]any            `json:"value"`
	}
	var result []series
	add := func(name, v string) {
		result = append(result, series{map[string]string{"namespace": "ns", "name": name, "node": "node-a"}, [2]any{1.0, v}})
	}
	if mode != "empty" {
		switch {
		case strings.Contains(q, "group by"):
			add("vm1", "1")
			add("vm2", "1")
			// A series that names no VMI.
			result = append(result, series{map[string]string{"node": "node-a"}, [2]any{1.0, "1"}})
		case strings.Contains(q, "vcpu"):
			v := "0.4"
			if mode == "nan" {
				v = "NaN"
			}
			add("vm1", v)
			add("vm2", "+Inf")
		case strings.Contains(q, "memory_available"):
			add("vm1", "4294967296")
			add("vm2", "not a number")
		}
	}
	body, _ := json.Marshal(map[string]any{"status": "success", "data": map[string]any{"resultType": "vector", "result": result}})
	_, _ = w.Write(body)
}

// testMetrics are the source's metrics and its series of the shared ones.
type testMetrics struct {
	*Metrics
	factsourcetest.Gauges
}

// serve answers with h at the URL it returns until the test ends.
func serve(t *testing.T, h http.Handler) string {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

func newTestSource(t *testing.T, url string, targets []factsource.Target) (*Source, *factsourcetest.Recorder, *testMetrics) {
	t.Helper()
	c, err := NewClient(url, "", "")
	if err != nil {
		t.Fatal(err)
	}
	n := &factsourcetest.Recorder{}
	m := &testMetrics{Metrics: NewMetrics(), Gauges: factsourcetest.NewGauges()}
	clock := t0
	// The timeout only catches a hang: a round on a loaded machine running
	// the tests with -race must never reach it. The test of a server that
	// does not answer shortens it once the healthy round is done.
	cfg := Config{Options: factsource.Options{Interval: time.Minute, Timeout: time.Minute}, MemoryPressure: verdict.DefaultPolicy().MemoryThresholds()}
	s := NewSource(cfg, c, m.Metrics, factsource.Deps{
		Targets: func() []factsource.Target { return targets }, Notify: n.Notify,
		Now: func() time.Time { clock = clock.Add(time.Minute); return clock }, Log: logr.Discard(),
		Available: m.Available, LastSuccess: m.LastSuccess,
	})
	return s, n, m
}

// factsOf returns key's facts, failing the test when it has none.
func factsOf(t *testing.T, s *Source, key types.NamespacedName) vmifacts.DomainFacts {
	t.Helper()
	f := s.Facts(key)
	if f == nil {
		t.Fatalf("%s has no facts", key)
	}
	return *f
}

var vm2 = factsource.Target{Key: types.NamespacedName{Namespace: "ns", Name: "vm2"}, UID: "uid-2", Node: "node-a"}

func TestSourceNotifiesOnlyChanges(t *testing.T) {
	p := &fakeProm{}
	s, n, m := newTestSource(t, serve(t, p), []factsource.Target{vm1, vm2})
	ctx := context.Background()

	s.Round(ctx)
	if got := n.Take(); len(got) != 2 {
		t.Fatalf("first round notified %v, want both VMIs", got)
	}
	f := s.Facts(vm1.Key)
	if f == nil || !f.Exported || f.VCPUUsage.V != 0.5 || f.MemoryAvailable.V != 4.3e9 || f.Unavailable != "" {
		t.Fatalf("facts %+v", f)
	}
	// vm2's +Inf and unparsable values are absent, not errors.
	if f2 := s.Facts(vm2.Key); f2 == nil || f2.VCPUUsage.OK || f2.MemoryAvailable.OK || !f2.Exported {
		t.Fatalf("facts of vm2 %+v", f2)
	}
	if got := testutil.ToFloat64(m.Counter("vmobs_domain_stats_series_dropped_total")); got != 1 {
		t.Errorf("dropped series = %v, want 1", got)
	}
	if got := p.queries(); got != int(numSignals) {
		t.Errorf("a round made %d queries, want one per signal (%d)", got, numSignals)
	}
	s.Round(ctx)
	if got := n.Take(); len(got) != 0 {
		t.Fatalf("an unchanged world notified %v", got)
	}
	if s.Facts(types.NamespacedName{Namespace: "ns", Name: "other"}) != nil {
		t.Fatal("a VMI that is not a target has facts")
	}
}

func TestSourceOutage(t *testing.T) {
	for _, tc := range []struct {
		mode, why, kind string
	}{
		{"503", "Prometheus answers with an HTTP error", "http"},
		{"401", "Prometheus refuses the controller's queries", "refused"},
		{"garbage", "Prometheus' answers cannot be read", "bad_response"},
		{"slow", "Prometheus does not answer in time", "timeout"},
		{"badquery", "Prometheus rejects the controller's queries", "query"},
		{"partial", "Prometheus answers only in part", "partial"},
		{"empty", "Prometheus holds no domain series of virt-handler", ""},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			p := &fakeProm{}
			s, n, m := newTestSource(t, serve(t, p), []factsource.Target{vm1, vm2})
			ctx := context.Background()
			s.Round(ctx)
			before := factsOf(t, s, vm1.Key)
			n.Take()

			p.set(tc.mode)
			if tc.mode == "slow" {
				// The slow server never answers: any timeout expires.
				s.cfg.Timeout = time.Millisecond
			}
			for i := 1; i < Defaults.UnavailableAfter; i++ {
				s.Round(ctx)
				if got := n.Take(); len(got) != 0 || factsOf(t, s, vm1.Key) != before {
					t.Fatalf("failed round %d changed facts or notified %v", i, got)
				}
			}
			s.Round(ctx)
			if got := n.Take(); len(got) != 2 {
				t.Fatalf("the outage notified %v, want both VMIs", got)
			}
			f := factsOf(t, s, vm1.Key)
			if f.Unavailable != tc.why || f.Exported || f.VMIUID != vm1.UID {
				t.Fatalf("facts in the outage %+v, want Unavailable %q", f, tc.why)
			}
			if got := testutil.ToFloat64(m.Available); got != 0 {
				t.Errorf("vmobs_fact_source_available{source=\"domain_stats\"} = %v", got)
			}
			if tc.kind != "" {
				if got := testutil.ToFloat64(m.Counter("vmobs_domain_stats_query_errors_total", "vcpu", tc.kind)); got < 1 {
					t.Errorf("errors{vcpu,%s} = %v", tc.kind, got)
				}
			}
			s.Round(ctx)
			if got := n.Take(); len(got) != 0 {
				t.Fatalf("a lasting outage notified again: %v", got)
			}

			p.set("")
			s.cfg.Timeout = time.Minute
			s.Round(ctx)
			if got := n.Take(); len(got) != 2 {
				t.Fatalf("the recovery notified %v", got)
			}
			if f := factsOf(t, s, vm1.Key); f.Unavailable != "" || !f.Exported {
				t.Fatalf("facts after recovery %+v", f)
			}
			if got := testutil.ToFloat64(m.Available); got != 1 {
				t.Errorf("vmobs_fact_source_available{source=\"domain_stats\"} = %v after recovery", got)
			}
			if got, want := testutil.ToFloat64(m.LastSuccess), float64(s.Avail.LastSuccess().Unix()); got != want || got == 0 {
				t.Errorf("last success %v, want the recovery's round %v", got, want)
			}
		})
	}
}

func TestSourceUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there any more
	s, n, _ := newTestSource(t, url, []factsource.Target{vm1})
	for range Defaults.UnavailableAfter {
		s.Round(context.Background())
	}
	if f := s.Facts(vm1.Key); f == nil || f.Unavailable != "Prometheus cannot be reached" {
		t.Fatalf("facts %+v", f)
	}
	if got := n.Take(); len(got) != 1 {
		t.Fatalf("notified %v", got)
	}
}

func TestQueryBoundsTheAnswer(t *testing.T) {
	old := maxResponse
	maxResponse = 1 << 10
	defer func() { maxResponse = old }()
	c, _ := NewClient(serve(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[%s]}}`, strings.Repeat(`{"metric":{},"value":[1,"1"]},`, 100)+`{"metric":{},"value":[1,"1"]}`)
	})), "", "")
	_, n, err := c.Query(context.Background(), "up", t0)
	var qe *QueryError
	if !asQueryError(err, &qe) || qe.Kind != "bad_response" || n <= 1<<10 {
		t.Fatalf("err %v, n %d", err, n)
	}
}

func TestNewClientRejectsBadConfig(t *testing.T) {
	for _, tc := range []struct{ url, token, ca string }{
		{"prometheus:9090", "", ""},
		{"ftp://prometheus", "", ""},
		{"http://prometheus:9090", "/does/not/exist", ""},
		{"http://prometheus:9090", "", "/does/not/exist"},
	} {
		if _, err := NewClient(tc.url, tc.token, tc.ca); err == nil {
			t.Errorf("NewClient(%q, %q, %q) accepted", tc.url, tc.token, tc.ca)
		}
	}
}

func TestQuerySendsTheToken(t *testing.T) {
	tok := t.TempDir() + "/token"
	write := func(s string) {
		if err := writeFile(tok, s); err != nil {
			t.Fatal(err)
		}
	}
	write("first\n")
	var got []string
	url := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("Authorization"))
		_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[]}}`))
	}))
	c, err := NewClient(url+"/prefix", tok, "")
	if err != nil {
		t.Fatal(err)
	}
	_, _, _ = c.Query(context.Background(), "up", t0)
	write("rotated")
	_, _, _ = c.Query(context.Background(), "up", t0)
	if len(got) != 2 || got[0] != "Bearer first" || got[1] != "Bearer rotated" {
		t.Fatalf("Authorization headers %q", got)
	}
}
