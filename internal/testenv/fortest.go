package testenv

import (
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// StartForTest starts a control plane of the test's own, stopped when the
// test ends, and returns it with an admin client. It fails the test when
// the control plane cannot start (its binaries missing included): a
// skipped test would leave what it checks untested without anyone noticing.
func StartForTest(t testing.TB, opts Options) (*Env, client.WithWatch) {
	t.Helper()
	start := time.Now()
	env, err := Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stopping the control plane: %v", err)
		}
	})
	t.Logf("control plane up in %s", time.Since(start).Round(time.Millisecond))
	admin, err := env.Client()
	if err != nil {
		t.Fatal(err)
	}
	return env, admin
}
