package packaging

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/vmobs/vmobs/internal/metricsauth"
	"github.com/vmobs/vmobs/internal/testenv"
	"github.com/vmobs/vmobs/test/support"
)

// testMetricsBehindReviews serves the metrics endpoint as the manager does
// with --metrics-secure, reviewing with the controller's own credentials
// (userCfg, the ServiceAccount of config/default, whose role allows the
// reviews), and scrapes it as Prometheus would: with the token of a
// ServiceAccount bound to config/default's metrics-reader role, with one
// bound to nothing, with a forged token and with none. A second scrape
// within the cache time costs the API server no review.
func testMetricsBehindReviews(ctx context.Context, t *testing.T, admin client.Client, userCfg *rest.Config) {
	const ns = "metrics-scrapers"
	support.MustCreate(ctx, t, admin, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	token := func(name string) string {
		t.Helper()
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		support.MustCreate(ctx, t, admin, sa)
		tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
		if err := admin.SubResource("token").Create(ctx, sa, tr); err != nil {
			t.Fatalf("a token for ServiceAccount %s/%s: %v", ns, name, err)
		}
		return tr.Status.Token
	}
	scraper, stranger := token("prometheus"), token("stranger")
	support.MustCreate(ctx, t, admin, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "metrics-scrapers-prometheus"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "vmobs-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "prometheus"}},
	})

	// Count the reviews the filter sends.
	var reviews atomic.Int64
	cfg := testenv.Intercept(userCfg, func(req *http.Request, next http.RoundTripper) (*http.Response, error) {
		if req.Method == http.MethodPost && (strings.HasSuffix(req.URL.Path, "/tokenreviews") || strings.HasSuffix(req.URL.Path, "/subjectaccessreviews")) {
			reviews.Add(1)
		}
		return next.RoundTrip(req)
	})
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	srv, err := metricsserver.NewServer(metricsserver.Options{
		BindAddress: addr, SecureServing: true, FilterProvider: metricsauth.Filter,
	}, cfg, hc)
	if err != nil {
		t.Fatal(err)
	}
	srvCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Start(srvCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("metrics server: %v", err)
		}
	})

	// The certificate is controller-runtime's self-signed one here;
	// internal/app's tests check a mounted certificate.
	scrapeClient := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}, //nolint:gosec // see above
	}}
	scrape := func(authorization string) (int, string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/metrics", nil)
			if err != nil {
				t.Fatal(err)
			}
			if authorization != "" {
				req.Header.Set("Authorization", authorization)
			}
			resp, err := scrapeClient.Do(req)
			if err != nil {
				if time.Now().Before(deadline) { // the server is starting
					time.Sleep(50 * time.Millisecond)
					continue
				}
				t.Fatalf("scraping: %v", err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			return resp.StatusCode, string(body)
		}
	}

	for _, c := range []struct {
		who, authorization string
		want               int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"a forged token", "Bearer not-a-token", http.StatusUnauthorized},
		{"a ServiceAccount bound to nothing", "Bearer " + stranger, http.StatusForbidden},
		{"the metrics reader", "Bearer " + scraper, http.StatusOK},
	} {
		code, body := scrape(c.authorization)
		if code != c.want {
			t.Errorf("%s: status %d, want %d (%.200q)", c.who, code, c.want, body)
		}
		if code == http.StatusOK && !strings.Contains(body, "# TYPE ") {
			t.Errorf("%s: status 200 without metrics: %.200q", c.who, body)
		}
	}
	before := reviews.Load()
	if before == 0 {
		t.Fatal("no review reached the API server")
	}
	for range 3 {
		if code, body := scrape("Bearer " + scraper); code != http.StatusOK {
			t.Fatalf("the metrics reader again: status %d (%.200q)", code, body)
		}
	}
	if n := reviews.Load() - before; n != 0 {
		t.Errorf("three more scrapes within the cache time sent %d reviews, want 0", n)
	}
	t.Logf("metrics: %d reviews for 4 kinds of scraper, none for 3 scrapes more", before)
}
