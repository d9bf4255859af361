//go:build tools

// Package actionlint pins actionlint, the linter `make test` runs on the
// GitHub Actions workflows in .github/workflows (the expressions, the
// events, the actions' inputs, and the run: scripts through shellcheck when
// it is on PATH). `make actionlint` (hack/build-tool.sh) builds it from the
// Go module proxy into bin/. A module of its own so that its dependencies
// stay out of ours.
package actionlint

import (
	_ "github.com/rhysd/actionlint/cmd/actionlint"
)
