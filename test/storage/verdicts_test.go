package storage_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/app"
	"github.com/vmobs/vmobs/internal/simulator"
)

// storageTimeout is the binding and hotplug timeout the manager runs with
// in TestStoragePlaysDiagnosed: seconds where vmobs ships KubeVirt's 10
// minutes, so that a claim that never binds turns Degraded within the test.
const storageTimeout = 4 * time.Second

// storageVerdict is what the storage layer must say of a play's VM.
type storageVerdict struct {
	verdict v1alpha1.Verdict
	reason  string
}

// TestStoragePlaysDiagnosed runs the manager against every storage play of
// the simulator, on the control plane whose PV binder and attach-detach
// controller are Kubernetes' own: the claims, their binding, the
// VolumeAttachments and the attach-detach controller's Warning Events the
// storage layer reads are what Kubernetes writes, not copies. Each play's
// VM must reach its storage verdict, and the normal ones (an import on its
// way, a WaitForFirstConsumer claim whose pod has no node yet) must never
// read Degraded on the way.
func TestStoragePlaysDiagnosed(t *testing.T) {
	want := map[string]storageVerdict{
		"volume-not-bound": {v1alpha1.VerdictDegraded, v1alpha1.ReasonVolumeNotBound},
		// Normal until the launcher pod has a node: the scheduler's
		// Unschedulable is the control plane's to say.
		"volume-not-bound-wffc": {v1alpha1.VerdictProgressing, v1alpha1.ReasonVolumeNotBound},
		"import-failed":         {v1alpha1.VerdictDegraded, v1alpha1.ReasonDataVolumeFailed},
		"attach-failed":         {v1alpha1.VerdictDegraded, v1alpha1.ReasonVolumeAttachFailed},
		"multi-attach":          {v1alpha1.VerdictDegraded, v1alpha1.ReasonVolumeMultiAttach},
		"mount-failed":          {v1alpha1.VerdictDegraded, v1alpha1.ReasonVolumeMountFailed},
		"import-in-progress":    {v1alpha1.VerdictProgressing, v1alpha1.ReasonDataVolumeImporting},
		// Nothing brings a lost volume's data back.
		"pvc-lost": {v1alpha1.VerdictFailed, v1alpha1.ReasonPVCLost},
		// The new VMI's launcher pod waits on node-a for a volume still
		// attached for the dark node: the attach-detach controller's
		// refusal (Multi-Attach) is its consequence, the stale
		// attachment its cause.
		"volume-attachment-stale": {v1alpha1.VerdictDegraded, v1alpha1.ReasonVolumeAttachmentStale},
		"hotplug-attach-failed":   {v1alpha1.VerdictDegraded, v1alpha1.ReasonVolumeAttachFailed},
		"hotplug-volume-stuck":    {v1alpha1.VerdictDegraded, v1alpha1.ReasonHotplugVolumeStuck},
	}
	neverDegraded := map[string]bool{"volume-not-bound-wffc": true, "import-in-progress": true}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opts := app.InProcessOptions()
	opts.Policy.VolumeBindingTimeout = storageTimeout
	opts.Policy.HotplugVolumeTimeout = storageTimeout
	mgr, err := app.StartInProcess(ctx, env.Config, opts)
	must(t, err)
	t.Cleanup(func() {
		if err := mgr.Stop(); err != nil {
			t.Errorf("stopping the manager: %v", err)
		}
	})

	for _, p := range simulator.StorageScenarios {
		t.Run(p.Name, func(t *testing.T) {
			w, ok := want[p.Name]
			if !ok {
				t.Fatalf("no storage verdict for play %s", p.Name)
			}
			ns := namespace(t)
			vm := "vm-" + p.Name
			played := time.Now()
			must(t, p.Play(ctx, sim, ns, vm))

			var seen []string
			last := ""
			err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
				obs := &v1alpha1.VMObservation{}
				if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: vm}, obs); err != nil {
					return false, client.IgnoreNotFound(err)
				}
				l := obs.Status.Layers.Get(v1alpha1.LayerStorage)
				if l == nil {
					return false, nil
				}
				now := fmt.Sprintf("%s/%s", l.Verdict, l.Reason)
				if now != last {
					seen, last = append(seen, now), now
				}
				if neverDegraded[p.Name] && l.Verdict == v1alpha1.VerdictDegraded {
					return false, fmt.Errorf("storage %s on the way (%s): %s", now, l.Message, seen)
				}
				return l.Verdict == w.verdict && l.Reason == w.reason, nil
			})
			if err != nil {
				t.Fatalf("storage layer of %s/%s: want %s/%s, seen %v: %v", ns, vm, w.verdict, w.reason, seen, err)
			}
			t.Logf("storage %s/%s %s after the play (seen %v)", w.verdict, w.reason, time.Since(played).Round(100*time.Millisecond), seen)
			if neverDegraded[p.Name] {
				// Past the timeouts it stays what it is.
				time.Sleep(2 * storageTimeout)
				obs := &v1alpha1.VMObservation{}
				must(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: vm}, obs))
				if l := obs.Status.Layers.Get(v1alpha1.LayerStorage); l == nil || l.Verdict != w.verdict || l.Reason != w.reason {
					t.Errorf("storage layer after %s: %+v, want %s/%s", 2*storageTimeout, l, w.verdict, w.reason)
				}
			}
		})
	}
}
