#!/usr/bin/env bash
# Fails if test/crds/kubevirt differs from what hack/kubevirt-crds.sh
# generates, or if an older release's CRDs (test/crds/kubevirt-vX.Y) were
# generated from other inputs than the generator and module files now in
# hack/kubevirt-crds: those are checked by their stamp, since building five
# releases of kubevirt.io/client-go would add minutes to every `make test`.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$root/hack/kubevirt-crds.sh" v1.9 "$tmp/crds"
if ! diff -r "$root/test/crds/kubevirt" "$tmp/crds" >"$tmp/diff"; then
  head -n 50 "$tmp/diff" >&2
  echo "test/crds/kubevirt is stale: run hack/kubevirt-crds.sh (make kubevirt-crds) and commit the result." >&2
  exit 1
fi
stale=0
for mod in "$root"/hack/kubevirt-crds/kubevirt-v*.mod; do
  v=$(basename "$mod" .mod); v=${v#kubevirt-}
  want=$(INPUTS_ONLY=1 "$root/hack/kubevirt-crds.sh" "$v")
  got=$(cat "$root/test/crds/kubevirt-$v/INPUTS.sha256" 2>/dev/null || true)
  if [[ $want != "$got" ]]; then
    echo "test/crds/kubevirt-$v is stale (generated from other inputs): run hack/kubevirt-crds.sh $v (make kubevirt-crds) and commit the result." >&2
    stale=1
  fi
done
[[ $stale == 0 ]] || exit 1
echo "test/crds/kubevirt and test/crds/kubevirt-v* are up to date."
