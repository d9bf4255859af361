package verdict

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/vmobs/vmobs/api/v1alpha1"
)

const (
	verdictsDoc = "../../docs/verdicts.md"
	reasonsFile = "../../api/v1alpha1/reasons.go"
)

// declaredReasons maps the Reason* constants of reasons.go to their values.
func declaredReasons(t *testing.T) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), reasonsFile, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			for i, n := range vs.Names {
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok {
					t.Fatalf("%s is not a string literal", n.Name)
				}
				v, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				out[n.Name] = v
			}
		}
	}
	return out
}

// emittedReasons is every v1alpha1.Reason* constant of reasons.go that the
// engine's non-test code names.
func emittedReasons(t *testing.T, declared map[string]string) map[string]bool {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "v1alpha1" {
				if v, ok := declared[sel.Sel.Name]; ok {
					out[v] = true
				}
			}
			return true
		})
	}
	return out
}

type docRow struct{ reason, layer, verdict string }

func documentedReasons(t *testing.T) []docRow {
	t.Helper()
	f, err := os.Open(verdictsDoc)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []docRow
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(line, "|")
		if len(cells) != 9 {
			t.Fatalf("row with %d cells, want 7 columns: %s", len(cells)-2, line)
		}
		rows = append(rows, docRow{
			reason:  strings.Trim(strings.TrimSpace(cells[1]), "`"),
			layer:   strings.TrimSpace(cells[2]),
			verdict: strings.TrimSpace(cells[3]),
		})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

func TestReasonsDocumented(t *testing.T) {
	declared := declaredReasons(t)
	all := map[string]bool{}
	for _, r := range v1alpha1.AllReasons {
		if all[r] {
			t.Errorf("AllReasons lists %s twice", r)
		}
		all[r] = true
	}
	for name, v := range declared {
		if !all[v] {
			t.Errorf("%s = %q is declared but missing from AllReasons", name, v)
		}
	}
	if len(declared) != len(all) {
		t.Errorf("%d constants declared, %d in AllReasons", len(declared), len(all))
	}

	emitted := emittedReasons(t, declared)
	for r := range all {
		if !emitted[r] {
			t.Errorf("reason %s is declared but the engine never emits it", r)
		}
	}
	for r := range emitted {
		if !all[r] {
			t.Errorf("the engine emits %s, which AllReasons lacks", r)
		}
	}

	documented := map[string]bool{}
	for _, row := range documentedReasons(t) {
		documented[row.reason] = true
		if !all[row.reason] {
			t.Errorf("docs/verdicts.md documents %s, which is not a reason", row.reason)
		}
		v := strings.TrimSuffix(row.verdict, " (note)")
		if !validVerdict(v1alpha1.Verdict(v)) {
			t.Errorf("docs/verdicts.md: %s has verdict %q", row.reason, row.verdict)
		}
		for _, l := range strings.Split(row.layer, ",") {
			if l = strings.TrimSpace(l); !slices.Contains([]string{"controlPlane", "node", "guest", "storage", "all"}, l) {
				t.Errorf("docs/verdicts.md: %s has layer %q", row.reason, l)
			}
		}
	}
	for r := range emitted {
		if !documented[r] {
			t.Errorf("reason %s has no row in docs/verdicts.md", r)
		}
	}
}

// TestEveryReasonIsTested checks that the table tests make the engine emit
// every reason at least once, in a layer or overall.
func TestEveryReasonIsTested(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range allSituations() {
		st := Evaluate(c.in).Status
		seen[st.Reason] = true
		for _, l := range st.Layers.All() {
			seen[l.Reason] = true
			// Notes are never a layer's reason: they show in its message.
			if _, also, ok := strings.Cut(l.Message, " (also: "); ok {
				for r := range strings.SplitSeq(strings.TrimSuffix(also, ")"), ", ") {
					seen[r] = true
				}
			}
		}
	}
	for _, r := range v1alpha1.AllReasons {
		if !seen[r] {
			t.Errorf("no table case produces %s", r)
		}
	}
}
