package e2e

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/api/v1alpha1"
)

var _ = Describe("The storage layer, read from the API server", func() {
	It("names a claim whose StorageClass does not exist, and follows the claim and the class as they change", func() {
		ns, _ := newWorld("storage")
		class := "missing-" + ns
		pvc := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vm1-data"},
			Spec: corev1.PersistentVolumeClaimSpec{
				StorageClassName: ptr.To(class),
				AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			},
		}
		Expect(k8s.Create(ctx, pvc)).To(Succeed())
		v := &kubevirtv1.VirtualMachine{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: vm},
			Spec: kubevirtv1.VirtualMachineSpec{
				RunStrategy: ptr.To(kubevirtv1.RunStrategyAlways),
				Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{Spec: kubevirtv1.VirtualMachineInstanceSpec{
					Domain: kubevirtv1.DomainSpec{Devices: kubevirtv1.Devices{}},
					Volumes: []kubevirtv1.Volume{{Name: "data", VolumeSource: kubevirtv1.VolumeSource{
						PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{
							PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: pvc.Name}},
					}}},
				}},
			},
		}
		Expect(k8s.Create(ctx, v)).To(Succeed())
		storageSays := func(part string) OmegaMatcher {
			return WithTransform(func(o *v1alpha1.VMObservation) bool {
				return o != nil && o.Status.Layers != nil && strings.Contains(o.Status.Layers.Storage.Message, part)
			}, BeTrue())
		}
		Eventually(suite.Observation(ns, vm)).Should(And(
			layerIs(v1alpha1.LayerStorage, v1alpha1.VerdictProgressing, v1alpha1.ReasonVolumeNotBound),
			storageSays("StorageClass "+class+" does not exist")))

		// The class appears: the cause moves on to the class's provisioner.
		sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: class}, Provisioner: "kubernetes.io/no-provisioner"}
		Expect(k8s.Create(ctx, sc)).To(Succeed())
		DeferCleanup(func() { _ = k8s.Delete(ctx, sc) })
		Eventually(suite.Observation(ns, vm)).Should(storageSays("has no provisioner"))

		// The claim binds (as the PV binder would write it): Healthy.
		pvc.Spec.VolumeName = "pv-" + ns
		Expect(k8s.Update(ctx, pvc)).To(Succeed())
		pvc.Status.Phase = corev1.ClaimBound
		Expect(k8s.Status().Update(ctx, pvc)).To(Succeed())
		Eventually(suite.Observation(ns, vm)).Should(layerIs(v1alpha1.LayerStorage, v1alpha1.VerdictHealthy, v1alpha1.ReasonVolumesReady))
	})
})
