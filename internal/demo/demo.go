// Package demo runs vmobs against a simulated KubeVirt fleet with no
// cluster: it starts the test control plane (kube-apiserver and etcd from
// bin/k8s, through internal/testenv), runs the manager in-process with
// thresholds of seconds instead of minutes, plays healthy VMs and one VM
// per scripted scenario of internal/simulator through the simulator, and
// shows the VMObservations as they change. `vmobs demo` and `make demo`
// run it.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/vmobs/vmobs/internal/app"
	"github.com/vmobs/vmobs/internal/scheme"
	"github.com/vmobs/vmobs/internal/simulator"
	"github.com/vmobs/vmobs/internal/testenv"
	"github.com/vmobs/vmobs/internal/verdict"
)

// Options configure a demo run.
type Options struct {
	// VMs is the number of healthy background VMs, besides the one VM per
	// scripted scenario.
	VMs int
	// Duration is how long the fleet plays once the control plane is up;
	// zero plays until ctx is cancelled.
	Duration time.Duration
	// Seed seeds the simulator and the demo's own random choices.
	Seed int64
	// Scenario, when set, plays only that scripted scenario.
	Scenario string
	// NonInteractive prints timestamped lines instead of the live view.
	// The live view also needs Out to be a terminal.
	NonInteractive bool
	// KubeconfigOut is where to write the admin kubeconfig; empty writes
	// it into the demo's temporary directory.
	KubeconfigOut string
	// Fast uses thresholds of a few seconds and a quicker pace (tests).
	Fast bool
	// UntilSettled ends the demo as soon as every scripted scenario is
	// settled: it showed the verdict it is built to produce, or its
	// deadline passed (Duration still caps the run).
	UntilSettled bool
	// BuildControlPlane runs hack/build-controlplane.sh when the control
	// plane binaries are missing from bin/k8s; otherwise their absence is
	// an error.
	BuildControlPlane bool
	// Out receives the view, the lines and the summary; Err the
	// diagnostics.
	Out, Err io.Writer
}

// Pace is the demo's timing: the engine's thresholds and how fast the
// simulated fleet moves.
type Pace struct {
	Policy verdict.Policy
	// Refresh is the manager's evidence refresh interval.
	Refresh time.Duration
	// HeartbeatEvery is how often virt-handler beats on live nodes.
	HeartbeatEvery time.Duration
	// StepPause separates the steps of a boot or of a background
	// migration, so that they can be seen.
	StepPause time.Duration
	// BootStagger separates the starts of the healthy VMs' boots.
	BootStagger time.Duration
	// ScenarioStart is when the first scenario plays; ScenarioEvery
	// separates the next ones.
	ScenarioStart, ScenarioEvery time.Duration
	// ChurnMin and ChurnMax bound the pause between two background
	// migrations.
	ChurnMin, ChurnMax time.Duration
	// Slack is added to a scenario's deadline for the controller to catch
	// up before a missing verdict counts as a miss.
	Slack time.Duration
}

// DemoPace is the pace of `vmobs demo`: thresholds of seconds, changes a
// person can follow.
func DemoPace() Pace {
	p := verdict.DefaultPolicy()
	p.SchedulingTimeout = 20 * time.Second
	p.MigrationPhaseTimeout = 20 * time.Second
	p.HeartbeatTimeout = 15 * time.Second
	p.AgentGracePeriod = 15 * time.Second
	p.StalledAfter = time.Minute
	return Pace{
		Policy:         p,
		Refresh:        time.Minute,
		HeartbeatEvery: 3 * time.Second,
		StepPause:      700 * time.Millisecond,
		BootStagger:    400 * time.Millisecond,
		ScenarioStart:  5 * time.Second,
		ScenarioEvery:  4 * time.Second,
		ChurnMin:       5 * time.Second,
		ChurnMax:       15 * time.Second,
		Slack:          10 * time.Second,
	}
}

// FastPace is the pace of --fast: the end-to-end suite's thresholds, for
// tests.
func FastPace() Pace {
	p := verdict.DefaultPolicy()
	p.SchedulingTimeout = 6 * time.Second
	p.MigrationPhaseTimeout = 6 * time.Second
	p.HeartbeatTimeout = 6 * time.Second
	p.AgentGracePeriod = 5 * time.Second
	p.StalledAfter = 30 * time.Second
	return Pace{
		Policy:         p,
		Refresh:        20 * time.Second,
		HeartbeatEvery: time.Second,
		StepPause:      150 * time.Millisecond,
		BootStagger:    250 * time.Millisecond,
		ScenarioStart:  500 * time.Millisecond,
		ScenarioEvery:  300 * time.Millisecond,
		ChurnMin:       time.Second,
		ChurnMax:       3 * time.Second,
		Slack:          5 * time.Second,
	}
}

