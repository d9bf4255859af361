package domainstats

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/vmobs/vmobs/internal/factsource"
)

// Answers as the servers write them. The info string is
// prom:util/annotations/annotations.go PossibleNonCounterInfo; Prometheus
// 2.50-2.53 adds the position in the query (annoErr with Query set), Thanos
// Querier writes the bare error (thanos:pkg/api/query/v1.go AsErrors,
// thanos:pkg/api/api.go Respond).
const (
	swapInfo   = `PromQL info: metric might not be a counter, name does not end in _total/_sum/_count/_bucket: \"kubevirt_vmi_memory_swap_in_traffic_bytes\"`
	vectorBody = `"data":{"resultType":"vector","result":[{"metric":{"namespace":"ns","name":"vm1","node":"node-a"},"value":[1764756000,"2048"]}]}`

	thanosInfoAnswer = `{"status":"success",` + vectorBody + `,"warnings":["` + swapInfo + `"]}`
	prom253Answer    = `{"status":"success",` + vectorBody + `,"warnings":["` + swapInfo + ` (1:45)"]}`
	prom3Answer      = `{"status":"success",` + vectorBody + `,"infos":["` + swapInfo + ` (1:45)"]}`
	promWarnAnswer   = `{"status":"success",` + vectorBody + `,"warnings":["PromQL warning: encountered a mix of histograms and floats for metric name \"x\""]}`
	thanosPartial    = `{"status":"success",` + vectorBody + `,"warnings":["` + swapInfo + `","No StoreAPIs matched for this query"]}`
	storeDown        = `{"status":"success",` + vectorBody + `,"warnings":["receive 10.0.0.7:10901: rpc error: code = Unavailable desc = connection refused"]}`
)

func TestDecodeAnnotations(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		notes      int
		partial    bool
	}{
		{"Thanos Querier: the info in warnings", thanosInfoAnswer, 1, false},
		{"Prometheus 2.50-2.53: the info in warnings", prom253Answer, 1, false},
		{"Prometheus 2.54+ and 3: the info in infos", prom3Answer, 1, false},
		{"a PromQL warning is an annotation too", promWarnAnswer, 1, false},
		{"Thanos: an info and a partial response", thanosPartial, 0, true},
		{"a store that is down", storeDown, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			samples, notes, err := decode([]byte(tc.body))
			if tc.partial {
				var qe *QueryError
				if !asQueryError(err, &qe) || qe.Kind != "partial" || samples != nil {
					t.Fatalf("err %v samples %v, want a partial answer", err, samples)
				}
				return
			}
			if err != nil {
				t.Fatalf("err %v: an annotation failed the answer", err)
			}
			if len(samples) != 1 || samples[0].Value != 2048 || samples[0].Labels["name"] != "vm1" {
				t.Fatalf("samples %+v", samples)
			}
			if len(notes) != tc.notes || !strings.HasPrefix(notes[0], "PromQL ") {
				t.Fatalf("annotations %q", notes)
			}
		})
	}
}

// TestSourceAnnotatedAnswers: a server that annotates every answer (Thanos
// Querier on the swap query) keeps the domain stats available; the
// annotation is counted per query and logged once.
func TestSourceAnnotatedAnswers(t *testing.T) {
	p := &fakeProm{}
	url := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		p.ServeHTTP(rec, r)
		body := strings.Replace(rec.Body.String(), `{"data"`, `{"warnings":["`+swapInfo+`"],"data"`, 1)
		_, _ = w.Write([]byte(body))
	}))
	s, _, m := newTestSource(t, url, []factsource.Target{vm1, vm2})
	for range Defaults.UnavailableAfter + 1 {
		s.Round(context.Background())
	}
	if f := s.Facts(vm1.Key); f == nil || f.Unavailable != "" || !f.Exported {
		t.Fatalf("facts %+v: annotated answers made domain stats unavailable", f)
	}
	if got := testutil.ToFloat64(m.Available); got != 1 {
		t.Errorf("vmobs_fact_source_available{source=\"domain_stats\"} = %v", got)
	}
	if got := testutil.ToFloat64(m.Counter("vmobs_domain_stats_query_annotations_total", "swap")); got != float64(Defaults.UnavailableAfter+1) {
		t.Errorf("annotations{swap} = %v, want one per round", got)
	}
	if len(s.annotated) != 1 {
		t.Errorf("logged annotations %v, want the one once", s.annotated)
	}
}

