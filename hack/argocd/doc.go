// Package argocd runs vmobs' Argo CD health check
// (config/argocd/observability.vmobs.io/VMObservation: health.lua, its
// health_test.yaml and testdata/) through Argo CD's own code: the argocd-cm
// of docs/argocd.md read by util/settings' SettingsManager, as the
// application controller reads it, and every test object assessed by
// gitops-engine's health.GetResourceHealth with util/lua's
// ResourceHealthOverrides, the call the controller makes for each live
// resource (argo-cd controller/health.go, setApplicationHealth).
//
// It is a module of its own because Argo CD's dependencies would move
// versions in vmobs' go.mod, and because Argo CD v3.6 needs Go 1.27, newer
// than vmobs builds with: its go.mod's toolchain line names the Go the
// Makefile fetches for it (GOTOOLCHAIN). `make test-argocd` runs it
// (docs/argocd.md, "How it is tested").
package argocd
