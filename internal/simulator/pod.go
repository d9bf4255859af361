package simulator

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/netip"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/internal/membership"
)

// ComputeContainer is the launcher container virt-controller inspects.
const ComputeContainer = "compute"

// NetworkStatus is one entry of Multus' k8s.v1.cni.cncf.io/network-status
// pod annotation.
type NetworkStatus struct {
	// Name is the network: the cluster network's name, or
	// <namespace>/<NetworkAttachmentDefinition>.
	Name string `json:"name"`
	// Interface is the interface in the pod (eth0, pod<hash>).
	Interface string `json:"interface,omitempty"`
	// IPs are the pod's addresses on the network.
	IPs []string `json:"ips,omitempty"`
	// MAC is the pod interface's MAC address.
	MAC string `json:"mac,omitempty"`
	// Default marks the cluster (pod) network.
	Default bool `json:"default,omitempty"`
	// DNS is the network's DNS settings (always empty here).
	DNS struct{} `json:"dns"`
	// Gateway lists the network's gateways.
	Gateway []string `json:"gateway,omitempty"`
}

// migrationTarget marks a launcher pod as a migration's target pod.
type migrationTarget struct {
	name       string
	uid        types.UID
	sourceNode string
}

// launcherPod builds the virt-launcher pod virt-controller creates for vmi
// (kv:pkg/virt-controller/services/template.go), unbound.
func (s *Simulator) launcherPod(vmi *kubevirtv1.VirtualMachineInstance, target *migrationTarget) *corev1.Pod {
	labels := map[string]string{}
	for k, v := range vmi.Labels {
		switch k {
		case kubevirtv1.NodeNameLabel, kubevirtv1.MigrationTargetNodeNameLabel:
			// Dynamic labels, synced later to the current pod only.
		default:
			labels[k] = v
		}
	}
	labels[kubevirtv1.AppLabel] = "virt-launcher"
	labels[kubevirtv1.CreatedByLabel] = string(vmi.UID)
	labels[kubevirtv1.DeprecatedVirtualMachineNameLabel] = hostname(vmi.Name)
	labels[kubevirtv1.VirtualMachineInstanceIDLabel] = vmiIDLabel(vmi.Name)

	annotations := map[string]string{}
	for k, v := range vmi.Annotations {
		if strings.HasPrefix(k, "kubectl.kubernetes.io") || k == kubevirtv1.ControllerAPIStorageVersionObservedAnnotation || k == kubevirtv1.ControllerAPILatestVersionObservedAnnotation {
			continue
		}
		annotations[k] = v
	}
	annotations[kubevirtv1.DomainAnnotation] = vmi.Name
	annotations["kubectl.kubernetes.io/default-container"] = ComputeContainer
	annotations[kubevirtv1.MigrationTransportUnixAnnotation] = "true"
	annotations["descheduler.alpha.kubernetes.io/request-evict-only"] = ""
	if req := multusRequest(vmi); req != "" {
		annotations[networksAnnotation] = req
	}

	requests := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("100m"),
		corev1.ResourceMemory: resource.MustParse("2294Mi"),
	}
	devices := corev1.ResourceList{
		"devices.kubevirt.io/kvm":       resource.MustParse("1"),
		"devices.kubevirt.io/tun":       resource.MustParse("1"),
		"devices.kubevirt.io/vhost-net": resource.MustParse("1"),
	}
	for _, hd := range vmi.Spec.Domain.Devices.HostDevices {
		devices[corev1.ResourceName(hd.DeviceName)] = resource.MustParse("1")
	}
	for k, v := range devices {
		requests[k] = v
	}

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       vmi.Namespace,
			GenerateName:    "virt-launcher-" + vmi.Name + "-",
			Name:            s.generateName("virt-launcher-" + vmi.Name + "-"),
			Labels:          labels,
			Annotations:     annotations,
			OwnerReferences: []metav1.OwnerReference{vmiOwnerRef(vmi)},
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			Hostname:                      hostname(vmi.Name),
			AutomountServiceAccountToken:  ptr.To(false),
			TerminationGracePeriodSeconds: ptr.To[int64](210),
			NodeSelector:                  nodeSelector(vmi),
			// virt-controller sets the gate False (reason Paused) while the VMI is
			// paused.
			ReadinessGates: []corev1.PodReadinessGate{{ConditionType: kubevirtv1.VirtualMachineUnpaused}},
			SecurityContext: &corev1.PodSecurityContext{
				RunAsUser: ptr.To[int64](107), RunAsGroup: ptr.To[int64](107), FSGroup: ptr.To[int64](107),
				RunAsNonRoot:   ptr.To(true),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			InitContainers: []corev1.Container{
				{
					Name: "container-disk-binary", Image: s.LauncherImage,
					Command: []string{"/usr/bin/cp", "/usr/bin/container-disk", "/init/usr/bin/container-disk"},
				},
			},
			Containers: []corev1.Container{{
				Name:  ComputeContainer,
				Image: s.LauncherImage,
				Command: []string{"/usr/bin/virt-launcher-monitor", "--qemu-timeout", "345s", "--name", vmi.Name,
					"--uid", string(vmi.UID), "--namespace", vmi.Namespace, "--kubevirt-share-dir", "/var/run/kubevirt",
					"--ephemeral-disk-dir", "/var/run/kubevirt-ephemeral-disks", "--container-disk-dir", "/var/run/kubevirt/container-disks",
					"--grace-period-seconds", "195", "--hook-sidecars", "0"},
				Resources: corev1.ResourceRequirements{Requests: requests, Limits: devices},
			}},
		},
	}
	for _, name := range []string{"private", "public", "sockets", "virt-bin-share-dir", "libvirt-runtime", "ephemeral-disks", "container-disks", "hotplug-disks"} {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	}
	for _, v := range vmi.Spec.Volumes {
		switch {
		case v.ContainerDisk != nil:
			small := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("40M")}
			pod.Spec.InitContainers = append(pod.Spec.InitContainers, corev1.Container{
				Name: "volume" + v.Name + "-init", Image: v.ContainerDisk.Image,
				Command: []string{"/usr/bin/container-disk"}, Args: []string{"--no-op"},
				Resources: corev1.ResourceRequirements{Requests: small, Limits: small},
			})
			pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{
				Name: "volume" + v.Name, Image: v.ContainerDisk.Image,
				Command:   []string{"/var/run/kubevirt/container-disks/container-disk"},
				Args:      []string{"--copy-path", "/var/run/kubevirt-ephemeral-disks/container-disk-data/" + string(vmi.UID) + "/disk_0"},
				Resources: corev1.ResourceRequirements{Requests: small, Limits: small},
			})
		case v.PersistentVolumeClaim != nil && !v.PersistentVolumeClaim.Hotpluggable:
			pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: v.Name, VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: v.PersistentVolumeClaim.ClaimName},
			}})
		case v.DataVolume != nil && !v.DataVolume.Hotpluggable:
			// A DataVolume's PVC has its name.
			pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: v.Name, VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: v.DataVolume.Name},
			}})
		}
	}
	// The serial console logger is a native sidecar: an init container
	// that keeps running.
	pod.Spec.InitContainers = append(pod.Spec.InitContainers, corev1.Container{
		Name: "guest-console-log", Image: s.LauncherImage,
		Command:       []string{"/usr/bin/virt-tail", "--logfile", "/var/run/kubevirt-private/" + string(vmi.UID) + "/virt-serial0-log"},
		RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways),
	})
	if target != nil {
		pod.Labels[kubevirtv1.MigrationJobLabel] = string(target.uid)
		pod.Annotations[kubevirtv1.MigrationJobNameAnnotation] = target.name
		pod.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{kubevirtv1.CreatedByLabel: string(vmi.UID)}},
				TopologyKey:   "kubernetes.io/hostname",
			}},
		}}
	}
	return pod
}

