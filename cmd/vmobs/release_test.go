package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// harness is what the binaries the release ships (`go build -tags
// release`, the image's vmobs and the krew plugin) must not contain: the
// demo, its KubeVirt simulator, the test control plane and the test
// frameworks. A prefix matches the package and everything under it.
var harness = []string{
	"github.com/vmobs/vmobs/internal/demo",
	"github.com/vmobs/vmobs/internal/simulator",
	"github.com/vmobs/vmobs/internal/testenv",
	"github.com/vmobs/vmobs/internal/kvtest",
	"sigs.k8s.io/controller-runtime/pkg/envtest",
	"sigs.k8s.io/controller-runtime/pkg/internal/testing",
	"github.com/onsi/ginkgo",
	"github.com/onsi/gomega",
	"testing",
}

// deps lists the packages `go build` links into pkgs with the build tags.
func deps(t *testing.T, tags string, pkgs ...string) []string {
	t.Helper()
	args := append([]string{"list", "-deps", "-tags", tags}, pkgs...)
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		t.Fatalf("go %s: %v", strings.Join(args, " "), err)
	}
	return strings.Fields(string(out))
}

func inHarness(pkg string) bool {
	return slices.ContainsFunc(harness, func(h string) bool { return pkg == h || strings.HasPrefix(pkg, h+"/") })
}

func TestReleaseBuildLeavesTheHarnessOut(t *testing.T) {
	shipped := deps(t, "release", ".", "../kubectl-vmobs")
	if !slices.Contains(shipped, "github.com/vmobs/vmobs/internal/app") || !slices.Contains(shipped, "github.com/vmobs/vmobs/internal/kubectlvmobs") {
		t.Fatalf("go list did not list the manager or the plugin: %v", shipped)
	}
	for _, p := range shipped {
		if inHarness(p) {
			t.Errorf("the release build links %s", p)
		}
	}
	// The tag is what keeps them out: the development build has the demo.
	if full := deps(t, "", "."); !slices.ContainsFunc(full, inHarness) {
		t.Error("the development build links none of the harness: this test no longer tests the release tag")
	}
}
