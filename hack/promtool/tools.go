//go:build tools

// Package promtool pins Prometheus' promtool, which the alert tests run
// (`promtool check rules`, `promtool test rules`). It is built from the Go
// module proxy by hack/build-promtool.sh into bin/promtool; Prometheus'
// release downloads cannot be reached from our build machines.
package promtool

import _ "github.com/prometheus/prometheus/cmd/promtool"
