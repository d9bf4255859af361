package guestprobe

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/kvtest"
	"github.com/vmobs/vmobs/internal/verdict"
)

// layers are the layers the engine computes for one of the harness's VMs
// from its facts: a healthy VMI Running with its agent connected, on a
// healthy node, at the harness's time.
func (h *harness) layers(vm string) *v1alpha1.Layers {
	now := h.now()
	uid := target(vm).UID
	in := verdict.Input{
		Namespace: kvtest.Namespace, Name: kvtest.VMName,
		VM:     kvtest.Retime(kvtest.VM(), now),
		VMI:    kvtest.Retime(kvtest.RunningVMI(func(v *kubevirtv1.VirtualMachineInstance) { v.UID = uid }), now),
		Pods:   []*corev1.Pod{kvtest.Retime(kvtest.LauncherPod(func(p *corev1.Pod) { p.OwnerReferences[0].UID = uid }), now)},
		Nodes:  map[string]*corev1.Node{kvtest.NodeA: kvtest.Retime(kvtest.Node(kvtest.NodeA), now)},
		Policy: verdict.DefaultPolicy(),
		Guest:  h.facts(vm),
		Now:    now,
	}
	return verdict.Evaluate(in).Status.Layers
}

// guestLayer and nodeLayer are two of layers.
func (h *harness) guestLayer(vm string) v1alpha1.LayerStatus { return h.layers(vm).Guest }
func (h *harness) nodeLayer(vm string) v1alpha1.LayerStatus  { return h.layers(vm).Node }

// A dependency that fails for a while — virt-api answering 500, 503 or
// 429, or not answering — is never each agent's failure: through the
// outage and after it, no VM's node layer turns GuestInfoUnreachable (nor
// its guest layer anything but Healthy); once the outage lasts, each
// carries the GuestProbeUnavailable note, and the facts of before are the
// engine's again after it. A VM whose calls fail alone is charged: the
// check below can see GuestInfoUnreachable.
func TestOutageNeverPagesEveryVM(t *testing.T) {
	vms := make([]string, 10)
	for i := range vms {
		vms[i] = fmt.Sprintf("vm%02d", i)
	}
	// checkAll evaluates every VM and says how many carry the note.
	checkAll := func(t *testing.T, h *harness, when string) (noted int) {
		t.Helper()
		for _, vm := range vms {
			l := h.guestLayer(vm)
			if l.Verdict != v1alpha1.VerdictHealthy {
				t.Fatalf("%s: %s's guest layer %s/%s: %s (facts %+v)", when, vm, l.Verdict, l.Reason, l.Message, h.facts(vm))
			}
			if n := h.nodeLayer(vm); n.Verdict != v1alpha1.VerdictHealthy {
				t.Fatalf("%s: %s's node layer %s/%s: %s (facts %+v)", when, vm, n.Verdict, n.Reason, n.Message, h.facts(vm))
			}
			if strings.Contains(l.Message, v1alpha1.ReasonGuestProbeUnavailable) {
				noted++
			}
		}
		return noted
	}

	t.Run("one VM's calls failing is charged", func(t *testing.T) {
		h := newHarness(t, Config{}, vms...)
		h.round()
		checkAll(t, h, "answered")
		h.api.setGuest("vm03", guest{mode: "500"})
		for range verdict.DefaultPolicy().AgentUnresponsiveProbes {
			h.round()
		}
		if l := h.nodeLayer("vm03"); l.Verdict != v1alpha1.VerdictUnknown || l.Reason != v1alpha1.ReasonGuestInfoUnreachable {
			t.Fatalf("vm03 failed %d probes: node layer %s/%s: %s", h.mustFacts("vm03").Failures, l.Verdict, l.Reason, l.Message)
		}
		for _, vm := range vms {
			if l := h.nodeLayer(vm); vm != "vm03" && l.Verdict != v1alpha1.VerdictHealthy {
				t.Fatalf("%s: node layer %s/%s", vm, l.Verdict, l.Reason)
			}
		}
	})

	for _, tc := range []struct{ mode, retryAfter string }{
		{"500", ""}, {"503", ""}, {"429", "20"}, {"hang", ""},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			h := newHarness(t, Config{Workers: 2}, vms...)
			h.round()
			checkAll(t, h, "answered")
			// The calls' timeout is the outage of "hang".
			h.hangFrom(100 * time.Millisecond)
			h.api.mu.Lock()
			h.api.mode, h.api.retryAfter = tc.mode, tc.retryAfter
			h.api.mu.Unlock()
			// Three intervals of virt-api failing (each VM would be charged
			// AgentUnresponsiveProbes times were the failures taken
			// for theirs), stepped as the ticker would (coarser): each VM
			// comes due, the canaries go out as the backoff allows.
			for i := range 60 {
				h.advance(15 * time.Second)
				h.step()
				checkAll(t, h, fmt.Sprintf("%s after %d steps", tc.mode, i+1))
			}
			if noted := checkAll(t, h, "the outage"); noted != len(vms) {
				t.Fatalf("%d of %d VMs note GuestProbeUnavailable after three intervals of %s", noted, len(vms), tc.mode)
			}
			h.set("")
			for i := range 25 {
				h.advance(15 * time.Second)
				h.step()
				checkAll(t, h, fmt.Sprintf("%d steps after the recovery", i+1))
			}
			if noted := checkAll(t, h, "recovered"); noted != 0 {
				t.Fatalf("%d VMs still note GuestProbeUnavailable after the recovery", noted)
			}
			for _, vm := range vms {
				if f := h.facts(vm); f == nil || f.Failures != 0 || !f.Answered || f.Hostname != vm {
					t.Fatalf("%s after the recovery: %+v", vm, f)
				}
			}
		})
	}
}