// waitScale converts a scenario's Wait, written for vmobs' default
// thresholds, to this pace: the largest ratio of a pace threshold to its
// default.
func (p Pace) waitScale() float64 {
	d := verdict.DefaultPolicy()
	r := 0.0
	for _, x := range [][2]time.Duration{
		{p.Policy.SchedulingTimeout, d.SchedulingTimeout},
		{p.Policy.MigrationPhaseTimeout, d.MigrationPhaseTimeout},
		{p.Policy.HeartbeatTimeout, d.HeartbeatTimeout},
		{p.Policy.AgentGracePeriod, d.AgentGracePeriod},
	} {
		r = max(r, float64(x[0])/float64(x[1]))
	}
	return r
}

// Thresholds says the pace's thresholds in one line.
func (p Pace) Thresholds() string {
	return fmt.Sprintf("scheduling timeout %s · migration phase timeout %s · heartbeat timeout %s · agent grace %s",
		p.Policy.SchedulingTimeout, p.Policy.MigrationPhaseTimeout, p.Policy.HeartbeatTimeout, p.Policy.AgentGracePeriod)
}

// Validate checks the options a user gives.
func (o Options) Validate() error {
	if o.VMs < 0 {
		return fmt.Errorf("--vms must be 0 or more, not %d", o.VMs)
	}
	if o.VMs > 500 {
		return fmt.Errorf("--vms %d is more than the demo's 500", o.VMs)
	}
	if o.Duration < 0 {
		return fmt.Errorf("--duration must not be negative")
	}
	if o.Scenario != "" {
		if _, ok := simulator.ScenarioByName(o.Scenario); !ok {
			return fmt.Errorf("--scenario %q is not a scripted scenario; the scenarios are: %s", o.Scenario, strings.Join(ScenarioNames(), ", "))
		}
	}
	return nil
}

// ScenarioNames lists the scripted scenarios, in catalogue order.
func ScenarioNames() []string {
	var out []string
	for _, sc := range simulator.Scenarios {
		out = append(out, sc.Name)
	}
	return out
}

// ensureControlPlane checks the binaries and builds them when allowed.
func ensureControlPlane(opts Options) error {
	err := testenv.CheckAssets()
	if err == nil {
		return nil
	}
	def := filepath.Join(testenv.RepoRoot(), "bin", "k8s", fmt.Sprintf("%s-%s-%s", testenv.KubernetesVersion, runtime.GOOS, runtime.GOARCH))
	script := filepath.Join(testenv.RepoRoot(), "hack", "build-controlplane.sh")
	if !opts.BuildControlPlane || filepath.Clean(testenv.AssetsDir()) != def {
		return err
	}
	if _, serr := os.Stat(script); serr != nil {
		return err
	}
	fmt.Fprintf(opts.Out, "control plane binaries missing: building them with hack/build-controlplane.sh (about 7 minutes from a cold Go cache, once)\n")
	cmd := exec.Command("bash", script)
	cmd.Dir = testenv.RepoRoot()
	cmd.Stdout, cmd.Stderr = opts.Out, opts.Err
	cmd.Env = append(os.Environ(), "K8S_VERSION="+testenv.KubernetesVersion, "ENVTEST_DIR="+def)
	if rerr := cmd.Run(); rerr != nil {
		return fmt.Errorf("building the control plane: %w", rerr)
	}
	return testenv.CheckAssets()
}

// startControlPlane runs testenv.Start, which cannot be cancelled; when ctx
// ends first the control plane is stopped as soon as it is up.
func startControlPlane(ctx context.Context) (*testenv.Env, error) {
	type result struct {
		env *testenv.Env
		err error
	}
	ch := make(chan result, 1)
	go func() {
		env, err := testenv.Start(testenv.Options{})
		ch <- result{env, err}
	}()
	select {
	case r := <-ch:
		return r.env, r.err
	case <-ctx.Done():
		r := <-ch
		if r.env != nil {
			_ = r.env.Stop()
		}
		return nil, ctx.Err()
	}
}

