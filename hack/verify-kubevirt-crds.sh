#!/usr/bin/env bash
# Fails if test/crds/kubevirt differs from what hack/kubevirt-crds.sh generates.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$root/hack/kubevirt-crds.sh" "$tmp/crds"
if ! diff -r "$root/test/crds/kubevirt" "$tmp/crds" >"$tmp/diff"; then
  head -n 50 "$tmp/diff" >&2
  echo "test/crds/kubevirt is stale: run hack/kubevirt-crds.sh (make kubevirt-crds) and commit the result." >&2
  exit 1
fi
echo "test/crds/kubevirt is up to date."
