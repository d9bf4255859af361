package docs

import (
	"bufio"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/vmobs/vmobs/internal/kubectlvmobs/plugintest"
)

// root is the repository, from this package.
var root = filepath.Join("..", "..")

func read(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// mdLink matches an inline Markdown link or image: [text](target).
var mdLink = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)\)`)

// prose is a Markdown file's lines outside fenced code blocks, where links
// and headings mean nothing.
func prose(md string) []string {
	var out []string
	inFence := false
	for line := range strings.Lines(md) {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		if !inFence {
			out = append(out, strings.TrimRight(line, "\n"))
		}
	}
	return out
}

// links are the relative link targets of a Markdown file, in order.
func links(md string) []string {
	var out []string
	for _, line := range prose(md) {
		for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
			if u, err := url.Parse(m[1]); err == nil && u.Scheme == "" {
				out = append(out, m[1])
			}
		}
	}
	return out
}

// anchors are the fragment names GitHub gives a Markdown file's headings:
// lower case, punctuation but hyphens and underscores dropped, spaces as
// hyphens, "-1", "-2", ... after a repeated one.
func anchors(md string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, line := range prose(md) {
		text, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " ")
		if !ok || !strings.HasPrefix(line, "#") {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(text)) {
			switch {
			case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteByte('-')
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// markdownFiles are README.md and every Markdown file under docs/.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, _ := filepath.Rel(root, path)
			files = append(files, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestRelativeLinks checks that every relative link of the README and of
// docs/ names a file or directory that exists and, with a fragment, a
// heading of that Markdown file.
func TestRelativeLinks(t *testing.T) {
	files := markdownFiles(t)
	if len(files) < 20 {
		t.Fatalf("found %d Markdown files; docs/ was not read", len(files))
	}
	for _, file := range files {
		md := read(t, file)
		for _, target := range links(md) {
			path, fragment, _ := strings.Cut(target, "#")
			dest := file
			if path != "" {
				dest = filepath.ToSlash(filepath.Join(filepath.Dir(file), path))
				if _, err := os.Stat(filepath.Join(root, dest)); err != nil {
					t.Errorf("%s: link %s: %s does not exist", file, target, dest)
					continue
				}
			}
			if fragment != "" && strings.HasSuffix(dest, ".md") && !anchors(read(t, dest))[fragment] {
				t.Errorf("%s: link %s: %s has no heading #%s", file, target, dest, fragment)
			}
		}
	}
}

// TestIndexListsEveryPage checks that docs/README.md links every other file
// of docs/ (the runbooks' included), so a new page cannot go unlisted.
func TestIndexListsEveryPage(t *testing.T) {
	indexed := map[string]bool{}
	for _, target := range links(read(t, "docs/README.md")) {
		path, _, _ := strings.Cut(target, "#")
		indexed[filepath.ToSlash(filepath.Join("docs", path))] = true
	}
	n := 0
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		n++
		if rel != "docs/README.md" && !indexed[rel] {
			t.Errorf("%s is not in the index, docs/README.md: add a line under operate, reference or develop", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 20 {
		t.Fatalf("found %d files in docs/; it was not read", n)
	}
}

// table is the first column of the Markdown table under the heading
// "## <heading>" or "### <heading>" of the Markdown file name (for its
// messages) whose text is doc.
func table(t *testing.T, name, doc, heading string) []string {
	t.Helper()
	at := regexp.MustCompile(`(?m)^###? ` + regexp.QuoteMeta(heading) + `\n`).FindStringIndex(doc)
	if at == nil {
		t.Fatalf("%s has no heading %q", name, heading)
	}
	var cells []string
	for _, line := range strings.Split(doc[at[1]:], "\n") {
		if strings.HasPrefix(line, "#") {
			break
		}
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "|---") {
			continue
		}
		cells = append(cells, strings.TrimSpace(strings.Split(line, "|")[1]))
	}
	if len(cells) < 3 {
		t.Fatalf("%s %q: %d table rows; the table was not read", name, heading, len(cells))
	}
	return cells[1:] // the header row
}

var (
	// makeRef is a target in the README's make table: `make NAME`.
	makeRef = regexp.MustCompile("`make ([a-z0-9-]+)`")
	// documentedTarget is a target `make help` lists: one with a "##"
	// comment. A target without one (all) is internal and need not be in
	// the README.
	documentedTarget = regexp.MustCompile(`(?m)^([a-zA-Z0-9_-]+):[^#\n]*##`)
)

