package scale

import (
	"context"
	"fmt"
	"math"
	"os"
	"runtime/pprof"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/google/pprof/profile"
)

// The manager runs in the harness's process, so the process's CPU time is
// the manager's plus the harness's (its watch on every VMObservation, the
// source writes, the floor). To tell them apart, every goroutine of the
// manager carries a pprof label: the manager is started inside pprof.Do,
// and a goroutine inherits its creator's labels, so the informers, the
// workers, the event broadcaster and the HTTP/2 connections they dial all
// carry it. A CPU profile of the phase then attributes each sample to the
// manager or not. The Go runtime's background GC workers carry no label:
// their time is reported apart, and the figure with it is an upper bound.

const (
	cpuLabel        = "vmobs-scale"
	cpuLabelManager = "manager"
	cpuLabelFloor   = "floor"
)

// withCPULabel runs f with the goroutines it starts labelled as value.
func withCPULabel(ctx context.Context, value string, f func(context.Context)) {
	pprof.Do(ctx, pprof.Labels(cpuLabel, value), f)
}

// cpuFigures is the CPU one party used during one phase, from a CPU profile
// of the whole process over the phase (100 samples per second and core).
type cpuFigures struct {
	WallSeconds float64 `json:"wall_seconds"`
	// ProcessCPUSeconds is getrusage's user+system time of the whole test
	// process over the phase; ProfiledCPUSeconds what the profile saw of
	// it.
	ProcessCPUSeconds  float64 `json:"process_cpu_seconds"`
	ProfiledCPUSeconds float64 `json:"profiled_cpu_seconds"`
	// CPUSeconds is the labelled party's (manager or floor) samples,
	// GCBackgroundSeconds the unlabelled background GC of the whole
	// process (some of it the harness's).
	CPUSeconds          float64 `json:"cpu_seconds"`
	GCBackgroundSeconds float64 `json:"gc_background_cpu_seconds"`
	// Units is what the figures are per: reconciles for the manager
	// (controller_runtime_reconcile_total), VMs for the floor.
	Units     int    `json:"units"`
	UnitsName string `json:"units_name"`
	// ReconcileWallSeconds is the summed wall time of Reconcile calls
	// (controller_runtime_reconcile_time_seconds), API waits included.
	ReconcileWallSeconds float64 `json:"reconcile_wall_seconds,omitempty"`
	ReconcileErrors      int     `json:"reconcile_errors,omitempty"`
	USPerUnit            float64 `json:"us_per_unit"`
	USPerUnitWithGC      float64 `json:"us_per_unit_with_gc"`
	// ByOperation and ByContext split the party's samples (µs per unit):
	// by what the innermost recognised frame does (decoding, deep copies,
	// ...), and by why it runs (reconcile, node fan-out, predicates, ...).
	ByOperation map[string]float64 `json:"us_per_unit_by_operation,omitempty"`
	ByContext   map[string]float64 `json:"us_per_unit_by_context,omitempty"`
	// Profiles are the profile files, when -scale.profile-dir keeps them.
	Profiles []string `json:"profiles,omitempty"`
}

// cpuProfile is a running CPU profile of the process.
type cpuProfile struct {
	path  string
	f     *os.File
	start time.Time
	ru    time.Duration
}

func startCPUProfile(path string) (*cpuProfile, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	p := &cpuProfile{path: path, f: f, start: time.Now(), ru: processCPU()}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, err
	}
	return p, nil
}

// profiledPhase is a finished CPU profile of one phase.
type profiledPhase struct {
	prof *profile.Profile
	wall time.Duration
	// ru is the process's CPU time over the phase (getrusage).
	ru   time.Duration
	path string
}

