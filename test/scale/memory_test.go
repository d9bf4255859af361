package scale

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/go-logr/logr/funcr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/yaml"

	"github.com/vmobs/vmobs/internal/app"
	"github.com/vmobs/vmobs/internal/cachestore"
	"github.com/vmobs/vmobs/internal/projection"
	"github.com/vmobs/vmobs/internal/startupgc"
	"github.com/vmobs/vmobs/internal/storagefacts"
	"github.com/vmobs/vmobs/internal/testenv"
)

// The heap of the manager is measured in a child process that runs nothing
// but the manager: this test binary started again with childEnv set, which
// makes TestScaleChild build the manager exactly as `vmobs manager` does
// (app.NewManager with app.Defaults, metrics and probes off) from a
// kubeconfig, and answer commands on stdin with figures on file descriptor
// 3. The child's heap is then the manager's plus the test binary's constant
// baseline, which the slope over N removes.

const childEnv = "VMOBS_SCALE_CHILD"

// childSpec configures a child manager.
type childSpec struct {
	Kubeconfig string        `json:"kubeconfig"`
	Refresh    time.Duration `json:"refresh"`
	LagGrace   time.Duration `json:"lagGrace"`
	// MemProfileRate, when positive, is the child's runtime.MemProfileRate
	// (-scale.heap-profile-rate): 1 records every allocation, so that the
	// heap profile splits a few kilobytes a VM by where they were made.
	MemProfileRate int `json:"memProfileRate,omitempty"`
	// StartupGCPercent is the run's (-scale.startup-gc-percent): negative
	// keeps app.Defaults'.
	StartupGCPercent int `json:"startupGCPercent"`
	// NoIncidents is the run's -scale.incidents=false.
	NoIncidents bool `json:"noIncidents,omitempty"`
}

// childStats is what a child reports.
type childStats struct {
	// At "mark" (the parent saw convergence; with "mark ended", once the
	// manager's start-up has ended too): the start-up peak.
	StartupPeakHeapInuse uint64 `json:"startup_peak_heap_inuse"`
	// With "mark ended": how long after convergence the start-up ended,
	// and whether it did before the wait gave up.
	StartupEndWait float64 `json:"startup_end_wait_seconds"`
	StartupEndSeen bool    `json:"startup_end_seen"`
	StartupVmHWM   uint64  `json:"startup_vmhwm"`
	// At "stats", before the forced GC: the steady window since "mark".
	WindowMaxHeapInuse uint64 `json:"window_max_heap_inuse"`
	VmRSS              uint64 `json:"vmrss"`
	VmHWM              uint64 `json:"vmhwm"`
	// At "live": the heap marked live by the last collection, without
	// forcing one.
	HeapLive uint64 `json:"heap_live"`
	// After runtime.GC: the live heap.
	HeapAlloc   uint64 `json:"heap_alloc"`
	HeapInuse   uint64 `json:"heap_inuse"`
	HeapObjects uint64 `json:"heap_objects"`
	Sys         uint64 `json:"sys"`
	NumGC       uint32 `json:"num_gc"`
	Goroutines  int    `json:"goroutines"`
	// At "variant", once the caches synced: what the Pod cache holds.
	CachedPods         int `json:"cached_pods"`
	CachedNonLaunchers int `json:"cached_non_launchers"`
	// CachedFullPods counts the pods cached whole instead of as their
	// projection.
	CachedFullPods int    `json:"cached_full_pods"`
	Error          string `json:"error,omitempty"`
	// At "stats": the estimated bytes of the cached objects, by kind.
	Cache map[string]cacheSize `json:"cache,omitempty"`
}

// cacheSize is the estimated size of one kind's cached objects (deepSize
// of each object's projection as the informer's store holds it).
type cacheSize struct {
	Objects int   `json:"objects"`
	Bytes   int64 `json:"bytes"`
}

// TestScaleChild is the child manager; it skips unless started by the
// harness.
func TestScaleChild(t *testing.T) {
	raw := os.Getenv(childEnv)
	if raw == "" {
		t.Skip("runs only as the scale harness's child process")
	}
	var spec childSpec
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		t.Fatal(err)
	}
	proto := os.NewFile(3, "proto")
	if proto == nil {
		t.Fatal("no protocol pipe on fd 3")
	}
	if err := runChild(spec, os.Stdin, proto); err != nil {
		t.Fatal(err)
	}
}