// TestMakeTable checks the README's make table against the Makefile: every
// target it names exists and is documented, and every documented target is
// in it.
func TestMakeTable(t *testing.T) {
	inReadme := map[string]bool{}
	for _, cell := range table(t, "README.md", read(t, "README.md"), "Make targets") {
		refs := makeRef.FindAllStringSubmatch(cell, -1)
		if len(refs) == 0 {
			t.Errorf("README.md make table: row %q names no `make TARGET`", cell)
		}
		for _, m := range refs {
			inReadme[m[1]] = true
		}
	}
	inMakefile := map[string]bool{}
	for _, m := range documentedTarget.FindAllStringSubmatch(read(t, "Makefile"), -1) {
		inMakefile[m[1]] = true
	}
	if len(inMakefile) < 10 {
		t.Fatalf("Makefile: %d documented targets; the Makefile was not read", len(inMakefile))
	}
	for _, name := range sortedKeys(inReadme) {
		if !inMakefile[name] {
			t.Errorf("README.md lists make %s, which the Makefile does not define with a ## description", name)
		}
	}
	for _, name := range sortedKeys(inMakefile) {
		if !inReadme[name] {
			t.Errorf("the Makefile documents make %s, which the README's make table does not list", name)
		}
	}
}

// notInLayout are top-level directories the layout table leaves out: build
// outputs and scratch space, all git-ignored.
var notInLayout = []string{"bin", "dist", "tmp"}

// TestLayoutTable checks the layout table (docs/development.md) against
// the tree: every path it lists exists, every top-level directory is
// listed (itself or a directory inside it), and every package directory
// under internal/ is named in a row (a row may name a few packages that
// serve one purpose, separated by commas).
func TestLayoutTable(t *testing.T) {
	var paths []string
	for _, cell := range table(t, "docs/development.md", read(t, "docs/development.md"), "Layout") {
		for _, name := range strings.Split(cell, ", ") {
			p := strings.Trim(name, "`")
			paths = append(paths, p)
			if _, err := os.Stat(filepath.Join(root, p)); err != nil {
				t.Errorf("docs/development.md's layout lists %s, which does not exist", p)
			}
		}
	}
	covered := func(dir string) bool {
		return slices.ContainsFunc(paths, func(p string) bool { return p == dir || strings.HasPrefix(p, dir+"/") })
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") && !slices.Contains(notInLayout, e.Name()) && !covered(e.Name()) {
			t.Errorf("the top-level directory %s is not in the layout table of docs/development.md", e.Name())
		}
	}
	internal, err := os.ReadDir(filepath.Join(root, "internal"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range internal {
		if e.IsDir() && !slices.Contains(paths, "internal/"+e.Name()) {
			t.Errorf("internal/%s is not named in the layout table of docs/development.md", e.Name())
		}
	}
}

// TestReadmeOutput checks that the output the README shows is what the
// plugin renders: each command's lines, ages aside, are the golden file of
// internal/kubectlvmobs' tests for the same fixtures.
func TestReadmeOutput(t *testing.T) {
	readme := read(t, "README.md")
	for _, c := range []struct{ command, golden string }{
		{"$ kubectl get vmobs -A", "get-all.golden"},
		{"$ kubectl vmobs describe -n finance ledger-01", "describe-ledger-01.golden"},
	} {
		_, after, ok := strings.Cut(readme, "\n"+c.command+"\n")
		if !ok {
			t.Errorf("README.md does not show %q", c.command)
			continue
		}
		var shown strings.Builder
		sc := bufio.NewScanner(strings.NewReader(after))
		for sc.Scan() && sc.Text() != "" && !strings.HasPrefix(sc.Text(), "```") {
			shown.WriteString(sc.Text() + "\n")
		}
		got := plugintest.NormalizeAges(shown.String())
		if want := read(t, "internal/kubectlvmobs/testdata/"+c.golden); got != want {
			t.Errorf("README.md's output of %q is not internal/kubectlvmobs/testdata/%s:\n--- README\n%s--- golden\n%s", c.command, c.golden, got, want)
		}
	}
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
