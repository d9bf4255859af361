// Package scale is vmobs' scale harness: on the real test control plane
// (kube-apiserver and etcd from `make envtest-bin`) it populates N VMs shaped
// by the simulator and measures the controller against a floor measured in
// the same run: cold-start convergence, writes at idle and across restarts,
// change-to-status latency at a steady change rate, catching up after API
// Priority and Fairness pressure, CPU per reconcile, and heap per VM.
//
// `go test ./test/scale` runs a smoke version (N=50, seconds-long phases)
// that asserts only correctness. `make bench-scale N=1000` runs the full
// harness; see docs/scale.md for the flags and what each figure means.
package scale

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/vmobs/vmobs/internal/app"
	"github.com/vmobs/vmobs/internal/testenv"
)

// Flags. -scale.n=0 (the default) selects the smoke configuration; the
// other flags then default to its short durations unless set.
var (
	flagN         = flag.Int("scale.n", 0, "number of VMs; 0 runs the smoke version (N=50, short phases, correctness only)")
	flagIdle      = flag.Duration("scale.idle", 0, "idle period with node heartbeats, including a forced resync and a controller restart (default 10m; smoke 10s)")
	flagHeartbeat = flag.Duration("scale.heartbeat", 0, "virt-handler heartbeat period on every node (default 60s; smoke 2s)")
	flagRefresh   = flag.Duration("scale.refresh", 0, "the manager's EvidenceRefreshInterval (default: app.Defaults()'s; 0 is off, and then any write at idle fails the run)")
	flagRate      = flag.Float64("scale.rate", 20, "source changes per second in the latency phase")
	flagLatency   = flag.Duration("scale.latency", 0, "length of the latency phase (default 60s; smoke 3s)")
	flagOverload  = flag.Duration("scale.overload", 0, "length of the overload phase: source changes at -scale.rate while API Priority and Fairness holds the manager to one seat (default 60s; smoke 3s)")
	flagLagGrace  = flag.Duration("scale.lag-grace", 0, "the engine's Policy.LagGrace, after which a launcher pod that is not Ready is judged (default: verdict.DefaultPolicy()'s; smoke 1s, to keep it short)")
	flagRuns      = flag.Int("scale.convergence-runs", 0, "cold starts, each after a floor of its own (default 3; smoke 1)")
	flagMem       = flag.String("scale.mem-points", "", "comma-separated VM counts at which the manager's heap is measured in a child process (default 0,1000,2000,5000; smoke 0,50); \"none\" skips")
	flagSettle    = flag.Duration("scale.settle", 0, "steady-state window after a child manager converged, before its heap is read (default 20s; smoke 2s)")
	flagOut       = flag.String("scale.out", "", "where to write the JSON results (default bin/scale-results.json; smoke: a temp dir)")
	flagWorkers   = flag.Int("scale.create-workers", 8, "parallel workers that create the VMs")
	flagProfiles  = flag.String("scale.profile-dir", "", "write pprof profiles here: CPU of the in-process cold start, heap of each child manager")
	flagHeapRate  = flag.Int("scale.heap-profile-rate", 0, "the child managers' runtime.MemProfileRate (1: every allocation) for the heap profiles of -scale.profile-dir; 0 keeps Go's default")
	flagBinary    = flag.Bool("scale.binary", false, "also run the built `vmobs manager` binary at the largest memory point and read its RSS (default on unless smoke)")
	flagMemLimit  = flag.String("scale.binary-memlimit", "", "with the binary: run it a second time with this GOMEMLIMIT (a quantity, 40Mi) instead of the manifest's, to show what a tighter limit costs")
	flagAge       = flag.Duration("scale.age", 2*time.Hour, "how long ago the VMs booted (timestamps in the objects), so that no grace period or deadline ends during the run")
	flagStartupGC = flag.Int("scale.startup-gc-percent", -1, "the managers' --startup-gc-percent (in process, children and the binary); -1 keeps app.Defaults', 0 turns it off")
	flagNoEvents  = flag.Bool("scale.no-events", false, "diagnostic: answer the in-process manager's Event writes in its transport without sending them, to show what they cost")
	flagTimeout   = flag.Duration("scale.converge-timeout", 0, "how long to wait for convergence (default 2m + 40ms per VM)")
	flagStorage   = flag.Bool("scale.storage", true, "give every VM its storage: a DataVolume root disk (Succeeded) with its bound claim, PersistentVolume and VolumeAttachment, and the ten Warning Events of its boot; false runs the population of the figures before the storage layer")
	flagRepeats   = flag.Int("scale.mem-repeats", 1, "child managers measured at each memory point, one after the other, for the heap's run-to-run spread")
	flagStormAt   = flag.Int("scale.storm-at", -1, "memory point at which the Event storm runs in its child manager (default the largest; 0 skips it)")
	flagStormRate = flag.Float64("scale.storm-rate", 0, "Warning Events written per second in the storm (default 1000; smoke 100)")
	flagStorm     = flag.Duration("scale.storm", 0, "length of the Event storm, and of the latency window measured before it (default 60s; smoke 2s)")
	flagPerNode   = flag.Int("scale.vms-per-node", 0, "VMs a node (default 50; smoke 10): 100 puts 5,000 VMs on 50 nodes")
	flagIncidents = flag.Bool("scale.incidents", true, "the managers' --incidents (app.Defaults': on): the incident tracker every VM's reconcile consults, and the VMIncident controller; false measures without them")
)

