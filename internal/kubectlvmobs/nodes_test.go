package kubectlvmobs

import (
	"bytes"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/vmobs/vmobs/api/v1alpha1"
)

// TestNodeTable renders two NodeObservations as `kubectl vmobs nodes`
// prints them, and their exit status.
func TestNodeTable(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	created := metav1.NewTime(now.Add(-72 * time.Hour))
	layer := func(v v1alpha1.Verdict) v1alpha1.LayerStatus { return v1alpha1.LayerStatus{Verdict: v} }
	nodes := []v1alpha1.NodeObservation{
		{
			ObjectMeta: metav1.ObjectMeta{Name: "node-a", CreationTimestamp: created},
			Status: v1alpha1.NodeObservationStatus{Verdict: v1alpha1.VerdictHealthy, Reason: v1alpha1.ReasonKubeletReady,
				Layers: &v1alpha1.NodeLayers{Kubelet: layer(v1alpha1.VerdictHealthy), VirtHandler: layer(v1alpha1.VerdictHealthy),
					DomainStats: layer(v1alpha1.VerdictUnknown), LauncherPath: layer(v1alpha1.VerdictUnknown)},
				VMs: &v1alpha1.VMCounts{Total: 12, Healthy: 12}},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "node-b", CreationTimestamp: created},
			Status: v1alpha1.NodeObservationStatus{Verdict: v1alpha1.VerdictUnknown, Reason: v1alpha1.ReasonNodeNotReady,
				Layers: &v1alpha1.NodeLayers{Kubelet: layer(v1alpha1.VerdictUnknown), VirtHandler: layer(v1alpha1.VerdictUnknown),
					DomainStats: layer(v1alpha1.VerdictUnknown), LauncherPath: layer(v1alpha1.VerdictUnknown)},
				VMs: &v1alpha1.VMCounts{Total: 9, Unknown: 8, Failed: 1}},
		},
		{ObjectMeta: metav1.ObjectMeta{Name: "node-c"}},
	}
	var b bytes.Buffer
	if err := printers.NewTablePrinter(printers.PrintOptions{}).PrintObj(NodeTable(nodes, now), &b); err != nil {
		t.Fatal(err)
	}
	want := `NAME     VERDICT   KUBELET   VIRT-HANDLER   DOMAIN-STATS   LAUNCHER-PATH   REASON         VMS   DEGRADED   FAILED   UNKNOWN   AGE
node-a   Healthy   Healthy   Healthy        Unknown        Unknown         KubeletReady   12    0          0        0         3d
node-b   Unknown   Unknown   Unknown        Unknown        Unknown         NodeNotReady   9     0          1        8         3d
node-c   <none>    <none>    <none>         <none>         <none>          <none>         0     0          0        0         <none>
`
	if got := b.String(); got != want {
		t.Errorf("table:\n%s\nwant:\n%s", got, want)
	}
	code := verdictsCode(len(nodes), func(i int) v1alpha1.Verdict { return nodes[i].Status.Verdict }, v1alpha1.VerdictProgressing)
	if code != ExitUnknown {
		t.Errorf("exit status %d, want %d (a node is Unknown)", code, ExitUnknown)
	}
}
