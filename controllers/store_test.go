package controllers

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// TestLauncherPodsOfABucket: the pod index shares a bucket among several
// VMIs' pods (more VMIs than buckets here, in two namespaces with the same
// names); a lookup returns exactly the pods the VMI controls.
func TestLauncherPodsOfABucket(t *testing.T) {
	s := &Store{Pods: toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{})}
	if err := s.Pods.AddIndexers(toolscache.Indexers{IndexPodVMI: podVMIIndex}); err != nil {
		t.Fatal(err)
	}
	pod := func(ns, vmi, name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + name),
			Labels: map[string]string{kubevirtv1.AppLabel: "virt-launcher"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstance", Name: vmi,
				UID: types.UID(ns + vmi), Controller: ptr.To(true)}}}}
	}
	const vmis = 2 * podBuckets
	for _, ns := range []string{"a", "b"} {
		for i := range vmis {
			vmi := fmt.Sprint("vm-", i)
			for _, p := range []*corev1.Pod{pod(ns, vmi, "virt-launcher-"+vmi+"-1"), pod(ns, vmi, "virt-launcher-"+vmi+"-2")} {
				if err := s.Pods.Add(project(t, p)); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	for _, ns := range []string{"a", "b"} {
		for i := range vmis {
			vmi := fmt.Sprint("vm-", i)
			got, err := s.launcherPods(ns, vmi)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 2 {
				t.Fatalf("%s/%s: %d pods", ns, vmi, len(got))
			}
			for _, p := range got {
				if p.GetNamespace() != ns || p.Owners[0].Name != vmi {
					t.Fatalf("%s/%s: got pod %s/%s", ns, vmi, p.GetNamespace(), p.Name)
				}
			}
		}
	}
	if got, _ := s.launcherPods("a", "no-such-vmi"); len(got) != 0 {
		t.Fatalf("pods of a VMI without any: %d", len(got))
	}
}

// BenchmarkGather is what a reconcile pays to read a running VM's objects
// out of the stores and rebuild the typed objects the engine reads (the VM,
// VMI, launcher pod and node), next to BenchmarkEvaluate's evaluation of
// them (internal/verdict).
func BenchmarkGather(b *testing.B) {
	c, _ := fakeWorld(b, wVMObj(), wVMIObj(), wPodObj(), wNodeObj())
	r := wReconciler(c)
	r.Store = storeOf(b, c)
	key := types.NamespacedName{Namespace: wNS, Name: wVM}
	b.ReportAllocs()
	for b.Loop() {
		in, _, err := r.gather(key)
		if err != nil || in.VMI == nil || len(in.Pods) != 1 || len(in.Nodes) != 1 {
			b.Fatalf("gather: %v, %+v", err, in)
		}
	}
}