// config is one run's configuration.
type config struct {
	N         int
	Smoke     bool
	Idle      time.Duration
	Heartbeat time.Duration
	Refresh   time.Duration
	Rate      float64
	Latency   time.Duration
	Overload  time.Duration
	// LagGrace overrides the engine's lag grace when positive.
	LagGrace time.Duration
	// ConvergenceRuns is how many times the floor and the cold start are
	// measured, interleaved.
	ConvergenceRuns int
	MemPoints       []int
	Settle          time.Duration
	Out             string
	Workers         int
	ProfileDir      string
	Binary          bool
	// MemLimit is a second GOMEMLIMIT for the binary, in bytes; 0 none.
	MemLimit int64
	NoEvents bool
	// StartupGCPercent, when not negative, replaces app.Defaults'
	// StartupGCPercent (0 turns the start-up's GC percent off).
	StartupGCPercent int
	Age              time.Duration
	Converge         time.Duration
	VMsPerNS         int
	VMsPerNode       int
	MigrateEvery     int // one VM in MigrateEvery is live-migrated once
	// Storage gives every VM a DataVolume root disk, its claim, volume
	// and attachment, and its boot's Warning Events (population_test.go).
	Storage bool
	// MemRepeats is how many child managers are measured at each memory
	// point.
	MemRepeats int
	// StormAt is the memory point whose child takes the Event storm (0:
	// none); StormRate and Storm its rate and length (storm_test.go).
	StormAt   int
	StormRate float64
	Storm     time.Duration
	// NoIncidents runs the managers with --incidents=false
	// (-scale.incidents=false); the zero value keeps app.Defaults'.
	NoIncidents bool
}

