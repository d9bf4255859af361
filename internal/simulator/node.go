package simulator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// AddNode registers a Node as the kubelet would, with virt-handler already
// running on it and the node lifecycle controller's not-ready taint lifted:
// Ready=True (and the pressure conditions False), addresses,
// capacity including KubeVirt's device-plugin resources, the labels
// virt-handler sets (kubevirt.io/schedulable=true, cpumanager, CPU model)
// and a kubevirt.io/heartbeat annotation at the clock's now. It fails if
// the Node exists; EnsureNode does not.
func (s *Simulator) AddNode(ctx context.Context, name string) error {
	s.mu.Lock()
	s.nodes++
	idx := s.nodes
	s.mu.Unlock()

	now := s.now()
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				"kubernetes.io/hostname":                              name,
				"kubernetes.io/os":                                    "linux",
				"kubernetes.io/arch":                                  "amd64",
				"beta.kubernetes.io/os":                               "linux",
				"beta.kubernetes.io/arch":                             "amd64",
				"node-role.kubernetes.io/worker":                      "",
				kubevirtv1.NodeSchedulable:                            "true",
				"cpumanager":                                          "false",
				kubevirtv1.KSMEnabledLabel:                            "false",
				"cpu-model.node.kubevirt.io/Skylake-Client-IBRS":      "true",
				"host-model-cpu.node.kubevirt.io/Skylake-Client-IBRS": "true",
				"machine-type.node.kubevirt.io/pc-q35-rhel9.6.0":      "true",
			},
			Annotations: map[string]string{
				kubevirtv1.VirtHandlerHeartbeat:                          heartbeatValue(now),
				"node.alpha.kubernetes.io/ttl":                           "0",
				"volumes.kubernetes.io/controller-managed-attach-detach": "true",
			},
		},
		Spec: corev1.NodeSpec{
			PodCIDR:  podCIDR(idx),
			PodCIDRs: []string{podCIDR(idx)},
		},
	}
	if err := s.Client.Create(ctx, node, client.FieldOwner(managerKubelet)); err != nil {
		return fmt.Errorf("registering node %s: %w", name, err)
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("16"),
		corev1.ResourceMemory:           resource.MustParse("64Gi"),
		corev1.ResourcePods:             resource.MustParse("110"),
		corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
		"devices.kubevirt.io/kvm":       resource.MustParse("1k"),
		"devices.kubevirt.io/tun":       resource.MustParse("1k"),
		"devices.kubevirt.io/vhost-net": resource.MustParse("1k"),
		hostDeviceResource:              resource.MustParse("2"),
	}
	_, err := s.updateNodeStatus(ctx, name, managerKubelet, func(n *corev1.Node) error {
		n.Status.Capacity = capacity
		n.Status.Allocatable = capacity.DeepCopy()
		n.Status.Allocatable[corev1.ResourceCPU] = resource.MustParse("15500m")
		n.Status.Allocatable[corev1.ResourceMemory] = resource.MustParse("63Gi")
		n.Status.Conditions = []corev1.NodeCondition{
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", Message: "kubelet has sufficient memory available", LastHeartbeatTime: now, LastTransitionTime: now},
			{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", Message: "kubelet has no disk pressure", LastHeartbeatTime: now, LastTransitionTime: now},
			{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientPID", Message: "kubelet has sufficient PID available", LastHeartbeatTime: now, LastTransitionTime: now},
			{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status", LastHeartbeatTime: now, LastTransitionTime: now},
		}
		n.Status.Addresses = []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("192.168.%d.%d", 66+idx/250, idx%250+1)},
			{Type: corev1.NodeHostName, Address: name},
		}
		n.Status.DaemonEndpoints = corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}}
		n.Status.NodeInfo = corev1.NodeSystemInfo{
			MachineID:               s.hex(16),
			SystemUUID:              s.uuid(),
			BootID:                  s.uuid(),
			KernelVersion:           "5.14.0-570.el9.x86_64",
			OSImage:                 "CentOS Stream 9",
			ContainerRuntimeVersion: "cri-o://1.37.0",
			KubeletVersion:          "v1.37.2",
			OperatingSystem:         "linux",
			Architecture:            "amd64",
		}
		return nil
	})
	if err != nil {
		return err
	}
	// The API server taints a new node not-ready (TaintNodesByCondition);
	// the node lifecycle controller lifts the taint once the node is Ready.
	return s.untaint(ctx, name, corev1.TaintNodeNotReady)
}

