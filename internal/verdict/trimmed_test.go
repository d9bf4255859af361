package verdict

import (
	"bytes"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/projection"
)

// projected runs a copy of the input through the manager's cache: each
// object through the informers' transform into its projection, and back
// into the typed object the controller hands the engine. The previous
// status goes through a VMObservation's projection.
func projected(t *testing.T, in Input) Input {
	t.Helper()
	c := deepCopyInput(in)
	through := func(o any) any {
		t.Helper()
		p, err := projection.Transform(o)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	if c.VM != nil {
		c.VM = through(c.VM).(*projection.VM).ToVM()
	}
	if c.VMI != nil {
		c.VMI = through(c.VMI).(*projection.VMI).ToVMI()
	}
	for i, p := range c.Pods {
		if p != nil {
			c.Pods[i] = through(p).(*projection.Pod).ToPod()
		}
	}
	for i, m := range c.Migrations {
		if m != nil {
			c.Migrations[i] = through(m).(*projection.Migration).ToMigration()
		}
	}
	for k, n := range c.Nodes {
		if n != nil {
			c.Nodes[k] = through(n).(*projection.Node).ToNode()
		}
	}
	if c.Previous != nil {
		obs := &v1alpha1.VMObservation{Status: *c.Previous}
		c.Previous = through(obs).(*projection.Observation).Previous()
	}
	return c
}

// TestCacheProjectionsKeepWhatTheEngineReads runs every table case on the
// objects as the manager's cache holds them, twice: with the case's own
// previous status, and a minute later with the status it computed as the
// previous one. A projection that drops a field the engine reads changes
// some status here. The previous status's projection has no layer
// messages: a case that keeps a verdict through the lag grace is
// evaluated again with the stored status whole, as the controller does.
func TestCacheProjectionsKeepWhatTheEngineReads(t *testing.T) {
	again := 0
	for _, c := range allSituations() {
		t.Run(c.name, func(t *testing.T) {
			again += same(t, c.in)
			next := deepCopyInput(c.in)
			prev := Evaluate(c.in).Status
			next.Previous = &prev
			next.Now = c.in.Now.Add(time.Minute)
			again += same(t, next)
		})
	}
	if again == 0 {
		t.Error("no case kept a verdict through the lag grace: the evaluation again with the stored status went untested")
	}
	t.Logf("%d evaluations needed the stored status's messages", again)
}

// same requires the status of the whole input and of the projected one
// to be the same; it returns 1 when the projected one needed the stored
// status's messages (Result.NeedsMessages), and requires that the first
// evaluation then differed only by them.
func same(t *testing.T, in Input) int {
	t.Helper()
	want := mustJSON(t, Evaluate(in))
	p := projected(t, in)
	res := Evaluate(p)
	n := 0
	if res.NeedsMessages {
		n = 1
		first := res.Status.Layers
		p.Previous = projection.PreviousOf(&v1alpha1.VMObservation{Status: *in.Previous})
		res = Evaluate(p)
		kept := 0
		for name, l := range first.All() {
			if w := res.Status.Layers.Get(name); l.Message != w.Message {
				if l.Message != "" || l.Verdict != w.Verdict || l.Reason != w.Reason {
					t.Errorf("layer %s: the first evaluation differs by more than the kept message: %+v, then %+v", name, l, w)
				}
				kept++
			}
		}
		if kept == 0 {
			t.Error("NeedsMessages, but no layer's message came from the stored status")
		}
	}
	if got := mustJSON(t, res); !bytes.Equal(want, got) {
		t.Fatalf("the projected input gives another status:\nwhole:     %s\nprojected: %s", want, got)
	}
	return n
}

// TestTransformNeverPanics feeds the transform objects with nothing set,
// nil pointers and typed nils: an informer must not crash on them.
func TestTransformNeverPanics(t *testing.T) {
	for _, o := range []any{
		nil, (*corev1.Pod)(nil), &corev1.Pod{}, (*corev1.Node)(nil), &corev1.Node{},
		(*kubevirtv1.VirtualMachineInstance)(nil), &kubevirtv1.VirtualMachineInstance{},
		(*kubevirtv1.VirtualMachine)(nil), &kubevirtv1.VirtualMachine{},
		(*kubevirtv1.VirtualMachineInstanceMigration)(nil), &kubevirtv1.VirtualMachineInstanceMigration{},
		(*v1alpha1.VMObservation)(nil), &v1alpha1.VMObservation{}, &corev1.ConfigMap{},
	} {
		p, err := projection.Transform(o)
		if err != nil {
			t.Fatalf("%T: %v", o, err)
		}
		if again, _ := projection.Transform(p); again != p {
			t.Fatalf("%T: a projection must pass the transform unchanged", o)
		}
	}
}
