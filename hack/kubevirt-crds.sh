#!/usr/bin/env bash
# Generates the KubeVirt CRDs used by the envtest suites
# (VirtualMachineInstance, VirtualMachine, VirtualMachineInstanceMigration)
# from a kubevirt.io/client-go release's OpenAPI definitions: v1.9 (the
# default, hack/kubevirt-crds/go.mod) into test/crds/kubevirt, and each older
# release vmobs supports (hack/kubevirt-crds/kubevirt-vX.Y.mod) into
# test/crds/kubevirt-vX.Y, beside a stamp of the inputs they were generated
# from (INPUTS.sha256), which hack/verify-kubevirt-crds.sh checks without
# building every release.
#
# Usage: hack/kubevirt-crds.sh [VERSION|all] [output-dir]
#   VERSION is v1.9 (default) or one of the releases of OLDER below.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
gen=$root/hack/kubevirt-crds
OLDER="v1.5 v1.6 v1.7 v1.8"
version=${1:-v1.9}

if [[ $version == all ]]; then
  for v in v1.9 $OLDER; do "$0" "$v"; done
  exit 0
fi

# inputs_sha256 VERSION prints the digest of what that release's CRDs are a
# function of: the generator and the release's module files.
inputs_sha256() {
  if [[ $1 == v1.9 ]]; then
    (cd "$gen" && cat main.go go.mod go.sum) | sha256sum | cut -d' ' -f1
  else
    (cd "$gen" && cat main.go "kubevirt-$1.mod" "kubevirt-$1.sum") | sha256sum | cut -d' ' -f1
  fi
}
if [[ ${INPUTS_ONLY:-} == 1 ]]; then
  inputs_sha256 "$version"
  exit 0
fi

case $version in
  v1.9) modfile=go.mod; dflt=$root/test/crds/kubevirt ;;
  *)
    modfile=kubevirt-$version.mod
    [[ -f $gen/$modfile ]] || { echo "kubevirt-crds: no $modfile: supported releases are v1.9 $OLDER" >&2; exit 2; }
    dflt=$root/test/crds/kubevirt-$version ;;
esac
out=${2:-$dflt}
mkdir -p "$out"
out=$(cd "$out" && pwd)

cd "$gen"
go run -modfile="$modfile" . "$out"
if [[ $version != v1.9 ]]; then
  inputs_sha256 "$version" >"$out/INPUTS.sha256"
fi