// untaint is the node lifecycle controller removing the taints with keys.
func (s *Simulator) untaint(ctx context.Context, node string, keys ...string) error {
	_, err := s.updateNode(ctx, node, managerNodeLifecycle, func(n *corev1.Node) error {
		var keep []corev1.Taint
		for _, t := range n.Spec.Taints {
			if !slices.Contains(keys, t.Key) {
				keep = append(keep, t)
			}
		}
		n.Spec.Taints = keep
		return nil
	})
	return err
}

// EnsureNode adds the Node like AddNode unless a Node of that name exists.
func (s *Simulator) EnsureNode(ctx context.Context, name string) error {
	err := s.Client.Get(ctx, key("", name), &corev1.Node{})
	if err == nil {
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return err
	}
	return s.AddNode(ctx, name)
}

// heartbeatValue formats a heartbeat as virt-handler does: RFC 3339, UTC,
// seconds (json.Marshal of a metav1.Time without the quotes).
func heartbeatValue(t metav1.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05Z07:00")
}

// Heartbeat is one virt-handler heartbeat on node: a metadata patch that
// moves the kubevirt.io/heartbeat annotation to the clock's now. It leaves
// labels and the kubelet's conditions alone.
func (s *Simulator) Heartbeat(ctx context.Context, node string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		kubevirtv1.VirtHandlerHeartbeat: heartbeatValue(s.now()),
	}}})
	if err != nil {
		return err
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}
	if err := s.Client.Patch(ctx, n, client.RawPatch(types.StrategicMergePatchType, patch), client.FieldOwner(managerVirtHandler)); err != nil {
		return fmt.Errorf("heartbeat on node %s: %w", node, err)
	}
	return nil
}

// HeartbeatAll beats on every Node whose kubelet is not dark (Ready is not
// Unknown, see LoseNode), in name order; a failed heartbeat does not stop
// the others.
func (s *Simulator) HeartbeatAll(ctx context.Context) error {
	return errors.Join(s.heartbeatRound(ctx, nil)...)
}

// Heartbeats is virt-handler's heartbeat loop, for RunHeartbeats.
type Heartbeats struct {
	// Every is the heartbeat period (virt-handler's is a minute).
	Every time.Duration
	// Nodes names the nodes of a round; nil means every node. Dark nodes
	// are skipped either way.
	Nodes func() []string
	// Round, when set, hears of each round: when it started and the
	// heartbeats that failed.
	Round func(start time.Time, failed []error)
}

// RunHeartbeats beats every h.Every, as virt-handler on each node does,
// until ctx ends: the one heartbeat loop of the demo, the soak, the scale
// harness and the tests.
func (s *Simulator) RunHeartbeats(ctx context.Context, h Heartbeats) {
	tick := time.NewTicker(h.Every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case start := <-tick.C:
			var names []string
			if h.Nodes != nil {
				names = h.Nodes()
				if len(names) == 0 {
					continue
				}
			}
			failed := s.heartbeatRound(ctx, names)
			if h.Round != nil && ctx.Err() == nil {
				h.Round(start, failed)
			}
		}
	}
}

// heartbeatRound beats on the named nodes (every node when names is nil)
// whose kubelet is not dark, in name order, and returns the failures.
func (s *Simulator) heartbeatRound(ctx context.Context, names []string) []error {
	var nodes corev1.NodeList
	if err := s.Client.List(ctx, &nodes); err != nil {
		return []error{fmt.Errorf("listing nodes: %w", err)}
	}
	sort.Slice(nodes.Items, func(i, j int) bool { return nodes.Items[i].Name < nodes.Items[j].Name })
	var failed []error
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if names != nil && !slices.Contains(names, n.Name) {
			continue
		}
		if c := nodeCond(n, corev1.NodeReady); c != nil && c.Status == corev1.ConditionUnknown {
			continue
		}
		if err := s.Heartbeat(ctx, n.Name); err != nil {
			failed = append(failed, err)
		}
	}
	return failed
}

