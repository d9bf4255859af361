package metricsauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// apiServer answers the two reviews as kube-apiserver would for a fixed
// set of tokens and a fixed set of users allowed "get /metrics", and
// records what it was asked.
type apiServer struct {
	users               map[string]authenticationv1.UserInfo // token -> user
	allowed             map[string]bool                      // user name -> may get /metrics
	tokenErr, accessErr error
	tokenStatusErr      string // TokenReview status.error
	evaluationErr       string // SubjectAccessReview status.evaluationError
	tokenReviews        []string
	accessReviews       []authorizationv1.SubjectAccessReviewSpec
}

type tokenReviews struct{ s *apiServer }

func (t tokenReviews) Create(_ context.Context, r *authenticationv1.TokenReview, _ metav1.CreateOptions) (*authenticationv1.TokenReview, error) {
	t.s.tokenReviews = append(t.s.tokenReviews, r.Spec.Token)
	if t.s.tokenErr != nil {
		return nil, t.s.tokenErr
	}
	out := r.DeepCopy()
	if t.s.tokenStatusErr != "" {
		out.Status.Error = t.s.tokenStatusErr
		return out, nil
	}
	if u, ok := t.s.users[r.Spec.Token]; ok {
		out.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: u}
	}
	return out, nil
}

type accessReviews struct{ s *apiServer }

func (a accessReviews) Create(_ context.Context, r *authorizationv1.SubjectAccessReview, _ metav1.CreateOptions) (*authorizationv1.SubjectAccessReview, error) {
	a.s.accessReviews = append(a.s.accessReviews, r.Spec)
	if a.s.accessErr != nil {
		return nil, a.s.accessErr
	}
	out := r.DeepCopy()
	if a.s.evaluationErr != "" {
		out.Status.EvaluationError = a.s.evaluationErr
		return out, nil
	}
	na := r.Spec.NonResourceAttributes
	if na != nil && na.Verb == "get" && na.Path == "/metrics" && a.s.allowed[r.Spec.User] {
		out.Status = authorizationv1.SubjectAccessReviewStatus{Allowed: true, Reason: "bound to metrics-reader"}
	} else {
		out.Status = authorizationv1.SubjectAccessReviewStatus{Reason: "no rule allows it"}
	}
	return out, nil
}

var (
	scraper = authenticationv1.UserInfo{
		Username: "system:serviceaccount:monitoring:prometheus", UID: "u-1",
		Groups: []string{"system:serviceaccounts", "system:authenticated"},
		Extra:  map[string]authenticationv1.ExtraValue{"authentication.kubernetes.io/pod-name": {"prometheus-0"}},
	}
	stranger = authenticationv1.UserInfo{Username: "system:serviceaccount:default:default", UID: "u-2"}
)

func newServer() *apiServer {
	return &apiServer{
		users:   map[string]authenticationv1.UserInfo{"scraper-token": scraper, "stranger-token": stranger},
		allowed: map[string]bool{scraper.Username: true},
	}
}

// clock is a settable now.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func guarded(t *testing.T, s *apiServer, c *clock) http.Handler {
	t.Helper()
	g := NewGuard(Reviews{Tokens: tokenReviews{s}, Access: accessReviews{s}}, c.now)
	h, err := g.Wrap(logr.Discard(), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "vmobs_up 1\n")
	}))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func get(h http.Handler, method, path, authorization string) (int, string) {
	req := httptest.NewRequest(method, path, nil)
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, rec.Body.String()
}

