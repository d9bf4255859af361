#!/usr/bin/env bash
# Builds the helm command from the Go module proxy (the version pinned in
# hack/helm/go.mod) into bin/helm, for the chart's tests
# (test/integrations/helm_test.go: lint, template, install onto the test
# control plane) and `make helm-package`. Skipped when bin/helm exists and is
# newer than hack/helm/go.mod and this script; HELM=<path> names another
# output. Helm's release downloads cannot be reached from our build machines.
# From an empty Go build cache: 434 s user + 148 s system CPU (27 minutes on
# two cores busy with other builds, 1.2 GB of cache); with the cache `go vet`
# and `go test` leave for our module, about 7 minutes on the same machine;
# seconds when up to date.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out=${HELM:-$root/bin/helm}
mod=$root/hack/helm
pkg=helm.sh/helm/v4

if [[ -x "$out" && "$out" -nt "$mod/go.mod" && "$out" -nt "$0" ]]; then
  echo "helm: up to date ($out)"
  exit 0
fi

version=$(cd "$mod" && go list -m -f '{{.Version}}' "$pkg")
echo "helm: building $pkg/cmd/helm $version (minutes from a cold Go build cache, seconds after)"
mkdir -p "$(dirname "$out")"
start=$SECONDS
log=$(mktemp)
# The version stamps Helm's own Makefile sets; an empty metadata makes
# `helm version` print the release, not "+unreleased".
vpkg=$pkg/internal/version
ldflags="-s -w -X $vpkg.version=$version -X $vpkg.metadata= -X $vpkg.gitCommit=$version -X $vpkg.gitTreeState=clean"
# Built as `go vet` and `go test` build (no -trimpath, cgo as the Go
# toolchain decides), so that the packages helm shares with our module come
# from the Go build cache: hack/helm/go.mod pins them to our versions.
if ! (cd "$mod" && go build -v -ldflags "$ldflags" -o "$out.tmp" "$pkg/cmd/helm") 2>&1 |
  tee "$log" | awk '{ n++; if (n % 100 == 0) { printf "helm: %d packages compiled\n", n; fflush() } }'; then
  echo "helm: build failed:" >&2
  tail -50 "$log" >&2
  rm -f "$log" "$out.tmp"
  exit 1
fi
rm -f "$log"
mv "$out.tmp" "$out"
echo "helm: built in $((SECONDS - start))s"
"$out" version --short