// startupEndWait bounds how long a child waits for its start-up to end
// after convergence.
const startupEndWait = time.Minute

func runChild(spec childSpec, in io.Reader, out io.Writer) error {
	if spec.MemProfileRate > 0 {
		runtime.MemProfileRate = spec.MemProfileRate
	}
	// The manager's log is dropped, but for the line that ends its
	// start-up (memory returned, once), which
	// "mark ended" waits for.
	ended := make(chan struct{})
	var endOnce sync.Once
	ctrl.SetLogger(funcr.New(func(_, args string) {
		if strings.Contains(args, startupgc.EndedMsg) || strings.Contains(args, startupgc.LimitMsg) {
			endOnce.Do(func() { close(ended) })
		}
	}, funcr.Options{}))
	sampler := newHeapSampler()
	defer sampler.stop()

	loading := clientcmd.NewDefaultClientConfigLoadingRules()
	loading.ExplicitPath = spec.Kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(loading, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return err
	}
	cfg.UserAgent = "vmobs-controller"
	// The client-side rate limit is app.NewManager's (off by default), as
	// in `vmobs manager`.
	opts := managerOptions(config{Refresh: spec.Refresh, LagGrace: spec.LagGrace, StartupGCPercent: spec.StartupGCPercent, NoIncidents: spec.NoIncidents})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mgr, err := app.StartInProcess(ctx, cfg, opts)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(out)
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		cmd, arg, _ := strings.Cut(sc.Text(), " ")
		var st childStats
		switch cmd {
		case "variant":
			// Which Pod cache this manager got: with the label selector
			// (no bystander pod cached) and with the projection (no pod
			// cached whole).
			if !mgr.GetCache().WaitForCacheSync(ctx) {
				st.Error = "caches did not sync"
				break
			}
			store, err := cachestore.Open(ctx, mgr.GetCache(), nil)
			if err != nil {
				st.Error = err.Error()
				break
			}
			for _, o := range store.Pods.List() {
				st.CachedPods++
				p, ok := o.(*projection.Pod)
				if !ok {
					st.CachedFullPods++
					continue
				}
				if p.App.String() != "virt-launcher" {
					st.CachedNonLaunchers++
				}
			}
		case "mark":
			if arg == "ended" {
				// The start-up ends once nothing is queued
				// (docs/scale.md, finding 20), which may be after the
				// harness sees convergence: what runs until then is
				// the start-up's, not the steady state's.
				t0 := time.Now()
				select {
				case <-ended:
					st.StartupEndSeen = true
				case <-time.After(startupEndWait):
				}
				st.StartupEndWait = time.Since(t0).Seconds()
			}
			st.StartupPeakHeapInuse = sampler.mark()
			st.StartupVmHWM = procStatus("VmHWM")
			st.VmRSS = procStatus("VmRSS")
		case "live":
			// During the storm: the live heap as of the last
			// collection, and the window's largest heap in use, the
			// window restarted.
			st.HeapLive, st.HeapInuse = heapLive(), heapInuse()
			st.WindowMaxHeapInuse = sampler.windowMax()
			sampler.mark()
		case "stats":
			st.WindowMaxHeapInuse = sampler.windowMax()
			st.VmRSS = procStatus("VmRSS")
			st.VmHWM = procStatus("VmHWM")
			st.Cache = cacheSizes(ctx, mgr.GetCache(), mgr.Storage)
			runtime.GC()
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			st.HeapAlloc, st.HeapInuse, st.HeapObjects, st.Sys, st.NumGC = ms.HeapAlloc, ms.HeapInuse, ms.HeapObjects, ms.Sys, ms.NumGC
			st.Goroutines = runtime.NumGoroutine()
			if arg != "" {
				if f, err := os.Create(arg); err == nil {
					_ = pprof.WriteHeapProfile(f)
					_ = f.Close()
				}
			}
		default:
			continue
		}
		if err := enc.Encode(st); err != nil {
			return err
		}
	}
	return mgr.Stop()
}

