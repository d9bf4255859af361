package guestprobe

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/types"

	"github.com/vmobs/vmobs/internal/factsource"
	"github.com/vmobs/vmobs/internal/factsource/factsourcetest"
	"github.com/vmobs/vmobs/internal/vmifacts"
)

// guest is how one fake guest answers.
type guest struct {
	// used is the percentage used of its one filesystem, /.
	used int
	// mode: "" answers; "hang" never answers; "block" answers once the
	// test closes the API's release; "huge" answers 10 MB of filesystems;
	// "500" fails; "gone" is not connected; "bad" answers garbage;
	// "nousers" lacks guest-get-users.
	mode string
}

// fakeVirtAPI answers the three subresources the way the API server and
// virt-api do; its mode turns the whole API into a failing one.
type fakeVirtAPI struct {
	mu         sync.Mutex
	mode       string // "", "503", "429", "403", "404", "500", "hang"
	retryAfter string
	guests     map[string]*guest
	requests   []string // "name/sub"
	times      []time.Time
	// clock is the harness's; at holds its time at each request.
	clock func() time.Time
	at    []time.Time
	// active counts the requests being answered, peak the most at once.
	active, peak int
	release      chan struct{}
}

func (a *fakeVirtAPI) set(mode string) { a.mu.Lock(); a.mode = mode; a.mu.Unlock() }

func (a *fakeVirtAPI) setGuest(name string, g guest) {
	a.mu.Lock()
	a.guests[name] = &g
	a.mu.Unlock()
}

// take returns the requests since the last take.
func (a *fakeVirtAPI) take() []string {
	r, _ := a.takeAt()
	return r
}

// takeAt returns the requests since the last take and the harness's time
// at each.
func (a *fakeVirtAPI) takeAt() ([]string, []time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	r, at := a.requests, a.at
	a.requests, a.times, a.at = nil, nil, nil
	return r, at
}

func (a *fakeVirtAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(r.URL.Path, "/")
	name, sub := parts[len(parts)-2], parts[len(parts)-1]
	a.mu.Lock()
	a.requests = append(a.requests, name+"/"+sub)
	a.times = append(a.times, time.Now())
	if a.clock != nil {
		a.at = append(a.at, a.clock())
	}
	a.active++
	a.peak = max(a.peak, a.active)
	mode, retryAfter, release := a.mode, a.retryAfter, a.release
	g := guest{mode: "gone"}
	if p := a.guests[name]; p != nil {
		g = *p
	}
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		a.active--
		a.mu.Unlock()
	}()
	switch mode {
	case "503":
		status(http.StatusServiceUnavailable, "the server is currently unable to handle the request")(w, r)
		return
	case "429":
		w.Header().Set("Retry-After", retryAfter)
		status(http.StatusTooManyRequests, "Too many requests")(w, r)
		return
	case "403":
		status(http.StatusForbidden, "forbidden")(w, r)
		return
	case "404":
		status(http.StatusNotFound, "the server could not find the requested resource")(w, r)
		return
	case "500":
		text(http.StatusInternalServerError, "unexpected return code 500 (500 Internal Server Error), message: connection refused")(w, r)
		return
	case "hang":
		<-r.Context().Done()
		return
	}
	switch g.mode {
	case "hang":
		<-r.Context().Done()
		return
	case "block":
		select {
		case <-r.Context().Done():
			return
		case <-release:
		}
	case "500":
		text(http.StatusInternalServerError, "unexpected return code 500 (500 Internal Server Error), message: the agent failed")(w, r)
		return
	case "gone":
		text(http.StatusInternalServerError, `Operation cannot be fulfilled on virtualmachineinstance.kubevirt.io "`+name+`": VMI does not have guest agent connected`)(w, r)
		return
	case "bad":
		_, _ = io.WriteString(w, `{"hostname":`)
		return
	}
	switch sub {
	case SubGuestOSInfo:
		_, _ = io.WriteString(w, `{"hostname":"`+name+`","os":{"prettyName":"Fedora Linux 40"},"timezone":"UTC, 0"}`)
	case SubUserList:
		if g.mode == "nousers" {
			text(http.StatusInternalServerError, "unexpected return code 500 (500 Internal Server Error), message: The command guest-get-users has been disabled")(w, r)
			return
		}
		_, _ = io.WriteString(w, `{"items":[{"userName":"root"}]}`)
	case SubFilesystemList:
		if g.mode == "huge" {
			chunk := `{"mountPoint":"/x","fileSystemType":"xfs","usedBytes":1,"totalBytes":2},`
			_, _ = io.WriteString(w, `{"items":[`)
			for written := 0; written < 10<<20; written += len(chunk) {
				if _, err := io.WriteString(w, chunk); err != nil {
					return
				}
			}
			return
		}
		_, _ = fmt.Fprintf(w, `{"items":[{"mountPoint":"/","fileSystemType":"xfs","usedBytes":%d,"totalBytes":100}]}`, g.used)
	}
}