// nodeSelector is the launcher pod's: the VMI's, and KubeVirt's own.
func nodeSelector(vmi *kubevirtv1.VirtualMachineInstance) map[string]string {
	sel := map[string]string{}
	for k, v := range vmi.Spec.NodeSelector {
		sel[k] = v
	}
	sel[kubevirtv1.NodeSchedulable] = "true"
	sel["kubernetes.io/arch"] = "amd64"
	return sel
}

// multusRequest is the k8s.v1.cni.cncf.io/networks annotation for the
// VMI's Multus networks.
func multusRequest(vmi *kubevirtv1.VirtualMachineInstance) string {
	type sel struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
		Interface string `json:"interface"`
		MAC       string `json:"mac,omitempty"`
	}
	var out []sel
	for _, n := range vmi.Spec.Networks {
		if n.Multus == nil || n.Multus.Default {
			continue
		}
		out = append(out, sel{Name: n.Multus.NetworkName, Namespace: vmi.Namespace, Interface: podInterfaceName(n.Name, false), MAC: specMAC(vmi, n.Name)})
	}
	if len(out) == 0 {
		return ""
	}
	b, _ := json.Marshal(out)
	return string(b)
}

// secondaryIP is the VMI's address on a Multus network. It is the same for
// every launcher pod of the VMI (a reservation in the network's IPAM), so
// that a migrated guest keeps the address the network knows it by.
func secondaryIP(vmi *kubevirtv1.VirtualMachineInstance, network string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(string(vmi.UID) + "/" + network))
	v := h.Sum32()
	return fmt.Sprintf("172.%d.%d.%d", 16+(v>>16)%16, (v>>8)%256, 2+v%250)
}

