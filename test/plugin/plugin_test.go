package plugin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/kubectlvmobs"
	"github.com/vmobs/vmobs/internal/kubectlvmobs/plugintest"
	"github.com/vmobs/vmobs/internal/testenv"
)

// shiftTimes moves every timestamp of a status by d, so fixtures computed at
// plugintest.FixtureNow read the same ages when rendered d later.
func shiftTimes(st *v1alpha1.VMObservationStatus, d time.Duration) {
	shift := func(t *metav1.Time) {
		if t != nil && !t.IsZero() {
			t.Time = t.Add(d)
		}
	}
	if l := st.Layers; l != nil {
		for _, ly := range []*v1alpha1.LayerStatus{&l.ControlPlane, &l.Node, &l.Guest} {
			shift(ly.LastTransitionTime)
			shift(ly.EvidenceTime)
			shift(ly.StaleAt)
			for i := range ly.Evidence {
				shift(ly.Evidence[i].Time)
			}
		}
	}
	if v := st.VMI; v != nil {
		shift(v.PhaseSince)
	}
	if m := st.Migration; m != nil {
		shift(m.PhaseSince)
		shift(m.StartTime)
		shift(m.EndTime)
	}
	if g := st.Guest; g != nil {
		shift(g.AgentConnectedSince)
	}
	for i := range st.Conditions {
		shift(&st.Conditions[i].LastTransitionTime)
	}
}

// wantOutput checks that the output is want.
func wantOutput(want string) func(t *testing.T, out string) {
	return func(t *testing.T, out string) {
		t.Helper()
		if out != want {
			t.Errorf("got %q, want %q", out, want)
		}
	}
}

