package verdict

import (
	"bytes"
	"testing"

	"github.com/vmobs/vmobs/internal/cachetrim"
)

// trimmed runs the manager's cache transforms on a copy of the input: what
// the controller's Evaluate sees.
func trimmed(t *testing.T, in Input) Input {
	t.Helper()
	c := deepCopyInput(in)
	must := func(_ any, err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if c.VM != nil {
		must(cachetrim.VM(c.VM))
	}
	if c.VMI != nil {
		must(cachetrim.VMI(c.VMI))
	}
	for _, p := range c.Pods {
		must(cachetrim.Pod(p))
	}
	for _, n := range c.Nodes {
		must(cachetrim.Node(n))
	}
	return c
}

// TestCacheTransformsKeepWhatTheEngineReads runs every table case on the
// objects as the manager's cache holds them: a transform that drops a field
// the engine reads changes some status here.
func TestCacheTransformsKeepWhatTheEngineReads(t *testing.T) {
	for _, c := range allSituations() {
		t.Run(c.name, func(t *testing.T) {
			want := mustJSON(t, Evaluate(c.in))
			if got := mustJSON(t, Evaluate(trimmed(t, c.in))); !bytes.Equal(want, got) {
				t.Fatalf("the trimmed input gives another status:\nwhole:   %s\ntrimmed: %s", want, got)
			}
		})
	}
}