// cacheSizes estimates what the manager's informer stores and its storage
// stores hold, by kind. A value shared between objects (an interned string)
// counts once, in the first kind that reaches it.
func cacheSizes(ctx context.Context, c cache.Cache, storage *cachestore.StorageStores) map[string]cacheSize {
	store, err := cachestore.Open(ctx, c, nil)
	if err != nil {
		return nil
	}
	out := map[string]cacheSize{}
	seen := map[uintptr]bool{}
	for _, k := range []struct {
		name  string
		store cachestore.Index
	}{
		{"VMObservation", store.Observations}, {"VirtualMachineInstance", store.VMIs}, {"VirtualMachine", store.VMs},
		{"Pod", store.Pods}, {"Node", store.Nodes}, {"VirtualMachineInstanceMigration", store.Migrations},
	} {
		var cs cacheSize
		for _, o := range k.store.List() {
			cs.Objects++
			cs.Bytes += deepSizeSeen(o, seen)
		}
		out[k.name] = cs
	}
	if storage == nil {
		return out
	}
	// The StorageClasses' informer (cachestore.OpenStorage).
	if inf, err := c.GetInformer(ctx, &storagev1.StorageClass{}, cache.BlockUntilSynced(false)); err == nil {
		if ix, ok := inf.(interface{ GetIndexer() toolscache.Indexer }); ok {
			var cs cacheSize
			for _, o := range ix.GetIndexer().List() {
				cs.Objects++
				cs.Bytes += deepSizeSeen(o, seen)
			}
			out["StorageClass"] = cs
		}
	}
	// The storage stores (no informer's: cachestore.Kept), by object kept:
	// its share of a map slot, and what its key and facts hold.
	out["PersistentVolumeClaim"] = keptSize(storage.Claims, seen, func(*projection.ClaimFacts) int { return 1 })
	out["VolumeAttachment"] = keptSize(storage.Attachments, seen, func(as []storagefacts.Attachment) int { return len(as) })
	if storage.DataVolumes != nil {
		out["DataVolume"] = keptSize(storage.DataVolumes, seen, func(*storagefacts.DataVolume) int { return 1 })
	}
	// The Warning Events, by event kept: a map slot a involved object,
	// its events' facts and strings.
	var cs cacheSize
	slot := int64(unsafe.Sizeof(cachestore.EventObject{})) + int64(unsafe.Sizeof([]storagefacts.Event{}))
	kept := int64(unsafe.Sizeof(storagefacts.Event{})) + 8 // and its id
	storage.Events.Range(func(o cachestore.EventObject, evs []storagefacts.Event) {
		cs.Objects += len(evs)
		cs.Bytes += slot*8/7 + sizeOf(reflect.ValueOf(o), seen, false) + roundClass(int64(len(evs))*kept)
		for _, ev := range evs {
			cs.Bytes += sizeOf(reflect.ValueOf(ev), seen, false)
		}
	})
	out["Event"] = cs
	return out
}

// keptSize is what a storage store holds: per key a map slot (its key and
// value in place, or the value behind a pointer when Go's map keeps it so,
// over 128 bytes) at 7/8 full, and what the key and value reach; objects
// counts the objects of a value.
func keptSize[K comparable, I, V any](s *cachestore.Kept[K, I, V], seen map[uintptr]bool, objects func(V) int) cacheSize {
	var cs cacheSize
	var k K
	var v V
	slot, vsize := int64(unsafe.Sizeof(k)), int64(unsafe.Sizeof(v))
	if vsize > 128 {
		slot += 8 + roundClass(vsize)
	} else {
		slot += vsize
	}
	s.Range(func(k K, v V) {
		cs.Objects += objects(v)
		cs.Bytes += slot*8/7 + sizeOf(reflect.ValueOf(k), seen, false) + sizeOf(reflect.ValueOf(v), seen, false)
	})
	return cs
}