// testMetrics are the source's metrics and its series of the shared ones.
type testMetrics struct {
	*Metrics
	factsourcetest.Gauges
}

// probes is how many probes ended with result.
func (m *testMetrics) probes(result string) float64 {
	return testutil.ToFloat64(m.Counter("vmobs_guest_probes_total", result))
}

// inFlight is how many probes run now.
func (m *testMetrics) inFlight() float64 {
	return testutil.ToFloat64(m.Gauge("vmobs_guest_probes_in_flight"))
}

// harness runs a Source against a fakeVirtAPI on a clock the test moves.
type harness struct {
	t       *testing.T
	api     *fakeVirtAPI
	s       *Source
	client  *Client
	n       *factsourcetest.Recorder
	m       *testMetrics
	mu      sync.Mutex
	clock   time.Time
	targets []factsource.Target
}

func key(name string) types.NamespacedName { return types.NamespacedName{Namespace: "ns", Name: name} }

func target(name string) factsource.Target {
	return factsource.Target{Key: key(name), UID: types.UID("uid-" + name)}
}

func newHarness(t *testing.T, cfg Config, names ...string) *harness {
	t.Helper()
	h := &harness{t: t, api: &fakeVirtAPI{guests: map[string]*guest{}, release: make(chan struct{})}, n: &factsourcetest.Recorder{}, m: &testMetrics{Metrics: NewMetrics(), Gauges: factsourcetest.NewGauges()}, clock: t0}
	h.api.clock = h.now
	for _, name := range names {
		h.api.guests[name] = &guest{used: 42}
		h.targets = append(h.targets, target(name))
	}
	srv := httptest.NewServer(h.api)
	t.Cleanup(srv.Close)
	if cfg.Interval == 0 {
		cfg.Interval = 5 * time.Minute
	}
	if cfg.QPS == 0 {
		cfg.QPS = 1000
	}
	if cfg.Timeout == 0 {
		// Only a hang reaches it: a probe on a loaded machine running the
		// tests with -race must not.
		cfg.Timeout = time.Minute
	}
	c := newTestClient(t, srv.URL, cfg.Timeout)
	h.client = c
	h.s = NewSource(cfg, c, h.m.Metrics, factsource.Deps{
		Targets: h.getTargets, Notify: h.n.Notify, Now: h.now, Log: logr.Discard(),
		Available: h.m.Available, LastSuccess: h.m.LastSuccess,
	})
	for range h.s.cfg.Workers {
		go h.s.worker(t.Context())
	}
	// The first step only sees the targets: none is due yet.
	h.step()
	return h
}

func (h *harness) now() time.Time { h.mu.Lock(); defer h.mu.Unlock(); return h.clock }

func (h *harness) advance(d time.Duration) { h.mu.Lock(); h.clock = h.clock.Add(d); h.mu.Unlock() }

func (h *harness) getTargets() []factsource.Target {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.targets)
}

func (h *harness) setTargets(ts ...factsource.Target) { h.mu.Lock(); h.targets = ts; h.mu.Unlock() }