// Run plays the demo until ctx ends, Duration passes or (with
// UntilSettled) every scenario is settled, then stops everything
// it started, removes its temporary files and prints the summary.
func Run(ctx context.Context, opts Options) (res *Result, err error) {
	start := time.Now()
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	if opts.Err == nil {
		opts.Err = io.Discard
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	pace := DemoPace()
	if opts.Fast {
		pace = FastPace()
	}
	if err := ensureControlPlane(opts); err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}

	tmp, err := os.MkdirTemp("", "vmobs-demo-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)

	// The manager, client-go and the simulator log to a file in the
	// temporary directory: their lines would tear the live view.
	logFile, err := os.Create(filepath.Join(tmp, "controller.log"))
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	// Goroutines of client-go (the event broadcaster) may still log after
	// Run returns; they write into a writer that is switched off rather than
	// racing with a logger swap.
	logSink := &switchableWriter{w: logFile}
	defer logSink.off()
	logger := zap.New(zap.WriteTo(logSink), zap.UseDevMode(false))
	ctrl.SetLogger(logger)
	klog.SetLogger(logger.WithName("klog"))

	interactive := !opts.NonInteractive && isTerminal(opts.Out)
	fd := -1
	if f, ok := opts.Out.(*os.File); ok {
		fd = int(f.Fd())
	}
	// The director, the watch and this function all write.
	// When the output goes away (a closed pipe), the demo stops as if
	// interrupted rather than play on for no one.
	ctx, outGone := context.WithCancel(ctx)
	defer outGone()
	out := &syncWriter{w: opts.Out, onErr: outGone}
	opts.Out = out
	if !opts.NonInteractive && !interactive {
		fmt.Fprintln(opts.Out, "vmobs demo: standard output is not a terminal: printing plain lines (as --non-interactive)")
	}
	say := func(format string, a ...any) {
		fmt.Fprintf(opts.Out, "%s %s\n", stamp(start, time.Now()), fmt.Sprintf(format, a...))
	}
	say("starting kube-apiserver %s and etcd from %s", testenv.KubernetesVersion, displayPath(testenv.AssetsDir()))
	env, err := startControlPlane(ctx)
	if err != nil {
		return nil, err
	}
	stopped := false
	stopEnv := func() error {
		if stopped {
			return nil
		}
		stopped = true
		return env.Stop()
	}
	defer func() {
		if serr := stopEnv(); serr != nil && err == nil {
			err = fmt.Errorf("stopping the control plane: %w", serr)
		}
	}()
	cpUp := time.Since(start)
	say("control plane up at %s in %s, CRDs installed (VMObservation and KubeVirt's)", env.Config.Host, cpUp.Round(100*time.Millisecond))

	kubeconfig := opts.KubeconfigOut
	if kubeconfig == "" {
		kubeconfig = filepath.Join(tmp, "kubeconfig")
	} else if abs, aerr := filepath.Abs(kubeconfig); aerr == nil {
		kubeconfig = abs
	}
	if err := env.Kubeconfig(kubeconfig); err != nil {
		return nil, fmt.Errorf("writing the kubeconfig: %w", err)
	}
	hints := kubectlHints(kubeconfig)

	k8s, err := client.New(env.Config, client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, err
	}

	// Everything below stops when runCtx ends; the control plane last.
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()

	tr := newTracker(start)
	watchDone, err := watchObservations(runCtx, env.Config, tr)
	if err != nil {
		return nil, err
	}

	mopts := app.Defaults()
	mopts.MetricsAddr, mopts.ProbeAddr, mopts.SecureMetrics = "0", "0", false
	mopts.SkipNameValidation = true
	mopts.Registry = prometheus.NewRegistry()
	mopts.Policy = pace.Policy
	mopts.EvidenceRefreshInterval = pace.Refresh
	mgr, err := app.NewManager(env.Config, mopts)
	if err != nil {
		return nil, err
	}
	mgrDone := make(chan error, 1)
	go func() { mgrDone <- mgr.Start(runCtx) }()

	say("vmobs manager running in-process: %s", pace.Thresholds())
	for _, h := range hints {
		say("%s: %s", h.what, h.cmd)
	}

	sim := simulator.New(k8s, simulator.WithSeed(opts.Seed))
	d := newDirector(sim, tr, pace, opts)

	var view *liveView
	if interactive {
		view = newLiveView(opts.Out, fd, tr, pace, opts, hints, start)
	} else {
		tr.setOutput(
			func(c Change) { fmt.Fprintln(opts.Out, c.Line(start)) },
			func(at time.Time, msg string) { fmt.Fprintf(opts.Out, "%s %s\n", stamp(start, at), msg) })
	}

	playStart := time.Now()
	var stopReason string
	var deadline <-chan time.Time
	if opts.Duration > 0 {
		t := time.NewTimer(opts.Duration)
		defer t.Stop()
		deadline = t.C
	}
	directorDone := make(chan struct{})
	go func() {
		defer close(directorDone)
		d.run(runCtx)
	}()
	var viewDone chan struct{}
	if view != nil {
		viewDone = make(chan struct{})
		go func() {
			defer close(viewDone)
			view.run(runCtx)
		}()
	}
	var settle <-chan time.Time
	if opts.UntilSettled {
		tk := time.NewTicker(250 * time.Millisecond)
		defer tk.Stop()
		settle = tk.C
	}
wait:
	for {
		select {
		case <-ctx.Done():
			stopReason = "interrupted"
			if out.failed() {
				stopReason = "the output was closed"
			}
			break wait
		case <-deadline:
			stopReason = fmt.Sprintf("--duration %s reached", opts.Duration)
			break wait
		case now := <-settle:
			if done, allSeen := tr.settled(now); done {
				stopReason = "every scripted scenario diagnosed as built"
				if !allSeen {
					stopReason = "every scripted scenario diagnosed as built or past its deadline"
				}
				break wait
			}
		case err := <-mgrDone:
			stopReason = fmt.Sprintf("the manager stopped: %v", err)
			mgrDone <- err
			break wait
		}
	}
	played := time.Since(playStart)
	end := time.Now()
	cancel()
	if viewDone != nil {
		<-viewDone
	}
	if !interactive {
		say("stopping (%s): simulator, manager, control plane", stopReason)
	} else {
		fmt.Fprintf(opts.Out, "\nvmobs demo: stopping (%s): simulator, manager, control plane…\n", stopReason)
	}
	<-directorDone
	mgrErr := <-mgrDone
	<-watchDone
	res = tr.result(end)
	res.TempDir = tmp
	res.ControlPlaneUp = cpUp
	res.Played = played
	res.StopReason = stopReason
	res.Seed = opts.Seed
	var nodes corev1.NodeList
	lctx, lcancel := context.WithTimeout(context.Background(), 5*time.Second)
	if err := k8s.List(lctx, &nodes); err == nil {
		res.Nodes = len(nodes.Items)
	}
	lcancel()
	if mgrErr != nil && !errors.Is(mgrErr, context.Canceled) {
		res.Errors = append(res.Errors, "manager: "+mgrErr.Error())
	}
	cpErr := stopEnv()
	logSink.off()
	_ = logFile.Close()
	rmErr := os.RemoveAll(tmp)
	res.Elapsed = time.Since(start)
	kept := ""
	if opts.KubeconfigOut != "" {
		kept = kubeconfig
	}
	writeSummary(opts.Out, res, pace, hints, kept)
	if cpErr != nil {
		return res, fmt.Errorf("stopping the control plane: %w", cpErr)
	}
	if rmErr != nil {
		return res, fmt.Errorf("removing %s: %w", tmp, rmErr)
	}
	return res, nil
}

// syncWriter serialises writes, and calls onErr once when one fails.
type syncWriter struct {
	mu    sync.Mutex
	w     io.Writer
	err   error
	onErr func()
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.w.Write(p)
	if err != nil {
		s.err = err
		if s.onErr != nil {
			s.onErr()
		}
	}
	return n, err
}

func (s *syncWriter) failed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err != nil
}

