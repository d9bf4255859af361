//go:build tools

// Package kubestatemetrics pins kube-state-metrics, which
// test/integrations/ksm_real_test.go runs against a real API server with
// config/kube-state-metrics/vmobservation-crs.yaml. It is built from the Go
// module proxy by `make kube-state-metrics` (hack/build-tool.sh) into
// bin/kube-state-metrics. The module's root package is kube-state-metrics'
// main package.
package kubestatemetrics

import _ "k8s.io/kube-state-metrics/v2"
