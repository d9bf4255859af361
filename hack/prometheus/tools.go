//go:build tools

// Package prometheus pins Prometheus, whose two commands the tests run:
// promtool, for the alert rules (`promtool check rules`, `promtool test
// rules`), and the Prometheus server, which scrapes the simulated
// virt-handlers' domain stats. `make promtool` and `make prometheus`
// (hack/build-tool.sh) build them from the Go module proxy into
// bin/promtool and bin/prometheus; Prometheus' release
// downloads cannot be reached from our build machines. One module keeps the
// two at the same version.
package prometheus

import (
	_ "github.com/prometheus/prometheus/cmd/prometheus"
	_ "github.com/prometheus/prometheus/cmd/promtool"
)
