package controllers

import (
	"maps"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

func TestShardCopyLabels(t *testing.T) {
	sel, err := labels.Parse("observability.vmobs.io/shard in (a, a2), tier!=gold")
	if err != nil {
		t.Fatal(err)
	}
	s := newShard(sel, 0)
	if s.grace != DefaultHandoverGrace {
		t.Fatalf("grace %s, want the default %s", s.grace, DefaultHandoverGrace)
	}
	for _, tc := range []struct {
		name          string
		dst, src      map[string]string
		want          map[string]string
		changed, ours bool
	}{
		{"a new VMObservation takes the VM's values", map[string]string{"app.kubernetes.io/managed-by": "vmobs"},
			map[string]string{"observability.vmobs.io/shard": "a", "tier": "silver", "team": "db"},
			map[string]string{"app.kubernetes.io/managed-by": "vmobs", "observability.vmobs.io/shard": "a", "tier": "silver"}, true, true},
		{"released to the VM's new shard", map[string]string{"observability.vmobs.io/shard": "a", "x": "y"},
			map[string]string{"observability.vmobs.io/shard": "b"},
			map[string]string{"observability.vmobs.io/shard": "b", "x": "y"}, true, false},
		{"a key the VM lost goes", map[string]string{"observability.vmobs.io/shard": "a", "tier": "gold"},
			map[string]string{"observability.vmobs.io/shard": "a"},
			map[string]string{"observability.vmobs.io/shard": "a"}, true, true},
		{"already the VM's", map[string]string{"observability.vmobs.io/shard": "a2"},
			map[string]string{"observability.vmobs.io/shard": "a2", "other": "1"},
			map[string]string{"observability.vmobs.io/shard": "a2"}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := maps.Clone(tc.dst)
			if got := s.copyLabels(dst, tc.src); got != tc.changed {
				t.Errorf("changed = %v, want %v", got, tc.changed)
			}
			if !maps.Equal(dst, tc.want) {
				t.Errorf("labels %v, want %v", dst, tc.want)
			}
			// The copy matches the selector exactly when the VM does.
			if got := sel.Matches(labels.Set(dst)); got != tc.ours || got != sel.Matches(labels.Set(tc.src)) {
				t.Errorf("copy matches %v, VM matches %v, want %v", got, sel.Matches(labels.Set(tc.src)), tc.ours)
			}
		})
	}
}

func TestShardClaimedElsewhere(t *testing.T) {
	sel, _ := labels.Parse("observability.vmobs.io/shard=b")
	s := newShard(sel, time.Second)
	for _, tc := range []struct {
		labels map[string]string
		want   bool
	}{
		{map[string]string{"observability.vmobs.io/shard": "a"}, true},
		{map[string]string{"observability.vmobs.io/shard": ""}, true},
		{map[string]string{"app.kubernetes.io/managed-by": "vmobs"}, false},
		{nil, false},
	} {
		if got := s.claimedElsewhere(tc.labels); got != tc.want {
			t.Errorf("claimedElsewhere(%v) = %v, want %v", tc.labels, got, tc.want)
		}
	}
	if newShard(nil, 0) != nil || newShard(labels.Everything(), 0) != nil {
		t.Errorf("an empty selector is unsharded")
	}
}

func TestShardWaitFor(t *testing.T) {
	sel, _ := labels.Parse("shard=b")
	s := newShard(sel, 10*time.Second)
	key := types.NamespacedName{Namespace: "ns", Name: "vm1"}
	steps := []struct {
		uid  types.UID
		at   time.Duration
		want time.Duration
	}{
		{"u1", 0, 10 * time.Second},
		{"u1", 4 * time.Second, 6 * time.Second},
		{"u1", 11 * time.Second, 0},
		// A recreated VMObservation starts its own wait.
		{"u2", 12 * time.Second, 10 * time.Second},
	}
	for i, st := range steps {
		if got := s.waitFor(key, st.uid, t0.Add(st.at)); got != st.want {
			t.Errorf("step %d: wait %s, want %s", i, got, st.want)
		}
	}
	s.stopWaiting(key)
	if got := s.waitFor(key, "u2", t0.Add(time.Hour)); got != 10*time.Second {
		t.Errorf("after stopWaiting: wait %s, want a fresh %s", got, 10*time.Second)
	}
}