// hangFrom makes a call that gets no answer time out after d from now on:
// a test of calls that hang sets it once its healthy rounds are done, so
// that nothing before them had to answer in d however loaded the machine.
// The workers are idle between steps, and the next step's work reaches
// them after this write.
func (h *harness) hangFrom(d time.Duration) { h.client.Timeout = d }

// step runs one step of the schedule and waits for its probes.
func (h *harness) step() {
	h.s.step(h.t.Context())
	h.s.running.Wait()
}

// round moves the clock by an interval, so every VM is due once, and
// runs a step.
func (h *harness) round() {
	h.advance(h.s.cfg.Interval)
	h.step()
}

func (h *harness) facts(name string) *vmifacts.GuestFacts { return h.s.Facts(key(name)) }

// mustFacts is the VM's facts, failing the test when it has none.
func (h *harness) mustFacts(name string) *vmifacts.GuestFacts {
	h.t.Helper()
	f := h.facts(name)
	if f == nil {
		h.t.Fatalf("%s has no facts", name)
	}
	return f
}

func names(keys []types.NamespacedName) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k.Name
	}
	slices.Sort(out)
	return out
}

func TestSourceNotifiesOnlyChanges(t *testing.T) {
	h := newHarness(t, Config{}, "vm1", "vm2", "vm3")
	if got := h.n.Take(); len(got) != 0 || len(h.api.take()) != 0 {
		t.Fatalf("probed or notified before any slot: %v", got)
	}
	h.round()
	if got := names(h.n.Take()); !slices.Equal(got, []string{"vm1", "vm2", "vm3"}) {
		t.Fatalf("first round notified %v", got)
	}
	if got := len(h.api.take()); got != 9 {
		t.Fatalf("first round made %d requests, want 3 per VM", got)
	}
	f := h.facts("vm1")
	if f == nil || !f.Answered || f.Hostname != "vm1" || f.OSName != "Fedora Linux 40" || f.Users != 1 || !f.UsersKnown ||
		len(f.Filesystems) != 1 || f.Filesystems[0].UsedPercent != 40 || f.VMIUID != "uid-vm1" || f.ProbedAt.IsZero() {
		t.Fatalf("facts %+v", f)
	}
	first := *f
	for i := range 50 {
		h.round()
		if got := h.n.Take(); len(got) != 0 {
			t.Fatalf("unchanged round %d notified %v", i, got)
		}
	}
	if f := h.facts("vm1"); !identical(&first, f) {
		t.Fatalf("facts moved: %+v → %+v", first, f)
	}
	if got := h.m.probes("ok"); got != 51*3 {
		t.Errorf("ok probes %v, want %d", got, 51*3)
	}
	h.api.setGuest("vm2", guest{used: 91})
	h.round()
	if got := names(h.n.Take()); !slices.Equal(got, []string{"vm2"}) {
		t.Fatalf("a filling filesystem notified %v", got)
	}
	if f := h.mustFacts("vm2"); len(f.Filesystems) != 1 || f.Filesystems[0].UsedPercent != 90 {
		t.Fatalf("facts %+v", f)
	}
}

