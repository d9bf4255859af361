//go:build tools

// Package controlplanemin pins kube-apiserver and kubectl of the oldest
// Kubernetes vmobs supports (docs/compatibility.md), which `make
// test-min-kube` builds into bin/k8s-1.30 for test/minkube. A module of its
// own beside hack/controlplane: one module cannot require two releases of
// k8s.io/kubernetes, and each replaces the staging modules with its own.
package controlplanemin

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
