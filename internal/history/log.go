package history

import (
	"time"

	"github.com/vmobs/vmobs/api/v1alpha1"
)

// LogMessage is the message of the log line the controller writes per new
// history entry.
const LogMessage = "VM history entry"

// LogKeyNames are the keys of that line, in order: a stable schema
// (docs/history.md) that log stores can index. Absent values are empty
// strings, never missing keys.
var LogKeyNames = []string{"historyTime", "event", "layer", "from", "to", "reason", "message", "object", "field"}

// LogKeys are the key/value pairs of an entry's log line, the keys in the
// order of LogKeyNames. The VMObservation's namespace and name come from
// the reconciler's logger.
func LogKeys(e *v1alpha1.HistoryEntry) []any {
	vals := []string{e.Time.UTC().Format(time.RFC3339), string(e.Event), e.Layer, string(e.From), string(e.To), e.Reason, e.Message, e.Object, e.Field}
	out := make([]any, 0, 2*len(vals))
	for i, v := range vals {
		out = append(out, LogKeyNames[i], v)
	}
	return out
}
