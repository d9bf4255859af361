package app_test

import (
	"context"
	"os"
	"runtime/debug"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/internal/app"
	"github.com/vmobs/vmobs/internal/testenv"
)

// TestStartupGCPercent builds the manager on the test control plane: the
// collector runs at the start-up's percent from then on, and at the
// process's own again once the manager's caches have synced, on a replica
// that is not the leader too (leader election on, a Lease it never gets
// in time: the sync is every replica's).
func TestStartupGCPercent(t *testing.T) {
	env, admin := testenv.StartForTest(t, testenv.Options{})
	t.Setenv("GOGC", "") // restored after the test
	if err := os.Unsetenv("GOGC"); err != nil {
		t.Fatal(err)
	}
	defer debug.SetGCPercent(debug.SetGCPercent(140))
	gcPercent := func() int {
		p := debug.SetGCPercent(100)
		debug.SetGCPercent(p)
		return p
	}

	for _, c := range []struct {
		name   string
		leader bool
	}{{"leader", true}, {"standby", false}} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			opts := app.InProcessOptions()
			opts.StartupGCPercent = 30
			if !c.leader {
				// Another holder keeps the Lease for longer than the test.
				opts.LeaderElection, opts.LeaderElectionNamespace = true, "default"
				opts.LeaderElectionID = "vmobs-startupgc-test"
				if err := holdLease(ctx, admin, opts.LeaderElectionID); err != nil {
					t.Fatal(err)
				}
			}
			mgr, err := app.NewManager(env.Config, opts)
			if err != nil {
				t.Fatal(err)
			}
			if got := gcPercent(); got != 30 {
				t.Fatalf("after NewManager: GC percent %d, want 30", got)
			}
			done := make(chan error, 1)
			go func() { done <- mgr.Start(ctx) }()
			if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
				return gcPercent() == 140, nil
			}); err != nil {
				t.Fatalf("the caches synced: GC percent %d, want 140 back", gcPercent())
			}
			if !mgr.GetCache().WaitForCacheSync(ctx) {
				t.Fatal("the caches did not sync")
			}
			cancel()
			if err := <-done; err != nil {
				t.Errorf("the manager: %v", err)
			}
		})
	}
}

// holdLease makes another holder the leader of name in default for an hour.
func holdLease(ctx context.Context, c client.Client, name string) error {
	now := metav1.NewMicroTime(time.Now())
	return c.Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity: ptr.To("another-replica"), LeaseDurationSeconds: ptr.To[int32](3600),
			AcquireTime: &now, RenewTime: &now,
		},
	})
}
