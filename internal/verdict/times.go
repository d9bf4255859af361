package verdict

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// clockSkew is how far ahead of now a timestamp may be before it counts
	// as in the future: virt-handler stamps with its node's clock.
	clockSkew = time.Minute
	// launcherCleanupGrace is how long the source launcher may outlive a
	// finished migration before two live launchers count as a problem.
	launcherCleanupGrace = time.Minute
)

// trunc is t in UTC at second precision, as the status stores times.
func trunc(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	// Go keeps nanoseconds in [0, 1e9), so time.Unix(t.Unix(), 0) rounds
	// toward the past exactly like Truncate(time.Second), without its
	// division.
	if t.Nanosecond() == 0 && t.Location() == time.UTC {
		return t.Round(0)
	}
	return time.Unix(t.Unix(), 0).UTC()
}

func mt(t metav1.Time) time.Time { return trunc(t.Time) }

func mtp(t *metav1.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return trunc(t.Time)
}

// ceilSec rounds a deadline up to the next whole second, so that a verdict
// that flips at the deadline (compared with the truncated now) and the
// returned requeue delay agree.
func ceilSec(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	c := t.Truncate(time.Second)
	if c.Before(t) {
		c = c.Add(time.Second)
	}
	return c.UTC()
}

// crossed says whether the deadline t has passed at now.
func crossed(now, t time.Time) bool {
	return !t.IsZero() && !now.Before(t)
}

// earliest returns the earliest non-zero time.
func earliest(ts ...time.Time) time.Time {
	var e time.Time
	for _, t := range ts {
		if !t.IsZero() && (e.IsZero() || t.Before(e)) {
			e = t
		}
	}
	return e
}

func orUnknown(s string) string {
	if s == "" {
		return "an unknown node"
	}
	return s
}

func rfc(t time.Time) string {
	if t.IsZero() {
		return "an unknown time"
	}
	return t.Format(time.RFC3339)
}