func TestSourceSlowAndHostileGuests(t *testing.T) {
	// The timeout is the hung guest's wait; the others must answer within
	// it on a loaded machine too.
	h := newHarness(t, Config{Workers: 1, Options: factsource.Options{Timeout: 5 * time.Second}}, "vm1", "hung", "huge", "bad", "gone", "nousers")
	h.api.setGuest("hung", guest{mode: "hang"})
	h.api.setGuest("huge", guest{mode: "huge"})
	h.api.setGuest("bad", guest{mode: "bad"})
	h.api.setGuest("gone", guest{mode: "gone"})
	h.api.setGuest("nousers", guest{mode: "nousers", used: 10})
	start := time.Now()
	h.round()
	// One worker, one guest that never answers: the worker is freed at
	// the call's timeout and the others are probed.
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("a round took %s", d)
	}
	for _, tc := range []struct {
		name, lastError string
		failures        int32
	}{
		{"vm1", "", 0},
		{"hung", "guestosinfo did not answer within 5s", 1},
		{"huge", "filesystemlist: answer over 1 MiB", 1},
		{"bad", "guestosinfo: the answer is not KubeVirt's JSON: unexpected end of JSON input", 1},
	} {
		f := h.facts(tc.name)
		if f == nil || f.Failures != tc.failures || f.LastError != tc.lastError {
			t.Errorf("%s: facts %+v, want %d failures, %q", tc.name, f, tc.failures, tc.lastError)
		}
	}
	if f := h.facts("gone"); f != nil {
		t.Errorf("a VMI whose agent virt-api does not see connected has facts %+v", f)
	}
	if f := h.facts("nousers"); f == nil || f.Failures != 0 || f.UsersKnown || len(f.Filesystems) != 1 {
		t.Errorf("an agent without guest-get-users: %+v", f)
	}
	if got := h.m.inFlight(); got != 0 {
		t.Errorf("in flight %v after the round", got)
	}
	if got := testutil.ToFloat64(h.m.Counter("vmobs_guest_probe_requests_total", SubFilesystemList, string(KindBadAnswer))); got != 1 {
		t.Errorf("bad answers of filesystemlist %v", got)
	}
}

func TestSourceOutage(t *testing.T) {
	for _, tc := range []struct {
		mode, retryAfter, why string
		wait                  time.Duration
	}{
		{"503", "", "virt-api's subresource API is unavailable", 0},
		{"429", "30", "the API server throttles the controller's guest agent probes", 30 * time.Second},
		{"403", "", "the controller may not read virtualmachineinstances/guestosinfo, userlist and filesystemlist in subresources.kubevirt.io (RBAC)", 0},
		{"404", "", "the API server does not serve subresources.kubevirt.io/v1: is KubeVirt's virt-api installed?", 0},
		// Every guest failing alike is virt-api's or virt-handler's failure.
		{"500", "", "guest agent probes fail alike across the fleet: virt-api or virt-handler fails", 0},
		{"hang", "", "guest agent probes time out across the fleet: virt-api or virt-handler does not answer", 0},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			vms := make([]string, 10)
			for i := range vms {
				vms[i] = fmt.Sprintf("vm%02d", i)
			}
			h := newHarness(t, Config{Workers: 2}, vms...)
			h.round()
			h.n.Take()
			// The calls' timeout is the outage of "hang".
			h.hangFrom(100 * time.Millisecond)
			h.api.mu.Lock()
			h.api.mode, h.api.retryAfter = tc.mode, tc.retryAfter
			h.api.mu.Unlock()

			h.round()
			if got := h.n.Take(); len(got) != 0 && tc.mode != "500" && tc.mode != "hang" {
				t.Fatalf("the outage's first attempt notified %v", got)
			}
			// Backoff: one probe (the canary) per attempt, none before
			// the backoff (or the server's Retry-After) has passed.
			for attempt := 2; attempt <= Defaults.UnavailableAfter; attempt++ {
				h.api.take()
				if tc.wait > 0 {
					h.advance(tc.wait - time.Second)
					h.step()
					if got := h.api.take(); len(got) != 0 {
						t.Fatalf("probed %v before Retry-After", got)
					}
				}
				h.advance(time.Duration(1<<attempt) * time.Second)
				h.step()
				if got := h.api.take(); len(got) != 1 {
					t.Fatalf("attempt %d sent %v, want one canary", attempt, got)
				}
			}
			if got := names(h.n.Take()); len(got) != len(vms) {
				t.Fatalf("the outage notified %v, want every VM", got)
			}
			for _, vm := range vms {
				if f := h.facts(vm); f == nil || f.Unavailable != tc.why || f.Failures != 0 || f.Answered || f.VMIUID != types.UID("uid-"+vm) {
					t.Fatalf("%s in the outage: %+v", vm, f)
				}
			}
			if got := testutil.ToFloat64(h.m.Available); got != 0 {
				t.Errorf("vmobs_fact_source_available{source=\"guest_probe\"} = %v", got)
			}
			// A lasting outage changes nothing more.
			for range 3 {
				h.round()
			}
			if got := h.n.Take(); len(got) != 0 {
				t.Fatalf("a lasting outage notified %v", got)
			}
			// A VM that starts during the outage says so too.
			h.api.setGuest("late", guest{used: 42})
			h.setTargets(append(h.getTargets(), target("late"))...)
			h.advance(h.s.refreshRate)
			h.step()
			if got := names(h.n.Take()); !slices.Equal(got, []string{"late"}) || h.mustFacts("late").Unavailable != tc.why {
				t.Fatalf("a new VM in the outage: notified %v, facts %+v", got, h.facts("late"))
			}

			h.set("")
			h.round() // the canary answers: probing resumes
			if got := names(h.n.Take()); len(got) != len(vms)+1 {
				t.Fatalf("the recovery notified %v, want every VM", got)
			}
			h.round()
			for _, vm := range vms {
				if f := h.facts(vm); f == nil || f.Unavailable != "" || f.Failures != 0 || !f.Answered {
					t.Fatalf("%s after the recovery: %+v (no failure may be charged to an agent)", vm, f)
				}
			}
			if got := testutil.ToFloat64(h.m.Available); got != 1 {
				t.Errorf("vmobs_fact_source_available{source=\"guest_probe\"} = %v after the recovery", got)
			}
			if got, want := testutil.ToFloat64(h.m.LastSuccess), float64(h.now().Unix()); got != want {
				t.Errorf("last success %v, want the recovery's probe at %v", got, want)
			}
		})
	}
}