func loadConfig(t *testing.T) config {
	t.Helper()
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	cfg := config{
		N: *flagN, Rate: *flagRate, NoEvents: *flagNoEvents, Workers: *flagWorkers, ProfileDir: *flagProfiles, Age: *flagAge,
		StartupGCPercent: *flagStartupGC, NoIncidents: !*flagIncidents,
		VMsPerNS: 100, VMsPerNode: 50, MigrateEvery: 100,
	}
	pick := func(name string, v, full, smoke time.Duration) time.Duration {
		if set[name] {
			return v
		}
		if cfg.Smoke {
			return smoke
		}
		return full
	}
	if cfg.N <= 0 {
		cfg.N, cfg.Smoke = 50, true
		cfg.VMsPerNS, cfg.VMsPerNode, cfg.MigrateEvery = 10, 10, 10
	}
	if *flagPerNode > 0 {
		cfg.VMsPerNode = *flagPerNode
	}
	cfg.Idle = pick("scale.idle", *flagIdle, 10*time.Minute, 10*time.Second)
	cfg.Heartbeat = pick("scale.heartbeat", *flagHeartbeat, time.Minute, 2*time.Second)
	// The manager's default, unless set: with evidence refreshes off (0)
	// the idle period must see no write at all.
	def := app.Defaults().EvidenceRefreshInterval
	cfg.Refresh = pick("scale.refresh", *flagRefresh, def, def)
	cfg.Latency = pick("scale.latency", *flagLatency, time.Minute, 3*time.Second)
	cfg.Overload = pick("scale.overload", *flagOverload, time.Minute, 3*time.Second)
	cfg.LagGrace = pick("scale.lag-grace", *flagLagGrace, 0, time.Second)
	cfg.ConvergenceRuns = *flagRuns
	if !set["scale.convergence-runs"] {
		cfg.ConvergenceRuns = 3
		if cfg.Smoke {
			cfg.ConvergenceRuns = 1
		}
	}
	if cfg.ConvergenceRuns < 1 {
		t.Fatalf("-scale.convergence-runs must be at least 1")
	}
	cfg.Settle = pick("scale.settle", *flagSettle, 20*time.Second, 2*time.Second)
	cfg.Converge = pick("scale.converge-timeout", *flagTimeout, 2*time.Minute+time.Duration(cfg.N)*40*time.Millisecond, 2*time.Minute)
	cfg.Binary = *flagBinary || (!set["scale.binary"] && !cfg.Smoke)
	if *flagMemLimit != "" {
		q, err := resource.ParseQuantity(*flagMemLimit)
		if err != nil || q.Value() <= 0 {
			t.Fatalf("-scale.binary-memlimit %q: not a positive quantity", *flagMemLimit)
		}
		cfg.MemLimit = q.Value()
	}
	mem := *flagMem
	if mem == "" {
		mem = "0,1000,2000,5000"
		if cfg.Smoke {
			mem = "0," + strconv.Itoa(cfg.N)
		}
	}
	if mem != "none" {
		for _, p := range strings.Split(mem, ",") {
			v, err := strconv.Atoi(strings.TrimSpace(p))
			if err != nil || v < 0 {
				t.Fatalf("-scale.mem-points: bad count %q", p)
			}
			cfg.MemPoints = append(cfg.MemPoints, v)
		}
		slices.Sort(cfg.MemPoints)
		cfg.MemPoints = slices.Compact(cfg.MemPoints)
	}
	cfg.Storage = *flagStorage
	cfg.MemRepeats = max(1, *flagRepeats)
	cfg.StormRate = *flagStormRate
	if cfg.StormRate <= 0 {
		cfg.StormRate = 1000
		if cfg.Smoke {
			cfg.StormRate = 100
		}
	}
	cfg.Storm = pick("scale.storm", *flagStorm, time.Minute, 2*time.Second)
	cfg.StormAt = *flagStormAt
	if cfg.StormAt < 0 && len(cfg.MemPoints) > 0 {
		cfg.StormAt = cfg.MemPoints[len(cfg.MemPoints)-1]
	}
	if cfg.StormAt > 0 && !slices.Contains(cfg.MemPoints, cfg.StormAt) {
		t.Fatalf("-scale.storm-at %d: not a memory point (%v)", cfg.StormAt, cfg.MemPoints)
	}
	cfg.Out = resultsPath(t, cfg.Smoke)
	if cfg.ProfileDir != "" && !filepath.IsAbs(cfg.ProfileDir) {
		cfg.ProfileDir = filepath.Join(testenv.RepoRoot(), cfg.ProfileDir)
	}
	return cfg
}

