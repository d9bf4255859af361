package integrations

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/testenv"
	"github.com/vmobs/vmobs/test/support"
)

// ksmSeries is one sample of the text exposition format.
type ksmSeries struct {
	name   string
	labels map[string]string
	value  float64
}

// parseExposition reads Prometheus' text format, enough for
// kube-state-metrics' output: no timestamps, quoted label values with
// \\, \" and \n escapes.
func parseExposition(body string) ([]ksmSeries, error) {
	var out []ksmSeries
	for line := range strings.SplitSeq(body, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		s := ksmSeries{labels: map[string]string{}}
		i := strings.IndexAny(line, "{ ")
		if i < 0 {
			return nil, fmt.Errorf("no value: %q", line)
		}
		s.name = line[:i]
		rest := line[i:]
		if rest[0] == '{' {
			rest = rest[1:]
			for {
				rest = strings.TrimLeft(rest, ",")
				if strings.HasPrefix(rest, "}") {
					rest = rest[1:]
					break
				}
				eq := strings.Index(rest, `="`)
				if eq < 0 {
					return nil, fmt.Errorf("bad labels: %q", line)
				}
				key := rest[:eq]
				rest = rest[eq+2:]
				var val strings.Builder
				for {
					if rest == "" {
						return nil, fmt.Errorf("unterminated label value: %q", line)
					}
					c := rest[0]
					rest = rest[1:]
					if c == '"' {
						break
					}
					if c == '\\' && rest != "" {
						c = rest[0]
						rest = rest[1:]
						if c == 'n' {
							c = '\n'
						}
					}
					val.WriteByte(c)
				}
				s.labels[key] = val.String()
			}
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return nil, fmt.Errorf("no value: %q", line)
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", line, err)
		}
		s.value = v
		out = append(out, s)
	}
	return out, nil
}

// seriesKey names a series by metric name and its labels other than the
// object's (namespace, name and kube-state-metrics' customresource_*).
func seriesKey(name string, labels map[string]string) string {
	var parts []string
	for k, v := range labels {
		switch k {
		case "namespace", "name", "customresource_group", "customresource_version", "customresource_kind":
			continue
		}
		parts = append(parts, k+"="+v)
	}
	slices.Sort(parts)
	return name + "{" + strings.Join(parts, ",") + "}"
}

