#!/usr/bin/env bash
# Writes a release into dist/; run by `make release VERSION=vX.Y.Z`, which
# passes VERSION, COMMIT, IMAGE_REPO and LDFLAGS (the version stamp).
#
#   dist/install.yaml                      CRD, RBAC, namespace, the manager pinned to IMAGE_REPO:VERSION@DIGEST
#   dist/vmobs_VERSION_linux_ARCH          the manager-only binary (-tags release), amd64 arm64 s390x
#   dist/kubectl-vmobs_VERSION_OS_ARCH     the kubectl plugin, linux and darwin
#   dist/kubectl-vmobs_VERSION_OS_ARCH.tar.gz, dist/vmobs.krew.yaml   the krew archives and manifest
#   dist/image/, dist/image.tar            the image, multi-arch, as an OCI layout (and that layout as a tar)
#   dist/image.digest                      the image index's digest, which install.yaml pins
#   dist/SHA256SUMS                        over every file in dist/
#
# No container engine is needed: internal/release builds the image from the
# static binaries. Every binary is CGO_ENABLED=0, -trimpath, stamped with the
# version. Files and the image carry the commit's time, so the same commit
# gives the same archives and image digests. docs/release.md says how to
# publish them.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
start=$SECONDS

VERSION=${VERSION:-}
IMAGE_REPO=${IMAGE_REPO:-ghcr.io/vmobs/vmobs}
SOURCE_URL=${SOURCE_URL:-https://github.com/vmobs/vmobs}
DIST=${DIST:-$root/dist}
if [[ ! $VERSION =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]]; then
  echo "release: VERSION=${VERSION:-<unset>} is not a release version: make release VERSION=vX.Y.Z" >&2
  exit 2
fi
if [[ -z ${LDFLAGS:-} ]]; then
  echo "release: LDFLAGS (the version stamp) is unset: run it as make release VERSION=$VERSION" >&2
  exit 2
fi
COMMIT=${COMMIT:-$(git rev-parse HEAD)}
# The commit's time, for reproducible files and image; SOURCE_DATE_EPOCH
# as in reproducible-builds.org's convention wins.
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
if [[ -n $(git status --porcelain --untracked-files=no 2>/dev/null) ]]; then
  echo "release: warning: the work tree has uncommitted changes; the binaries say commit $COMMIT all the same" >&2
fi

# Platforms: the manager runs where KubeVirt runs; the plugin where kubectl
# does.
manager_platforms=(linux/amd64 linux/arm64 linux/s390x)
plugin_platforms=(linux/amd64 linux/arm64 linux/s390x darwin/amd64 darwin/arm64)

rm -rf "$DIST"
mkdir -p "$DIST"
echo "release: $VERSION (commit $COMMIT) into $DIST"

build() { # cmd, os/arch, output
  local cmd=$1 platform=$2 out=$3 t=$SECONDS
  CGO_ENABLED=0 GOOS=${platform%/*} GOARCH=${platform#*/} \
    go build -trimpath -tags release -ldflags "-s -w $LDFLAGS" -o "$out" "./cmd/$cmd"
  echo "release: built $(basename "$out") in $((SECONDS - t))s"
}

manager_args=()
for p in "${manager_platforms[@]}"; do
  out=$DIST/vmobs_${VERSION}_${p%/*}_${p#*/}
  build vmobs "$p" "$out"
  manager_args+=("$p=$out")
done
plugin_args=()
for p in "${plugin_platforms[@]}"; do
  out=$DIST/kubectl-vmobs_${VERSION}_${p%/*}_${p#*/}
  build kubectl-vmobs "$p" "$out"
  plugin_args+=("$p=$out")
done

# The stamp is where make and internal/version expect it.
host=$DIST/vmobs_${VERSION}_$(go env GOOS)_$(go env GOARCH)
if [[ -x $host ]]; then
  got=$("$host" --version)
  if [[ $got != "vmobs $VERSION (commit $COMMIT,"* ]]; then
    echo "release: $host --version says \"$got\", want vmobs $VERSION (commit $COMMIT, ...)" >&2
    exit 1
  fi
  echo "release: $got"
fi

tool=$(mktemp -d)
trap 'rm -rf "$tool"' EXIT
go build -o "$tool/release" ./hack/release

t=$SECONDS
"$tool/release" image -version "$VERSION" -revision "$COMMIT" -source "$SOURCE_URL" -created "$SOURCE_DATE_EPOCH" \
  -license LICENSE -out "$DIST/image" -tar "$DIST/image.tar" -digest-file "$DIST/image.digest" "${manager_args[@]}"
echo "release: wrote the image (${manager_platforms[*]}) as an OCI layout in image/ and image.tar in $((SECONDS - t))s"

# The manifest names the image by the index's digest, which a push of the
# layout (crane push --index) keeps: what runs is what was built.
"$tool/release" install -version "$VERSION" -image-repo "$IMAGE_REPO" -image-digest-file "$DIST/image.digest" -config config -out "$DIST/install.yaml"
echo "release: wrote install.yaml (image $IMAGE_REPO:$VERSION@$(cat "$DIST/image.digest"))"

"$tool/release" krew -version "$VERSION" -source "$SOURCE_URL" -created "$SOURCE_DATE_EPOCH" -license LICENSE \
  -template hack/krew/vmobs.yaml.tmpl -dir "$DIST" "${plugin_args[@]}"
echo "release: wrote the krew archives and vmobs.krew.yaml"

# The Helm chart, once the repository has one.
if make -n helm-package >/dev/null 2>&1; then
  make helm-package VERSION="$VERSION"
fi

# Every file at the top of dist/; image/'s blobs are named by their digests
# and image.tar holds them all.
(
  cd "$DIST"
  files=()
  while IFS= read -r f; do files+=("${f#./}"); done < <(find . -maxdepth 1 -type f ! -name SHA256SUMS | LC_ALL=C sort)
  if command -v sha256sum >/dev/null; then
    sha256sum -- "${files[@]}" >SHA256SUMS
  else
    shasum -a 256 -- "${files[@]}" >SHA256SUMS
  fi
)
echo "release: wrote SHA256SUMS"
echo "release: $VERSION done in $((SECONDS - start))s:"
ls -l "$DIST"
