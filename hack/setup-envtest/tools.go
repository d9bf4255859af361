//go:build tools

// Package setupenvtest pins controller-runtime's setup-envtest, which
// hack/build-controlplane.sh (`make envtest-bin`) builds into bin/ and asks
// first for the official kube-apiserver, etcd and kubectl of the test
// control plane, before building them from the Go module proxy. A module of
// its own, like the control plane's: the tool needs none of the main
// module's dependencies, and its own (zap, afero) stay out of our go.mod.
package setupenvtest

import _ "sigs.k8s.io/controller-runtime/tools/setup-envtest"
