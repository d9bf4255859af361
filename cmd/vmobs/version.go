package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"

	"github.com/vmobs/vmobs/internal/version"
)

func init() {
	register("version", command{
		summary: "print the version, the commit and the Go toolchain of this binary (also --version)",
		run:     runVersion,
	})
}

// runVersion is `vmobs version` and `vmobs --version`.
func runVersion(ctx context.Context, args []string) int {
	out, errOut := stdout(ctx), stderr(ctx)
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.SetOutput(errOut)
	format := fs.String("o", "", "output format: empty for one line, or json")
	fs.Usage = func() {}
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(out, "Usage: vmobs version [-o json]   (or vmobs --version)")
		fmt.Fprintln(out)
		fmt.Fprintln(out, "Prints the release this binary was built as (\"devel\" for a build outside")
		fmt.Fprintln(out, "`make build` and `make release`), its commit, Go toolchain and platform.")
		return exitOK
	} else if err != nil {
		fmt.Fprintln(errOut, "Run 'vmobs help version' for usage.")
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(errOut, "vmobs version: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	v := version.Get()
	switch *format {
	case "":
		fmt.Fprintln(out, "vmobs", v)
	case "json":
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			fmt.Fprintf(errOut, "vmobs version: %v\n", err)
			return exitFail
		}
		fmt.Fprintln(out, string(b))
	default:
		fmt.Fprintf(errOut, "vmobs version: -o: unknown output format %q (want json)\n", *format)
		return exitUsage
	}
	return exitOK
}
