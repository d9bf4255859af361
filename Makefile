# vmobs Makefile, in the kubebuilder style. `make help` lists the targets.

# Recipes run in bash and stop at the first failing command, including one
# inside a pipeline.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c

K8S_VERSION ?= 1.37.2
GOOS ?= $(shell go env GOOS)
GOARCH ?= $(shell go env GOARCH)
ENVTEST_DIR ?= $(CURDIR)/bin/k8s/$(K8S_VERSION)-$(GOOS)-$(GOARCH)
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
PKGS ?= ./...

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
generate: ## Generate the DeepCopy methods of the API types.
	$(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" paths="./api/..."

.PHONY: verify-generated
verify-generated: ## Fail when generated files (deepcopy, CRD, RBAC, KubeVirt and monitoring CRDs) are stale.
	hack/verify-generated.sh

.PHONY: kubevirt-crds
kubevirt-crds: ## Regenerate KubeVirt v1.9's CRDs for tests (test/crds/kubevirt) from kubevirt.io/client-go's OpenAPI definitions.
	hack/kubevirt-crds.sh

.PHONY: monitoring-crds
monitoring-crds: ## Regenerate prometheus-operator's and cert-manager's CRDs for tests (test/crds/prometheus-operator, test/crds/cert-manager) from their API types with controller-gen.
	hack/monitoring-crds.sh

.PHONY: dashboards
dashboards: ## Regenerate config/grafana/*.json from the Go that builds the dashboards (internal/dashboards); also part of update-golden.
	go test ./internal/dashboards -run '^TestCommittedDashboards$$' -update

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
test: verify-generated vet lint envtest-bin promtool prometheus kube-state-metrics krew helm ## Check generated files, vet, lint, then run every test (unit, envtest suites) with -race, and the tool modules' tests.
	go test -race -count=1 $(GOTEST_FLAGS) $(PKGS)
	cd hack/kubevirt-crds && go test -count=1 ./...
	cd hack/flux && go test -count=1 $(GOTEST_FLAGS) ./...

FUZZTIME ?= 60s
FUZZ_TARGETS ?= ./internal/verdict:FuzzEvaluate ./internal/netstatus:FuzzParse ./internal/projection:FuzzNetStatusPack ./internal/verdict:FuzzParseHeartbeat ./internal/analyze:FuzzDecode ./internal/guestprobe:FuzzDecodeAnswer

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
update-golden: ## Rewrite every golden file from the current code (analyzer outputs, the accuracy table, fuzz seeds, plugin renderings, Grafana dashboards, Argo CD testdata); review the diff.
	go test ./internal/analyze ./internal/verdict ./internal/kubectlvmobs ./internal/dashboards -update
	go test ./test/integrations -run TestArgoCDHealthOnEngineOutput -update

.PHONY: test-unit
test-unit: ## Run the tests that need no control plane: every package outside test/ (and the tool modules' pure tests).
	go test -race -count=1 $(GOTEST_FLAGS) $(UNIT_PKGS)
	cd hack/kubevirt-crds && go test -count=1 ./...
	cd hack/flux && go test -count=1 -skip '^TestRecipes$$' ./...

##@ Build

.PHONY: envtest-bin
envtest-bin: ## Put kube-apiserver, etcd and kubectl for tests into bin/k8s/: setup-envtest's download, else a build from the Go module proxy (ENVTEST_SOURCE=download|build; skipped when present or when KUBEBUILDER_ASSETS points elsewhere).
	@if [ "$(KUBEBUILDER_ASSETS)" != "$(ENVTEST_DIR)" ]; then \
		echo "control plane: using KUBEBUILDER_ASSETS=$(KUBEBUILDER_ASSETS)"; \
	else \
		K8S_VERSION=$(K8S_VERSION) ENVTEST_DIR=$(ENVTEST_DIR) hack/build-controlplane.sh; \
	fi

.PHONY: build
build: ## Build the vmobs binary into bin/, stamped with VERSION (vmobs --version).
	CGO_ENABLED=0 go build -trimpath -ldflags "$(LDFLAGS)" -o bin/vmobs ./cmd/vmobs

.PHONY: run
run: ## Run the controller against the cluster of the current kubeconfig.
	go run ./cmd/vmobs manager $(ARGS)

.PHONY: docker-build
docker-build: ## Build the container image with a Docker engine (`make release` needs none).
	docker build --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) -t $(IMG) .

