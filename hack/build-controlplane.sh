#!/usr/bin/env bash
# Builds the test control plane (kube-apiserver, kubectl, etcd) from the Go
# module proxy into bin/k8s/<version>-<os>-<arch>/, the layout setup-envtest
# uses, so that KUBEBUILDER_ASSETS can point at it. setup-envtest's own
# downloads cannot be reached from our build machines.
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-1.37.2}
ETCD_VERSION=${ETCD_VERSION:-3.6.16}
root=$(cd "$(dirname "$0")/.." && pwd)
goos=$(go env GOOS)
goarch=$(go env GOARCH)
out=${ENVTEST_DIR:-$root/bin/k8s/$K8S_VERSION-$goos-$goarch}
mkdir -p "$out"

minor=${K8S_VERSION#*.}; minor=${minor%%.*}
vpkg=k8s.io/component-base/version
k8s_ldflags="-s -w -X $vpkg.gitVersion=v$K8S_VERSION -X $vpkg.gitMajor=1 -X $vpkg.gitMinor=$minor -X $vpkg.gitTreeState=clean -X $vpkg.buildDate=1970-01-01T00:00:00Z"
# client-go's version is what kubectl version prints for its client.
k8s_ldflags="$k8s_ldflags -X k8s.io/client-go/pkg/version.gitVersion=v$K8S_VERSION -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=$minor"

build() { # dir, package, output
  local dir=$1 pkg=$2 bin=$3 flags=$4
  if [[ -x "$out/$bin" && "$out/$bin" -nt "$root/hack/$dir/go.mod" ]]; then
    echo "control plane: $bin is up to date ($out/$bin)"
    return
  fi
  echo "control plane: building $bin from $pkg (about 6 minutes from a cold Go cache, seconds after)"
  local log start=$SECONDS
  log=$(mktemp)
  # -v names each package as it compiles: count them so a newcomer sees
  # progress rather than a silent terminal.
  if ! (cd "$root/hack/$dir" && CGO_ENABLED=0 go build -v -trimpath -ldflags "$flags" -o "$out/$bin.tmp" "$pkg") 2>&1 |
    tee "$log" | awk -v bin="$bin" -v start="$start" '{ n++; if (n % 200 == 0) { printf "control plane: %s: %d packages compiled\n", bin, n; fflush() } }'; then
    echo "control plane: building $bin failed:" >&2
    tail -50 "$log" >&2
    rm -f "$log"
    exit 1
  fi
  rm -f "$log"
  mv "$out/$bin.tmp" "$out/$bin"
  echo "control plane: built $bin in $((SECONDS - start))s"
}

build controlplane k8s.io/kubernetes/cmd/kube-apiserver kube-apiserver "$k8s_ldflags"
build controlplane k8s.io/kubernetes/cmd/kubectl kubectl "$k8s_ldflags"
build etcd go.etcd.io/etcd/server/v3 etcd "-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=v$ETCD_VERSION"
"$out/kube-apiserver" --version
# Print the first line of each version banner. Not `| head -1`: under
# pipefail, head closing the pipe early kills the writer with SIGPIPE (141).
first_line() { local text; text=$("$@" 2>&1); echo "${text%%$'\n'*}"; }
first_line "$out/etcd" --version
first_line "$out/kubectl" version --client
