package drain

import (
	"os"
	"regexp"
	"slices"
	"testing"
)

// TestReasonsDocumented keeps the reason table of docs/drain-check.md and
// ReasonCodes equal: every code the package emits is documented, and the
// table names no code the package does not have.
func TestReasonsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/drain-check.md")
	if err != nil {
		t.Fatal(err)
	}
	var documented []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([A-Za-z]+)` \\|").FindAllStringSubmatch(string(doc), -1) {
		documented = append(documented, m[1])
	}
	for _, c := range ReasonCodes {
		if !slices.Contains(documented, c) {
			t.Errorf("reason %s is not in docs/drain-check.md's table", c)
		}
	}
	for _, d := range documented {
		if !slices.Contains(ReasonCodes, d) && !slices.Contains(Outcomes, Outcome(d)) {
			t.Errorf("docs/drain-check.md documents %s, which is no reason code", d)
		}
	}
	for _, o := range Outcomes {
		if !slices.Contains(documented, string(o)) {
			t.Errorf("outcome %s is not in docs/drain-check.md's outcome table", o)
		}
	}
	if sorted := slices.Sorted(slices.Values(ReasonCodes)); len(slices.Compact(sorted)) != len(ReasonCodes) {
		t.Error("ReasonCodes holds a code twice")
	}
}