func specMAC(vmi *kubevirtv1.VirtualMachineInstance, iface string) string {
	for _, i := range vmi.Spec.Domain.Devices.Interfaces {
		if i.Name == iface {
			return i.MacAddress
		}
	}
	return ""
}

// createLauncherPod is virt-controller creating the pod and setting its
// readiness gate (the VMI is not paused).
func (s *Simulator) createLauncherPod(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, target *migrationTarget) (*corev1.Pod, error) {
	pod := s.launcherPod(vmi, target)
	// The seeded names can repeat (another simulator with the same seed,
	// a restarted demo): draw again, as the API server's generateName does.
	err := s.Client.Create(ctx, pod, client.FieldOwner(managerVirtController))
	for try := 0; apierrors.IsAlreadyExists(err) && try < 8; try++ {
		pod.Name = s.generateName(pod.GenerateName)
		err = s.Client.Create(ctx, pod, client.FieldOwner(managerVirtController))
	}
	if err != nil {
		return nil, fmt.Errorf("creating launcher pod for VMI %s/%s: %w", vmi.Namespace, vmi.Name, err)
	}
	now := s.now()
	return s.updatePodStatus(ctx, pod.Namespace, pod.Name, managerVirtController, func(p *corev1.Pod) error {
		setPodCond(p, corev1.PodCondition{Type: kubevirtv1.VirtualMachineUnpaused, Status: corev1.ConditionTrue, Reason: "NotPaused"}, now)
		return nil
	})
}

// bindPod is kube-scheduler binding the pod to node (pods/binding, which
// sets spec.nodeName and PodScheduled=True).
func (s *Simulator) bindPod(ctx context.Context, pod *corev1.Pod, node string) error {
	b := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}
	if err := s.Client.SubResource("binding").Create(ctx, pod, b, client.FieldOwner(managerScheduler)); err != nil {
		return fmt.Errorf("binding pod %s/%s to %s: %w", pod.Namespace, pod.Name, node, err)
	}
	now := s.now()
	// The binding stamps PodScheduled with the API server's time; the
	// scheduler's clock here is the simulator's.
	_, err := s.updatePodStatus(ctx, pod.Namespace, pod.Name, managerScheduler, func(p *corev1.Pod) error {
		if c := podCond(p, corev1.PodScheduled); c != nil {
			c.LastTransitionTime = now
		}
		setPodCond(p, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now}, now)
		return nil
	})
	return err
}

// markUnschedulable is kube-scheduler failing to place the pod.
func (s *Simulator) markUnschedulable(ctx context.Context, ns, pod, msg string) error {
	now := s.now()
	_, err := s.updatePodStatus(ctx, ns, pod, managerScheduler, func(p *corev1.Pod) error {
		p.Status.Phase = corev1.PodPending
		setPodCond(p, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: msg}, now)
		return nil
	})
	return err
}