// heapSampler samples the heap in use (objects and unused span space, as
// MemStats.HeapInuse) every 5ms from runtime/metrics, which costs no
// stop-the-world, and keeps the maximum before and after "mark".
type heapSampler struct {
	mu         sync.Mutex
	peak, wmax uint64
	marked     bool
	quit       chan struct{}
}

func newHeapSampler() *heapSampler {
	s := &heapSampler{quit: make(chan struct{})}
	go func() {
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-s.quit:
				return
			case <-t.C:
			}
			v := heapInuse()
			s.mu.Lock()
			if s.marked {
				s.wmax = max(s.wmax, v)
			} else {
				s.peak = max(s.peak, v)
			}
			s.mu.Unlock()
		}
	}()
	return s
}

func (s *heapSampler) mark() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.marked = true
	s.wmax = 0
	return s.peak
}

func (s *heapSampler) windowMax() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.wmax
}

func (s *heapSampler) stop() { close(s.quit) }

// heapLive is the heap the last collection marked live.
func heapLive() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// procStatus reads a kB field of /proc/self/status in bytes.
func procStatus(field string) uint64 { return procStatusOf("self", field) }

func procStatusOf(pid, field string) uint64 {
	b, err := os.ReadFile(filepath.Join("/proc", pid, "status"))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n * 1024
		}
	}
	return 0
}

// child is a running child manager, seen from the harness.
type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	dec   *json.Decoder
	log   string
}

func startChild(dir string, spec childSpec) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	logf, err := os.CreateTemp(dir, "child-*.log")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, "-test.run=^TestScaleChild$", "-test.count=1", "-test.timeout=0")
	cmd.Env = append(os.Environ(), childEnv+"="+string(raw))
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{pw}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	_ = pw.Close()
	_ = logf.Close()
	return &child{cmd: cmd, stdin: stdin, dec: json.NewDecoder(pr), log: logf.Name()}, nil
}

func (c *child) ask(cmd string) (childStats, error) {
	var st childStats
	if _, err := io.WriteString(c.stdin, cmd+"\n"); err != nil {
		return st, fmt.Errorf("child: %w (log %s)", err, c.log)
	}
	if err := c.dec.Decode(&st); err != nil {
		return st, fmt.Errorf("child: %w (log %s)", err, c.log)
	}
	return st, nil
}

func (c *child) stop() error {
	_ = c.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("child: %w (log %s)", err, c.log)
		}
		return nil
	case <-time.After(time.Minute):
		_ = c.cmd.Process.Kill()
		return fmt.Errorf("child did not stop (log %s)", c.log)
	}
}

// memPoint is the memory figures at one VM count.
type memPoint struct {
	VMs int `json:"vms"`
	// Repeat numbers the child managers measured at this count
	// (-scale.mem-repeats), from 0.
	Repeat               int     `json:"repeat"`
	ConvergenceSeconds   float64 `json:"convergence_seconds"`
	HeapAlloc            uint64  `json:"heap_alloc_bytes"`
	HeapInuse            uint64  `json:"heap_inuse_bytes"`
	StartupPeakHeapInuse uint64  `json:"startup_peak_heap_inuse_bytes"`
	SteadyMaxHeapInuse   uint64  `json:"steady_max_heap_inuse_bytes"`
	StartupPeakRatio     float64 `json:"startup_peak_ratio"`
	VmRSS                uint64  `json:"rss_bytes"`
	VmHWM                uint64  `json:"rss_peak_bytes"`
	Goroutines           int     `json:"goroutines"`
	// What the child's Pod cache held: the launcher label selector
	// applied (no bystander pod cached), the projection applied (no pod
	// cached whole).
	CachedPods          int  `json:"cached_pods"`
	PodSelectorApplied  bool `json:"pod_selector_applied"`
	PodTransformApplied bool `json:"pod_transform_applied"`
	// Cache is the estimated size of the cached objects by kind.
	Cache map[string]cacheSize `json:"cache,omitempty"`
	// History is what the child's VMObservations hold in status.history
	// (the cache keeps none of it: docs/history.md).
	History *historyStats `json:"history,omitempty"`
}