// expectedKSMSeries is what vmobservation-crs.yaml must make of one
// VMObservation as the API server returns it, keyed by seriesKey.
func expectedKSMSeries(o *v1alpha1.VMObservation) map[string]float64 {
	const p = "kube_vmobservation_"
	want := map[string]float64{}
	b := func(ok bool) float64 {
		if ok {
			return 1
		}
		return 0
	}
	want[seriesKey(p+"generation", nil)] = float64(o.Generation)
	st := o.Status
	// restarts reads nil as 0 (nilIsZero): every VMObservation has it.
	want[seriesKey(p+"restarts", nil)] = 0
	if vm := st.VM; vm != nil {
		want[seriesKey(p+"restarts", nil)] = float64(vm.Restarts)
		if r := vm.LastRestart; r != nil {
			want[seriesKey(p+"last_restart_timestamp_seconds", nil)] = float64(r.Time.Unix())
		}
	}
	if st.ObservedGeneration != 0 {
		want[seriesKey(p+"observed_generation", nil)] = float64(st.ObservedGeneration)
	}
	if st.Verdict != "" {
		for _, v := range verdictStrings() {
			want[seriesKey(p+"verdict", map[string]string{"verdict": v})] = b(string(st.Verdict) == v)
		}
		want[seriesKey(p+"info", map[string]string{"verdict": string(st.Verdict), "reason": st.Reason})] = 1
	}
	if st.Layers != nil {
		for _, l := range []struct {
			metric, key string
			s           v1alpha1.LayerStatus
		}{
			{"control_plane_verdict", "controlPlane", st.Layers.ControlPlane},
			{"node_verdict", "node", st.Layers.Node},
			{"guest_verdict", "guest", st.Layers.Guest},
			{"storage_verdict", "storage", st.Layers.Storage},
		} {
			if l.s.Verdict == "" {
				// A status written before the storage layer existed.
				continue
			}
			for _, v := range verdictStrings() {
				want[seriesKey(p+l.metric, map[string]string{"layer": l.key, "verdict": v})] = b(string(l.s.Verdict) == v)
			}
			for metric, ts := range map[string]*metav1.Time{
				"layer_last_transition_timestamp_seconds": l.s.LastTransitionTime,
				"layer_evidence_timestamp_seconds":        l.s.EvidenceTime,
				"layer_stale_timestamp_seconds":           l.s.StaleAt,
			} {
				if ts != nil {
					want[seriesKey(p+metric, map[string]string{"layer": l.key})] = float64(ts.Unix())
				}
			}
		}
	}
	for _, c := range st.Conditions {
		want[seriesKey(p+"condition", map[string]string{"type": c.Type})] = b(c.Status == metav1.ConditionTrue)
	}
	return want
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestKSMRealBinary runs the real kube-state-metrics (`make
// kube-state-metrics`, the version pinned in hack/kube-state-metrics/go.mod)
// with config/kube-state-metrics/vmobservation-crs.yaml against a real API
// server, as a user bound only to config/kube-state-metrics/clusterrole.yaml,
// and checks every series it exports for a few VMObservations against what
// the objects say.
func TestKSMRealBinary(t *testing.T) {
	ksm := support.BuiltTool(t, "kube-state-metrics", "KUBE_STATE_METRICS")
	root := support.RepoRoot(t)
	env, admin := testenv.StartForTest(t, testenv.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)

	// kube-state-metrics' identity: its ServiceAccount, bound to the
	// ClusterRole we ship and nothing else.
	raw, err := os.ReadFile(filepath.Join(root, "config", "kube-state-metrics", "clusterrole.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.UnmarshalStrict(raw, role); err != nil {
		t.Fatal(err)
	}
	support.MustCreate(ctx, t, admin, role)
	ksmUser := envtest.User{
		Name:   "system:serviceaccount:monitoring:kube-state-metrics",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:monitoring", "system:authenticated"},
	}
	support.MustCreate(ctx, t, admin, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-state-metrics-vmobs"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: ksmUser.Name}},
	})
	user, err := env.AddUser(ksmUser, env.Config)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, kc, 0o600); err != nil {
		t.Fatal(err)
	}

	// VMObservations from the engine's scenarios, one per verdict, plus one
	// whose spec changed since its status was written and one without a
	// status, each under its scenario's name.
	if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: support.VMNamespace}}); err != nil {
		t.Fatal(err)
	}
	pick := []string{
		"healthy", "healthy-stopped-as-declared", "progressing-migrating", "degraded-stalled-migration-stuck",
		"failed-vmi-failed", "unknown-node-agent-stale", "progressing-stale-generation", "progressing-no-status",
	}
	var objs []*v1alpha1.VMObservation
	for _, sc := range scenarios(t) {
		if !slices.Contains(pick, sc.name) {
			continue
		}
		o := sc.obs.DeepCopy()
		o.Name, o.Spec.VMName = sc.name, sc.name
		o.UID, o.ResourceVersion, o.CreationTimestamp = "", "", metav1.Time{}
		o.OwnerReferences = nil
		status := o.Status
		support.MustCreate(ctx, t, admin, o)
		if sc.name == "progressing-stale-generation" {
			// A spec change the status has not caught up with.
			o.Spec.Policy = &v1alpha1.PolicyOverrides{StalledAfter: &metav1.Duration{Duration: 30 * time.Minute}}
			if err := admin.Update(ctx, o); err != nil {
				t.Fatal(err)
			}
			status.ObservedGeneration = o.Generation - 1
		} else if sc.obs.Status.ObservedGeneration != 0 {
			status.ObservedGeneration = o.Generation
		}
		if sc.obs.Status.Verdict != "" {
			o.Status = status
			if err := admin.Status().Update(ctx, o); err != nil {
				t.Fatalf("%s: status update: %v", sc.name, err)
			}
		}
		// What the API server stores is what kube-state-metrics reads.
		got := &v1alpha1.VMObservation{}
		if err := admin.Get(ctx, client.ObjectKeyFromObject(o), got); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, got)
	}
	if len(objs) != len(pick) {
		t.Fatalf("found %d of the %d scenarios %v", len(objs), len(pick), pick)
	}

	port, telemetry := freePort(t), freePort(t)
	args := []string{
		"--kubeconfig", kubeconfig,
		"--custom-resource-state-only",
		"--custom-resource-state-config-file", filepath.Join(root, "config", "kube-state-metrics", "vmobservation-crs.yaml"),
		"--host", "127.0.0.1", "--port", strconv.Itoa(port),
		"--telemetry-host", "127.0.0.1", "--telemetry-port", strconv.Itoa(telemetry),
	}
	cmd := exec.Command(ksm, args...)
	var logs testenv.LockedBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		if err := <-exited; t.Failed() {
			t.Logf("kube-state-metrics output (%v):\n%s", err, logs.String())
		}
	})
	t.Logf("kube-state-metrics %s", strings.Join(args, " "))

	// kube-state-metrics serves /metrics before its custom resource
	// informers have synced: wait until every VMObservation has its
	// generation series.
	url := fmt.Sprintf("http://127.0.0.1:%d/metrics", port)
	var series []ksmSeries
	ksmStart := time.Now()
	for {
		series = nil
		if resp, err := http.Get(url); err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				if series, err = parseExposition(string(body)); err != nil {
					t.Fatalf("parsing /metrics: %v", err)
				}
			}
		}
		n := 0
		for _, s := range series {
			if s.name == "kube_vmobservation_generation" {
				n++
			}
		}
		if n == len(objs) {
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("kube-state-metrics exited: %v\n%s", err, logs.String())
		case <-ctx.Done():
			t.Fatalf("no kube_vmobservation_generation series for all %d VMObservations after %s (%d seen)",
				len(objs), time.Since(ksmStart).Round(time.Second), n)
		case <-time.After(200 * time.Millisecond):
		}
	}
	t.Logf("kube-state-metrics served the VMObservations %s after start, %d series", time.Since(ksmStart).Round(time.Millisecond), len(series))

	byObject := map[string]map[string]float64{}
	for _, s := range series {
		if !strings.HasPrefix(s.name, "kube_vmobservation_") {
			continue
		}
		if s.labels["customresource_group"] != v1alpha1.GroupVersion.Group ||
			s.labels["customresource_version"] != v1alpha1.GroupVersion.Version ||
			s.labels["customresource_kind"] != "VMObservation" || s.labels["namespace"] != support.VMNamespace {
			t.Errorf("series %s%v: want namespace %s and the VMObservation's group, version and kind", s.name, s.labels, support.VMNamespace)
		}
		name := s.labels["name"]
		if byObject[name] == nil {
			byObject[name] = map[string]float64{}
		}
		k := seriesKey(s.name, s.labels)
		if _, dup := byObject[name][k]; dup {
			t.Errorf("%s: series %s twice", name, k)
		}
		byObject[name][k] = s.value
	}
	for _, o := range objs {
		t.Run(o.Name, func(t *testing.T) {
			want, got := expectedKSMSeries(o), byObject[o.Name]
			for _, k := range slices.Sorted(func(yield func(string) bool) {
				for k := range want {
					if !yield(k) {
						return
					}
				}
			}) {
				g, ok := got[k]
				switch {
				case !ok:
					t.Errorf("missing %s (want %v)", k, want[k])
				case g != want[k]:
					t.Errorf("%s = %v, want %v", k, g, want[k])
				}
			}
			for k, v := range got {
				if _, ok := want[k]; !ok {
					t.Errorf("unexpected %s = %v", k, v)
				}
			}
			if o.Status.Verdict != "" && o.Status.Layers != nil {
				t.Logf("%d series: verdict %s/%s, layers %s/%s/%s, generation %d, observedGeneration %d",
					len(got), o.Status.Verdict, o.Status.Reason, o.Status.Layers.ControlPlane.Verdict,
					o.Status.Layers.Node.Verdict, o.Status.Layers.Guest.Verdict, o.Generation, o.Status.ObservedGeneration)
			} else {
				t.Logf("%d series (no status)", len(got))
			}
		})
	}
	for name := range byObject {
		if !slices.ContainsFunc(objs, func(o *v1alpha1.VMObservation) bool { return o.Name == name }) {
			t.Errorf("series for an unknown VMObservation %q", name)
		}
	}
}
