package demo

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/vmobs/vmobs/internal/simulator"
	"github.com/vmobs/vmobs/internal/testenv"
)

// Tool is a binary the demo can start without: the scenarios that need it
// join once it is built, or are skipped.
type Tool string

// The tools the demo can start without. kube-apiserver and etcd it cannot:
// they are the control plane.
const (
	// ToolControllerManager is kube-controller-manager, whose PV binder
	// and attach-detach controller the storage scenarios play on.
	ToolControllerManager Tool = "kube-controller-manager"
	// ToolPrometheus is the Prometheus server the domain-stats scenarios
	// are read through.
	ToolPrometheus Tool = "Prometheus"
	// ToolKubectl is the kubectl of the hints the demo prints; no
	// scenario needs it.
	ToolKubectl Tool = "kubectl"
)

// lateTools are the tools in the order they are built: the one most of
// the scenarios wait for, and mostly in the Go build cache once
// kube-apiserver is built, first; kubectl, which only the person watching
// runs, last.
var lateTools = []Tool{ToolControllerManager, ToolPrometheus, ToolKubectl}

// path is where the demo looks for t.
func (t Tool) path() string {
	switch t {
	case ToolControllerManager:
		return testenv.ControllerManagerBinary()
	case ToolPrometheus:
		return testenv.PrometheusBinary()
	default:
		return filepath.Join(testenv.AssetsDir(), string(t))
	}
}

// present says why t cannot run: nil when it is there.
func (t Tool) present() error {
	if t == ToolPrometheus {
		return prometheusBuilt()
	}
	fi, err := os.Stat(t.path())
	if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		return fmt.Errorf("%s not built (make envtest-bin)", displayPath(t.path()))
	}
	return nil
}

// what says what joins with t.
func (t Tool) what() string {
	switch t {
	case ToolControllerManager:
		return "the storage scenarios"
	case ToolPrometheus:
		return "the domain-stats scenarios"
	default:
		return "the kubectl commands below"
	}
}

// needs is the tool sc cannot play without, "" for none.
func needs(sc simulator.Scenario) Tool {
	switch {
	case sc.DomainStats:
		return ToolPrometheus
	case sc.Storage:
		return ToolControllerManager
	}
	return ""
}

// Builder builds the tools the demo starts without while it plays.
type Builder interface {
	// CanBuild says whether Build can put t where the demo looks for it.
	CanBuild(t Tool) bool
	// Build builds t, writing its output to log, until ctx ends.
	Build(ctx context.Context, t Tool, log io.Writer) error
}

// lateness is, for one run, the tools that are missing: those a Builder
// builds (in lateTools' order) and those left out, with why.
type lateness struct {
	build   []Tool
	skipped map[Tool]error
}

// missing says whether t is missing, to be built or left out.
func (l lateness) missing(t Tool) bool {
	_, skipped := l.skipped[t]
	return skipped || slices.Contains(l.build, t)
}

// planLateness decides, from why each tool is missing (absent: present),
// which tools b builds and which are left out; a scenario asked for by
// name whose tool is left out is an error.
func planLateness(why map[Tool]error, b Builder, scenario string) (lateness, error) {
	l := lateness{skipped: map[Tool]error{}}
	for _, t := range lateTools {
		err := why[t]
		switch {
		case err == nil:
		case b != nil && b.CanBuild(t):
			l.build = append(l.build, t)
		default:
			l.skipped[t] = err
		}
	}
	if sc, ok := scenarioByName(scenario); ok {
		if err := l.skipped[needs(sc)]; err != nil {
			if needs(sc) == ToolPrometheus {
				return l, fmt.Errorf("scenario %s reads domain stats through Prometheus: %w", sc.Name, err)
			}
			return l, fmt.Errorf("scenario %s plays on %s: %w", sc.Name, needs(sc), err)
		}
	}
	return l, nil
}

// missingTools says why each late tool is missing.
func missingTools() map[Tool]error {
	why := map[Tool]error{}
	for _, t := range lateTools {
		if err := t.present(); err != nil {
			why[t] = err
		}
	}
	return why
}

// scenariosOf are the scenarios of the run (all, or the one asked for)
// that need t.
func scenariosOf(t Tool, only string) []simulator.Scenario {
	var out []simulator.Scenario
	for _, sc := range Catalogue() {
		if needs(sc) == t && (only == "" || sc.Name == only) {
			out = append(out, sc)
		}
	}
	return out
}

// scenariosNeeding names the scenarios of the run that need t
// (scenariosOf).
func scenariosNeeding(t Tool, only string) []string {
	var out []string
	for _, sc := range scenariosOf(t, only) {
		out = append(out, sc.Name)
	}
	return out
}

// LateTool says how a tool the demo started without fared.
type LateTool struct {
	Tool Tool
	// Scenarios are those of the run that need it.
	Scenarios []string
	// Joined says it was built and started, at JoinedAt since the demo
	// started; its scenarios were played then.
	Joined   bool
	JoinedAt time.Duration
	// Skipped says why it did not join: it cannot be built here, its
	// build failed, or the demo ended first.
	Skipped string
}

// CheckoutBuilder builds the late tools of this checkout with its own
// recipes, when they go where the demo looks for them: kube-controller-
// manager and kubectl with hack/build-controlplane.sh, Prometheus with
// `make prometheus`. Each build runs at a low priority, so that the demo
// it shares the machine with keeps its pace.
func CheckoutBuilder() Builder { return checkoutBuilder{root: testenv.RepoRoot()} }