func TestSwapQueryDrawsNoAnnotation(t *testing.T) {
	q := sigSwap.query(2 * time.Minute)
	if strings.Contains(q, "rate(") {
		t.Errorf("swap query %q applies rate() to gauges (PossibleNonCounterInfo)", q)
	}
	want := "(" + sumOf("clamp_min(delta(kubevirt_vmi_memory_swap_in_traffic_bytes[120s]), 0)") + " + " +
		sumOf("clamp_min(delta(kubevirt_vmi_memory_swap_out_traffic_bytes[120s]), 0)") + ") / 120"
	if q != want {
		t.Errorf("swap query\n got %s\nwant %s", q, want)
	}
	for sig := range numSignals {
		if q := sig.query(time.Minute); strings.Contains(q, "WINDOW") || strings.Contains(q, "WSECONDS") {
			t.Errorf("%s: %s", sig, q)
		}
	}
}

// TestFoldMigrationTimestamps: the migration series carry virt-handler's
// poll time and never go stale; a sample that is not newer than the last
// one is no news, and one older than two intervals is absent.
func TestFoldMigrationTimestamps(t *testing.T) {
	st := &vmiState{}
	at := t0
	step := func(remaining float64, polled time.Time) {
		at = at.Add(time.Minute)
		a := healthy(at)
		a.maxAge = 2 * time.Minute
		a.add(sigMigRemaining, []Sample{smp("vm1", "node-a", remaining)})
		a.add(sigMigTimestamp, []Sample{smp("vm1", "node-a", float64(polled.Unix()))})
		fold(st, &vm1, a)
	}
	step(3<<30, t0.Add(55*time.Second))
	step(3<<30, t0.Add(115*time.Second))
	if st.facts.MigrationNotShrinking != 1 {
		t.Fatalf("a newer sample not shrinking: count %d, want 1", st.facts.MigrationNotShrinking)
	}
	// virt-handler stopped polling: the same sample, a minute and two
	// minutes later.
	step(3<<30, t0.Add(115*time.Second))
	if st.facts.MigrationNotShrinking != 1 || !st.facts.MigrationDataRemaining.OK {
		t.Fatalf("the same sample again counted: %+v", st.facts)
	}
	step(3<<30, t0.Add(115*time.Second))
	step(3<<30, t0.Add(115*time.Second))
	if st.facts.MigrationNotShrinking != 0 || st.facts.MigrationDataRemaining.OK {
		t.Fatalf("a sample older than two intervals is absent: %+v", st.facts)
	}
}

func TestFoldReview3(t *testing.T) {
	t.Run("a node's other running VMIs", func(t *testing.T) {
		st := &vmiState{}
		a := healthy(t0)
		a.running["node-a"] = 2
		fold(st, &vm1, a)
		if !st.facts.NodeRunsOthers {
			t.Errorf("%+v", st.facts)
		}
		a = healthy(t0.Add(time.Minute))
		a.running["node-a"] = 1
		fold(st, &vm1, a)
		if st.facts.NodeRunsOthers {
			t.Errorf("the VMI counted itself: %+v", st.facts)
		}
	})
	t.Run("memory pressure keeps its onset", func(t *testing.T) {
		st := &vmiState{}
		pressed := func(at time.Time, faults float64) {
			a := healthy(at)
			a.vals[sigMemUsable][vm1.Key][0].v = 100 << 20
			a.add(sigMajorFaults, []Sample{smp("vm1", "node-a", faults)})
			fold(st, &vm1, a)
		}
		pressed(t0, 1)
		if !st.facts.MemoryPressureSince.IsZero() || !st.facts.MajorFaultRate.OK {
			t.Fatalf("low headroom without thrashing has an onset: %+v", st.facts)
		}
		pressed(t0.Add(time.Minute), 400)
		pressed(t0.Add(2*time.Minute), 300)
		if st.facts.MemoryPressureSince != t0.Add(time.Minute) {
			t.Fatalf("onset %v, want the first thrashing sample", st.facts.MemoryPressureSince)
		}
		pressed(t0.Add(3*time.Minute), 0)
		if !st.facts.MemoryPressureSince.IsZero() {
			t.Fatal("the onset outlived the thrashing")
		}
	})
	t.Run("guest panics and receive drops", func(t *testing.T) {
		st := &vmiState{}
		a := healthy(t0)
		a.add(sigGuestPanics, []Sample{{Labels: map[string]string{"namespace": "ns", "name": "vm1"}, Value: 1}})
		a.add(sigNetRxDrops, []Sample{smp("vm1", "node-a", 30)})
		fold(st, &vm1, a)
		if st.facts.GuestPanics.V != 1 || st.facts.NetworkReceiveDropRate.V != 20 || st.facts.NetworkErrorRate.V != 0 {
			t.Fatalf("%+v", st.facts)
		}
	})
}