// wirePod is Multus wiring the sandbox on node: it writes the
// network-status annotation with the pod's addresses.
func (s *Simulator) wirePod(ctx context.Context, ns, name, node string, vmi *kubevirtv1.VirtualMachineInstance) (podIP, hostIP string, err error) {
	hostIP, podIP = s.podIP(ctx, node)
	ip := netip.MustParseAddr(podIP).As4()
	statuses := []NetworkStatus{{
		Name: PodNetworkName, Interface: "eth0", IPs: []string{podIP},
		// OVN-Kubernetes derives the pod MAC from the IP.
		MAC:     fmt.Sprintf("0a:58:%02x:%02x:%02x:%02x", ip[0], ip[1], ip[2], ip[3]),
		Default: true, Gateway: []string{s.gateway(ctx, node)},
	}}
	for _, n := range vmi.Spec.Networks {
		if n.Multus == nil || n.Multus.Default {
			continue
		}
		statuses = append(statuses, NetworkStatus{
			Name: vmi.Namespace + "/" + n.Multus.NetworkName, Interface: podInterfaceName(n.Name, false),
			IPs: []string{secondaryIP(vmi, n.Name)}, MAC: specMAC(vmi, n.Name),
		})
	}
	raw, err := json.MarshalIndent(statuses, "", "    ")
	if err != nil {
		return "", "", err
	}
	_, err = s.updatePod(ctx, ns, name, managerMultus, func(p *corev1.Pod) error {
		setAnnotation(p, membership.NetworkStatusAnnotation, string(raw))
		return nil
	})
	return podIP, hostIP, err
}

// placePod takes a created pod onto node up to its containers:
// kube-scheduler binds it (bindPod) and Multus wires its sandbox (wirePod).
// It returns the pod's and the node's addresses.
func (s *Simulator) placePod(ctx context.Context, pod *corev1.Pod, node string, vmi *kubevirtv1.VirtualMachineInstance) (podIP, hostIP string, err error) {
	if err := s.bindPod(ctx, pod, node); err != nil {
		return "", "", err
	}
	return s.wirePod(ctx, pod.Namespace, pod.Name, node, vmi)
}

// runPod is the kubelet starting the pod's containers: phase Running, the
// init containers done (guest-console-log keeps running as a sidecar), all
// containers running and ready, and Ready computed with the readiness gate.
func (s *Simulator) runPod(ctx context.Context, ns, name, podIP, hostIP string) (*corev1.Pod, error) {
	now := s.now()
	return s.updatePodStatus(ctx, ns, name, managerKubelet, func(p *corev1.Pod) error {
		p.Status.Phase = corev1.PodRunning
		p.Status.HostIP = hostIP
		p.Status.HostIPs = []corev1.HostIP{{IP: hostIP}}
		p.Status.PodIP = podIP
		p.Status.PodIPs = []corev1.PodIP{{IP: podIP}}
		p.Status.StartTime = &now
		p.Status.InitContainerStatuses = nil
		for _, c := range p.Spec.InitContainers {
			cs := s.containerStatus(c, now)
			if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
				cs.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}
				cs.Ready, cs.Started = true, ptr.To(true)
			} else {
				cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
					Reason: "Completed", ExitCode: 0, StartedAt: now, FinishedAt: now, ContainerID: cs.ContainerID,
				}}
				cs.Started = ptr.To(false)
			}
			p.Status.InitContainerStatuses = append(p.Status.InitContainerStatuses, cs)
		}
		p.Status.ContainerStatuses = nil
		for _, c := range p.Spec.Containers {
			cs := s.containerStatus(c, now)
			cs.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}
			cs.Ready, cs.Started = true, ptr.To(true)
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, cs)
		}
		setPodCond(p, corev1.PodCondition{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionTrue}, now)
		setPodCond(p, corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionTrue}, now)
		setPodCond(p, corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionTrue}, now)
		kubeletReady(p, now)
		return nil
	})
}

func (s *Simulator) containerStatus(c corev1.Container, now metav1.Time) corev1.ContainerStatus {
	image := c.Image
	repo := image
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		repo = image[:i]
	}
	return corev1.ContainerStatus{
		Name: c.Name, Image: image, ImageID: repo + "@sha256:" + s.hex(32),
		ContainerID: "cri-o://" + s.hex(32),
	}
}