func (h *harness) set(mode string) { h.api.set(mode) }

// A short outage — fewer attempts than UnavailableAfter — keeps the facts:
// no write wave across the fleet for a blip.
func TestSourceShortOutageKeepsTheFacts(t *testing.T) {
	h := newHarness(t, Config{}, "vm1", "vm2")
	h.round()
	h.n.Take()
	before := *h.mustFacts("vm1")
	h.set("503")
	h.round()
	h.set("")
	h.advance(2 * time.Second)
	h.step()
	h.round()
	if got := h.n.Take(); len(got) != 0 || !identical(&before, h.facts("vm1")) {
		t.Fatalf("a blip notified %v, facts %+v", got, h.facts("vm1"))
	}
}

func TestSourceFewFailingAgentsAreCharged(t *testing.T) {
	// Four of ten agents failing is not the fleet: each is charged.
	vms := make([]string, 10)
	for i := range vms {
		vms[i] = fmt.Sprintf("vm%02d", i)
	}
	h := newHarness(t, Config{}, vms...)
	for _, vm := range vms[:fleetMinFailures-1] {
		h.api.setGuest(vm, guest{mode: "500"})
	}
	for range 3 {
		h.round()
	}
	for i, vm := range vms {
		f := h.facts(vm)
		want := int32(0)
		if i < fleetMinFailures-1 {
			want = 3
		}
		if f == nil || f.Failures != want || f.Unavailable != "" {
			t.Fatalf("%s: %+v, want %d failures", vm, f, want)
		}
	}
}

func TestSourceRecreatedVMI(t *testing.T) {
	h := newHarness(t, Config{}, "vm1")
	h.api.setGuest("vm1", guest{used: 95})
	h.round()
	h.api.setGuest("vm1", guest{mode: "500"})
	h.round()
	h.n.Take()
	if f := h.mustFacts("vm1"); f.Failures != 1 || len(f.Filesystems) != 1 || f.Filesystems[0].UsedPercent != 95 {
		t.Fatalf("facts %+v", f)
	}
	// The VMI is recreated under the same name: its facts go at once.
	h.setTargets(factsource.Target{Key: key("vm1"), UID: "uid-vm1-new"})
	h.advance(h.s.refreshRate)
	h.step()
	if got := names(h.n.Take()); !slices.Equal(got, []string{"vm1"}) || h.facts("vm1") != nil {
		t.Fatalf("recreated: notified %v, facts %+v", got, h.facts("vm1"))
	}
	h.api.setGuest("vm1", guest{used: 50})
	h.round()
	h.n.Take()
	f := h.facts("vm1")
	if f == nil || f.VMIUID != "uid-vm1-new" || f.Failures != 0 || len(f.Filesystems) != 1 || f.Filesystems[0].UsedPercent != 50 || !f.Filesystems[0].Since.Equal(h.now()) {
		t.Fatalf("the new VMI's facts %+v", f)
	}
	// It leaves the targets (stopped, or its agent disconnected).
	h.setTargets()
	h.advance(h.s.refreshRate)
	h.step()
	if got := names(h.n.Take()); !slices.Equal(got, []string{"vm1"}) || h.facts("vm1") != nil {
		t.Fatalf("gone: notified %v, facts %+v", got, h.facts("vm1"))
	}
}

