#!/usr/bin/env bash
# Builds Prometheus' promtool from the Go module proxy (the version pinned in
# hack/promtool/go.mod) into bin/promtool, for the alert rule tests
# (`promtool check rules`, `promtool test rules`). Skipped when bin/promtool
# exists and is newer than hack/promtool/go.mod and this script;
# PROMTOOL=<path> names another output. Prometheus' release downloads cannot
# be reached from our build machines, so this is the only way in. About 3-4
# minutes on 2 cores from a cold Go build cache.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out=${PROMTOOL:-$root/bin/promtool}
mod=$root/hack/promtool

if [[ -x "$out" && "$out" -nt "$mod/go.mod" && "$out" -nt "$0" ]]; then
  echo "promtool: up to date ($out)"
  exit 0
fi

version=$(cd "$mod" && go list -m -f '{{.Version}}' github.com/prometheus/prometheus)
echo "promtool: building github.com/prometheus/prometheus/cmd/promtool $version (3-4 minutes from a cold Go build cache, seconds after)"
mkdir -p "$(dirname "$out")"
start=$SECONDS
log=$(mktemp)
vpkg=github.com/prometheus/common/version
# Prometheus tags v3.x.y as module versions v0.3xx.y: print the release the
# way Prometheus' own builds do.
minor=${version#v0.}
release="3.$((10#${minor:1:2})).${minor#*.}"
# remove_all_sd leaves out Prometheus' service discovery plugins (AWS, Azure,
# GCE, Kubernetes, ...): the rule commands do not use them, and the build is
# a fifth smaller.
tags=remove_all_sd
ldflags="-s -w -X $vpkg.Version=$release -X $vpkg.Revision=$version -X $vpkg.Branch=go-module-proxy"
if ! (cd "$mod" && CGO_ENABLED=0 go build -v -trimpath -tags "$tags" -ldflags "$ldflags" -o "$out.tmp" github.com/prometheus/prometheus/cmd/promtool) 2>&1 |
  tee "$log" | awk '{ n++; if (n % 200 == 0) { printf "promtool: %d packages compiled\n", n; fflush() } }'; then
  echo "promtool: build failed:" >&2
  tail -50 "$log" >&2
  rm -f "$log" "$out.tmp"
  exit 1
fi
rm -f "$log"
mv "$out.tmp" "$out"
echo "promtool: built in $((SECONDS - start))s"
text=$("$out" --version 2>&1); echo "${text%%$'\n'*}" # not | head: SIGPIPE under pipefail
