package version

import (
	"runtime"
	"strings"
	"testing"
)

func TestGet(t *testing.T) {
	for _, tc := range []struct {
		name                    string
		stamped, stampedCommit  string
		wantVersion, wantCommit string // wantCommit "": not checked
	}{
		// A test binary records no module version; whether it records a
		// VCS revision depends on -buildvcs, so its commit is not checked.
		{name: "unstamped", wantVersion: "devel"},
		{name: "stamped", stamped: "v0.2.0", stampedCommit: "0123abc", wantVersion: "v0.2.0", wantCommit: "0123abc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func(v, c string) { version, commit = v, c }(version, commit)
			version, commit = tc.stamped, tc.stampedCommit
			got := Get()
			if got.Version != tc.wantVersion || (tc.wantCommit != "" && got.Commit != tc.wantCommit) || got.Commit == "" {
				t.Errorf("got %+v, want version %q and commit %q", got, tc.wantVersion, tc.wantCommit)
			}
			if got.Platform != runtime.GOOS+"/"+runtime.GOARCH || got.GoVersion != runtime.Version() {
				t.Errorf("platform %q, Go %q", got.Platform, got.GoVersion)
			}
			if s := got.String(); !strings.HasPrefix(s, got.Version+" (commit "+got.Commit+", "+got.GoVersion) {
				t.Errorf("String() = %q", s)
			}
		})
	}
}
