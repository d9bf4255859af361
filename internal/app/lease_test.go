package app

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Two shards left at the default Lease must not share one: the second
// would stand by forever and its VMs go unobserved.
func TestLeaseName(t *testing.T) {
	shard := func(s string) Options {
		o := Defaults()
		sel, err := labels.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		o.VMSelector = sel
		return o
	}
	a, b := shard("observability.vmobs.io/shard=a"), shard("observability.vmobs.io/shard=b")
	if got := Defaults().LeaseName(); got != DefaultLeaderElectionID {
		t.Errorf("unsharded: Lease %q, want %q", got, DefaultLeaderElectionID)
	}
	if a.LeaseName() == b.LeaseName() || a.LeaseName() == DefaultLeaderElectionID {
		t.Errorf("shards a and b share a Lease: %q, %q", a.LeaseName(), b.LeaseName())
	}
	for _, o := range []Options{a, b} {
		if errs := validation.IsDNS1123Subdomain(o.LeaseName()); len(errs) > 0 || !strings.HasPrefix(o.LeaseName(), "vmobs-shard-") {
			t.Errorf("Lease %q: %v", o.LeaseName(), errs)
		}
	}
	// The same selector written another way is the same shard.
	for _, same := range []string{"observability.vmobs.io/shard==a", "observability.vmobs.io/shard in (a)"} {
		if c := shard(same); c.LeaseName() != a.LeaseName() {
			t.Errorf("%s: one selector, two Leases: %q, %q", same, c.LeaseName(), a.LeaseName())
		}
	}
	a.LeaderElectionID = "vmobs-shard-a"
	if got := a.LeaseName(); got != "vmobs-shard-a" {
		t.Errorf("an explicit --leader-election-id: Lease %q, want it kept", got)
	}
}
