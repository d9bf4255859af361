package demo

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/scheme"
)

// verdictOrder is the order the view and the summary list verdicts in:
// worst first, as Verdict.Severity ranks them.
var verdictOrder = []string{
	string(v1alpha1.VerdictFailed), string(v1alpha1.VerdictDegraded), string(v1alpha1.VerdictUnknown),
	string(v1alpha1.VerdictProgressing), string(v1alpha1.VerdictSuspended), string(v1alpha1.VerdictHealthy),
}

// state is a verdict and its reason.
type state struct{ Verdict, Reason string }

func (s state) String() string {
	if s.Verdict == "" {
		return "—"
	}
	if s.Reason == "" {
		return s.Verdict
	}
	return s.Verdict + "/" + s.Reason
}

// vmState is what the demo last saw of one VMObservation.
type vmState struct {
	Namespace, Name string
	// HasStatus is false until the controller has written the layers.
	HasStatus bool
	Overall   state
	// Layers are in the order of v1alpha1.LayerNames.
	Layers [len(v1alpha1.LayerNames)]state
	// Scenario names the scripted scenario the VM plays, if any.
	Scenario string
}

func (v *vmState) key() string { return v.Namespace + "/" + v.Name }

// layer is the state of the layer called name, false for a name that is
// not a layer.
func (v *vmState) layer(name string) (state, bool) {
	for i, n := range v1alpha1.LayerNames {
		if n == name {
			return v.Layers[i], true
		}
	}
	return state{}, false
}

// Change is one line of the demo's story: a layer's verdict or reason
// changed, a VMObservation appeared or went away, or a note (Note set).
type Change struct {
	At              time.Time
	Namespace, Name string
	// Layer is a layer's name (v1alpha1.LayerNames); "vm" when the VMObservation
	// got its first status or went away.
	Layer    string
	From, To state
	// Overall is the VM's overall verdict after the change.
	Overall state
	// Diagnosed names the scenario this change showed as built.
	Diagnosed string
	// Note is a free-form line (a scenario played, a migration started).
	Note string
}

