package controllers

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/api/v1alpha1"
)

const (
	// HeartbeatAnnotation is virt-handler's heartbeat on its Node.
	HeartbeatAnnotation = kubevirtv1.VirtHandlerHeartbeat
	// SchedulableLabel is virt-handler's verdict on its Node.
	SchedulableLabel = kubevirtv1.NodeSchedulable
	// NetworkStatusAnnotation is Multus' record of the pod's networks.
	NetworkStatusAnnotation = "k8s.v1.cni.cncf.io/network-status"
	// LauncherLabel selects virt-launcher pods, the only pods vmobs caches.
	LauncherLabel = kubevirtv1.AppLabel + "=virt-launcher"
)

// CacheOptions bounds what the manager caches: launcher pods only, and of
// every object only the fields the engine and the predicates read. A full
// launcher pod costs tens of KiB in the cache, mostly managedFields and spec;
// what is left is a few hundred bytes.
//
// namespaces limits the cache (and so the controller) to those namespaces;
// empty means all. trim false keeps whole objects (to measure what the
// transforms save).
func CacheOptions(namespaces []string, vmSelector labels.Selector, trim bool) cache.Options {
	launchers, err := labels.Parse(LauncherLabel)
	if err != nil {
		panic(err) // a constant
	}
	// ByObject is keyed by object pointers: each kind must have exactly one
	// key, or controller-runtime keeps one of the entries at random and
	// drops the label selector or the transform of the other.
	var (
		pod  = &corev1.Pod{}
		node = &corev1.Node{}
		vmi  = &kubevirtv1.VirtualMachineInstance{}
		vm   = &kubevirtv1.VirtualMachine{}
		obs  = &v1alpha1.VMObservation{}
	)
	byObject := map[client.Object]cache.ByObject{pod: {Label: launchers}}
	if vmSelector != nil && !vmSelector.Empty() {
		byObject[vm] = cache.ByObject{Label: vmSelector}
		byObject[vmi] = cache.ByObject{Label: vmSelector}
		byObject[obs] = cache.ByObject{Label: vmSelector}
	}
	opts := cache.Options{ByObject: byObject}
	if len(namespaces) > 0 {
		opts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range namespaces {
			opts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	if !trim {
		return opts
	}
	opts.DefaultTransform = cache.TransformStripManagedFields()
	set := func(obj client.Object, t toolscache.TransformFunc) {
		bo := byObject[obj]
		bo.Transform = t
		byObject[obj] = bo
	}
	set(pod, trimPod)
	set(node, trimNode)
	set(vmi, trimVMI)
	set(vm, trimVM)
	// VMObservations keep their managedFields: the time of our last status
	// write is read from there (see lastStatusWrite).
	set(obs, func(o any) (any, error) { return o, nil })
	return opts
}

// keepAnnotations keeps the annotations vmobs reads: KubeVirt's own and
// Multus' network-status. kubectl's last-applied-configuration alone can
// double an object's size.
func keepAnnotations(in map[string]string) map[string]string {
	var out map[string]string
	for k, v := range in {
		if k == NetworkStatusAnnotation || strings.Contains(k, "kubevirt.io/") {
			if out == nil {
				out = make(map[string]string)
			}
			out[k] = v
		}
	}
	return out
}

func trimPod(o any) (any, error) {
	pod, ok := o.(*corev1.Pod)
	if !ok {
		return o, nil
	}
	pod.ManagedFields = nil
	pod.Annotations = keepAnnotations(pod.Annotations)
	// Of the spec only the node matters; containers, volumes and the
	// rest are KubeVirt's business.
	pod.Spec = corev1.PodSpec{NodeName: pod.Spec.NodeName}
	for i := range pod.Status.ContainerStatuses {
		cs := &pod.Status.ContainerStatuses[i]
		cs.Image, cs.ImageID, cs.ContainerID = "", "", ""
		cs.VolumeMounts, cs.AllocatedResources, cs.Resources, cs.User = nil, nil, nil, nil
	}
	pod.Status.InitContainerStatuses = nil
	pod.Status.EphemeralContainerStatuses = nil
	return pod, nil
}

func trimNode(o any) (any, error) {
	node, ok := o.(*corev1.Node)
	if !ok {
		return o, nil
	}
	node.ManagedFields = nil
	node.Annotations = keepAnnotations(node.Annotations)
	node.Spec = corev1.NodeSpec{Unschedulable: node.Spec.Unschedulable, Taints: node.Spec.Taints}
	node.Status = corev1.NodeStatus{Conditions: node.Status.Conditions}
	return node, nil
}

func trimVMI(o any) (any, error) {
	vmi, ok := o.(*kubevirtv1.VirtualMachineInstance)
	if !ok {
		return o, nil
	}
	vmi.ManagedFields = nil
	if _, ok := vmi.Annotations[corev1.LastAppliedConfigAnnotation]; ok {
		delete(vmi.Annotations, corev1.LastAppliedConfigAnnotation)
	}
	// cloud-init payloads and sysprep can be many KiB each and say nothing
	// about health.
	for i := range vmi.Spec.Volumes {
		v := &vmi.Spec.Volumes[i]
		if v.CloudInitNoCloud != nil {
			v.CloudInitNoCloud.UserData, v.CloudInitNoCloud.UserDataBase64 = "", ""
			v.CloudInitNoCloud.NetworkData, v.CloudInitNoCloud.NetworkDataBase64 = "", ""
		}
		if v.CloudInitConfigDrive != nil {
			v.CloudInitConfigDrive.UserData, v.CloudInitConfigDrive.UserDataBase64 = "", ""
			v.CloudInitConfigDrive.NetworkData, v.CloudInitConfigDrive.NetworkDataBase64 = "", ""
		}
	}
	return vmi, nil
}

func trimVM(o any) (any, error) {
	vm, ok := o.(*kubevirtv1.VirtualMachine)
	if !ok {
		return o, nil
	}
	vm.ManagedFields = nil
	delete(vm.Annotations, corev1.LastAppliedConfigAnnotation)
	// The template is the VMI's business; the VMI itself is cached.
	vm.Spec.Template = nil
	vm.Spec.DataVolumeTemplates = nil
	return vm, nil
}

func schemaGroup(apiVersion string) (string, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	return gv.Group, err
}
