// Package flux tests vmobs' Flux recipes (docs/flux-healthcheck.yaml,
// docs/flux-helmrelease.yaml and the snippets of docs/flux.md) with Flux's
// own code: github.com/fluxcd/pkg/runtime/cel evaluates the
// healthCheckExprs, and github.com/fluxcd/pkg/ssa waits for a set of
// objects through the kstatus poller of github.com/fluxcd/cli-utils, as
// kustomize-controller and helm-controller do. It is a module of its own
// because those modules would move versions in vmobs' go.mod; its k8s.io
// and controller-runtime versions are vmobs' own, so the build cache is
// shared. `make test` runs it.
package flux
