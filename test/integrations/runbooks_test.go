package integrations

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/vmobs/vmobs/internal/testenv"
	"github.com/vmobs/vmobs/internal/testsupport"
	"github.com/vmobs/vmobs/test/support"
)

// kubectlCall is a kubectl command line in a runbook's shell block: after
// "kubectl" (at the start of a line, or inside $( ), up to a pipe, a
// closing parenthesis, a ; or the end of the line.
var kubectlCall = regexp.MustCompile(`(?:^|\$\()\s*kubectl\s+([^|;)]*)`)

// longFlag is a --flag of such a line, without its value.
var longFlag = regexp.MustCompile(`(?:^|\s)--([a-z][a-z0-9-]*)`)

// TestRunbookKubectlFlags checks every kubectl command in the runbooks
// against the real kubectl (built by `make envtest-bin`): each --flag must
// be one that `kubectl <command> --help` or `kubectl options` lists. An
// on-call engineer who pastes a command with a flag kubectl does not have
// (say, `kubectl logs --field-selector`) gets an error instead of the
// diagnosis.
func TestRunbookKubectlFlags(t *testing.T) {
	kubectl := filepath.Join(testenv.AssetsDir(), "kubectl")
	if _, err := os.Stat(kubectl); err != nil {
		t.Fatalf("kubectl not found at %s: run `make envtest-bin`", kubectl)
	}
	help := map[string]string{}
	helpOf := func(words ...string) string {
		key := strings.Join(words, " ")
		if h, ok := help[key]; ok {
			return h
		}
		out, err := exec.Command(kubectl, append(words, "--help")...).CombinedOutput()
		if err != nil {
			out = nil
		}
		help[key] = string(out)
		return help[key]
	}
	out, err := exec.Command(kubectl, "options").CombinedOutput()
	global := string(out)
	if err != nil || !strings.Contains(global, "--namespace=") {
		t.Fatalf("`kubectl options` lists no --namespace (%v): %s", err, global)
	}

	files, err := filepath.Glob(filepath.Join(support.RepoRoot(t), "docs", "runbooks", "*.md"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no runbooks (%v)", err)
	}
	calls := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, block := range testsupport.CodeBlocks(string(b), "sh") {
			for _, line := range strings.Split(block, "\n") {
				line = strings.TrimSpace(line)
				if strings.HasPrefix(line, "#") {
					continue
				}
				for _, m := range kubectlCall.FindAllStringSubmatch(line, -1) {
					calls++
					words := strings.Fields(m[1])
					if len(words) == 0 {
						continue
					}
					// The command: one word, or two for the commands that
					// have subcommands (kubectl top node, rollout status).
					cmd := []string{words[0]}
					h := helpOf(cmd...)
					if len(words) > 1 && !strings.HasPrefix(words[1], "-") {
						if sub := helpOf(words[0], words[1]); sub != "" && sub != h {
							cmd, h = []string{words[0], words[1]}, sub
						}
					}
					if h == "" {
						t.Errorf("%s: `kubectl %s`: kubectl has no command %q", filepath.Base(f), m[1], words[0])
						continue
					}
					for _, fm := range longFlag.FindAllStringSubmatch(m[1], -1) {
						flag := "--" + fm[1]
						if !strings.Contains(h, flag+"=") && !strings.Contains(h, flag+" ") && !strings.Contains(h, flag+":") &&
							!strings.Contains(global, flag+"=") && !strings.Contains(global, flag+":") {
							t.Errorf("%s: `kubectl %s`: kubectl %s has no flag %s", filepath.Base(f), strings.TrimSpace(m[1]), strings.Join(cmd, " "), flag)
						}
					}
				}
			}
		}
	}
	if calls == 0 {
		t.Error("found no kubectl command in the runbooks' sh blocks")
	}
	t.Logf("%d kubectl commands checked", calls)
}
