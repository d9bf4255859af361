// Package nodeverdict folds what one node gives its VMs into the
// NodeObservation status: a verdict per layer (kubelet, virt-handler,
// domain stats, the launcher path) with reasons, evidence and the instant
// at which the status could change with no object changing, and the node's
// VMs counted by verdict. It is pure: no client, no clock. The rules on the
// Node's own signals are internal/verdict's, which the node layer of every
// VMObservation applies too.
package nodeverdict

import (
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/drain"
	"github.com/vmobs/vmobs/internal/verdict"
)

// Input is everything the status of one node's NodeObservation rests on.
type Input struct {
	// Now is the instant judged.
	Now time.Time
	// Node is the Node (its Ready and pressure conditions, virt-handler's
	// heartbeat and the kubevirt.io/schedulable label). Nil is a bad input:
	// the controller deletes the NodeObservation of a node that is gone.
	Node *corev1.Node
	// Handler is virt-handler's pod on the node, nil when none is seen.
	Handler *corev1.Pod
	// VMs are the VMIs whose status names the node.
	VMs []VM
	// DomainStats and GuestProbe say whether the controller reads those
	// sources; a source it does not read gives its layer no basis.
	DomainStats, GuestProbe bool
	// HeartbeatTimeout and StalledAfter are the VMObservations' thresholds
	// (verdict.Policy), so that a node and its VMs agree.
	HeartbeatTimeout, StalledAfter time.Duration
	// IncidentThreshold is how many VMs must turn non-Healthy under a node
	// cause for an incident; 0 is DefaultIncidentThreshold.
	IncidentThreshold int
	// Previous is the stored status, nil for a new NodeObservation: a
	// verdict that does not change keeps its lastTransitionTime, an
	// incident its start, a drain its prediction.
	Previous *v1alpha1.NodeObservationStatus
	// DrainPrediction is the caller's prediction of a drain of the node
	// (drain.Predict), made when NeedsPrediction says so and nil otherwise.
	DrainPrediction *drain.Prediction
	// DrainObjects are the current VMIs the drain section names and their
	// migrations, from which a drain is tracked and its outcome read
	// (drain.Track, drain.Compare); Node and Now are set from this Input.
	DrainObjects drain.Input
}

// VM is one VMI on the node and what its VMObservation says.
type VM struct {
	Namespace, Name string
	// Running says the VMI is Running: virt-handler exports its domain and
	// the guest probe asks its agent.
	Running bool
	// Verdict is the VMObservation's verdict, empty when it has none.
	Verdict v1alpha1.Verdict
	// Reasons are the VMObservation's layer reasons, in
	// v1alpha1.LayerNames order.
	Reasons [len(v1alpha1.LayerNames)]string
	// NodeSince is when the VMObservation's node layer last changed
	// verdict, zero when not known.
	NodeSince time.Time
}

// Result is the status and when to look again.
type Result struct {
	Status v1alpha1.NodeObservationStatus
	// Next is the earliest instant, after Now, at which the status changes
	// if no object does (virt-handler's heartbeat going stale, Stalled);
	// zero when there is none.
	Next time.Time
	// DrainEnded is the outcome of a drain against its prediction when
	// this status ends the drain, for the caller to count once written.
	DrainEnded *drain.Comparison
}

const (
	maxEvidence = 8
	maxMessage  = 1024
	maxValue    = 256
	kindNode    = "Node"
	kindPod     = "Pod"
	kindObs     = "VMObservation"
)

// Evaluate computes the NodeObservation status of in.Node.
func Evaluate(in Input) Result {
	now := in.Now.UTC().Truncate(time.Second)
	in.Now = now
	var res Result
	st := &res.Status
	if in.Node == nil {
		st.Verdict, st.Reason = v1alpha1.VerdictUnknown, v1alpha1.ReasonNodeMissing
		st.Message = "the Node is not in the input"
		st.Conditions, _ = verdict.KStatus(nil, prevConditions(in.Previous), now, st.Verdict, st.Reason, st.Message, nil, in.StalledAfter)
		return res
	}
	layers := &v1alpha1.NodeLayers{}
	var prev *v1alpha1.NodeLayers
	if in.Previous != nil {
		prev = in.Previous.Layers
	}
	ls := [...]*layer{kubelet(in), virtHandler(in, &res), domainStats(in), launcherPath(in)}
	// The kubelet and virt-handler layers always have a basis, so there
	// is a worst layer; a source the controller does not read has none.
	worst, worstName := &layers.Kubelet, v1alpha1.NodeLayerKubelet
	for i, name := range v1alpha1.NodeLayerNames {
		out := layers.Get(name)
		since := ls[i].build(out)
		transition(out, prev.Get(name), since, now)
		if !ls[i].noBasis && out.Verdict.Severity() > worst.Verdict.Severity() {
			worst, worstName = out, name
		}
	}
	st.Layers = layers
	st.Verdict, st.Reason = worst.Verdict, worst.Reason
	st.Message = verdict.Bound(worstName+": "+worst.Message, maxMessage)
	st.VMs = count(in.VMs)
	st.Incident = incident(in, layers, now, &res)
	st.Drain, res.DrainEnded = drainSection(in)
	var at time.Time
	st.Conditions, at = verdict.KStatus(make([]metav1.Condition, 0, 3), prevConditions(in.Previous), now,
		st.Verdict, st.Reason, st.Message, worst.LastTransitionTime, in.StalledAfter)
	res.next(at, now)
	return res
}

