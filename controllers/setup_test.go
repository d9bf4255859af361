package controllers

import (
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// A reconcile's log carries the keys the builder gives a controller For
// VMObservations, though its watches are raw sources.
func TestReconcileLogKeys(t *testing.T) {
	var line string
	log := funcr.New(func(_, args string) { line = args }, funcr.Options{})
	reconcileLog(log)(&reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "vm"}}).Info("x")
	for _, want := range []string{`"controller"="vmobservation"`, `"controllerGroup"="observability.vmobs.io"`, `"controllerKind"="VMObservation"`,
		`"VMObservation"={"name"="vm" "namespace"="ns"}`, `"namespace"="ns"`, `"name"="vm"`} {
		if !strings.Contains(line, want) {
			t.Errorf("the reconcile's log line %s lacks %s", line, want)
		}
	}
	reconcileLog(log)(nil).Info("x")
	if strings.Contains(line, `"name"=`) {
		t.Errorf("the controller's own log line names a VM: %s", line)
	}
}
