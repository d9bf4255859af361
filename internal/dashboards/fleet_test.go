package dashboards

import (
	"flag"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/vmobs/vmobs/internal/golden"
	"github.com/vmobs/vmobs/internal/metrics"
)

var update = flag.Bool("update", false, "rewrite config/grafana from the generator")

// committed is where each dashboard's JSON is committed, relative to this
// package.
var committed = map[string]string{
	filepath.Join("..", "..", "config", "grafana", "vmobs-fleet.json"): FleetUID,
}

// The committed JSON is the generator's output: edit the Go, then run
// `make dashboards` (this test with -update).
func TestCommittedDashboards(t *testing.T) {
	d, err := Fleet()
	if err != nil {
		t.Fatal(err)
	}
	want, err := JSON(d)
	if err != nil {
		t.Fatal(err)
	}
	for path := range committed {
		golden.Check(t, path, want, *update, "`make dashboards`")
	}
}

// Every panel queries the dashboard's Prometheus variable, every vmobs_
// metric an expression names is one vmobs exports, and the panels fit
// the grid without overlapping.
func TestFleetPanels(t *testing.T) {
	d, err := Fleet()
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]bool{}
	for _, f := range metrics.Catalogue {
		exported[f.Name] = true
	}
	qs := Queries(d)
	if len(qs) < 20 {
		t.Fatalf("only %d queries", len(qs))
	}
	for _, q := range qs {
		for _, m := range regexp.MustCompile(`\bvmobs_[a-z_]+`).FindAllString(q.Expr, -1) {
			m = regexp.MustCompile(`_(bucket|sum|count)$`).ReplaceAllString(m, "")
			if !exported[m] {
				t.Errorf("%s: %s names %s, which vmobs does not export", q.Where, q.Expr, m)
			}
		}
	}

	type cell struct{ x, y uint32 }
	used := map[cell]string{}
	var titles []string
	for _, p := range d.Panels {
		if p.Panel == nil {
			continue
		}
		title := deref(p.Panel.Title)
		if slices.Contains(titles, title) {
			t.Errorf("two panels titled %q", title)
		}
		titles = append(titles, title)
		if len(p.Panel.Targets) == 0 {
			t.Errorf("%s has no query", title)
		}
		if p.Panel.Datasource == nil || deref(p.Panel.Datasource.Uid) != "${datasource}" {
			t.Errorf("%s does not query the datasource variable: %+v", title, p.Panel.Datasource)
		}
		g := p.Panel.GridPos
		if g == nil || g.X+g.W > 24 || g.W == 0 || g.H == 0 {
			t.Errorf("%s: grid position %+v", title, g)
			continue
		}
		for x := g.X; x < g.X+g.W; x++ {
			for y := g.Y; y < g.Y+g.H; y++ {
				if other, ok := used[cell{x, y}]; ok {
					t.Errorf("%s overlaps %s at (%d,%d)", title, other, x, y)
				}
				used[cell{x, y}] = title
			}
		}
	}
}