func TestSourceHonoursQPS(t *testing.T) {
	const qps = 20
	vms := make([]string, 200)
	for i := range vms {
		vms[i] = fmt.Sprintf("vm%03d", i)
	}
	h := newHarness(t, Config{QPS: qps, Workers: 8}, vms...)
	h.advance(h.s.cfg.Interval)
	h.api.take()
	start := time.Now()
	done := make(chan struct{})
	go func() {
		// The step is cut short by the test's end.
		h.step()
		close(done)
	}()
	probes := func() []time.Time {
		h.api.mu.Lock()
		defer h.api.mu.Unlock()
		var out []time.Time
		for i, r := range h.api.requests {
			if strings.HasSuffix(r, "/"+SubGuestOSInfo) {
				out = append(out, h.api.times[i])
			}
		}
		return out
	}
	// A token bucket of qps with a burst of qps holds qps probes at the
	// start and adds qps a second: the 3×qps-th probe cannot start before
	// two seconds have passed, however fast the machine (a slow one only
	// makes it later), and the round's 200 probes take nine.
	waitFor(t, "3×qps probes", func() bool { return len(probes()) >= 3*qps })
	if at := probes()[3*qps-1].Sub(start); at < 2*time.Second-50*time.Millisecond {
		t.Fatalf("probe %d started %s after the round at --guest-probe-qps %d, want at least 2s", 3*qps, at, qps)
	}
	select {
	case <-done:
		if took := time.Since(start); took < 9*time.Second-50*time.Millisecond {
			t.Fatalf("200 probes at %d per second finished in %s", qps, took)
		}
	default:
	}
}

func TestSlotsSpreadOverTheInterval(t *testing.T) {
	const interval, n, buckets = 5 * time.Minute, 2000, 10
	for _, uids := range []struct {
		name string
		uid  func(i int) types.UID
	}{
		{"UUIDs", func(i int) types.UID {
			return types.UID(fmt.Sprintf("%08x-%04x-4%03x-a%03x-%012x", i*2654435761%(1<<32), i%65536, i%4096, (i*7)%4096, i*1000003))
		}},
		{"sequential names", func(i int) types.UID { return types.UID(fmt.Sprintf("uid-%d", i)) }},
	} {
		t.Run(uids.name, func(t *testing.T) {
			var count [buckets]int
			for i := range n {
				slot := slotOf(uids.uid(i), interval)
				if slot < 0 || slot >= interval {
					t.Fatalf("slot %s outside the interval", slot)
				}
				count[slot*buckets/interval]++
				next := nextSlot(t0.Add(time.Duration(i)*time.Second), interval, slot)
				if !next.After(t0.Add(time.Duration(i)*time.Second)) || next.Sub(t0.Add(time.Duration(i)*time.Second)) > interval ||
					(next.UnixNano()-int64(slot))%int64(interval) != 0 {
					t.Fatalf("nextSlot %s for slot %s", next, slot)
				}
			}
			for i, c := range count {
				if c < n/buckets*7/10 || c > n/buckets*13/10 {
					t.Fatalf("tenth %d of the interval holds %d of %d slots: %v", i, c, n, count)
				}
			}
		})
	}
}