func prevConditions(p *v1alpha1.NodeObservationStatus) []metav1.Condition {
	if p == nil {
		return nil
	}
	return p.Conditions
}

func (r *Result) next(t, now time.Time) {
	if t.After(now) && (r.Next.IsZero() || t.Before(r.Next)) {
		r.Next = t
	}
}

// kubelet judges the Node's Ready condition (verdict.NodeReadyFinding) and
// its pressure conditions. The kubelet renews a Lease every 10s and the node
// lifecycle controller turns Ready Unknown when it stops (Kubernetes'
// pkg/controller/nodelifecycle); vmobs reads that verdict of the Lease
// rather than the Lease itself, whose renewals would wake the controller
// six times a minute per node.
func kubelet(in Input) *layer {
	n := in.Node
	l := &layer{}
	l.apply(verdict.NodeReadyFinding(n), n.Name)
	var under []string
	var since time.Time
	for _, c := range n.Status.Conditions {
		switch c.Type {
		case corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure:
		default:
			continue
		}
		if c.Status != corev1.ConditionTrue {
			continue
		}
		under = append(under, string(c.Type))
		t := c.LastTransitionTime.UTC().Truncate(time.Second)
		if t.After(since) {
			since = t
		}
		l.push(kindNode, n.Name, "status.conditions["+string(c.Type)+"].status", string(c.Status), t, true)
	}
	if len(under) > 0 {
		l.add(v1alpha1.VerdictDegraded, v1alpha1.ReasonNodePressure,
			"Node "+n.Name+" is under "+strings.Join(under, ", ")+": the kubelet evicts pods, virt-launcher pods included", since)
	}
	l.add(v1alpha1.VerdictHealthy, v1alpha1.ReasonKubeletReady, "Node "+n.Name+" is Ready and under no pressure", time.Time{})
	return l
}

// virtHandler judges virt-handler's heartbeat and the schedulable label
// (verdict's rules) and its pod on the node.
func virtHandler(in Input, res *Result) *layer {
	n := in.Node
	l := &layer{}
	hb := verdict.ReadHeartbeat(n, in.HeartbeatTimeout, in.Now)
	f := hb.Finding(n.Name, in.HeartbeatTimeout)
	switch hb.State {
	case verdict.HeartbeatFresh:
		// A renewing source: the status cites it as fresh and stores no
		// deadline that would move with each beat; the controller looks
		// again at the deadline, and each beat (a Node update) moves it.
		res.next(hb.Deadline, in.Now)
	case verdict.HeartbeatFuture:
		res.next(hb.FutureEnds, in.Now)
	}
	l.apply(f, n.Name)
	if s, ok := verdict.NodeSchedulableFinding(n); ok {
		l.apply(s, n.Name)
	}
	if p := in.Handler; p == nil {
		l.note(v1alpha1.ReasonVirtHandlerPodNotSeen,
			"no virt-handler pod on "+n.Name+" is in the controller's cache; its heartbeat speaks for it")
	} else if ready, since := podReady(p); !ready {
		l.add(v1alpha1.VerdictDegraded, v1alpha1.ReasonVirtHandlerNotReady,
			"virt-handler pod "+p.Namespace+"/"+p.Name+" on "+n.Name+" is "+string(p.Status.Phase)+" and not Ready", since)
		l.push(kindPod, p.Namespace+"/"+p.Name, "status.conditions[Ready].status", "False", since, true)
	} else {
		l.push(kindPod, p.Namespace+"/"+p.Name, "status.conditions[Ready].status", "True", since, false)
	}
	l.add(v1alpha1.VerdictHealthy, v1alpha1.ReasonVirtHandlerReady, "virt-handler on "+n.Name+" beats and serves its VMs", time.Time{})
	return l
}

func podReady(p *corev1.Pod) (bool, time.Time) {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue && p.DeletionTimestamp == nil, c.LastTransitionTime.UTC().Truncate(time.Second)
		}
	}
	return false, time.Time{}
}

