package scale

import (
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

// TestWritesTo reads apiserver_request_total as kube-apiserver exposes it
// and counts the writes to one resource: every writing verb, any code, any
// subresource; no read, no other resource.
func TestWritesTo(t *testing.T) {
	const text = `# HELP apiserver_request_total [STABLE] Counter of apiserver requests
# TYPE apiserver_request_total counter
apiserver_request_total{code="201",component="apiserver",dry_run="",group="observability.vmobs.io",resource="vmobservations",scope="resource",subresource="",verb="POST",version="v1alpha1"} 50
apiserver_request_total{code="200",component="apiserver",dry_run="",group="observability.vmobs.io",resource="vmobservations",scope="resource",subresource="status",verb="APPLY",version="v1alpha1"} 48
apiserver_request_total{code="409",component="apiserver",dry_run="",group="observability.vmobs.io",resource="vmobservations",scope="resource",subresource="status",verb="APPLY",version="v1alpha1"} 2
apiserver_request_total{code="200",component="apiserver",dry_run="",group="observability.vmobs.io",resource="vmobservations",scope="namespace",subresource="",verb="DELETECOLLECTION",version="v1alpha1"} 5
apiserver_request_total{code="200",component="apiserver",dry_run="",group="observability.vmobs.io",resource="vmobservations",scope="cluster",subresource="",verb="LIST",version="v1alpha1"} 7
apiserver_request_total{code="0",component="apiserver",dry_run="",group="observability.vmobs.io",resource="vmobservations",scope="cluster",subresource="",verb="WATCH",version="v1alpha1"} 3
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="status",verb="PUT",version="v1"} 11
apiserver_flowcontrol_rejected_requests_total{flow_schema="vmobs-scale-overload",priority_level="vmobs-scale-overload",reason="concurrency-limit"} 4
apiserver_flowcontrol_rejected_requests_total{flow_schema="vmobs-scale-overload",priority_level="vmobs-scale-overload",reason="time-out"} 1
some_gauge{path="/a,b}",note="say \"hi\""} 2.5e+00
`
	ms, err := parseMetrics(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ms.writesTo("vmobservations"), 50.0+48+2+5; got != want {
		t.Errorf("writesTo(vmobservations) = %v, want %v", got, want)
	}
	if got := ms.writesTo("pods"); got != 11 {
		t.Errorf("writesTo(pods) = %v, want 11", got)
	}
	if got := ms.sum("apiserver_flowcontrol_rejected_requests_total", map[string]string{"priority_level": overloadName}); got != 5 {
		t.Errorf("rejected = %v, want 5", got)
	}
	if got := ms.sum("some_gauge", map[string]string{"path": "/a,b}", "note": `say "hi"`}); got != 2.5 {
		t.Errorf("a label value with a comma, a brace and quotes: got %v, want 2.5", got)
	}
}

// TestAttribute splits a CPU profile by label, operation and context.
func TestAttribute(t *testing.T) {
	fn := map[string]*profile.Function{}
	loc := func(names ...string) []*profile.Location {
		var out []*profile.Location
		for _, n := range names { // leaf first
			if fn[n] == nil {
				fn[n] = &profile.Function{ID: uint64(len(fn) + 1), Name: n}
			}
			out = append(out, &profile.Location{Line: []profile.Line{{Function: fn[n]}}})
		}
		return out
	}
	manager := map[string][]string{cpuLabel: {cpuLabelManager}}
	prof := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		Sample: []*profile.Sample{
			// An allocation made while decoding a watch event.
			{Value: []int64{1, 30e6}, Label: manager, Location: loc("runtime.mallocgc", "encoding/json.(*decodeState).object",
				"k8s.io/apimachinery/pkg/runtime/serializer/json.(*Serializer).Decode", "k8s.io/client-go/tools/cache.(*Reflector).watch")},
			// A deep copy on a cache read in Reconcile's gather.
			{Value: []int64{1, 20e6}, Label: manager, Location: loc("runtime.memmove", "k8s.io/api/core/v1.(*Pod).DeepCopyInto",
				"sigs.k8s.io/controller-runtime/pkg/cache/internal.(*CacheReader).Get",
				"github.com/vmobs/vmobs/controllers.(*Reconciler).gather", "github.com/vmobs/vmobs/controllers.(*Reconciler).Reconcile")},
			// A GC assist during the node fan-out.
			{Value: []int64{1, 10e6}, Label: manager, Location: loc("runtime.gcAssistAlloc", "runtime.mallocgc",
				"github.com/vmobs/vmobs/controllers.(*Reconciler).nodeToVMs")},
			// The harness's own work, and the unlabelled background GC.
			{Value: []int64{1, 50e6}, Label: map[string][]string{cpuLabel: {cpuLabelFloor}}, Location: loc("encoding/json.Marshal")},
			{Value: []int64{1, 40e6}, Location: loc("runtime.scanobject", "runtime.gcDrain", "runtime.gcBgMarkWorker")},
			{Value: []int64{1, 5e6}, Location: loc("main.harness")},
		},
	}
	f := attribute(prof, cpuLabelManager, 10)
	if f.ProfiledCPUSeconds != 0.155 || f.CPUSeconds != 0.06 || f.GCBackgroundSeconds != 0.04 {
		t.Errorf("profiled %v, manager %v, background GC %v; want 0.155, 0.06, 0.04", f.ProfiledCPUSeconds, f.CPUSeconds, f.GCBackgroundSeconds)
	}
	if f.USPerUnit != 6000 || f.USPerUnitWithGC != 10000 {
		t.Errorf("µs per reconcile %v (with GC %v), want 6000 (10000)", f.USPerUnit, f.USPerUnitWithGC)
	}
	wantOps := map[string]float64{"decoding": 3000, "deep copy": 2000, "GC": 1000}
	for k, v := range wantOps {
		if f.ByOperation[k] != v {
			t.Errorf("by operation %q = %v, want %v (all: %v)", k, f.ByOperation[k], v, f.ByOperation)
		}
	}
	wantCtx := map[string]float64{"informers: list and watch": 3000, "reconcile: gather (cache reads)": 2000, "node fan-out": 1000}
	for k, v := range wantCtx {
		if f.ByContext[k] != v {
			t.Errorf("by context %q = %v, want %v (all: %v)", k, f.ByContext[k], v, f.ByContext)
		}
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{1.4, 1.1, 1.3}, 1.3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := median(c.in); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}
