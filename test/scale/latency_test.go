package scale

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/api/v1alpha1"
)

// latencyResult holds the latency phase's figures.
type latencyResult struct {
	// Samples pairs, per change, its time and both latencies (0 when
	// that effect never arrived).
	Samples  []latencySample
	Changes  int
	Rate     float64 // achieved changes per second
	Skipped  int     // ticks whose VM still had a change in flight
	Missed   int     // changes whose effect never arrived
	Status   []time.Duration
	Watch    []time.Duration
	WriteRTT []time.Duration
}

type latencySample struct {
	t0            time.Time
	status, watch time.Duration
	// deadline: the verdict was due at a deadline after the change (the
	// engine's lag grace), so the status latency counts from the deadline
	// and the source's watch event is not on its path.
	deadline bool
}

// pending is one source change whose effect has not arrived yet.
type pending struct {
	t0 time.Time
	// due is when the engine's answer changes, when later than t0: a
	// launcher pod that is not Ready contradicts the VMI, which the engine
	// judges only after Policy.LagGrace (verdict.contradiction).
	due       time.Time
	statusLat time.Duration
	watchLat  time.Duration
	wantNode  string // node layer "Verdict/Reason" the change must produce
	wantReady corev1.ConditionStatus
	watchSeen bool
}

// latencyPhase writes `rate` source changes per second for `dur`: each
// flips the Ready condition of one VM's launcher pod (as the kubelet does
// when a readiness gate or a container changes), which moves the VM's node
// layer between its baseline and Degraded/LauncherPodNotReady. For each
// change it measures, from the moment before the write is sent:
//   - the time until the VMObservation carrying the new node verdict arrives
//     on the harness's own watch (the controller's latency), and
//   - the time until the pod's own watch event arrives on a bare pod watch
//     (the floor: what watch delivery alone costs at this load).
//
// A pod made NotReady contradicts its VMI (still Ready), which the engine
// judges only once Policy.LagGrace has passed since the pod's transition
// (verdict.contradiction); the status latency of such a change counts from
// that deadline, not from the write: the grace is the engine's policy, the
// time after it the controller's.
//
// Consecutive changes go to different VMs; a VM whose previous change has
// not been reflected yet is skipped (and counted). At the end every pod is
// set Ready again and the phase waits for the baseline verdicts.
func latencyPhase(ctx context.Context, c, wc client.WithWatch, tr *tracker, vms []vmRef, baseline map[string]summary, rate float64, dur, lagGrace time.Duration) (*latencyResult, error) {
	f, err := newPodFlipper(ctx, c, vms)
	if err != nil {
		return nil, err
	}
	targets, podKey := f.targets, f.podKey
	if len(targets) == 0 {
		return nil, fmt.Errorf("latency: no VM to change")
	}

	res := &latencyResult{}
	var mu sync.Mutex
	inflight := map[string]*pending{} // VM key -> change in flight
	samples := func(status, watchLat time.Duration) {
		if status > 0 {
			res.Status = append(res.Status, status)
		}
		if watchLat > 0 {
			res.Watch = append(res.Watch, watchLat)
		}
	}

	tr.setHook(func(key string, o *v1alpha1.VMObservation, at time.Time) {
		if o.Status.Layers == nil {
			return
		}
		node := string(o.Status.Layers.Node.Verdict) + "/" + o.Status.Layers.Node.Reason
		mu.Lock()
		defer mu.Unlock()
		if p := inflight[key]; p != nil && p.wantNode == node {
			// From when the verdict was due; an arrival before it
			// (the controller's clock a little ahead) counts as 1µs.
			lat := max(at.Sub(p.t0), time.Microsecond)
			if !p.due.IsZero() {
				lat = max(at.Sub(p.due), time.Microsecond)
			}
			samples(lat, 0)
			p.statusLat = lat
			p.wantNode = ""
			if p.watchSeen {
				res.Samples = append(res.Samples, latencySample{t0: p.t0, status: p.statusLat, watch: p.watchLat, deadline: !p.due.IsZero()})
				delete(inflight, key)
			}
		}
	})
	defer tr.setHook(nil)

	// The floor: a bare watch on the launcher pods.
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	pw, err := wc.Watch(wctx, &corev1.PodList{}, client.MatchingLabels{kubevirtv1.AppLabel: "virt-launcher"},
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: f.listRV}})
	if err != nil {
		return nil, err
	}
	go func() {
		for ev := range pw.ResultChan() {
			at := time.Now()
			if ev.Type != watch.Modified {
				continue
			}
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			key, ok := podKey[p.Namespace+"/"+p.Name]
			if !ok {
				continue
			}
			mu.Lock()
			if pe := inflight[key]; pe != nil && !pe.watchSeen && podReady(p) == pe.wantReady {
				samples(0, at.Sub(pe.t0))
				pe.watchLat = at.Sub(pe.t0)
				pe.watchSeen = true
				if pe.wantNode == "" {
					res.Samples = append(res.Samples, latencySample{t0: pe.t0, status: pe.statusLat, watch: pe.watchLat, deadline: !pe.due.IsZero()})
					delete(inflight, key)
				}
			}
			mu.Unlock()
		}
	}()

	notReadyNode := string(v1alpha1.VerdictDegraded) + "/" + v1alpha1.ReasonLauncherPodNotReady
	write := func(v vmRef, wantReady corev1.ConditionStatus, measure bool) error {
		var sent func(time.Time, *corev1.Pod)
		if measure {
			sent = func(t0 time.Time, pod *corev1.Pod) {
				want := baseline[v.key()].Node
				var due time.Time
				if wantReady != corev1.ConditionTrue {
					want = notReadyNode
					due = notReadyDue(pod, lagGrace)
				}
				mu.Lock()
				inflight[v.key()] = &pending{t0: t0, due: due, wantNode: want, wantReady: wantReady}
				mu.Unlock()
			}
		}
		rtt, err := f.set(ctx, v.key(), wantReady, sent)
		if err != nil {
			if measure {
				mu.Lock()
				delete(inflight, v.key())
				mu.Unlock()
			}
			return err
		}
		if measure {
			mu.Lock()
			res.WriteRTT = append(res.WriteRTT, rtt)
			mu.Unlock()
		}
		return nil
	}

	period := time.Duration(float64(time.Second) / rate)
	start := time.Now()
	var writers sync.WaitGroup
	errc := make(chan error, 1)
	next := 0
	for k := 0; ; k++ {
		at := start.Add(time.Duration(k) * period)
		if at.Sub(start) >= dur {
			break
		}
		time.Sleep(time.Until(at))
		v := targets[next%len(targets)]
		next++
		mu.Lock()
		busy := inflight[v.key()] != nil
		want := corev1.ConditionFalse
		if f.isNotReady(v.key()) {
			want = corev1.ConditionTrue
		}
		if busy {
			res.Skipped++
		}
		mu.Unlock()
		if busy {
			continue
		}
		res.Changes++
		writers.Go(func() {
			if err := write(v, want, true); err != nil {
				select {
				case errc <- err:
				default:
				}
			}
		})
	}
	writers.Wait()
	res.Rate = float64(res.Changes) / time.Since(start).Seconds()
	select {
	case err := <-errc:
		return nil, fmt.Errorf("latency: a source write failed: %w", err)
	default:
	}
	// Let the last effects arrive.
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		mu.Lock()
		n := len(inflight)
		mu.Unlock()
		if n == 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	mu.Lock()
	for _, p := range inflight {
		if p.wantNode != "" {
			res.Missed++
		}
		res.Samples = append(res.Samples, latencySample{t0: p.t0, status: p.statusLat, watch: p.watchLat, deadline: !p.due.IsZero()})
	}
	clear(inflight)
	mu.Unlock()
	tr.setHook(nil)
	if err := f.restoreAll(ctx); err != nil {
		return nil, fmt.Errorf("latency: %w", err)
	}
	return res, nil
}

