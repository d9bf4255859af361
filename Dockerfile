# Build the vmobs binary in a Go image, ship it on distroless static as the
# nonroot user: no shell, no package manager, nothing to patch but vmobs.
FROM golang:1.26 AS builder
ARG TARGETOS=linux
ARG TARGETARCH=amd64
WORKDIR /workspace
COPY go.mod go.sum ./
RUN go mod download
COPY api/ api/
COPY cmd/ cmd/
COPY controllers/ controllers/
COPY internal/ internal/
RUN CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} go build -trimpath -ldflags="-s -w" -o vmobs ./cmd/vmobs

FROM gcr.io/distroless/static:nonroot
WORKDIR /
COPY --from=builder /workspace/vmobs /vmobs
USER 65532:65532
ENTRYPOINT ["/vmobs", "manager"]
