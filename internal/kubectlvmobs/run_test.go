package kubectlvmobs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/scheme"
	"github.com/vmobs/vmobs/internal/testenv"
)

// shiftTimes moves every timestamp of a status by d, so fixtures computed at
// fixtureNow read the same ages when rendered d later.
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

// runPlugin runs the plugin in-process and returns its exit status, stdout
// and stderr.
func runPlugin(ctx context.Context, args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := Run(ctx, args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestPluginAgainstAPIServer creates the fixtures on a real kube-apiserver
// and runs the plugin against it: in-process for get, get -A, describe, the
// describe shorthand, a missing name and --watch, and once as a real
// kubectl plugin found on PATH.
func TestPluginAgainstAPIServer(t *testing.T) {
	if err := testenv.CheckAssets(); err != nil {
		t.Fatal(err)
	}
	env, err := testenv.Start(testenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Logf("stopping the control plane: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	c, err := client.New(env.Config, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	objs := loadFixtures(t)
	shift := time.Now().Truncate(time.Second).Sub(fixtureNow)
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
			ObjectMeta: metav1.ObjectMeta{Name: o.Name, Namespace: o.Namespace},
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

	for _, tc := range []struct {
		name   string
		args   []string
		golden string
	}{
		{"get", []string{"get", "-n", "finance"}, "get-finance"},
		{"bare", []string{"--namespace=finance"}, "get-finance"},
		{"get -A", []string{"get", "-A"}, "get-all"},
		{"describe", []string{"describe", "-n", "finance", "win2k22-app"}, "describe-win2k22-app"},
		{"name alone", []string{"-n", "lab", "build-runner"}, "describe-build-runner"},
		{"describe suspended", []string{"describe", "archive-01", "-n", "vms-prod"}, "describe-archive-01"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runPlugin(ctx, append(tc.args, kc...)...)
			if code != 0 {
				t.Fatalf("exit %d, stderr: %s", code, errOut)
			}
			want, err := os.ReadFile(filepath.Join("testdata", tc.golden+".golden"))
			if err != nil {
				t.Fatal(err)
			}
			if got := normalizeAges(out); got != string(want) {
				t.Errorf("kubectl vmobs %s differs from %s.golden:\n--- got\n%s\n--- want\n%s", strings.Join(tc.args, " "), tc.golden, got, want)
			}
		})
	}

	t.Run("missing", func(t *testing.T) {
		code, out, errOut := runPlugin(ctx, append([]string{"describe", "-n", "finance", "no-such-vm"}, kc...)...)
		if want := "error: VMObservation \"no-such-vm\" not found in namespace \"finance\"\n"; code != 1 || out != "" || errOut != want {
			t.Errorf("got exit %d, stdout %q, stderr %q; want exit 1 and stderr %q", code, out, errOut, want)
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
				done <- Run(wctx, append(w.args, kc...), &out, &errOut)
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
				if code != 0 {
					t.Errorf("--watch exited %d after cancel, stderr: %s", code, errOut.String())
				}
			case <-time.After(10 * time.Second):
				t.Fatal("--watch did not return after its context was cancelled")
			}
			if n := strings.Count(out.String(), w.render); n != 2 {
				t.Errorf("--watch rendered %d times, want 2 (initial, one change):\n%s", n, out.String())
			}
		})
	}

	t.Run("kubectl plugin", func(t *testing.T) {
		dir := t.TempDir()
		build := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(dir, "kubectl-vmobs"), "./cmd/kubectl-vmobs")
		build.Dir = testenv.RepoRoot()
		if b, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, b)
		}
		kubectl := exec.CommandContext(ctx, filepath.Join(testenv.AssetsDir(), "kubectl"), "vmobs", "get", "-n", "finance", "--kubeconfig", kubeconfig)
		kubectl.Env = append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
		var out, errOut bytes.Buffer
		kubectl.Stdout, kubectl.Stderr = &out, &errOut
		if err := kubectl.Run(); err != nil {
			t.Fatalf("kubectl vmobs: %v\n%s", err, errOut.String())
		}
		want, err := os.ReadFile(filepath.Join("testdata", "get-finance.golden"))
		if err != nil {
			t.Fatal(err)
		}
		if got := normalizeAges(out.String()); got != string(want) {
			t.Errorf("kubectl vmobs get differs from get-finance.golden:\n--- got\n%s\n--- want\n%s", got, want)
		}

		// A missing name fails through kubectl too.
		kubectl = exec.CommandContext(ctx, filepath.Join(testenv.AssetsDir(), "kubectl"), "vmobs", "no-such-vm", "--kubeconfig", kubeconfig)
		kubectl.Env = append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
		b, err := kubectl.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(b), `"no-such-vm" not found`) {
			t.Errorf("kubectl vmobs no-such-vm: %v, output %q; want exit 1 and a not-found error", err, b)
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
