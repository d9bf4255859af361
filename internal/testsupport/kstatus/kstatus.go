// Package kstatus reads an object's status the way Flux (wait,
// healthChecks), cli-utils' apply --wait, kubectl wait and kpt do, for the
// tests of what those tools make of our objects. It stands apart from
// testsupport so that hack/flux, a module of its own that imports
// testsupport and reads kstatus with Flux's fork of cli-utils, need not
// require sigs.k8s.io/cli-utils too.
// Only tests import it.
package kstatus

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// Of is obj's kstatus, read through JSON as an unstructured object (whose
// integers are int64, as a client decodes them) with kstatus' Compute.
// obj carries its apiVersion and kind.
func Of(t testing.TB, obj any) *status.Result {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(b); err != nil {
		t.Fatal(err)
	}
	res, err := status.Compute(u)
	if err != nil {
		t.Fatalf("kstatus: %v", err)
	}
	return res
}
