package scale

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	mrand "math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/scheme"
	"github.com/vmobs/vmobs/internal/simulator"
)

// The Event storm (issue: "an Event storm, 1,000 events/s for a minute,
// neither grows memory without bound nor delays verdicts of other VMs past
// the latency target"). It runs in the child manager of one memory point
// (-scale.storm-at, the largest by default), after that point's figures
// are read: first a latency window with no storm (the pod flips of the
// latency phase, on half the VMs), then the same window with the storm
// going on against the other half, then the heap settles, and then the
// storm's Events are deleted, as the API server's event TTL would, and the
// heap is read once more.
//
// Each storm event is a new Warning Event (its own name), the worst case
// for the manager's Event cache: client-go's recorder folds repeats of one
// event into count updates of one object, and its spam filter holds a
// source and object to a burst of 25 and then one every 5 minutes, so a
// real storm of new objects comes from many objects or from a writer that
// bypasses the recorder. hotShare of the events go to a few hot VMs
// (stormHot), the rest to any VM of the storm's half, each to the VM's
// launcher pod, claim, DataVolume or VMI in turn, with the reasons and
// components that write such events.

// stormLabel marks the storm's Events, so that they can be deleted after.
const stormLabel = "scale.vmobs.io/storm"

const (
	stormHot      = 10
	stormHotShare = 0.8
	stormWriters  = 32
)

// stormResult is the storm's figures (results.Storm).
type stormResult struct {
	VMs          int     `json:"vms"`
	RateAsked    float64 `json:"rate_asked_per_second"`
	Seconds      float64 `json:"seconds"`
	Events       int64   `json:"events_written"`
	EventsPerSec float64 `json:"events_per_second"`
	WriteErrors  int64   `json:"write_errors"`
	// Behind counts the events the writers could not send on time (the
	// API server took them slower than asked); they were not sent.
	Behind     int64   `json:"events_behind"`
	HotObjects int     `json:"hot_vms"`
	HotShare   float64 `json:"hot_share"`
	StormVMs   int     `json:"storm_vms"`
	OtherVMs   int     `json:"other_vms"`

	// The child's live heap after a forced collection: before the storm,
	// right after it, after the settle window, and after the storm's
	// Events were deleted; the largest heap in use sampled during it.
	HeapBefore        uint64 `json:"heap_live_before_bytes"`
	HeapAfter         uint64 `json:"heap_live_after_bytes"`
	HeapSettled       uint64 `json:"heap_live_settled_bytes"`
	HeapAfterDelete   uint64 `json:"heap_live_after_events_deleted_bytes"`
	HeapInuseMaxStorm uint64 `json:"heap_inuse_max_during_storm_bytes"`
	// HeapGrowth is HeapSettled minus HeapBefore; per event written.
	HeapGrowth         int64   `json:"heap_growth_bytes"`
	HeapGrowthPerEvent float64 `json:"heap_growth_bytes_per_event"`
	// HeapSamples is the live heap (as of the child's last collection)
	// every 5 s during the storm: flat or growing.
	HeapSamples []uint64 `json:"heap_live_samples_bytes"`
	// CachedEvents is what the child's Event store held before, after the
	// storm and after the deletion.
	CachedEventsBefore int `json:"cached_events_before"`
	CachedEventsAfter  int `json:"cached_events_after"`
	CachedEventsGone   int `json:"cached_events_after_delete"`
	// CachedEventBytesAfter is what the Event store's events and their
	// map slots cost right after the storm (cacheSizes): the store's own
	// share of the heap's growth, which also holds what the latency
	// windows' changes left.
	CachedEventBytesAfter int64 `json:"cached_event_bytes_after"`
	// ChildCPUSeconds is the child's CPU (user and system) over the storm
	// window.
	ChildCPUSeconds float64 `json:"child_cpu_seconds"`

	// Latency of the other VMs' changes (the latency phase's pod flips at
	// -scale.rate), without the storm and during it.
	Baseline stormLatency `json:"latency_without_storm"`
	During   stormLatency `json:"latency_during_storm"`
	// P99Ratio is During's p99 over Baseline's.
	P99Ratio float64 `json:"latency_p99_ratio"`
}

type stormLatency struct {
	Changes     int     `json:"changes"`
	Missed      int     `json:"missed"`
	P50         float64 `json:"p50_ms"`
	P99         float64 `json:"p99_ms"`
	WatchP99    float64 `json:"watch_p99_ms"`
	EventP99    float64 `json:"p99_judged_at_event_ms"`
	DeadlineP99 float64 `json:"p99_judged_at_deadline_ms"`
}