// runPlugin runs the plugin in-process and returns its exit status, stdout
// and stderr.
func runPlugin(ctx context.Context, args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := kubectlvmobs.Run(ctx, args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestPluginAgainstAPIServer creates the fixtures on a real kube-apiserver
// and runs the plugin against it: in-process for get, describe, summary,
// the machine formats, -l, --sort-by, --fail-on, the exit statuses, a
// missing name, --watch and a lost node's summary; and as a real kubectl
// plugin found on PATH, with its completion.
func TestPluginAgainstAPIServer(t *testing.T) {
	env, c := testenv.StartForTest(t, testenv.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	objs := plugintest.LoadFixtures(t)
	shift := time.Now().Truncate(time.Second).Sub(plugintest.FixtureNow)
	namespaces := map[string]bool{}
	for _, o := range objs {
		if !namespaces[o.Namespace] {
			namespaces[o.Namespace] = true
			if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: o.Namespace}}); err != nil {
				t.Fatal(err)
			}
		}
		status := *o.Status.DeepCopy()
		shiftTimes(&status, shift)
		obj := &v1alpha1.VMObservation{
			ObjectMeta: metav1.ObjectMeta{Name: o.Name, Namespace: o.Namespace, Labels: o.Labels},
			Spec:       o.Spec,
		}
		if err := c.Create(ctx, obj); err != nil {
			t.Fatalf("creating %s/%s: %v", o.Namespace, o.Name, err)
		}
		obj.Status = status
		if err := c.Status().Update(ctx, obj); err != nil {
			t.Fatalf("writing the status of %s/%s: %v", o.Namespace, o.Name, err)
		}
	}

	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.Kubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	kc := []string{"--kubeconfig", kubeconfig}

	// Each case: the golden file stdout matches (ages normalised), or a
	// check of stdout; and the exit status, the health of what was shown.
	for _, tc := range []struct {
		name   string
		args   []string
		golden string
		check  func(t *testing.T, out string)
		code   int
	}{
		{name: "get", args: []string{"get", "-n", "finance"}, golden: "get-finance", code: kubectlvmobs.ExitDegraded},
		{name: "bare", args: []string{"--namespace=finance"}, golden: "get-finance", code: kubectlvmobs.ExitDegraded},
		{name: "get -A", args: []string{"get", "-A"}, golden: "get-all", code: kubectlvmobs.ExitDegraded},
		{name: "get -A -o wide", args: []string{"get", "-A", "-o", "wide"}, golden: "get-all-wide", code: kubectlvmobs.ExitDegraded},
		{name: "describe", args: []string{"describe", "-n", "finance", "win2k22-app"}, golden: "describe-win2k22-app", code: kubectlvmobs.ExitDegraded},
		{name: "name alone", args: []string{"-n", "lab", "build-runner"}, golden: "describe-build-runner", code: kubectlvmobs.ExitDegraded},
		{name: "describe suspended", args: []string{"describe", "archive-01", "-n", "vms-prod"}, golden: "describe-archive-01", code: kubectlvmobs.ExitOK},
		{name: "summary -A", args: []string{"summary", "-A"}, golden: "summary-all", code: kubectlvmobs.ExitDegraded},
		{name: "fail-on Failed", args: []string{"get", "-A", "--fail-on=Failed"}, golden: "get-all", code: kubectlvmobs.ExitOK},
		{name: "fail-on Degraded", args: []string{"get", "-A", "--fail-on", "degraded"}, golden: "get-all", code: kubectlvmobs.ExitDegraded},
		{name: "fail-on Degraded, unknown only", args: []string{"get", "-n", "finance", "ledger-01", "-o", "name", "--fail-on", "Degraded"}, code: kubectlvmobs.ExitOK,
			check: wantOutput("vmobservation.observability.vmobs.io/ledger-01\n")},
		{name: "unknown only", args: []string{"get", "-n", "finance", "ledger-01", "-o", "name"}, code: kubectlvmobs.ExitUnknown,
			check: wantOutput("vmobservation.observability.vmobs.io/ledger-01\n")},
		{name: "healthy", args: []string{"get", "-n", "web"}, code: kubectlvmobs.ExitOK, check: func(t *testing.T, out string) {
			if !strings.Contains(out, "fedora-web") {
				t.Errorf("no fedora-web in %q", out)
			}
		}},
		{name: "-o json -A", args: []string{"get", "-A", "-o", "json"}, code: kubectlvmobs.ExitDegraded, check: func(t *testing.T, out string) {
			var list struct {
				APIVersion, Kind string
				Items            []v1alpha1.VMObservation
			}
			if err := json.Unmarshal([]byte(out), &list); err != nil {
				t.Fatal(err)
			}
			if list.Kind != "List" || len(list.Items) != len(objs) || list.Items[0].Kind != "VMObservation" || list.Items[0].Status.Verdict == "" {
				t.Errorf("not a List of every VMObservation: %s", out)
			}
			for _, o := range list.Items {
				if len(o.ManagedFields) > 0 {
					t.Errorf("%s has managedFields without --show-managed-fields", o.Name)
				}
			}
		}},
		{name: "-o yaml of one name", args: []string{"get", "-n", "vms-prod", "archive-01", "-o", "yaml"}, code: kubectlvmobs.ExitOK, check: func(t *testing.T, out string) {
			var o v1alpha1.VMObservation
			if err := yaml.UnmarshalStrict([]byte(out), &o); err != nil {
				t.Fatal(err)
			}
			if o.Kind != "VMObservation" || o.Name != "archive-01" || o.Status.Verdict != v1alpha1.VerdictSuspended {
				t.Errorf("not archive-01: %s", out)
			}
		}},
		{name: "-o jsonpath", args: []string{"get", "-n", "finance", "-o", `jsonpath={range .items[*]}{.metadata.name} {.status.reason}{"\n"}{end}`}, code: kubectlvmobs.ExitDegraded,
			check: wantOutput("ledger-01 NodeNotReady\nwin2k22-app MigrationFailed\n")},
		{name: "-l", args: []string{"get", "-A", "-l", "app.kubernetes.io/part-of=lab", "-o", "name"}, code: kubectlvmobs.ExitDegraded,
			check: wantOutput("vmobservation.observability.vmobs.io/scratch-vmi\n")},
		{name: "-l matching nothing", args: []string{"get", "-A", "-l", "app.kubernetes.io/part-of=nothing", "-o", "name"}, code: kubectlvmobs.ExitOK, check: wantOutput("")},
		{name: "--sort-by", args: []string{"get", "-A", "--sort-by", ".status.reason", "-o", "name"}, code: kubectlvmobs.ExitDegraded, check: func(t *testing.T, out string) {
			if !strings.HasPrefix(out, "vmobservation.observability.vmobs.io/scratch-vmi\nvmobservation.observability.vmobs.io/win2k22-app\n") {
				t.Errorf("not sorted by reason:\n%s", out)
			}
		}},
		{name: "summary -o json", args: []string{"summary", "-n", "finance", "-o", "json"}, code: kubectlvmobs.ExitDegraded, check: func(t *testing.T, out string) {
			var s kubectlvmobs.Summary
			if err := json.Unmarshal([]byte(out), &s); err != nil {
				t.Fatal(err)
			}
			if s.Kind != kubectlvmobs.SummaryKind || s.Total != 2 || len(s.ByNamespace) != 1 || s.ByNamespace[0].Name != "finance" || len(s.ByNode) != 2 {
				t.Errorf("not the finance summary: %s", out)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runPlugin(ctx, append(tc.args, kc...)...)
			if code != tc.code {
				t.Errorf("exit %d, want %d; stderr: %s", code, tc.code, errOut)
			}
			if tc.check != nil {
				tc.check(t, out)
				return
			}
			want, err := os.ReadFile(plugintest.Testdata(tc.golden + ".golden"))
			if err != nil {
				t.Fatal(err)
			}
			if got := plugintest.NormalizeAges(out); got != string(want) {
				t.Errorf("kubectl vmobs %s differs from %s.golden:\n--- got\n%s\n--- want\n%s", strings.Join(tc.args, " "), tc.golden, got, want)
			}
		})
	}

	t.Run("missing", func(t *testing.T) {
		code, out, errOut := runPlugin(ctx, append([]string{"describe", "-n", "finance", "no-such-vm"}, kc...)...)
		if want := "error: VMObservation \"no-such-vm\" not found in namespace \"finance\"\n"; code != kubectlvmobs.ExitError || out != "" || errOut != want {
			t.Errorf("got exit %d, stdout %q, stderr %q; want exit %d and stderr %q", code, out, errOut, kubectlvmobs.ExitError, want)
		}
	})

	t.Run("empty namespace", func(t *testing.T) {
		code, out, errOut := runPlugin(ctx, append([]string{"get"}, kc...)...)
		if want := "No VMObservations found in default namespace.\n"; code != 0 || out != "" || errOut != want {
			t.Errorf("got exit %d, stdout %q, stderr %q; want exit 0 and stderr %q", code, out, errOut, want)
		}
	})

	for i, w := range []struct {
		name   string
		args   []string
		render string // what each render contains once
	}{
		{"watch get", []string{"get", "-n", "web", "--watch"}, "NAME "},
		{"watch describe", []string{"describe", "fedora-web", "-n", "web", "-w"}, "├─ control plane"},
	} {
		t.Run(w.name, func(t *testing.T) {
			reason := fmt.Sprintf("WatchTestReason%d", i)
			wctx, wcancel := context.WithCancel(ctx)
			defer wcancel()
			var out, errOut testenv.LockedBuffer
			done := make(chan int, 1)
			go func() {
				done <- kubectlvmobs.Run(wctx, append(w.args, kc...), &out, &errOut)
			}()
			waitFor(t, func() bool { return strings.Contains(out.String(), "fedora-web") }, "the first render")

			var o v1alpha1.VMObservation
			if err := c.Get(ctx, client.ObjectKey{Namespace: "web", Name: "fedora-web"}, &o); err != nil {
				t.Fatal(err)
			}
			o.Status.Verdict, o.Status.Reason = v1alpha1.VerdictFailed, reason
			if err := c.Status().Update(ctx, &o); err != nil {
				t.Fatal(err)
			}
			waitFor(t, func() bool { return strings.Contains(out.String(), reason) }, "a re-render after the status changed")
			wcancel()
			select {
			case code := <-done:
				// The exit status is the health of the last render.
				if code != kubectlvmobs.ExitFailed {
					t.Errorf("--watch exited %d after cancel, want %d; stderr: %s", code, kubectlvmobs.ExitFailed, errOut.String())
				}
			case <-time.After(10 * time.Second):
				t.Fatal("--watch did not return after its context was cancelled")
			}
			if n := strings.Count(out.String(), w.render); n != 2 {
				t.Errorf("--watch rendered %d times, want 2 (initial, one change):\n%s", n, out.String())
			}
		})
	}

	t.Run("lost node", func(t *testing.T) {
		// 14 VMs on a lost node, one healthy elsewhere: the summary gives
		// the lost node one line.
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fleet"}}); err != nil {
			t.Fatal(err)
		}
		for i := range 15 {
			name, node, verdict, reason := fmt.Sprintf("vm-%02d", i), "node-b", v1alpha1.VerdictUnknown, v1alpha1.ReasonNodeNotReady
			if i == 14 {
				node, verdict, reason = "node-a", v1alpha1.VerdictHealthy, v1alpha1.ReasonRunning
			}
			obj := &v1alpha1.VMObservation{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "fleet"}, Spec: v1alpha1.VMObservationSpec{VMName: name}}
			if err := c.Create(ctx, obj); err != nil {
				t.Fatal(err)
			}
			obj.Status = v1alpha1.VMObservationStatus{Verdict: verdict, Reason: reason, VMI: &v1alpha1.VMISummary{Name: name, Phase: "Running", NodeName: node}}
			if err := c.Status().Update(ctx, obj); err != nil {
				t.Fatal(err)
			}
		}
		code, out, errOut := runPlugin(ctx, append([]string{"summary", "-n", "fleet"}, kc...)...)
		if code != kubectlvmobs.ExitUnknown {
			t.Errorf("exit %d, want %d; stderr: %s", code, kubectlvmobs.ExitUnknown, errOut)
		}
		if n := strings.Count(out, "node-b"); n != 1 || !regexp.MustCompile(`(?m)^node-b +14 +Unknown +NodeNotReady$`).MatchString(out) {
			t.Errorf("node-b is not one line of 14 Unknown NodeNotReady VMs:\n%s", out)
		}
	})

	t.Run("kubectl plugin", func(t *testing.T) {
		dir := t.TempDir()
		build := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(dir, "kubectl-vmobs"), "./cmd/kubectl-vmobs")
		build.Dir = testenv.RepoRoot()
		if b, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, b)
		}
		// kubectl (1.26 and later) completes a plugin's arguments with
		// kubectl_complete-<plugin> found on PATH.
		script, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "cmd", "kubectl-vmobs", "kubectl_complete-vmobs"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "kubectl_complete-vmobs"), script, 0o755); err != nil {
			t.Fatal(err)
		}
		// kubectl runs the plugin it finds on PATH (it execs it, so the
		// exit status is the plugin's). The kubeconfig comes from
		// KUBECONFIG, as for most users: kubectl hands a plugin's
		// completion every word after the plugin's name, and the last one
		// is the word to complete, so a trailing --kubeconfig would be it.
		kubectl := func(args ...string) (int, string, string) {
			cmd := exec.CommandContext(ctx, filepath.Join(testenv.AssetsDir(), "kubectl"), args...)
			cmd.Env = append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"), "KUBECONFIG="+kubeconfig)
			var out, errOut bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errOut
			err := cmd.Run()
			var ee *exec.ExitError
			if err != nil && !errors.As(err, &ee) {
				t.Fatalf("kubectl %s: %v", strings.Join(args, " "), err)
			}
			return cmd.ProcessState.ExitCode(), out.String(), errOut.String()
		}

		// The kubeconfig flags reach the plugin through kubectl.
		code, out, errOut := kubectl("vmobs", "get", "-n", "finance", "--kubeconfig", kubeconfig)
		want, err := os.ReadFile(plugintest.Testdata("get-finance.golden"))
		if err != nil {
			t.Fatal(err)
		}
		if got := plugintest.NormalizeAges(out); code != kubectlvmobs.ExitDegraded || got != string(want) {
			t.Errorf("kubectl vmobs get: exit %d (want %d), stderr %s, output differs from get-finance.golden:\n--- got\n%s\n--- want\n%s", code, kubectlvmobs.ExitDegraded, errOut, got, want)
		}

		// kubectl's own table (the server's, from the CRD's printer
		// columns) and the plugin's are the same.
		_, own, _ := kubectl("get", "vmobs", "-n", "vms-prod", "-o", "wide")
		code, out, errOut = kubectl("vmobs", "get", "-n", "vms-prod", "-o", "wide")
		if plugintest.NormalizeAges(own) != plugintest.NormalizeAges(out) || code != kubectlvmobs.ExitOK {
			t.Errorf("kubectl vmobs get -o wide (exit %d, %s) differs from kubectl get vmobs -o wide:\n--- plugin\n%s\n--- kubectl\n%s", code, errOut, out, own)
		}

		// A missing name fails through kubectl too, with the error status.
		code, out, errOut = kubectl("vmobs", "no-such-vm")
		if code != kubectlvmobs.ExitError || out != "" || !strings.Contains(errOut, `"no-such-vm" not found`) {
			t.Errorf("kubectl vmobs no-such-vm: exit %d, stdout %q, stderr %q; want exit %d and a not-found error", code, out, errOut, kubectlvmobs.ExitError)
		}

		code, out, _ = kubectl("vmobs", "--version")
		if code != kubectlvmobs.ExitOK || !strings.HasPrefix(out, "kubectl-vmobs ") {
			t.Errorf("kubectl vmobs --version: exit %d, %q", code, out)
		}

		// drain-check runs through kubectl too; no VMI runs on node-z here
		// (test/drain scores the prediction on a fleet).
		code, out, errOut = kubectl("vmobs", "drain-check", "node-z")
		if code != kubectlvmobs.ExitOK || !strings.HasPrefix(out, "Node node-z: 0 VMs\n") || !strings.Contains(out, "note NodeNotFound") {
			t.Errorf("kubectl vmobs drain-check node-z: exit %d, stdout %q, stderr %q; want exit 0, no VM, the node not found", code, out, errOut)
		}

		code, out, errOut = kubectl("__complete", "vmobs", "describe", "-n", "finance", "")
		if want := "ledger-01\nwin2k22-app\n:4\n"; code != kubectlvmobs.ExitOK || out != want {
			t.Errorf("kubectl __complete vmobs describe -n finance '': exit %d, stdout %q, stderr %q; want %q", code, out, errOut, want)
		}
		code, out, errOut = kubectl("__complete", "vmobs", "get", "-n", "fin")
		if want := "finance\n:4\n"; code != kubectlvmobs.ExitOK || out != want {
			t.Errorf("kubectl __complete vmobs get -n fin: exit %d, stdout %q, stderr %q; want %q", code, out, errOut, want)
		}
	})
}

// waitFor polls cond for up to 30s.
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