// kubeletReady recomputes the pod's Ready condition as the kubelet does:
// containers ready and every readiness gate True.
func kubeletReady(p *corev1.Pod, now metav1.Time) {
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		reason := "PodFailed"
		if p.Status.Phase == corev1.PodSucceeded {
			reason = "PodCompleted"
		}
		setPodCond(p, corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, Reason: reason}, now)
		setPodCond(p, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: reason}, now)
		return
	}
	if c := podCond(p, corev1.ContainersReady); c == nil || c.Status != corev1.ConditionTrue {
		msg := ""
		if c != nil {
			msg = c.Message
		}
		setPodCond(p, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", Message: msg}, now)
		return
	}
	for _, g := range p.Spec.ReadinessGates {
		c := podCond(p, g.ConditionType)
		if c == nil || c.Status != corev1.ConditionTrue {
			st := "nonexistent"
			if c != nil {
				st = string(c.Status)
			}
			setPodCond(p, corev1.PodCondition{
				Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ReadinessGatesNotReady",
				Message: fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but %s", g.ConditionType, st),
			}, now)
			return
		}
	}
	setPodCond(p, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue}, now)
}

// terminatePod is the kubelet reporting that the pod's containers exited:
// phase Succeeded (every container Completed) or Failed (the compute
// container ended with reason and exitCode, e.g. OOMKilled/137).
func (s *Simulator) terminatePod(ctx context.Context, ns, name string, phase corev1.PodPhase, reason string, exitCode int32) (*corev1.Pod, error) {
	now := s.now()
	return s.updatePodStatus(ctx, ns, name, managerKubelet, func(p *corev1.Pod) error {
		p.Status.Phase = phase
		end := func(cs *corev1.ContainerStatus, reason string, code int32) {
			started := now
			if cs.State.Running != nil {
				started = cs.State.Running.StartedAt
			}
			if cs.State.Terminated != nil {
				return
			}
			cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				Reason: reason, ExitCode: code, StartedAt: started, FinishedAt: now, ContainerID: cs.ContainerID,
			}}
			cs.Ready, cs.Started = false, ptr.To(false)
		}
		if len(p.Status.ContainerStatuses) == 0 {
			for _, c := range p.Spec.Containers {
				p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, s.containerStatus(c, now))
			}
		}
		for i := range p.Status.ContainerStatuses {
			cs := &p.Status.ContainerStatuses[i]
			if cs.Name == ComputeContainer && phase == corev1.PodFailed {
				end(cs, reason, exitCode)
				continue
			}
			end(cs, "Completed", 0)
		}
		for i := range p.Status.InitContainerStatuses {
			end(&p.Status.InitContainerStatuses[i], "Completed", 0)
		}
		kubeletReady(p, now)
		return nil
	})
}

