package controllers

import "github.com/vmobs/vmobs/internal/domainstats"

// DomainStats configures reading virt-handler's domain stats from
// Prometheus; nil on the Reconciler leaves them out (no --prometheus-url).
// The source's targets are the cache's Running VMIs (factsources.go).
type DomainStats struct {
	Querier domainstats.Querier
	// Config is the source's, the memory thresholds of the engine's
	// policy included (internal/app derives both).
	Config domainstats.Config
	// Metrics may be nil.
	Metrics *domainstats.Metrics
}
