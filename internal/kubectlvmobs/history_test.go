package kubectlvmobs

import (
	"strings"
	"testing"
	"time"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/kubectlvmobs/plugintest"
)

// TestRenderHistory: the timeline of every fixture, and of the finance
// namespace over the last day; the describe tree shows the same rows.
func TestRenderHistory(t *testing.T) {
	objs := sortObservations(plugintest.LoadFixtures(t))
	opts := RenderOptions{Now: plugintest.FixtureNow, AllNamespaces: true}
	all := RenderHistory(objs, opts, time.Time{})
	golden(t, "history-all", all)
	day := RenderHistory(inNamespace(objs, "finance"), RenderOptions{Now: plugintest.FixtureNow}, plugintest.FixtureNow.Add(-24*time.Hour))
	golden(t, "history-finance-24h", day)
	if strings.Contains(day, "\n2026-11-27") || !strings.Contains(day, "MigrationFailed") {
		t.Errorf("--since kept an older entry or lost a newer one:\n%s", day)
	}

	o := named(t, objs, "win2k22-app")
	tree := RenderDescribe([]v1alpha1.VMObservation{o}, RenderOptions{Now: plugintest.FixtureNow})
	rows := timelineLines(painter{}, o.Status.History, time.Time{}, false)
	if len(rows) == 0 {
		t.Fatal("the fixture has no history")
	}
	for _, r := range rows {
		if !strings.Contains(tree, r) {
			t.Errorf("describe lacks the timeline row %q", r)
		}
	}
}

// TestHistoryOnly: the machine formats carry status.vm and the entries
// since --since, nothing else of the status.
func TestHistoryOnly(t *testing.T) {
	objs := plugintest.LoadFixtures(t)
	o := named(t, objs, "win2k22-app")
	got := historyOnly([]v1alpha1.VMObservation{o}, plugintest.FixtureNow.Add(-24*time.Hour))[0]
	if got.Status.Layers != nil || got.Status.VMI != nil || got.Status.VM == nil || got.Name != o.Name {
		t.Errorf("status %+v: want only vm and history", got.Status)
	}
	if n := len(got.Status.History.Entries); n == 0 || n >= len(o.Status.History.Entries) {
		t.Errorf("%d of %d entries kept in the last day", n, len(o.Status.History.Entries))
	}
}
