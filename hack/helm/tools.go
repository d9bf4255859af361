//go:build tools

// Package helm pins Helm, whose command the chart's tests run
// (test/packaging/helm_test.go: `helm lint`, `helm template`, `helm
// install` onto the test control plane) and `make helm-package` packages the
// chart with. `make helm` (hack/build-tool.sh) builds it from the Go module
// proxy into bin/helm; Helm's release downloads cannot be reached from our build
// machines. A module of its own, because Helm's dependencies would move ours
// (golang.org/x/net, x/sys, x/term, gRPC, OpenTelemetry); the k8s.io modules,
// controller-runtime and kustomize are at our go.mod's versions, so that
// their packages come from the same Go build cache entries where their own
// dependencies allow.
package helm

import (
	_ "helm.sh/helm/v4/cmd/helm"
)
