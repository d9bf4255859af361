package analyze

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/verdict"
)

// Exit statuses of Run.
const (
	ExitOK         = 0 // at least one VM was analysed
	ExitNothing    = 1 // no VM could be analysed
	ExitUsageError = 2 // bad arguments
)

// Config is one `vmobs analyze` invocation.
type Config struct {
	// Paths are the files and directories to read.
	Paths []string
	// Now is the evaluation time.
	Now time.Time
	// Format is FormatTable, FormatJSON or FormatYAML.
	Format string
	// Policy is the default policy; a VMObservation in the input overrides
	// it for its VM.
	Policy verdict.Policy
	// Verbose prints what was read to stderr.
	Verbose bool
	// Load tunes the loader.
	Load Options
	// Describe draws FormatDescribe: the plugin's renderer
	// (kubectlvmobs.RenderDescribe), which the caller passes in so that
	// the tree has one definition and this package does not depend on
	// the plugin's command line.
	Describe func(w io.Writer, obs []v1alpha1.VMObservation, now time.Time) error
}

// Run reads the input, evaluates every VM found and writes the result to
// stdout. File errors and notes go to stderr, one per line, prefixed with
// "vmobs analyze: ". It returns ExitOK when at least one VM was analysed,
// even if some files failed.
func Run(cfg Config, stdout, stderr io.Writer) int {
	switch cfg.Format {
	case "", "wide":
		cfg.Format = FormatTable
	case FormatTable, FormatJSON, FormatYAML:
	case FormatDescribe:
		if cfg.Describe == nil {
			fmt.Fprintln(stderr, "vmobs analyze: -o describe is not available here")
			return ExitUsageError
		}
	default:
		fmt.Fprintf(stderr, "vmobs analyze: unknown output format %q (want table, json, yaml or describe)\n", cfg.Format)
		return ExitUsageError
	}
	if len(cfg.Paths) == 0 {
		fmt.Fprintln(stderr, "vmobs analyze: no file or directory to read")
		return ExitUsageError
	}
	objs, rep := Load(cfg.Paths, cfg.Load)
	for _, e := range rep.Errors {
		fmt.Fprintf(stderr, "vmobs analyze: %s: %s\n", e.Path, e.Reason)
	}
	res := AnalyzeAll(objs, cfg.Now, cfg.Policy)
	for _, n := range res.Notes {
		fmt.Fprintf(stderr, "vmobs analyze: warning: %s\n", n)
	}

	var err error
	switch cfg.Format {
	case FormatTable:
		if len(res.Observations) > 0 {
			err = WriteTable(stdout, res.Observations)
		}
	case FormatDescribe:
		err = cfg.Describe(stdout, res.Observations, cfg.Now)
	default:
		err = WriteList(stdout, res.Observations, cfg.Format)
	}
	if err != nil {
		fmt.Fprintf(stderr, "vmobs analyze: writing the output: %v\n", err)
		return ExitNothing
	}
	if cfg.Verbose || len(res.Observations) == 0 {
		fmt.Fprintf(stderr, "vmobs analyze: %s\n", Summary(objs, rep))
	}
	if len(res.Observations) == 0 {
		fmt.Fprintln(stderr, "vmobs analyze: no VM analysed: the input holds no VirtualMachine, VirtualMachineInstance or VMObservation")
		return ExitNothing
	}
	return ExitOK
}

// Summary says in one line what Load read.
func Summary(objs Objects, rep Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "read %d files (%d documents)", rep.Files, rep.Documents)
	if rep.SkippedFiles > 0 {
		fmt.Fprintf(&b, ", skipped %d files that are not *.yaml, *.yml or *.json", rep.SkippedFiles)
	}
	fmt.Fprintf(&b, "; found %d VirtualMachines, %d VirtualMachineInstances, %d migrations, %d pods, %d nodes, %d VMObservations",
		len(objs.VMs), len(objs.VMIs), len(objs.Migrations), len(objs.Pods), len(objs.Nodes), len(objs.Observations))
	if rep.Duplicates > 0 {
		fmt.Fprintf(&b, " (%d duplicate copies merged)", rep.Duplicates)
	}
	if n := total(rep.Ignored); n > 0 {
		fmt.Fprintf(&b, "; ignored %d objects of other kinds (%s)", n, top(rep.Ignored, 3))
	}
	if rep.NotObjects > 0 {
		fmt.Fprintf(&b, "; %d documents were not Kubernetes objects", rep.NotObjects)
	}
	if len(rep.Errors) > 0 {
		fmt.Fprintf(&b, "; %d errors", len(rep.Errors))
	}
	return b.String()
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// top names the most frequent keys of m: "Event: 120, Namespace: 3, ...".
func top(m map[string]int, n int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, 0, n+1)
	for i, k := range keys {
		if i == n {
			parts = append(parts, "...")
			break
		}
		parts = append(parts, fmt.Sprintf("%s: %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}
