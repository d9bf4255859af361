package kubectlvmobs

import (
	"fmt"
	"strings"

	"github.com/vmobs/vmobs/api/v1alpha1"
)

// Exit statuses. The health codes follow kube-health's (rhobs/kube-health,
// README "Exit codes": 1 warning, 2 error, 3 unknown, 8 added while
// something is still progressing, 128 when it could not evaluate), so a
// script that knows one knows the other. docs/plugin.md has the table.
const (
	// ExitOK: every VM shown is Healthy or Suspended (stopped or paused on
	// purpose), or below --fail-on.
	ExitOK = 0
	// ExitDegraded: the worst failing verdict is Degraded.
	ExitDegraded = 1
	// ExitFailed: the worst failing verdict is Failed.
	ExitFailed = 2
	// ExitUnknown: the worst failing verdict is Unknown, or a VM has no
	// status yet.
	ExitUnknown = 3
	// ExitProgressing is a bit added to the code above when a failing VM is
	// Progressing: 8 alone when Progressing is the only failing verdict.
	ExitProgressing = 8
	// ExitError: the plugin could not judge at all (bad flags, the API
	// server unreachable, the CRD missing, a name not found).
	ExitError = 128
)

// failOnNone is the --fail-on value under which no verdict fails.
const failOnNone = "None"

// failOnValues are the --fail-on values, lowest first.
var failOnValues = []string{
	string(v1alpha1.VerdictProgressing), string(v1alpha1.VerdictUnknown),
	string(v1alpha1.VerdictDegraded), string(v1alpha1.VerdictFailed), failOnNone,
}

// parseFailOn reads a --fail-on value, in any case. It returns the lowest
// verdict that fails, or "" for None. Healthy and Suspended are not
// accepted: Suspended is what the user declared (the Ready condition says
// True for it), so it never fails.
func parseFailOn(s string) (v1alpha1.Verdict, error) {
	for _, v := range failOnValues {
		if strings.EqualFold(s, v) {
			if v == failOnNone {
				return "", nil
			}
			return v1alpha1.Verdict(v), nil
		}
	}
	return "", fmt.Errorf("invalid --fail-on %q: one of %s", s, strings.Join(failOnValues, ", "))
}

// effectiveVerdict is the verdict the exit code counts: an empty verdict (the
// controller has not observed the VM yet) or a word outside the enum is
// Unknown.
func effectiveVerdict(v v1alpha1.Verdict) v1alpha1.Verdict {
	switch v {
	case v1alpha1.VerdictHealthy, v1alpha1.VerdictSuspended, v1alpha1.VerdictProgressing,
		v1alpha1.VerdictUnknown, v1alpha1.VerdictDegraded, v1alpha1.VerdictFailed:
		return v
	}
	return v1alpha1.VerdictUnknown
}

// healthCode is the exit status for objs when failOn is the lowest verdict
// that fails ("" for none): the code of the worst failing verdict in the
// order of Verdict.Severity (Failed, then Degraded, then Unknown), plus
// ExitProgressing when a failing VM is Progressing.
func healthCode(objs []v1alpha1.VMObservation, failOn v1alpha1.Verdict) int {
	return verdictsCode(len(objs), func(i int) v1alpha1.Verdict { return objs[i].Status.Verdict }, failOn)
}

// verdictsCode is the exit status of n verdicts, the i-th verdict(i): the
// VMs' (healthCode) or the nodes' (kubectl vmobs nodes).
func verdictsCode(n int, verdict func(int) v1alpha1.Verdict, failOn v1alpha1.Verdict) int {
	if failOn == "" {
		return ExitOK
	}
	var worst v1alpha1.Verdict
	progressing := false
	for i := range n {
		v := effectiveVerdict(verdict(i))
		if v.Severity() < failOn.Severity() {
			continue
		}
		switch {
		case v == v1alpha1.VerdictProgressing:
			progressing = true
		case worst == "" || v.Severity() > worst.Severity():
			worst = v
		}
	}
	code := ExitOK
	switch worst {
	case v1alpha1.VerdictDegraded:
		code = ExitDegraded
	case v1alpha1.VerdictFailed:
		code = ExitFailed
	case v1alpha1.VerdictUnknown:
		code = ExitUnknown
	}
	if progressing {
		code |= ExitProgressing
	}
	return code
}