// LauncherPods lists the virt-launcher pods whose controller is the VMI,
// oldest first (a migration target after its source).
func (s *Simulator) LauncherPods(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance) ([]corev1.Pod, error) {
	var list corev1.PodList
	if err := s.Client.List(ctx, &list, client.InNamespace(vmi.Namespace), client.MatchingLabels{kubevirtv1.CreatedByLabel: string(vmi.UID)}); err != nil {
		return nil, fmt.Errorf("listing launcher pods of %s/%s: %w", vmi.Namespace, vmi.Name, err)
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if ref := metav1.GetControllerOf(&p); ref != nil && ref.UID == vmi.UID {
			out = append(out, p)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		ti, tj := out[i].CreationTimestamp, out[j].CreationTimestamp
		if !ti.Equal(&tj) {
			return ti.Before(&tj)
		}
		// Same second: a migration target is the newer one.
		_, mi := out[i].Labels[kubevirtv1.MigrationJobLabel]
		_, mj := out[j].Labels[kubevirtv1.MigrationJobLabel]
		if mi != mj {
			return mj
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

func podDone(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// currentPod is KubeVirt's CurrentVMIPod: the newest pod on the VMI's node,
// or the newest pod when the VMI has no node.
func currentPod(vmi *kubevirtv1.VirtualMachineInstance, pods []corev1.Pod) *corev1.Pod {
	var cur *corev1.Pod
	for i := range pods {
		p := &pods[i]
		if vmi.Status.NodeName != "" && p.Spec.NodeName != vmi.Status.NodeName {
			continue
		}
		cur = p
	}
	return cur
}

// currentLauncher is the VMI's current launcher pod (currentPod of its
// launcher pods), nil when it has none.
func (s *Simulator) currentLauncher(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance) (*corev1.Pod, error) {
	pods, err := s.LauncherPods(ctx, vmi)
	if err != nil {
		return nil, err
	}
	return currentPod(vmi, pods), nil
}

// vmiAndLauncher is the prelude of the steps that act through the VMI's
// launcher pod: it reads the VMI, requires one of phases (none allows
// any; vmiInPhase) and finds its current launcher pod. The pod is nil when
// there is none; whether that is an error is the step's to say, as some
// steps tolerate it and others word it their own way.
func (s *Simulator) vmiAndLauncher(ctx context.Context, ns, name, step string, phases ...kubevirtv1.VirtualMachineInstancePhase) (*kubevirtv1.VirtualMachineInstance, *corev1.Pod, error) {
	vmi, err := s.vmiInPhase(ctx, ns, name, step, phases...)
	if err != nil {
		return nil, nil, err
	}
	pod, err := s.currentLauncher(ctx, vmi)
	if err != nil {
		return nil, nil, err
	}
	return vmi, pod, nil
}

// controllerSync is virt-controller's periodic VMI sync (syncPods); a VMI
// that is gone leaves only the VM's status to follow.
func (s *Simulator) controllerSync(ctx context.Context, ns, name string) error {
	vmi, err := s.getVMI(ctx, ns, name)
	if apierrors.IsNotFound(err) {
		return s.syncVM(ctx, ns, name)
	}
	if err != nil {
		return err
	}
	return s.syncPods(ctx, vmi, "")
}

// syncPods is virt-controller syncing the VMI with its launcher pods, in
// one update: the VMI moves to phase (unless it is empty), activePods is
// recomputed from the pods it owns (finished pods included, kubevirt#12773)
// and the Ready condition derived from the current pod; then the VM's
// status follows.
func (s *Simulator) syncPods(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, phase kubevirtv1.VirtualMachineInstancePhase) error {
	pods, err := s.LauncherPods(ctx, vmi)
	if err != nil {
		return err
	}
	ns, name := vmi.Namespace, vmi.Name
	now := s.now()
	if _, err := s.updateVMI(ctx, ns, name, managerVirtController, func(vmi *kubevirtv1.VirtualMachineInstance) error {
		if phase != "" {
			setVMIPhase(vmi, phase, now)
		}
		syncActivePods(vmi, pods)
		syncReady(vmi, currentPod(vmi, pods), now)
		return nil
	}); err != nil {
		return err
	}
	return s.syncVM(ctx, ns, name)
}

func syncActivePods(vmi *kubevirtv1.VirtualMachineInstance, pods []corev1.Pod) {
	if len(pods) == 0 {
		vmi.Status.ActivePods = nil
		return
	}
	m := make(map[types.UID]string, len(pods))
	for _, p := range pods {
		m[p.UID] = p.Spec.NodeName
	}
	vmi.Status.ActivePods = m
}

// syncReady is syncReadyConditionFromPod (kv lifecycle.go).
func syncReady(vmi *kubevirtv1.VirtualMachineInstance, pod *corev1.Pod, now metav1.Time) {
	cond := kubevirtv1.VirtualMachineInstanceCondition{Type: kubevirtv1.VirtualMachineInstanceReady, Status: corev1.ConditionFalse}
	switch {
	case pod == nil:
		cond.Reason, cond.Message = kubevirtv1.PodNotExistsReason, "virt-launcher pod has not yet been scheduled"
	case pod.DeletionTimestamp != nil:
		cond.Reason, cond.Message = kubevirtv1.PodTerminatingReason, "virt-launcher pod is terminating"
	case vmi.Status.Phase != kubevirtv1.Running:
		cond.Reason, cond.Message = kubevirtv1.GuestNotRunningReason, "Guest VM is not reported as running"
	default:
		pc := podCond(pod, corev1.PodReady)
		if pc == nil {
			cond.Reason, cond.Message = kubevirtv1.PodConditionMissingReason, "virt-launcher pod is missing the Ready condition"
			break
		}
		cond = kubevirtv1.VirtualMachineInstanceCondition{
			Type: kubevirtv1.VirtualMachineInstanceReady, Status: pc.Status, Reason: pc.Reason, Message: pc.Message,
			LastProbeTime: pc.LastProbeTime, LastTransitionTime: pc.LastTransitionTime,
		}
	}
	setVMICond(vmi, cond, now)
}