// isTerminal says whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	return termIsTerminal(int(f.Fd()))
}

// displayPath shortens p to a path relative to the working directory when
// it lies below it.
func displayPath(p string) string {
	wd, err := os.Getwd()
	if err != nil {
		return p
	}
	rel, err := filepath.Rel(wd, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return p
	}
	return rel
}

// hint is a command that reaches the demo's API server.
type hint struct{ what, cmd string }

// kubectlHints are the commands that reach the demo's API server with the
// real kubectl (and the kubectl-vmobs plugin when one is built).
func kubectlHints(kubeconfig string) []hint {
	kubectl := displayPath(filepath.Join(testenv.AssetsDir(), "kubectl"))
	hints := []hint{{"kubectl", fmt.Sprintf("%s --kubeconfig %s get vmobs -A -o wide", kubectl, kubeconfig)}}
	plugin := filepath.Join(testenv.RepoRoot(), "bin", "kubectl-vmobs")
	if fi, err := os.Stat(plugin); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
		hints = append(hints, hint{"kubectl vmobs", fmt.Sprintf("PATH=%s:\"$PATH\" %s vmobs get -A --kubeconfig %s", filepath.Dir(plugin), kubectl, kubeconfig)})
	}
	return hints
}

// switchableWriter passes writes on until it is switched off, then drops
// them.
type switchableWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *switchableWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.w == nil {
		return len(p), nil
	}
	return s.w.Write(p)
}

func (s *switchableWriter) off() {
	s.mu.Lock()
	s.w = nil
	s.mu.Unlock()
}
