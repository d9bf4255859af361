//go:build tools

// Package etcd pins the etcd server of the test control plane. It is its own
// module because k8s.io/kubernetes v1.37.2 requires etcd v3.7 libraries, while
// the control plane we test against runs etcd v3.6.16.
package etcd

import _ "go.etcd.io/etcd/server/v3"
