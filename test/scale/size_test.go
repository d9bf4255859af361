package scale

import (
	"reflect"
	"unsafe"
)

// deepSizeSeen estimates the heap bytes an object graph holds: every
// pointer, slice backing array, string and map reached from v and not in
// seen, each counted once and rounded up to a malloc size class
// (approximately: 8-byte steps to 32 bytes, 16-byte steps above). Maps are
// counted as their entries plus a bucket overhead. Over several objects
// with one seen, what they share counts once. It is an estimate for the
// cache breakdown, not a measurement; the heap figures come from
// runtime.MemStats.
func deepSizeSeen(v any, seen map[uintptr]bool) int64 {
	return sizeOf(reflect.ValueOf(v), seen, false)
}

func roundClass(n int64) int64 {
	switch {
	case n <= 0:
		return 0
	case n <= 32:
		return (n + 7) &^ 7
	default:
		return (n + 15) &^ 15
	}
}

// sizeOf is what v points to (not v itself, which its parent holds),
// plus v's own size when top is set.
func sizeOf(v reflect.Value, seen map[uintptr]bool, top bool) int64 {
	var n int64
	if top && v.IsValid() {
		n += roundClass(int64(v.Type().Size()))
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() || seen[v.Pointer()] {
			return n
		}
		seen[v.Pointer()] = true
		e := v.Elem()
		return n + roundClass(int64(e.Type().Size())) + sizeOf(e, seen, false)
	case reflect.Interface:
		if v.IsNil() {
			return n
		}
		e := v.Elem()
		if e.Kind() == reflect.Pointer {
			return n + sizeOf(e, seen, false)
		}
		return n + roundClass(int64(e.Type().Size())) + sizeOf(e, seen, false)
	case reflect.String:
		if v.Len() == 0 {
			return n
		}
		p := uintptr(unsafe.Pointer(unsafe.StringData(v.String())))
		if seen[p] {
			return n
		}
		seen[p] = true
		return n + roundClass(int64(v.Len()))
	case reflect.Slice:
		if v.IsNil() || v.Cap() == 0 {
			return n
		}
		p := v.Pointer()
		if !seen[p] {
			seen[p] = true
			n += roundClass(int64(v.Cap()) * int64(v.Type().Elem().Size()))
		}
		for i := range v.Len() {
			n += sizeOf(v.Index(i), seen, false)
		}
		return n
	case reflect.Array:
		for i := range v.Len() {
			n += sizeOf(v.Index(i), seen, false)
		}
		return n
	case reflect.Struct:
		for i := range v.NumField() {
			n += sizeOf(v.Field(i), seen, false)
		}
		return n
	case reflect.Map:
		if v.IsNil() || seen[v.Pointer()] {
			return n
		}
		seen[v.Pointer()] = true
		kt, et := v.Type().Key().Size(), v.Type().Elem().Size()
		// Swiss-table groups of 8 slots, one control word, ~7/8 load.
		slots := (int64(v.Len())*8/7 + 7) &^ 7
		n += 48 + roundClass(slots*int64(kt+et)+slots/8*8)
		it := v.MapRange()
		for it.Next() {
			n += sizeOf(it.Key(), seen, false) + sizeOf(it.Value(), seen, false)
		}
		return n
	}
	return n
}
