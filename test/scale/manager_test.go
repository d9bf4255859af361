package scale

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"

	"github.com/vmobs/vmobs/internal/app"
	"github.com/vmobs/vmobs/internal/testenv"
)

// managerOptions are the options `vmobs manager` runs with (app.Defaults),
// with what an in-process or child run must change (app.InProcessOptions:
// no metrics or probe listeners, a private metrics registry) and the run's
// refresh interval (loadConfig's, app.Defaults' unless set), lag grace,
// start-up GC percent and incidents (on or off).
func managerOptions(cfg config) app.Options {
	opts := app.InProcessOptions()
	opts.EvidenceRefreshInterval = cfg.Refresh
	if cfg.NoIncidents {
		opts.Incidents = false
	}
	if cfg.LagGrace > 0 {
		opts.Policy.LagGrace = cfg.LagGrace
	}
	if cfg.StartupGCPercent >= 0 {
		opts.StartupGCPercent = cfg.StartupGCPercent
	}
	return opts
}

// writeLog records, with their times, the writes a client makes to
// VMObservations, so that each write at idle can be checked against the
// refresh policy (RequestCounter counts; this says when and to what).
type writeLog struct {
	mu      sync.Mutex
	entries []writeEntry
	// dropEvents answers the manager's Event writes in the transport
	// without sending them (-scale.no-events, a diagnostic that shows what
	// the Events cost); dropped counts them.
	dropEvents bool
	dropped    int
}

type writeEntry struct {
	at  time.Time // when the request was sent
	key string    // "verb resource[/sub]" as testenv.Key names it
	obj string    // namespace/name; namespace/ for a create
}

func (l *writeLog) Wrap(cfg *rest.Config) *rest.Config {
	return testenv.Intercept(cfg, func(req *http.Request, next http.RoundTripper) (*http.Response, error) {
		if l.dropEvents && req.Method != http.MethodGet && strings.HasPrefix(req.URL.Path, "/apis/events.k8s.io/") {
			return l.fakeEvent(req)
		}
		// The time the request was sent, the closest to the controller's
		// own clock when it decided to write.
		sent := time.Now()
		resp, err := next.RoundTrip(req)
		if k, ok := testenv.AcceptedWrite(req, resp, err, "vmobservations"); ok {
			l.mu.Lock()
			l.entries = append(l.entries, writeEntry{at: sent, key: k, obj: testenv.ObjectOf(req)})
			l.mu.Unlock()
		}
		return resp, err
	})
}

// fakeEvent answers an Event write as the API server would, echoing the
// Event created.
func (l *writeLog) fakeEvent(req *http.Request) (*http.Response, error) {
	body := []byte(`{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"dropped","namespace":"default"}}`)
	code := http.StatusOK
	if req.Method == http.MethodPost && req.Body != nil {
		if b, err := io.ReadAll(req.Body); err == nil && len(b) > 0 && b[0] == '{' {
			body, code = b, http.StatusCreated
		}
	}
	if req.Body != nil {
		_ = req.Body.Close()
	}
	l.mu.Lock()
	l.dropped++
	l.mu.Unlock()
	return &http.Response{
		StatusCode: code, Status: http.StatusText(code), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": []string{"application/json"}},
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)), Request: req,
	}, nil
}

func (l *writeLog) snapshot() []writeEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]writeEntry(nil), l.entries...)
}

// policyCheck classifies the status writes in [from, to): a write is
// explained by the refresh policy when the object's previous status write
// (from this log) was sent at least refresh earlier, less a second because
// the controller reads its last write time from managedFields, which hold
// whole seconds. (Timing the responses instead would flag a refresh whose
// previous write took over a second to answer, as at N=5000 cold starts.)
// Every other write in the window, creates and deletes included, is
// unexplained; with refreshes off (refresh 0) every write is.
func (l *writeLog) policyCheck(from, to time.Time, refresh time.Duration) (total, refreshes int, unexplained []string) {
	last := map[string]time.Time{}
	for _, e := range l.snapshot() {
		inWindow := !e.at.Before(from) && e.at.Before(to)
		isStatus := e.key == "apply vmobservations/status" || e.key == "update vmobservations/status" || e.key == "patch vmobservations/status"
		if inWindow {
			total++
			prev, seen := last[e.obj]
			switch {
			case isStatus && seen && refresh > 0 && e.at.Sub(prev) >= refresh-time.Second:
				refreshes++
			default:
				why := "no earlier status write in the log"
				if refresh <= 0 {
					why = "evidence refreshes are off"
				} else if !isStatus {
					why = "not a status write"
				} else if seen {
					why = fmt.Sprintf("%s after the previous one", e.at.Sub(prev).Round(time.Millisecond))
				}
				unexplained = append(unexplained, fmt.Sprintf("%s %s at +%s: %s", e.key, e.obj, e.at.Sub(from).Round(time.Millisecond), why))
			}
		}
		if isStatus {
			last[e.obj] = e.at
		}
	}
	return total, refreshes, unexplained
}
