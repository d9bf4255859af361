package kubectlvmobs

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/vmobs/vmobs/internal/drain"
	"github.com/vmobs/vmobs/internal/scheme"
)

func TestDrainCode(t *testing.T) {
	pred := func(outcomes ...drain.Outcome) []drain.Prediction {
		p := drain.Prediction{}
		for _, o := range outcomes {
			p.VMs = append(p.VMs, drain.VMPrediction{Outcome: o})
		}
		return []drain.Prediction{p}
	}
	for _, tc := range []struct {
		name  string
		preds []drain.Prediction
		want  int
	}{
		{"no VMs", nil, ExitOK},
		{"all migrate or are unaffected", pred(drain.OutcomeLiveMigrates, drain.OutcomeUnaffected), ExitOK},
		{"a restart", pred(drain.OutcomeLiveMigrates, drain.OutcomeRestartsElsewhere), ExitDrainShutDown},
		{"stays down", pred(drain.OutcomeStaysDown), ExitDrainShutDown},
		{"blocks", pred(drain.OutcomeBlocksDrain, drain.OutcomeLiveMigrates), ExitDrainBlocks},
		{"external", pred(drain.OutcomeLeftToExternal), ExitDrainUndecided},
		{"unknown", pred(drain.OutcomeUnknown), ExitDrainUndecided},
		{"all at once", pred(drain.OutcomeStaysDown, drain.OutcomeBlocksDrain, drain.OutcomeUnknown), 7},
		{"over two nodes", append(pred(drain.OutcomeStaysDown), pred(drain.OutcomeBlocksDrain)...), ExitDrainShutDown | ExitDrainBlocks},
	} {
		if got := drainCode(tc.preds); got != tc.want {
			t.Errorf("%s: exit %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestGatherDrain reads a small fleet through a fake client whose
// PodDisruptionBudgets are forbidden and whose cluster serves no KubeVirt
// CR: the prediction goes on and says what it could not read.
func TestGatherDrain(t *testing.T) {
	lm, none := kubevirtv1.EvictionStrategyLiveMigrate, kubevirtv1.EvictionStrategyNone
	vmi := func(name, node string, s *kubevirtv1.EvictionStrategy) *kubevirtv1.VirtualMachineInstance {
		return &kubevirtv1.VirtualMachineInstance{
			ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: name, UID: types.UID("uid-" + name)},
			Spec:       kubevirtv1.VirtualMachineInstanceSpec{EvictionStrategy: s},
			Status: kubevirtv1.VirtualMachineInstanceStatus{NodeName: node, Phase: kubevirtv1.Running, Conditions: []kubevirtv1.VirtualMachineInstanceCondition{
				{Type: kubevirtv1.VirtualMachineInstanceIsMigratable, Status: corev1.ConditionTrue},
			}},
		}
	}
	node := func(name string, cordoned bool) *corev1.Node {
		return &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{kubevirtv1.NodeSchedulable: "true"}},
			Spec:       corev1.NodeSpec{Unschedulable: cordoned},
			Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
		}
	}
	c := fake.NewClientBuilder().WithScheme(scheme.New()).
		WithObjects(vmi("web", "node-a", &lm), vmi("batch", "node-a", &none), vmi("elsewhere", "node-b", &lm), vmi("default", "node-a", nil),
			node("node-a", true), node("node-b", false)).
		WithInterceptorFuncs(interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			switch list.(type) {
			case *policyv1.PodDisruptionBudgetList:
				return apierrors.NewForbidden(schema.GroupResource{Group: "policy", Resource: "poddisruptionbudgets"}, "", errors.New("RBAC: access denied"))
			case *kubevirtv1.KubeVirtList:
				return apierrors.NewForbidden(schema.GroupResource{Group: "kubevirt.io", Resource: "kubevirts"}, "", errors.New("RBAC: access denied"))
			}
			return c.List(ctx, list, opts...)
		}}).Build()
	in, err := gatherDrain(t.Context(), c, []string{"node-a"}, "prod", time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	if len(in.VMIs) != 3 || len(in.Nodes) != 2 || in.Unreadable[drain.KindPDBs] == "" || in.Unreadable[drain.KindKubeVirt] == "" {
		t.Fatalf("gathered %d VMIs, %d nodes, unreadable %v", len(in.VMIs), len(in.Nodes), in.Unreadable)
	}
	in.Node = "node-a"
	p := drain.Predict(in)
	dc := DrainCheck{Nodes: []drain.Prediction{p}, Progress: []drain.Progress{drain.Track(p, in)}}
	out := RenderDrainCheck(dc, false)
	for _, want := range []string{
		"Node node-a: 3 VMs: 1 LiveMigrates, 1 StaysDown, 1 Unknown; 1 live migrations in 1 round(s) at most 2 per node, 5 per cluster; the node is cordoned",
		"NAMESPACE   VM        OUTCOME        REASONS                                             PROGRESS",
		"prod        web       LiveMigrates   EvictionStrategyLiveMigrate,LiveMigrationPossible   Pending",
		"prod/default: Unknown\n  ClusterEvictionStrategyUnknown: the VMI sets no evictionStrategy and the KubeVirt CR",
		"note DisruptionBudgetsUnreadable: PodDisruptionBudgets could not be read",
		"note Unreadable: PodDisruptionBudgets could not be read: poddisruptionbudgets.policy is forbidden",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the table lacks %q:\n%s", want, out)
		}
	}
	if got := drainCode(dc.Nodes); got != ExitDrainShutDown|ExitDrainUndecided {
		t.Errorf("exit %d", got)
	}
	if noHeaders := RenderDrainCheck(dc, true); strings.Contains(noHeaders, "NAMESPACE") {
		t.Errorf("--no-headers printed the header:\n%s", noHeaders)
	}

	// The VMIs are required: forbidden everywhere, the plugin fails clearly.
	denied := fake.NewClientBuilder().WithScheme(scheme.New()).WithInterceptorFuncs(interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		return apierrors.NewForbidden(schema.GroupResource{Group: "kubevirt.io", Resource: "virtualmachineinstances"}, "", errors.New("RBAC: access denied"))
	}}).Build()
	if _, err := gatherDrain(t.Context(), denied, []string{"node-a"}, "prod", time.Now()); err == nil || !strings.Contains(err.Error(), "listing VirtualMachineInstances") {
		t.Errorf("gathering without VMIs: %v", err)
	}
}

func TestDrainCheckUsage(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		code     int
		out, err string
	}{
		{[]string{"drain-check", "--help"}, ExitOK, "kubectl vmobs drain-check NODE... [flags]", ""},
		{[]string{"drain-check"}, ExitError, "", "requires at least 1 arg(s)"},
		{[]string{"drain-check", "node-a", "-o", "wide"}, ExitError, "", `drain-check prints a table, json or yaml, not "wide"`},
		{[]string{"drain-check", "node-a", "-l", "a=b"}, ExitError, "", "--selector does not apply to drain-check"},
		{[]string{"drain-check", "node-a", "-A"}, ExitError, "", "--all-namespaces does not apply to drain-check"},
	} {
		var out, errOut bytes.Buffer
		code := Run(t.Context(), tc.args, &out, &errOut)
		if code != tc.code || !strings.Contains(out.String(), tc.out) || !strings.Contains(errOut.String(), tc.err) {
			t.Errorf("Run(%q) = %d, stdout %q, stderr %q; want %d, stdout with %q, stderr with %q", tc.args, code, out.String(), errOut.String(), tc.code, tc.out, tc.err)
		}
	}
}
