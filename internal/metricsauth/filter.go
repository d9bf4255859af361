// Package metricsauth guards the metrics endpoint as Kubernetes components
// guard theirs: a bearer token checked with a TokenReview, the request
// checked with a SubjectAccessReview on its non-resource path, and both
// answers cached for a while so a scrape every few seconds costs the API
// server nothing.
//
// controller-runtime's filters.WithAuthenticationAndAuthorization does the
// same through k8s.io/apiserver's delegating authenticator and authorizer,
// which bring CEL, gRPC and OpenTelemetry into the binary: nearly a quarter
// of its packages, a third of its size and about 12 MiB of resident memory
// at start (docs/scale.md) for two API calls. This
// package keeps its behaviour (the answers, their cache times, the status
// codes) with client-go alone.
package metricsauth

import (
	"cmp"
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authenticationclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// The cache times are those controller-runtime's filter gives k8s.io/apiserver:
// a token's answer, either way, for a minute; an allowed request for five
// minutes, a denied one for thirty seconds, so a role granted to a scraper
// takes effect soon.
const (
	tokenTTL = time.Minute
	allowTTL = 5 * time.Minute
	denyTTL  = 30 * time.Second
	// reviewTimeout bounds each review; a scrape waits for it.
	reviewTimeout = 10 * time.Second
	// maxTokenBytes: service account tokens are about 1 KiB and OIDC
	// tokens a few; a longer header is refused without a review.
	maxTokenBytes = 16 << 10
	// maxEntries bounds each cache: scrapers are few, and requests with
	// ever new tokens must not grow the manager's memory.
	maxEntries = 1024
)

// Reviews are the two API calls the filter makes.
type Reviews struct {
	Tokens authenticationclient.TokenReviewInterface
	Access authorizationclient.SubjectAccessReviewInterface
}

// Filter is a metricsserver.FilterProvider.
func Filter(cfg *rest.Config, hc *http.Client) (metricsserver.Filter, error) {
	authn, err := authenticationclient.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, err
	}
	authz, err := authorizationclient.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, err
	}
	g := NewGuard(Reviews{Tokens: authn.TokenReviews(), Access: authz.SubjectAccessReviews()}, time.Now)
	return g.Wrap, nil
}

// Guard authenticates and authorizes requests, caching the answers.
type Guard struct {
	reviews Reviews
	now     func() time.Time
	tokens  *ttlCache[tokenAnswer]
	access  *ttlCache[accessAnswer]
}

type tokenAnswer struct {
	user          authenticationv1.UserInfo
	authenticated bool
	reason        string // the review's status.error
}

type accessAnswer struct {
	allowed bool
	reason  string
}

// NewGuard returns a Guard that asks reviews, with now as its clock.
func NewGuard(reviews Reviews, now func() time.Time) *Guard {
	return &Guard{
		reviews: reviews,
		now:     now,
		tokens:  newTTLCache[tokenAnswer](maxEntries),
		access:  newTTLCache[accessAnswer](maxEntries),
	}
}

