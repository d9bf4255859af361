package domainstats

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// maxResponse bounds what one query may return (a variable for tests): a fleet of 50,000 VMIs
// with a few labels each is about 10 MiB of JSON.
var maxResponse = 64 << 20

// Client runs instant queries against Prometheus' HTTP API
// (/api/v1/query), or anything that serves it: Thanos Querier (OpenShift's
// thanos-querier), Cortex, Mimir, VictoriaMetrics.
type Client struct {
	// URL is the API's base, e.g. http://prometheus:9090 or
	// https://thanos-querier.openshift-monitoring.svc:9091.
	URL *url.URL
	// BearerTokenFile, when set, is read before every query, so a rotated
	// ServiceAccount token is picked up.
	BearerTokenFile string
	// HTTP sends the requests.
	HTTP *http.Client
}

// NewClient builds a client; caFile, when set, is the PEM bundle that
// signs Prometheus' serving certificate (added to the system's roots).
func NewClient(rawURL, bearerTokenFile, caFile string) (*Client, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("--prometheus-url: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("--prometheus-url %q: want http(s)://host[:port][/path]", rawURL)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("--prometheus-ca-file: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--prometheus-ca-file %s: no PEM certificate in it", caFile)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	if bearerTokenFile != "" {
		if _, err := os.Stat(bearerTokenFile); err != nil {
			return nil, fmt.Errorf("--prometheus-bearer-token-file: %w", err)
		}
	}
	return &Client{URL: u, BearerTokenFile: bearerTokenFile, HTTP: &http.Client{Transport: tr}}, nil
}

// Sample is one series of an instant vector: its labels and value.
type Sample struct {
	Labels map[string]string
	Value  float64
}

// QueryError is a query that did not give a whole vector. Kind is a short
// word for metrics (unreachable, timeout, refused, http, bad_response,
// query, partial).
type QueryError struct {
	Kind string
	Err  error
}

func (e *QueryError) Error() string { return e.Err.Error() }
func (e *QueryError) Unwrap() error { return e.Err }

func asQueryError(err error, qe **QueryError) bool { return errors.As(err, qe) }

// Query runs one instant query at t. It returns the samples, the size of
// the response in bytes, and a *QueryError when Prometheus cannot be
// reached, refuses, or answers something other than a whole vector. Values
// are kept as Prometheus sends them (NaN and ±Inf included); the fold
// decides.
func (c *Client) Query(ctx context.Context, q string, t time.Time) ([]Sample, int, error) {
	samples, n, _, err := c.QueryAnnotated(ctx, q, t)
	return samples, n, err
}

// QueryAnnotated is Query that also returns the answer's PromQL
// annotations, which do not make an answer partial.
func (c *Client) QueryAnnotated(ctx context.Context, q string, t time.Time) ([]Sample, int, []string, error) {
	form := url.Values{"query": {q}, "time": {strconv.FormatInt(t.Unix(), 10)}}
	u := c.URL.JoinPath("api", "v1", "query")
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), strings.NewReader(form.Encode()))
	if err != nil {
		return nil, 0, nil, &QueryError{"query", err}
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if c.BearerTokenFile != "" {
		tok, err := os.ReadFile(c.BearerTokenFile)
		if err != nil {
			return nil, 0, nil, &QueryError{"refused", fmt.Errorf("reading the bearer token: %w", err)}
		}
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		kind := "unreachable"
		if errors.Is(err, context.DeadlineExceeded) {
			kind = "timeout"
		}
		return nil, 0, nil, &QueryError{kind, fmt.Errorf("querying Prometheus at %s: %w", c.URL.Redacted(), err)}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, int64(maxResponse)+1))
	n := len(body)
	if err != nil {
		kind := "unreachable"
		if errors.Is(err, context.DeadlineExceeded) {
			kind = "timeout"
		}
		return nil, n, nil, &QueryError{kind, fmt.Errorf("reading Prometheus' answer: %w", err)}
	}
	if n > maxResponse {
		return nil, n, nil, &QueryError{"bad_response", fmt.Errorf("the answer of Prometheus is larger than %d MiB", maxResponse>>20)}
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return nil, n, nil, &QueryError{"refused", fmt.Errorf("query refused by Prometheus at %s: %s (check --prometheus-bearer-token-file and the token's permissions)", c.URL.Redacted(), resp.Status)}
	case resp.StatusCode/100 != 2 && resp.StatusCode != http.StatusBadRequest && resp.StatusCode != http.StatusUnprocessableEntity:
		// 400 and 422 carry Prometheus' own error, decoded below.
		return nil, n, nil, &QueryError{"http", fmt.Errorf("query answered %s by Prometheus at %s", resp.Status, c.URL.Redacted())}
	}
	samples, notes, err := decode(body)
	if err != nil {
		return nil, n, nil, err
	}
	return samples, n, notes, nil
}

