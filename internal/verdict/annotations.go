package verdict

import (
	"errors"
	"strings"
	"time"
)

var (
	errHeartbeatEmpty = errors.New("empty heartbeat")
	errHeartbeatTime  = errors.New("heartbeat is not an RFC 3339 time")
)

// ParseHeartbeat reads virt-handler's kubevirt.io/heartbeat annotation.
// virt-handler writes json.Marshal(metav1.Now()) with the quotes stripped
// (kv:pkg/virt-handler/heartbeat/heartbeat.go), i.e. RFC 3339 in UTC with
// second precision; quotes and surrounding blanks are tolerated because
// hand-edited dumps carry them. The result is UTC, truncated to seconds.
func ParseHeartbeat(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = strings.TrimSpace(s[1 : len(s)-1])
	}
	if s == "" {
		return time.Time{}, errHeartbeatEmpty
	}
	// RFC 3339 is at least "2006-01-02T15:04:05Z" and bounded; refusing
	// longer input keeps a hostile annotation from costing anything.
	if len(s) < len("2006-01-02T15:04:05Z") || len(s) > 64 {
		return time.Time{}, errHeartbeatTime
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, errHeartbeatTime
	}
	return t.UTC().Truncate(time.Second), nil
}
