package analyze

import (
	"strings"
	"testing"
	"time"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/verdict"
)

// storageDump is a must-gather's worth of one VM whose claim names a
// StorageClass that does not exist: the VM, its claim, a DataVolume-less
// PVC volume, the PV binder's Warning Event (core/events.yaml as an
// EventList) and a Normal event the storage layer never reads.
const storageDump = `apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata: {name: db, namespace: prod, uid: vm-uid, creationTimestamp: "2026-11-30T10:00:00Z"}
spec:
  runStrategy: Always
  template:
    spec:
      domain: {devices: {}}
      volumes:
      - name: data
        persistentVolumeClaim: {claimName: db-data}
status:
  printableStatus: WaitingForVolumeBinding
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: db-data, namespace: prod, creationTimestamp: "2026-11-30T11:00:00Z"}
spec:
  storageClassName: fast
  accessModes: [ReadWriteOnce]
status: {phase: Pending}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: standard}
provisioner: csi.example.com
---
apiVersion: v1
kind: EventList
items:
- metadata: {name: db-data.1, namespace: prod}
  type: Warning
  reason: ProvisioningFailed
  message: storageclass.storage.k8s.io "fast" not found
  source: {component: persistentvolume-controller}
  involvedObject: {kind: PersistentVolumeClaim, name: db-data, namespace: prod}
  count: 12
  firstTimestamp: "2026-11-30T11:00:00Z"
  lastTimestamp: "2026-11-30T11:55:00Z"
- metadata: {name: db-data.2, namespace: prod}
  type: Normal
  reason: WaitForFirstConsumer
  message: waiting
  involvedObject: {kind: PersistentVolumeClaim, name: db-data, namespace: prod}
`

func TestAnalyzeStorage(t *testing.T) {
	objs, rep := Decode("storage.yaml", []byte(storageDump))
	if len(rep.Errors) > 0 {
		t.Fatalf("errors: %v", rep.Errors)
	}
	if len(objs.PVCs) != 1 || len(objs.StorageClasses) != 1 || len(objs.Events) != 2 {
		t.Fatalf("loaded %d claims, %d classes, %d events; want 1, 1, 2", len(objs.PVCs), len(objs.StorageClasses), len(objs.Events))
	}
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	res := AnalyzeAll(objs, now, verdict.DefaultPolicy())
	if len(res.Observations) != 1 {
		t.Fatalf("%d observations", len(res.Observations))
	}
	st := res.Observations[0].Status
	s := st.Layers.Storage
	if s.Verdict != v1alpha1.VerdictDegraded || s.Reason != v1alpha1.ReasonVolumeNotBound {
		t.Fatalf("storage = %s/%s (%s), want Degraded/VolumeNotBound", s.Verdict, s.Reason, s.Message)
	}
	for _, want := range []string{"StorageClass fast does not exist", `ProvisioningFailed (persistentvolume-controller): storageclass.storage.k8s.io "fast" not found`} {
		if !strings.Contains(s.Message, want) {
			t.Errorf("storage message %q lacks %q", s.Message, want)
		}
	}
	// The control plane waited past its timeout too; the storage layer
	// says why, so it gives the overall reason.
	if st.Reason != v1alpha1.ReasonVolumeNotBound {
		t.Errorf("overall = %s/%s, want the storage layer's reason", st.Verdict, st.Reason)
	}

	// Without any storage object in the dump, the layer judges only what
	// the VM says: its claim is not in the input.
	objs.PVCs, objs.StorageClasses = nil, nil
	res = AnalyzeAll(objs, now, verdict.DefaultPolicy())
	if s := res.Observations[0].Status.Layers.Storage; s.Reason != v1alpha1.ReasonNotInInput {
		t.Errorf("without storage objects: storage = %s/%s, want Unknown/NotInInput", s.Verdict, s.Reason)
	}
}