// levels are the VM counts the population grows through: the memory points
// and N, in order.
func (c config) levels() []int {
	out := append([]int{c.N}, c.MemPoints...)
	slices.Sort(out)
	return slices.Compact(out)
}

// nodesFor is the number of nodes for n VMs: one per VMsPerNode, at least two
// (a migration needs a target).
func (c config) nodesFor(n int) int {
	return max(2, (n+c.VMsPerNode-1)/c.VMsPerNode)
}

// apiServerFlags size the test API server's API Priority and Fairness:
// 150 seats in all (the default is 600) share out to the suggested priority
// levels by their shares (245 in all), so that the overload phase's level,
// with 1 share, gets one seat where it would get three. Only the manager
// and the floor are limited at all: the harness's own clients are
// system:masters, which APF exempts. global-default, where the manager runs
// outside the overload phase, keeps 13 seats: more than the manager's 4
// workers, its event writer and its informers ever hold at once.
var apiServerFlags = map[string]string{"max-requests-inflight": "100", "max-mutating-requests-inflight": "50"}

var (
	envOnce sync.Once
	env     *testenv.Env
	envErr  error
)

// controlPlane starts the shared control plane once per test binary.
func controlPlane(t *testing.T) *testenv.Env {
	t.Helper()
	if err := testenv.CheckAssets(); err != nil {
		t.Skip(err.Error())
	}
	// Aggregation: TestScaleGuestProbe serves the simulator's virt-api
	// through kube-apiserver; nothing else registers an aggregated API.
	envOnce.Do(func() {
		// CDI: the VMs' root disks are DataVolumes (-scale.storage), and
		// the manager watches DataVolumes when CDI's CRD is served.
		env, envErr = testenv.Start(testenv.Options{APIServerFlags: apiServerFlags, Aggregation: true, CDI: true})
	})
	if envErr != nil {
		t.Fatal(envErr)
	}
	return env
}

func TestMain(m *testing.M) {
	flag.Parse()
	if os.Getenv(childEnv) != "" {
		// A child manager process (see memory_test.go): no control plane
		// of its own.
		os.Exit(m.Run())
	}
	code := m.Run()
	if env != nil {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the control plane:", err)
		}
	}
	os.Exit(code)
}

// machine describes where the figures were measured.
func machine() map[string]any {
	out := map[string]any{
		"goos": runtime.GOOS, "goarch": runtime.GOARCH, "cpus": runtime.NumCPU(),
		"go": runtime.Version(), "kubernetes": testenv.KubernetesVersion, "race": raceEnabled,
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		out["loadavg_at_start"] = strings.TrimSpace(string(b))
	}
	// What was measured: the commit, and the files of the code under test
	// that differ from it (the harness builds the working tree).
	git := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = testenv.RepoRoot()
		b, err := cmd.Output()
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(b))
	}
	if c := git("rev-parse", "--short", "HEAD"); c != "" {
		out["commit"] = c
		if d := git("status", "--short", "--", "controllers", "internal/app", "internal/verdict", "api"); d != "" {
			out["uncommitted"] = strings.Split(d, "\n")
		}
	}
	return out
}

// loadavg is the 1-minute load average now.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// resultsPath is where a measurement writes its figures: -scale.out, from
// the repository root (go test runs in the package directory; paths are
// the caller's), else bin/scale-results.json; a smoke run's go to a
// temporary directory, so that `make test` leaves the measured file alone.
func resultsPath(t *testing.T, smoke bool) string {
	switch out := *flagOut; {
	case out == "" && smoke:
		return filepath.Join(t.TempDir(), "scale-results.json")
	case out == "":
		return filepath.Join(testenv.RepoRoot(), "bin", "scale-results.json")
	case !filepath.IsAbs(out):
		return filepath.Join(testenv.RepoRoot(), out)
	default:
		return out
	}
}
