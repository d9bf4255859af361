// Package version holds what the build stamps into vmobs's binaries: the
// release version and the commit, set with -ldflags -X by `make build` and
// `make release`. Without stamping (go run, go test) they fall back to what
// the Go toolchain recorded in the binary's build info.
package version

import (
	"runtime"
	"runtime/debug"
)

// Set by -ldflags "-X github.com/vmobs/vmobs/internal/version.version=v0.2.0
// -X github.com/vmobs/vmobs/internal/version.commit=<sha>".
var (
	version = ""
	commit  = ""
)

// Info is the version of the running binary.
type Info struct {
	// Version is the release (v0.2.0), or "devel" for an unstamped build.
	Version string `json:"version"`
	// Commit is the source commit, or "unknown".
	Commit string `json:"commit"`
	// GoVersion is the toolchain that built the binary.
	GoVersion string `json:"goVersion"`
	// Platform is GOOS/GOARCH.
	Platform string `json:"platform"`
}

// Get returns the version of the running binary.
func Get() Info {
	i := Info{Version: version, Commit: commit, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if i.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			i.Version = bi.Main.Version
		}
		if i.Commit == "" {
			for _, s := range bi.Settings {
				if s.Key == "vcs.revision" {
					i.Commit = s.Value
				}
			}
		}
	}
	if i.Version == "" {
		i.Version = "devel"
	}
	if i.Commit == "" {
		i.Commit = "unknown"
	}
	return i
}

// String is the one line `--version` prints.
func (i Info) String() string {
	return i.Version + " (commit " + i.Commit + ", " + i.GoVersion + ", " + i.Platform + ")"
}