type checkoutBuilder struct{ root string }

func (b checkoutBuilder) CanBuild(t Tool) bool {
	switch t {
	case ToolPrometheus:
		_, err := exec.LookPath("make")
		return err == nil && filepath.Clean(t.path()) == filepath.Join(b.root, "bin", "prometheus") && b.exists("Makefile")
	case ToolControllerManager, ToolKubectl:
		return filepath.Clean(testenv.AssetsDir()) == b.assetsDir() && b.exists("hack/build-controlplane.sh")
	}
	return false
}

func (b checkoutBuilder) exists(rel string) bool {
	_, err := os.Stat(filepath.Join(b.root, rel))
	return err == nil
}

// assetsDir is the control plane's default directory, where
// hack/build-controlplane.sh builds.
func (b checkoutBuilder) assetsDir() string {
	return filepath.Join(b.root, "bin", "k8s", fmt.Sprintf("%s-%s-%s", testenv.KubernetesVersion, runtime.GOOS, runtime.GOARCH))
}

func (b checkoutBuilder) Build(ctx context.Context, t Tool, log io.Writer) error {
	var args, env []string
	switch t {
	case ToolPrometheus:
		args = []string{"make", "--no-print-directory", "-C", b.root, "prometheus"}
	case ToolControllerManager:
		args = []string{"bash", filepath.Join(b.root, "hack", "build-controlplane.sh")}
		env = []string{"KUBECTL=skip"}
	case ToolKubectl:
		args = []string{"bash", filepath.Join(b.root, "hack", "build-controlplane.sh")}
		env = []string{"CONTROLLER_MANAGER=skip"}
	default:
		return fmt.Errorf("no recipe for %s", t)
	}
	if nice, err := exec.LookPath("nice"); err == nil {
		args = append([]string{nice, "-n", "10"}, args...)
	}
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir = b.root
	cmd.Stdout, cmd.Stderr = log, log
	// Not make's own: `make demo` runs the demo, and its jobserver is not
	// this make's.
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "MAKEFLAGS" && k != "MFLAGS" && k != "MAKELEVEL" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, append(env, "K8S_VERSION="+testenv.KubernetesVersion, "ENVTEST_DIR="+b.assetsDir())...)
	stopTree(cmd)
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w", strings.Join(args, " "), err)
	}
	return t.present()
}

// buildAndJoin builds the late tools one at a time once the first verdict
// is in (or ctx ends), and joins each as it is built; until ctx ends.
func (s *session) buildAndJoin(ctx context.Context, firstVerdict <-chan struct{}) {
	select {
	case <-ctx.Done():
		return
	case <-firstVerdict:
	}
	logPath := filepath.Join(s.tmp, "build.log")
	log, err := os.Create(logPath)
	if err != nil {
		s.tr.errorf("the builds' log: %v", err)
		return
	}
	defer func() { _ = log.Close() }()
	for _, t := range s.late.build {
		s.tr.note(fmt.Sprintf("⧗ building %s in the background for %s (its output: %s)", t, t.what(), displayPath(logPath)))
		began := time.Now()
		err := s.opts.Builder.Build(ctx, t, log)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			err = fmt.Errorf("%w%s", err, lastLines(logPath, 3))
		} else {
			err = s.join(ctx, t)
		}
		if err != nil {
			s.tr.skipTool(t, err.Error())
			s.tr.note(fmt.Sprintf("✗ %s did not join, %s are skipped: %v", t, t.what(), err))
			continue
		}
		s.tr.joinedTool(t, time.Now())
		s.tr.note(fmt.Sprintf("✚ %s built in %s and joined: %s", t, fmtElapsed(time.Since(began)), joinedWhat(t, s.hints)))
	}
}

// joinedWhat says what a joined tool brings.
func joinedWhat(t Tool, hints []hint) string {
	if t != ToolKubectl {
		return t.what() + " play now"
	}
	var cmds []string
	for _, h := range hints {
		cmds = append(cmds, h.cmd)
	}
	return strings.Join(cmds, "; ")
}

// join starts t for the running demo and plays the scenarios that need it.
func (s *session) join(ctx context.Context, t Tool) error {
	switch t {
	case ToolControllerManager:
		if err := s.env.StartControllerManager(); err != nil {
			return err
		}
	case ToolPrometheus:
		s.promErr = nil
		url, err := s.startDomainStats(ctx)
		if err != nil {
			return err
		}
		// The domain-stats source is set up with the manager: a new one
		// reads through Prometheus. Until now there was none, rather than
		// one whose failed queries would mark every VM's domain stats
		// unavailable.
		if err := s.mgr.restart(ctx, url); err != nil {
			return fmt.Errorf("restarting the manager with domain stats: %w", err)
		}
	case ToolKubectl:
		return nil
	}
	return s.director.join(ctx, scenariosOf(t, s.opts.Scenario))
}

// lastLines are the last n lines of the file at path, after a colon and
// a line break each, for a build's error: the file is removed with the
// demo's temporary directory.
func lastLines(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	lines = lines[max(0, len(lines)-n):]
	return ":\n    " + strings.Join(lines, "\n    ")
}
