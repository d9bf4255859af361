package scale

import (
	"context"
	"fmt"
	"net/http"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1 "k8s.io/api/core/v1"

	"github.com/vmobs/vmobs/internal/app"
	"github.com/vmobs/vmobs/internal/testenv"
)

// The overload phase puts the manager under API Priority and Fairness
// pressure: a FlowSchema that matches the manager's user sends its requests
// to a priority level with the smallest nominal share (one seat on the test
// API server, see controlPlane) that rejects what does not fit at once
// instead of queueing it. A rejected request is answered 429 with
// Retry-After: 1, which client-go honours (up to 10 retries) before the
// reconcile fails and goes back to the queue with backoff. Meanwhile the
// harness keeps changing launcher pods at the latency phase's rate, and the
// pressure stays on until the engine has judged the last change (a pod made
// NotReady is judged after the lag grace). Then the FlowSchema is deleted
// and the harness times how long until every VMObservation shows the
// engine's answer on a fresh LIST: the last verdict of every VM that
// changed, none lost.

const overloadName = "vmobs-scale-overload"

// overloadResult is the overload phase's figures.
type overloadResult struct {
	// ChangeSeconds is how long the changes ran; Seconds how long the
	// pressure was on (until the last change's verdict was due).
	ChangeSeconds float64 `json:"change_seconds"`
	Seconds       float64 `json:"seconds"`
	Changes       int     `json:"changes"`
	Rate          float64 `json:"rate_per_second"`
	// Skipped counts ticks whose VM still had a source write in flight.
	Skipped int `json:"skipped"`
	// What the manager's transport saw: every attempt, client-go's
	// retries included, and the 429s among them.
	Requests          int     `json:"manager_requests"`
	TooManyRequests   int     `json:"manager_429s"`
	RequestsPerSecond float64 `json:"manager_requests_per_second"`
	MaxRequestsPerSec int     `json:"manager_max_requests_in_a_second"`
	// What the API server counted for the overload priority level.
	APFDispatched float64 `json:"apf_dispatched"`
	APFRejected   float64 `json:"apf_rejected"`
	// NominalSeats is the priority level's concurrency limit as the API
	// server computed it.
	NominalSeats    float64 `json:"apf_nominal_seats"`
	Reconciles      int     `json:"reconciles"`
	ReconcileErrors int     `json:"reconcile_errors"`
	// MaxQueueDepth is the controller's workqueue depth at its largest
	// (sampled every second).
	MaxQueueDepth float64 `json:"max_queue_depth"`
	// The test process's heap in use (the harness's included) before and
	// at its largest during the phase.
	HeapInuseBefore uint64 `json:"process_heap_inuse_before_bytes"`
	HeapInuseMax    uint64 `json:"process_heap_inuse_max_bytes"`
	ManagerAlive    bool   `json:"manager_alive"`
	// BacklogAtLift is how many VMObservations did not show their VM's
	// final verdict when the pressure was lifted.
	BacklogAtLift     int     `json:"backlog_at_lift"`
	CatchUpSeconds    float64 `json:"catch_up_seconds"`
	RequestsAfterLift int     `json:"manager_requests_during_catch_up"`
}

// respCounter counts the responses a client gets, by status code, per
// second.
type respCounter struct {
	mu     sync.Mutex
	total  int
	byCode map[int]int
	perSec map[int64]int
	errs   int
}

func newRespCounter() *respCounter {
	return &respCounter{byCode: map[int]int{}, perSec: map[int64]int{}}
}

func (c *respCounter) Wrap(cfg *rest.Config) *rest.Config {
	return testenv.Intercept(cfg, func(req *http.Request, next http.RoundTripper) (*http.Response, error) {
		resp, err := next.RoundTrip(req)
		c.mu.Lock()
		c.total++
		c.perSec[time.Now().Unix()]++
		if err != nil {
			c.errs++
		} else {
			c.byCode[resp.StatusCode]++
		}
		c.mu.Unlock()
		return resp, err
	})
}

type respSnapshot struct {
	total, tooMany int
}

func (c *respCounter) snapshot() respSnapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	return respSnapshot{total: c.total, tooMany: c.byCode[http.StatusTooManyRequests]}
}

// maxPerSecond is the largest count of one whole clock second that lies
// within [from, to).
func (c *respCounter) maxPerSecond(from, to time.Time) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := 0
	for s := from.Unix() + 1; s < to.Unix(); s++ {
		m = max(m, c.perSec[s])
	}
	return m
}

