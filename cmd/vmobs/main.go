// Command vmobs is the vmobs binary: the controller manager and the tools
// around it, one subcommand each. Each subcommand lives in its own file and
// registers itself in init() with register.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"
)

// command is one subcommand.
type command struct {
	// summary is the one-line description `vmobs help` prints.
	summary string
	// run runs the subcommand with the arguments after its name and
	// returns the exit status. It writes through stdout(ctx) and
	// stderr(ctx), so tests can capture the output.
	run func(ctx context.Context, args []string) int
}

// commands holds the subcommands by name; files register theirs in init().
var commands = map[string]command{}

// register adds a subcommand. Registering a name twice is a programming
// error.
func register(name string, c command) {
	if _, dup := commands[name]; dup {
		panic("vmobs: command " + name + " registered twice")
	}
	commands[name] = c
}

// streams are where a command writes.
type streams struct{ out, err io.Writer }

type streamsKey struct{}

// withStreams returns a context whose commands write to out and errOut.
func withStreams(ctx context.Context, out, errOut io.Writer) context.Context {
	return context.WithValue(ctx, streamsKey{}, streams{out: out, err: errOut})
}

// stdout is where a command writes its output: os.Stdout unless the context
// says otherwise.
func stdout(ctx context.Context) io.Writer {
	if s, ok := ctx.Value(streamsKey{}).(streams); ok && s.out != nil {
		return s.out
	}
	return os.Stdout
}

// stderr is where a command writes errors and diagnostics.
func stderr(ctx context.Context) io.Writer {
	if s, ok := ctx.Value(streamsKey{}).(streams); ok && s.err != nil {
		return s.err
	}
	return os.Stderr
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}

// Exit statuses shared by the subcommands.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

// run dispatches to the subcommand named by args[0].
func run(ctx context.Context, args []string) int {
	if len(args) == 0 {
		usage(stderr(ctx))
		return exitUsage
	}
	name, rest := args[0], args[1:]
	switch name {
	case "help", "-h", "-help", "--help":
		if len(rest) > 0 {
			if c, ok := commands[rest[0]]; ok {
				return c.run(ctx, []string{"-h"})
			}
			fmt.Fprintf(stderr(ctx), "vmobs: unknown command %q\n\n", rest[0])
			usage(stderr(ctx))
			return exitUsage
		}
		usage(stdout(ctx))
		return exitOK
	case "--version", "-version":
		name = "version"
	}
	c, ok := commands[name]
	if !ok {
		fmt.Fprintf(stderr(ctx), "vmobs: unknown command %q\n\n", name)
		usage(stderr(ctx))
		return exitUsage
	}
	return c.run(ctx, rest)
}

// usage lists the registered commands, sorted.
func usage(w io.Writer) {
	names := make([]string, 0, len(commands))
	width := 4 // "help"
	for n := range commands {
		names = append(names, n)
		width = max(width, len(n))
	}
	sort.Strings(names)
	fmt.Fprintln(w, "vmobs observes KubeVirt VMs: one VMObservation per VM, with a verdict per layer.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage:")
	fmt.Fprintln(w, "  vmobs <command> [flags] [arguments]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	for _, n := range names {
		fmt.Fprintf(w, "  %-*s  %s\n", width, n, commands[n].summary)
	}
	fmt.Fprintf(w, "  %-*s  %s\n", width, "help", "print this help, or a command's (vmobs help <command>)")
}