.PHONY: release
release: ## Write a release into dist/ (VERSION=vX.Y.Z): install.yaml, binaries, krew archives and manifest, the multi-arch image as an OCI layout, SHA256SUMS (docs/release.md).
	VERSION=$(VERSION) COMMIT=$(COMMIT) IMAGE_REPO=$(IMAGE_REPO) LDFLAGS="$(LDFLAGS)" hack/release.sh

##@ Integrations

.PHONY: promtool
promtool: ## Build Prometheus' promtool into bin/promtool for the alert rule tests, from the Go module proxy (skipped when up to date).
	hack/build-prometheus.sh promtool

.PHONY: prometheus
prometheus: ## Build the Prometheus server into bin/prometheus for the domain-stats tests and the demo, from the Go module proxy (skipped when up to date).
	hack/build-prometheus.sh prometheus

.PHONY: thanos
thanos: ## Build Thanos into bin/thanos for `make test-thanos`, from the Go module proxy (skipped when up to date).
	hack/build-thanos.sh

.PHONY: test-integrations
test-integrations: promtool prometheus envtest-bin krew helm ## Run test/integrations (kustomize manifests and RBAC on a real API server, the Helm chart, Argo CD, kstatus, promtool, kube-state-metrics, domain stats through Prometheus, the dashboard's queries on real data, krew, the release's install.yaml) and hack/flux (the Flux recipes through Flux's own code).
	go test -race -count=1 $(GOTEST_FLAGS) ./test/integrations/...
	cd hack/flux && go test -count=1 $(GOTEST_FLAGS) ./...

# test-thanos is not part of `make test`: Thanos takes far longer to build
# from a cold Go build cache than the test takes to run (docs/domain-stats.md,
# "Thanos Querier"). CI (.ci/run) runs it after `make test`.
.PHONY: test-thanos
test-thanos: envtest-bin prometheus thanos ## Run the domain-stats source against a real Thanos Querier (thanos sidecar and thanos query in front of the test Prometheus, as OpenShift's thanos-querier); apart from `make test` for Thanos' build time. CI runs both.
	THANOS=$(CURDIR)/bin/thanos go test -race -count=1 $(GOTEST_FLAGS) -run '^TestDomainStatsThroughThanos$$' ./test/integrations/

.PHONY: demo
demo: envtest-bin prometheus ## Watch vmobs diagnose a simulated KubeVirt fleet on a throwaway control plane (ARGS="--duration 2m --vms 40 --non-interactive ...").
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

.PHONY: krew
krew: ## Build krew and validate-krew-manifest into bin/ for test/integrations/krew_test.go, from the Go module proxy (skipped when up to date).
	hack/build-krew.sh

.PHONY: helm
helm: ## Build helm into bin/helm for the chart's tests and `make helm-package`, from the Go module proxy (skipped when up to date).
	hack/build-helm.sh

# helm-package: the chart's version is VERSION without its "v", its
# appVersion (and so the default image tag) VERSION itself.
.PHONY: helm-package
helm-package: helm ## Package charts/vmobs as dist/vmobs-X.Y.Z.tgz (VERSION=vX.Y.Z).
	@if [[ ! "$(VERSION)" =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$$ ]]; then \
		echo "helm-package: set VERSION=vX.Y.Z (got '$(VERSION)')" >&2; exit 2; \
	fi
	hack/sync-chart.sh --check
	bin/helm lint --strict charts/vmobs
	bin/helm package charts/vmobs --version $(patsubst v%,%,$(VERSION)) --app-version $(VERSION) --destination dist

.PHONY: kube-state-metrics
kube-state-metrics: ## Build kube-state-metrics into bin/kube-state-metrics for test/integrations/ksm_real_test.go, from the Go module proxy (skipped when up to date).
	hack/build-kube-state-metrics.sh
