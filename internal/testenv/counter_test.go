package testenv

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
)

// The writes a wrapped client's requests make are named only when the
// server accepted them and they are of the resource asked for.
func TestInterceptAndAcceptedWrite(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/conflict") {
			w.WriteHeader(http.StatusConflict)
		}
	}))
	t.Cleanup(srv.Close)
	var got []string
	cfg := Intercept(&rest.Config{Host: srv.URL}, func(req *http.Request, next http.RoundTripper) (*http.Response, error) {
		resp, err := next.RoundTrip(req)
		if k, ok := AcceptedWrite(req, resp, err, "vmobservations"); ok {
			got = append(got, k)
		}
		return resp, err
	})
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	const base = "/apis/vmobs.io/v1alpha1/namespaces/prod/"
	for _, r := range []struct{ method, path string }{
		{http.MethodPost, base + "vmobservations"},
		{http.MethodPut, base + "vmobservations/vm1/status"},
		{http.MethodGet, base + "vmobservations/vm1"},
		{http.MethodPut, base + "vmobservations/vm1/conflict"},
		{http.MethodPost, base + "vmincidents"},
		{http.MethodPost, base + "vmobservationsx"},
	} {
		req, err := http.NewRequest(r.method, srv.URL+r.path, http.NoBody)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
	}
	want := []string{"create vmobservations", "update vmobservations/status"}
	if strings.Join(got, ";") != strings.Join(want, ";") {
		t.Errorf("accepted writes %q, want %q", got, want)
	}
}
