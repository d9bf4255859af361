package nodeverdict

import (
	"bufio"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/vmobs/vmobs/api/v1alpha1"
)

const nodeDoc = "../../docs/nodeobservation.md"

type docRow struct {
	reason   string
	layers   []string
	verdicts []string
}

// documented reads the table of the Reasons section of
// docs/nodeobservation.md.
func documented(t *testing.T) []docRow {
	t.Helper()
	f, err := os.Open(nodeDoc)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []docRow
	sc := bufio.NewScanner(f)
	section := ""
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			section = line
		}
		if section != "## Reasons" || !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(line, "|")
		if len(cells) != 7 {
			t.Fatalf("row with %d cells, want 5 columns: %s", len(cells)-2, line)
		}
		row := docRow{reason: strings.Trim(strings.TrimSpace(cells[1]), "`")}
		for l := range strings.SplitSeq(cells[2], ",") {
			row.layers = append(row.layers, strings.TrimSpace(l))
		}
		for v := range strings.SplitSeq(cells[3], ",") {
			row.verdicts = append(row.verdicts, strings.TrimSuffix(strings.TrimSpace(v), " (note)"))
		}
		rows = append(rows, row)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestReasonsDocumented locks docs/nodeobservation.md to the code: every
// reason of v1alpha1.NodeReasons has a row, every row names one, on a
// layer of a NodeObservation, with verdicts the table cases give it.
func TestReasonsDocumented(t *testing.T) {
	// What the table cases give, reason -> layer -> verdicts.
	given := map[string]map[string]map[v1alpha1.Verdict]bool{}
	for _, sc := range situations() {
		st := Evaluate(sc.in).Status
		if st.Layers == nil {
			continue
		}
		for _, name := range v1alpha1.NodeLayerNames {
			l := st.Layers.Get(name)
			reasons := map[string]v1alpha1.Verdict{l.Reason: l.Verdict}
			// Notes are never a layer's reason: they show in its message.
			if _, also, ok := strings.Cut(l.Message, " (also: "); ok {
				for r := range strings.SplitSeq(strings.TrimSuffix(also, ")"), ", ") {
					reasons[r] = v1alpha1.VerdictHealthy
				}
			}
			for r, v := range reasons {
				if given[r] == nil {
					given[r] = map[string]map[v1alpha1.Verdict]bool{}
				}
				if given[r][name] == nil {
					given[r][name] = map[v1alpha1.Verdict]bool{}
				}
				given[r][name][v] = true
			}
		}
	}
	rows := documented(t)
	seen := map[string]bool{}
	for _, row := range rows {
		if seen[row.reason] {
			t.Errorf("docs/nodeobservation.md documents %s twice", row.reason)
		}
		seen[row.reason] = true
		if !slices.Contains(v1alpha1.NodeReasons, row.reason) {
			t.Errorf("docs/nodeobservation.md documents %s, which is not in v1alpha1.NodeReasons", row.reason)
		}
		for _, l := range row.layers {
			if !slices.Contains(v1alpha1.NodeLayerNames[:], l) {
				t.Errorf("%s: layer %q is not a NodeObservation's", row.reason, l)
			}
		}
		for _, v := range row.verdicts {
			if v1alpha1.Verdict(v).Severity() > 5 {
				t.Errorf("%s: %q is not a verdict", row.reason, v)
			}
		}
		for layer, vs := range given[row.reason] {
			if !slices.Contains(row.layers, layer) {
				t.Errorf("%s is given on layer %s, which its row does not name", row.reason, layer)
			}
			for v := range vs {
				if !slices.Contains(row.verdicts, string(v)) {
					t.Errorf("%s is given as %s, which its row does not name", row.reason, v)
				}
			}
		}
	}
	for _, r := range v1alpha1.NodeReasons {
		if !seen[r] {
			t.Errorf("reason %s has no row in docs/nodeobservation.md", r)
		}
		if given[r] == nil {
			t.Errorf("no table case gives %s", r)
		}
	}
	for r := range given {
		if !slices.Contains(v1alpha1.NodeReasons, r) {
			t.Errorf("a NodeObservation gives %s, which v1alpha1.NodeReasons lacks", r)
		}
	}
}
