package cachestore

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/internal/projection"
	"github.com/vmobs/vmobs/internal/testsupport"
)

// TestLauncherPodsOfABucket: the pod index shares a bucket among several
// VMIs' pods (more VMIs than buckets here, in two namespaces with the same
// names); a lookup returns exactly the pods the VMI controls, from one
// store or from one store per namespace (a cache limited to namespaces).
func TestLauncherPodsOfABucket(t *testing.T) {
	newIndexer := func() toolscache.Indexer {
		return toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{})
	}
	one := newIndexer()
	perNS := map[string]toolscache.Indexer{"a": newIndexer(), "b": newIndexer()}
	for name, tt := range map[string]struct {
		index Index
		into  func(ns string) toolscache.Indexer
	}{
		"one store":             {one, func(string) toolscache.Indexer { return one }},
		"a store per namespace": {indexers{perNS["a"], perNS["b"]}, func(ns string) toolscache.Indexer { return perNS[ns] }},
	} {
		t.Run(name, func(t *testing.T) { testLauncherPods(t, tt.index, tt.into) })
	}
}

func testLauncherPods(t *testing.T, index Index, into func(ns string) toolscache.Indexer) {
	s := &Store{Pods: index}
	if err := s.Pods.AddIndexers(toolscache.Indexers{IndexPodVMI: podVMIIndex}); err != nil {
		t.Fatal(err)
	}
	pod := func(ns, vmi, name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + name),
			Labels: map[string]string{kubevirtv1.AppLabel: "virt-launcher"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstance", Name: vmi,
				UID: types.UID(ns + vmi), Controller: ptr.To(true)}}}}
	}
	const vmis = 2 * buckets
	for _, ns := range []string{"a", "b"} {
		for i := range vmis {
			vmi := fmt.Sprint("vm-", i)
			for _, p := range []*corev1.Pod{pod(ns, vmi, "virt-launcher-"+vmi+"-1"), pod(ns, vmi, "virt-launcher-"+vmi+"-2")} {
				if err := into(ns).Add(testsupport.Project(t, p)); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if n := len(s.Pods.List()); n != 2*2*vmis {
		t.Fatalf("List: %d pods, want %d", n, 2*2*vmis)
	}
	for _, ns := range []string{"a", "b"} {
		if _, ok, err := Get[*projection.Pod](s.Pods, ns+"/virt-launcher-vm-7-2"); !ok || err != nil {
			t.Fatalf("GetByKey %s/virt-launcher-vm-7-2: %t, %v", ns, ok, err)
		}
		for i := range vmis {
			vmi := fmt.Sprint("vm-", i)
			got, err := s.LauncherPods(ns, vmi)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 2 {
				t.Fatalf("%s/%s: %d pods", ns, vmi, len(got))
			}
			for _, p := range got {
				if p.GetNamespace() != ns || p.GetOwnerReferences()[0].Name != vmi {
					t.Fatalf("%s/%s: got pod %s/%s", ns, vmi, p.GetNamespace(), p.Name)
				}
			}
		}
	}
	if _, ok, err := Get[*projection.Pod](s.Pods, "c/virt-launcher-vm-7-2"); ok || err != nil {
		t.Fatalf("GetByKey in a namespace no store holds: %t, %v", ok, err)
	}
	if got, _ := s.LauncherPods("a", "no-such-vmi"); len(got) != 0 {
		t.Fatalf("pods of a VMI without any: %d", len(got))
	}
}

// BenchmarkNamespaceVMs finds the 100 VMs of a namespace among 5,000, as a
// policy's reconcile does.
func BenchmarkNamespaceVMs(b *testing.B) {
	vms := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{})
	for i := range 5000 {
		vm := projection.FromVM(&kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("vm-%d", i), Namespace: fmt.Sprintf("ns-%d", i/100)}})
		if err := vms.Add(vm); err != nil {
			b.Fatal(err)
		}
	}
	s := &Store{VMs: vms}
	for b.Loop() {
		if got := s.NamespaceVMs("ns-25"); len(got) != 100 {
			b.Fatalf("%d VMs", len(got))
		}
	}
}
