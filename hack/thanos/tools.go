//go:build tools

// Package thanos pins Thanos, whose `thanos sidecar` and `thanos query`
// test/integrations/thanos_test.go puts in front of the test Prometheus to
// read domain stats through a real Thanos Querier, as vmobs does on
// OpenShift (thanos-querier). `make thanos` (hack/build-tool.sh) builds it
// from the Go module proxy into bin/thanos; Thanos' release downloads cannot be reached
// from our build machines. v0.42.4, not v0.42.5, the newest release:
// v0.42.5's go.mod requires go 1.26.10, newer than this module's go line
// (1.26.0) and so than the Go our builds may run with, and it changes no
// code of cmd/ or pkg/ (its other changes are images and Thanos' own e2e
// tests).
package thanos

import _ "github.com/thanos-io/thanos/cmd/thanos"
