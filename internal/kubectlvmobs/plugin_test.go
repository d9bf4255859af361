package kubectlvmobs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/yaml"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/kubectlvmobs/plugintest"
	"github.com/vmobs/vmobs/internal/scheme"
	"github.com/vmobs/vmobs/internal/testenv"
)

// vm builds a VMObservation with a verdict and reason, options applied.
func vm(namespace, name string, v v1alpha1.Verdict, reason string, mods ...func(*v1alpha1.VMObservation)) v1alpha1.VMObservation {
	o := v1alpha1.VMObservation{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       v1alpha1.VMObservationSpec{VMName: name},
		Status:     v1alpha1.VMObservationStatus{Verdict: v, Reason: reason},
	}
	for _, m := range mods {
		m(&o)
	}
	return o
}

// onNode puts the VM's VMI on node.
func onNode(node string) func(*v1alpha1.VMObservation) {
	return func(o *v1alpha1.VMObservation) {
		o.Status.VMI = &v1alpha1.VMISummary{Name: o.Name, Phase: "Running", NodeName: node}
	}
}

func verdicts(vs ...v1alpha1.Verdict) []v1alpha1.VMObservation {
	out := make([]v1alpha1.VMObservation, 0, len(vs))
	for i, v := range vs {
		out = append(out, vm("ns", fmt.Sprintf("vm%d", i), v, ""))
	}
	return out
}

