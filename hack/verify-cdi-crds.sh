#!/usr/bin/env bash
# Fails if test/crds/cdi differs from what hack/cdi-crds.sh generates.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$root/hack/cdi-crds.sh" "$tmp/cdi"
if ! diff -r "$root/test/crds/cdi" "$tmp/cdi" >"$tmp/diff"; then
  head -n 50 "$tmp/diff" >&2
  echo "test/crds/cdi is stale: run hack/cdi-crds.sh (make kubevirt-crds) and commit the result." >&2
  exit 1
fi
echo "test/crds/cdi is up to date."
