//go:build tools

// Package monitoringcrds pins the API types of the operators whose custom
// resources vmobs ships: prometheus-operator (ServiceMonitor,
// PrometheusRule) and cert-manager (Certificate, Issuer, for
// config/certmanager). hack/monitoring-crds.sh generates their CRDs with
// controller-gen into test/crds/, where the tests install them to have the
// API server validate vmobs' objects. A module of its own: the types require
// newer k8s.io/utils and kube-openapi than vmobs' go.mod, and cert-manager's
// module requires much else.
package monitoringcrds

import (
	_ "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	_ "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
)
