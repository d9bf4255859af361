//go:build !release

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/vmobs/vmobs/internal/demo"
)

func init() {
	register("demo", command{
		summary: "watch vmobs diagnose a simulated KubeVirt fleet, on a throwaway kube-apiserver + etcd (no cluster needed)",
		run:     runDemo,
	})
}

const demoUsage = `Usage: vmobs demo [flags]

Starts kube-apiserver and etcd from bin/k8s (building them with
hack/build-controlplane.sh first if they are missing) in a temporary
directory, installs the VMObservation CRD and KubeVirt's, runs the vmobs
controller in-process with thresholds of seconds instead of minutes, and
plays a simulated KubeVirt fleet: healthy VMs booting and now and then
live-migrating, and one VM per scripted scenario (stuck scheduling, a failed
migration, a lost node, a guest agent that never connects, ...) in
namespace "scenarios", played at staggered times. It also serves every
node's virt-handler metrics, runs a real Prometheus (bin/prometheus)
scraping them and has vmobs read domain stats from it, for the
domain-stats scenarios (a guest whose vCPUs stall, one out of memory, a
migration that does not converge, a domain not exported); and runs
kube-controller-manager's PV binder and attach-detach controller for the
storage scenarios. When kube-controller-manager, Prometheus or kubectl is
missing, the demo starts without it and, in a checkout, builds it in the
background once the first verdict is in (one at a time, in that order):
the scenarios that need it join when it is built, and the summary says
which joined late or were skipped. On a terminal it shows
the VMObservations grouped by verdict and the latest changes, redrawn in
place; otherwise, or with --non-interactive, one timestamped line per
change. While it runs it prints the kubectl command that reaches its API
server. On exit (Ctrl-C, or --duration) it stops everything it started,
removes its temporary files and prints a summary: VMs per verdict and
reason, and for each scenario whether vmobs named the layer, verdict and
reason the scenario is built to produce.

Scenarios: ` + "%s" + `

Exit status: 0, or 1 when the demo failed to run or a scenario was not
diagnosed as built by its deadline, 2 on usage errors.

Flags:
`

// runDemo is `vmobs demo`.
func runDemo(ctx context.Context, args []string) int {
	out, errOut := stdout(ctx), stderr(ctx)
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(errOut)
	opts := demo.Options{Out: out, Err: errOut, BuildControlPlane: true, Builder: demo.CheckoutBuilder()}
	fs.IntVar(&opts.VMs, "vms", 24, "number of healthy VMs, besides one VM per scripted scenario")
	fs.DurationVar(&opts.Duration, "duration", 0, "how long to play the fleet once the control plane is up; 0 plays until interrupted")
	fs.Int64Var(&opts.Seed, "seed", 1, "seed of the simulator and of the demo's random choices (background migrations)")
	fs.StringVar(&opts.Scenario, "scenario", "", "play only this scripted scenario (the healthy VMs still play; --vms 0 drops them)")
	fs.BoolVar(&opts.NonInteractive, "non-interactive", false, "print plain timestamped lines (one per verdict change) and the summary, for CI and logs")
	fs.StringVar(&opts.KubeconfigOut, "kubeconfig-out", "", "write the demo's admin kubeconfig here (default: into the temporary directory)")
	fs.BoolVar(&opts.UntilSettled, "until-settled", false, "stop as soon as every scripted scenario is settled: it showed the verdict it is built to produce, or its deadline passed")
	fs.BoolVar(&opts.Fast, "fast", false, "thresholds of a few seconds and a faster pace (for tests)")
	fs.Usage = func() {}
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(out, demoUsage, strings.Join(demo.ScenarioNames(), ", "))
		fs.SetOutput(out)
		fs.PrintDefaults()
		return exitOK
	}
	if err != nil {
		fmt.Fprintln(errOut, "Run 'vmobs help demo' for usage.")
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(errOut, "vmobs demo: unexpected argument %q\nRun 'vmobs help demo' for usage.\n", fs.Arg(0))
		return exitUsage
	}
	if err := opts.Validate(); err != nil {
		fmt.Fprintf(errOut, "vmobs demo: %v\n", err)
		return exitUsage
	}
	// A closed terminal ends the demo like Ctrl-C does; a closed pipe
	// (vmobs demo | head) makes writes fail, which ends it too, instead
	// of killing the process and orphaning kube-apiserver and etcd.
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGHUP)
	defer stop()
	sigpipe := make(chan os.Signal, 1)
	signal.Notify(sigpipe, syscall.SIGPIPE)
	defer signal.Stop(sigpipe)
	res, err := demo.Run(ctx, opts)
	if err != nil {
		if errors.Is(err, context.Canceled) && res == nil {
			fmt.Fprintln(errOut, "vmobs demo: interrupted before the fleet started")
			return exitFail
		}
		fmt.Fprintf(errOut, "vmobs demo: %v\n", err)
		return exitFail
	}
	if missed := res.Missed(); len(missed) > 0 {
		var names []string
		for _, m := range missed {
			names = append(names, m.Name)
		}
		fmt.Fprintf(errOut, "vmobs demo: not diagnosed as built: %s\n", strings.Join(names, ", "))
		return exitFail
	}
	return exitOK
}