// measureChild runs a child manager cold over the current population (its
// VMObservations deleted first, so that it creates and writes them all),
// waits for convergence, marks the start-up peak, lets it run a steady
// window with heartbeats, and reads its heap.
func measureChild(ctx context.Context, t *testing.T, r *run, vms, repeat int) (memPoint, error) {
	pt := memPoint{VMs: vms, Repeat: repeat}
	if err := deleteObservations(ctx, r.w.c, r.w.nsList()); err != nil {
		return pt, err
	}
	if err := r.tr.waitGone(ctx, isVMNamespace, 2*time.Minute); err != nil {
		return pt, err
	}
	want, _, err := expected(ctx, r.w.c, r.policy, time.Now(), isVMNamespace)
	if err != nil {
		return pt, err
	}
	r.res.LoadAvg[fmt.Sprintf("memory %d", vms)] = loadavg()
	start := time.Now()
	ch, err := startChild(r.dir, childSpec{Kubeconfig: r.kubeconfig, Refresh: r.cfg.Refresh, LagGrace: r.cfg.LagGrace, MemProfileRate: *flagHeapRate,
		StartupGCPercent: r.cfg.StartupGCPercent, NoIncidents: r.cfg.NoIncidents})
	if err != nil {
		return pt, err
	}
	defer func() {
		if ch != nil {
			_ = ch.stop()
		}
	}()
	v, err := ch.ask("variant")
	if err != nil {
		return pt, err
	}
	if v.Error != "" {
		return pt, fmt.Errorf("child: %s (log %s)", v.Error, ch.log)
	}
	pt.CachedPods = v.CachedPods
	pt.PodSelectorApplied = v.CachedNonLaunchers == 0
	pt.PodTransformApplied = v.CachedFullPods == 0
	last, err := r.tr.waitMatch(ctx, want, nil, r.cfg.Converge)
	if err != nil {
		return pt, fmt.Errorf("child manager at %d VMs: %w (log %s)", vms, err, ch.log)
	}
	if vms > 0 {
		pt.ConvergenceSeconds = last.Sub(start).Seconds()
	}
	mark := "mark"
	if vms > 0 { // a manager with no VM has no initial lists to end its start-up
		mark = "mark ended"
	}
	m, err := ch.ask(mark)
	if err != nil {
		return pt, err
	}
	if vms > 0 {
		t.Logf("memory: %d VMs: the child's start-up ended %.1fs after convergence (seen: %v)", vms, m.StartupEndWait, m.StartupEndSeen)
	}
	time.Sleep(r.cfg.Settle)
	cmd := "stats"
	if r.cfg.ProfileDir != "" {
		cmd += " " + filepath.Join(r.cfg.ProfileDir, fmt.Sprintf("heap-%d.pb.gz", vms))
	}
	st, err := ch.ask(cmd)
	if err != nil {
		return pt, err
	}
	if pt.History, err = historyFigures(ctx, r.w.c); err != nil {
		return pt, err
	}
	if vms > 0 && vms == r.cfg.StormAt && repeat == r.cfg.MemRepeats-1 {
		sr, err := r.storm(ctx, t, ch, vms, st)
		r.res.Storm = sr
		if err != nil {
			return pt, err
		}
	}
	err = ch.stop()
	ch = nil
	if err != nil {
		return pt, err
	}
	pt.HeapAlloc, pt.HeapInuse = st.HeapAlloc, st.HeapInuse
	pt.StartupPeakHeapInuse, pt.SteadyMaxHeapInuse = m.StartupPeakHeapInuse, st.WindowMaxHeapInuse
	if st.WindowMaxHeapInuse > 0 {
		pt.StartupPeakRatio = float64(m.StartupPeakHeapInuse) / float64(st.WindowMaxHeapInuse)
	}
	pt.VmRSS, pt.VmHWM, pt.Goroutines = st.VmRSS, st.VmHWM, st.Goroutines
	pt.Cache = st.Cache
	t.Logf("memory: %d VMs: live heap %s, heap in use %s, start-up peak %s vs steady max %s, RSS %s (peak %s), converged in %.1fs; pod cache: selector %v, projection %v",
		vms, mib(pt.HeapAlloc), mib(pt.HeapInuse), mib(pt.StartupPeakHeapInuse), mib(pt.SteadyMaxHeapInuse), mib(pt.VmRSS), mib(pt.VmHWM), pt.ConvergenceSeconds,
		pt.PodSelectorApplied, pt.PodTransformApplied)
	return pt, nil
}