// LoseNode makes node go dark, as the node lifecycle controller sees a
// kubelet that stopped posting status: every node condition turns Unknown
// with reason NodeStatusUnknown, the unreachable taints are added, and the
// pods on the node get Ready=False (MarkPodsNotReady); virt-controller then
// copies the launcher pods' Ready=False into their VMIs. virt-handler's
// heartbeats stop too: nothing more is written for the node, and
// HeartbeatAll skips it, so the kubevirt.io/heartbeat annotation ages with
// the clock.
func (s *Simulator) LoseNode(ctx context.Context, node string) error {
	now := s.now()
	if _, err := s.updateNodeStatus(ctx, node, managerNodeLifecycle, func(n *corev1.Node) error {
		for i := range n.Status.Conditions {
			c := &n.Status.Conditions[i]
			if c.Status != corev1.ConditionUnknown {
				c.LastTransitionTime = now
			}
			c.Status = corev1.ConditionUnknown
			c.Reason = "NodeStatusUnknown"
			c.Message = "Kubelet stopped posting node status."
		}
		return nil
	}); err != nil {
		return err
	}
	if _, err := s.updateNode(ctx, node, managerNodeLifecycle, func(n *corev1.Node) error {
		for _, effect := range []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectNoExecute} {
			if !hasTaint(n, corev1.TaintNodeUnreachable, effect) {
				t := corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: effect}
				if effect == corev1.TaintEffectNoExecute {
					t.TimeAdded = &now
				}
				n.Spec.Taints = append(n.Spec.Taints, t)
			}
		}
		return nil
	}); err != nil {
		return err
	}
	running := func(p *corev1.Pod) bool {
		return p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
	}
	return s.updatePodsOnNode(ctx, node, managerNodeLifecycle, running, func(p *corev1.Pod) error {
		if c := podCond(p, corev1.PodReady); c != nil && c.Status != corev1.ConditionFalse {
			c.Status = corev1.ConditionFalse
			c.Reason = ""
			c.Message = ""
			c.LastTransitionTime = now
		}
		return nil
	})
}

// RecoverNode brings a lost node back: the kubelet posts Ready=True again,
// the node lifecycle controller removes the unreachable taints,
// virt-handler beats and marks the node schedulable, and the kubelet
// reports its running pods Ready again (virt-controller copies that into
// their VMIs).
func (s *Simulator) RecoverNode(ctx context.Context, node string) error {
	now := s.now()
	if _, err := s.updateNodeStatus(ctx, node, managerKubelet, func(n *corev1.Node) error {
		msgs := map[corev1.NodeConditionType][2]string{
			corev1.NodeMemoryPressure: {"KubeletHasSufficientMemory", "kubelet has sufficient memory available"},
			corev1.NodeDiskPressure:   {"KubeletHasNoDiskPressure", "kubelet has no disk pressure"},
			corev1.NodePIDPressure:    {"KubeletHasSufficientPID", "kubelet has sufficient PID available"},
			corev1.NodeReady:          {"KubeletReady", "kubelet is posting ready status"},
		}
		for i := range n.Status.Conditions {
			c := &n.Status.Conditions[i]
			m, ok := msgs[c.Type]
			if !ok {
				continue
			}
			want := corev1.ConditionFalse
			if c.Type == corev1.NodeReady {
				want = corev1.ConditionTrue
			}
			if c.Status != want {
				c.LastTransitionTime = now
			}
			c.Status, c.Reason, c.Message, c.LastHeartbeatTime = want, m[0], m[1], now
		}
		return nil
	}); err != nil {
		return err
	}
	if err := s.untaint(ctx, node, corev1.TaintNodeUnreachable, corev1.TaintNodeNotReady); err != nil {
		return err
	}
	if err := s.SetNodeSchedulable(ctx, node, true); err != nil {
		return err
	}
	if err := s.Heartbeat(ctx, node); err != nil {
		return err
	}
	// The kubelet reports its pods again; virt-controller follows.
	live := func(p *corev1.Pod) bool { return !podDone(p) && p.DeletionTimestamp == nil }
	return s.updatePodsOnNode(ctx, node, managerKubelet, live, func(p *corev1.Pod) error {
		kubeletReady(p, now)
		return nil
	})
}

// updatePodsOnNode writes fn into the status of every pod on node that
// match accepts, as manager; then virt-controller syncs the VMIs of those
// pods (controllerSync), in name order.
func (s *Simulator) updatePodsOnNode(ctx context.Context, node, manager string, match func(*corev1.Pod) bool, fn func(*corev1.Pod) error) error {
	pods, err := s.podsOnNode(ctx, node)
	if err != nil {
		return err
	}
	vmis := map[client.ObjectKey]bool{}
	for i := range pods {
		p := &pods[i]
		if !match(p) {
			continue
		}
		if _, err := s.updatePodStatus(ctx, p.Namespace, p.Name, manager, fn); err != nil {
			return err
		}
		if vmi := p.Annotations[kubevirtv1.DomainAnnotation]; vmi != "" {
			vmis[key(p.Namespace, vmi)] = true
		}
	}
	for _, k := range sortedKeys(vmis) {
		if err := s.controllerSync(ctx, k.Namespace, k.Name); err != nil {
			return err
		}
	}
	return nil
}

