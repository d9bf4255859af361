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
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
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
	// Builder, when set, builds the tools the demo can start without
	// (kube-controller-manager, Prometheus, kubectl) that are missing:
	// one at a time once the first verdict is in, the scenarios that need
	// one joining when it is built. Without one, or for a tool it cannot
	// build, those scenarios are skipped.
	Builder Builder
	// Out receives the view, the lines and the summary; Err the
	// diagnostics.
	Out, Err io.Writer
}

// Pace is the demo's timing: the engine's thresholds and how fast the
// simulated fleet moves.
type Pace struct {
	Policy verdict.Policy
	// HeartbeatEvery is how often virt-handler beats on live nodes.
	HeartbeatEvery time.Duration
	// StepPause separates the steps of a background migration, so that
	// they can be seen.
	StepPause time.Duration
	// ScenarioStart is when the first scenario plays; ScenarioEvery
	// separates the next ones.
	ScenarioStart, ScenarioEvery time.Duration
	// ChurnMin and ChurnMax bound the pause between two background
	// migrations.
	ChurnMin, ChurnMax time.Duration
	// Slack is added to a scenario's deadline for the controller to catch
	// up before a missing verdict counts as a miss.
	Slack time.Duration
	// ScrapeEvery is how often Prometheus scrapes the virt-handlers, and
	// DomainStats how the manager queries it (Policy.DomainStatsInterval
	// is its Interval). The rate window keeps to the ratio of the other
	// thresholds to their defaults, so that waitScale holds for it too.
	ScrapeEvery time.Duration
	DomainStats domainstats.Config
	// GuestProbe is how the manager probes the guest agents through the
	// simulator's virt-api; its Interval keeps to the ratio of the other
	// thresholds too.
	GuestProbe guestprobe.Config
}

