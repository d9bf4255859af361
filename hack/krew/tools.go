//go:build tools

// Package krew pins krew, whose two commands the tests run on the krew
// manifest `make release` fills: validate-krew-manifest, the check the
// krew-index runs on every plugin manifest, and krew itself, which installs
// the plugin from a release archive (`kubectl krew install --manifest
// --archive`). `make krew` (hack/build-tool.sh) builds them from the Go
// module proxy into bin/. A module of its own: krew v0.4.3 requires k8s.io/client-go
// v11.0.0+incompatible, which would win our module graph; here a replace
// puts client-go back at our v0.37.2 (krew uses only its util/homedir).
package krew

import (
	_ "sigs.k8s.io/krew/cmd/krew"
	_ "sigs.k8s.io/krew/cmd/validate-krew-manifest"
)