// SetNodeSchedulable sets the kubevirt.io/schedulable label: virt-handler
// sets "false" when its device plugins are not ready or it shuts down,
// virt-controller when the heartbeat is older than 5 minutes.
func (s *Simulator) SetNodeSchedulable(ctx context.Context, node string, ok bool) error {
	manager := managerVirtHandler
	if !ok {
		manager = managerVirtController
	}
	_, err := s.updateNode(ctx, node, manager, func(n *corev1.Node) error {
		setLabel(n, kubevirtv1.NodeSchedulable, strconv.FormatBool(ok))
		return nil
	})
	return err
}

func hasTaint(n *corev1.Node, k string, e corev1.TaintEffect) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == k && t.Effect == e {
			return true
		}
	}
	return false
}

// podsOnNode lists virt-launcher pods bound to node, in name order.
func (s *Simulator) podsOnNode(ctx context.Context, node string) ([]corev1.Pod, error) {
	var pods corev1.PodList
	if err := s.Client.List(ctx, &pods, client.MatchingLabels{kubevirtv1.AppLabel: "virt-launcher"}); err != nil {
		return nil, fmt.Errorf("listing launcher pods: %w", err)
	}
	var out []corev1.Pod
	for _, p := range pods.Items {
		if p.Spec.NodeName == node {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

func sortedKeys(m map[client.ObjectKey]bool) []client.ObjectKey {
	out := make([]client.ObjectKey, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// podCIDR is node idx's pod network: a /20 (4094 pods, for the scale
// harness) out of 10.64.0.0/10.
func podCIDR(idx int) string {
	idx %= (128 - 64) * 16
	return fmt.Sprintf("10.%d.%d.0/20", 64+idx/16, (idx%16)*16)
}

// nodeNet returns the node's InternalIP and its pod network.
func (s *Simulator) nodeNet(ctx context.Context, node string) (hostIP string, podNet netip.Prefix) {
	n := &corev1.Node{}
	if err := s.Client.Get(ctx, key("", node), n); err == nil {
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				hostIP = a.Address
			}
		}
		if p, err := netip.ParsePrefix(n.Spec.PodCIDR); err == nil && p.Addr().Is4() {
			podNet = p.Masked()
		}
	}
	if hostIP == "" || !podNet.IsValid() {
		// A node the simulator did not add: addresses from its name.
		h := fnv.New32a()
		_, _ = h.Write([]byte(node))
		i := int(h.Sum32() % 1000)
		if hostIP == "" {
			hostIP = fmt.Sprintf("192.168.%d.%d", 67+i/250, 1+i%250)
		}
		if !podNet.IsValid() {
			podNet = netip.MustParsePrefix(podCIDR(i))
		}
	}
	return hostIP, podNet
}

// podIP hands out the next pod address on node (the network's first
// address is the gateway).
func (s *Simulator) podIP(ctx context.Context, node string) (hostIP, podIP string) {
	hostIP, podNet := s.nodeNet(ctx, node)
	s.mu.Lock()
	s.podIPs[node]++
	n := s.podIPs[node]
	s.mu.Unlock()
	size := 1 << (32 - podNet.Bits())
	b := podNet.Addr().As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	v += uint32(2 + (n-1)%(size-3))
	return hostIP, netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}).String()
}

// gateway is the first address of the node's pod network.
func (s *Simulator) gateway(ctx context.Context, node string) string {
	_, podNet := s.nodeNet(ctx, node)
	return podNet.Addr().Next().String()
}

// firstReadyNode returns the first Node, in name order, that is Ready and
// kubevirt.io/schedulable, except the ones named in not.
func (s *Simulator) firstReadyNode(ctx context.Context, not ...string) (string, error) {
	var nodes corev1.NodeList
	if err := s.Client.List(ctx, &nodes); err != nil {
		return "", fmt.Errorf("listing nodes: %w", err)
	}
	sort.Slice(nodes.Items, func(i, j int) bool { return nodes.Items[i].Name < nodes.Items[j].Name })
	for _, n := range nodes.Items {
		if slices.Contains(not, n.Name) {
			continue
		}
		if c := nodeCond(&n, corev1.NodeReady); c != nil && c.Status == corev1.ConditionTrue && n.Labels[kubevirtv1.NodeSchedulable] == "true" {
			return n.Name, nil
		}
	}
	return "", fmt.Errorf("no Ready, schedulable node (add one with AddNode)")
}

// countNodes returns the number of Nodes, for scheduler messages.
func (s *Simulator) countNodes(ctx context.Context) int {
	var nodes corev1.NodeList
	if err := s.Client.List(ctx, &nodes); err != nil {
		return 0
	}
	return len(nodes.Items)
}