// stop ends the profile and reads it back.
func (p *cpuProfile) stop() (*profiledPhase, error) {
	pprof.StopCPUProfile()
	out := &profiledPhase{wall: time.Since(p.start), ru: processCPU() - p.ru, path: p.path}
	if err := p.f.Close(); err != nil {
		return nil, err
	}
	f, err := os.Open(p.path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if out.prof, err = profile.Parse(f); err != nil {
		return nil, fmt.Errorf("reading the CPU profile %s: %w", p.path, err)
	}
	return out, nil
}

// attributePhases merges the phases' profiles and attributes their samples
// to the party labelled label, per unit.
func attributePhases(phases []*profiledPhase, label string, units int, unitsName string) (*cpuFigures, error) {
	var profs []*profile.Profile
	var wall, ru time.Duration
	var paths []string
	for _, ph := range phases {
		profs = append(profs, ph.prof)
		wall += ph.wall
		ru += ph.ru
		paths = append(paths, ph.path)
	}
	merged, err := profile.Merge(profs)
	if err != nil {
		return nil, fmt.Errorf("merging CPU profiles: %w", err)
	}
	out := attribute(merged, label, units)
	out.WallSeconds, out.ProcessCPUSeconds = wall.Seconds(), ru.Seconds()
	out.UnitsName, out.Profiles = unitsName, paths
	return out, nil
}

// processCPU is the user and system CPU time of this process so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// attribute sums the samples of prof: all of them, those labelled label,
// and the unlabelled background GC.
func attribute(prof *profile.Profile, label string, units int) *cpuFigures {
	vi := -1
	for i, st := range prof.SampleType {
		if st.Type == "cpu" && st.Unit == "nanoseconds" {
			vi = i
		}
	}
	out := &cpuFigures{Units: units, ByOperation: map[string]float64{}, ByContext: map[string]float64{}}
	if vi < 0 {
		return out
	}
	var total, mine, gc int64
	byOp, byCtx := map[string]int64{}, map[string]int64{}
	for _, s := range prof.Sample {
		v := s.Value[vi]
		total += v
		if !s.HasLabel(cpuLabel, label) {
			if len(s.Label[cpuLabel]) == 0 && isBackgroundGC(s) {
				gc += v
			}
			continue
		}
		mine += v
		byOp[operationOf(s)] += v
		byCtx[contextOf(s)] += v
	}
	sec := func(ns int64) float64 { return float64(ns) / 1e9 }
	out.ProfiledCPUSeconds, out.CPUSeconds, out.GCBackgroundSeconds = sec(total), sec(mine), sec(gc)
	if units > 0 {
		per := func(ns int64) float64 { return math.Round(float64(ns)/1e3/float64(units)*10) / 10 }
		out.USPerUnit, out.USPerUnitWithGC = per(mine), per(mine+gc)
		for k, v := range byOp {
			out.ByOperation[k] = per(v)
		}
		for k, v := range byCtx {
			out.ByContext[k] = per(v)
		}
	}
	return out
}

// frames are the function names of a sample, leaf first (inlined frames
// included, innermost first).
func frames(s *profile.Sample) []string {
	var out []string
	for _, loc := range s.Location {
		for _, l := range loc.Line {
			if l.Function != nil {
				out = append(out, l.Function.Name)
			}
		}
	}
	return out
}

func isBackgroundGC(s *profile.Sample) bool {
	for _, f := range frames(s) {
		if strings.HasPrefix(f, "runtime.gcBgMarkWorker") || strings.HasPrefix(f, "runtime.bgsweep") || strings.HasPrefix(f, "runtime.bgscavenge") {
			return true
		}
	}
	return false
}

// category is a name and the substrings of function names that belong to
// it.
type category struct {
	name  string
	match []string
}

func (c category) matches(fn string) bool {
	for _, m := range c.match {
		if strings.Contains(fn, m) {
			return true
		}
	}
	return false
}

// operations name what a sample is doing: the innermost frame that belongs
// to one of them decides, so an allocation is charged to the decoding or
// copy that made it, and a GC assist to the GC.
var operations = []category{
	{"GC", []string{"runtime.gcAssistAlloc", "runtime.gcDrain", "runtime.gcBgMarkWorker", "runtime.markroot", "runtime.scanobject", "runtime.bgsweep"}},
	{"logging", []string{"go.uber.org/zap", "github.com/go-logr", "k8s.io/klog"}},
	{"deep copy", []string{".DeepCopy"}},
	{"cache projections", []string{"vmobs/internal/projection"}},
	{"verdict engine", []string{"vmobs/internal/verdict."}},
	{"decoding", []string{"encoding/json.(*decodeState)", "encoding/json.Unmarshal", "sigs.k8s.io/json", "k8s.io/apimachinery/pkg/runtime/serializer", "gogo/protobuf", "k8s.io/apimachinery/pkg/util/framer", ".Unmarshal"}},
	{"encoding", []string{"encoding/json.Marshal", "encoding/json.(*encodeState)", "encoding/json.compact", ".Marshal"}},
	{"SSA apply configuration", []string{"applyconfigurations", "ToUnstructured", "unstructured"}},
	{"index and cache lookups", []string{"k8s.io/client-go/tools/cache.(*threadSafeMap)", "k8s.io/client-go/tools/cache.(*index)", "controller-runtime/pkg/cache/internal.(*CacheReader)"}},
	{"TLS", []string{"crypto/"}},
	{"HTTP", []string{"net/http.", "golang.org/x/net/http2"}},
	{"network I/O", []string{"internal/poll.", "syscall.", "net.(*conn)", "net.(*netFD)"}},
	{"scheduling", []string{"runtime.schedule", "runtime.findRunnable", "runtime.park_m", "runtime.goready", "runtime.notewakeup", "runtime.futex", "runtime.lock", "runtime.unlock", "runtime.chansend", "runtime.chanrecv", "runtime.selectgo"}},
}

func operationOf(s *profile.Sample) string {
	for _, f := range frames(s) {
		for _, c := range operations {
			if c.matches(f) {
				return c.name
			}
		}
	}
	return "other"
}

// contexts name why a sample runs: the first of them found anywhere in the
// stack, in this order.
var contexts = []category{
	{"node fan-out", []string{"vmobs/controllers.(*Reconciler).nodeHandler", "vmobs/controllers.(*Reconciler).nodeToVMs", "vmobs/controllers.(*Reconciler).heartbeatMatters", "vmobs/controllers.heartbeatOnly"}},
	{"predicates and map functions", []string{"vmobs/controllers.updateOnly", "vmobs/controllers.deletionChanged", "Changed.func", "vmobs/controllers.readyOf", "vmobs/controllers.podToVM", "vmobs/controllers.migrationToVM", "controller-runtime/pkg/predicate", "controller-runtime/pkg/internal/source.(*EventHandler)", "controller-runtime/pkg/handler"}},
	{"reconcile: status write (SSA)", []string{"vmobs/controllers.(*Reconciler).applyStatus", "vmobs/controllers.statusHash"}},
	{"reconcile: events", []string{"vmobs/controllers.(*Reconciler).recordTransitions", "k8s.io/client-go/tools/events", "k8s.io/client-go/tools/record"}},
	{"reconcile: create", []string{"vmobs/controllers.(*Reconciler).create", "vmobs/controllers.(*Reconciler).adopt"}},
	{"reconcile: write policy", []string{"vmobs/controllers.(*writePolicy)", "vmobs/controllers.withoutTimestamps", "vmobs/controllers.decideWrite"}},
	{"reconcile: gather (cache reads)", []string{"vmobs/controllers.(*Reconciler).gather"}},
	{"reconcile: verdict engine", []string{"vmobs/internal/verdict."}},
	{"reconcile: other", []string{"vmobs/controllers.(*Reconciler).Reconcile"}},
	{"informers: list and watch", []string{"k8s.io/client-go/tools/cache.(*Reflector)", "k8s.io/client-go/tools/cache.(*DeltaFIFO)", "k8s.io/client-go/tools/cache.(*RealFIFO)", "k8s.io/apimachinery/pkg/watch", "k8s.io/client-go/rest/watch", "k8s.io/client-go/tools/cache.watchHandler", "k8s.io/client-go/tools/cache.handleWatch", "k8s.io/client-go/tools/cache.(*sharedIndexInformer).HandleDeltas", "k8s.io/client-go/tools/cache.processDeltas"}},
	{"informers: distributing events", []string{"k8s.io/client-go/tools/cache.(*processorListener)", "k8s.io/client-go/tools/cache.(*sharedProcessor)"}},
	{"workqueue", []string{"k8s.io/client-go/util/workqueue", "controller-runtime/pkg/controller/priorityqueue", "controller-runtime/pkg/internal/controller"}},
	{"HTTP connections", []string{"net/http.", "golang.org/x/net/http2", "crypto/tls"}},
	{"GC", []string{"runtime.gcBgMarkWorker", "runtime.bgsweep"}},
}

func contextOf(s *profile.Sample) string {
	fs := frames(s)
	for _, c := range contexts {
		for _, f := range fs {
			if c.matches(f) {
				return c.name
			}
		}
	}
	return "other"
}

// topCosts is the largest entries of m, as "name N µs".
func topCosts(m map[string]float64, n int) string {
	type kv struct {
		k string
		v float64
	}
	var all []kv
	for k, v := range m {
		all = append(all, kv{k, v})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].v > all[j].v || (all[i].v == all[j].v && all[i].k < all[j].k) })
	var parts []string
	for i := 0; i < len(all) && i < n; i++ {
		parts = append(parts, fmt.Sprintf("%s %.0f", all[i].k, all[i].v))
	}
	return strings.Join(parts, ", ")
}