// DemoPace is the pace of `vmobs demo`: thresholds of seconds, changes a
// person can follow.
func DemoPace() Pace {
	p := verdict.DefaultPolicy()
	p.SchedulingTimeout = 20 * time.Second
	p.MigrationPhaseTimeout = 20 * time.Second
	p.HeartbeatTimeout = 15 * time.Second
	p.AgentGracePeriod = 15 * time.Second
	p.HotplugTimeout = 20 * time.Second
	p.VolumeBindingTimeout = 20 * time.Second
	p.HotplugVolumeTimeout = 20 * time.Second
	p.FilesystemsFrozenAfter = 20 * time.Second
	p.StalledAfter = time.Minute
	p.DomainStatsInterval = 2 * time.Second
	p.DomainStatsGrace = 4 * time.Second
	p.GuestCPUStalledAfter = 12 * time.Second
	p.GuestMemoryPressureAfter = 20 * time.Second
	return Pace{
		Policy:         p,
		HeartbeatEvery: 3 * time.Second,
		StepPause:      700 * time.Millisecond,
		ScenarioStart:  5 * time.Second,
		ScenarioEvery:  4 * time.Second,
		ChurnMin:       5 * time.Second,
		ChurnMax:       15 * time.Second,
		Slack:          10 * time.Second,
		ScrapeEvery:    time.Second,
		DomainStats:    domainstats.Config{Options: factsource.Options{Interval: p.DomainStatsInterval}, Window: 8 * time.Second},
		GuestProbe:     guestprobe.Config{Options: factsource.Options{Interval: 10 * time.Second, Timeout: 2 * time.Second}, QPS: 20, Workers: guestprobe.DefaultWorkers},
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
	p.HotplugTimeout = 6 * time.Second
	p.VolumeBindingTimeout = 6 * time.Second
	p.HotplugVolumeTimeout = 6 * time.Second
	p.FilesystemsFrozenAfter = 6 * time.Second
	p.StalledAfter = 30 * time.Second
	// The end-to-end suite's domain stats: one-second samples over a
	// four-second window.
	p.DomainStatsInterval = time.Second
	p.DomainStatsGrace = 3 * time.Second
	p.GuestCPUStalledAfter = 3 * time.Second
	p.GuestMemoryPressureAfter = 3 * time.Second
	return Pace{
		Policy:         p,
		HeartbeatEvery: time.Second,
		StepPause:      150 * time.Millisecond,
		ScenarioStart:  500 * time.Millisecond,
		ScenarioEvery:  300 * time.Millisecond,
		ChurnMin:       time.Second,
		ChurnMax:       3 * time.Second,
		Slack:          5 * time.Second,
		ScrapeEvery:    time.Second,
		DomainStats:    domainstats.Config{Options: factsource.Options{Interval: p.DomainStatsInterval}, Window: 4 * time.Second},
		GuestProbe:     guestprobe.Config{Options: factsource.Options{Interval: 2 * time.Second, Timeout: time.Second}, QPS: 20, Workers: guestprobe.DefaultWorkers},
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
		{p.Policy.HotplugTimeout, d.HotplugTimeout},
		{p.Policy.VolumeBindingTimeout, d.VolumeBindingTimeout},
		{p.Policy.HotplugVolumeTimeout, d.HotplugVolumeTimeout},
		{p.Policy.FilesystemsFrozenAfter, d.FilesystemsFrozenAfter},
		{p.Policy.DomainStatsInterval, d.DomainStatsInterval},
		{p.Policy.DomainStatsGrace, d.DomainStatsGrace},
		{p.Policy.GuestCPUStalledAfter, d.GuestCPUStalledAfter},
		{p.Policy.GuestMemoryPressureAfter, d.GuestMemoryPressureAfter},
		{p.GuestProbe.Interval, guestprobe.Defaults.Interval},
	} {
		r = max(r, float64(x[0])/float64(x[1]))
	}
	return r
}

// factor is how much faster than real time the pace runs: the inverse of
// waitScale, the speed at which the healthy fleet's everyday life plays.
func (p Pace) factor() float64 { return 1 / p.waitScale() }

// Thresholds says the pace's thresholds in one line.
func (p Pace) Thresholds() string {
	return fmt.Sprintf("scheduling timeout %s · migration phase timeout %s · heartbeat timeout %s · agent grace %s · hotplug timeout %s · frozen filesystems %s · guest agents probed every %s",
		p.Policy.SchedulingTimeout, p.Policy.MigrationPhaseTimeout, p.Policy.HeartbeatTimeout, p.Policy.AgentGracePeriod,
		p.Policy.HotplugTimeout, p.Policy.FilesystemsFrozenAfter, p.GuestProbe.Interval)
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
		if _, ok := scenarioByName(o.Scenario); !ok {
			return fmt.Errorf("--scenario %q is not a scripted scenario; the scenarios are: %s", o.Scenario, strings.Join(ScenarioNames(), ", "))
		}
	}
	return nil
}

// storageScenarios are the storage plays the demo scripts, with what
// vmobs is built to say of each (docs/verdicts.md, storage layer) and how
// long after the play, at vmobs' default thresholds: the binding and the
// hotplug timeout (10 minutes) and a minute, or two minutes for what the
// writers' objects and Warning Events say at once.
func storageScenarios() []simulator.Scenario {
	type want struct {
		reason string
		wait   time.Duration
	}
	wants := map[string]want{
		"volume-not-bound":     {v1alpha1.ReasonVolumeNotBound, 11 * time.Minute},
		"import-failed":        {v1alpha1.ReasonDataVolumeFailed, 2 * time.Minute},
		"attach-failed":        {v1alpha1.ReasonVolumeAttachFailed, 2 * time.Minute},
		"multi-attach":         {v1alpha1.ReasonVolumeMultiAttach, 2 * time.Minute},
		"mount-failed":         {v1alpha1.ReasonVolumeMountFailed, 2 * time.Minute},
		"hotplug-volume-stuck": {v1alpha1.ReasonHotplugVolumeStuck, 11 * time.Minute},
	}
	var out []simulator.Scenario
	for _, p := range simulator.StorageScenarios {
		if w, ok := wants[p.Name]; ok {
			out = append(out, p.Scenario(v1alpha1.LayerStorage, v1alpha1.VerdictDegraded, w.reason, w.wait))
		}
	}
	return out
}

