#!/usr/bin/env bash
# Builds third-party commands from a tool module of ours (hack/<tool>/go.mod
# pins their version) with the Go module proxy as the only source: the
# release downloads of Prometheus, Thanos, Helm, krew and the control plane
# cannot be reached from our build machines. The Makefile's Tools section
# says what each tool is built with; docs/release.md, "Tools", what it costs.
#
#   hack/build-tool.sh [flags] MODULE_DIR PACKAGE=OUTPUT...
#
#   -tags TAGS          build tags
#   -ldflags FLAGS      linker flags, where {version:MODULE} becomes the
#                       version MODULE_DIR/go.mod pins MODULE at (v0.316.0)
#                       and {release:MODULE} the release MODULE's VERSION
#                       file names (3.16.0), the file Prometheus' and Thanos'
#                       own release builds stamp
#   -share-cache        build as `go vet` and `go test` do (cgo as the
#                       toolchain decides, no -trimpath), so that the packages
#                       a tool shares with our module come from their Go build
#                       cache entries; otherwise CGO_ENABLED=0 and -trimpath
#   -version-args ARGS  run OUTPUT ARGS after a build and print its first line
#
# An OUTPUT is skipped when it exists and is newer than MODULE_DIR/go.mod
# and this script; delete it to rebuild after changing its flags.
set -euo pipefail

usage() {
  echo "usage: hack/build-tool.sh [-tags TAGS] [-ldflags FLAGS] [-share-cache] [-version-args ARGS] MODULE_DIR PACKAGE=OUTPUT..." >&2
  exit 2
}

tags= ldflags= share_cache= version_args=
while [[ $# -gt 0 && $1 == -* ]]; do
  case $1 in
  -tags) tags=${2?}; shift 2 ;;
  -ldflags) ldflags=${2?}; shift 2 ;;
  -share-cache) share_cache=1; shift ;;
  -version-args) version_args=${2?}; shift 2 ;;
  *) usage ;;
  esac
done
[[ $# -ge 2 ]] || usage
mod=$(cd "$1" && pwd)
shift
label=$(basename "$mod")
script="${BASH_SOURCE[0]}"

# prepare expands the {version:MODULE} and {release:MODULE} of the linker
# flags and sets build_flags: once, and only when something is to be built.
build_flags=()
prepare() {
  local re='\{(version|release):([^}]+)\}' kind module value
  while [[ $ldflags =~ $re ]]; do
    kind=${BASH_REMATCH[1]} module=${BASH_REMATCH[2]}
    if [[ $kind == version ]]; then
      value=$(cd "$mod" && go list -m -f '{{.Version}}' "$module")
    else
      value=$(cd "$mod" && go mod download "$module" && cat "$(go list -m -f '{{.Dir}}' "$module")/VERSION")
    fi
    ldflags=${ldflags//"${BASH_REMATCH[0]}"/$value}
  done
  build_flags=(-v)
  if [[ -z $share_cache ]]; then
    export CGO_ENABLED=0
    build_flags+=(-trimpath)
  fi
  if [[ -n $tags ]]; then build_flags+=(-tags "$tags"); fi
  if [[ -n $ldflags ]]; then build_flags+=(-ldflags "$ldflags"); fi
}

for arg in "$@"; do
  pkg=${arg%%=*} out=${arg#*=}
  [[ $arg == *=* && -n $pkg && -n $out ]] || usage
  [[ $out == /* ]] || out=$PWD/$out # the build runs in $mod
  name=$(basename "$out")
  if [[ -x "$out" && "$out" -nt "$mod/go.mod" && "$out" -nt "$script" ]]; then
    echo "$label: $name is up to date ($out)"
    continue
  fi
  if [[ ${#build_flags[@]} -eq 0 ]]; then prepare; fi
  echo "$label: building $name from $pkg (minutes from a cold Go build cache, seconds after)"
  mkdir -p "$(dirname "$out")"
  start=$SECONDS
  log=$(mktemp)
  # -v names each package as it compiles: count them, so that a cold build
  # shows progress rather than a silent terminal.
  progress="$label: $name"
  if [[ $name == "$label" ]]; then progress=$name; fi
  if ! (cd "$mod" && go build "${build_flags[@]}" -o "$out.tmp" "$pkg") 2>&1 |
    tee "$log" | awk -v p="$progress" '{ n++; if (n % 200 == 0) { printf "%s: %d packages compiled\n", p, n; fflush() } }'; then
    echo "$label: building $name failed:" >&2
    tail -50 "$log" >&2
    rm -f "$log" "$out.tmp"
    exit 1
  fi
  rm -f "$log"
  mv "$out.tmp" "$out"
  echo "$label: built $name in $((SECONDS - start))s"
  if [[ -n $version_args ]]; then
    # Not `| head -1`: under pipefail, head closing the pipe early kills
    # the writer with SIGPIPE (141).
    # shellcheck disable=SC2086 # the arguments split on spaces
    text=$("$out" $version_args 2>&1)
    echo "${text%%$'\n'*}"
  fi
done
