package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/projection"
	"github.com/vmobs/vmobs/internal/version"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func observation(name string, st v1alpha1.VMObservationStatus) *projection.Observation {
	return projection.FromObservation(&v1alpha1.VMObservation{
		ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: name},
		Spec:       v1alpha1.VMObservationSpec{VMName: name},
		Status:     st,
	})
}

func layer(v v1alpha1.Verdict, reason string) v1alpha1.LayerStatus {
	return v1alpha1.LayerStatus{Verdict: v, Reason: reason}
}

// The collector exports each VM's current verdicts and reasons only, with
// the VM's node, and its evidence times where the status has them.
func TestCollector(t *testing.T) {
	tests := map[string]struct {
		status v1alpha1.VMObservationStatus
		want   string
	}{
		"running VM on a node": {
			status: v1alpha1.VMObservationStatus{
				Verdict: v1alpha1.VerdictHealthy, Reason: v1alpha1.ReasonRunning,
				VMI: &v1alpha1.VMISummary{Name: "vm", NodeName: "node-a"},
				Layers: &v1alpha1.Layers{
					ControlPlane: layer(v1alpha1.VerdictHealthy, v1alpha1.ReasonRunning),
					Node: v1alpha1.LayerStatus{Verdict: v1alpha1.VerdictHealthy, Reason: v1alpha1.ReasonLauncherRunning,
						EvidenceTime: ptr.To(metav1.NewTime(t0)), StaleAt: ptr.To(metav1.NewTime(t0.Add(5 * time.Minute)))},
					Guest: layer(v1alpha1.VerdictHealthy, v1alpha1.ReasonGuestAgentConnected),
				},
			},
			want: `
vmobs_verdict{name="vm",namespace="prod",node="node-a",reason="Running",verdict="Healthy"} 1
vmobs_layer_verdict{layer="controlPlane",name="vm",namespace="prod",node="node-a",verdict="Healthy"} 1
vmobs_layer_verdict{layer="guest",name="vm",namespace="prod",node="node-a",verdict="Healthy"} 1
vmobs_layer_verdict{layer="node",name="vm",namespace="prod",node="node-a",verdict="Healthy"} 1
vmobs_layer_reason{layer="controlPlane",name="vm",namespace="prod",node="node-a",reason="Running"} 1
vmobs_layer_reason{layer="guest",name="vm",namespace="prod",node="node-a",reason="GuestAgentConnected"} 1
vmobs_layer_reason{layer="node",name="vm",namespace="prod",node="node-a",reason="LauncherRunning"} 1
vmobs_layer_evidence_timestamp_seconds{layer="node",name="vm",namespace="prod",node="node-a"} 1.7723664e+09
vmobs_layer_stale_timestamp_seconds{layer="node",name="vm",namespace="prod",node="node-a"} 1.7723667e+09
vmobs_collector_errors 0
`,
		},
		"stopped VM: no VMI, no node label": {
			status: v1alpha1.VMObservationStatus{
				Verdict: v1alpha1.VerdictSuspended, Reason: v1alpha1.ReasonStopped,
				Layers: &v1alpha1.Layers{
					ControlPlane: layer(v1alpha1.VerdictSuspended, v1alpha1.ReasonStopped),
					Node:         layer(v1alpha1.VerdictSuspended, v1alpha1.ReasonNotScheduled),
					Guest:        layer(v1alpha1.VerdictSuspended, v1alpha1.ReasonNotRunning),
				},
			},
			want: `
vmobs_verdict{name="vm",namespace="prod",node="",reason="Stopped",verdict="Suspended"} 1
vmobs_layer_verdict{layer="controlPlane",name="vm",namespace="prod",node="",verdict="Suspended"} 1
vmobs_layer_verdict{layer="guest",name="vm",namespace="prod",node="",verdict="Suspended"} 1
vmobs_layer_verdict{layer="node",name="vm",namespace="prod",node="",verdict="Suspended"} 1
vmobs_layer_reason{layer="controlPlane",name="vm",namespace="prod",node="",reason="Stopped"} 1
vmobs_layer_reason{layer="guest",name="vm",namespace="prod",node="",reason="NotRunning"} 1
vmobs_layer_reason{layer="node",name="vm",namespace="prod",node="",reason="NotScheduled"} 1
vmobs_collector_errors 0
`,
		},
		"no status yet: nothing but the error gauge": {
			want: `
vmobs_collector_errors 0
`,
		},
	}
	names := []string{"vmobs_verdict", "vmobs_layer_verdict", "vmobs_layer_reason",
		"vmobs_layer_evidence_timestamp_seconds", "vmobs_layer_stale_timestamp_seconds", "vmobs_collector_errors"}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			store := toolscache.NewStore(toolscache.MetaNamespaceKeyFunc)
			if err := store.Add(observation("vm", tc.status)); err != nil {
				t.Fatal(err)
			}
			if err := testutil.CollectAndCompare(&Collector{Observations: store}, strings.NewReader(expo(tc.want)), names...); err != nil {
				t.Error(err)
			}
		})
	}
}

// A store holding something else than projections, or no store, sets the
// error gauge.
func TestCollectorErrors(t *testing.T) {
	store := toolscache.NewStore(toolscache.MetaNamespaceKeyFunc)
	if err := store.Add(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: "x"}}); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*Collector{"foreign object": {Observations: store}, "no store": {}} {
		if err := testutil.CollectAndCompare(c, strings.NewReader(expo("vmobs_collector_errors 1")), "vmobs_collector_errors"); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestBuildInfo(t *testing.T) {
	v := version.Info{Version: "v0.2.0", Commit: "abc123", GoVersion: "go1.26.8"}
	want := `
vmobs_build_info{commit="abc123",goversion="go1.26.8",version="v0.2.0"} 1
`
	if err := testutil.CollectAndCompare(BuildInfo(v), strings.NewReader(expo(want))); err != nil {
		t.Error(err)
	}
}

// expo adds the HELP and TYPE lines testutil compares, from the
// collectors' own descriptions.
func expo(series string) string {
	help := map[string]string{}
	descs := make(chan *prometheus.Desc, 16)
	(&Collector{}).Describe(descs)
	close(descs)
	for d := range descs {
		s := d.String()
		name := between(s, `fqName: "`, `"`)
		help[name] = between(s, `help: "`, `"`)
	}
	help["vmobs_build_info"] = "The version, commit and Go version the running vmobs binary was built from; always 1."
	var b strings.Builder
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(series), "\n") {
		name := line[:strings.IndexAny(line, "{ ")]
		if !seen[name] {
			seen[name] = true
			b.WriteString("# HELP " + name + " " + help[name] + "\n# TYPE " + name + " gauge\n")
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

func between(s, from, to string) string {
	i := strings.Index(s, from)
	if i < 0 {
		return ""
	}
	s = s[i+len(from):]
	return s[:strings.Index(s, to)]
}
