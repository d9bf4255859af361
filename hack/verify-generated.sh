#!/usr/bin/env bash
# Fails when a generated file does not match what its generator makes from
# the sources in the working tree: the DeepCopy methods (api/ and
# internal/drain), the CRD and RBAC manifests, the KubeVirt, CDI,
# prometheus-operator and cert-manager CRDs for
# tests, and their copies in the Helm chart.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Copy the sources that generate into a scratch tree and regenerate there, so
# the check never rewrites the working tree.
mkdir -p "$tmp/tree"
cp -r go.mod go.sum api hack internal controllers "$tmp/tree/"
mkdir -p "$tmp/tree/config/crd/bases" "$tmp/tree/config/rbac"
(
  cd "$tmp/tree"
  go tool controller-gen object:headerFile="hack/boilerplate.go.txt" paths="./api/..." paths="./internal/drain/..."
  go tool controller-gen rbac:roleName=manager-role crd paths="./api/..." paths="./controllers/..." \
    output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac
)

stale=0
check() { # generated file in the scratch tree, file in the working tree
  if ! diff -u "$2" "$1" >"$tmp/diff" 2>&1; then
    echo "stale generated file: $2" >&2
    head -40 "$tmp/diff" >&2
    stale=1
  fi
}
check "$tmp/tree/api/v1alpha1/zz_generated.deepcopy.go" api/v1alpha1/zz_generated.deepcopy.go
check "$tmp/tree/internal/drain/zz_generated.deepcopy.go" internal/drain/zz_generated.deepcopy.go
for f in "$tmp"/tree/config/crd/bases/*.yaml; do
  check "$f" "config/crd/bases/$(basename "$f")"
done
check "$tmp/tree/config/rbac/role.yaml" config/rbac/role.yaml
hack/verify-kubevirt-crds.sh || stale=1
hack/verify-monitoring-crds.sh || stale=1
hack/verify-cdi-crds.sh || stale=1
hack/sync-chart.sh --check || stale=1
if [ "$stale" != 0 ]; then
  echo "generated files are stale: run 'make manifests generate kubevirt-crds monitoring-crds' and commit the result" >&2
  exit 1
fi
echo "generated files are up to date"
