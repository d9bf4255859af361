#!/usr/bin/env bash
# Fails if test/crds/prometheus-operator or test/crds/cert-manager differs
# from what hack/monitoring-crds.sh generates.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$root/hack/monitoring-crds.sh" "$tmp"
stale=0
for d in prometheus-operator cert-manager; do
  if ! diff -r "$root/test/crds/$d" "$tmp/$d" >"$tmp/diff"; then
    head -n 50 "$tmp/diff" >&2
    stale=1
  fi
done
if [ "$stale" != 0 ]; then
  echo "test/crds/prometheus-operator or test/crds/cert-manager is stale: run hack/monitoring-crds.sh (make monitoring-crds) and commit the result." >&2
  exit 1
fi
echo "test/crds/prometheus-operator and test/crds/cert-manager are up to date."
