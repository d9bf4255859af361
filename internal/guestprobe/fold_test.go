package guestprobe

import (
	"reflect"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/vmobs/vmobs/internal/vmifacts"
)

var t0 = time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)

// answered is a probe that answered, with the filesystems at the given
// use.
func answered(fs ...vmifacts.GuestFilesystem) *result {
	return &result{
		info:  osInfo{Hostname: "web-1", OSName: "Fedora Linux 40", KernelRelease: "6.8.5", Timezone: "UTC, 0"},
		users: 2, usersKnown: true,
		fs: append([]vmifacts.GuestFilesystem(nil), fs...),
	}
}

func failed(kind Kind, msg string) *result { return &result{err: &Error{Kind: kind, Msg: msg}} }

func gfs(mount string, pct int32) vmifacts.GuestFilesystem {
	return vmifacts.GuestFilesystem{MountPoint: mount, Type: "xfs", UsedPercent: pct}
}

func TestFold(t *testing.T) {
	t1 := t0.Add(5 * time.Minute)
	base := func() vmifacts.GuestFacts {
		f, _ := fold(&vmifacts.GuestFacts{}, "uid-1", answered(gfs("/", 85), gfs("/var", 40)), t0)
		return f
	}
	for _, tc := range []struct {
		name    string
		prev    func() vmifacts.GuestFacts
		r       *result
		uid     string
		changed bool
		check   func(t *testing.T, f vmifacts.GuestFacts)
	}{
		{"first answer", func() vmifacts.GuestFacts { return vmifacts.GuestFacts{} }, answered(gfs("/", 85)), "uid-1", true, func(t *testing.T, f vmifacts.GuestFacts) {
			if !f.Answered || f.VMIUID != "uid-1" || f.Hostname != "web-1" || f.OSName != "Fedora Linux 40" || f.Users != 2 || !f.UsersKnown ||
				f.ProbedAt != t1 || len(f.Filesystems) != 1 || f.Filesystems[0].Since != t1 {
				t.Fatalf("%+v", f)
			}
		}},
		{"the same answer changes nothing", base, answered(gfs("/", 85), gfs("/var", 40)), "uid-1", false, func(t *testing.T, f vmifacts.GuestFacts) {
			if f.ProbedAt != t0 || f.Filesystems[0].Since != t0 {
				t.Fatalf("ProbedAt or Since moved: %+v", f)
			}
		}},
		{"a higher bucket starts its Since", base, answered(gfs("/", 90), gfs("/var", 40)), "uid-1", true, func(t *testing.T, f vmifacts.GuestFacts) {
			if f.Filesystems[0].UsedPercent != 90 || f.Filesystems[0].Since != t1 || f.Filesystems[1].Since != t0 || f.ProbedAt != t1 {
				t.Fatalf("%+v", f.Filesystems)
			}
		}},
		{"a lower bucket keeps its Since", base, answered(gfs("/", 80), gfs("/var", 40)), "uid-1", true, func(t *testing.T, f vmifacts.GuestFacts) {
			if f.Filesystems[0].UsedPercent != 80 || f.Filesystems[0].Since != t0 {
				t.Fatalf("%+v", f.Filesystems)
			}
		}},
		{"a failure keeps what was answered", base, failed(KindTimeout, "guestosinfo did not answer within 10s"), "uid-1", true, func(t *testing.T, f vmifacts.GuestFacts) {
			if f.Failures != 1 || f.FailingSince != t1 || f.LastError != "guestosinfo did not answer within 10s" || !f.Answered || len(f.Filesystems) != 2 {
				t.Fatalf("%+v", f)
			}
		}},
		{"failures in a row keep their start, up to the cap", func() vmifacts.GuestFacts {
			f := base()
			for i := range vmifacts.MaxGuestProbeFailures + 3 {
				f, _ = fold(&f, "uid-1", failed(KindAgent, "x"), t0.Add(time.Duration(i+1)*time.Minute))
			}
			return f
		}, failed(KindAgent, "x"), "uid-1", false, func(t *testing.T, f vmifacts.GuestFacts) {
			if f.Failures != vmifacts.MaxGuestProbeFailures || f.FailingSince != t0.Add(time.Minute) {
				t.Fatalf("%+v", f)
			}
		}},
		{"an answer ends the failures", func() vmifacts.GuestFacts {
			f := base()
			f, _ = fold(&f, "uid-1", failed(KindAgent, "x"), t1)
			return f
		}, answered(gfs("/", 85), gfs("/var", 40)), "uid-1", true, func(t *testing.T, f vmifacts.GuestFacts) {
			if f.Failures != 0 || !f.FailingSince.IsZero() || f.LastError != "" || f.ProbedAt != t1 {
				t.Fatalf("%+v", f)
			}
		}},
		{"users unknown", base, func() *result { r := answered(gfs("/", 85), gfs("/var", 40)); r.usersKnown = false; return r }(), "uid-1", true, func(t *testing.T, f vmifacts.GuestFacts) {
			if f.UsersKnown || f.Users != 0 {
				t.Fatalf("%+v", f)
			}
		}},
		{"another VMI starts over", func() vmifacts.GuestFacts {
			f := base()
			f, _ = fold(&f, "uid-1", failed(KindAgent, "x"), t0)
			return f
		}, failed(KindAgent, "y"), "uid-2", true, func(t *testing.T, f vmifacts.GuestFacts) {
			if f.VMIUID != "uid-2" || f.Failures != 1 || f.FailingSince != t1 || f.Answered || f.Hostname != "" || f.Filesystems != nil {
				t.Fatalf("%+v", f)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prev := tc.prev()
			before := prev
			f, changed := fold(&prev, types.UID(tc.uid), tc.r, t1)
			if changed != tc.changed {
				t.Errorf("changed = %v, want %v: %+v → %+v", changed, tc.changed, prev, f)
			}
			if !reflect.DeepEqual(prev, before) {
				t.Error("fold wrote into its input")
			}
			tc.check(t, f)
		})
	}
}

func TestFoldTwentyUnchangedProbes(t *testing.T) {
	f, _ := fold(&vmifacts.GuestFacts{}, "uid-1", answered(gfs("/", 85)), t0)
	first := f
	for i := 1; i <= 20; i++ {
		var changed bool
		if f, changed = fold(&f, "uid-1", answered(gfs("/", 85)), t0.Add(time.Duration(i)*5*time.Minute)); changed {
			t.Fatalf("probe %d changed the facts", i)
		}
	}
	if !identical(&first, &f) || &f.Filesystems[0] != &first.Filesystems[0] {
		t.Fatal("unchanged facts must be equal and share their filesystems")
	}
}

// TestSameSeesEveryField sets each field of GuestFacts in turn: same must
// see it (ProbedAt aside), so that a field added later is not missed.
func TestSameSeesEveryField(t *testing.T) {
	eachFieldSet(t, func(name string, f *vmifacts.GuestFacts) {
		want := name != "ProbedAt"
		if got := !same(f, &vmifacts.GuestFacts{}); got != want {
			t.Errorf("same misses %s", name)
		}
	})
}

// TestSameFilesystemSeesEveryField does the same for GuestFilesystem.
func TestSameFilesystemSeesEveryField(t *testing.T) {
	eachFieldSet(t, func(name string, f *vmifacts.GuestFilesystem) {
		if sameFilesystem(*f, vmifacts.GuestFilesystem{}) {
			t.Errorf("sameFilesystem misses %s", name)
		}
	})
}

// eachFieldSet calls check with a zero T but for one field, set to a value
// that is not its zero, once for each field.
func eachFieldSet[T any](t *testing.T, check func(field string, v *T)) {
	t.Helper()
	typ := reflect.TypeFor[T]()
	for i := range typ.NumField() {
		var x T
		v := reflect.ValueOf(&x).Elem().Field(i)
		switch v.Kind() {
		case reflect.String:
			v.SetString("x")
		case reflect.Int32:
			v.SetInt(1)
		case reflect.Bool:
			v.SetBool(true)
		case reflect.Struct:
			v.Set(reflect.ValueOf(t0))
		case reflect.Slice:
			switch v.Type().Elem() {
			case reflect.TypeFor[vmifacts.GuestFilesystem]():
				v.Set(reflect.ValueOf([]vmifacts.GuestFilesystem{{MountPoint: "/"}}))
			case reflect.TypeFor[vmifacts.FilesystemStep]():
				v.Set(reflect.ValueOf([]vmifacts.FilesystemStep{{Percent: 90, Since: t0}}))
			default:
				t.Fatalf("field %s of type %s: teach this test", typ.Field(i).Name, v.Type())
			}
		default:
			t.Fatalf("field %s of kind %s: teach this test", typ.Field(i).Name, v.Kind())
		}
		check(typ.Field(i).Name, &x)
	}
}

// identical is same, ProbedAt included.
func identical(a, b *vmifacts.GuestFacts) bool {
	return a != nil && b != nil && same(a, b) && a.ProbedAt.Equal(b.ProbedAt)
}