// Wrap is the metricsserver.Filter: it answers 401 to a request without a
// valid token, 403 to a user not allowed the verb on the path, 500 when a
// review fails (not cached: the next scrape asks again), and hands the
// rest to next.
func (g *Guard) Wrap(log logr.Logger, next http.Handler) (http.Handler, error) {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		token, ok := bearerToken(req)
		if !ok {
			log.V(4).Info("Unauthenticated metrics request: no bearer token", "remote", req.RemoteAddr)
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		answer, err := g.authenticate(req.Context(), token)
		if err != nil {
			log.Error(err, "Authenticating a metrics request failed")
			http.Error(w, "Authentication failed", http.StatusInternalServerError)
			return
		}
		if !answer.authenticated {
			log.V(4).Info("Unauthenticated metrics request: the token is not valid", "remote", req.RemoteAddr, "reason", answer.reason)
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		user := answer.user
		verb := strings.ToLower(req.Method)
		allowed, reason, err := g.authorize(req.Context(), user, verb, req.URL.Path)
		if err != nil {
			msg := fmt.Sprintf("Authorization for user %s failed", user.Username)
			log.Error(err, msg)
			http.Error(w, msg, http.StatusInternalServerError)
			return
		}
		if !allowed {
			msg := fmt.Sprintf("Authorization denied for user %s", user.Username)
			log.V(4).Info(msg, "reason", reason, "verb", verb, "path", req.URL.Path)
			http.Error(w, msg, http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, req)
	}), nil
}

// bearerToken reads the token as kube-apiserver's bearer token
// authenticator does: "Bearer <token>", the scheme in any case.
func bearerToken(req *http.Request) (string, bool) {
	parts := strings.SplitN(strings.TrimSpace(req.Header.Get("Authorization")), " ", 3)
	if len(parts) < 2 || !strings.EqualFold(parts[0], "bearer") {
		return "", false
	}
	token := parts[1]
	if token == "" || len(token) > maxTokenBytes {
		return "", false
	}
	return token, true
}

func (g *Guard) authenticate(ctx context.Context, token string) (tokenAnswer, error) {
	// The cache keys a hash of the token, so no token stays in memory.
	key := hashKey(token)
	now := g.now()
	if a, ok := g.tokens.get(key, now); ok {
		return a, nil
	}
	ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
	defer cancel()
	r, err := g.reviews.Tokens.Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return tokenAnswer{}, fmt.Errorf("TokenReview: %w", err)
	}
	// A token the API server does not accept comes back with
	// status.error set ("invalid bearer token, ..."), as does one no
	// authenticator could judge: both are a 401, remembered like any answer,
	// so a flood of forged tokens costs one review per token a minute.
	a := tokenAnswer{user: r.Status.User, authenticated: r.Status.Authenticated, reason: r.Status.Error}
	g.tokens.put(key, a, now.Add(tokenTTL), now)
	return a, nil
}

func (g *Guard) authorize(ctx context.Context, user authenticationv1.UserInfo, verb, path string) (bool, string, error) {
	key := accessKey(user, verb, path)
	now := g.now()
	if a, ok := g.access.get(key, now); ok {
		return a.allowed, a.reason, nil
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:                  user.Username,
		UID:                   user.UID,
		Groups:                user.Groups,
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: verb},
	}}
	if len(user.Extra) > 0 {
		sar.Spec.Extra = make(map[string]authorizationv1.ExtraValue, len(user.Extra))
		for k, v := range user.Extra {
			sar.Spec.Extra[k] = authorizationv1.ExtraValue(v)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
	defer cancel()
	r, err := g.reviews.Access.Create(ctx, sar, metav1.CreateOptions{})
	if err != nil {
		return false, "", fmt.Errorf("SubjectAccessReview: %w", err)
	}
	// Not allowed is denied, whatever else the review says: RBAC reports a
	// binding to a missing role as an evaluation error beside its "no",
	// and kube-apiserver's own webhook authorizer reads it the same way.
	a := accessAnswer{allowed: r.Status.Allowed, reason: cmp.Or(r.Status.Reason, r.Status.EvaluationError)}
	ttl := denyTTL
	if a.allowed {
		ttl = allowTTL
	}
	g.access.put(key, a, now.Add(ttl), now)
	return a.allowed, a.reason, nil
}

// accessKey names a user's request in the access cache: every field the
// review is asked about, each one delimited so that no two differ only in
// where a field ends.
func accessKey(user authenticationv1.UserInfo, verb, path string) string {
	var b strings.Builder
	field := func(s string) {
		fmt.Fprintf(&b, "%d:%s;", len(s), s)
	}
	field(user.Username)
	field(user.UID)
	for _, grp := range user.Groups {
		field(grp)
	}
	b.WriteByte('|')
	keys := make([]string, 0, len(user.Extra))
	for k := range user.Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		field(k)
		for _, v := range user.Extra[k] {
			field(v)
		}
		b.WriteByte('|')
	}
	field(verb)
	field(path)
	return hashKey(b.String())
}

func hashKey(s string) string {
	sum := sha256.Sum256([]byte(s))
	return string(sum[:])
}
