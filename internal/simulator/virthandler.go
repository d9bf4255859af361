package simulator

import (
	"context"
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	// managerDaemonSet is kube-controller-manager's DaemonSet controller.
	managerDaemonSet = "daemonset-controller"
	// podTemplateGeneration is the label the DaemonSet controller puts on
	// its pods beside controller-revision-hash (k8s:pkg/controller/daemon/util).
	podTemplateGeneration = "pod-template-generation"
)

// VirtHandlerRevision is one revision of virt-handler's DaemonSet: its
// pods' controller-revision-hash and pod-template-generation labels.
type VirtHandlerRevision struct {
	// Hash is the controller-revision-hash the DaemonSet controller
	// labels the revision's pods with.
	Hash string
	// Generation is the DaemonSet's generation the revision was made at.
	Generation int
	// Broken makes the revision's virt-handler never turn ready: its
	// container runs and fails its readiness probe. Stop the node's
	// heartbeats too (RunHeartbeats' Nodes) for a virt-handler that is
	// broken the way KubeVirt sees one.
	Broken bool
}

// RunVirtHandler is the DaemonSet controller running virt-handler's pod
// of rev on node, kube-scheduler binding it and the kubelet starting it:
// a pod in KubeVirtNamespace labelled as virt-operator's DaemonSet labels
// its template (kubevirt.io=virt-handler,
// kv:pkg/virt-operator/resource/generate/components/daemonsets.go) plus
// the DaemonSet controller's labels. The pod has no owner reference: no
// DaemonSet object stands behind it, and the garbage collector would
// delete a pod whose owner is missing.
func (s *Simulator) RunVirtHandler(ctx context.Context, node string, rev VirtHandlerRevision) error {
	if rev.Hash == "" {
		return fmt.Errorf("virt-handler on %s: a revision needs a hash", node)
	}
	if err := s.EnsureNamespace(ctx, KubeVirtNamespace); err != nil {
		return err
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:    KubeVirtNamespace,
			GenerateName: "virt-handler-",
			Name:         s.generateName("virt-handler-"),
			Labels: map[string]string{
				kubevirtv1.AppLabel:                   "virt-handler",
				"prometheus.kubevirt.io":              "true",
				appsv1.DefaultDaemonSetUniqueLabelKey: rev.Hash,
				podTemplateGeneration:                 strconv.Itoa(rev.Generation),
			},
		},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "virt-handler", Image: "quay.io/kubevirt/virt-handler:" + rev.Hash}},
		},
	}
	if err := s.Client.Create(ctx, pod, client.FieldOwner(managerDaemonSet)); err != nil {
		return fmt.Errorf("creating virt-handler's pod on %s: %w", node, err)
	}
	if err := s.bindPod(ctx, pod, node); err != nil {
		return err
	}
	hostIP, podIP := s.podIP(ctx, node)
	now := s.now()
	_, err := s.updatePodStatus(ctx, pod.Namespace, pod.Name, managerKubelet, func(p *corev1.Pod) error {
		p.Status.Phase = corev1.PodRunning
		p.Status.HostIP, p.Status.HostIPs = hostIP, []corev1.HostIP{{IP: hostIP}}
		p.Status.PodIP, p.Status.PodIPs = podIP, []corev1.PodIP{{IP: podIP}}
		p.Status.StartTime = &now
		cs := s.containerStatus(p.Spec.Containers[0], now)
		cs.Ready, cs.Started = !rev.Broken, ptr.To(true)
		cs.State.Running = &corev1.ContainerStateRunning{StartedAt: now}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{cs}
		ready := corev1.ConditionTrue
		reason := ""
		if rev.Broken {
			ready, reason = corev1.ConditionFalse, "ContainersNotReady"
		}
		setPodCond(p, corev1.PodCondition{Type: corev1.ContainersReady, Status: ready, Reason: reason}, now)
		setPodCond(p, corev1.PodCondition{Type: corev1.PodReady, Status: ready, Reason: reason}, now)
		return nil
	})
	return err
}

// RollVirtHandler is the DaemonSet's rolling update reaching node: the
// DaemonSet controller deletes the node's virt-handler pod (the kubelet
// confirms at once) and runs rev's in its place (RunVirtHandler).
func (s *Simulator) RollVirtHandler(ctx context.Context, node string, rev VirtHandlerRevision) error {
	var pods corev1.PodList
	if err := s.Client.List(ctx, &pods, client.InNamespace(KubeVirtNamespace),
		client.MatchingLabels{kubevirtv1.AppLabel: "virt-handler"}); err != nil {
		return fmt.Errorf("listing virt-handler's pods: %w", err)
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName != node {
			continue
		}
		if err := s.Client.Delete(ctx, p, client.GracePeriodSeconds(0)); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting virt-handler's pod %s on %s: %w", p.Name, node, err)
		}
	}
	return s.RunVirtHandler(ctx, node, rev)
}
