#!/usr/bin/env bash
# Builds krew's two commands from the Go module proxy (the version pinned in
# hack/krew/go.mod) into bin/, for test/integrations/krew_test.go:
# validate-krew-manifest, the check the krew-index runs on every plugin
# manifest, and krew, which installs the plugin from a release archive.
# Both are skipped when they exist and are newer than hack/krew/go.mod and
# this script; KREW=<path> and VALIDATE_KREW_MANIFEST=<path> name other
# outputs. About 1 CPU-minute from a cold Go build cache (10 minutes on 2
# cores shared with other builds), seconds after.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
mod=$root/hack/krew
version=$(cd "$mod" && go list -m -f '{{.Version}}' sigs.k8s.io/krew)
# The stamps krew's own release build sets (`kubectl krew version`).
ldflags="-s -w -X sigs.k8s.io/krew/internal/version.gitTag=$version -X sigs.k8s.io/krew/internal/version.gitCommit=$version"

for cmd in krew validate-krew-manifest; do
  case $cmd in
  krew) out=${KREW:-$root/bin/krew} ;;
  validate-krew-manifest) out=${VALIDATE_KREW_MANIFEST:-$root/bin/validate-krew-manifest} ;;
  esac
  if [[ -x "$out" && "$out" -nt "$mod/go.mod" && "$out" -nt "$0" ]]; then
    echo "$cmd: up to date ($out)"
    continue
  fi
  echo "$cmd: building sigs.k8s.io/krew/cmd/$cmd $version (minutes from a cold Go build cache, seconds after)"
  mkdir -p "$(dirname "$out")"
  start=$SECONDS
  if ! (cd "$mod" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$out.tmp" "sigs.k8s.io/krew/cmd/$cmd"); then
    echo "$cmd: build failed" >&2
    rm -f "$out.tmp"
    exit 1
  fi
  mv "$out.tmp" "$out"
  echo "$cmd: built in $((SECONDS - start))s"
done
