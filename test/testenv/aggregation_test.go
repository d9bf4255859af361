package testenv_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/internal/testenv"
)

// TestAggregatedAPI registers a small aggregated API served on loopback and
// calls it through kube-apiserver: the request arrives with the front
// proxy's client certificate and the caller in the request headers; a
// caller without that certificate is refused by the server; unregistering
// removes the API.
func TestAggregatedAPI(t *testing.T) {
	if err := testenv.CheckAssets(); err != nil {
		t.Fatal(err)
	}
	env, _ := testenv.StartForTest(t, testenv.Options{Aggregation: true})
	ctx := context.Background()

	api := testenv.AggregatedAPI{
		Group: "echo.example.com", Version: "v1", Namespace: "echo-system", Service: "echo",
		Port: 443, TargetPort: 8443, GroupPriorityMinimum: 1000, VersionPriority: 15,
	}
	ca, err := testenv.NewCA("echo-ca")
	if err != nil {
		t.Fatal(err)
	}
	serving, err := ca.ServingCert(api.ServerName())
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []string // "CN user groups" of each request that reached the server
	mux := http.NewServeMux()
	mux.HandleFunc("GET /apis/echo.example.com/v1", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"echo.example.com/v1","resources":[{"name":"echoes","namespaced":true,"kind":"Echo","verbs":["get"]}]}`)
	})
	mux.HandleFunc("GET /apis/echo.example.com/v1/namespaces/{ns}/echoes/{name}", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, fmt.Sprintf("%s %s %s", r.TLS.PeerCertificates[0].Subject.CommonName,
			r.Header.Get(testenv.RemoteUserHeader), strings.Join(r.Header.Values(testenv.RemoteGroupHeader), ",")))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"name": r.PathValue("name")})
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{
		Handler: mux,
		// The refused handshake below is expected.
		ErrorLog:          log.New(io.Discard, "", 0),
		ReadHeaderTimeout: 5 * time.Second,
		TLSConfig: &tls.Config{
			MinVersion:   tls.VersionTLS12,
			Certificates: []tls.Certificate{serving.TLS},
			ClientCAs:    env.FrontProxyCA().Pool(),
			ClientAuth:   tls.RequireAndVerifyClientCert,
		},
	}
	go func() { _ = srv.ServeTLS(l, "", "") }()
	t.Cleanup(func() { _ = srv.Close() })

	api.Address, api.CABundle = l.Addr().String(), ca.PEM
	start := time.Now()
	if err := env.RegisterAggregatedAPI(ctx, api); err != nil {
		t.Fatal(err)
	}
	t.Logf("APIService available in %s", time.Since(start).Round(time.Millisecond))

	hc, err := rest.HTTPClientFor(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	get := func(hc *http.Client, path string) (int, string) {
		t.Helper()
		resp, err := hc.Get(strings.TrimSuffix(env.Config.Host, "/") + path)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	code, body := get(hc, "/apis/echo.example.com/v1/namespaces/default/echoes/hello")
	if code != http.StatusOK || !strings.Contains(body, `"hello"`) {
		t.Fatalf("GET through the aggregator: %d %s", code, body)
	}
	mu.Lock()
	got := append([]string(nil), seen...)
	mu.Unlock()
	if len(got) != 1 || !strings.HasPrefix(got[0], testenv.FrontProxyClientName+" ") || !strings.Contains(got[0], "system:masters") {
		t.Errorf("the server saw %q, want one request from %s carrying the caller's groups", got, testenv.FrontProxyClientName)
	}

	// kube-apiserver publishes the front-proxy CA where aggregated API
	// servers read it.
	c, err := env.Client()
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "extension-apiserver-authentication"}, cm); err != nil {
		t.Fatal(err)
	}
	if cm.Data["requestheader-client-ca-file"] != string(env.FrontProxyCA().PEM) {
		t.Errorf("extension-apiserver-authentication does not carry the front-proxy CA: %v", cm.Data)
	}

	// A caller that trusts the server but has no front-proxy certificate
	// is refused in the handshake.
	direct := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{
		MinVersion: tls.VersionTLS12, RootCAs: ca.Pool(), ServerName: api.ServerName(),
	}}}
	if resp, err := direct.Get("https://" + api.Address + "/apis/echo.example.com/v1/namespaces/default/echoes/hello"); err == nil {
		_ = resp.Body.Close()
		t.Errorf("a caller without the front-proxy certificate got %s", resp.Status)
	}

	if err := env.UnregisterAggregatedAPI(ctx, api); err != nil {
		t.Fatal(err)
	}
	code, _ = get(hc, "/apis/echo.example.com/v1/namespaces/default/echoes/hello")
	if code != http.StatusNotFound {
		t.Errorf("GET after UnregisterAggregatedAPI: %d, want 404", code)
	}
}