func stormLatencyOf(l *latencyResult) stormLatency {
	atEvent, atDeadline := l.byCause()
	return stormLatency{
		Changes: l.Changes, Missed: l.Missed,
		P50: percentile(l.Status, 50), P99: percentile(l.Status, 99), WatchP99: percentile(l.Watch, 99),
		EventP99: percentile(atEvent, 99), DeadlineP99: percentile(atDeadline, 99),
	}
}

// stormTarget is one object a storm event is about.
type stormTarget struct {
	kind, apiVersion, name string
	uid                    string
	reason, component      string
	host                   string
	message                string
}

// stormTargets are the four objects of each VM a storm writes about, with
// the Warning each typically gets.
func stormTargets(v vmRef, pod *corev1.Pod) []stormTarget {
	claim := simulator.RootDataVolume(v.name)
	out := []stormTarget{
		{kind: "PersistentVolumeClaim", apiVersion: "v1", name: claim, reason: "ProvisioningFailed", component: "csi.simulator.vmobs.io_csi-provisioner-0",
			message: "failed to provision volume with StorageClass \"sim-immediate\": rpc error: code = ResourceExhausted desc = the storage backend is busy provisioning other volumes, retry later"},
		{kind: "DataVolume", apiVersion: "cdi.kubevirt.io/v1beta1", name: claim, reason: simulator.ImportError, component: "datavolume-import-controller",
			message: "Unable to connect to http data source: Get \"" + simulator.DataVolumeImportURL + "\": dial tcp: i/o timeout"},
		{kind: "VirtualMachineInstance", apiVersion: kubevirtv1.SchemeGroupVersion.String(), name: v.name, reason: "SyncFailed", component: "virt-handler", host: v.node,
			message: "server error. command SyncVMI failed: \"LibvirtError(Code=1, Domain=10, Message='internal error: Failed to connect socket to '/var/run/libvirt/virtqemud-sock': Connection refused')\""},
	}
	if pod != nil {
		out = append(out, stormTarget{kind: "Pod", apiVersion: "v1", name: pod.Name, uid: string(pod.UID), reason: "FailedMount", component: "kubelet", host: pod.Spec.NodeName,
			message: "MountVolume.MountDevice failed for volume \"pvc-" + claim + "\" : rpc error: code = Aborted desc = an operation with the given Volume ID already exists"})
	}
	return out
}