// Catalogue is the demo's scripted scenarios: the simulator's catalogue,
// then the storage plays the demo scripts, played on the real PV binder and
// attach-detach controller.
func Catalogue() []simulator.Scenario {
	return append(slices.Clone(simulator.Scenarios), storageScenarios()...)
}

// scenarioByName finds a scenario of the Catalogue.
func scenarioByName(name string) (simulator.Scenario, bool) {
	for _, sc := range Catalogue() {
		if sc.Name == name {
			return sc, true
		}
	}
	return simulator.Scenario{}, false
}

// ScenarioNames lists the scripted scenarios, in catalogue order.
func ScenarioNames() []string {
	var out []string
	for _, sc := range Catalogue() {
		out = append(out, sc.Name)
	}
	return out
}

// ensureControlPlane checks the binaries and builds them when allowed.
func ensureControlPlane(opts Options) error {
	err := testenv.CheckControlPlane()
	if err == nil {
		return nil
	}
	def := checkoutBuilder{root: testenv.RepoRoot()}.assetsDir()
	script := filepath.Join(testenv.RepoRoot(), "hack", "build-controlplane.sh")
	if !opts.BuildControlPlane || filepath.Clean(testenv.AssetsDir()) != def {
		return err
	}
	if _, serr := os.Stat(script); serr != nil {
		return err
	}
	fmt.Fprintf(opts.Out, "control plane binaries missing: building kube-apiserver and etcd with hack/build-controlplane.sh (about 10 minutes from a cold Go cache, once)\n")
	cmd := exec.Command("bash", script)
	cmd.Dir = testenv.RepoRoot()
	cmd.Stdout, cmd.Stderr = opts.Out, opts.Err
	// What the demo can start without is built while it plays.
	cmd.Env = append(os.Environ(), "K8S_VERSION="+testenv.KubernetesVersion, "ENVTEST_DIR="+def, "KUBECTL=skip", "CONTROLLER_MANAGER=skip")
	if rerr := cmd.Run(); rerr != nil {
		return fmt.Errorf("building the control plane: %w", rerr)
	}
	return testenv.CheckControlPlane()
}

