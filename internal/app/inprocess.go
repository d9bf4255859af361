package app

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/vmobs/vmobs/internal/cachestore"
)

// InProcessOptions are Defaults with nothing that listens or registers
// process-wide: the metrics and probe servers are off, the metrics go to a
// registry of their own and controller names may repeat. A manager built
// with them can share its process with other managers: `vmobs demo`, the
// test suites and the scale harness run it so. The guest probes are off:
// a test control plane serves no subresources.kubevirt.io unless the run
// registers one, and without it the probes would turn every VM's guest
// layer to a GuestProbeUnavailable note at a time of their own; a run that
// serves them sets GuestProbe.Interval.
func InProcessOptions() Options {
	o := Defaults()
	o.MetricsAddr, o.ProbeAddr, o.SecureMetrics = "0", "0", false
	o.SkipNameValidation = true
	o.Registry = prometheus.NewRegistry()
	o.GuestProbe.Interval = 0
	return o
}

// InProcess is a manager running in a goroutine of this process.
type InProcess struct {
	ctrl.Manager
	// Storage are the manager's storage stores, nil without storage
	// (the scale harness measures them).
	Storage *cachestore.StorageStores
	cancel  context.CancelFunc
	done    chan error
}

// StartInProcess builds the manager and runs it until ctx ends or Cancel
// or Stop is called.
func StartInProcess(ctx context.Context, cfg *rest.Config, opts Options) (*InProcess, error) {
	var parts managerParts
	mgr, err := newManager(cfg, opts, &parts)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	m := &InProcess{Manager: mgr, Storage: parts.Storage, cancel: cancel, done: make(chan error, 1)}
	go func() { m.done <- mgr.Start(ctx) }()
	return m, nil
}

// Cancel asks the manager to stop and returns at once.
func (m *InProcess) Cancel() { m.cancel() }

// Done receives what the manager's Start returned, once it has stopped.
func (m *InProcess) Done() <-chan error { return m.done }

// Stop cancels the manager and waits, a minute at most, for it to return.
func (m *InProcess) Stop() error {
	m.cancel()
	select {
	case err := <-m.done:
		return err
	case <-time.After(time.Minute):
		return errors.New("the manager did not stop within a minute")
	}
}