func TestGuardAnswers(t *testing.T) {
	cases := []struct {
		name          string
		method, path  string
		authorization string
		setup         func(*apiServer)
		want          int
		// wantTokenReviews and wantAccessReviews count the API calls.
		wantTokenReviews, wantAccessReviews int
	}{
		{name: "no header", authorization: "", want: http.StatusUnauthorized},
		{name: "another scheme", authorization: "Basic c2NyYXBlcjpzZWNyZXQ=", want: http.StatusUnauthorized},
		{name: "bearer without a token", authorization: "Bearer ", want: http.StatusUnauthorized},
		{name: "a token longer than any real one", authorization: "Bearer " + strings.Repeat("x", maxTokenBytes+1), want: http.StatusUnauthorized},
		{name: "an unknown token", authorization: "Bearer forged", want: http.StatusUnauthorized, wantTokenReviews: 1},
		{name: "a user with no role for /metrics", authorization: "Bearer stranger-token", want: http.StatusForbidden, wantTokenReviews: 1, wantAccessReviews: 1},
		{name: "the scraper", authorization: "Bearer scraper-token", want: http.StatusOK, wantTokenReviews: 1, wantAccessReviews: 1},
		{name: "the scheme in lower case", authorization: "bearer scraper-token", want: http.StatusOK, wantTokenReviews: 1, wantAccessReviews: 1},
		{name: "the scraper on another path", path: "/debug", authorization: "Bearer scraper-token", want: http.StatusForbidden, wantTokenReviews: 1, wantAccessReviews: 1},
		{name: "the scraper with another verb", method: http.MethodPost, authorization: "Bearer scraper-token", want: http.StatusForbidden, wantTokenReviews: 1, wantAccessReviews: 1},
		{
			name: "the token review cannot be made", authorization: "Bearer scraper-token",
			setup: func(s *apiServer) { s.tokenErr = errors.New("connection refused") },
			want:  http.StatusInternalServerError, wantTokenReviews: 1,
		},
		{
			// kube-apiserver sets status.error on every token it refuses.
			name: "the API server refused the token with a reason", authorization: "Bearer scraper-token",
			setup: func(s *apiServer) { s.tokenStatusErr = "invalid bearer token" },
			want:  http.StatusUnauthorized, wantTokenReviews: 1,
		},
		{
			name: "the access review cannot be made", authorization: "Bearer scraper-token",
			setup: func(s *apiServer) { s.accessErr = errors.New("timeout") },
			want:  http.StatusInternalServerError, wantTokenReviews: 1, wantAccessReviews: 1,
		},
		{
			name: "the API server's authorizer had no answer", authorization: "Bearer scraper-token",
			setup: func(s *apiServer) { s.evaluationErr = `clusterrole.rbac.authorization.k8s.io "gone" not found` },
			want:  http.StatusForbidden, wantTokenReviews: 1, wantAccessReviews: 1,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer()
			if tc.setup != nil {
				tc.setup(s)
			}
			h := guarded(t, s, &clock{t: time.Unix(1_800_000_000, 0)})
			code, body := get(h, cmpOr(tc.method, http.MethodGet), cmpOr(tc.path, "/metrics"), tc.authorization)
			if code != tc.want {
				t.Errorf("status %d, want %d (%q)", code, tc.want, body)
			}
			if (code == http.StatusOK) != strings.Contains(body, "vmobs_up") {
				t.Errorf("body %q with status %d", body, code)
			}
			if len(s.tokenReviews) != tc.wantTokenReviews || len(s.accessReviews) != tc.wantAccessReviews {
				t.Errorf("%d token reviews and %d access reviews, want %d and %d",
					len(s.tokenReviews), len(s.accessReviews), tc.wantTokenReviews, tc.wantAccessReviews)
			}
		})
	}
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// The access review asks about the user exactly as the token review
// described it, with the request's path and lower-case verb.
func TestGuardAsksAboutTheWholeUser(t *testing.T) {
	s := newServer()
	h := guarded(t, s, &clock{t: time.Unix(1_800_000_000, 0)})
	if code, _ := get(h, http.MethodGet, "/metrics", "Bearer scraper-token"); code != http.StatusOK {
		t.Fatalf("status %d", code)
	}
	if len(s.accessReviews) != 1 {
		t.Fatalf("%d access reviews", len(s.accessReviews))
	}
	spec := s.accessReviews[0]
	if spec.User != scraper.Username || spec.UID != scraper.UID || !slices.Equal(spec.Groups, scraper.Groups) ||
		!slices.Equal(spec.Extra["authentication.kubernetes.io/pod-name"], authorizationv1.ExtraValue{"prometheus-0"}) {
		t.Errorf("asked about %+v, want the scraper %+v", spec, scraper)
	}
	if spec.ResourceAttributes != nil || spec.NonResourceAttributes == nil ||
		*spec.NonResourceAttributes != (authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"}) {
		t.Errorf("asked about %+v / %+v, want get /metrics", spec.ResourceAttributes, spec.NonResourceAttributes)
	}
}

