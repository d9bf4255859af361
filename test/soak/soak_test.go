// Package soak plays the everyday life of a fleet (simulator.Everyday) on
// the test control plane, with the real controller in-process and a real
// Prometheus scraping the simulated virt-handlers, and asserts that vmobs
// raised no alarm: no layer of any VMObservation turned Degraded, Failed or
// Unknown and no Warning Event was recorded, for VMs that lived through
// normal operations only. `make soak` runs it and writes
// bin/soak-results.json (docs/soak.md).
package soak

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/app"
	"github.com/vmobs/vmobs/internal/domainstats"
	"github.com/vmobs/vmobs/internal/factsource"
	"github.com/vmobs/vmobs/internal/guestprobe"
	"github.com/vmobs/vmobs/internal/simulator"
	"github.com/vmobs/vmobs/internal/testenv"
	"github.com/vmobs/vmobs/internal/verdict"
)

var (
	flagDuration = flag.Duration("soak.duration", 0, "simulated time the fleet lives (at least 10m); 0 skips the soak (make soak sets it)")
	flagVMs      = flag.Int("soak.vms", 50, "number of VMs (at least 24)")
	flagNodes    = flag.Int("soak.nodes", 6, "number of nodes (at least 3; the last is drained)")
	flagFactor   = flag.Float64("soak.factor", 1, "acceleration: simulated seconds per wall-clock second; every policy duration, the domain-stats and guest-probe intervals, the scrape interval and every simulator timer are divided by it")
	flagSeed     = flag.Int64("soak.seed", 1, "seed of the simulator and of the life's timings")
	flagOut      = flag.String("soak.out", "", "where to write the JSON results (default: the test's temporary directory)")
	flagLog      = flag.Bool("soak.log", false, "print the manager's log")
)

// namespace is where the fleet lives.
const namespace = "soak"

// alarm is one false alarm: a layer's transition to Degraded, Failed or
// Unknown, or a Warning Event.
type alarm struct {
	VM      string  `json:"vm"`
	Layer   string  `json:"layer"`
	Verdict string  `json:"verdict"`
	Reason  string  `json:"reason"`
	Message string  `json:"message"`
	At      string  `json:"time"`
	AtSec   float64 `json:"at_seconds"` // simulated seconds since the life began
	// LastedSec is how long (simulated seconds) the layer stayed in the
	// alarm's verdict and reason; -1 when it still was at the end.
	LastedSec float64 `json:"lasted_seconds"`
}

// results is bin/soak-results.json.
type results struct {
	VMs                int            `json:"vms"`
	Nodes              int            `json:"nodes"`
	Seconds            float64        `json:"seconds"`
	WallSeconds        float64        `json:"wall_seconds"`
	Factor             float64        `json:"acceleration_factor"`
	Seed               int64          `json:"seed"`
	Transitions        int            `json:"transitions"`
	StatusWrites       int            `json:"status_writes"`
	Operations         map[string]int `json:"operations"`
	FalseAlarmCount    int            `json:"false_alarm_count"`
	FalseAlarmsReasons map[string]int `json:"false_alarms_by_reason"`
	FalseAlarms        []alarm        `json:"false_alarms"`
	Errors             []string       `json:"errors,omitempty"`
}

// scaledPolicy is DefaultPolicy with every duration divided by factor, so
// that every rule sees the same accelerated time.
func scaledPolicy(factor float64) verdict.Policy {
	p := verdict.DefaultPolicy()
	v := reflect.ValueOf(&p).Elem()
	dur := reflect.TypeFor[time.Duration]()
	for i := range v.NumField() {
		if f := v.Field(i); f.Type() == dur {
			f.SetInt(int64(float64(f.Int()) / factor))
		}
	}
	return p
}

