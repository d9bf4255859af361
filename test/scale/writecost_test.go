package scale

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/controllers"
	"github.com/vmobs/vmobs/internal/membership"
	"github.com/vmobs/vmobs/internal/simulator"
	"github.com/vmobs/vmobs/internal/testenv"
	"github.com/vmobs/vmobs/internal/verdict"
)

// BenchmarkStatusWrite is what one status write costs the test API server,
// by how it is made: server-side apply as the controller makes it
// (controllers/apply.go), a JSON merge patch of the status, a JSON merge
// patch of only what changed (one message), and a read and an update of
// the status subresource; with 1 and 4 writers (the
// controller's default workers). Each write changes one layer's message of
// a running VM's status as the engine computes it. It tells whether a
// cheaper way to write would shorten the bursts of verdicts that fall due
// in the same second (docs/scale.md, findings 16 and 25):
//
//	go test -run '^$' -bench StatusWrite -benchtime 400x ./test/scale/
//
// With -scale.profile-dir, each form is also written by 4 writers for 10 s
// while the API server's CPU profile is taken (apiserver-<form>.pb.gz;
// finding 25).
func BenchmarkStatusWrite(b *testing.B) {
	env, c := testenv.StartForTest(b, testenv.Options{})
	ctx := context.Background()
	status := runningStatus(ctx, b, c)
	raw, err := json.Marshal(status)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("a running VM's status: %d bytes of JSON", len(raw))

	const ns, objects = "writes", 64
	if err := simulator.New(c).EnsureNamespace(ctx, ns); err != nil {
		b.Fatal(err)
	}
	uids := make([]types.UID, objects)
	for i := range objects {
		o := &v1alpha1.VMObservation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: objName(i)}, Spec: v1alpha1.VMObservationSpec{VMName: objName(i)}}
		if err := c.Create(ctx, o); err != nil {
			b.Fatal(err)
		}
		uids[i] = o.UID
	}
	var seq atomic.Int64
	next := func() *v1alpha1.VMObservationStatus {
		s := status.DeepCopy()
		s.Layers.Node.Message = "write " + strconv.FormatInt(seq.Add(1), 10)
		return s
	}
	methods := []struct {
		name  string
		write func(i int) error
	}{
		{"apply", func(i int) error {
			body, err := controllers.StatusApplyBody(ns, objName(i), uids[i], next())
			if err != nil {
				return err
			}
			o := &v1alpha1.VMObservation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: objName(i)}}
			return c.Status().Patch(ctx, o, client.RawPatch(types.ApplyPatchType, body),
				client.FieldOwner(membership.FieldOwner), client.ForceOwnership)
		}},
		{"merge-patch", func(i int) error {
			body, err := json.Marshal(map[string]any{"status": next()})
			if err != nil {
				return err
			}
			o := &v1alpha1.VMObservation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: objName(i)}}
			return c.Status().Patch(ctx, o, client.RawPatch(types.MergePatchType, body), client.FieldOwner(membership.FieldOwner))
		}},
		{"merge-patch-diff", func(i int) error {
			msg, err := json.Marshal("write " + strconv.FormatInt(seq.Add(1), 10))
			if err != nil {
				return err
			}
			body := []byte(`{"status":{"layers":{"node":{"message":` + string(msg) + `}}}}`)
			o := &v1alpha1.VMObservation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: objName(i)}}
			return c.Status().Patch(ctx, o, client.RawPatch(types.MergePatchType, body), client.FieldOwner(membership.FieldOwner))
		}},
		{"get-update", func(i int) error {
			o := &v1alpha1.VMObservation{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: objName(i)}, o); err != nil {
				return err
			}
			o.Status = *next()
			return c.Status().Update(ctx, o, client.FieldOwner(membership.FieldOwner))
		}},
	}
	for _, m := range methods {
		for _, writers := range []int{1, 4} {
			b.Run(fmt.Sprintf("%s/writers=%d", m.name, writers), func(b *testing.B) {
				lat := make([]time.Duration, b.N)
				work := make(chan int)
				var wg sync.WaitGroup
				b.ResetTimer()
				start := time.Now()
				for range writers {
					wg.Go(func() {
						for n := range work {
							t := time.Now()
							if err := m.write(n % objects); err != nil {
								b.Error(err)
							}
							lat[n] = time.Since(t)
						}
					})
				}
				for n := range b.N {
					work <- n
				}
				close(work)
				wg.Wait()
				elapsed := time.Since(start)
				b.StopTimer()
				slices.Sort(lat)
				b.ReportMetric(float64(b.N)/elapsed.Seconds(), "writes/s")
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
			})
		}
		if *flagProfiles != "" {
			profileWrites(ctx, b, env, m.write, objects, filepath.Join(*flagProfiles, "apiserver-"+m.name+".pb.gz"))
		}
	}
}

func objName(i int) string { return "vm-" + strconv.Itoa(i) }

// runningStatus is the status the engine computes for a VM the simulator
// booted: a running VM with a connected guest agent and two interfaces,
// read back as the floor reads its objects.
func runningStatus(ctx context.Context, b *testing.B, c client.Client) *v1alpha1.VMObservationStatus {
	sim := simulator.New(c)
	const ns, node, vm = "vms-0", "node-0", "vm"
	if err := sim.EnsureNamespace(ctx, ns); err != nil {
		b.Fatal(err)
	}
	if err := sim.AddNode(ctx, node); err != nil {
		b.Fatal(err)
	}
	if err := sim.CreateVM(ctx, simulator.VMSpec{Namespace: ns, Name: vm, GuestAgent: true, Interfaces: 2}); err != nil {
		b.Fatal(err)
	}
	if err := sim.Boot(ctx, ns, vm, node); err != nil {
		b.Fatal(err)
	}
	var lists controllerLists
	for _, list := range lists.calls(ctx, c) {
		if err := list(); err != nil {
			b.Fatal(err)
		}
	}
	for _, g := range lists.groups() {
		if g.Namespace == ns && g.Name == vm {
			res := verdict.Evaluate(engineInput(&g, verdict.DefaultPolicy(), time.Now()))
			if res.Status.Verdict != v1alpha1.VerdictHealthy || res.Status.Layers == nil {
				b.Fatalf("the booted VM is %s (%s), want Healthy", res.Status.Verdict, res.Status.Reason)
			}
			return &res.Status
		}
	}
	b.Fatalf("no VM %s/%s in the lists", ns, vm)
	return nil
}

// profileWrites writes with 4 writers while the test API server takes a
// CPU profile of itself for 10 s (its /debug/pprof, on by default in
// kube-apiserver), saved to path.
func profileWrites(ctx context.Context, b *testing.B, env *testenv.Env, write func(int) error, objects int, path string) {
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		b.Fatal(err)
	}
	ctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var n atomic.Int64
	for w := range 4 {
		wg.Go(func() {
			for k := w; ctx.Err() == nil; k += 4 {
				if err := write(k % objects); err != nil && ctx.Err() == nil {
					b.Error(err)
					return
				}
				n.Add(1)
			}
		})
	}
	start := time.Now()
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").Param("seconds", "10").Timeout(time.Minute).DoRaw(ctx)
	writes, elapsed := n.Load(), time.Since(start)
	stop()
	wg.Wait()
	if err != nil {
		b.Fatalf("the API server's profile: %v", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		b.Fatal(err)
	}
	b.Logf("%s: %.0f writes/s while profiled", path, float64(writes)/elapsed.Seconds())
}
