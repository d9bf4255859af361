//go:build release

package main

import (
	"context"
	"fmt"
)

// The release build, the one in the image, leaves the demo out: it would
// carry the KubeVirt simulator and the test control plane's harness
// (internal/testenv, envtest) into every cluster. `vmobs demo` there says
// where the demo is.
func init() {
	register("demo", command{
		summary: "not in release builds: run `make demo` in a clone of the source",
		run: func(ctx context.Context, _ []string) int {
			fmt.Fprintln(stderr(ctx), "vmobs demo: this is a release build, which leaves the demo out; run `make demo` in a clone of https://github.com/vmobs/vmobs")
			return exitUsage
		},
	})
}
