//go:build tools

// Package controlplane pins the programs of the test control plane: the real
// kube-apiserver, etcd and kubectl, built from the Go module proxy because
// setup-envtest's downloads cannot be reached from our build machines.
package controlplane

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
