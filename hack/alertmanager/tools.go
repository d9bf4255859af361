//go:build tools

// Package alertmanager pins Alertmanager, which test/integrations runs
// behind the test Prometheus to count the notifications the shipped alert
// rules and the documented inhibition make (one page per lost node, not
// one per VM). `make alertmanager` (hack/build-tool.sh) builds it from the
// Go module proxy into bin/alertmanager: Alertmanager's release downloads
// cannot be reached from our build machines. A module of its own, because
// its dependencies would move ours.
//
// v0.31.1, not the newest: from v0.32.0 on, the web UI is embedded from
// ui/app/dist (`//go:embed app/dist`), which Alertmanager's release build
// generates with npm and the module zip does not hold, so the command does
// not compile from the module proxy ("pattern app/dist: no matching files
// found"), and go build's -overlay may not add files under the module
// cache. v0.31.1 still carries its UI as generated Go (asset/), and the
// routing, grouping and inhibition the test reads are the same.
package alertmanager

import (
	_ "github.com/prometheus/alertmanager/cmd/alertmanager"
)
