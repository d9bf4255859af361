#!/usr/bin/env bash
# Puts the test control plane (kube-apiserver, kubectl, etcd, and
# kube-controller-manager for the storage tests) into
# bin/k8s/<version>-<os>-<arch>/, the layout setup-envtest uses, so that
# KUBEBUILDER_ASSETS can point at it. Two ways for the first three, and it
# says which it took:
#
#   download  controller-runtime's setup-envtest (hack/setup-envtest) fetches
#             the official envtest release of K8S_VERSION: seconds on a
#             network that reaches GitHub.
#   build     kube-apiserver and kubectl from k8s.io/kubernetes, etcd from
#             go.etcd.io/etcd, all from the Go module proxy: about 7 minutes
#             from a cold Go cache, for machines that reach only the proxy.
#
# ENVTEST_SOURCE=auto (the default) tries the download and builds when it
# fails; =download or =build take only that way. The download is bounded:
# ENVTEST_INDEX_TIMEOUT (20s) to read setup-envtest's index and find the
# version in it, ENVTEST_DOWNLOAD_TIMEOUT (300s) for the archive, so a
# network that drops packets costs seconds, not a hang. ENVTEST_INDEX names
# another index (setup-envtest --index). Nothing is done when the three
# binaries exist and are newer than their tool modules' go.mod.
#
# CONTROLPLANE_MODULE names the tool module under hack/ that kube-apiserver,
# kubectl and kube-controller-manager are built from (controlplane, which
# pins K8S_VERSION's k8s.io/kubernetes); `make test-min-kube` builds the
# oldest supported release from hack/controlplane-min.
#
# kube-controller-manager is always built (hack/controlplane, the same
# release and linker flags as kube-apiserver): envtest releases do not carry
# it. On top of kube-apiserver's build most of its packages are in the Go
# build cache; docs/development.md says what it costs. CONTROLLER_MANAGER=skip
# leaves it out (this script's own tests, which are about the other three).
#
# KUBECTL=skip leaves kubectl out of the build (a download still brings
# it): `make demo` starts on kube-apiserver and etcd alone and has the demo
# build kube-controller-manager, Prometheus and kubectl while it plays.
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-1.37.2}
ETCD_VERSION=${ETCD_VERSION:-3.6.16}
ENVTEST_SOURCE=${ENVTEST_SOURCE:-auto}
CONTROLLER_MANAGER=${CONTROLLER_MANAGER:-build}
CONTROLPLANE_MODULE=${CONTROLPLANE_MODULE:-controlplane}
KUBECTL=${KUBECTL:-build}
ENVTEST_INDEX=${ENVTEST_INDEX:-}
ENVTEST_INDEX_TIMEOUT=${ENVTEST_INDEX_TIMEOUT:-20}
ENVTEST_DOWNLOAD_TIMEOUT=${ENVTEST_DOWNLOAD_TIMEOUT:-300}
root=$(cd "$(dirname "$0")/.." && pwd)
goos=$(go env GOOS)
goarch=$(go env GOARCH)
out=${ENVTEST_DIR:-$root/bin/k8s/$K8S_VERSION-$goos-$goarch}
SETUP_ENVTEST=${SETUP_ENVTEST:-$root/bin/setup-envtest}
for knob in CONTROLLER_MANAGER KUBECTL; do
  if [[ ${!knob} != build && ${!knob} != skip ]]; then
    echo "control plane: $knob=${!knob}: want build or skip" >&2
    exit 2
  fi
done
case $ENVTEST_SOURCE in
auto | download | build) ;;
*)
  echo "control plane: ENVTEST_SOURCE=$ENVTEST_SOURCE: want auto, download or build" >&2
  exit 2
  ;;
esac
mkdir -p "$out"

# module names the tool module a binary is built from (a function, not an
# associative array: macOS ships bash 3.2).
module() { if [[ $1 == etcd ]]; then echo etcd; else echo "$CONTROLPLANE_MODULE"; fi; }
up_to_date() { [[ -x "$out/$1" && "$out/$1" -nt "$root/hack/$(module "$1")/go.mod" ]]; }

# bounded runs a command for at most $1 seconds where timeout(1) exists
# (GNU coreutils; not on a stock macOS, where the command runs unbounded).
bounded() {
  local secs=$1
  shift
  if command -v timeout >/dev/null; then
    timeout --kill-after=5 "$secs" "$@"
  else
    "$@"
  fi
}

# download fetches the official binaries with setup-envtest into a
# directory of its own, then copies them into $out; it returns non-zero,
# having said why, when any step fails, and leaves $out as it was.
download() {
  local tmp rc=0
  tmp=$(mktemp -d)
  download_via "$tmp" || rc=$?
  # setup-envtest writes its store read-only.
  chmod -R u+w "$tmp" 2>/dev/null || true
  rm -rf "$tmp"
  return "$rc"
}

