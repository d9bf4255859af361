package guestprobe

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/vmobs/vmobs/internal/vmifacts"
)

// result is one probe of one VMI: what it answered, or why not.
type result struct {
	info       osInfo
	users      int32
	usersKnown bool
	fs         []vmifacts.GuestFilesystem
	// skipped counts the list entries the decoders dropped.
	skipped int
	// err is nil when guestosinfo answered, and userlist and
	// filesystemlist answered or are not supported.
	err *Error
	// canceled: the controller is stopping; the probe says nothing.
	canceled bool
}

// kind is the result's failure kind, "" when it answered.
func (r *result) kind() Kind {
	if r.err == nil {
		return ""
	}
	return r.err.Kind
}

// fold computes the VMI's facts after a probe that counts (answered, or
// failed in a way that is this guest's) from its facts before (nil: none),
// and says whether they changed. ProbedAt moves only with a change, so an
// unchanging guest folds to equal facts: no notification, no reconcile,
// no write.
func fold(prev *vmifacts.GuestFacts, uid types.UID, r *result, at time.Time) (vmifacts.GuestFacts, bool) {
	if prev == nil {
		prev = &vmifacts.GuestFacts{}
	}
	f := *prev
	if f.VMIUID != uid {
		// A new VMI, or one recreated under the same name: nothing the
		// earlier one answered applies.
		f = vmifacts.GuestFacts{VMIUID: uid}
	}
	base := f
	if r.err != nil {
		// What the agent answered before stays: a failed probe says
		// nothing new of the filesystems.
		f.Failures = min(f.Failures+1, vmifacts.MaxGuestProbeFailures)
		if f.FailingSince.IsZero() {
			f.FailingSince = at
		}
		f.LastError = r.err.Msg
	} else {
		f.Failures, f.FailingSince, f.LastError = 0, time.Time{}, ""
		f.Answered = true
		f.Hostname, f.OSName, f.KernelRelease, f.Timezone = r.info.Hostname, r.info.OSName, r.info.KernelRelease, r.info.Timezone
		f.Users, f.UsersKnown = r.users, r.usersKnown
		if !r.usersKnown {
			f.Users = 0
		}
		f.Filesystems = filesystems(base.Filesystems, r.fs, at)
	}
	changed := !same(&f, prev)
	f.ProbedAt = base.ProbedAt
	if changed {
		f.ProbedAt = at
	}
	return f, changed
}

// filesystems dates each filesystem: for every level from
// vmifacts.MinFilesystemStep up to its use, since when it has been at that
// level or more without a probe below (its Steps), so that a rule can ask
// how long it has been at a threshold (FilesystemNearlyFull's duration).
// A level it stays at keeps its date, one it climbs to starts now, and
// after a fall the levels it still holds keep the dates they had (one that
// went from 85% to 95% and is at 90% has been at 90% or more since it
// reached 90%). Since is the date of its current level. The list before
// is returned as is when nothing changed, so that unchanged facts share
// it.
func filesystems(prev, now []vmifacts.GuestFilesystem, at time.Time) []vmifacts.GuestFilesystem {
	for i := range now {
		var before *vmifacts.GuestFilesystem
		for j := range prev {
			if prev[j].MountPoint == now[i].MountPoint {
				before = &prev[j]
				break
			}
		}
		now[i].Steps = steps(before, now[i].UsedPercent, at)
		now[i].Since = at
		if n := len(now[i].Steps); n > 0 {
			now[i].Since = now[i].Steps[n-1].Since
		} else if before != nil && before.UsedPercent >= now[i].UsedPercent {
			now[i].Since = before.Since
		}
	}
	if slices.EqualFunc(prev, now, sameFilesystem) {
		return prev
	}
	return now
}

// steps is the run's levels of a filesystem now at used percent, from its
// levels before (nil: first seen).
func steps(before *vmifacts.GuestFilesystem, used int32, at time.Time) []vmifacts.FilesystemStep {
	if used < vmifacts.MinFilesystemStep {
		return nil
	}
	var old []vmifacts.FilesystemStep
	if before != nil {
		old = before.Steps
		if len(old) == 0 && before.UsedPercent >= vmifacts.MinFilesystemStep {
			old = []vmifacts.FilesystemStep{{Percent: before.UsedPercent, Since: before.Since}}
		}
	}
	out := make([]vmifacts.FilesystemStep, 0, len(old)+1)
	for _, s := range old {
		if s.Percent <= used {
			out = append(out, s)
			continue
		}
		// The first level above the use now: it held every level up to
		// used since then.
		if len(out) == 0 || out[len(out)-1].Percent < used {
			out = append(out, vmifacts.FilesystemStep{Percent: used, Since: s.Since})
		}
		break
	}
	if len(out) == 0 || out[len(out)-1].Percent < used {
		out = append(out, vmifacts.FilesystemStep{Percent: used, Since: at})
	}
	return out
}

func sameFilesystem(a, b vmifacts.GuestFilesystem) bool {
	return a.MountPoint == b.MountPoint && a.Type == b.Type && a.UsedPercent == b.UsedPercent && a.Since.Equal(b.Since) &&
		slices.EqualFunc(a.Steps, b.Steps, func(x, y vmifacts.FilesystemStep) bool { return x.Percent == y.Percent && x.Since.Equal(y.Since) })
}

// same compares two facts, ProbedAt aside (it dates the change itself).
// Every field must be here: TestSameSeesEveryField fails when one is
// added to vmifacts.GuestFacts and not to this.
func same(a, b *vmifacts.GuestFacts) bool {
	return a.Unavailable == b.Unavailable && a.VMIUID == b.VMIUID &&
		a.Failures == b.Failures && a.FailingSince.Equal(b.FailingSince) && a.LastError == b.LastError &&
		a.Answered == b.Answered && a.Hostname == b.Hostname && a.OSName == b.OSName &&
		a.KernelRelease == b.KernelRelease && a.Timezone == b.Timezone &&
		a.Users == b.Users && a.UsersKnown == b.UsersKnown &&
		slices.EqualFunc(a.Filesystems, b.Filesystems, sameFilesystem)
}
