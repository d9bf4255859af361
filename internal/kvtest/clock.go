package kvtest

import (
	"reflect"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

var timeType = reflect.TypeFor[metav1.Time]()

// Retime moves every time in obj, built around Now, to the same distance
// from now: a test against a real API server builds the objects as the
// engine's tables do and then puts them on the real clock. virt-handler's
// heartbeat annotation moves too. It returns obj.
func Retime[T any](obj *T, now time.Time) *T {
	d := now.Sub(Now)
	if d == 0 {
		return obj
	}
	shift(reflect.ValueOf(obj).Elem(), d)
	if o, ok := any(obj).(metav1.Object); ok {
		if hb, ok := o.GetAnnotations()[kubevirtv1.VirtHandlerHeartbeat]; ok {
			if t, err := time.Parse(time.RFC3339, hb); err == nil {
				o.GetAnnotations()[kubevirtv1.VirtHandlerHeartbeat] = t.Add(d).Format(time.RFC3339)
			}
		}
	}
	return obj
}

func shift(v reflect.Value, d time.Duration) {
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == timeType {
			if t := v.Addr().Interface().(*metav1.Time); !t.IsZero() {
				t.Time = t.Add(d)
			}
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				shift(v.Field(i), d)
			}
		}
	case reflect.Pointer:
		if !v.IsNil() {
			shift(v.Elem(), d)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			shift(v.Index(i), d)
		}
	}
}