download_via() { # a scratch directory
  local tmp=$1 start=$SECONDS listing index_args=()
  if [[ ! -x "$SETUP_ENVTEST" || ! "$SETUP_ENVTEST" -nt "$root/hack/setup-envtest/go.mod" ]]; then
    echo "control plane: building setup-envtest from hack/setup-envtest"
    if ! (cd "$root/hack/setup-envtest" && CGO_ENABLED=0 go build -trimpath -o "$SETUP_ENVTEST.tmp" sigs.k8s.io/controller-runtime/tools/setup-envtest); then
      rm -f "$SETUP_ENVTEST.tmp"
      echo "control plane: could not build setup-envtest"
      return 1
    fi
    mv "$SETUP_ENVTEST.tmp" "$SETUP_ENVTEST"
  fi
  if [[ -n $ENVTEST_INDEX ]]; then index_args=(--index "$ENVTEST_INDEX"); fi
  echo "control plane: asking setup-envtest for the envtest release of v$K8S_VERSION ($goos/$goarch, ${ENVTEST_INDEX_TIMEOUT}s to read the index)"
  local rc=0
  listing=$(bounded "$ENVTEST_INDEX_TIMEOUT" "$SETUP_ENVTEST" list "$K8S_VERSION" --os "$goos" --arch "$goarch" \
    --bin-dir "$tmp/store" ${index_args[@]+"${index_args[@]}"} 2>&1) || rc=$?
  if ((rc == 124 || rc == 137)); then
    echo "control plane: setup-envtest could not read its index: no answer within ${ENVTEST_INDEX_TIMEOUT}s"
    return 1
  elif ((rc != 0)); then
    echo "control plane: setup-envtest could not read its index: $(tail -1 <<<"$listing")"
    return 1
  fi
  if ! grep -q "(available)[[:space:]]*v$K8S_VERSION[[:space:]]" <<<"$listing"; then
    echo "control plane: setup-envtest's index has no envtest release of v$K8S_VERSION for $goos/$goarch"
    return 1
  fi
  local path
  if ! path=$(bounded "$ENVTEST_DOWNLOAD_TIMEOUT" "$SETUP_ENVTEST" use "$K8S_VERSION" --os "$goos" --arch "$goarch" \
    --bin-dir "$tmp/store" ${index_args[@]+"${index_args[@]}"} -p path 2>"$tmp/err"); then
    echo "control plane: setup-envtest could not download v$K8S_VERSION within ${ENVTEST_DOWNLOAD_TIMEOUT}s: $(tail -1 "$tmp/err")"
    return 1
  fi
  local bin
  for bin in kube-apiserver kubectl etcd; do
    if [[ ! -f "$path/$bin" ]]; then
      echo "control plane: setup-envtest's release of v$K8S_VERSION has no $bin"
      return 1
    fi
  done
  for bin in kube-apiserver kubectl etcd; do
    # Copied, not moved: a new file, writable and newer than go.mod,
    # which is what up_to_date asks of it.
    # (errexit is off in a function called as a condition.)
    cp "$path/$bin" "$out/$bin.tmp" && chmod 755 "$out/$bin.tmp" && mv "$out/$bin.tmp" "$out/$bin" || return 1
  done
  echo "control plane: downloaded the official kube-apiserver, kubectl and etcd of v$K8S_VERSION with setup-envtest in $((SECONDS - start))s"
}

minor=${K8S_VERSION#*.}; minor=${minor%%.*}
vpkg=k8s.io/component-base/version
k8s_ldflags="-s -w -X $vpkg.gitVersion=v$K8S_VERSION -X $vpkg.gitMajor=1 -X $vpkg.gitMinor=$minor -X $vpkg.gitTreeState=clean -X $vpkg.buildDate=1970-01-01T00:00:00Z"
# client-go's version is what kubectl version prints for its client.
k8s_ldflags="$k8s_ldflags -X k8s.io/client-go/pkg/version.gitVersion=v$K8S_VERSION -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=$minor"

# build compiles one binary with hack/build-tool.sh, which skips it when it
# is up to date.
build() { # package, output, ldflags
  "$root/hack/build-tool.sh" -ldflags "$3" "$root/hack/$(module "$2")" "$1=$out/$2"
}

if up_to_date kube-apiserver && up_to_date etcd && [[ $KUBECTL == skip ]]; then
  echo "control plane: kube-apiserver and etcd are up to date in $out"
elif up_to_date kube-apiserver && up_to_date kubectl && up_to_date etcd; then
  echo "control plane: kube-apiserver, kubectl and etcd are up to date in $out"
elif [[ $ENVTEST_SOURCE != build ]] && download; then
  :
elif [[ $ENVTEST_SOURCE == download ]]; then
  echo "control plane: ENVTEST_SOURCE=download and the download failed" >&2
  exit 1
else
  [[ $ENVTEST_SOURCE == auto ]] && echo "control plane: building from the Go module proxy instead (ENVTEST_SOURCE=build skips the download)"
  build k8s.io/kubernetes/cmd/kube-apiserver kube-apiserver "$k8s_ldflags"
  build go.etcd.io/etcd/server/v3 etcd "-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=v$ETCD_VERSION"
  if [[ $KUBECTL != skip ]]; then build k8s.io/kubernetes/cmd/kubectl kubectl "$k8s_ldflags"; fi
fi
if [[ $CONTROLLER_MANAGER != skip ]]; then
  build k8s.io/kubernetes/cmd/kube-controller-manager kube-controller-manager "$k8s_ldflags"
fi
"$out/kube-apiserver" --version
if [[ $CONTROLLER_MANAGER != skip ]]; then "$out/kube-controller-manager" --version; fi
# Print the first line of each version banner. Not `| head -1`: under
# pipefail, head closing the pipe early kills the writer with SIGPIPE (141).
first_line() { local text; text=$("$@" 2>&1); echo "${text%%$'\n'*}"; }
first_line "$out/etcd" --version
if [[ -x "$out/kubectl" ]]; then first_line "$out/kubectl" version --client; fi
