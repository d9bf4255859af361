#!/usr/bin/env bash
# Builds Thanos from the Go module proxy (the version pinned in
# hack/thanos/go.mod) into bin/thanos, for
# test/integrations/thanos_test.go, which puts `thanos sidecar` and
# `thanos query` in front of the test Prometheus, as OpenShift's
# thanos-querier stands in front of its Prometheus.
#
# Skipped when bin/thanos exists and is newer than hack/thanos/go.mod and
# this script; THANOS=<path> names another output. Thanos' release
# downloads cannot be reached from our build machines, so this is the only
# way in. Build figures: see docs/domain-stats.md, "Thanos Querier".
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out=${THANOS:-$root/bin/thanos}
mod=$root/hack/thanos
pkg=github.com/thanos-io/thanos

if [[ -x "$out" && "$out" -nt "$mod/go.mod" && "$out" -nt "$0" ]]; then
  echo "thanos: up to date ($out)"
  exit 0
fi

version=$(cd "$mod" && go list -m -f '{{.Version}}' "$pkg")
echo "thanos: building $pkg/cmd/thanos $version (minutes from a cold Go build cache, seconds after)"
mkdir -p "$(dirname "$out")"
start=$SECONDS
log=$(mktemp)
# The tags and version stamps of Thanos' own release build (.promu.yml):
# slicelabels picks the labels implementation Thanos is written for.
vpkg=github.com/prometheus/common/version
tags=netgo,slicelabels
ldflags="-s -w -X $vpkg.Version=${version#v} -X $vpkg.Revision=$version -X $vpkg.Branch=go-module-proxy"
if ! (cd "$mod" && CGO_ENABLED=0 go build -v -trimpath -tags "$tags" -ldflags "$ldflags" -o "$out.tmp" "$pkg/cmd/thanos") 2>&1 |
  tee "$log" | awk '{ n++; if (n % 200 == 0) { printf "thanos: %d packages compiled\n", n; fflush() } }'; then
  echo "thanos: build failed:" >&2
  tail -50 "$log" >&2
  rm -f "$log" "$out.tmp"
  exit 1
fi
rm -f "$log"
mv "$out.tmp" "$out"
echo "thanos: built in $((SECONDS - start))s"
text=$("$out" --version 2>&1); echo "${text%%$'\n'*}" # not | head: SIGPIPE under pipefail
