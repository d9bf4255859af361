// Command kubectl-vmobs is the kubectl plugin for VMObservations: put it on
// PATH and run `kubectl vmobs [get|describe|summary] [-A] [-n NS] [NAME]`.
// The logic lives in internal/kubectlvmobs; docs/plugin.md is its manual.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/go-logr/logr"
	// The kubeconfig auth providers client-go still has: oidc, and the
	// azure and gcp stubs that say which exec plugin replaced them. Exec
	// credential plugins (kubelogin, gke-gcloud-auth-plugin, aws eks
	// get-token) need no import: client-go runs them.
	_ "k8s.io/client-go/plugin/pkg/client/auth"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/vmobs/vmobs/internal/kubectlvmobs"
)

func main() {
	// controller-runtime's client logs nothing the user needs; without a
	// logger it would complain that none was set.
	ctrllog.SetLogger(logr.Discard())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := kubectlvmobs.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
