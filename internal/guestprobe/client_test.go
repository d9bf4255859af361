package guestprobe

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
)

var vm1 = types.NamespacedName{Namespace: "ns", Name: "vm1"}

func newTestClient(t *testing.T, url string, timeout time.Duration) *Client {
	t.Helper()
	c, err := NewClient(&rest.Config{Host: url}, nil, timeout)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// status writes an API Status answer, as the API server (and virt-api for
// its own StatusErrors) does.
func status(code int, msg string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":`+jsonString(msg)+`,"code":`+strconv.Itoa(code)+`}`)
	}
}

// text writes a plain-text error, as virt-api's go-restful WriteError does.
func text(code int, msg string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(code)
		_, _ = io.WriteString(w, msg)
	}
}

func TestClientClassifies(t *testing.T) {
	for _, tc := range []struct {
		name       string
		h          http.Handler
		kind       Kind
		retryAfter time.Duration
	}{
		{"429 with Retry-After", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "7")
			status(http.StatusTooManyRequests, "Too many requests, please try again later.")(w, r)
		}), KindThrottled, 7 * time.Second},
		{"aggregator: virt-api down", status(http.StatusServiceUnavailable, "the server is currently unable to handle the request"), KindUnavailable, 0},
		{"503 as text", text(http.StatusServiceUnavailable, "service unavailable"), KindUnavailable, 0},
		{"502 from the proxy", text(http.StatusBadGateway, "Error trying to reach service: dial tcp 10.0.0.1:8443: connect: connection refused"), KindUnavailable, 0},
		{"403: RBAC", status(http.StatusForbidden, `virtualmachineinstances.subresources.kubevirt.io "vm1" is forbidden: User "system:serviceaccount:vmobs-system:vmobs" cannot get resource "virtualmachineinstances/guestosinfo"`), KindRefused, 0},
		{"401", status(http.StatusUnauthorized, "Unauthorized"), KindRefused, 0},
		{"404: group not served", status(http.StatusNotFound, "the server could not find the requested resource"), KindNotServed, 0},
		{"404 from virt-api's router", text(http.StatusNotFound, "404 page not found"), KindNotServed, 0},
		{"VMI not found (virt-api's 500)", text(http.StatusInternalServerError, `virtualmachineinstance.kubevirt.io "vm1" not found`), KindGone, 0},
		{"VMI not found (404 Status)", status(http.StatusNotFound, `virtualmachineinstance.kubevirt.io "vm1" not found`), KindGone, 0},
		{"agent not connected (virt-api's 500)", text(http.StatusInternalServerError, `Operation cannot be fulfilled on virtualmachineinstance.kubevirt.io "vm1": VMI does not have guest agent connected`), KindGone, 0},
		{"not running (409)", status(http.StatusConflict, `Operation cannot be fulfilled on virtualmachineinstance.kubevirt.io "vm1": VMI is not running`), KindGone, 0},
		{"another VMI's name is not this one gone", text(http.StatusInternalServerError, `virtualmachineinstance.kubevirt.io "vm10" not found`), KindAgent, 0},
		{"command not supported", text(http.StatusInternalServerError, "unexpected return code 500 (500 Internal Server Error), message: The command guest-get-users has not been found"), KindNotSupported, 0},
		{"no virt-handler on the node (virt-api's 500)", text(http.StatusInternalServerError, "No virt-handler on node node-a found"), KindNoHandler, 0},
		{"virt-handler failed", text(http.StatusInternalServerError, "unexpected return code 500 (500 Internal Server Error), message: rpc error: code = DeadlineExceeded"), KindAgent, 0},
		{"a hostile error body is bounded", text(http.StatusInternalServerError, strings.Repeat("\x1bA", 1<<20)), KindAgent, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.h)
			defer srv.Close()
			_, err := newTestClient(t, srv.URL, time.Minute).Get(context.Background(), vm1, SubGuestOSInfo)
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want *Error", err)
			}
			if pe.Kind != tc.kind || pe.RetryAfter != tc.retryAfter || pe.Sub != SubGuestOSInfo {
				t.Fatalf("got %s (retry after %s): %s; want %s (%s)", pe.Kind, pe.RetryAfter, pe.Msg, tc.kind, tc.retryAfter)
			}
			if len(pe.Msg) > 253 || strings.ContainsRune(pe.Msg, '\x1b') {
				t.Fatalf("message not bounded: %q", pe.Msg)
			}
		})
	}
}

func TestClientSendsThePath(t *testing.T) {
	var got atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Store(r.Method + " " + r.URL.Path + " " + r.Header.Get("Accept"))
		_, _ = io.WriteString(w, `{}`)
	}))
	defer srv.Close()
	body, err := newTestClient(t, srv.URL+"/prefix/", time.Minute).Get(context.Background(), vm1, SubFilesystemList)
	if err != nil || string(body) != `{}` {
		t.Fatalf("%q %v", body, err)
	}
	if want := "GET /prefix/apis/subresources.kubevirt.io/v1/namespaces/ns/virtualmachineinstances/vm1/filesystemlist application/json"; got.Load() != want {
		t.Fatalf("request %q, want %q", got.Load(), want)
	}
}

// countingTransport counts what the client reads of the answers.
type countingTransport struct {
	read atomic.Int64
}

type countingReader struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.n.Add(int64(n))
	return n, err
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if resp != nil {
		resp.Body = countingReader{resp.Body, &c.read}
	}
	return resp, err
}

func TestClientBoundsTheAnswer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		chunk := []byte(`{"items":[` + strings.Repeat(`{"mountPoint":"/x","usedBytes":1,"totalBytes":2},`, 1000))
		for written := 0; written < 10<<20; written += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	tr := &countingTransport{}
	c, err := NewClient(&rest.Config{Host: srv.URL}, &http.Client{Transport: tr}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Get(context.Background(), vm1, SubFilesystemList)
	var pe *Error
	if !errors.As(err, &pe) || pe.Kind != KindBadAnswer || pe.Msg != "filesystemlist: answer over 1 MiB" {
		t.Fatalf("err = %v", err)
	}
	if n := tr.read.Load(); n > int64(maxAnswer)+1 {
		t.Fatalf("read %d bytes of a 10 MB answer, want at most %d", n, maxAnswer+1)
	}
}

func TestClientTimesOut(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // a guest that never answers
	}))
	defer srv.Close()
	start := time.Now()
	_, err := newTestClient(t, srv.URL, 100*time.Millisecond).Get(context.Background(), vm1, SubGuestOSInfo)
	var pe *Error
	if !errors.As(err, &pe) || pe.Kind != KindTimeout || pe.Msg != "guestosinfo did not answer within 100ms" {
		t.Fatalf("err = %v", err)
	}
	// The bound only catches a timeout not applied (the guest never
	// answers): a loaded machine must not reach it.
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("took %s", d)
	}
	// The caller's own cancellation is not the guest's timeout.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := newTestClient(t, srv.URL, time.Minute).Get(ctx, vm1, SubGuestOSInfo); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled: err = %v", err)
	}
}

func TestClientUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	_, err := newTestClient(t, url, time.Minute).Get(context.Background(), vm1, SubGuestOSInfo)
	var pe *Error
	if !errors.As(err, &pe) || pe.Kind != KindUnreachable {
		t.Fatalf("err = %v", err)
	}
}
