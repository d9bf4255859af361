//go:build tools

// Package thanos pins Thanos, whose `thanos sidecar` and `thanos query`
// test/integrations/thanos_test.go puts in front of the test Prometheus to
// read domain stats through a real Thanos Querier, as vmobs does on
// OpenShift (thanos-querier). hack/build-thanos.sh builds it from the Go
// module proxy into bin/thanos; Thanos' release downloads cannot be reached
// from our build machines. v0.42.5, the newest release, requires go 1.26.10
// in its go.mod, newer than the Go our builds run with and than this
// module's go line: v0.42.4 is the newest that builds with it.
package thanos

import _ "github.com/thanos-io/thanos/cmd/thanos"