// startTestenv runs testenv.Start, which cannot be cancelled; when ctx ends
// first the control plane is stopped as soon as it is up.
func startTestenv(ctx context.Context, controllerManager bool) (*testenv.Env, error) {
	type result struct {
		env *testenv.Env
		err error
	}
	ch := make(chan result, 1)
	go func() {
		// Aggregation: the simulator's virt-api is an aggregated API. The
		// storage scenarios need the PV binder and the attach-detach
		// controller (kube-controller-manager, when built), and CDI's
		// DataVolumes.
		env, err := testenv.Start(testenv.Options{Aggregation: true, ControllerManager: controllerManager, CDI: true})
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
	opts = opts.withDefaultWriters()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if err := ensureControlPlane(opts); err != nil {
		return nil, err
	}
	// A scenario asked for by name whose tool is missing and cannot be
	// built fails before anything starts; in a full run they are skipped.
	why := missingTools()
	late, err := planLateness(why, opts.Builder, opts.Scenario)
	if err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	s := &session{opts: opts, pace: opts.pace(), start: start, promErr: why[ToolPrometheus], late: late}
	defer func() { _ = s.removeTempDir() }()
	if err := s.logToTempDir(); err != nil {
		return nil, err
	}
	// When the output goes away (a closed pipe), the demo stops as if
	// interrupted rather than play on for no one.
	ctx, outGone := context.WithCancel(ctx)
	defer outGone()
	s.setOutput(outGone)

	defer func() {
		if serr := s.stopControlPlane(); serr != nil && err == nil {
			err = fmt.Errorf("stopping the control plane: %w", serr)
		}
	}()
	if err := s.startControlPlane(ctx); err != nil {
		return nil, err
	}
	defer func() {
		if serr := s.stopDomainStats(); serr != nil && err == nil {
			err = fmt.Errorf("stopping Prometheus: %w", serr)
		}
	}()
	// Everything below stops when runCtx ends; the control plane last.
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := s.startManager(runCtx); err != nil {
		return nil, err
	}
	s.playFleet(runCtx)
	stop := s.waitForStop(ctx)
	cancel()
	return s.stopAndSummarize(stop)
}

// withDefaultWriters sends a missing Out or Err to io.Discard.
func (o Options) withDefaultWriters() Options {
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Err == nil {
		o.Err = io.Discard
	}
	return o
}

// pace is FastPace with Fast, else DemoPace.
func (o Options) pace() Pace {
	if o.Fast {
		return FastPace()
	}
	return DemoPace()
}

// session is what one Run starts, kept for the phase that stops it.
type session struct {
	opts  Options
	pace  Pace
	start time.Time

	// The temporary directory and the log file in it.
	tmp     string
	logFile *os.File
	logSink *switchableWriter

	// out is opts.Out serialised; interactive says the live view draws on
	// it (terminal fd).
	out         *syncWriter
	interactive bool
	fd          int

	// late says which tools the demo started without.
	late lateness

	env        *testenv.Env
	envStopped bool
	virtAPI    *simulator.VirtAPI
	cpUp       time.Duration
	kubeconfig string
	hints      []hint
	k8s        client.Client
	sim        *simulator.Simulator

	// promErr says why there are no domain stats (nil: there are); ds is
	// the exporter and Prometheus while they run.
	promErr error
	ds      *domainStats

	tr        *tracker
	director  *director
	mgr       *managerRun
	playStart time.Time
	// Closed or sent to when the watch, the manager, the director, the
	// late tools' builds and the live view (nil without one) have
	// returned.
	watchDone, directorDone, viewDone, joinDone <-chan struct{}
	mgrDone                                     chan error
}

// stopInfo is why and when the fleet stopped playing.
type stopInfo struct {
	reason string
	played time.Duration
	end    time.Time
}

// say prints a timestamped line.
func (s *session) say(format string, a ...any) {
	fmt.Fprintf(s.opts.Out, "%s %s\n", stamp(s.start, time.Now()), fmt.Sprintf(format, a...))
}

// logToTempDir makes the demo's temporary directory and sends the logs of
// the manager, client-go and the simulator to a file in it: their lines
// would tear the live view.
func (s *session) logToTempDir() error {
	tmp, err := os.MkdirTemp("", "vmobs-demo-")
	if err != nil {
		return err
	}
	s.tmp = tmp
	logFile, err := os.Create(filepath.Join(tmp, "controller.log"))
	if err != nil {
		return err
	}
	s.logFile = logFile
	// Goroutines of client-go (the event broadcaster) may still log after
	// Run returns, and read the global loggers while a later Run in the
	// same process would set them: the loggers are set once per process,
	// onto a writer each Run points at its own file and switches off.
	demoLog.to(logFile)
	s.logSink = demoLog
	setDemoLoggers.Do(func() {
		logger := zap.New(zap.WriteTo(demoLog), zap.UseDevMode(false))
		ctrl.SetLogger(logger)
		klog.SetLogger(logger.WithName("klog"))
	})
	return nil
}

// demoLog is where the demo's loggers write: the current Run's log file,
// or nowhere between Runs. setDemoLoggers points the global loggers at it.
var (
	demoLog        = &switchableWriter{}
	setDemoLoggers sync.Once
)

// removeTempDir switches the log off, closes its file and removes the
// temporary directory. Run calls it at the end and again when it returns
// (then it does nothing), so it runs on every error path too.
func (s *session) removeTempDir() error {
	if s.logSink != nil {
		s.logSink.off()
	}
	if s.logFile != nil {
		_ = s.logFile.Close()
	}
	return os.RemoveAll(s.tmp)
}

// setOutput serialises opts.Out, which the director, the watch and Run all
// write, calling outGone when a write fails; and decides between the live
// view and plain lines.
func (s *session) setOutput(outGone func()) {
	s.interactive = !s.opts.NonInteractive && isTerminal(s.opts.Out)
	s.fd = -1
	if f, ok := s.opts.Out.(*os.File); ok {
		s.fd = int(f.Fd())
	}
	s.out = &syncWriter{w: s.opts.Out, onErr: outGone}
	s.opts.Out = s.out
	if !s.opts.NonInteractive && !s.interactive {
		fmt.Fprintln(s.opts.Out, "vmobs demo: standard output is not a terminal: printing plain lines (as --non-interactive)")
	}
}

// startControlPlane starts kube-apiserver and etcd, writes their admin
// kubeconfig (to KubeconfigOut, else into the temporary directory) and
// makes the client the simulator writes with.
func (s *session) startControlPlane(ctx context.Context) error {
	s.say("starting kube-apiserver %s and etcd from %s", testenv.KubernetesVersion, displayPath(testenv.AssetsDir()))
	env, err := startTestenv(ctx, !s.late.missing(ToolControllerManager))
	if err != nil {
		return err
	}
	s.env = env
	s.cpUp = time.Since(s.start)
	s.say("control plane up at %s in %s, CRDs installed (VMObservation and KubeVirt's)", env.Config.Host, s.cpUp.Round(100*time.Millisecond))

	s.kubeconfig = s.opts.KubeconfigOut
	if s.kubeconfig == "" {
		s.kubeconfig = filepath.Join(s.tmp, "kubeconfig")
	} else if abs, aerr := filepath.Abs(s.kubeconfig); aerr == nil {
		s.kubeconfig = abs
	}
	if err := env.Kubeconfig(s.kubeconfig); err != nil {
		return fmt.Errorf("writing the kubeconfig: %w", err)
	}
	s.hints = kubectlHints(s.kubeconfig)
	s.k8s, err = env.Client()
	if err != nil {
		return err
	}
	s.sim = simulator.New(s.k8s, simulator.WithSeed(s.opts.Seed))
	// virt-api's guest agent subresources, which the manager probes, go
	// through kube-apiserver as on a cluster.
	s.virtAPI, err = s.sim.ServeVirtAPI(ctx, env)
	if err != nil {
		return fmt.Errorf("serving virt-api: %w", err)
	}
	s.say("virt-api: the simulator's %s/%s registered as an APIService; guest agents probed every %s",
		s.virtAPI.AggregatedAPI().Group, s.virtAPI.AggregatedAPI().Version, s.pace.GuestProbe.Interval)
	// The storage scenarios' CSI driver and StorageClasses; claims are
	// bound and volumes attached by kube-controller-manager's own PV
	// binder and attach-detach controller.
	if err := s.sim.EnsureStorage(ctx); err != nil {
		return fmt.Errorf("the simulated CSI driver: %w", err)
	}
	if !s.late.missing(ToolControllerManager) {
		s.say("storage: kube-controller-manager's PV binder and attach-detach controller, a simulated CSI driver (%s), CDI's DataVolumes",
			simulator.CSIDriver)
	} else {
		s.say("storage: a simulated CSI driver (%s), CDI's DataVolumes; %s", simulator.CSIDriver, s.lateSay(ToolControllerManager))
	}
	if s.late.missing(ToolKubectl) {
		s.say("kubectl: %s", s.lateSay(ToolKubectl))
	}
	return nil
}

// lateSay says what becomes of a missing tool and what needs it.
func (s *session) lateSay(t Tool) string {
	scs := scenariosNeeding(t, s.opts.Scenario)
	what := t.what()
	if len(scs) > 0 {
		what += " (" + strings.Join(scs, ", ") + ")"
	}
	if err := s.late.skipped[t]; err != nil {
		if len(scs) == 0 {
			return err.Error()
		}
		return fmt.Sprintf("%v: %s are skipped", err, what)
	}
	return fmt.Sprintf("%s is not built yet: built in the background once the first verdict is in, %s join then", t, what)
}

// stopControlPlane stops virt-api, then the control plane, once; later
// calls, and a call before it started, do nothing.
func (s *session) stopControlPlane() error {
	if s.env == nil || s.envStopped {
		return nil
	}
	s.envStopped = true
	var err error
	if s.virtAPI != nil {
		err = s.virtAPI.Close()
	}
	return errors.Join(err, s.env.Stop())
}

// startManager starts the watch that feeds the tracker, then the vmobs
// manager in-process at the demo's pace, until ctx ends.
func (s *session) startManager(ctx context.Context) error {
	s.tr = newTracker(s.start)
	watchDone, err := watchObservations(ctx, s.env.Config, s.tr)
	if err != nil {
		return err
	}
	s.watchDone = watchDone
	for _, t := range lateTools {
		if !s.late.missing(t) {
			continue
		}
		why := ""
		if err := s.late.skipped[t]; err != nil {
			why = err.Error()
		}
		s.tr.waitTool(t, scenariosNeeding(t, s.opts.Scenario), why)
	}
	var promURL string
	if s.promErr != nil {
		s.say("domain stats: %s", s.lateSay(ToolPrometheus))
	} else if promURL, err = s.startDomainStats(ctx); err != nil {
		return err
	}
	s.mgr, err = startManagerRun(ctx, s.env.Config, s.pace, promURL)
	if err != nil {
		return err
	}
	s.mgrDone = s.mgr.done

	s.say("vmobs manager running in-process: %s", s.pace.Thresholds())
	for _, h := range s.hints {
		s.say("%s: %s", h.what, h.cmd)
	}
	return nil
}

// managerOptions are the in-process manager's options (app.InProcessOptions,
// so the demo can share its process with other managers) with the pace's
// thresholds, reading domain stats from promURL unless it is empty and
// probing the guest agents at the pace's interval; the evidence refresh is
// off, as it ships.
func managerOptions(pace Pace, promURL string) app.Options {
	o := app.InProcessOptions()
	o.Policy = pace.Policy
	o.GuestProbe = pace.GuestProbe
	if promURL != "" {
		o.PrometheusURL = promURL
		o.DomainStats = pace.DomainStats
	}
	return o
}

// startDomainStats starts the virt-handler exporter and Prometheus, which
// scrapes the nodes the fleet is planned on and every node added later,
// until ctx ends, and returns Prometheus' URL.
func (s *session) startDomainStats(ctx context.Context) (string, error) {
	planned := append(workerNodes(s.opts.VMs), simulator.ScenarioNodes...)
	ds, err := startDomainStats(s.sim, s.pace.ScrapeEvery, planned)
	if err != nil {
		return "", fmt.Errorf("domain stats: %w", err)
	}
	s.ds = ds
	// Said before followNodes, which then owns ds.nodes.
	s.sayOrNote("domain stats: Prometheus at %s scraping %d virt-handlers every %s (and each node added); the manager queries it every %s over %s",
		ds.prom.URL, len(ds.nodes), s.pace.ScrapeEvery, s.pace.DomainStats.Interval, s.pace.DomainStats.Window)
	ds.followNodes(ctx, s.k8s, s.pace.ScrapeEvery, s.tr.errorf)
	return ds.prom.URL, nil
}

// stopDomainStats stops Prometheus and the exporter once; later calls,
// and a call when they did not start, do nothing.
func (s *session) stopDomainStats() error {
	if s.ds == nil {
		return nil
	}
	ds := s.ds
	s.ds = nil
	return ds.stop()
}

// sayOrNote says a line before the fleet plays, and notes it (in the
// live view or as a plain line) once it does.
func (s *session) sayOrNote(format string, a ...any) {
	if s.playStart.IsZero() {
		s.say(format, a...)
		return
	}
	s.tr.note(fmt.Sprintf(format, a...))
}

// playFleet starts the director, which plays the healthy fleet and the
// scenarios through the simulator, and the live view or the plain lines
// that show them, until ctx ends.
func (s *session) playFleet(ctx context.Context) {
	d := newDirector(s.sim, s.tr, s.pace, s.opts, s.late.missing)
	s.director = d
	var view *liveView
	if s.interactive {
		view = newLiveView(s.opts.Out, s.fd, s.tr, s.pace, s.opts, s.hints, s.start)
	} else {
		s.tr.setOutput(
			func(c Change) { fmt.Fprintln(s.opts.Out, c.Line(s.start)) },
			func(at time.Time, msg string) { fmt.Fprintf(s.opts.Out, "%s %s\n", stamp(s.start, at), msg) })
	}
	s.playStart = time.Now()
	s.directorDone = simulator.GoDone(func() { d.run(ctx) })
	if view != nil {
		s.viewDone = simulator.GoDone(func() { view.run(ctx) })
	}
	if len(s.late.build) > 0 {
		s.joinDone = simulator.GoDone(func() { s.buildAndJoin(ctx, s.tr.firstChange) })
	}
}

// waitForStop waits until ctx ends (an interrupt, or the output closed),
// Duration passes, every scenario is settled (with UntilSettled) or the
// manager stops, and says which and when.
func (s *session) waitForStop(ctx context.Context) stopInfo {
	var deadline <-chan time.Time
	if s.opts.Duration > 0 {
		t := time.NewTimer(s.opts.Duration)
		defer t.Stop()
		deadline = t.C
	}
	var settle <-chan time.Time
	if s.opts.UntilSettled {
		tk := time.NewTicker(250 * time.Millisecond)
		defer tk.Stop()
		settle = tk.C
	}
	reason := s.stopReason(ctx, deadline, settle)
	return stopInfo{reason: reason, played: time.Since(s.playStart), end: time.Now()}
}

// stopReason blocks until the first reason to stop and says it.
func (s *session) stopReason(ctx context.Context, deadline, settle <-chan time.Time) string {
	for {
		select {
		case <-ctx.Done():
			if s.out.failed() {
				return "the output was closed"
			}
			return "interrupted"
		case <-deadline:
			return fmt.Sprintf("--duration %s reached", s.opts.Duration)
		case now := <-settle:
			if done, allSeen := s.tr.settled(now); done {
				if !allSeen {
					return "every scripted scenario diagnosed as built or past its deadline"
				}
				return "every scripted scenario diagnosed as built"
			}
		case err := <-s.mgrDone:
			// Put it back for waitForShutdown.
			s.mgrDone <- err
			return fmt.Sprintf("the manager stopped: %v", err)
		}
	}
}

// stopAndSummarize, once Run cancelled the fleet's context, waits for the
// view, the director, the manager and the watch, stops the control plane,
// removes the temporary directory and prints the summary.
func (s *session) stopAndSummarize(stop stopInfo) (*Result, error) {
	mgrErr := s.waitForShutdown(stop.reason)
	res := s.result(stop, mgrErr)
	dsErr := s.stopDomainStats()
	cpErr := s.stopControlPlane()
	rmErr := s.removeTempDir()
	res.Elapsed = time.Since(s.start)
	kept := ""
	if s.opts.KubeconfigOut != "" {
		kept = s.kubeconfig
	}
	writeSummary(s.opts.Out, res, s.pace, s.hints, kept)
	if dsErr != nil {
		return res, fmt.Errorf("stopping Prometheus: %w", dsErr)
	}
	if cpErr != nil {
		return res, fmt.Errorf("stopping the control plane: %w", cpErr)
	}
	if rmErr != nil {
		return res, fmt.Errorf("removing %s: %w", s.tmp, rmErr)
	}
	return res, nil
}

// waitForShutdown says the demo is stopping and waits for the goroutines
// that the fleet's context ends; it returns the manager's error.
func (s *session) waitForShutdown(reason string) error {
	if s.viewDone != nil {
		<-s.viewDone
	}
	// A build still running is stopped; a tool joining is waited for.
	if s.joinDone != nil {
		<-s.joinDone
	}
	if !s.interactive {
		s.say("stopping (%s): simulator, manager, %scontrol plane", reason, s.promStopping())
	} else {
		fmt.Fprintf(s.opts.Out, "\nvmobs demo: stopping (%s): simulator, manager, %scontrol plane…\n", reason, s.promStopping())
	}
	<-s.directorDone
	mgrErr := <-s.mgrDone
	<-s.watchDone
	return mgrErr
}

// promStopping names Prometheus in the stopping line when it runs.
func (s *session) promStopping() string {
	if s.ds == nil {
		return ""
	}
	return "Prometheus, "
}

// result is the tracker's result with what the session knows: the run's
// timing and stop reason, the number of Nodes and the manager's error.
func (s *session) result(stop stopInfo, mgrErr error) *Result {
	res := s.tr.result(stop.end)
	res.TempDir = s.tmp
	res.ControlPlaneUp = s.cpUp
	res.Played = stop.played
	res.StopReason = stop.reason
	res.Seed = s.opts.Seed
	res.Nodes = s.countNodes()
	res.NodeObservations, res.NodeIncidents = s.nodeVerdicts()
	res.Prometheus = s.ds != nil
	if mgrErr != nil && !errors.Is(mgrErr, context.Canceled) {
		res.Errors = append(res.Errors, "manager: "+mgrErr.Error())
	}
	return res
}

// countNodes counts the Nodes, zero when they cannot be listed; it has a
// context of its own, as the demo's has ended.
func (s *session) countNodes() int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var nodes corev1.NodeList
	if err := s.k8s.List(ctx, &nodes); err != nil {
		return 0
	}
	return len(nodes.Items)
}

