package verdict

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/internal/vmifacts"
)

// TestVMIFacts is the gate's table, the same for both sources: facts reach
// the rules only for the running VMI they were folded for, and an outage
// without a UID reaches every running VMI.
func TestVMIFacts(t *testing.T) {
	running := &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{UID: "vmi-1"}}
	cases := []struct {
		name        string
		lc          lifecycle
		vmi         *kubevirtv1.VirtualMachineInstance
		uid         types.UID
		unavailable string
		want        bool
	}{
		{name: "this VMI's facts", lc: lcRunning, vmi: running, uid: "vmi-1", want: true},
		{name: "this VMI's outage", lc: lcRunning, vmi: running, uid: "vmi-1", unavailable: "down", want: true},
		{name: "an outage without a UID", lc: lcRunning, vmi: running, unavailable: "down", want: true},
		{name: "an earlier VMI's facts", lc: lcRunning, vmi: running, uid: "vmi-0"},
		{name: "an earlier VMI's outage", lc: lcRunning, vmi: running, uid: "vmi-0", unavailable: "down"},
		{name: "facts without a UID", lc: lcRunning, vmi: running},
		{name: "facts without a UID for a VMI without one", lc: lcRunning, vmi: &kubevirtv1.VirtualMachineInstance{}},
		{name: "a VMI that does not run", lc: lcStarting, vmi: running, uid: "vmi-1"},
		{name: "no VMI", lc: lcRunning, uid: "vmi-1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := &facts{lc: c.lc, vmi: c.vmi}
			d := &vmifacts.DomainFacts{VMIUID: c.uid, Unavailable: c.unavailable}
			g := &vmifacts.GuestFacts{VMIUID: c.uid, Unavailable: c.unavailable}
			if got := vmiFacts(f, d) == d; got != c.want {
				t.Errorf("domain facts read = %v, want %v", got, c.want)
			}
			if got := vmiFacts(f, g) == g; got != c.want {
				t.Errorf("guest facts read = %v, want %v", got, c.want)
			}
			if vmiFacts(f, (*vmifacts.DomainFacts)(nil)) != nil || vmiFacts(f, (*vmifacts.GuestFacts)(nil)) != nil {
				t.Error("no facts read as facts")
			}
		})
	}
}