// notReadyDue is when the engine judges pod's NotReady: LagGrace after the
// Ready condition's transition, as the API server stores it (whole
// seconds), rounded up to a second as the engine rounds its deadlines.
func notReadyDue(pod *corev1.Pod, lagGrace time.Duration) time.Time {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			due := c.LastTransitionTime.Truncate(time.Second).Add(lagGrace)
			if t := due.Truncate(time.Second); t.Before(due) {
				return t.Add(time.Second)
			}
			return due
		}
	}
	return time.Time{}
}

func podReady(p *corev1.Pod) corev1.ConditionStatus {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status
		}
	}
	return ""
}

// setReady flips the pod's Ready and ContainersReady conditions as the
// kubelet does when the compute container's readiness changes.
func setReady(p *corev1.Pod, status corev1.ConditionStatus) {
	now := metav1.Now()
	for i := range p.Status.Conditions {
		c := &p.Status.Conditions[i]
		if c.Type != corev1.PodReady && c.Type != corev1.ContainersReady {
			continue
		}
		if c.Status != status {
			c.LastTransitionTime = now
		}
		c.Status = status
		c.Reason, c.Message = "", ""
		if status != corev1.ConditionTrue {
			c.Reason = "ContainersNotReady"
			c.Message = "containers with unready status: [compute]"
		}
	}
}