// domainStats reads what the node's VMObservations found of virt-handler's
// domain stats: a VM whose series are missing is DomainStatsMissing on its
// node layer (internal/verdict, domain.go). Every running VM of the node
// missing them is the node's exporter, not the VMs.
func domainStats(in Input) *layer {
	return fromVMs(in, in.DomainStats, v1alpha1.ReasonDomainStatsMissing, "the controller does not read domain stats (no --prometheus-url)",
		func(l *layer, hit, running int) {
			switch {
			case hit == running:
				l.add(v1alpha1.VerdictDegraded, v1alpha1.ReasonDomainStatsMissingOnNode,
					"none of the "+strconv.Itoa(running)+" running VMs on "+in.Node.Name+
						" has domain stats in Prometheus: virt-handler's metrics endpoint on the node, or its scrape, is silent", time.Time{})
			case hit > 0:
				l.add(v1alpha1.VerdictHealthy, v1alpha1.ReasonDomainStatsPresent,
					strconv.Itoa(running-hit)+" of the "+strconv.Itoa(running)+" running VMs on "+in.Node.Name+
						" have domain stats; the others' are missing (their VMObservations say why)", time.Time{})
			default:
				l.add(v1alpha1.VerdictHealthy, v1alpha1.ReasonDomainStatsPresent,
					"the "+strconv.Itoa(running)+" running VMs on "+in.Node.Name+" have domain stats", time.Time{})
			}
		})
}

// launcherPath reads what the node's VMObservations found of the guest
// probes: a VM whose probes fail while its agent is connected is
// GuestInfoUnreachable on its node layer (internal/verdict, probe.go):
// the path virt-api → virt-handler on the VMI's node → virt-launcher.
func launcherPath(in Input) *layer {
	return fromVMs(in, in.GuestProbe, v1alpha1.ReasonGuestInfoUnreachable, "the controller does not probe guest agents (--guest-probe-interval 0)",
		func(l *layer, hit, running int) {
			if hit > 0 {
				l.add(v1alpha1.VerdictDegraded, v1alpha1.ReasonLauncherPathUnreachable,
					strconv.Itoa(hit)+" of the "+strconv.Itoa(running)+" running VMs on "+in.Node.Name+
						" cannot be reached through virt-api → virt-handler → virt-launcher", time.Time{})
				return
			}
			l.add(v1alpha1.VerdictHealthy, v1alpha1.ReasonLauncherPathReachable,
				"no probe of the "+strconv.Itoa(running)+" running VMs on "+in.Node.Name+" fails on the path through virt-handler", time.Time{})
		})
}

// fromVMs builds a layer from the VMs whose VMObservation gives reason on
// a layer: judge decides from the count of those (hit) among the running.
func fromVMs(in Input, configured bool, reason, notConfigured string, judge func(l *layer, hit, running int)) *layer {
	l := &layer{}
	if !configured {
		l.add(v1alpha1.VerdictUnknown, v1alpha1.ReasonSourceNotConfigured, notConfigured, time.Time{})
		l.noBasis = true
		return l
	}
	running, hit := 0, 0
	for _, vm := range in.VMs {
		if !vm.Running {
			continue
		}
		running++
		for _, r := range vm.Reasons {
			if r == reason {
				hit++
				l.push(kindObs, vm.Namespace+"/"+vm.Name, "status.layers.*.reason", reason, time.Time{}, true)
				break
			}
		}
	}
	if running == 0 {
		l.add(v1alpha1.VerdictHealthy, v1alpha1.ReasonNoRunningVMs, "no VM runs on "+in.Node.Name, time.Time{})
		return l
	}
	judge(l, hit, running)
	return l
}

// count counts the VMs by their VMObservation's verdict.
func count(vms []VM) *v1alpha1.VMCounts {
	c := &v1alpha1.VMCounts{Total: int32(len(vms))}
	for _, vm := range vms {
		switch vm.Verdict {
		case v1alpha1.VerdictHealthy:
			c.Healthy++
		case v1alpha1.VerdictProgressing:
			c.Progressing++
		case v1alpha1.VerdictSuspended:
			c.Suspended++
		case v1alpha1.VerdictDegraded:
			c.Degraded++
		case v1alpha1.VerdictFailed:
			c.Failed++
		case v1alpha1.VerdictUnknown:
			c.Unknown++
		default:
			c.Unobserved++
		}
	}
	return c
}

// transition keeps the previous lastTransitionTime while the verdict is
// unchanged; a new verdict dates from now, or, with no previous status,
// from when its evidence says it began.
func transition(out, prev *v1alpha1.LayerStatus, since, now time.Time) {
	t := now
	switch {
	case prev != nil && prev.Verdict != "":
		if prev.Verdict == out.Verdict && prev.LastTransitionTime != nil && !prev.LastTransitionTime.IsZero() {
			t = prev.LastTransitionTime.UTC().Truncate(time.Second)
		}
	case !since.IsZero():
		t = since
	}
	if t.After(now) {
		t = now
	}
	out.LastTransitionTime = &metav1.Time{Time: t}
}
