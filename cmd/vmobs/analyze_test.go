package main

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vmobs/vmobs/api/v1alpha1"
)

// testdata is the analyze package's fixtures.
var testdata = filepath.Join("..", "..", "internal", "analyze", "testdata")

const fixedNow = "2026-11-30T12:00:00Z"

func TestAnalyzeCommand(t *testing.T) {
	healthy := filepath.Join(testdata, "mustgather-healthy", "input")
	broken := filepath.Join(testdata, "broken", "input")
	empty := t.TempDir()
	for _, tc := range []struct {
		name   string
		args   []string
		exit   int
		stdout string // substring
		stderr string // substring; "" means empty
	}{
		{"table", []string{"analyze", "--now", fixedNow, healthy}, exitOK, "NAMESPACE   NAME ", ""},
		{"flags after the path", []string{"analyze", healthy, "-o", "yaml", "--now=" + fixedNow}, exitOK, "kind: List", ""},
		{"-- ends the flags", []string{"analyze", "--now", fixedNow, "--", healthy}, exitOK, "rhel9-db", ""},
		{"some files fail", []string{"analyze", "--now", fixedNow, broken}, exitOK, "cirros", "malformed.yaml: invalid YAML"},
		{"nothing found", []string{"analyze", empty}, exitFail, "", "no VM analysed"},
		{"missing path", []string{"analyze", filepath.Join(empty, "nope")}, exitFail, "", "no such file or directory"},
		{"no path", []string{"analyze", "--now", fixedNow}, exitUsage, "", "name at least one file or directory"},
		{"bad --now", []string{"analyze", "--now", "yesterday", healthy}, exitUsage, "", `--now: "yesterday" is not an RFC3339 time`},
		{"bad -o", []string{"analyze", "-o", "xml", healthy}, exitUsage, "", `unknown output format "xml"`},
		{"unknown flag", []string{"analyze", "--frob", healthy}, exitUsage, "", "flag provided but not defined: -frob"},
		{"help", []string{"analyze", "-h"}, exitOK, "Usage: vmobs analyze", ""},
		{"help via vmobs help", []string{"help", "analyze"}, exitOK, "-guest-agent-expected", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCmd(t, tc.args...)
			if code != tc.exit {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tc.exit, errOut)
			}
			if !strings.Contains(out, tc.stdout) {
				t.Errorf("stdout does not contain %q:\n%s", tc.stdout, out)
			}
			if (tc.stderr == "") != (errOut == "") || !strings.Contains(errOut, tc.stderr) {
				t.Errorf("stderr = %q, want %q", errOut, tc.stderr)
			}
		})
	}
}

func TestAnalyzeCommandJSON(t *testing.T) {
	dir := filepath.Join(testdata, "list-and-multidoc", "input")
	list := analyzeJSON(t, "--now", fixedNow, "-o", "json", dir)
	var names []string
	for _, o := range list.Items {
		names = append(names, o.Namespace+"/"+o.Name)
		if o.APIVersion != "observability.vmobs.io/v1alpha1" || o.Kind != "VMObservation" || o.Spec.VMName != o.Name || o.Status.Layers == nil {
			t.Errorf("%s: incomplete VMObservation %+v", o.Name, o.TypeMeta)
		}
	}
	if want := []string{"lab/build-runner", "lab/scratch-vmi", "lab/ubuntu-dev"}; !slices.Equal(names, want) {
		t.Errorf("items = %v, want %v", names, want)
	}
}

func TestAnalyzeGuestAgentFlag(t *testing.T) {
	// A VM whose guest has no agent: with --guest-agent-expected its guest
	// layer is judged against the stricter policy, which must change
	// something in its status (the verdict or at least the reason).
	dir := t.TempDir()
	good, err := os.ReadFile(filepath.Join(testdata, "broken", "input", "good.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "good.yaml"), good, 0o644); err != nil {
		t.Fatal(err)
	}
	relaxed := analyzeJSON(t, "--now", fixedNow, "-o", "json", dir)
	strict := analyzeJSON(t, "--now", fixedNow, "-o", "json", "--guest-agent-expected", dir)
	if len(relaxed.Items) != 1 || len(strict.Items) != 1 {
		t.Fatalf("items: %d, %d", len(relaxed.Items), len(strict.Items))
	}
	r, s := relaxed.Items[0].Status.Layers.Guest, strict.Items[0].Status.Layers.Guest
	if r.Verdict == s.Verdict && r.Reason == s.Reason && r.Message == s.Message {
		t.Errorf("--guest-agent-expected changed nothing in the guest layer: %+v", s)
	}
}

type vList struct {
	APIVersion string                   `json:"apiVersion"`
	Kind       string                   `json:"kind"`
	Items      []v1alpha1.VMObservation `json:"items"`
}

func analyzeJSON(t *testing.T, args ...string) vList {
	t.Helper()
	code, out, errOut := runCmd(t, append([]string{"analyze"}, args...)...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var l vList
	if err := json.Unmarshal([]byte(out), &l); err != nil {
		t.Fatalf("output is not JSON: %v", err)
	}
	if l.APIVersion != "v1" || l.Kind != "List" {
		t.Errorf("output is %s %s, want v1 List", l.APIVersion, l.Kind)
	}
	return l
}

func TestParseInterspersed(t *testing.T) {
	for _, tc := range []struct {
		args []string
		pos  []string
		o    string
	}{
		{[]string{"a", "-o", "json", "b"}, []string{"a", "b"}, "json"},
		{[]string{"-o", "yaml", "a"}, []string{"a"}, "yaml"},
		{[]string{"a", "--", "-o", "b"}, []string{"a", "-o", "b"}, "table"},
		{[]string{"--", "-x"}, []string{"-x"}, "table"},
		{[]string{"a", "-", "b"}, []string{"a", "-", "b"}, "table"},
		{nil, nil, "table"},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		o := fs.String("o", "table", "")
		pos, err := parseInterspersed(fs, tc.args)
		if err != nil || !slices.Equal(pos, tc.pos) || *o != tc.o {
			t.Errorf("%q: %q -o %s (%v), want %q -o %s", tc.args, pos, *o, err, tc.pos, tc.o)
		}
	}
}
