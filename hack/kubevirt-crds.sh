#!/usr/bin/env bash
# Generates the KubeVirt v1.9 CRDs used by the envtest suites
# (VirtualMachineInstance, VirtualMachine, VirtualMachineInstanceMigration)
# from kubevirt.io/client-go v1.9.0's OpenAPI definitions.
#
# Usage: hack/kubevirt-crds.sh [output-dir]   (default: test/crds/kubevirt)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:-$root/test/crds/kubevirt}
mkdir -p "$out"
out=$(cd "$out" && pwd)

cd "$root/hack/kubevirt-crds"
go run . "$out"
