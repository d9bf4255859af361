# vmobs Makefile, in the kubebuilder style. `make help` lists the targets.

# Recipes run in bash and stop at the first failing command, including one
# inside a pipeline.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c

K8S_VERSION ?= 1.37.2
GOOS ?= $(shell go env GOOS)
GOARCH ?= $(shell go env GOARCH)
ENVTEST_DIR ?= $(TOOLS_BIN)/k8s/$(K8S_VERSION)-$(GOOS)-$(GOARCH)
# KUBEBUILDER_ASSETS, when set, points at an existing control plane and skips
# the build.
KUBEBUILDER_ASSETS ?= $(ENVTEST_DIR)
export KUBEBUILDER_ASSETS

IMG ?= vmobs:dev
# What `make build`, `make plugin` and `make release` stamp into the binaries
# (internal/version): the release tag at HEAD, or git describe's distance
# past the last one; "devel" where there is none.
VERSION ?= $(shell git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null || echo devel)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
LDFLAGS = -X github.com/vmobs/vmobs/internal/version.version=$(VERSION) -X github.com/vmobs/vmobs/internal/version.commit=$(COMMIT)
# Where `make release` pins the manager's image (dist/install.yaml, the
# image's labels).
IMAGE_REPO ?= ghcr.io/vmobs/vmobs
CONTROLLER_GEN ?= go tool controller-gen
# golangci-lint has a tool module of its own (hack/golangci-lint/go.mod): its
# dependencies would move golang.org/x/tools, x/sys and others in ours.
GOLANGCI_LINT ?= go tool -modfile=$(CURDIR)/hack/golangci-lint/go.mod golangci-lint
# Go test flags; `make test GOTEST_FLAGS=-v` for verbose output.
GOTEST_FLAGS ?=
# test/demo plays its scenarios against thresholds of seconds (the demo's
# fast pace), so `make test` runs it alone after the other packages: beside
# two packages that start control planes of their own, on two cores and with
# -race, it missed its domain-stats scenarios in CI. test/history and
# test/incidents wait on a real controller's writes within fixed deadlines
# and, beside other control planes, missed them once each in CI: they run
# alone too, one package at a time (-p 1).
SOLO_PKGS ?= ./test/history ./test/incidents ./test/demo
PKGS ?= $(shell go list ./... | grep -v -E '^github.com/vmobs/vmobs/test/(demo|history|incidents)$$')

.PHONY: all
all: build

##@ General

.PHONY: help
help: ## Show the targets.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-22s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development

.PHONY: manifests
manifests: ## Generate the CRD and RBAC manifests from the API types and kubebuilder markers (and copy them into the Helm chart).
	$(CONTROLLER_GEN) rbac:roleName=manager-role crd paths="./api/..." paths="./controllers/..." output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac
	hack/sync-chart.sh

