package main

import (
	"context"
	"flag"
	"fmt"

	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/vmobs/vmobs/internal/app"
	"github.com/vmobs/vmobs/internal/version"
)

func init() {
	register("manager", command{
		summary: "run the controller that keeps one VMObservation per VM true",
		run:     runManager,
	})
}

// managerFlags are what `vmobs manager`'s flags set: the manager's
// options, each group binding and checking its own (app.Options.BindFlags),
// and the command's own (the kubeconfig, the logger).
type managerFlags struct {
	opts       app.Options
	app        *app.Flags
	kubeconfig string
	zap        zap.Options
}

// newManagerFlags defines `vmobs manager`'s flags, defaulting to
// app.Defaults(), on a FlagSet of their own: runManager parses it, and
// TestFlagsReference generates docs/flags.md from it.
func newManagerFlags() (*managerFlags, *flag.FlagSet) {
	f := &managerFlags{opts: app.Defaults()}
	fs := flag.NewFlagSet("vmobs manager", flag.ContinueOnError)
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "Path to a kubeconfig; empty uses $KUBECONFIG or the in-cluster config.")
	f.app = f.opts.BindFlags(fs)
	f.zap.BindFlags(fs)
	return f, fs
}

func runManager(ctx context.Context, args []string) int {
	f, fs := newManagerFlags()
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&f.zap)))
	log := ctrl.Log.WithName("setup")
	if err := f.app.Validate(); err != nil {
		fmt.Fprintf(stderr(ctx), "vmobs manager: %v\n", err)
		return 2
	}
	opts := &f.opts

	loading := clientcmd.NewDefaultClientConfigLoadingRules()
	loading.ExplicitPath = f.kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(loading, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		log.Error(err, "Loading the kubeconfig failed")
		return 1
	}
	cfg.UserAgent = "vmobs-controller"

	mgr, err := app.NewManager(cfg, *opts)
	if err != nil {
		log.Error(err, "Creating the manager failed")
		return 1
	}
	log.Info("Starting manager", "version", version.Get().Version, "commit", version.Get().Commit, "namespaces", opts.Namespaces, "vmSelector", f.app.Selector, "autoCreate", opts.AutoCreate, "nodeObservations", opts.NodeObservations, "storage", opts.Storage, "leaderElection", opts.LeaderElection, "lease", opts.LeaseName(), "domainStats", opts.PrometheusURL != "", "guestProbeInterval", opts.GuestProbe.Interval)
	if err := mgr.Start(ctx); err != nil {
		log.Error(err, "Manager stopped with an error")
		return 1
	}
	return 0
}
