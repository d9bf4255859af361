package scale

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"k8s.io/client-go/rest"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The harness counts what reaches the API server from the API server's own
// /metrics, not from the manager's transport: a write the manager's
// transport never saw (a retry below it, a client it does not wrap) still
// counts, and so does one the manager thinks it did not make.

// metricSample is one line of the Prometheus text format.
type metricSample struct {
	name   string
	labels map[string]string
	value  float64
}

// metricSet is one scrape.
type metricSet []metricSample

// sum adds the samples named name whose labels match every key of want;
// a value of "*" matches any, and a key absent from want is not looked at.
func (s metricSet) sum(name string, want map[string]string) float64 {
	var total float64
	for _, m := range s {
		if m.name != name || !labelsMatch(m.labels, want) {
			continue
		}
		total += m.value
	}
	return total
}

// sumIf adds the samples named name for which keep holds.
func (s metricSet) sumIf(name string, keep func(labels map[string]string) bool) float64 {
	var total float64
	for _, m := range s {
		if m.name == name && keep(m.labels) {
			total += m.value
		}
	}
	return total
}

func labelsMatch(have, want map[string]string) bool {
	for k, v := range want {
		if v != "*" && have[k] != v {
			return false
		}
	}
	return true
}

// apiServerMetrics scrapes kube-apiserver's /metrics with cfg (an admin:
// reading /metrics needs the nonResourceURL permission).
type apiServerMetrics struct {
	hc  *http.Client
	url string
}

func newAPIServerMetrics(cfg *rest.Config) (*apiServerMetrics, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	return &apiServerMetrics{hc: hc, url: strings.TrimSuffix(cfg.Host, "/") + "/metrics"}, nil
}

func (a *apiServerMetrics) scrape(ctx context.Context) (metricSet, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain; version=0.0.4")
	resp, err := a.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scraping the API server's metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("scraping the API server's metrics: %s: %s", resp.Status, b)
	}
	return parseMetrics(resp.Body)
}

// parseMetrics reads the Prometheus text exposition format: comments are
// skipped, every sample line is kept.
func parseMetrics(r io.Reader) (metricSet, error) {
	var out metricSet
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		m, err := parseSample(string(line))
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, sc.Err()
}

func parseSample(line string) (metricSample, error) {
	m := metricSample{labels: map[string]string{}}
	rest := line
	if i := strings.IndexAny(line, "{ "); i >= 0 {
		m.name, rest = line[:i], line[i:]
	}
	if strings.HasPrefix(rest, "{") {
		end := labelsEnd(rest)
		if end < 0 {
			return m, fmt.Errorf("metrics: unterminated labels in %q", line)
		}
		if err := parseLabels(rest[1:end], m.labels); err != nil {
			return m, fmt.Errorf("metrics: %w in %q", err, line)
		}
		rest = rest[end+1:]
	}
	fields := strings.Fields(rest)
	if m.name == "" || len(fields) == 0 {
		return m, fmt.Errorf("metrics: cannot read %q", line)
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return m, fmt.Errorf("metrics: value of %q: %w", line, err)
	}
	m.value = v
	return m, nil
}

// labelsEnd is the index of the brace that closes the label set s opens,
// skipping braces inside quoted values.
func labelsEnd(s string) int {
	quoted := false
	for i := 1; i < len(s); i++ {
		switch {
		case quoted && s[i] == '\\':
			i++
		case s[i] == '"':
			quoted = !quoted
		case !quoted && s[i] == '}':
			return i
		}
	}
	return -1
}

func parseLabels(s string, into map[string]string) error {
	for s != "" {
		eq := strings.IndexByte(s, '=')
		if eq < 0 || eq+1 >= len(s) || s[eq+1] != '"' {
			return fmt.Errorf("bad label set")
		}
		key := strings.TrimSpace(s[:eq])
		var val bytes.Buffer
		i := eq + 2
		for ; i < len(s) && s[i] != '"'; i++ {
			if s[i] == '\\' && i+1 < len(s) {
				i++
				switch s[i] {
				case 'n':
					val.WriteByte('\n')
				default:
					val.WriteByte(s[i])
				}
				continue
			}
			val.WriteByte(s[i])
		}
		if i >= len(s) {
			return fmt.Errorf("unterminated label value")
		}
		into[key] = val.String()
		s = strings.TrimPrefix(strings.TrimSpace(s[i+1:]), ",")
		s = strings.TrimSpace(s)
	}
	return nil
}

// mutatingVerbs are the verbs apiserver_request_total reports for a request
// that may change an object (APPLY is a server-side apply PATCH).
var mutatingVerbs = map[string]bool{"POST": true, "PUT": true, "PATCH": true, "APPLY": true, "DELETE": true, "DELETECOLLECTION": true}

// writesTo is the number of write requests the API server answered for a
// resource (any subresource, any response code): a rejected or conflicting
// write is still a write the controller sent.
func (s metricSet) writesTo(resource string) float64 {
	return s.sumIf("apiserver_request_total", func(l map[string]string) bool {
		return l["resource"] == resource && mutatingVerbs[l["verb"]]
	})
}

// reconcileStats reads controller-runtime's reconcile counters for the
// vmobservation controller from its process-wide registry (every
// in-process manager adds to the same series, so callers take
// differences): reconciles, reconciles that returned an error, and the
// seconds spent in Reconcile.
type reconcileStats struct {
	total, errors float64
	seconds       float64
}

func readReconcileStats() reconcileStats {
	var st reconcileStats
	mfs, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		return st
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			ours := false
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == controllerName {
					ours = true
				}
			}
			if !ours {
				continue
			}
			switch mf.GetName() {
			case "controller_runtime_reconcile_total":
				st.total += m.GetCounter().GetValue()
			case "controller_runtime_reconcile_errors_total":
				st.errors += m.GetCounter().GetValue()
			case "controller_runtime_reconcile_time_seconds":
				st.seconds += m.GetHistogram().GetSampleSum()
			}
		}
	}
	return st
}

func (a reconcileStats) plus(b reconcileStats) reconcileStats {
	return reconcileStats{total: a.total + b.total, errors: a.errors + b.errors, seconds: a.seconds + b.seconds}
}

func (a reconcileStats) minus(b reconcileStats) reconcileStats {
	return reconcileStats{total: a.total - b.total, errors: a.errors - b.errors, seconds: a.seconds - b.seconds}
}

// workqueueDepth is the vmobservation controller's queue depth now.
func workqueueDepth() float64 {
	mfs, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		return -1
	}
	for _, mf := range mfs {
		if mf.GetName() != "workqueue_depth" {
			continue
		}
		var d float64
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "name" && l.GetValue() == controllerName {
					d += m.GetGauge().GetValue()
				}
			}
		}
		return d
	}
	return 0
}

// controllerName is the name the reconciler registers (controllers/setup.go
// Named), which labels controller-runtime's metrics.
const controllerName = "vmobservation"