// binaryRSS is the production binary's memory at the current population.
type binaryRSS struct {
	VMs     int    `json:"vms"`
	RSS     uint64 `json:"rss_bytes"`
	RSSPeak uint64 `json:"rss_peak_bytes"`
	// RSSAnon and RSSFile split RSS: the process's own memory (heap,
	// stacks, the runtime's structures) and the pages of the binary it
	// has touched (code, read-only data), which no heap setting moves.
	RSSAnon        uint64  `json:"rss_anon_bytes"`
	RSSFile        uint64  `json:"rss_file_bytes"`
	StartupSeconds float64 `json:"startup_seconds"`
	// RecreateVMs VMObservations of one namespace were deleted under the
	// running binary; it took RecreateSeconds to create and write them
	// again: the binary's write rate, with the rate limit it ships with.
	RecreateVMs     int     `json:"recreate_vms"`
	RecreateSeconds float64 `json:"recreate_seconds"`
	// GOMEMLIMIT is what the binary ran with: config/manager's memory
	// limit, as the Deployment passes it (downward API).
	GOMEMLIMIT int64 `json:"gomemlimit_bytes"`
}

// shippedMemoryLimit is the manager container's memory limit in
// config/manager/manager.yaml, in bytes.
func shippedMemoryLimit() (int64, error) {
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "config", "manager", "manager.yaml"))
	if err != nil {
		return 0, err
	}
	for doc := range strings.SplitSeq(string(b), "\n---") {
		var d appsv1.Deployment
		if err := yaml.Unmarshal([]byte(doc), &d); err != nil || d.Kind != "Deployment" {
			continue
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			if q, ok := c.Resources.Limits[corev1.ResourceMemory]; ok && c.Name == "manager" {
				return q.Value(), nil
			}
		}
	}
	return 0, errors.New("config/manager/manager.yaml: no memory limit on the manager container")
}