// Line formats the change as a --non-interactive line.
func (c Change) Line(start time.Time) string {
	if c.Note != "" {
		return stamp(start, c.At) + " " + c.Note
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s/%s %s: %s → %s", stamp(start, c.At), c.Namespace, c.Name, c.Layer, c.From, c.To)
	if c.Layer != "vm" {
		fmt.Fprintf(&b, " (VM %s)", c.Overall)
	}
	if c.Diagnosed != "" {
		fmt.Fprintf(&b, "  ✓ scenario %s diagnosed as built", c.Diagnosed)
	}
	return b.String()
}

// stamp is the time of a line: wall clock and time since the demo started.
func stamp(start, t time.Time) string {
	return fmt.Sprintf("%s %7s", t.Format("15:04:05.000"), "+"+fmtElapsed(t.Sub(start)))
}

func fmtElapsed(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	if d < time.Minute {
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return d.Round(time.Second).String()
}

// Outcome says how a scripted scenario fared.
type Outcome string

const (
	// OutcomeDiagnosed: the scenario's layer showed the verdict and
	// reason the scenario is built to produce.
	OutcomeDiagnosed Outcome = "diagnosed"
	// OutcomeMissed: it did not by its deadline, or the play failed.
	OutcomeMissed Outcome = "missed"
	// OutcomePending: the demo ended before the deadline.
	OutcomePending Outcome = "pending"
	// OutcomeNotPlayed: the demo ended before the scenario was played.
	OutcomeNotPlayed Outcome = "not played"
)

// ScenarioResult is one scripted scenario's expected and seen verdicts.
type ScenarioResult struct {
	Name, Description string
	Namespace, VM     string
	// Layer, Verdict and Reason are what the scenario is built to produce.
	Layer, Verdict, Reason string
	// Wait is the scenario's Wait at this pace.
	Wait time.Duration
	// PlayAt is when the scenario is scheduled, PlayedAt when its Play
	// returned, both since the demo started.
	PlayAt, PlayedAt time.Duration
	Played           bool
	PlayErr          string
	// Seen says the layer showed the expected verdict and reason, first
	// at SeenAt since the demo started.
	Seen   bool
	SeenAt time.Duration
	// Now is the layer's verdict at the end, Overall the VM's.
	Now, Overall state
	// Due is when a missing verdict counts as a miss (since the start).
	Due     time.Duration
	Outcome Outcome
}

// Expected says what the scenario is built to produce.
func (s ScenarioResult) Expected() string {
	return s.Layer + " " + state{s.Verdict, s.Reason}.String()
}

// Result is what a demo run saw.
type Result struct {
	Scenarios []ScenarioResult
	// VMs is the number of VMObservations at the end, Nodes of Nodes.
	VMs, Nodes int
	// Verdicts counts VMs per overall verdict at the end, Reasons per
	// overall verdict and reason.
	Verdicts map[string]int
	Reasons  map[string]map[string]int
	// Changes counts the layer verdict changes seen.
	Changes int
	// FirstHealthy is when the first VM turned Healthy, since the start;
	// zero if none did.
	FirstHealthy time.Duration
	// ControlPlaneUp is when the control plane was up, Played how long the
	// fleet played, Elapsed the whole run, all since the start.
	ControlPlaneUp, Played, Elapsed time.Duration
	StopReason                      string
	Seed                            int64
	// Errors are problems met on the way (simulator steps that failed).
	Errors []string
	// TempDir was the demo's temporary directory (removed at the end).
	TempDir string
	// Prometheus says a Prometheus server scraped the virt-handlers for
	// domain stats (from the start, or once it joined).
	Prometheus bool
	// Late are the tools the demo started without (Prometheus,
	// kube-controller-manager, kubectl): joined once built, or skipped.
	// Skipped names the scenarios left out for want of one.
	Late    []LateTool
	Skipped []string
	// NodeObservations are the nodes' verdicts at the end, by node name:
	// "Verdict/Reason", as `kubectl get nodeobservations` shows them.
	NodeObservations map[string]string
	// NodeIncidents are the open incidents of those nodes, by node name:
	// how many VMs each holds.
	NodeIncidents map[string]int
}

// Diagnosed counts the scenarios vmobs diagnosed as built.
func (r *Result) Diagnosed() (ok, total int) {
	for _, s := range r.Scenarios {
		if s.Outcome == OutcomeDiagnosed {
			ok++
		}
	}
	return ok, len(r.Scenarios)
}

// Missed lists the scenarios vmobs did not diagnose as built by their
// deadline (or whose play failed).
func (r *Result) Missed() []ScenarioResult {
	var out []ScenarioResult
	for _, s := range r.Scenarios {
		if s.Outcome == OutcomeMissed {
			out = append(out, s)
		}
	}
	return out
}

// tracker follows the VMObservations and the scenarios.
type tracker struct {
	mu      sync.Mutex
	start   time.Time
	vms     map[string]*vmState
	recent  []Change
	changes int
	version uint64

	firstHealthy time.Time
	// firstChange closes with the first verdict change: the demo has
	// started, and the late tools' builds may take the machine.
	firstChange chan struct{}
	changed     bool
	// late are the tools the demo started without, in build order.
	late      []*LateTool
	scenarios []*ScenarioResult
	byVM      map[string]*ScenarioResult
	errors    []string

	// onChange and onNote, when set, are called (under the lock, in
	// order) for every change and note.
	onChange func(Change)
	onNote   func(at time.Time, msg string)
}

const recentMax = 64

func newTracker(start time.Time) *tracker {
	return &tracker{
		start: start,
		vms:   map[string]*vmState{},
		byVM:  map[string]*ScenarioResult{},

		firstChange: make(chan struct{}),
	}
}

// waitTool records that the demo started without tool and that
// scenarios wait for it: the run is not settled until it joins or is
// skipped. A skip (why not empty) is recorded as such at once.
func (t *tracker) waitTool(tool Tool, scenarios []string, why string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.late = append(t.late, &LateTool{Tool: tool, Scenarios: scenarios, Skipped: why})
}

// joinedTool records that tool was built and started at at, its
// scenarios planned.
func (t *tracker) joinedTool(tool Tool, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if l := t.lateLocked(tool); l != nil {
		l.Joined, l.JoinedAt = true, at.Sub(t.start)
	}
}

// skipTool records why tool did not join.
func (t *tracker) skipTool(tool Tool, why string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if l := t.lateLocked(tool); l != nil {
		l.Skipped = why
	}
}

func (t *tracker) lateLocked(tool Tool) *LateTool {
	for _, l := range t.late {
		if l.Tool == tool {
			return l
		}
	}
	return nil
}

// setOutput sets the functions called for every change and note.
func (t *tracker) setOutput(onChange func(Change), onNote func(at time.Time, msg string)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.onChange, t.onNote = onChange, onNote
}

// setPlan registers the scenarios the director will play.
func (t *tracker) setPlan(plan []plannedScenario, pace Pace, playStart time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	scale := pace.waitScale()
	for _, p := range plan {
		r := &ScenarioResult{
			Name: p.sc.Name, Description: p.sc.Description,
			Namespace: p.ns, VM: p.vm,
			Layer: p.sc.Layer, Verdict: string(p.sc.Verdict), Reason: p.sc.Reason,
			Wait:   time.Duration(float64(p.sc.Wait) * scale).Round(time.Second),
			PlayAt: playStart.Add(p.at).Sub(t.start),
		}
		t.scenarios = append(t.scenarios, r)
		t.byVM[p.ns+"/"+p.vm] = r
	}
}

// played records that a scenario's Play returned.
func (t *tracker) played(ns, vm string, at time.Time, err error, pace Pace) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.byVM[ns+"/"+vm]
	if r == nil {
		return
	}
	r.Played = true
	r.PlayedAt = at.Sub(t.start)
	r.Due = r.PlayedAt + r.Wait + pace.Slack
	if err != nil {
		r.PlayErr = err.Error()
		t.noteLocked(at, fmt.Sprintf("✗ scenario %s: playing it failed: %v", r.Name, err))
		return
	}
	msg := fmt.Sprintf("▶ scenario %s played on %s/%s: %s Expect %s", r.Name, ns, vm, r.Description, r.Expected())
	if r.Wait > 0 {
		msg += fmt.Sprintf(" within %s", r.Wait)
	}
	t.noteLocked(at, msg)
	// The verdict may already be there.
	if v := t.vms[ns+"/"+vm]; v != nil {
		if name := t.checkLocked(v, at); name != "" {
			t.noteLocked(at, fmt.Sprintf("✓ scenario %s diagnosed as built: %s", name, r.Expected()))
		}
	}
}

// note adds a free-form line.
func (t *tracker) note(msg string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.noteLocked(time.Now(), msg)
}

func (t *tracker) errorf(format string, a ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	msg := fmt.Sprintf(format, a...)
	t.errors = append(t.errors, msg)
	t.noteLocked(time.Now(), "! "+msg)
}

func (t *tracker) noteLocked(at time.Time, msg string) {
	t.push(Change{At: at, Note: msg})
	if t.onNote != nil {
		t.onNote(at, msg)
	}
}

func (t *tracker) push(c Change) {
	if !t.changed {
		t.changed = true
		close(t.firstChange)
	}
	t.recent = append(t.recent, c)
	if len(t.recent) > recentMax {
		t.recent = append(t.recent[:0:0], t.recent[len(t.recent)-recentMax:]...)
	}
	t.version++
}

// observe takes in a VMObservation as the watch delivers it.
func (t *tracker) observe(o *v1alpha1.VMObservation) {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	k := o.Namespace + "/" + o.Name
	v := t.vms[k]
	if v == nil {
		v = &vmState{Namespace: o.Namespace, Name: o.Name}
		if r := t.byVM[k]; r != nil {
			v.Scenario = r.Name
		}
		t.vms[k] = v
		t.version++
	}
	if o.Status.Layers == nil {
		return
	}
	var next [len(v1alpha1.LayerNames)]state
	for i, n := range v1alpha1.LayerNames {
		l := o.Status.Layers.Get(n)
		next[i] = state{string(l.Verdict), l.Reason}
	}
	overall := state{string(o.Status.Verdict), o.Status.Reason}
	var cs []Change
	if !v.HasStatus {
		cs = append(cs, Change{At: now, Namespace: v.Namespace, Name: v.Name, Layer: "vm", To: overall, Overall: overall})
	} else {
		for i := range next {
			if next[i] != v.Layers[i] {
				cs = append(cs, Change{At: now, Namespace: v.Namespace, Name: v.Name, Layer: v1alpha1.LayerNames[i], From: v.Layers[i], To: next[i], Overall: overall})
			}
		}
	}
	if len(cs) == 0 && overall == v.Overall {
		return
	}
	v.HasStatus, v.Layers, v.Overall = true, next, overall
	if overall.Verdict == string(v1alpha1.VerdictHealthy) && t.firstHealthy.IsZero() {
		t.firstHealthy = now
	}
	if name := t.checkLocked(v, now); name != "" && len(cs) > 0 {
		cs[len(cs)-1].Diagnosed = name
	}
	for _, c := range cs {
		t.changes++
		t.push(c)
		if t.onChange != nil {
			t.onChange(c)
		}
	}
	t.version++
}

// forget drops a VMObservation that went away.
func (t *tracker) forget(ns, name string) {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	k := ns + "/" + name
	v := t.vms[k]
	if v == nil {
		return
	}
	delete(t.vms, k)
	c := Change{At: now, Namespace: ns, Name: name, Layer: "vm", From: v.Overall, To: state{Verdict: "(deleted)"}}
	t.changes++
	t.push(c)
	if t.onChange != nil {
		t.onChange(c)
	}
}

// checkLocked marks the VM's scenario diagnosed when its layer shows the
// expected verdict and reason after the scenario was played, and returns
// its name then.
func (t *tracker) checkLocked(v *vmState, at time.Time) string {
	r := t.byVM[v.key()]
	if r == nil || !r.Played || r.PlayErr != "" || r.Seen || !v.HasStatus {
		return ""
	}
	if now, ok := v.layer(r.Layer); !ok || now != (state{r.Verdict, r.Reason}) {
		return ""
	}
	r.Seen, r.SeenAt = true, at.Sub(t.start)
	return r.Name
}

// settled says whether every scenario is decided at now: diagnosed as
// built, failed to play, or past its deadline; and whether all were
// diagnosed.
func (t *tracker) settled(now time.Time) (settled, allSeen bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.scenarios) == 0 {
		return false, false
	}
	for _, l := range t.late {
		if len(l.Scenarios) > 0 && !l.Joined && l.Skipped == "" {
			return false, false
		}
	}
	allSeen = true
	for _, r := range t.scenarios {
		if r.Seen {
			continue
		}
		allSeen = false
		if !r.Played || (r.PlayErr == "" && now.Sub(t.start) < r.Due) {
			return false, false
		}
	}
	return true, allSeen
}

