package app

import (
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
)

// TestFlagsValidate parses command lines into the default options and
// checks what Validate refuses, and what it completes.
func TestFlagsValidate(t *testing.T) {
	tests := map[string]struct {
		args []string
		// err is a part of the error; empty is none.
		err string
		// check looks at the completed options.
		check func(Options) bool
	}{
		"defaults": {check: func(o Options) bool {
			return o.KubeAPIQPS == 0 && o.VMSelector == nil && o.Namespaces == nil && o.Policy.HistoryLimit > 0
		}},
		"qps, namespaces and selector completed": {
			args: []string{"--kube-api-qps=12.5", "--namespace=a,b", "--namespace", "c", "--vm-selector=shard=one"},
			check: func(o Options) bool {
				return o.KubeAPIQPS == 12.5 && slices.Equal(o.Namespaces, []string{"a", "b", "c"}) && o.VMSelector.String() == "shard=one"
			},
		},
		"policy's int32 threshold completed": {args: []string{"--history-limit=7"}, check: func(o Options) bool { return o.Policy.HistoryLimit == 7 }},
		"negative qps":                       {args: []string{"--kube-api-qps=-1"}, err: "must not be negative"},
		"negative gc percent":                {args: []string{"--startup-gc-percent=-1"}, err: "must not be negative"},
		"no incident threshold":              {args: []string{"--node-incident-threshold=0"}, err: "--node-incident-threshold must be at least 1"},
		"write policy's own check":           {args: []string{"--evidence-refresh-qps=-2"}, err: "--evidence-refresh-qps"},
		"guest probe's own check":            {args: []string{"--guest-probe-workers=0"}, err: "--guest-probe-workers"},
		"policy's range":                     {args: []string{"--history-limit=0"}, err: "--history-limit must be between"},
		"token without Prometheus":           {args: []string{"--prometheus-ca-file=ca.crt"}, err: "need --prometheus-url"},
		"bad selector":                       {args: []string{"--vm-selector=a b"}, err: "--vm-selector"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			opts := Defaults()
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			f := opts.BindFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatalf("parse %v: %v", tc.args, err)
			}
			err := f.Validate()
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("Validate = %v, want an error saying %q", err, tc.err)
			case tc.check != nil && !tc.check(opts):
				t.Errorf("options after %v: %+v", tc.args, opts)
			}
		})
	}
}