func TestHealthCode(t *testing.T) {
	const (
		healthy     = v1alpha1.VerdictHealthy
		suspended   = v1alpha1.VerdictSuspended
		progressing = v1alpha1.VerdictProgressing
		unknown     = v1alpha1.VerdictUnknown
		degraded    = v1alpha1.VerdictDegraded
		failed      = v1alpha1.VerdictFailed
	)
	for _, tc := range []struct {
		name   string
		objs   []v1alpha1.VMObservation
		failOn v1alpha1.Verdict
		want   int
	}{
		{"no VMs", nil, progressing, ExitOK},
		{"healthy and suspended", verdicts(healthy, suspended, healthy), progressing, ExitOK},
		{"degraded", verdicts(healthy, degraded), progressing, ExitDegraded},
		{"failed beats degraded", verdicts(degraded, failed, healthy), progressing, ExitFailed},
		{"degraded beats unknown", verdicts(unknown, degraded), progressing, ExitDegraded},
		{"unknown", verdicts(unknown, healthy), progressing, ExitUnknown},
		{"no status yet counts as unknown", verdicts(""), progressing, ExitUnknown},
		{"a word outside the enum counts as unknown", verdicts("Sideways"), progressing, ExitUnknown},
		{"progressing alone", verdicts(progressing, healthy), progressing, ExitProgressing},
		{"progressing adds 8", verdicts(progressing, degraded), progressing, ExitDegraded | ExitProgressing},
		{"failed and progressing", verdicts(failed, progressing), progressing, 10},
		{"unknown and progressing", verdicts(unknown, progressing), progressing, 11},
		{"fail-on Unknown ignores progressing", verdicts(progressing, healthy), unknown, ExitOK},
		{"fail-on Degraded ignores unknown", verdicts(unknown, progressing), degraded, ExitOK},
		{"fail-on Degraded", verdicts(unknown, degraded, progressing), degraded, ExitDegraded},
		{"fail-on Failed ignores degraded", verdicts(degraded), failed, ExitOK},
		{"fail-on Failed", verdicts(degraded, failed), failed, ExitFailed},
		{"fail-on None", verdicts(failed, unknown, progressing), "", ExitOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := healthCode(tc.objs, tc.failOn); got != tc.want {
				t.Errorf("healthCode = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestParseFailOn(t *testing.T) {
	for in, want := range map[string]v1alpha1.Verdict{
		"Progressing": v1alpha1.VerdictProgressing,
		"unknown":     v1alpha1.VerdictUnknown,
		"DEGRADED":    v1alpha1.VerdictDegraded,
		"Failed":      v1alpha1.VerdictFailed,
		"none":        "",
	} {
		if got, err := parseFailOn(in); err != nil || got != want {
			t.Errorf("parseFailOn(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"Healthy", "Suspended", "", "bad"} {
		if _, err := parseFailOn(in); err == nil {
			t.Errorf("parseFailOn(%q) accepted", in)
		}
	}
}

func names(objs []v1alpha1.VMObservation) string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.Name)
	}
	return strings.Join(out, ",")
}

func TestSortBy(t *testing.T) {
	objs := sortObservations(plugintest.LoadFixtures(t))
	for _, tc := range []struct {
		expr, want, err string
	}{
		{expr: ".status.verdict", want: "win2k22-app,build-runner,scratch-vmi,ubuntu-dev,rhel9-db,fedora-web,archive-01,ledger-01"},
		{expr: "status.reason", want: "scratch-vmi,win2k22-app,ledger-01,ubuntu-dev,rhel9-db,fedora-web,archive-01,build-runner"},
		{expr: "{.metadata.name}", want: "archive-01,build-runner,fedora-web,ledger-01,rhel9-db,scratch-vmi,ubuntu-dev,win2k22-app"},
		// Only win2k22-app has a migration: the others sort first, in
		// their namespace/name order.
		{expr: ".status.migration.phase", want: "ledger-01,build-runner,scratch-vmi,ubuntu-dev,archive-01,rhel9-db,fedora-web,win2k22-app"},
		{expr: ".status.nosuchfield", err: `couldn't find any field with path "{.status.nosuchfield}"`},
		{expr: "{.status[}", err: "invalid --sort-by"},
		{expr: "", err: "invalid --sort-by"},
	} {
		t.Run(tc.expr, func(t *testing.T) {
			got, err := sortBy(objs, tc.expr)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("sortBy(%q) = %v, want an error with %q", tc.expr, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if names(got) != tc.want {
				t.Errorf("sortBy(%q) = %s, want %s", tc.expr, names(got), tc.want)
			}
		})
	}

	// Numbers sort by value, not by text.
	restarts := func(n int32) func(*v1alpha1.VMObservation) {
		return func(o *v1alpha1.VMObservation) {
			o.Status.LauncherPods = []v1alpha1.LauncherPod{{Name: "p", Role: v1alpha1.RoleActive, Restarts: n}}
		}
	}
	got, err := sortBy([]v1alpha1.VMObservation{
		vm("ns", "ten", "", "", restarts(10)), vm("ns", "nine", "", "", restarts(9)), vm("ns", "two", "", "", restarts(2)),
	}, ".status.launcherPods[0].restarts")
	if err != nil || names(got) != "two,nine,ten" {
		t.Errorf("sortBy restarts = %s, %v; want two,nine,ten", names(got), err)
	}
}

func TestCompareValues(t *testing.T) {
	for _, tc := range []struct {
		a, b any
		want int
	}{
		{nil, "x", -1},
		{"x", nil, 1},
		{nil, nil, 0},
		{int64(9), int64(10), -1},
		{float64(2.5), int64(2), 1},
		{false, true, -1},
		{true, true, 0},
		{"9", "10", -1},      // both quantities: by amount
		{"512Mi", "1Gi", -1}, // both quantities: by amount
		{"Healthy", "Degraded", 1},
		{"2026-11-30T11:00:00Z", "2026-11-30T12:00:00Z", -1},
	} {
		if got := compareValues(tc.a, tc.b); got != tc.want {
			t.Errorf("compareValues(%#v, %#v) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

// lostNode is a fleet with a lost node: 14 VMs on node-b Unknown because
// the Node is not Ready (what the engine says of every VM on a lost node,
// testdata/fixtures.yaml's ledger-01), on node-a one Degraded for its
// launcher pod and three healthy, and a stopped VM on no node.
func lostNode() []v1alpha1.VMObservation {
	var objs []v1alpha1.VMObservation
	for i := range 14 {
		ns := "team-a"
		if i%2 == 1 {
			ns = "team-b"
		}
		objs = append(objs, vm(ns, fmt.Sprintf("vm-%02d", i), v1alpha1.VerdictUnknown, v1alpha1.ReasonNodeNotReady, onNode("node-b")))
	}
	objs = append(objs,
		vm("team-a", "db-0", v1alpha1.VerdictDegraded, v1alpha1.ReasonLauncherPodNotReady, onNode("node-a")),
		vm("team-a", "web-0", v1alpha1.VerdictHealthy, v1alpha1.ReasonRunning, onNode("node-a")),
		vm("team-a", "web-1", v1alpha1.VerdictHealthy, v1alpha1.ReasonRunning, onNode("node-a")),
		vm("team-b", "web-2", v1alpha1.VerdictHealthy, v1alpha1.ReasonRunning, onNode("node-a")),
		vm("team-b", "batch", v1alpha1.VerdictSuspended, v1alpha1.ReasonStopped),
	)
	// A VM scheduled on node-c whose VMI does not say so yet.
	objs = append(objs, vm("team-b", "new-0", v1alpha1.VerdictProgressing, v1alpha1.ReasonStarting, func(o *v1alpha1.VMObservation) {
		o.Status.LauncherPods = []v1alpha1.LauncherPod{{Name: "virt-launcher-new-0-abcde", Role: v1alpha1.RoleActive, Node: "node-c"}}
	}))
	return objs
}

func TestSummary(t *testing.T) {
	s := Summarize(lostNode())
	text := RenderSummary(s, RenderOptions{})
	want := `20 VMs: 1 Degraded, 14 Unknown, 1 Progressing, 1 Suspended, 3 Healthy

NAMESPACE   VMS   VERDICT       REASON
team-a      1     Degraded      LauncherPodNotReady
team-a      7     Unknown       NodeNotReady
team-a      2     Healthy       Running
team-b      7     Unknown       NodeNotReady
team-b      1     Progressing   Starting
team-b      1     Suspended     Stopped
team-b      1     Healthy       Running

NODE     VMS   VERDICT       REASON
node-a   1     Degraded      LauncherPodNotReady
node-a   3     Healthy       Running
node-b   14    Unknown       NodeNotReady
node-c   1     Progressing   Starting
<none>   1     Suspended     Stopped
`
	if text != want {
		t.Errorf("summary:\n%s\nwant\n%s", text, want)
	}

	// docs/plugin.md shows this summary.
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "plugin.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "```\n"+want+"```\n") {
		t.Error("docs/plugin.md does not show the lost node's summary that TestSummary renders")
	}

	// The JSON form carries the VMs of each row.
	group := func(name string) *SummaryGroup {
		for i := range s.ByNode {
			if s.ByNode[i].Name == name {
				return &s.ByNode[i]
			}
		}
		return nil
	}
	if node := group("node-b"); node == nil || node.Total != 14 || len(node.Rows) != 1 || len(node.Rows[0].VMs) != 14 || node.Rows[0].VMs[0] != "team-a/vm-00" {
		t.Errorf("node-b group: %+v", node)
	}
	if node := group("node-a"); node == nil || node.Total != 4 || len(node.Rows) != 2 || !slices.Equal(node.Rows[0].VMs, []string{"team-a/db-0"}) || len(node.Rows[1].VMs) != 3 {
		t.Errorf("node-a group: %+v", node)
	}

	objs := sortObservations(plugintest.LoadFixtures(t))
	golden(t, "summary-all", RenderSummary(Summarize(objs), RenderOptions{}))
	if got := RenderSummary(Summarize(nil), RenderOptions{}); got != "0 VMs\n" {
		t.Errorf("summary of no VMs = %q", got)
	}
	colored := RenderSummary(Summarize(objs), RenderOptions{Color: true})
	if !strings.Contains(colored, "3 "+sgrYellow+"Degraded"+sgrReset) || !strings.Contains(colored, sgrGreen+"Healthy"+sgrReset+"     Running") {
		t.Errorf("coloured summary lacks coloured verdicts:\n%s", colored)
	}
}

// render runs the renderer the flags ask for on objs.
func render(t *testing.T, v verb, single bool, objs []v1alpha1.VMObservation, output, template string) (string, bool, error) {
	t.Helper()
	o := &options{print: genericclioptions.NewPrintFlags("").WithTypeSetter(scheme.New())}
	*o.print.OutputFormat = output
	*o.print.TemplatePrinterFlags.TemplateArgument = template
	o.print.OutputFlagSpecified = func() bool { return output != "" }
	show, human, err := o.renderer(v, single, false)
	if err != nil {
		return "", false, err
	}
	var b bytes.Buffer
	if err := show(&b, objs); err != nil {
		return "", human, err
	}
	return b.String(), human, nil
}

func TestRenderer(t *testing.T) {
	objs := sortObservations(plugintest.LoadFixtures(t))
	for i := range objs {
		setKind(&objs[i])
	}
	finance := inNamespace(objs, "finance")
	ledger := []v1alpha1.VMObservation{named(t, objs, "ledger-01")}

	// decodeList checks that out is a v1 List of the finance VMs.
	decodeList := func(t *testing.T, out string) {
		t.Helper()
		var list struct {
			APIVersion, Kind string
			Items            []v1alpha1.VMObservation
		}
		if err := yaml.Unmarshal([]byte(out), &list); err != nil {
			t.Fatal(err)
		}
		if list.APIVersion != "v1" || list.Kind != "List" || names(list.Items) != "ledger-01,win2k22-app" ||
			list.Items[0].Kind != "VMObservation" || list.Items[0].Status.Reason != "NodeNotReady" {
			t.Errorf("not a List of the finance VMs:\n%s", out)
		}
	}
	for _, tc := range []struct {
		name     string
		v        verb
		single   bool
		objs     []v1alpha1.VMObservation
		output   string
		template string
		human    bool
		check    func(t *testing.T, out string)
		err      string
	}{
		{name: "table", objs: finance, human: true, check: func(t *testing.T, out string) {
			if !strings.HasPrefix(out, "NAME          VERDICT    CONTROL-PLANE") {
				t.Errorf("not the table:\n%s", out)
			}
		}},
		{name: "wide", objs: finance, output: "wide", human: true, check: func(t *testing.T, out string) {
			if !strings.Contains(out, "NODE-NAME") || !strings.Contains(out, "node-b") {
				t.Errorf("not the wide table:\n%s", out)
			}
		}},
		{name: "describe", v: verbDescribe, objs: ledger, human: true, check: func(t *testing.T, out string) {
			if !strings.HasPrefix(out, "ledger-01  Unknown  NodeNotReady") {
				t.Errorf("not the tree:\n%s", out)
			}
		}},
		{name: "json", objs: finance, output: "json", check: decodeList},
		{name: "yaml", objs: finance, output: "yaml", check: decodeList},
		{name: "describe yaml", v: verbDescribe, objs: finance, output: "yaml", check: decodeList},
		{name: "json of one name", single: true, objs: ledger, output: "json", check: func(t *testing.T, out string) {
			var o v1alpha1.VMObservation
			if err := json.Unmarshal([]byte(out), &o); err != nil {
				t.Fatal(err)
			}
			if o.Kind != "VMObservation" || o.APIVersion != v1alpha1.GroupVersion.String() || o.Name != "ledger-01" {
				t.Errorf("not the object:\n%s", out)
			}
		}},
		{name: "name", objs: finance, output: "name", check: func(t *testing.T, out string) {
			if want := "vmobservation.observability.vmobs.io/ledger-01\nvmobservation.observability.vmobs.io/win2k22-app\n"; out != want {
				t.Errorf("got %q, want %q", out, want)
			}
		}},
		{name: "jsonpath", objs: finance, output: `jsonpath={range .items[*]}{.metadata.name}={.status.verdict}{"\n"}{end}`, check: func(t *testing.T, out string) {
			if want := "ledger-01=Unknown\nwin2k22-app=Degraded\n"; out != want {
				t.Errorf("got %q, want %q", out, want)
			}
		}},
		{name: "go-template", objs: finance, output: `go-template={{range .items}}{{.metadata.name}} {{.status.layers.node.verdict}}{{"\n"}}{{end}}`, check: func(t *testing.T, out string) {
			if want := "ledger-01 Unknown\nwin2k22-app Healthy\n"; out != want {
				t.Errorf("got %q, want %q", out, want)
			}
		}},
		{name: "template alone", objs: finance, template: `{{len .items}}`, check: func(t *testing.T, out string) {
			if out != "2" {
				t.Errorf("got %q, want 2", out)
			}
		}},
		{name: "empty json", objs: nil, output: "json", check: func(t *testing.T, out string) {
			if !strings.Contains(out, `"items": []`) || !strings.Contains(out, `"kind": "List"`) {
				t.Errorf("not an empty List: %s", out)
			}
		}},
		{name: "summary", v: verbSummary, objs: objs, human: true, check: func(t *testing.T, out string) {
			if !strings.HasPrefix(out, "8 VMs: 3 Degraded") {
				t.Errorf("not the summary:\n%s", out)
			}
		}},
		{name: "summary yaml", v: verbSummary, objs: objs, output: "yaml", check: func(t *testing.T, out string) {
			var s Summary
			if err := yaml.UnmarshalStrict([]byte(out), &s); err != nil {
				t.Fatal(err)
			}
			if s.Kind != SummaryKind || s.Total != 8 || len(s.ByNode) == 0 || !slices.Equal(s.ByNode[len(s.ByNode)-1].Rows[0].VMs, []string{"lab/build-runner"}) {
				t.Errorf("not the summary:\n%s", out)
			}
		}},
		{name: "summary jsonpath", v: verbSummary, objs: objs, output: `jsonpath={.verdicts[0].verdict} {.verdicts[0].count}`, check: func(t *testing.T, out string) {
			if out != "Degraded 3" {
				t.Errorf("got %q", out)
			}
		}},
		{name: "summary name", v: verbSummary, output: "name", err: "not name"},
		{name: "summary wide", v: verbSummary, output: "wide", err: "not wide"},
		{name: "unknown format", output: "xml", err: `invalid --output "xml": one of wide, json, yaml`},
		{name: "bad jsonpath", output: "jsonpath={.items[", err: "error parsing jsonpath"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, human, err := render(t, tc.v, tc.single, tc.objs, tc.output, tc.template)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %v, want an error with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if human != tc.human {
				t.Errorf("human = %v, want %v", human, tc.human)
			}
			tc.check(t, out)
		})
	}
}

// TestTableColumns keeps the plugin's columns in step with the CRD's
// printer columns, so `kubectl vmobs get` and `kubectl get vmobs` agree.
func TestTableColumns(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "config", "crd", "bases", "observability.vmobs.io_vmobservations.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd struct {
		Spec struct {
			Versions []struct {
				AdditionalPrinterColumns []struct {
					Name     string
					Type     string
					Priority int32
				}
			}
		}
	}
	if err := yaml.Unmarshal(data, &crd); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, c := range crd.Spec.Versions[0].AdditionalPrinterColumns {
		want = append(want, fmt.Sprintf("%s/%s/%d", c.Name, c.Type, c.Priority))
	}
	got := make([]string, 0, len(tableColumns))
	for _, c := range tableColumns[1:] { // kubectl adds Name itself
		got = append(got, fmt.Sprintf("%s/%s/%d", c.Name, c.Type, c.Priority))
	}
	if !slices.Equal(got, want) {
		t.Errorf("table columns %v, CRD printer columns %v", got, want)
	}
	if tableColumns[firstVerdictColumn].Name != "Verdict" {
		t.Errorf("column %d is %s, want Verdict", firstVerdictColumn, tableColumns[firstVerdictColumn].Name)
	}
}

// TestRunUsage covers what Run decides before it talks to a cluster, and
// an API server that does not answer.
func TestRunUsage(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args     []string
		code     int
		out, err string
	}{
		{[]string{"--help"}, ExitOK, "Usage:", ""},
		{[]string{"help"}, ExitOK, "--kubeconfig", ""},
		{[]string{"summary", "--help"}, ExitOK, "kubectl vmobs summary [flags]", ""},
		{[]string{"--version"}, ExitOK, "kubectl-vmobs devel (commit ", ""},
		{[]string{"completion", "bash"}, ExitOK, "__start_kubectl-vmobs", ""},
		{[]string{"completion", "zsh"}, ExitOK, "#compdef kubectl-vmobs", ""},
		{[]string{"completion", "fish"}, ExitOK, "complete -c kubectl-vmobs", ""},
		{[]string{"__complete", "get", "-o", ""}, ExitOK, "jsonpath\n", ""},
		{[]string{"__complete", "--fail-on", "D"}, ExitOK, "Degraded\n", ""},
		{[]string{"--no-such-flag"}, ExitError, "", "error: unknown flag: --no-such-flag\nSee 'kubectl vmobs --help'.\n"},
		{[]string{"get", "-A", "vm1"}, ExitError, "", "a name cannot be given with --all-namespaces\nSee 'kubectl vmobs get --help'."},
		{[]string{"get", "-l", "a=b", "vm1"}, ExitError, "", "a name cannot be given with --selector"},
		{[]string{"get", "-l", "a=(b"}, ExitError, "", "invalid --selector"},
		{[]string{"--fail-on", "Healthy"}, ExitError, "", `invalid --fail-on "Healthy": one of Progressing, Unknown, Degraded, Failed, None`},
		{[]string{"summary", "--sort-by", ".status.verdict"}, ExitError, "", "--sort-by does not apply to summary"},
		{[]string{"summary", "vm1"}, ExitError, "", `unknown command "vm1" for "kubectl vmobs summary"`},
		{[]string{"get", "--sort-by", "{}"}, ExitError, "", "invalid --sort-by"},
		{[]string{"get", "-o", "xml"}, ExitError, "", `invalid --output "xml"`},
		{[]string{"get", "--kubeconfig", kubeconfig, "--server", "http://127.0.0.1:1"}, ExitError, "", "connection refused"},
	} {
		var out, errOut bytes.Buffer
		code := Run(t.Context(), tc.args, &out, &errOut)
		if code != tc.code || !strings.Contains(out.String(), tc.out) || !strings.Contains(errOut.String(), tc.err) {
			t.Errorf("Run(%q) = %d, stdout %q, stderr %q; want %d, stdout with %q, stderr with %q", tc.args, code, out.String(), errOut.String(), tc.code, tc.out, tc.err)
		}
	}
}