// snapshot is a copy of the tracker's state for the view.
type snapshot struct {
	VMs       []vmState
	Recent    []Change
	Scenarios []ScenarioResult
	Changes   int
	Version   uint64
}

func (t *tracker) snapshot() snapshot {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := snapshot{Changes: t.changes, Version: t.version, Recent: append([]Change(nil), t.recent...)}
	for _, v := range t.vms {
		s.VMs = append(s.VMs, *v)
	}
	sort.Slice(s.VMs, func(i, j int) bool { return s.VMs[i].key() < s.VMs[j].key() })
	for _, r := range t.scenarios {
		s.Scenarios = append(s.Scenarios, *r)
	}
	return s
}

func (t *tracker) currentVersion() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.version
}

// result sums up the run at end.
func (t *tracker) result(end time.Time) *Result {
	t.mu.Lock()
	defer t.mu.Unlock()
	res := &Result{
		VMs:      len(t.vms),
		Verdicts: map[string]int{},
		Reasons:  map[string]map[string]int{},
		Changes:  t.changes,
		Errors:   append([]string(nil), t.errors...),
	}
	if !t.firstHealthy.IsZero() {
		res.FirstHealthy = t.firstHealthy.Sub(t.start)
	}
	for _, v := range t.vms {
		o := v.Overall
		if !v.HasStatus {
			o = state{Verdict: "(no status yet)"}
		}
		res.Verdicts[o.Verdict]++
		if res.Reasons[o.Verdict] == nil {
			res.Reasons[o.Verdict] = map[string]int{}
		}
		res.Reasons[o.Verdict][o.Reason]++
	}
	for _, l := range t.late {
		c := *l
		if !c.Joined && c.Skipped == "" {
			c.Skipped = "the demo ended before " + string(c.Tool) + " was built"
		}
		if !c.Joined {
			res.Skipped = append(res.Skipped, c.Scenarios...)
		}
		res.Late = append(res.Late, c)
	}
	elapsed := end.Sub(t.start)
	for _, r := range t.scenarios {
		s := *r
		if v := t.vms[s.Namespace+"/"+s.VM]; v != nil && v.HasStatus {
			s.Overall = v.Overall
			if now, ok := v.layer(s.Layer); ok {
				s.Now = now
			}
		}
		switch {
		case s.Seen:
			s.Outcome = OutcomeDiagnosed
		case !s.Played:
			s.Outcome = OutcomeNotPlayed
		case s.PlayErr != "":
			s.Outcome = OutcomeMissed
		case elapsed < s.Due:
			s.Outcome = OutcomePending
		default:
			s.Outcome = OutcomeMissed
		}
		res.Scenarios = append(res.Scenarios, s)
	}
	return res
}

// watchObservations feeds the tracker from a watch on every
// VMObservation, until ctx ends; the returned channel closes then.
func watchObservations(ctx context.Context, cfg *rest.Config, t *tracker) (<-chan struct{}, error) {
	c, err := cache.New(cfg, cache.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, err
	}
	inf, err := c.GetInformer(ctx, &v1alpha1.VMObservation{})
	if err != nil {
		return nil, err
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if o, ok := obj.(*v1alpha1.VMObservation); ok {
				t.observe(o)
			}
		},
		UpdateFunc: func(_, obj any) {
			if o, ok := obj.(*v1alpha1.VMObservation); ok {
				t.observe(o)
			}
		},
		DeleteFunc: func(obj any) {
			if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if o, ok := obj.(*v1alpha1.VMObservation); ok {
				t.forget(o.Namespace, o.Name)
			}
		},
	}); err != nil {
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = c.Start(ctx)
	}()
	if !c.WaitForCacheSync(ctx) {
		<-done
		return nil, fmt.Errorf("the watch on VMObservations did not sync")
	}
	return done, nil
}
