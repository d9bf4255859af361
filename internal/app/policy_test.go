package app

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"
)

// TestEnginePolicy checks the one derivation of the engine's policy: what
// other options decide is set there, and the thresholds pass as given.
func TestEnginePolicy(t *testing.T) {
	opts := Defaults()
	opts.Policy.HeartbeatTimeout = 7 * time.Minute
	p := enginePolicy(opts)
	if p.HeartbeatTimeout != 7*time.Minute {
		t.Errorf("HeartbeatTimeout = %v, want the option's 7m", p.HeartbeatTimeout)
	}
	if p.RenewingEvidence != (opts.EvidenceRefreshInterval > 0) {
		t.Errorf("RenewingEvidence = %v with an evidence refresh of %v", p.RenewingEvidence, opts.EvidenceRefreshInterval)
	}

	opts.EvidenceRefreshInterval = 5 * time.Minute
	if !enginePolicy(opts).RenewingEvidence {
		t.Error("an evidence refresh does not make the evidence renewing")
	}
	opts.EvidenceRefreshInterval = 0
	if enginePolicy(opts).RenewingEvidence {
		t.Error("renewing evidence without a refresh: the status would go stale")
	}

	opts.Policy.DomainStatsInterval = time.Minute
	opts.DomainStats.Interval = 15 * time.Second
	if got := enginePolicy(opts).DomainStatsInterval; got != time.Minute {
		t.Errorf("without --prometheus-url DomainStatsInterval = %v, want the policy's 1m", got)
	}
	opts.PrometheusURL = "http://prometheus:9090"
	if got := enginePolicy(opts).DomainStatsInterval; got != 15*time.Second {
		t.Errorf("DomainStatsInterval = %v, want the source's 15s", got)
	}
	opts.DomainStats.Interval = 0
	if got, want := enginePolicy(opts).DomainStatsInterval, opts.DomainStats.WithDefaults().Interval; got != want {
		t.Errorf("DomainStatsInterval = %v, want the source's default %v", got, want)
	}
}

// TestObservesEveryVM: only an instance that sees every VM keeps the
// NodeObservations, which count every VM of a node.
func TestObservesEveryVM(t *testing.T) {
	sel, err := labels.Parse("shard=a")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		opts Options
		want bool
	}{
		{"the defaults", Defaults(), true},
		{"an empty selector", Options{VMSelector: labels.Everything()}, true},
		{"a namespace", Options{Namespaces: []string{"vms"}}, false},
		{"a shard", Options{VMSelector: sel}, false},
	} {
		if got := c.opts.observesEveryVM(); got != c.want {
			t.Errorf("%s: observesEveryVM = %v, want %v", c.name, got, c.want)
		}
	}
}
