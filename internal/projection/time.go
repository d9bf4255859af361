package projection

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Time is a timestamp in seconds since the zero time.Time, so that the
// zero Time is the zero time.Time. The API server writes times to the
// second (RFC 3339), and the engine truncates them to seconds anyway. 8
// bytes instead of the 24 of a time.Time, and no allocation for a pointer.
type Time int64

// zeroUnix is time.Time{}.Unix().
const zeroUnix = -62135596800

// setZero marks a non-nil pointer to the zero time (see timePtr).
const setZero Time = -1

func timeOf(t time.Time) Time {
	if t.IsZero() {
		return 0
	}
	return Time(t.Unix() - zeroUnix)
}

func metaTime(t metav1.Time) Time { return timeOf(t.Time) }

// timePtr keeps nil apart from a pointer to the zero time.
func timePtr(t *metav1.Time) Time {
	switch {
	case t == nil:
		return 0
	case t.IsZero():
		return setZero
	}
	return timeOf(t.Time)
}

// Time is t as a time.Time in the local zone, as the API machinery decodes
// it.
func (t Time) Time() time.Time {
	if t == 0 || t == setZero {
		return time.Time{}
	}
	return time.Unix(int64(t)+zeroUnix, 0)
}

// Meta is t as a metav1.Time.
func (t Time) Meta() metav1.Time { return metav1.Time{Time: t.Time()} }

// Ptr is t as a *metav1.Time, nil for the zero Time.
func (t Time) Ptr() *metav1.Time {
	if t == 0 {
		return nil
	}
	return &metav1.Time{Time: t.Time()}
}