// overloadObjects are the priority level and the FlowSchema that put the
// manager's user under pressure.
func overloadObjects() (*flowcontrolv1.PriorityLevelConfiguration, *flowcontrolv1.FlowSchema) {
	plc := &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: overloadName},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
				// The smallest share: one seat on the test API server
				// (see controlPlane for the server's total).
				NominalConcurrencyShares: ptr.To[int32](1),
				// Nothing lent, nothing borrowed: an unset
				// borrowing limit would let the level take idle
				// seats of the others.
				LendablePercent:       ptr.To[int32](0),
				BorrowingLimitPercent: ptr.To[int32](0),
				LimitResponse:         flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject},
			},
		},
	}
	fs := &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: overloadName},
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: plc.Name},
			// Before every suggested FlowSchema but exempt (1) and
			// probes (2).
			MatchingPrecedence:  50,
			DistinguisherMethod: &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects: []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: managerUser}}},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{
					Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"},
					ClusterScope: true, Namespaces: []string{"*"},
				}},
			}},
		},
	}
	return plc, fs
}

// applyOverload creates the priority level and the FlowSchema and waits
// until the API server has taken them in (its metrics show the level).
func applyOverload(ctx context.Context, c client.Client, am *apiServerMetrics) (float64, error) {
	plc, fs := overloadObjects()
	for _, o := range []client.Object{plc, fs} {
		if err := c.Create(ctx, o); err != nil {
			return 0, fmt.Errorf("overload: creating %T: %w", o, err)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		ms, err := am.scrape(ctx)
		if err != nil {
			return 0, err
		}
		seats := ms.sum("apiserver_flowcontrol_nominal_limit_seats", map[string]string{"priority_level": overloadName})
		if seats > 0 {
			return seats, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return 0, fmt.Errorf("overload: the API server did not take in priority level %s within 30s", overloadName)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// liftOverload deletes the FlowSchema and the priority level.
func liftOverload(ctx context.Context, c client.Client) error {
	plc, fs := overloadObjects()
	for _, o := range []client.Object{fs, plc} {
		if err := c.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("overload: deleting %T: %w", o, err)
		}
	}
	return nil
}

// overloadPhase runs the overload phase against the running manager m,
// whose transport resp counts.
func (r *run) overloadPhase(ctx context.Context, t *testing.T, m *app.InProcess, resp *respCounter) (*overloadResult, error) {
	cfg, w, tr := r.cfg, r.w, r.tr
	out := &overloadResult{}
	f, err := newPodFlipper(ctx, w.c, w.vmList())
	if err != nil {
		return nil, err
	}
	if len(f.targets) == 0 {
		return nil, fmt.Errorf("overload: no VM to change")
	}
	defer func() {
		// Whatever happened, the API server must not keep the manager
		// under pressure for the phases after this one.
		_ = liftOverload(context.WithoutCancel(ctx), w.c)
	}()
	seats, err := applyOverload(ctx, w.c, r.apiMetrics)
	if err != nil {
		return nil, err
	}
	out.NominalSeats = seats
	before, err := r.apiMetrics.scrape(ctx)
	if err != nil {
		return nil, err
	}
	rsBefore, recBefore := resp.snapshot(), readReconcileStats()
	depthBefore := workqueueDepth()
	out.HeapInuseBefore = heapInuse()
	out.HeapInuseMax = out.HeapInuseBefore

	// The changes, at cfg.Rate for cfg.Overload; a VM whose previous
	// source write has not returned yet is skipped.
	start := time.Now()
	var (
		writers sync.WaitGroup
		mu      sync.Mutex
		busy    = map[string]bool{}
		werr    error
		// lastDue is when the engine judges the last NotReady made.
		lastDue time.Time
	)
	sampleEvery := time.NewTicker(time.Second)
	defer sampleEvery.Stop()
	period := time.Duration(float64(time.Second) / cfg.Rate)
	next := 0
	for k := 0; ; k++ {
		at := start.Add(time.Duration(k) * period)
		if at.Sub(start) >= cfg.Overload {
			break
		}
		select {
		case <-sampleEvery.C:
			out.MaxQueueDepth = max(out.MaxQueueDepth, workqueueDepth()-depthBefore)
			out.HeapInuseMax = max(out.HeapInuseMax, heapInuse())
		default:
		}
		time.Sleep(time.Until(at))
		v := f.targets[next%len(f.targets)]
		next++
		mu.Lock()
		skip := busy[v.key()]
		busy[v.key()] = true
		mu.Unlock()
		if skip {
			out.Skipped++
			continue
		}
		out.Changes++
		ready := corev1.ConditionFalse
		if f.isNotReady(v.key()) {
			ready = corev1.ConditionTrue
		}
		writers.Go(func() {
			_, err := f.set(ctx, v.key(), ready, func(_ time.Time, pod *corev1.Pod) {
				if ready != corev1.ConditionTrue {
					due := notReadyDue(pod, r.policy.LagGrace)
					mu.Lock()
					lastDue = maxTime(lastDue, due)
					mu.Unlock()
				}
			})
			mu.Lock()
			delete(busy, v.key())
			if err != nil && werr == nil {
				werr = err
			}
			mu.Unlock()
		})
	}
	writers.Wait()
	out.ChangeSeconds = time.Since(start).Seconds()
	out.Rate = float64(out.Changes) / out.ChangeSeconds
	if werr != nil {
		return nil, fmt.Errorf("overload: a source write failed: %w", werr)
	}
	// The pressure stays on until the engine has judged the last change
	// (a NotReady pod after the lag grace): then its answer is final, and
	// what every VMObservation must end up showing.
	for time.Now().Before(lastDue.Add(time.Second)) && ctx.Err() == nil {
		out.MaxQueueDepth = max(out.MaxQueueDepth, workqueueDepth()-depthBefore)
		out.HeapInuseMax = max(out.HeapInuseMax, heapInuse())
		time.Sleep(min(time.Second, time.Until(lastDue.Add(time.Second))))
	}
	end := time.Now()
	out.Seconds = end.Sub(start).Seconds()
	out.MaxQueueDepth = max(out.MaxQueueDepth, workqueueDepth()-depthBefore)
	out.HeapInuseMax = max(out.HeapInuseMax, heapInuse())
	rs, rec := resp.snapshot(), readReconcileStats().minus(recBefore)
	out.Requests, out.TooManyRequests = rs.total-rsBefore.total, rs.tooMany-rsBefore.tooMany
	out.RequestsPerSecond = float64(out.Requests) / out.Seconds
	out.MaxRequestsPerSec = resp.maxPerSecond(start, end)
	out.Reconciles, out.ReconcileErrors = int(rec.total), int(rec.errors)
	after, err := r.apiMetrics.scrape(ctx)
	if err != nil {
		return nil, err
	}
	pl := map[string]string{"priority_level": overloadName}
	out.APFDispatched = after.sum("apiserver_flowcontrol_dispatched_requests_total", pl) - before.sum("apiserver_flowcontrol_dispatched_requests_total", pl)
	out.APFRejected = after.sum("apiserver_flowcontrol_rejected_requests_total", pl) - before.sum("apiserver_flowcontrol_rejected_requests_total", pl)
	select {
	case err := <-m.Done():
		return out, fmt.Errorf("overload: the manager stopped under pressure: %w", err)
	default:
		out.ManagerAlive = true
	}
	// No hot loop: a change costs a few requests (a status apply, maybe an
	// Event, client-go's retries of a 429 with its Retry-After); a loop of
	// retries would cost hundreds. A correctness check, not a timing.
	if limit := 10*out.Changes + 100; out.Requests > limit {
		return out, fmt.Errorf("overload: the manager sent %d requests for %d changes (more than %d): a retry loop", out.Requests, out.Changes, limit)
	}

	want, _, err := expected(ctx, w.c, r.policy, time.Now(), isVMNamespace)
	if err != nil {
		return nil, err
	}
	out.BacklogAtLift = tr.offFrom(want)
	rsLift := resp.snapshot()
	lift := time.Now()
	if err := liftOverload(ctx, w.c); err != nil {
		return nil, err
	}
	last, err := tr.waitMatch(ctx, want, nil, cfg.Converge)
	if err != nil {
		return out, fmt.Errorf("overload: after the pressure was lifted: %w", err)
	}
	out.CatchUpSeconds = max(0, last.Sub(lift).Seconds())
	out.RequestsAfterLift = resp.snapshot().total - rsLift.total
	t.Logf("overload: %d changes at %.1f/s over %.0fs on %v APF seat(s): the manager sent %d requests (%.1f/s, at most %d in a second), %d answered 429; the API server dispatched %.0f and rejected %.0f; %d reconciles (%d errors), queue depth up to %.0f; %d VMObservations behind at the lift, caught up %.2fs after it",
		out.Changes, out.Rate, out.Seconds, out.NominalSeats, out.Requests, out.RequestsPerSecond, out.MaxRequestsPerSec, out.TooManyRequests,
		out.APFDispatched, out.APFRejected, out.Reconciles, out.ReconcileErrors, out.MaxQueueDepth, out.BacklogAtLift, out.CatchUpSeconds)

	// Back to the baseline for the phases after this one (not timed).
	if err := f.restoreAll(ctx); err != nil {
		return out, fmt.Errorf("overload: %w", err)
	}
	baseline, _, err := expected(ctx, w.c, r.policy, time.Now(), isVMNamespace)
	if err != nil {
		return out, err
	}
	if _, err := tr.waitMatch(ctx, baseline, nil, cfg.Converge); err != nil {
		return out, fmt.Errorf("overload: back to the baseline: %w", err)
	}
	return out, nil
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// heapInuse is this process's heap in use (objects and unused span space).
func heapInuse() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/unused:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64() + s[1].Value.Uint64()
}
