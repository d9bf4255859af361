package packaging

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/vmobs/vmobs/internal/release"
	"github.com/vmobs/vmobs/test/support"
)

// runActionlint runs bin/actionlint (`make actionlint`) on files from the
// repository's root, with its output.
func runActionlint(t *testing.T, files ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(support.BuiltTool(t, "actionlint", "ACTIONLINT"), append([]string{"-no-color"}, files...)...)
	cmd.Dir = support.RepoRoot(t)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestWorkflowsWithActionlint checks .github/workflows with actionlint: the
// workflow syntax, the events, the expressions and their contexts, the
// actions' inputs, and the run: scripts (through shellcheck when it is on
// PATH). A workflow with a mistake in it must fail, or the check proves
// nothing.
func TestWorkflowsWithActionlint(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(support.RepoRoot(t), ".github", "workflows", "*.y*ml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ci.yaml", "release.yaml"} {
		if !slicesContainsBase(files, want) {
			t.Errorf("no .github/workflows/%s (have %v)", want, files)
		}
	}
	if out, err := runActionlint(t, files...); err != nil {
		t.Errorf("actionlint: %v\n%s", err, out)
	}

	broken := filepath.Join(t.TempDir(), "broken.yaml")
	const wf = "on: push\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n    - run: echo ${{ github.no_such_context }}\n"
	if err := os.WriteFile(broken, []byte(wf), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := runActionlint(t, broken); err == nil || !strings.Contains(out, "no_such_context") {
		t.Errorf("actionlint passed a workflow with an unknown property (err %v):\n%s", err, out)
	}
}

func slicesContainsBase(paths []string, base string) bool {
	for _, p := range paths {
		if filepath.Base(p) == base {
			return true
		}
	}
	return false
}

// TestReleaseWorkflowPublishesTheRelease: the release workflow runs `make
// release` on a tag, pushes the image to the repository install.yaml names
// (internal/release.ImageName) and checks the pushed digest against the one
// install.yaml pins, and puts every kind of file `make release` writes on
// the GitHub release.
func TestReleaseWorkflowPublishesTheRelease(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(support.RepoRoot(t), ".github", "workflows", "release.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		// sigs.k8s.io/yaml reads YAML 1.1, where the key on is true;
		// GitHub reads it as "on".
		On struct {
			Push struct {
				Tags []string `json:"tags"`
			} `json:"push"`
		} `json:"true"`
		Env  map[string]string `json:"env"`
		Jobs map[string]struct {
			Steps []struct {
				Name string `json:"name"`
				Uses string `json:"uses"`
				Run  string `json:"run"`
			} `json:"steps"`
		} `json:"jobs"`
	}
	if err := yaml.Unmarshal(b, &wf); err != nil {
		t.Fatal(err)
	}
	if len(wf.On.Push.Tags) == 0 {
		t.Error("the release workflow runs on no tag")
	}
	if wf.Env["IMAGE"] != release.ImageName {
		t.Errorf("the workflow pushes the image to %q, install.yaml names %q", wf.Env["IMAGE"], release.ImageName)
	}
	var run strings.Builder
	for _, j := range wf.Jobs {
		for _, s := range j.Steps {
			run.WriteString(s.Run + "\n")
		}
	}
	script := run.String()
	for _, want := range []string{
		`make release VERSION="$VERSION"`,
		"push --index dist/image",
		"dist/image.digest", // the pushed digest is the pinned one
		"cosign sign",
		"helm push",
		"install.yaml", "vmobs_\"$VERSION\"_*", "kubectl-vmobs_\"$VERSION\"_*", "vmobs.krew.yaml", "SHA256SUMS",
	} {
		if !strings.Contains(script, want) {
			t.Errorf("the release workflow's scripts lack %q", want)
		}
	}
}
