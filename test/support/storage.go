package support

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/internal/simulator"
	"github.com/vmobs/vmobs/internal/testenv"
)

// StorageWorld is a control plane with kube-controller-manager's storage
// controllers, a client, and the simulator with its StorageClasses and
// CSI driver in place.
type StorageWorld struct {
	Env *testenv.Env
	K8s client.Client
	Sim *simulator.Simulator
}

// RunWithStorage is a TestMain for the packages that play storage on a
// real control plane: it starts one (kube-controller-manager included),
// sets the simulator's storage up, hands the world to ready, runs the
// tests and stops it; on a failure it prints the tail of
// kube-controller-manager's log, where the PV binder and the attach-detach
// controller say what they did.
func RunWithStorage(m *testing.M, opts testenv.Options, ready func(StorageWorld)) {
	opts.ControllerManager = true
	env, err := testenv.Start(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	world := StorageWorld{Env: env}
	if world.K8s, err = env.Client(); err == nil {
		world.Sim = simulator.New(world.K8s)
		err = world.Sim.EnsureStorage(context.Background())
	}
	code := 1
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
	} else {
		ready(world)
		code = m.Run()
	}
	if code != 0 {
		fmt.Fprintf(os.Stderr, "kube-controller-manager's log:\n%s\n", lastLines(env.ControllerManagerLog(), 60))
	}
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping the control plane:", err)
	}
	os.Exit(code)
}

func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
