# Build the vmobs binary in a Go image, ship it on distroless static as the
# nonroot user: no shell, no package manager, nothing to patch but vmobs.
# For those with a Docker engine (make docker-build); `make release` builds
# the same image without one (internal/release).
FROM golang:1.26 AS builder
ARG TARGETOS=linux
ARG TARGETARCH=amd64
ARG VERSION=devel
ARG COMMIT=unknown
WORKDIR /workspace
COPY go.mod go.sum ./
RUN go mod download
COPY api/ api/
COPY cmd/ cmd/
COPY controllers/ controllers/
COPY internal/ internal/
# -tags release: the manager-only binary, without the demo harness.
RUN CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} go build -trimpath -tags release \
    -ldflags="-s -w -X github.com/vmobs/vmobs/internal/version.version=${VERSION} -X github.com/vmobs/vmobs/internal/version.commit=${COMMIT}" \
    -o vmobs ./cmd/vmobs

FROM gcr.io/distroless/static:nonroot
WORKDIR /
COPY --from=builder /workspace/vmobs /vmobs
USER 65532:65532
ENTRYPOINT ["/vmobs", "manager"]
