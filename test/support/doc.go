// Package support holds what the control-plane tests under test/ share: the
// ginkgo suites' bootstrap (control plane, client, simulator, a world per
// spec), the checkout and the tools `make` builds into bin/, a create that
// fails the test, and the KubeVirt objects of one realistic VM (a RHEL
// database VM on worker-0) that the packaging and integration tests install
// or feed to other tools. Only tests import it.
package support
