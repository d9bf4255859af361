package drain

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// FuzzPredict feeds Predict, Track and Compare objects decoded from
// arbitrary JSON (missing fields, odd strategies, wrong types): no panic,
// the invariants hold, and the result is deterministic.
func FuzzPredict(f *testing.F) {
	seed := func(v any) []byte { b, _ := json.Marshal(v); return b }
	lm := kubevirtv1.EvictionStrategyLiveMigrate
	f.Add(seed(vmi("a", strategy(lm))), seed(vm("a", "Always")), seed(pdb("p", "a", 0)), seed(pvc("data", corev1.ReadWriteOnce)), seed(kubevirtCR(&lm, 1, 1)), "", int64(0))
	f.Add(seed(vmi("a", strategy("Sometimes"), pvcVolume("data"), hostDevice, gpu, nodeSelector("x", "y"))), seed(vm("a", "Sometimes")), seed(pdb("p", "a", 1)), seed(pvc("data")), []byte("null"), string(KindVMs), int64(-3600))
	f.Add([]byte(`{"metadata":{"name":"a","ownerReferences":[{"kind":"VirtualMachine","name":"a","controller":true}]},"status":{"nodeName":"node-a","conditions":[{"type":"LiveMigratable","status":"Maybe"}]},"spec":{"evictionStrategy":""}}`),
		[]byte(`{"metadata":{"name":"a"},"spec":{"running":true,"runStrategy":"Always"}}`), []byte(`{"spec":{"selector":{"matchExpressions":[{"key":"k","operator":"Bogus"}]}}}`), []byte(`{}`), []byte(`{"spec":{"configuration":{"evictionStrategy":"External"}}}`), string(KindKubeVirt), int64(59))
	f.Add([]byte(`{"status":{"nodeName":"node-a","phase":"Failed"}}`), []byte(`[]`), []byte(`7`), []byte(`"x"`), []byte(`{"spec":{"configuration":{"migrations":{"parallelOutboundMigrationsPerNode":0,"parallelMigrationsPerCluster":4294967295}}}}`), string(KindPDBs), int64(1))
	f.Fuzz(func(t *testing.T, vmiJSON, vmJSON, pdbJSON, pvcJSON, kvJSON []byte, unreadable string, offset int64) {
		in := Input{Node: nodeA, Now: now.Add(time.Duration(offset) * time.Second), Nodes: nodes()}
		var v kubevirtv1.VirtualMachineInstance
		if json.Unmarshal(vmiJSON, &v) == nil {
			in.VMIs = append(in.VMIs, v, vmi("fixed"))
		}
		var m kubevirtv1.VirtualMachine
		if json.Unmarshal(vmJSON, &m) == nil {
			in.VMs = append(in.VMs, m)
		}
		var b policyv1.PodDisruptionBudget
		if json.Unmarshal(pdbJSON, &b) == nil {
			in.PDBs = append(in.PDBs, b)
		}
		var c corev1.PersistentVolumeClaim
		if json.Unmarshal(pvcJSON, &c) == nil {
			in.PVCs = append(in.PVCs, c)
		}
		var kv kubevirtv1.KubeVirt
		if json.Unmarshal(kvJSON, &kv) == nil {
			in.KubeVirt = &kv
		}
		if unreadable != "" {
			in.Unreadable = map[Kind]string{Kind(unreadable): "forbidden"}
		}
		p := Predict(in)
		checkInvariants(t, in, p)
		first, err := json.Marshal(p)
		if err != nil {
			t.Fatalf("prediction does not marshal: %v", err)
		}
		if again, _ := json.Marshal(Predict(in)); !bytes.Equal(first, again) {
			t.Fatalf("not deterministic:\n%s\n%s", first, again)
		}
		tr := Track(p, in)
		if len(tr.VMs) != len(p.VMs) {
			t.Fatalf("%d tracked of %d", len(tr.VMs), len(p.VMs))
		}
		cmp := Compare(p, in)
		if cmp.Right+cmp.Wrong != len(p.VMs) {
			t.Fatalf("compare counts %d+%d of %d", cmp.Right, cmp.Wrong, len(p.VMs))
		}
		for _, x := range cmp.VMs {
			if !slices.Contains(Outcomes, x.Observed) {
				t.Fatalf("observed %q", x.Observed)
			}
		}
	})
}