// A scrape every few seconds costs no review while the answers last: a
// token's a minute, an allowed request's five, a denied one's thirty
// seconds. Errors are not remembered.
func TestGuardCachesAnswers(t *testing.T) {
	s := newServer()
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	h := guarded(t, s, c)
	scrape := func(auth string, want int) {
		t.Helper()
		if code, body := get(h, http.MethodGet, "/metrics", auth); code != want {
			t.Fatalf("at %s: status %d, want %d (%q)", c.t.Format(time.TimeOnly), code, want, body)
		}
	}
	reviews := func(wantTokens, wantAccess int) {
		t.Helper()
		if len(s.tokenReviews) != wantTokens || len(s.accessReviews) != wantAccess {
			t.Errorf("at %s: %d token and %d access reviews, want %d and %d", c.t.Format(time.TimeOnly),
				len(s.tokenReviews), len(s.accessReviews), wantTokens, wantAccess)
		}
	}

	for range 6 { // 50 s of scrapes every 10 s
		scrape("Bearer scraper-token", http.StatusOK)
		c.t = c.t.Add(10 * time.Second)
	}
	reviews(1, 1)
	c.t = c.t.Add(10 * time.Second) // the token's answer expired, the access's did not
	scrape("Bearer scraper-token", http.StatusOK)
	reviews(2, 1)
	c.t = c.t.Add(4 * time.Minute) // both expired
	scrape("Bearer scraper-token", http.StatusOK)
	reviews(3, 2)

	// A denied user: remembered 30 s, so a new role binding takes effect
	// within that.
	scrape("Bearer stranger-token", http.StatusForbidden)
	c.t = c.t.Add(20 * time.Second)
	scrape("Bearer stranger-token", http.StatusForbidden)
	reviews(4, 3)
	s.allowed[stranger.Username] = true
	c.t = c.t.Add(11 * time.Second)
	scrape("Bearer stranger-token", http.StatusOK)
	reviews(4, 4)

	// A forged token is remembered too, so a flood of it costs one review.
	for range 5 {
		scrape("Bearer forged", http.StatusUnauthorized)
	}
	reviews(5, 4)

	// A failed review is not remembered.
	s.accessErr = errors.New("timeout")
	c.t = c.t.Add(10 * time.Minute)
	scrape("Bearer scraper-token", http.StatusInternalServerError)
	s.accessErr = nil
	scrape("Bearer scraper-token", http.StatusOK)
	reviews(6, 6)
}

// Requests with ever new tokens cannot grow the cache past its bound.
func TestGuardCacheIsBounded(t *testing.T) {
	s := newServer()
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	g := NewGuard(Reviews{Tokens: tokenReviews{s}, Access: accessReviews{s}}, c.now)
	h, err := g.Wrap(logr.Discard(), http.NotFoundHandler())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 * maxEntries {
		if code, _ := get(h, http.MethodGet, "/metrics", fmt.Sprintf("Bearer forged-%d", i)); code != http.StatusUnauthorized {
			t.Fatalf("forged token %d: status %d", i, code)
		}
		if n := g.tokens.len(); n > maxEntries {
			t.Fatalf("after %d tokens the cache holds %d answers, more than %d", i+1, n, maxEntries)
		}
	}
	// The scraper still gets its answer, and keeps it.
	for range 3 {
		if code, _ := get(h, http.MethodGet, "/metrics", "Bearer scraper-token"); code != http.StatusNotFound {
			t.Fatalf("the scraper after the flood: status %d", code)
		}
	}
	if got := len(s.tokenReviews); got != 3*maxEntries+1 {
		t.Errorf("%d token reviews, want one per token (%d)", got, 3*maxEntries+1)
	}
}

// Two users that differ only in where one field ends and the next begins
// are two entries of the access cache.
func TestAccessKeyDelimitsFields(t *testing.T) {
	a := authenticationv1.UserInfo{Username: "ab", Groups: []string{"c"}}
	b := authenticationv1.UserInfo{Username: "a", Groups: []string{"bc"}}
	c := authenticationv1.UserInfo{Username: "a", Groups: []string{"b", "c"}}
	d := authenticationv1.UserInfo{Username: "a", Extra: map[string]authenticationv1.ExtraValue{"b": {"c"}}}
	keys := map[string]string{}
	for name, u := range map[string]authenticationv1.UserInfo{"a": a, "b": b, "c": c, "d": d} {
		k := accessKey(u, "get", "/metrics")
		if other, dup := keys[k]; dup {
			t.Errorf("users %s and %s share a key", name, other)
		}
		keys[k] = name
	}
	if accessKey(a, "get", "/metrics") == accessKey(a, "get", "/metricsx") {
		t.Error("two paths share a key")
	}
}