// nodeVerdicts are the NodeObservations' verdicts and reasons by node,
// and the member counts of their open incidents, nil when they cannot be
// listed; like countNodes, with a context of its own.
func (s *session) nodeVerdicts() (map[string]string, map[string]int) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var l v1alpha1.NodeObservationList
	if err := s.k8s.List(ctx, &l); err != nil {
		return nil, nil
	}
	verdicts, incidents := make(map[string]string, len(l.Items)), map[string]int{}
	for _, o := range l.Items {
		verdicts[o.Name] = string(o.Status.Verdict) + "/" + o.Status.Reason
		if inc := o.Status.Incident; inc != nil && inc.State == v1alpha1.IncidentOpen {
			incidents[o.Name] = int(inc.MemberCount)
		}
	}
	return verdicts, incidents
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
	hints := []hint{
		{"kubectl", fmt.Sprintf("%s --kubeconfig %s get vmobs -A -o wide", kubectl, kubeconfig)},
		{"kubectl", fmt.Sprintf("%s --kubeconfig %s get nodeobservations", kubectl, kubeconfig)},
	}
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

func (s *switchableWriter) to(w io.Writer) {
	s.mu.Lock()
	s.w = w
	s.mu.Unlock()
}

func (s *switchableWriter) off() {
	s.mu.Lock()
	s.w = nil
	s.mu.Unlock()
}

