package app_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/app"
	"github.com/vmobs/vmobs/internal/simulator"
	"github.com/vmobs/vmobs/internal/testenv"
)

// TestGuestProbeIntervalZero runs the manager on the test control plane,
// with the simulator's virt-api served through the aggregator and a VM
// whose guest agent is connected, twice: with --guest-probe-interval 0 it
// registers none of the probe's metrics and sends not one GET to the
// guest agent subresources while it observes the VM; with an interval it
// does both, so that the first run's silence is the flag's doing.
func TestGuestProbeIntervalZero(t *testing.T) {
	env, k8s := testenv.StartForTest(t, testenv.Options{Aggregation: true})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sim := simulator.New(k8s)
	virtAPI, err := sim.ServeVirtAPI(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	// Closed before the control plane stops (cleanups run last first).
	t.Cleanup(func() {
		if err := virtAPI.Close(); err != nil {
			t.Errorf("closing virt-api: %v", err)
		}
	})
	const ns, vm, node = "probe-off", "vm1", "node-probe-off"
	for _, err := range []error{
		sim.EnsureNamespace(ctx, ns),
		sim.AddNode(ctx, node),
		sim.CreateVM(ctx, simulator.VMSpec{Namespace: ns, Name: vm, GuestAgent: true}),
		sim.Boot(ctx, ns, vm, node),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}

	// run starts a manager with the interval, waits until it has observed
	// the VM (and, with probes on, until a probe went out), watches for
	// another 20 probe intervals' worth of time, stops it and returns its
	// probe metrics and the GETs of guest agent subresources it made.
	const probeEvery = 200 * time.Millisecond
	run := func(interval time.Duration) (metrics []string, gets int) {
		t.Helper()
		counter := testenv.NewRequestCounter()
		opts := app.InProcessOptions()
		reg := prometheus.NewRegistry()
		opts.Registry = reg
		opts.GuestProbe.Interval = interval
		opts.GuestProbe.Timeout = time.Second
		m, err := app.StartInProcess(ctx, counter.Wrap(env.Config), opts)
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := m.Stop(); err != nil {
				t.Errorf("stopping the manager: %v", err)
			}
		}()
		probeGets := func() int {
			n := 0
			for _, sub := range []string{simulator.SubresourceGuestOSInfo, simulator.SubresourceUserList, simulator.SubresourceFilesystemList} {
				n += counter.Get("get virtualmachineinstances/" + sub)
			}
			return n
		}
		err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			o := &v1alpha1.VMObservation{}
			if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: vm}, o); err != nil || o.Status.Guest == nil || !o.Status.Guest.AgentConnected {
				return false, nil
			}
			return interval == 0 || probeGets() > 0, nil
		})
		if err != nil {
			t.Fatalf("interval %s: the manager did not observe the connected agent (or probe it): %v", interval, err)
		}
		time.Sleep(20 * probeEvery)
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if strings.HasPrefix(mf.GetName(), "vmobs_guest_probe") {
				metrics = append(metrics, mf.GetName())
			}
		}
		return metrics, probeGets()
	}

	metrics, gets := run(0)
	if len(metrics) > 0 || gets > 0 {
		t.Errorf("--guest-probe-interval 0: probe metrics %v and %d guest agent GETs, want none", metrics, gets)
	}
	metrics, gets = run(probeEvery)
	t.Logf("--guest-probe-interval %s: %d probe metrics, %d guest agent GETs", probeEvery, len(metrics), gets)
	if len(metrics) == 0 || gets < 3 {
		t.Errorf("--guest-probe-interval %s: probe metrics %v and %d guest agent GETs, want them registered and a probe's three GETs at least", probeEvery, metrics, gets)
	}
}