// measureBinary builds `vmobs manager` and runs it as it ships, over the
// current population with its VMObservations in place (a restart: it writes
// nothing but evidence refreshes that are due), until its CPU use has been
// quiet for 3s; then its peak RSS (VmHWM) is the start-up peak; after the
// settle window its VmRSS is the steady state. memLimit, when positive,
// replaces the manifest's GOMEMLIMIT.
func measureBinary(ctx context.Context, t *testing.T, r *run, vms int, memLimit int64) (binaryRSS, error) {
	out := binaryRSS{VMs: vms}
	limit, err := shippedMemoryLimit()
	if err != nil {
		return out, err
	}
	if memLimit > 0 {
		limit = memLimit
	}
	out.GOMEMLIMIT = limit
	bin := filepath.Join(r.dir, "vmobs")
	// As hack/release.sh builds it: the manager alone (no demo, simulator
	// or analyzer), stripped.
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-tags", "release", "-ldflags", "-s -w", "-o", bin, "./cmd/vmobs")
	build.Dir = testenv.RepoRoot()
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := build.CombinedOutput(); err != nil {
		return out, fmt.Errorf("go build ./cmd/vmobs: %w: %s", err, b)
	}
	logf, err := os.CreateTemp(r.dir, "vmobs-*.log")
	if err != nil {
		return out, err
	}
	defer logf.Close()
	// No guest probes, as in the child managers: the test control plane has
	// no virt-api, so every probe would fail, and the probes of the VMs
	// with a connected agent (half of them) would run right after the
	// start-up, a request and a reconcile each, unlike a real cluster's.
	// The guest probe's own harness measures them (docs/scale.md).
	args := []string{"manager", "--kubeconfig", r.kubeconfig, "--metrics-bind-address", "0", "--health-probe-bind-address", "0",
		"--guest-probe-interval", "0"}
	// The run's refresh interval, whatever the binary's default: the
	// harness compares its figures with the in-process manager's.
	args = append(args, "--evidence-refresh-interval", r.cfg.Refresh.String())
	if r.cfg.LagGrace > 0 {
		args = append(args, "--lag-grace", r.cfg.LagGrace.String())
	}
	if r.cfg.StartupGCPercent >= 0 {
		args = append(args, "--startup-gc-percent", strconv.Itoa(r.cfg.StartupGCPercent))
	}
	if r.cfg.NoIncidents {
		args = append(args, "--incidents=false")
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// The manifests set GOMEMLIMIT to the container's memory limit.
	cmd.Env = append(os.Environ(), "GOMEMLIMIT="+strconv.FormatInt(limit, 10))
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return out, err
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	pid := strconv.Itoa(cmd.Process.Pid)
	quiet, prev := 0, cpuTicks(pid)
	for quiet < 6 {
		time.Sleep(500 * time.Millisecond)
		cur := cpuTicks(pid)
		// Under 2% of a core over the last half second (clock ticks are
		// 10ms), after at least 2s.
		if cur-prev <= 1 && time.Since(start) > 2*time.Second {
			quiet++
		} else {
			quiet = 0
		}
		prev = cur
		if time.Since(start) > r.cfg.Converge {
			return out, fmt.Errorf("vmobs manager kept busy for %s (log %s)", r.cfg.Converge, logf.Name())
		}
	}
	out.StartupSeconds = time.Since(start).Seconds() - 3
	out.RSSPeak = procStatusOf(pid, "VmHWM")
	time.Sleep(r.cfg.Settle)
	out.RSS = procStatusOf(pid, "VmRSS")
	out.RSSAnon, out.RSSFile = procStatusOf(pid, "RssAnon"), procStatusOf(pid, "RssFile")
	t.Logf("vmobs manager binary at %d VMs, GOMEMLIMIT %s: RSS %s (anonymous %s, the binary's pages %s), start-up peak RSS %s, start-up %.1fs",
		vms, mib(uint64(limit)), mib(out.RSS), mib(out.RSSAnon), mib(out.RSSFile), mib(out.RSSPeak), out.StartupSeconds)
	if b, err := os.ReadFile(logf.Name()); err == nil {
		for line := range strings.Lines(string(b)) {
			if strings.Contains(line, startupgc.EndedMsg) || strings.Contains(line, startupgc.SyncedMsg) {
				t.Logf("vmobs manager binary: %s", strings.TrimSpace(line))
			}
		}
	}

	// Its write rate: one namespace's VMObservations deleted under it.
	ns := r.w.nsList()[0]
	inNS := func(n string) bool { return n == ns }
	want, _, err := expected(ctx, r.w.c, r.policy, time.Now(), inNS)
	if err != nil {
		return out, err
	}
	t0 := time.Now()
	if err := deleteObservations(ctx, r.w.c, []string{ns}); err != nil {
		return out, err
	}
	last, err := r.tr.waitMatchSince(ctx, want, nil, t0, r.cfg.Converge)
	if err != nil {
		return out, fmt.Errorf("vmobs manager binary recreating %d VMObservations: %w (log %s)", len(want), err, logf.Name())
	}
	out.RecreateVMs, out.RecreateSeconds = len(want), last.Sub(t0).Seconds()
	t.Logf("vmobs manager binary recreated %d VMObservations in %.1fs", out.RecreateVMs, out.RecreateSeconds)
	return out, nil
}

// cpuTicks is utime+stime of a process, in clock ticks.
func cpuTicks(pid string) int64 {
	b, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	if err != nil {
		return 0
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		s = s[i+2:]
	}
	f := strings.Fields(s)
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	k, _ := strconv.ParseInt(f[12], 10, 64)
	return u + k
}

func mib(b uint64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// slope is the least-squares slope of y over x.
func slope(x []float64, y []float64) float64 {
	if len(x) < 2 {
		return 0
	}
	var sx, sy, sxx, sxy float64
	for i := range x {
		sx += x[i]
		sy += y[i]
		sxx += x[i] * x[i]
		sxy += x[i] * y[i]
	}
	n := float64(len(x))
	d := n*sxx - sx*sx
	if d == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / d
}
