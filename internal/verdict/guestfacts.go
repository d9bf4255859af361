package verdict

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// GuestFacts is what the guest agent answered the controller's probes
// through virt-api's subresources (the path of virtctl guestosinfo,
// userlist and fslist: kv:pkg/virt-api/rest/subresource.go → virt-handler →
// virt-launcher → the QEMU guest agent), folded by internal/guestprobe.
// Everything in it comes from inside the guest, so the fold bounds it
// (at most MaxGuestFilesystems filesystems, strings cut at MaxGuestString
// bytes) and rounds it (UsedPercent to 5-point buckets), so the facts change
// only when what they say does.
type GuestFacts struct {
	// Unavailable, when not empty, says why guest agents cannot be probed
	// at all (virt-api down, refusing or throttling the controller). Every
	// other field is then zero: no rule judges on them, and the guest layer
	// notes it (GuestProbeUnavailable).
	Unavailable string
	// VMIUID is the VMI the facts were folded for. Facts for another UID
	// (a VMI recreated under the same name) are not this VMI's.
	VMIUID types.UID
	// ProbedAt is when the probe that last changed the facts answered.
	ProbedAt time.Time

	// Failures counts the probes in a row that failed or timed out, up to
	// MaxGuestProbeFailures; FailingSince is the first of them and
	// LastError what the newest said (bounded). Zero while probes succeed.
	Failures     int32
	FailingSince time.Time
	LastError    string

	// Answered says a probe succeeded at least once for this VMI: the
	// fields below are what it answered.
	Answered bool
	// Hostname, OSName (os.prettyName, else os.name), KernelRelease and
	// Timezone are guestosinfo's.
	Hostname, OSName, KernelRelease, Timezone string
	// Users is userlist's number of logged-in users, at most
	// MaxGuestUsers (which reads "that many or more"); UsersKnown is false
	// when the call failed or the agent does not support it.
	Users      int32
	UsersKnown bool
	// Filesystems are filesystemlist's, fullest first (then by mount
	// point), at most MaxGuestFilesystems.
	Filesystems []GuestFilesystem
}

// GuestFilesystem is one filesystem of the guest as the fold keeps it.
type GuestFilesystem struct {
	MountPoint, Type string
	// UsedPercent is rounded down to a multiple of 5 (0-100).
	UsedPercent int32
	// Since is the first probe that saw this filesystem in its current
	// 5-point bucket or higher; it dates FilesystemNearlyFull.
	Since time.Time
}

// Bounds on what the fold keeps of a guest's answers.
const (
	MaxGuestFilesystems   = 16
	MaxGuestUsers         = 16
	MaxGuestString        = 253
	MaxGuestProbeFailures = 10
)
