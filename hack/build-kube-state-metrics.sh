#!/usr/bin/env bash
# Builds kube-state-metrics from the Go module proxy (the version pinned in
# hack/kube-state-metrics/go.mod) into bin/kube-state-metrics, for
# test/integrations/ksm_real_test.go, which runs it with
# config/kube-state-metrics/vmobservation-crs.yaml against a real API server.
# Skipped when bin/kube-state-metrics exists and is newer than
# hack/kube-state-metrics/go.mod and this script; KUBE_STATE_METRICS=<path>
# names another output. About 4 CPU-minutes from a cold Go build cache (10
# minutes on 2 cores shared with other builds), seconds after.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out=${KUBE_STATE_METRICS:-$root/bin/kube-state-metrics}
mod=$root/hack/kube-state-metrics
pkg=k8s.io/kube-state-metrics/v2

if [[ -x "$out" && "$out" -nt "$mod/go.mod" && "$out" -nt "$0" ]]; then
  echo "kube-state-metrics: up to date ($out)"
  exit 0
fi

version=$(cd "$mod" && go list -m -f '{{.Version}}' "$pkg")
clientgo=$(cd "$mod" && go list -m -f '{{.Version}}' k8s.io/client-go)
echo "kube-state-metrics: building $pkg $version (4-10 minutes from a cold Go build cache, seconds after)"
mkdir -p "$(dirname "$out")"
start=$SECONDS
log=$(mktemp)
# The version stamps kube-state-metrics' own Makefile sets.
vpkg=github.com/prometheus/common/version
ldflags="-s -w -X $vpkg.Version=$version -X $vpkg.Revision=$version -X $vpkg.Branch=go-module-proxy -X $pkg/pkg/app.ClientGoVersion=$clientgo"
if ! (cd "$mod" && CGO_ENABLED=0 go build -v -trimpath -ldflags "$ldflags" -o "$out.tmp" "$pkg") 2>&1 |
  tee "$log" | awk '{ n++; if (n % 100 == 0) { printf "kube-state-metrics: %d packages compiled\n", n; fflush() } }'; then
  echo "kube-state-metrics: build failed:" >&2
  tail -50 "$log" >&2
  rm -f "$log" "$out.tmp"
  exit 1
fi
rm -f "$log"
mv "$out.tmp" "$out"
echo "kube-state-metrics: built in $((SECONDS - start))s"
text=$("$out" version 2>&1); echo "${text%%$'\n'*}" # not | head: SIGPIPE under pipefail
