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
}

// pending is one source change whose effect has not arrived yet.
type pending struct {
	t0        time.Time
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
// Consecutive changes go to different VMs; a VM whose previous change has
// not been reflected yet is skipped (and counted). At the end every pod is
// set Ready again and the phase waits for the baseline verdicts.
func latencyPhase(ctx context.Context, c, wc client.WithWatch, tr *tracker, vms []vmRef, baseline map[string]summary, rate float64, dur time.Duration) (*latencyResult, error) {
	// The launcher pod of each VM: the single running pod of VMs that did
	// not migrate.
	var podList corev1.PodList
	if err := c.List(ctx, &podList, client.MatchingLabels{kubevirtv1.AppLabel: "virt-launcher"}); err != nil {
		return nil, err
	}
	podOf := map[string]*corev1.Pod{}
	for i := range podList.Items {
		p := &podList.Items[i]
		if p.Status.Phase == corev1.PodRunning {
			podOf[p.Namespace+"/"+p.Annotations[kubevirtv1.DomainAnnotation]] = p
		}
	}
	var targets []vmRef
	for _, v := range vms {
		if _, ok := podOf[v.key()]; ok && !v.migrated {
			targets = append(targets, v)
		}
	}
	if len(targets) == 0 {
		return nil, fmt.Errorf("latency: no VM to change")
	}
	podKey := map[string]string{} // pod ns/name -> VM key
	for _, v := range targets {
		p := podOf[v.key()]
		podKey[p.Namespace+"/"+p.Name] = v.key()
	}

	res := &latencyResult{}
	var mu sync.Mutex
	inflight := map[string]*pending{} // VM key -> change in flight
	notReady := map[string]bool{}     // VM key -> its pod is NotReady now
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
			samples(at.Sub(p.t0), 0)
			p.statusLat = at.Sub(p.t0)
			p.wantNode = ""
			if p.watchSeen {
				res.Samples = append(res.Samples, latencySample{t0: p.t0, status: p.statusLat, watch: p.watchLat})
				delete(inflight, key)
			}
		}
	})
	defer tr.setHook(nil)

	// The floor: a bare watch on the launcher pods.
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	pw, err := wc.Watch(wctx, &corev1.PodList{}, client.MatchingLabels{kubevirtv1.AppLabel: "virt-launcher"},
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: podList.ResourceVersion}})
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
					res.Samples = append(res.Samples, latencySample{t0: pe.t0, status: pe.statusLat, watch: pe.watchLat})
					delete(inflight, key)
				}
			}
			mu.Unlock()
		}
	}()

	notReadyNode := string(v1alpha1.VerdictDegraded) + "/" + v1alpha1.ReasonLauncherPodNotReady
	write := func(v vmRef, wantReady corev1.ConditionStatus, measure bool) error {
		mu.Lock()
		pod := podOf[v.key()].DeepCopy()
		mu.Unlock()
		for attempt := 0; ; attempt++ {
			setReady(pod, wantReady)
			t0 := time.Now()
			if measure {
				mu.Lock()
				want := baseline[v.key()].Node
				if wantReady != corev1.ConditionTrue {
					want = notReadyNode
				}
				inflight[v.key()] = &pending{t0: t0, wantNode: want, wantReady: wantReady}
				mu.Unlock()
			}
			err := c.Status().Update(ctx, pod, client.FieldOwner("kubelet"))
			if err == nil {
				rtt := time.Since(t0)
				mu.Lock()
				podOf[v.key()] = pod
				notReady[v.key()] = wantReady != corev1.ConditionTrue
				if measure {
					res.WriteRTT = append(res.WriteRTT, rtt)
				}
				mu.Unlock()
				return nil
			}
			if !apierrors.IsConflict(err) || attempt > 5 {
				mu.Lock()
				delete(inflight, v.key())
				mu.Unlock()
				return err
			}
			fresh := &corev1.Pod{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(pod), fresh); err != nil {
				return err
			}
			pod = fresh
		}
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
		if notReady[v.key()] {
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
		res.Samples = append(res.Samples, latencySample{t0: p.t0, status: p.statusLat, watch: p.watchLat})
	}
	clear(inflight)
	var restore []vmRef
	for _, v := range targets {
		if notReady[v.key()] {
			restore = append(restore, v)
		}
	}
	mu.Unlock()
	tr.setHook(nil)
	for _, v := range restore {
		if err := write(v, corev1.ConditionTrue, false); err != nil {
			return nil, fmt.Errorf("latency: restoring %s: %w", v.key(), err)
		}
	}
	return res, nil
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
