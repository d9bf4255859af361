package controllers

import "github.com/vmobs/vmobs/internal/guestprobe"

// GuestProbe configures probing the guest agents through virt-api's
// subresources; nil on the Reconciler leaves them out
// (--guest-probe-interval 0). The probes' targets are the cache's Running
// VMIs whose agent is connected (factsources.go); they run on workers of
// their own, never in a reconcile.
type GuestProbe struct {
	API    guestprobe.API
	Config guestprobe.Config
	// Metrics may be nil.
	Metrics *guestprobe.Metrics
}