// storm runs the storm in child ch over the population's first vms VMs;
// before is the child's figures just read (its live heap and cache).
func (r *run) storm(ctx context.Context, t *testing.T, ch *child, vms int, before childStats) (*stormResult, error) {
	cfg := r.cfg
	res := &stormResult{VMs: vms, RateAsked: cfg.StormRate, HotShare: stormHotShare, HeapBefore: before.HeapAlloc}
	res.CachedEventsBefore = before.Cache["Event"].Objects
	all := r.w.vmList()[:vms]
	var stormVMs, others []vmRef
	for i, v := range all {
		if i%2 == 0 {
			stormVMs = append(stormVMs, v)
		} else {
			others = append(others, v)
		}
	}
	res.StormVMs, res.OtherVMs = len(stormVMs), len(others)
	res.HotObjects = min(stormHot, len(stormVMs))
	var pods corev1.PodList
	if err := r.c.List(ctx, &pods, client.MatchingLabels{kubevirtv1.AppLabel: "virt-launcher"}); err != nil {
		return nil, err
	}
	running := map[string]*corev1.Pod{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Status.Phase == corev1.PodRunning {
			running[p.Namespace+"/"+p.Annotations[kubevirtv1.DomainAnnotation]] = p
		}
	}
	type vmTargets struct {
		ns      string
		targets []stormTarget
	}
	targetsOf := func(v vmRef) vmTargets { return vmTargets{ns: v.ns, targets: stormTargets(v, running[v.key()])} }
	hot := make([]vmTargets, res.HotObjects)
	for i := range hot {
		hot[i] = targetsOf(stormVMs[i])
	}
	spread := make([]vmTargets, len(stormVMs))
	for i, v := range stormVMs {
		spread[i] = targetsOf(v)
	}

	measure := func() (*latencyResult, error) {
		baseline, _, err := expected(ctx, r.w.c, r.policy, time.Now(), isVMNamespace)
		if err != nil {
			return nil, err
		}
		l, err := latencyPhase(ctx, r.c, r.c, r.tr, others, baseline, cfg.Rate, cfg.Storm, r.policy.LagGrace)
		if err != nil {
			return nil, err
		}
		if _, err := r.tr.waitMatch(ctx, baseline, nil, cfg.Converge); err != nil {
			return nil, fmt.Errorf("after the latency window: %w", err)
		}
		return l, nil
	}
	r.res.LoadAvg["storm baseline"] = loadavg()
	l0, err := measure()
	if err != nil {
		return nil, fmt.Errorf("storm: the window without it: %w", err)
	}
	res.Baseline = stormLatencyOf(l0)

	// The storm's own client, exempt from client-side rate limits (and,
	// as an admin, from APF): it must not queue behind itself.
	sc := rest.CopyConfig(r.env.Config)
	sc.QPS, sc.Burst = -1, 0
	wc, err := client.New(sc, client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, err
	}
	if _, err := ch.ask("live"); err != nil { // resets the window maximum
		return nil, err
	}
	r.res.LoadAvg["storm"] = loadavg()
	cpu0 := cpuTicks(strconv.Itoa(ch.cmd.Process.Pid))
	sctx, stop := context.WithCancel(ctx)
	var (
		written, failed, behind atomic.Int64
		seq                     atomic.Int64
		writers                 sync.WaitGroup
	)
	tokens := make(chan struct{}, stormWriters)
	for range stormWriters {
		writers.Go(func() {
			rng := mrand.New(mrand.NewPCG(uint64(seq.Add(1)), 7))
			for range tokens {
				set := spread
				if rng.Float64() < stormHotShare && len(hot) > 0 {
					set = hot
				}
				vt := set[rng.IntN(len(set))]
				tg := vt.targets[rng.IntN(len(vt.targets))]
				n := seq.Add(1)
				if err := wc.Create(sctx, stormEvent(vt.ns, tg, n)); err != nil {
					if sctx.Err() == nil {
						failed.Add(1)
					}
					continue
				}
				written.Add(1)
			}
		})
	}
	var samples []uint64
	var sampling sync.WaitGroup
	sampling.Go(func() {
		tick := time.NewTicker(5 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-sctx.Done():
				return
			case <-tick.C:
			}
			if st, err := ch.ask("live"); err == nil {
				samples = append(samples, st.HeapLive)
				res.HeapInuseMaxStorm = max(res.HeapInuseMaxStorm, st.WindowMaxHeapInuse)
			}
		}
	})
	var lat *latencyResult
	var latErr error
	var latDone sync.WaitGroup
	latDone.Go(func() { lat, latErr = measure() })
	start := time.Now()
	period := time.Duration(float64(time.Second) / cfg.StormRate)
	for k := 0; ; k++ {
		at := start.Add(time.Duration(k) * period)
		if at.Sub(start) >= cfg.Storm {
			break
		}
		time.Sleep(time.Until(at))
		select {
		case tokens <- struct{}{}:
		default:
			behind.Add(1)
		}
	}
	close(tokens)
	writers.Wait()
	res.Seconds = time.Since(start).Seconds()
	stop()
	sampling.Wait()
	latDone.Wait()
	res.ChildCPUSeconds = float64(cpuTicks(strconv.Itoa(ch.cmd.Process.Pid))-cpu0) / 100
	res.Events, res.WriteErrors, res.Behind = written.Load(), failed.Load(), behind.Load()
	res.EventsPerSec = float64(res.Events) / res.Seconds
	res.HeapSamples = samples
	if latErr != nil {
		return res, fmt.Errorf("storm: the window during it: %w", latErr)
	}
	res.During = stormLatencyOf(lat)
	if res.Baseline.P99 > 0 {
		res.P99Ratio = res.During.P99 / res.Baseline.P99
	}
	if st, err := ch.ask("live"); err == nil {
		res.HeapInuseMaxStorm = max(res.HeapInuseMaxStorm, st.WindowMaxHeapInuse)
	}
	after, err := ch.ask("stats")
	if err != nil {
		return res, err
	}
	res.HeapAfter, res.CachedEventsAfter = after.HeapAlloc, after.Cache["Event"].Objects
	res.CachedEventBytesAfter = after.Cache["Event"].Bytes
	time.Sleep(cfg.Settle)
	settled, err := ch.ask("stats")
	if err != nil {
		return res, err
	}
	res.HeapSettled = settled.HeapAlloc
	res.HeapGrowth = int64(res.HeapSettled) - int64(res.HeapBefore)
	if res.Events > 0 {
		res.HeapGrowthPerEvent = float64(res.HeapGrowth) / float64(res.Events)
	}
	t.Logf("storm: %d Warning Events in %.1fs (%.0f/s asked %.0f, %d behind, %d failed) over %d VMs (%d hot); live heap %s → %s (settled %s), +%.0f B an event; cached events %d → %d (%d B); child CPU %.1fs",
		res.Events, res.Seconds, res.EventsPerSec, res.RateAsked, res.Behind, res.WriteErrors, res.StormVMs, res.HotObjects,
		mib(res.HeapBefore), mib(res.HeapAfter), mib(res.HeapSettled), res.HeapGrowthPerEvent, res.CachedEventsBefore, res.CachedEventsAfter,
		res.CachedEventBytesAfter, res.ChildCPUSeconds)
	t.Logf("storm: other VMs' latency without it p50 %.1f p99 %.1f ms (watch p99 %.1f), during it p50 %.1f p99 %.1f ms (watch p99 %.1f), %.2f×; %d and %d changes, %d missed",
		res.Baseline.P50, res.Baseline.P99, res.Baseline.WatchP99, res.During.P50, res.During.P99, res.During.WatchP99, res.P99Ratio,
		res.Baseline.Changes, res.During.Changes, res.During.Missed)
	if res.During.Missed > 0 {
		t.Errorf("storm: %d of %d changes of other VMs never showed in their VMObservation", res.During.Missed, res.During.Changes)
	}

	// The API server's event TTL deletes them in the end; here at once.
	for _, ns := range r.w.nsList() {
		if err := r.w.c.DeleteAllOf(ctx, &corev1.Event{}, client.InNamespace(ns), client.MatchingLabels{stormLabel: "true"}); err != nil {
			return res, fmt.Errorf("deleting the storm's events in %s: %w", ns, err)
		}
	}
	time.Sleep(cfg.Settle)
	gone, err := ch.ask("stats")
	if err != nil {
		return res, err
	}
	res.HeapAfterDelete, res.CachedEventsGone = gone.HeapAlloc, gone.Cache["Event"].Objects
	t.Logf("storm: its events deleted: live heap %s, cached events %d", mib(res.HeapAfterDelete), res.CachedEventsGone)
	return res, nil
}

