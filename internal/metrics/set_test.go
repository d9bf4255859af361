package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// A Set counts on the catalogue's series; a name it does not hold, one of
// another type or label values of the wrong number count nowhere it
// registered, and never panic.
func TestSetCountsOnlyItsFamilies(t *testing.T) {
	s := NewSet(SourceDomainStats)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(s.Collectors()...)

	s.Counter("vmobs_domain_stats_query_errors_total", "vcpu", "timeout").Inc()
	s.Gauge("vmobs_domain_stats_vmis", "running").Set(3)
	s.Histogram("vmobs_domain_stats_query_duration_seconds", "vcpu").Observe(0.2)
	// Mistakes: not in the set, another source's, the wrong type, the
	// wrong number of label values.
	s.Counter("vmobs_no_such_total").Inc()
	s.Counter("vmobs_guest_probes_total", "ok").Inc()
	s.Gauge("vmobs_domain_stats_query_errors_total", "vcpu", "timeout").Set(100)
	s.Counter("vmobs_domain_stats_query_errors_total", "vcpu").Inc()

	if got := testutil.ToFloat64(s.Counter("vmobs_domain_stats_query_errors_total", "vcpu", "timeout")); got != 1 {
		t.Errorf("errors{vcpu,timeout} = %v, want 1", got)
	}
	if got := testutil.ToFloat64(s.Gauge("vmobs_domain_stats_vmis", "running")); got != 3 {
		t.Errorf("vmis{running} = %v, want 3", got)
	}
	// A family without labels is scraped from the start.
	if got := testutil.ToFloat64(s.Counter("vmobs_domain_stats_series_dropped_total")); got != 0 {
		t.Errorf("series dropped = %v, want 0", got)
	}
	n, err := testutil.GatherAndCount(reg)
	if err != nil {
		t.Fatal(err)
	}
	// errors{vcpu,timeout}, vmis{running}, duration{vcpu}, series dropped.
	if n != 4 {
		t.Errorf("gathered %d series, want 4", n)
	}
}