.PHONY: generate
generate: ## Generate the DeepCopy methods of the API types (and of internal/drain's, which a status carries).
	$(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" paths="./api/..." paths="./internal/drain/..."

.PHONY: verify-generated
verify-generated: ## Fail when generated files (deepcopy, CRD, RBAC, KubeVirt and monitoring CRDs) are stale.
	hack/verify-generated.sh

.PHONY: kubevirt-crds
kubevirt-crds: ## Regenerate the KubeVirt CRDs for tests from kubevirt.io/client-go's OpenAPI definitions: v1.9 into test/crds/kubevirt, v1.5-v1.8 into test/crds/kubevirt-vX.Y (docs/compatibility.md); and CDI's DataVolume CRD into test/crds/cdi.
	hack/kubevirt-crds.sh all
	hack/cdi-crds.sh

.PHONY: monitoring-crds
monitoring-crds: ## Regenerate prometheus-operator's and cert-manager's CRDs for tests (test/crds/prometheus-operator, test/crds/cert-manager) from their API types with controller-gen.
	hack/monitoring-crds.sh

.PHONY: dashboards
dashboards: ## Regenerate config/grafana/*.json from the Go that builds the dashboards (internal/dashboards), and the chart's copies; also part of update-golden.
	go test ./internal/dashboards -run '^TestCommittedDashboards$$' -update
	hack/sync-chart.sh

.PHONY: fmt
fmt: ## Run go fmt.
	go fmt ./...

.PHONY: vet
vet: ## Run go vet.
	go vet ./...

.PHONY: lint
lint: ## Run golangci-lint (.golangci.yml) on the module, hack/kubevirt-crds and hack/flux.
	$(GOLANGCI_LINT) run ./...
	cd hack/kubevirt-crds && $(GOLANGCI_LINT) run --config $(CURDIR)/.golangci.yml ./...
	cd hack/flux && $(GOLANGCI_LINT) run --config $(CURDIR)/.golangci.yml ./...

.PHONY: lint-fix
lint-fix: ## Run golangci-lint and apply the fixes it can make (formatting, imports, ...).
	$(GOLANGCI_LINT) run --fix ./...
	cd hack/kubevirt-crds && $(GOLANGCI_LINT) run --fix --config $(CURDIR)/.golangci.yml ./...
	cd hack/flux && $(GOLANGCI_LINT) run --fix --config $(CURDIR)/.golangci.yml ./...

.PHONY: test
test: verify-generated vet lint envtest-bin promtool prometheus alertmanager kube-state-metrics krew helm actionlint ## Check generated files, vet, lint, then run every test (unit, envtest suites) with -race, and the tool modules' tests.
	go test -race -count=1 $(GOTEST_FLAGS) $(PKGS)
	go test -race -count=1 -p 1 $(GOTEST_FLAGS) $(SOLO_PKGS)
	cd hack/kubevirt-crds && go test -count=1 ./...
	cd hack/flux && go test -count=1 $(GOTEST_FLAGS) ./...

FUZZTIME ?= 60s
FUZZ_TARGETS ?= ./internal/verdict:FuzzEvaluate ./internal/verdict:FuzzStorage ./internal/netstatus:FuzzParse ./internal/projection:FuzzNetStatusPack ./internal/verdict:FuzzParseHeartbeat ./internal/analyze:FuzzDecode ./internal/guestprobe:FuzzDecodeAnswer

.PHONY: fuzz
fuzz: ## Run each native fuzz target for FUZZTIME (60s); `make test` runs their committed seed corpora.
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz: $$name in $$pkg for $(FUZZTIME)"; \
		go test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) $$pkg; \
	done

.PHONY: test-reliability
test-reliability: envtest-bin ## Fault injection on the real control plane: leader hand-over and crash, metadata conflicts (also part of `make test`).
	go test -race -count=1 -v $(GOTEST_FLAGS) ./test/reliability/... -ginkgo.v

# test-unit: every package of the module outside test/, where the tests that
# start a control plane live, and the tool modules' tests but hack/flux's
# TestRecipes (which runs Flux's code on the control plane).
UNIT_PKGS = $(shell go list ./... | grep -v '^github.com/vmobs/vmobs/test/')

.PHONY: update-golden
update-golden: ## Rewrite every golden file from the current code (analyzer outputs, the accuracy table, fuzz seeds, plugin renderings, Grafana dashboards, the flags and metrics references, the Argo CD health check's testdata, the OpenShift user-workload rules and their promtool tests); review the diff.
	go test ./internal/analyze ./internal/verdict ./internal/kubectlvmobs ./internal/dashboards ./internal/metrics ./cmd/vmobs -update
	go test ./test/integrations -run TestArgoCDHealthOnEngineOutput -update
	go test ./test/packaging -run TestUserWorkloadRules -update

.PHONY: test-unit
test-unit: ## Run the tests that need no control plane: every package outside test/ (and the tool modules' pure tests).
	go test -race -count=1 $(GOTEST_FLAGS) $(UNIT_PKGS)
	cd hack/kubevirt-crds && go test -count=1 ./...
	cd hack/flux && go test -count=1 -skip '^TestRecipes$$' ./...

# check: what `make test` runs that needs neither the control plane nor a
# built tool (golangci-lint aside): minutes, not the suite's forty.
.PHONY: check
check: verify-generated vet lint test-unit ## The inner loop: check generated files, vet, lint, then the tests that need no control plane (test-unit). `make test` runs all of it and the rest.

##@ Build

.PHONY: build
build: ## Build the vmobs binary into bin/, stamped with VERSION (vmobs --version).
	CGO_ENABLED=0 go build -trimpath -ldflags "$(LDFLAGS)" -o bin/vmobs ./cmd/vmobs

.PHONY: run
run: ## Run the controller against the cluster of the current kubeconfig.
	go run ./cmd/vmobs manager $(ARGS)

# image: the release's image (internal/release, `make release`) for this
# machine's architecture only; docs/release.md, "The image", says why there
# is no Dockerfile.
.PHONY: image
image: ## Build the manager's image for linux/GOARCH with the release's recipe, no container engine: an OCI layout in bin/image/, and bin/image.tar tagged IMG for `docker load`, `podman load` or `kind load image-archive`.
	CGO_ENABLED=0 GOOS=linux GOARCH=$(GOARCH) go build -trimpath -tags release -ldflags "-s -w $(LDFLAGS)" -o $(TOOLS_BIN)/vmobs_linux_$(GOARCH) ./cmd/vmobs
	rm -rf $(TOOLS_BIN)/image $(TOOLS_BIN)/image.tar
	go run ./hack/release image -version $(VERSION) -revision $(COMMIT) -created $$(git log -1 --format=%ct 2>/dev/null || date +%s) \
		-out $(TOOLS_BIN)/image -docker-tar $(TOOLS_BIN)/image.tar -tag $(IMG) linux/$(GOARCH)=$(TOOLS_BIN)/vmobs_linux_$(GOARCH)

.PHONY: docker-build
docker-build: image ## Load `make image` into a Docker engine as IMG (vmobs:dev).
	docker load -i $(TOOLS_BIN)/image.tar

# helm-package: the chart's version is VERSION without its "v", its
# appVersion (and so the default image tag) VERSION itself.
.PHONY: helm-package
helm-package: helm ## Package charts/vmobs as dist/vmobs-X.Y.Z.tgz (VERSION=vX.Y.Z).
	@if [[ ! "$(VERSION)" =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$$ ]]; then \
		echo "helm-package: set VERSION=vX.Y.Z (got '$(VERSION)')" >&2; exit 2; \
	fi
	hack/sync-chart.sh --check
	$(HELM) lint --strict charts/vmobs
	$(HELM) package charts/vmobs --version $(patsubst v%,%,$(VERSION)) --app-version $(VERSION) --destination dist

.PHONY: release
release: ## Write a release into dist/ (VERSION=vX.Y.Z): install.yaml, binaries, krew archives and manifest, the multi-arch image as an OCI layout, SHA256SUMS (docs/release.md).
	VERSION=$(VERSION) COMMIT=$(COMMIT) IMAGE_REPO=$(IMAGE_REPO) LDFLAGS="$(LDFLAGS)" hack/release.sh

##@ Tools (from the Go module proxy into TOOLS_BIN, bin/; skipped when up to date)

# The third-party programs the tests run, each built by hack/build-tool.sh
# from the Go module proxy out of a tool module of ours, hack/<tool>/go.mod,
# which pins its version and keeps its dependencies out of our go.mod. Each
# is skipped when up to date; docs/release.md, "Tools", says what they cost.
# (golangci-lint needs no target: `go tool` builds it from its module,
# GOLANGCI_LINT above.)
TOOLS_BIN ?= $(CURDIR)/bin
BUILD_TOOL := hack/build-tool.sh
PROMTOOL ?= $(TOOLS_BIN)/promtool
PROMETHEUS ?= $(TOOLS_BIN)/prometheus
THANOS ?= $(TOOLS_BIN)/thanos
ALERTMANAGER ?= $(TOOLS_BIN)/alertmanager
KUBE_STATE_METRICS ?= $(TOOLS_BIN)/kube-state-metrics
KREW ?= $(TOOLS_BIN)/krew
VALIDATE_KREW_MANIFEST ?= $(TOOLS_BIN)/validate-krew-manifest
HELM ?= $(TOOLS_BIN)/helm
ACTIONLINT ?= $(TOOLS_BIN)/actionlint
# The tests look for the tools under these names. Not THANOS: its test
# skips when it is unset and bin/thanos is missing, and test-thanos sets it.
export PROMTOOL PROMETHEUS ALERTMANAGER KUBE_STATE_METRICS KREW VALIDATE_KREW_MANIFEST HELM ACTIONLINT

# The version stamps of Prometheus' and Thanos' own release builds (promu):
# the release their VERSION file names, and the module version as revision.
promu_ldflags = -s -w -X github.com/prometheus/common/version.Version={release:$(1)} -X github.com/prometheus/common/version.Revision={version:$(1)} -X github.com/prometheus/common/version.Branch=go-module-proxy
# remove_all_sd leaves out Prometheus' service discovery plugins (AWS, Azure,
# GCE, Kubernetes, ...): the tests give the server static targets and the
# rule commands use none, and the build is a fifth smaller. The server is
# built without the builtinassets tag: its web UI is not in the module (the
# UI's embed.go is generated by Prometheus' release build), so the UI pages
# answer 404 while the HTTP API (/api/v1/*) and /-/ready, /-/reload work.
PROMETHEUS_BUILD = $(BUILD_TOOL) -tags remove_all_sd -ldflags "$(call promu_ldflags,github.com/prometheus/prometheus)" -version-args --version hack/prometheus

.PHONY: promtool
promtool: ## Build Prometheus' promtool into bin/ for the alert rule tests.
	$(PROMETHEUS_BUILD) github.com/prometheus/prometheus/cmd/promtool=$(PROMTOOL)

.PHONY: prometheus
prometheus: ## Build the Prometheus server into bin/ for the domain-stats tests and the demo.
	$(PROMETHEUS_BUILD) github.com/prometheus/prometheus/cmd/prometheus=$(PROMETHEUS)

.PHONY: alertmanager
alertmanager: ## Build Alertmanager into bin/ for the test that counts the pages the alert rules and the inhibition make.
	$(BUILD_TOOL) -ldflags "$(call promu_ldflags,github.com/prometheus/alertmanager)" -version-args --version hack/alertmanager github.com/prometheus/alertmanager/cmd/alertmanager=$(ALERTMANAGER)

# Thanos' tags are its release build's (.promu.yml): slicelabels picks the
# labels implementation Thanos is written for.
.PHONY: thanos
thanos: ## Build Thanos into bin/ for `make test-thanos`.
	$(BUILD_TOOL) -tags netgo,slicelabels -ldflags "$(call promu_ldflags,github.com/thanos-io/thanos)" -version-args --version \
		hack/thanos github.com/thanos-io/thanos/cmd/thanos=$(THANOS)

# The version stamps of kube-state-metrics' own Makefile.
.PHONY: kube-state-metrics
kube-state-metrics: ## Build kube-state-metrics into bin/ for test/integrations/ksm_real_test.go.
	$(BUILD_TOOL) -ldflags "-s -w -X github.com/prometheus/common/version.Version={version:k8s.io/kube-state-metrics/v2} -X github.com/prometheus/common/version.Revision={version:k8s.io/kube-state-metrics/v2} -X github.com/prometheus/common/version.Branch=go-module-proxy -X k8s.io/kube-state-metrics/v2/pkg/app.ClientGoVersion={version:k8s.io/client-go}" \
		-version-args version hack/kube-state-metrics k8s.io/kube-state-metrics/v2=$(KUBE_STATE_METRICS)

# The version stamps of krew's own release build (`kubectl krew version`).
.PHONY: krew
krew: ## Build krew and validate-krew-manifest into bin/ for test/packaging/krew_test.go.
	$(BUILD_TOOL) -ldflags "-s -w -X sigs.k8s.io/krew/internal/version.gitTag={version:sigs.k8s.io/krew} -X sigs.k8s.io/krew/internal/version.gitCommit={version:sigs.k8s.io/krew}" \
		hack/krew sigs.k8s.io/krew/cmd/krew=$(KREW) sigs.k8s.io/krew/cmd/validate-krew-manifest=$(VALIDATE_KREW_MANIFEST)

# helm: the version stamps of Helm's own Makefile; an empty metadata makes
# `helm version` print the release, not "+unreleased". -share-cache: the
# packages Helm shares with our module (hack/helm/go.mod pins them to our
# versions) come from the build cache `go vet` and `go test` leave.
.PHONY: helm
helm: ## Build helm into bin/ for the chart's tests and `make helm-package`.
	$(BUILD_TOOL) -share-cache -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version={version:helm.sh/helm/v4} -X helm.sh/helm/v4/internal/version.metadata= -X helm.sh/helm/v4/internal/version.gitCommit={version:helm.sh/helm/v4} -X helm.sh/helm/v4/internal/version.gitTreeState=clean" \
		-version-args "version --short" hack/helm helm.sh/helm/v4/cmd/helm=$(HELM)

# actionlint: the version stamp of its own release build (.goreleaser.yaml).
.PHONY: actionlint
actionlint: ## Build actionlint into bin/ for the workflow test (test/packaging/workflows_test.go).
	$(BUILD_TOOL) -ldflags "-s -w -X github.com/rhysd/actionlint.version={version:github.com/rhysd/actionlint} -X 'github.com/rhysd/actionlint.installedFrom=built from the Go module proxy'" \
		-version-args -version hack/actionlint github.com/rhysd/actionlint/cmd/actionlint=$(ACTIONLINT)

.PHONY: envtest-bin
envtest-bin: ## Put kube-apiserver, etcd and kubectl for tests into bin/k8s/: setup-envtest's download, else a build (ENVTEST_SOURCE=download|build; skipped when present or when KUBEBUILDER_ASSETS points elsewhere); and kube-controller-manager, always built.
	$(call build_controlplane)

# build_controlplane runs hack/build-controlplane.sh with the settings in
# $(1) (KUBECTL=skip ...), unless KUBEBUILDER_ASSETS points elsewhere.
define build_controlplane
	@if [ "$(KUBEBUILDER_ASSETS)" != "$(ENVTEST_DIR)" ]; then \
		echo "control plane: using KUBEBUILDER_ASSETS=$(KUBEBUILDER_ASSETS)"; \
	else \
		K8S_VERSION=$(K8S_VERSION) ENVTEST_DIR=$(ENVTEST_DIR) SETUP_ENVTEST=$(TOOLS_BIN)/setup-envtest $(1) hack/build-controlplane.sh; \
	fi
endef

##@ Integrations

.PHONY: test-packaging
test-packaging: envtest-bin promtool krew helm actionlint ## Run test/packaging: the kustomize manifests and RBAC on a real API server, the tenant roles, the monitoring overlays, the Helm chart (lint, template, conventions, install), krew's validator, the release's install.yaml, actionlint on the CI and release workflows.
	go test -race -count=1 $(GOTEST_FLAGS) ./test/packaging/...

.PHONY: test-integrations
test-integrations: promtool prometheus alertmanager envtest-bin kube-state-metrics ## Run test/integrations (the Argo CD health check's test data, kstatus, kube-state-metrics, promtool's alert tests, the pages through a real Alertmanager, domain stats through Prometheus, the dashboard's queries on real data) and hack/flux (the Flux recipes through Flux's own code).
	go test -race -count=1 $(GOTEST_FLAGS) ./test/integrations/...
	cd hack/flux && go test -count=1 $(GOTEST_FLAGS) ./...

# test-thanos is not part of `make test`: Thanos takes far longer to build
# from a cold Go build cache than the test takes to run (docs/domain-stats.md,
# "Thanos Querier"). CI (.ci/run) runs it after `make test`.
.PHONY: test-thanos
test-thanos: envtest-bin prometheus thanos ## Run the domain-stats source against a real Thanos Querier (thanos sidecar and thanos query in front of the test Prometheus, as OpenShift's thanos-querier); apart from `make test` for Thanos' build time. CI runs both.
	THANOS=$(THANOS) go test -race -count=1 $(GOTEST_FLAGS) -run '^TestDomainStatsThroughThanos$$' ./test/integrations/

# test-argocd is not part of `make test` either: hack/argocd runs Argo CD's
# own health-check code, and Argo CD v3.6 needs a newer Go than ours, which
# GOTOOLCHAIN=auto fetches from the Go module proxy as hack/argocd/go.mod's
# toolchain line names it. That Go shares no build cache with ours, so the
# first run compiles Argo CD's dependencies (docs/argocd.md, "How it is
# tested"). CI (.ci/run) runs it after `make test`.
.PHONY: test-argocd
test-argocd: ## Run the Argo CD health check (config/argocd) through Argo CD's own code, as argocd-cm configures it (hack/argocd, with the Go its go.mod names); apart from `make test` for its build time. CI runs it.
	cd hack/argocd && GOTOOLCHAIN=auto go test -count=1 $(GOTEST_FLAGS) ./...

# test-min-kube is not part of `make test` either: it builds kube-apiserver
# and kubectl of the oldest Kubernetes vmobs supports from their own tool
# module (hack/controlplane-min: Kubernetes 1.30's dependencies clash with
# 1.37's), or downloads its envtest release where setup-envtest reaches it,
# into MIN_KUBE_DIR; etcd is the one hack/etcd builds. From a cold Go build
# cache that is most of a control plane's build (docs/compatibility.md,
# "Kubernetes"). CI (.ci/run) runs it after `make test`.
K8S_MIN_VERSION ?= 1.30.14
MIN_KUBE_DIR ?= $(TOOLS_BIN)/k8s-$(basename $(K8S_MIN_VERSION))
.PHONY: test-min-kube
test-min-kube: ## Run test/minkube on the oldest Kubernetes vmobs supports (kube-apiserver K8S_MIN_VERSION, built into bin/k8s-1.30): vmobs' and KubeVirt v1.5's CRDs, the CEL rule, the manager on a boot, a failure and a stop; apart from `make test` for its build time. CI runs it.
	K8S_VERSION=$(K8S_MIN_VERSION) ENVTEST_DIR=$(MIN_KUBE_DIR) CONTROLPLANE_MODULE=controlplane-min CONTROLLER_MANAGER=skip \
		SETUP_ENVTEST=$(TOOLS_BIN)/setup-envtest hack/build-controlplane.sh
	MIN_KUBE_ASSETS=$(MIN_KUBE_DIR) go test -race -count=1 $(GOTEST_FLAGS) ./test/minkube/

.PHONY: demo
# demo builds only what the first verdict needs before it starts:
# kube-apiserver and etcd, then vmobs. The demo itself builds
# kube-controller-manager, Prometheus and kubectl when they are missing,
# one at a time once the first verdict is in, and their scenarios join then
# (docs/demo.md, "The first run").
demo: ## Watch vmobs diagnose a simulated KubeVirt fleet on a throwaway control plane (ARGS="--duration 2m --vms 40 --non-interactive ...").
	$(call build_controlplane,KUBECTL=skip CONTROLLER_MANAGER=skip)
	go run ./cmd/vmobs demo $(ARGS)

##@ Benchmarks

# bench-scale: N VMs; the idle period and the heartbeat period on every node;
# SCALE_ARGS for the other -scale.* flags (docs/scale.md).
N ?= 1000
SCALE_IDLE ?= 10m
SCALE_HEARTBEAT ?= 60s
SCALE_ARGS ?=

.PHONY: bench-scale
bench-scale: envtest-bin ## Run the scale harness with N VMs (default 1000) on the test control plane: a table, and bin/scale-results.json. See docs/scale.md.
	go test -count=1 -timeout 0 -run '^TestScale$$' -v ./test/scale/ -args -scale.n=$(N) -scale.idle=$(SCALE_IDLE) -scale.heartbeat=$(SCALE_HEARTBEAT) -scale.out=$(CURDIR)/bin/scale-results.json $(SCALE_ARGS)

# bench-guest-probe: the guest probe's cost at N VMs (docs/scale.md); its
# figures join bin/scale-results.json.
.PHONY: bench-guest-probe
bench-guest-probe: envtest-bin ## Measure the guest probes at N VMs (default 1000): guest_probe_qps and guest_probe_latency_p99_ms in bin/scale-results.json. See docs/scale.md.
	go test -count=1 -timeout 0 -run '^TestScaleGuestProbe$$' -v ./test/scale/ -args -scale.guest-probe-n=$(N) -scale.out=$(CURDIR)/bin/scale-results.json $(SCALE_ARGS)

##@ Soak

# soak: the everyday life of a fleet (internal/simulator/everyday.go) for
# SOAK_DURATION of simulated time over SOAK_VMS VMs on SOAK_NODES nodes,
# SOAK_FACTOR times faster than the wall clock (every policy duration and
# every simulator timer divided alike; 1 plays in real time).
SOAK_DURATION ?= 12m
SOAK_VMS ?= 50
SOAK_NODES ?= 6
SOAK_FACTOR ?= 1
SOAK_ARGS ?=

.PHONY: soak
soak: envtest-bin prometheus ## Play a fleet's normal operations (boots, reboots, pauses, queued migrations, post-copy, hotplugs, memory dump, freezes, a drain, ...) on the test control plane with the real controller and Prometheus; fails on any false alarm; writes bin/soak-results.json. See docs/soak.md.
	go test -count=1 -timeout 0 -run '^TestSoak$$' -v ./test/soak/ -args -soak.duration=$(SOAK_DURATION) -soak.vms=$(SOAK_VMS) -soak.nodes=$(SOAK_NODES) -soak.factor=$(SOAK_FACTOR) -soak.out=$(CURDIR)/bin/soak-results.json $(SOAK_ARGS)

##@ kubectl plugin

.PHONY: plugin
plugin: ## Build the kubectl plugin into bin/kubectl-vmobs; put bin/ on PATH and run `kubectl vmobs`.
	CGO_ENABLED=0 go build -trimpath -ldflags "$(LDFLAGS)" -o bin/kubectl-vmobs ./cmd/kubectl-vmobs
