package verdict

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"
)

// The Policy's flags default to its values, set it when parsed, and
// Validate puts the int32 thresholds in range into it and refuses the
// others, naming the flag.
func TestPolicyFlags(t *testing.T) {
	parse := func(args ...string) (Policy, error) {
		p := DefaultPolicy()
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		pf := p.BindFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return p, pf.Validate()
	}
	p, err := parse()
	if err != nil || p != DefaultPolicy() {
		t.Fatalf("no flags: %+v, %v; want the defaults", p, err)
	}
	p, err = parse("--heartbeat-timeout=7m", "--filesystem-used-percent=90", "--guest-swap-rate=2048")
	if err != nil {
		t.Fatal(err)
	}
	if p.HeartbeatTimeout != 7*time.Minute || p.FilesystemUsedPercent != 90 || p.GuestSwapRate != 2048 {
		t.Errorf("parsed %+v", p)
	}
	for _, arg := range []string{"--filesystem-used-percent=40", "--guest-memory-available-percent=100", "--agent-unresponsive-probes=0", "--storage-slow-factor=1"} {
		_, err := parse(arg)
		name, _, _ := strings.Cut(strings.TrimPrefix(arg, "--"), "=")
		if err == nil || !strings.Contains(err.Error(), "--"+name+" must be between") {
			t.Errorf("%s: %v, want a range error naming the flag", arg, err)
		}
	}
}