// percentile is the p-th percentile (nearest rank) in milliseconds.
func percentile(d []time.Duration, p float64) float64 {
	if len(d) == 0 {
		return math.NaN()
	}
	s := slices.Clone(d)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	rank := int(math.Ceil(p/100*float64(len(s)))) - 1
	rank = min(max(rank, 0), len(s)-1)
	return float64(s[rank]) / float64(time.Millisecond)
}

// podFlipper flips the Ready condition of VMs' launcher pods, as the
// kubelet does, and remembers what it wrote.
type podFlipper struct {
	c client.Client
	// targets are the VMs it may change: those that never migrated, whose
	// single running pod is their launcher.
	targets []vmRef
	// podKey maps a pod's namespace/name to its VM's key.
	podKey map[string]string
	// listRV is the resource version of the pod LIST it started from.
	listRV string

	mu       sync.Mutex
	podOf    map[string]*corev1.Pod // VM key -> its pod as last written
	notReady map[string]bool        // VM key -> its pod is NotReady now
}

func newPodFlipper(ctx context.Context, c client.Client, vms []vmRef) (*podFlipper, error) {
	var podList corev1.PodList
	if err := c.List(ctx, &podList, client.MatchingLabels{kubevirtv1.AppLabel: "virt-launcher"}); err != nil {
		return nil, err
	}
	f := &podFlipper{c: c, podKey: map[string]string{}, listRV: podList.ResourceVersion, podOf: map[string]*corev1.Pod{}, notReady: map[string]bool{}}
	running := map[string]*corev1.Pod{}
	for i := range podList.Items {
		p := &podList.Items[i]
		if p.Status.Phase == corev1.PodRunning {
			running[p.Namespace+"/"+p.Annotations[kubevirtv1.DomainAnnotation]] = p
		}
	}
	for _, v := range vms {
		p, ok := running[v.key()]
		if !ok || v.migrated {
			continue
		}
		f.targets = append(f.targets, v)
		f.podOf[v.key()] = p
		f.podKey[p.Namespace+"/"+p.Name] = v.key()
	}
	return f, nil
}

// set writes the pod of VM key with Ready = ready, retrying conflicts on a
// fresh copy; sent, when set, is called with the time just before each
// attempt is sent. It returns the successful write's round trip.
func (f *podFlipper) set(ctx context.Context, key string, ready corev1.ConditionStatus, sent func(time.Time, *corev1.Pod)) (time.Duration, error) {
	f.mu.Lock()
	pod := f.podOf[key].DeepCopy()
	f.mu.Unlock()
	for attempt := 0; ; attempt++ {
		setReady(pod, ready)
		t0 := time.Now()
		if sent != nil {
			sent(t0, pod)
		}
		err := f.c.Status().Update(ctx, pod, client.FieldOwner("kubelet"))
		if err == nil {
			rtt := time.Since(t0)
			f.mu.Lock()
			f.podOf[key] = pod
			f.notReady[key] = ready != corev1.ConditionTrue
			f.mu.Unlock()
			return rtt, nil
		}
		if !apierrors.IsConflict(err) || attempt > 5 {
			return 0, err
		}
		fresh := &corev1.Pod{}
		if err := f.c.Get(ctx, client.ObjectKeyFromObject(pod), fresh); err != nil {
			return 0, err
		}
		pod = fresh
	}
}

func (f *podFlipper) isNotReady(key string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.notReady[key]
}

// restoreAll sets every pod it made NotReady Ready again.
func (f *podFlipper) restoreAll(ctx context.Context) error {
	f.mu.Lock()
	var keys []string
	for k, nr := range f.notReady {
		if nr {
			keys = append(keys, k)
		}
	}
	f.mu.Unlock()
	sort.Strings(keys)
	for _, k := range keys {
		if _, err := f.set(ctx, k, corev1.ConditionTrue, nil); err != nil {
			return fmt.Errorf("restoring %s: %w", k, err)
		}
	}
	return nil
}