// stormEvent is the n-th storm event, about tg in namespace ns.
func stormEvent(ns string, tg stormTarget, n int64) *corev1.Event {
	var b [8]byte
	_, _ = rand.Read(b[:])
	now := metav1.Now()
	return &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tg.name + "." + hex.EncodeToString(b[:]), Labels: map[string]string{stormLabel: "true"}},
		InvolvedObject: corev1.ObjectReference{
			Kind: tg.kind, APIVersion: tg.apiVersion, Namespace: ns, Name: tg.name, UID: types.UID(tg.uid),
		},
		Reason: tg.reason, Message: tg.message + " (attempt " + strconv.FormatInt(n, 10) + ")", Type: corev1.EventTypeWarning, Count: 1,
		FirstTimestamp: now, LastTimestamp: now,
		Source:              corev1.EventSource{Component: tg.component, Host: tg.host},
		ReportingController: tg.component, ReportingInstance: tg.host,
	}
}

// historyStats is what the VMObservations of the VMs' namespaces hold in
// status.history.
type historyStats struct {
	VMObservations int `json:"vmobservations"`
	WithHistory    int `json:"with_history"`
	Entries        int `json:"entries"`
	EntriesMax     int `json:"entries_max"`
	// Bytes are status.history's JSON, mean and largest.
	BytesMean float64 `json:"bytes_mean"`
	BytesMax  int     `json:"bytes_max"`
	// ByEvent counts the entries by event (a VerdictChanged by layer too:
	// VerdictChanged/node).
	ByEvent map[string]int `json:"by_event"`
}

func historyFigures(ctx context.Context, c client.Client) (*historyStats, error) {
	var list v1alpha1.VMObservationList
	if err := c.List(ctx, &list); err != nil {
		return nil, err
	}
	hs := &historyStats{ByEvent: map[string]int{}}
	var bytes int
	for i := range list.Items {
		o := &list.Items[i]
		if !isVMNamespace(o.Namespace) {
			continue
		}
		hs.VMObservations++
		h := o.Status.History
		if h == nil || len(h.Entries) == 0 {
			continue
		}
		hs.WithHistory++
		hs.Entries += len(h.Entries)
		hs.EntriesMax = max(hs.EntriesMax, len(h.Entries))
		b, err := json.Marshal(h)
		if err != nil {
			return nil, err
		}
		bytes += len(b)
		hs.BytesMax = max(hs.BytesMax, len(b))
		for _, e := range h.Entries {
			k := string(e.Event)
			if e.Event == v1alpha1.EventVerdictChanged {
				k += "/" + e.Layer
			}
			hs.ByEvent[k]++
		}
	}
	if hs.WithHistory > 0 {
		hs.BytesMean = float64(bytes) / float64(hs.WithHistory)
	}
	return hs, nil
}