// apiResponse is the envelope of Prometheus' HTTP API. Infos is
// Prometheus 2.54 and later's (prom:web/api/v1/api.go Response, #14327);
// before it, and in Thanos Querier to this day
// (thanos:pkg/api/api.go response), every annotation is a warning.
type apiResponse struct {
	Status    string   `json:"status"`
	ErrorType string   `json:"errorType"`
	Error     string   `json:"error"`
	Warnings  []string `json:"warnings"`
	Infos     []string `json:"infos"`
	Data      struct {
		ResultType string            `json:"resultType"`
		Result     []json.RawMessage `json:"result"`
	} `json:"data"`
}

type vectorSample struct {
	Metric map[string]string `json:"metric"`
	Value  []json.RawMessage `json:"value"`
}

// isAnnotation says whether a warning is a PromQL annotation: a remark on
// the query (rate() over a series whose name does not say counter, a mix
// of floats and histograms), not a sign that data is missing. PromQL
// writes them with these prefixes (prom:util/annotations/annotations.go
// PromQLInfo, PromQLWarning), and Thanos tells them from store warnings
// the same way (thanos:pkg/extannotations/annotations.go
// IsPromQLAnnotation).
func isAnnotation(w string) bool {
	return strings.HasPrefix(w, "PromQL info") || strings.HasPrefix(w, "PromQL warning")
}

// decode reads an instant query's answer: its samples and its PromQL
// annotations. A malformed series is skipped, not fatal: one bad series
// must not blind the fleet.
func decode(body []byte) ([]Sample, []string, error) {
	var r apiResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, nil, &QueryError{"bad_response", fmt.Errorf("the answer of Prometheus is not its API's JSON: %w", err)}
	}
	if r.Status != "success" {
		msg := r.Error
		if msg == "" {
			msg = "status " + strconv.Quote(r.Status)
		}
		return nil, nil, &QueryError{"query", fmt.Errorf("query rejected by Prometheus (%s): %s", r.ErrorType, msg)}
	}
	notes := r.Infos
	for _, w := range r.Warnings {
		if isAnnotation(w) {
			notes = append(notes, w)
			continue
		}
		// Thanos Querier (and Prometheus with remote read) answer what
		// they could read when a store is down, with a warning: the VMIs
		// of the missing stores would look as if virt-handler did not
		// export them.
		return nil, nil, &QueryError{"partial", fmt.Errorf("partial answer from Prometheus: %s", w)}
	}
	if r.Data.ResultType != "vector" {
		return nil, nil, &QueryError{"bad_response", fmt.Errorf("the answer of Prometheus is a %q, not an instant vector", r.Data.ResultType)}
	}
	out := make([]Sample, 0, len(r.Data.Result))
	for _, raw := range r.Data.Result {
		var s vectorSample
		if json.Unmarshal(raw, &s) != nil || len(s.Value) != 2 {
			continue
		}
		var text string
		if json.Unmarshal(s.Value[1], &text) != nil {
			continue
		}
		v, err := strconv.ParseFloat(text, 64)
		if err != nil && !isSpecial(text) {
			continue
		}
		out = append(out, Sample{Labels: s.Metric, Value: v})
	}
	return out, notes, nil
}

// isSpecial says whether ParseFloat's error still left a meaningful value:
// Prometheus writes NaN, +Inf and -Inf, which ParseFloat parses, and
// out-of-range numbers, which it rounds to ±Inf with an error.
func isSpecial(text string) bool {
	v, err := strconv.ParseFloat(text, 64)
	var ne *strconv.NumError
	return errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange) && math.IsInf(v, 0)
}