func TestSoak(t *testing.T) {
	if *flagDuration == 0 {
		t.Skip("the soak runs with -soak.duration (make soak)")
	}
	if err := testenv.CheckAssets(); err != nil {
		t.Fatal(err)
	}
	factor := *flagFactor
	scale := func(d time.Duration) time.Duration { return time.Duration(float64(d) / factor) }
	logw := testenv.LockedBuffer{}
	ctrl.SetLogger(zap.New(zap.WriteTo(&logw)))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	env, k8s := testenv.StartForTest(t, testenv.Options{
		Aggregation: true,
		// The storage life's claims are bound by the PV binder and
		// attached by the attach-detach controller, Kubernetes' own;
		// its DataVolumes need CDI's CRD.
		ControllerManager: true, CDI: true,
	})
	sim := simulator.New(k8s, simulator.WithSeed(*flagSeed))
	virtAPI, err := sim.ServeVirtAPI(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = virtAPI.Close() }()

	var nodes []string
	for i := range *flagNodes {
		nodes = append(nodes, fmt.Sprintf("worker-%d", i+1))
	}
	// virt-handler's metrics, scraped by a real Prometheus every 30 s
	// (KubeVirt's ServiceMonitor), one target per node.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: sim.VirtHandlerMetrics(), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer func() { _ = srv.Close() }()
	job := testenv.ScrapeJob{Name: simulator.VirtHandlerJob, HonorLabels: simulator.VirtHandlerHonorLabels}
	for _, tg := range simulator.VirtHandlerTargets(ln.Addr().String(), nodes...) {
		job.Targets = append(job.Targets, testenv.ScrapeTarget{Address: tg.Address, MetricsPath: tg.MetricsPath, Labels: tg.Labels})
	}
	prom, err := testenv.StartPrometheus(testenv.PrometheusOptions{ScrapeInterval: scale(simulator.VirtHandlerScrapeEvery), Jobs: []testenv.ScrapeJob{job}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = prom.Stop() }()

	// The manager as it ships, every duration accelerated alike.
	counter := testenv.NewRequestCounter()
	opts := app.InProcessOptions()
	opts.Policy = scaledPolicy(factor)
	opts.PrometheusURL = prom.URL
	// The rate window's default (twice the interval, at least 2 minutes)
	// is scaled too.
	opts.DomainStats = domainstats.Config{Options: factsource.Options{Interval: scale(domainstats.Defaults.Interval), Timeout: scale(domainstats.Defaults.Timeout)}, Window: scale(2 * time.Minute)}
	opts.GuestProbe = guestprobe.Config{Options: factsource.Options{Interval: scale(guestprobe.Defaults.Interval), Timeout: scale(guestprobe.Defaults.Timeout)}, QPS: guestprobe.DefaultQPS * factor, Workers: guestprobe.DefaultWorkers}
	mgr, err := app.StartInProcess(ctx, counter.Wrap(env.Config), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = mgr.Stop() }()

	rec, err := record(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	life := &simulator.Everyday{
		Sim: sim, Namespace: namespace, VMs: *flagVMs, Nodes: nodes,
		Factor: factor, Duration: *flagDuration, Seed: *flagSeed, Storage: true,
		Note: func(format string, a ...any) { t.Logf("+%s "+format, append([]any{rec.since()}, a...)...) },
	}
	rec.begin(factor)
	rep, err := life.Play(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The controller's last reconciles of what the life wrote.
	time.Sleep(2 * time.Second)
	rec.stop()

	res := results{
		VMs: *flagVMs, Nodes: len(nodes), Factor: factor, Seed: *flagSeed,
		Seconds: rep.Wall.Seconds() * factor, WallSeconds: rep.Wall.Seconds(),
		Operations: rep.Operations, Errors: rep.Errors,
		StatusWrites:       counter.Get("apply vmobservations/status"),
		FalseAlarmsReasons: map[string]int{},
	}
	res.Transitions, res.FalseAlarms = rec.result()
	warnings, err := warningEvents(ctx, k8s, rec)
	if err != nil {
		t.Fatal(err)
	}
	res.FalseAlarms = append(res.FalseAlarms, warnings...)
	sort.SliceStable(res.FalseAlarms, func(i, j int) bool { return res.FalseAlarms[i].AtSec < res.FalseAlarms[j].AtSec })
	res.FalseAlarmCount = len(res.FalseAlarms)
	for _, a := range res.FalseAlarms {
		res.FalseAlarmsReasons[a.Layer+"/"+a.Verdict+"/"+a.Reason]++
	}
	out := *flagOut
	if out == "" {
		out = filepath.Join(t.TempDir(), "soak-results.json")
	}
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("soak: %d VMs on %d nodes, %.0f s simulated (factor %g) in %.0f s; %d transitions, %d status writes; %d false alarms %v; results in %s",
		res.VMs, res.Nodes, res.Seconds, factor, res.WallSeconds, res.Transitions, res.StatusWrites, res.FalseAlarmCount, res.FalseAlarmsReasons, out)
	if *flagLog {
		t.Log(logw.String())
	}

	for _, e := range res.Errors {
		t.Errorf("the simulator failed a step: %s", e)
	}
	for _, op := range life.Operations() {
		if res.Operations[op] == 0 {
			t.Errorf("operation %s was never completed", op)
		}
	}
	for _, a := range res.FalseAlarms {
		t.Errorf("false alarm at +%.0fs (lasted %.0fs): %s %s %s/%s: %s", a.AtSec, a.LastedSec, a.VM, a.Layer, a.Verdict, a.Reason, a.Message)
	}
}

// recorder watches the VMObservations of the fleet and keeps every layer
// transition.
type recorder struct {
	mu          sync.Mutex
	start       time.Time
	factor      float64
	last        map[string]map[string]string // VM → layer → verdict/reason
	open        map[string]int               // VM/layer → its alarm in alarms, while it lasts
	transitions int
	alarms      []alarm
	stopWatch   func()
	done        chan struct{}
}

func record(ctx context.Context, env *testenv.Env) (*recorder, error) {
	wc, err := env.Client()
	if err != nil {
		return nil, err
	}
	w, err := wc.Watch(ctx, &v1alpha1.VMObservationList{}, client.InNamespace(namespace))
	if err != nil {
		return nil, err
	}
	r := &recorder{start: time.Now(), factor: 1, last: map[string]map[string]string{}, open: map[string]int{}, stopWatch: w.Stop, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for ev := range w.ResultChan() {
			if o, ok := ev.Object.(*v1alpha1.VMObservation); ok {
				r.observe(o)
			}
		}
	}()
	return r, nil
}

func (r *recorder) begin(factor float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.start, r.factor = time.Now(), factor
}

// at is t in simulated seconds since the life began.
func (r *recorder) at(t time.Time) float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return t.Sub(r.start).Seconds() * r.factor
}

func (r *recorder) since() time.Duration {
	return time.Duration(r.at(time.Now()) * float64(time.Second)).Round(time.Second)
}

// observe counts the layers that changed verdict or reason (a layer's
// first verdict is not a transition), and keeps those that turned, or
// started, Degraded, Failed or Unknown.
func (r *recorder) observe(o *v1alpha1.VMObservation) {
	if o.Status.Layers == nil {
		return
	}
	now := time.Now()
	at := r.at(now)
	r.mu.Lock()
	defer r.mu.Unlock()
	prev := r.last[o.Name]
	if prev == nil {
		prev = map[string]string{}
		r.last[o.Name] = prev
	}
	for name, l := range o.Status.Layers.All() {
		if l == nil {
			continue
		}
		cur := string(l.Verdict) + "/" + l.Reason
		was, seen := prev[name]
		if was == cur {
			continue
		}
		prev[name] = cur
		if seen {
			r.transitions++
		}
		k := o.Name + "/" + name
		if i, ok := r.open[k]; ok {
			r.alarms[i].LastedSec = at - r.alarms[i].AtSec
			delete(r.open, k)
		}
		switch l.Verdict {
		case v1alpha1.VerdictDegraded, v1alpha1.VerdictFailed, v1alpha1.VerdictUnknown:
			r.open[k] = len(r.alarms)
			r.alarms = append(r.alarms, alarm{
				VM: o.Name, Layer: name, Verdict: string(l.Verdict), Reason: l.Reason, Message: l.Message,
				At: now.UTC().Format(time.RFC3339), AtSec: at, LastedSec: -1,
			})
		}
	}
}

func (r *recorder) stop() {
	r.stopWatch()
	<-r.done
}

func (r *recorder) result() (int, []alarm) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.transitions, append([]alarm(nil), r.alarms...)
}

// warningEvents are the Warning Events vmobs recorded about the fleet's
// VMObservations.
func warningEvents(ctx context.Context, c client.Client, r *recorder) ([]alarm, error) {
	var evs corev1.EventList
	if err := c.List(ctx, &evs, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	var out []alarm
	for _, e := range evs.Items {
		if e.Type != corev1.EventTypeWarning || e.InvolvedObject.Kind != "VMObservation" {
			continue
		}
		t := e.LastTimestamp.Time
		if t.IsZero() {
			t = e.EventTime.Time
		}
		out = append(out, alarm{
			VM: e.InvolvedObject.Name, Layer: "event", Verdict: "Warning", Reason: e.Reason, Message: e.Message,
			At: t.UTC().Format(time.RFC3339), AtSec: r.at(t), LastedSec: 0,
		})
	}
	return out, nil
}