// managerRun is the in-process vmobs manager, which runs until its
// context ends and is replaced by a new one when the domain stats join.
type managerRun struct {
	restarts chan managerRestart
	// done receives the error of the last manager, once.
	done chan error
}

// managerRestart asks for a manager reading domain stats from promURL;
// the result comes on started.
type managerRestart struct {
	promURL string
	started chan error
}

// startManagerRun starts the manager at pace, reading domain stats from
// promURL unless it is empty, until ctx ends.
func startManagerRun(ctx context.Context, cfg *rest.Config, pace Pace, promURL string) (*managerRun, error) {
	mgr, err := app.NewManager(cfg, managerOptions(pace, promURL))
	if err != nil {
		return nil, err
	}
	m := &managerRun{restarts: make(chan managerRestart), done: make(chan error, 1)}
	go func() {
		for {
			mctx, cancel := context.WithCancel(ctx)
			stopped := make(chan error, 1)
			go func() { stopped <- mgr.Start(mctx) }()
			select {
			case err := <-stopped:
				cancel()
				m.done <- err
				return
			case r := <-m.restarts:
				cancel()
				if err := <-stopped; err != nil {
					r.started <- err
					m.done <- err
					return
				}
				next, err := app.NewManager(cfg, managerOptions(pace, r.promURL))
				r.started <- err
				if err != nil {
					m.done <- err
					return
				}
				mgr = next
			}
		}
	}()
	return m, nil
}

// restart stops the manager and starts one that reads domain stats from
// promURL. The VMObservations stay as they are meanwhile: the new manager
// takes them up as a new leader would.
func (m *managerRun) restart(ctx context.Context, promURL string) error {
	r := managerRestart{promURL: promURL, started: make(chan error, 1)}
	select {
	case m.restarts <- r:
	case <-ctx.Done():
		return ctx.Err()
	}
	return <-r.started
}
