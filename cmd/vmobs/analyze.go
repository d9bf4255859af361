package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/analyze"
	"github.com/vmobs/vmobs/internal/kubectlvmobs"
	"github.com/vmobs/vmobs/internal/verdict"
)

func init() {
	register("analyze", command{
		summary: "evaluate VMs offline from YAML/JSON dumps (a must-gather, kubectl get -o yaml)",
		run:     runAnalyze,
	})
}

const analyzeUsage = `Usage: vmobs analyze [flags] PATH...

Reads every *.yaml, *.yml and *.json file under each PATH (a KubeVirt
must-gather, an oc adm inspect directory, kubectl get -o yaml output; "-"
reads standard input), gathers each VM's VirtualMachine,
VirtualMachineInstance, migrations, virt-launcher pods and Nodes, and runs
the vmobs verdict engine on them as the controller would at --now. Files it
cannot read are reported on stderr and do not stop the rest.

Exit status: 0 when at least one VM was analysed, 1 when none could be,
2 on usage errors.

Flags:
`

// runAnalyze is `vmobs analyze`.
func runAnalyze(ctx context.Context, args []string) int {
	out, errOut := stdout(ctx), stderr(ctx)
	fs := flag.NewFlagSet("analyze", flag.ContinueOnError)
	fs.SetOutput(errOut)
	var (
		now           = fs.String("now", "", "evaluation time, RFC3339 (default: the current time)")
		format        = fs.String("o", analyze.FormatTable, "output format: table, json or yaml (a v1 List of VMObservations), or describe (kubectl vmobs describe's tree, the history included)")
		agentExpected = fs.Bool("guest-agent-expected", verdict.DefaultPolicy().GuestAgentExpected,
			"every guest should run a QEMU guest agent: a missing agent is Degraded (a VMObservation's spec.policy still overrides it)")
		verbose = fs.Bool("v", false, "print what was read to stderr")
	)
	fs.StringVar(format, "output", analyze.FormatTable, "same as -o")
	// Help goes to stdout on -h; a parse error prints its message to
	// stderr and a pointer to the help, below.
	fs.Usage = func() {}

	paths, err := parseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		analyzeHelp(fs, out)
		return exitOK
	}
	if err != nil {
		// The flag package has printed the error.
		fmt.Fprintln(errOut, "Run 'vmobs help analyze' for usage.")
		return exitUsage
	}
	cfg := analyze.Config{
		Paths:   paths,
		Now:     time.Now(),
		Format:  *format,
		Policy:  verdict.DefaultPolicy(),
		Verbose: *verbose,
		Describe: func(w io.Writer, obs []v1alpha1.VMObservation, now time.Time) error {
			_, err := io.WriteString(w, kubectlvmobs.RenderDescribe(obs, kubectlvmobs.RenderOptions{Now: now, AllNamespaces: true}))
			return err
		},
	}
	cfg.Policy.GuestAgentExpected = *agentExpected
	if *now != "" {
		t, err := time.Parse(time.RFC3339, *now)
		if err != nil {
			fmt.Fprintf(errOut, "vmobs analyze: --now: %q is not an RFC3339 time (like 2026-11-30T12:00:00Z)\n", *now)
			return exitUsage
		}
		cfg.Now = t
	}
	switch cfg.Format {
	case analyze.FormatTable, analyze.FormatJSON, analyze.FormatYAML, analyze.FormatDescribe, "wide":
	default:
		fmt.Fprintf(errOut, "vmobs analyze: -o: unknown output format %q (want table, json, yaml or describe)\n", cfg.Format)
		return exitUsage
	}
	if len(paths) == 0 {
		fmt.Fprintln(errOut, "vmobs analyze: name at least one file or directory to read")
		fmt.Fprintln(errOut, "Usage: vmobs analyze [--now RFC3339] [-o table|json|yaml|describe] [--guest-agent-expected] PATH...")
		return exitUsage
	}
	if err := ctx.Err(); err != nil {
		return exitFail
	}
	return analyze.Run(cfg, out, errOut)
}

func analyzeHelp(fs *flag.FlagSet, w io.Writer) {
	fmt.Fprint(w, analyzeUsage)
	fs.SetOutput(w)
	fs.PrintDefaults()
}

// parseInterspersed parses flags anywhere among the arguments (the flag
// package stops at the first non-flag), so that `vmobs analyze DIR -o json`
// works. Arguments after "--" are all positional.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		// fs.Parse consumed a "--" terminator if rest follows one.
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}
