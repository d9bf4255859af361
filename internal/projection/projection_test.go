package projection

import (
	"fmt"
	"maps"
	"reflect"
	"testing"
	"time"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/membership"
	"github.com/vmobs/vmobs/internal/storagefacts"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func TestPodKeepsWhatTheEngineReadsAndNothingElse(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "prod", Name: "virt-launcher-vm1-abcde", ResourceVersion: "7",
			Labels: map[string]string{"kubevirt.io": "virt-launcher", "kubevirt.io/created-by": "vmi-uid", "vm.kubevirt.io/name": "vm1"},
			Annotations: map[string]string{
				membership.NetworkStatusAnnotation: `[{"name":"kindnet","interface":"eth0","ips":["10.244.0.17"],"default":true}]`,
				"kubevirt.io/domain":               "vm1",
				corev1.LastAppliedConfigAnnotation: "{...}",
			},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstance", Name: "vm1", UID: "vmi-uid", Controller: ptr.To(true)}},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "virt-controller"}},
		},
		Spec: corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "compute", Image: "virt-launcher"}}},
		Status: corev1.PodStatus{
			Phase:  corev1.PodRunning,
			PodIP:  "10.244.0.17",
			PodIPs: []corev1.PodIP{{IP: "10.244.0.17"}},
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodInitialized, Status: corev1.ConditionTrue},
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0)},
			},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "compute", Ready: true, Image: "quay.io/kubevirt/virt-launcher:v1.9.0", RestartCount: 1,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(t0)}}}},
			InitContainerStatuses: []corev1.ContainerStatus{{Name: "guest-console-log", RestartCount: 2, Image: "x"}},
		},
	}
	got := FromPod(pod).ToPod()
	if got.Annotations[corev1.LastAppliedConfigAnnotation] != "" || got.Annotations["kubevirt.io/domain"] != "" || got.Labels["vm.kubevirt.io/name"] != "" {
		t.Errorf("metadata vmobs never reads was kept: %v %v", got.Labels, got.Annotations)
	}
	if len(got.Spec.Containers) != 0 || got.Status.ContainerStatuses[0].Image != "" || len(got.Status.Conditions) != 1 {
		t.Errorf("status vmobs never reads was kept: %+v", got.Status)
	}
	if got.Spec.NodeName != "node-a" || got.Annotations[membership.NetworkStatusAnnotation] == "" || got.Labels["kubevirt.io/created-by"] != "vmi-uid" ||
		got.Status.Phase != corev1.PodRunning || got.Status.ContainerStatuses[0].RestartCount != 1 || got.Status.PodIPs[0].IP != "10.244.0.17" ||
		got.Status.Conditions[0].Type != corev1.PodReady || !got.Status.Conditions[0].LastTransitionTime.Equal(&metav1.Time{Time: t0}) ||
		got.Status.ContainerStatuses[0].State.Running == nil || got.Status.InitContainerStatuses[0].RestartCount != 2 ||
		len(got.OwnerReferences) != 1 || got.OwnerReferences[0].UID != "vmi-uid" || !*got.OwnerReferences[0].Controller {
		t.Errorf("the projection lost what the engine reads: %+v", got)
	}
}

// A virt-handler pod keeps its DaemonSet revision, which tells a rollout
// (internal/incident), interned; a launcher pod has none, and keeps no
// more than before.
func TestPodKeepsVirtHandlersRevision(t *testing.T) {
	handler := func(node string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "virt-handler-" + node,
			Labels: map[string]string{"kubevirt.io": "virt-handler", "controller-revision-hash": fmt.Sprint("7b9c", "d5"), "pod-template-generation": "3"}},
			Spec: corev1.PodSpec{NodeName: node}}
	}
	a, b := FromPod(handler("node-a")), FromPod(handler("node-b"))
	if a.Revision() != "7b9cd5" || len(a.Kept) != 1 {
		t.Fatalf("revision %q, kept %+v", a.Revision(), a.Kept)
	}
	if got := a.ToPod().Labels; !maps.Equal(got, map[string]string{"kubevirt.io": "virt-handler", "controller-revision-hash": "7b9cd5"}) {
		t.Errorf("labels %v", got)
	}
	if ra, rb := a.Revision(), b.Revision(); unsafeData(ra) != unsafeData(rb) {
		t.Errorf("the revision is not interned: two nodes hold two copies")
	}
	a.SetLabels(map[string]string{"kubevirt.io": "virt-handler", "controller-revision-hash": "5d4f"})
	if a.Revision() != "5d4f" || a.App.String() != "virt-handler" {
		t.Errorf("SetLabels: revision %q, app %q", a.Revision(), a.App)
	}
	if l := FromPod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"kubevirt.io": "virt-launcher"}}}); l.Kept != nil || l.Revision() != "" {
		t.Errorf("a launcher pod keeps %+v", l.Kept)
	}
}

// unsafeData is where s's bytes are: two strings with the same are one
// copy.
func unsafeData(s string) *byte { return unsafe.StringData(s) }

// A pod with conditions, none of which the engine reads, keeps one: the
// engine tells a pod without conditions (a pasted row) apart.
func TestPodKeepsThatItHadConditions(t *testing.T) {
	pod := &corev1.Pod{Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodInitialized, Status: corev1.ConditionTrue}}}}
	if got := FromPod(pod).ToPod(); len(got.Status.Conditions) != 1 {
		t.Fatalf("conditions %+v", got.Status.Conditions)
	}
	if got := FromPod(&corev1.Pod{}).ToPod(); got.Status.Conditions != nil {
		t.Fatalf("conditions %+v", got.Status.Conditions)
	}
}

// The projected VMObservation keeps when vmobs last wrote the status (only
// our status writes count), the hashes of the stored status, and what the
// engine, the Events and the metrics read of it.
func TestObservationKeepsTheWriteDecisionsInputs(t *testing.T) {
	fields := metav1.NewFieldsV1(`{"f:status":{"f:verdict":{}}}`)
	st := v1alpha1.VMObservationStatus{
		Verdict: v1alpha1.VerdictDegraded, Reason: "R", Message: "long message", ObservedGeneration: 3,
		VMI:   &v1alpha1.VMISummary{Name: "vm1", UID: "vmi-uid", NodeName: "node-a", FSFrozenSince: ptr.To(metav1.NewTime(t0.Add(-time.Hour))), QOSClass: "Burstable"},
		Guest: &v1alpha1.GuestSummary{AgentConnected: true, OSPrettyName: "os"},
		Layers: &v1alpha1.Layers{Node: v1alpha1.LayerStatus{
			Verdict: v1alpha1.VerdictDegraded, Reason: "NodeNotReady", Message: "m", LastTransitionTime: ptr.To(metav1.NewTime(t0)),
			StaleAt: ptr.To(metav1.NewTime(t0.Add(time.Minute))), Evidence: []v1alpha1.Evidence{{Kind: "Node", Name: "n"}},
		}},
		Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse, Reason: "R", Message: "m", LastTransitionTime: metav1.NewTime(t0)}},
	}
	obs := &v1alpha1.VMObservation{
		ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: "vm1", Generation: 3, Labels: map[string]string{membership.ManagedByLabel: membership.ManagedByValue, "x": "y"},
			ManagedFields: []metav1.ManagedFieldsEntry{
				{Manager: membership.FieldOwner, Operation: metav1.ManagedFieldsOperationUpdate, Time: ptr.To(metav1.NewTime(t0.Add(-time.Hour))), FieldsV1: fields},
				{Manager: membership.FieldOwner, Operation: metav1.ManagedFieldsOperationApply, Subresource: "status", Time: ptr.To(metav1.NewTime(t0)), FieldsV1: fields},
				{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply, Subresource: "status", Time: ptr.To(metav1.NewTime(t0.Add(time.Minute))), FieldsV1: fields},
			}},
		Spec:   v1alpha1.VMObservationSpec{VMName: "vm1", Policy: &v1alpha1.PolicyOverrides{GuestAgentExpected: ptr.To(true)}},
		Status: st,
	}
	p := FromObservation(obs)
	if !p.LastWrite.Time().Equal(t0) {
		t.Errorf("LastWrite = %v, want %v (only our status writes count)", p.LastWrite.Time(), t0)
	}
	if p.Hash != StatusHash(&st) || p.TimelessHash != StatusHash(WithoutTimestamps(&st)) || p.Hash == p.TimelessHash {
		t.Errorf("hashes %d/%d, want those of the stored status", p.Hash, p.TimelessHash)
	}
	if p.Value(membership.ManagedByLabel) != membership.ManagedByValue || p.Value("x") != "" {
		t.Errorf("labels %v", p.Kept)
	}
	if p.Policy == nil || !*p.Policy.GuestAgentExpected {
		t.Errorf("policy %+v", p.Policy)
	}
	if p.Reason.String() != "R" || p.NodeName.String() != "node-a" {
		t.Errorf("reason %q, node %q: the metrics label each VM's series with them", p.Reason, p.NodeName)
	}
	prev := p.Previous()
	if prev.Verdict != st.Verdict || prev.VMI.UID != "vmi-uid" || !prev.Guest.AgentConnected ||
		prev.Layers.Node.Reason != "NodeNotReady" || !prev.Layers.Node.LastTransitionTime.Equal(&metav1.Time{Time: t0}) ||
		!prev.Layers.Node.StaleAt.Equal(&metav1.Time{Time: t0.Add(time.Minute)}) || prev.Layers.Node.EvidenceTime != nil ||
		len(prev.Conditions) != 1 || prev.Conditions[0].Status != metav1.ConditionFalse {
		t.Errorf("previous status %+v", prev)
	}
	if !prev.VMI.FSFrozenSince.Equal(&metav1.Time{Time: t0.Add(-time.Hour)}) || prev.VMI.HotplugSince != nil {
		t.Errorf("first sightings fsFrozenSince %v, hotplugSince %v", prev.VMI.FSFrozenSince, prev.VMI.HotplugSince)
	}
	if prev.Message != "" || prev.Layers.Node.Evidence != nil || prev.Guest.OSPrettyName != "" || prev.VMI.QOSClass != "" {
		t.Errorf("the projection kept what nothing reads: %+v", prev)
	}
	// The layers' messages are read only of the object whole, for a
	// verdict kept through the lag grace.
	if prev.Layers.Node.Message != "" {
		t.Errorf("the projection kept the node layer's message %q", prev.Layers.Node.Message)
	}
	whole := PreviousOf(obs)
	if whole.Layers.Node.Message != "m" || whole.Layers.Node.Reason != "NodeNotReady" || whole.Message != "" || whole.Layers.Node.Evidence != nil {
		t.Errorf("PreviousOf: %+v, want Previous with the layers' messages", whole.Layers.Node)
	}
	if got := PreviousOf(&v1alpha1.VMObservation{}); got.Layers != nil {
		t.Errorf("PreviousOf a status without layers: %+v", got.Layers)
	}
}

// A VMI's memory and vCPUs come back equal in value and canonical form,
// and VMIs of the same shape share one record; a VMI with none has none.
func TestVMIKeepsMemoryAndVCPUsShared(t *testing.T) {
	vmi := func(guest string) *kubevirtv1.VirtualMachineInstance {
		g := resource.MustParse(guest)
		return &kubevirtv1.VirtualMachineInstance{
			ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: "vm1"},
			Spec: kubevirtv1.VirtualMachineInstanceSpec{Domain: kubevirtv1.DomainSpec{
				CPU:    &kubevirtv1.CPU{Sockets: 2, Cores: 2, Threads: 1, MaxSockets: 8, Model: "host-model"},
				Memory: &kubevirtv1.Memory{Guest: &g, MaxGuest: ptr.To(resource.MustParse("16Gi"))},
			}},
			Status: kubevirtv1.VirtualMachineInstanceStatus{
				CurrentCPUTopology: &kubevirtv1.CPUTopology{Sockets: 1, Cores: 2, Threads: 1},
				Memory: &kubevirtv1.MemoryStatus{GuestAtBoot: ptr.To(resource.MustParse("4096Mi")), GuestRequested: ptr.To(resource.MustParse("4Gi")),
					GuestCurrent: ptr.To(resource.MustParse("4Gi")), MemoryOverhead: ptr.To(resource.MustParse("300Mi"))},
				QOSClass: ptr.To(corev1.PodQOSBurstable), SelinuxContext: "system_u:system_r:container_t:s0:c1,c2", FSFreezeStatus: "frozen",
			},
		}
	}
	a, b := FromVMI(vmi("8Gi")), FromVMI(vmi("8Gi"))
	if a.Resources == nil || a.Resources != b.Resources {
		t.Errorf("two VMIs of one shape do not share their resources: %p %p", a.Resources, b.Resources)
	}
	if c := FromVMI(vmi("6Gi")); c.Resources == a.Resources {
		t.Errorf("VMIs of different memory share a record")
	}
	got := a.ToVMI()
	spec, st := got.Spec.Domain, got.Status
	if spec.Memory.Guest.String() != "8Gi" || spec.Memory.MaxGuest.String() != "16Gi" || st.Memory.GuestAtBoot.String() != "4Gi" ||
		st.Memory.GuestRequested.String() != "4Gi" || st.Memory.GuestCurrent.String() != "4Gi" || st.Memory.MemoryOverhead != nil {
		t.Errorf("memory %+v %+v", spec.Memory, st.Memory)
	}
	if c := spec.CPU; c.Sockets != 2 || c.Cores != 2 || c.Threads != 1 || c.MaxSockets != 8 || c.Model != "" || *st.CurrentCPUTopology != (kubevirtv1.CPUTopology{Sockets: 1, Cores: 2, Threads: 1}) {
		t.Errorf("cpu %+v %+v", spec.CPU, st.CurrentCPUTopology)
	}
	if *st.QOSClass != corev1.PodQOSBurstable || st.SelinuxContext != "system_u:system_r:container_t:s0:c1,c2" || st.FSFreezeStatus != "frozen" {
		t.Errorf("status %+v", st)
	}
	if st.Memory.GuestCurrent == a.ToVMI().Status.Memory.GuestCurrent {
		t.Errorf("rebuilt VMIs share a Quantity, whose String writes into it")
	}
	bare := FromVMI(&kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "bare"}})
	if r := bare.ToVMI(); bare.Resources != nil || r.Spec.Domain.CPU != nil || r.Spec.Domain.Memory != nil || r.Status.Memory != nil || r.Status.QOSClass != nil {
		t.Errorf("a VMI with no memory or vCPUs came back with some: %+v", r)
	}
}

func TestTimeKeepsNilZeroAndSeconds(t *testing.T) {
	if got := timePtr(nil).Ptr(); got != nil {
		t.Errorf("nil came back as %v", got)
	}
	if got := timePtr(&metav1.Time{}).Ptr(); got == nil || !got.IsZero() {
		t.Errorf("a pointer to the zero time came back as %v", got)
	}
	if got := metaTime(metav1.Time{}); got != 0 || !got.Time().IsZero() {
		t.Errorf("the zero time is %d", got)
	}
	epoch := time.Unix(0, 0)
	if got := timeOf(epoch).Time(); !got.Equal(epoch) {
		t.Errorf("the epoch came back as %v", got)
	}
	if got := timeOf(t0).Time(); !got.Equal(t0) {
		t.Errorf("%v came back as %v", t0, got)
	}
}

// The intern table stops growing at its bound; values past it are still
// returned right, as copies.
func TestInternIsBounded(t *testing.T) {
	var tab table[string]
	for i := range maxInterned + 10 {
		v := fmt.Sprint("v", i)
		if p := tab.intern(v); *p != v {
			t.Fatalf("intern(%q) = %q", v, *p)
		}
	}
	if len(tab.m) != maxInterned {
		t.Fatalf("the table holds %d values, want its bound %d", len(tab.m), maxInterned)
	}
	if a, b := tab.intern("v1"), tab.intern("v1"); a != b {
		t.Errorf("an interned value is not shared")
	}
	x := Intern("x")
	if Intern("") != (Sym{}) || x.String() != "x" || Intern("x") != x {
		t.Errorf("Intern")
	}
}

func TestUIDRoundTrips(t *testing.T) {
	for _, u := range []types.UID{
		"", "5b0f5a3e-8c1a-4b9e-9f55-0a7c1d2e3f41", "5B0F5A3E-8C1A-4B9E-9F55-0A7C1D2E3F41", "vmi-uid",
		"00000000-0000-0000-0000-000000000000", "5b0f5a3e-8c1a-4b9e-9f55-0a7c1d2e3f4g", "5b0f5a3e+8c1a-4b9e-9f55-0a7c1d2e3f41",
	} {
		got := uidOf(u)
		if got.UID() != u || got.IsZero() != (u == "") {
			t.Errorf("%q came back as %q", u, got.UID())
		}
	}
	if uidOf("5b0f5a3e-8c1a-4b9e-9f55-0a7c1d2e3f41").other != nil {
		t.Errorf("a UUID is kept as a string")
	}
}

// Sharded, VMIs and VMObservations keep the selector's labels and VMIs
// their owners; unsharded, none of it. VMs keep every label, sharded or
// not: VMObservationPolicies select by them.
func TestShardingKeepsTheSelectorsLabels(t *testing.T) {
	meta := metav1.ObjectMeta{Namespace: "ns", Name: "vm1", Labels: map[string]string{"shard": "a", "other": "x", membership.ManagedByLabel: "vmobs"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine", Name: "vm1", UID: "vm-uid", Controller: ptr.To(true)}}}
	objs := []any{&kubevirtv1.VirtualMachine{ObjectMeta: meta}, &kubevirtv1.VirtualMachineInstance{ObjectMeta: meta}, &v1alpha1.VMObservation{ObjectMeta: meta}}
	sharded := TransformSharded(Sharding{Labels: []string{"shard"}})
	for _, o := range objs {
		p, _ := sharded(o)
		m := p.(metav1.Object)
		if _, vm := o.(*kubevirtv1.VirtualMachine); vm {
			for _, tr := range []func(any) (any, error){sharded, Transform} {
				p, _ := tr(o)
				if got := p.(metav1.Object).GetLabels(); !maps.Equal(got, meta.Labels) {
					t.Errorf("a VM's labels %v, want all of %v", got, meta.Labels)
				}
			}
			continue
		}
		if got := m.GetLabels(); got["shard"] != "a" || got["other"] != "" {
			t.Errorf("%T sharded: labels %v", o, got)
		}
		if _, vmi := o.(*kubevirtv1.VirtualMachineInstance); vmi && len(m.GetOwnerReferences()) != 1 {
			t.Errorf("a sharded VMI lost its owner: %v", m.GetOwnerReferences())
		}
		u, _ := Transform(o)
		if got := u.(metav1.Object).GetLabels(); got["shard"] != "" {
			t.Errorf("%T unsharded keeps the shard label: %v", o, got)
		}
		if _, vmi := o.(*kubevirtv1.VirtualMachineInstance); vmi && len(u.(metav1.Object).GetOwnerReferences()) != 0 {
			t.Errorf("an unsharded VMI keeps its owners")
		}
	}
}

// Owner references round-trip through their compact form and their list
// form alike, and Named finds an owner by name in both.
func TestOwnersRoundTrip(t *testing.T) {
	vm := metav1.OwnerReference{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine", Name: "vm1", UID: "3f7f2c56-3b2a-4d6e-9c1a-0d7e4f5a6b7c"}
	vmiCtl := metav1.OwnerReference{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstance", Name: "vm1", UID: "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d",
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
	other := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "rs-uid", Controller: ptr.To(false)}
	for _, tc := range []struct {
		name, self string
		refs       []metav1.OwnerReference
		compact    bool
	}{
		{"none", "vm1", nil, false},
		{"a VMObservation's VM: own name", "vm1", []metav1.OwnerReference{vm}, true},
		{"a launcher pod's VMI: a name of its own", "virt-launcher-vm1-abcde", []metav1.OwnerReference{vmiCtl}, true},
		{"a kind not kept compact", "x", []metav1.OwnerReference{other}, false},
		{"two references", "vm1", []metav1.OwnerReference{vm, other}, false},
		{"a UID that is not a UUID", "vm1", []metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine", Name: "vm1", UID: "vm-uid"}}, false},
		{"an older API version", "vm1", []metav1.OwnerReference{{APIVersion: "kubevirt.io/v1alpha3", Kind: "VirtualMachine", Name: "vm1", UID: "u"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := ownersOf(tc.refs, tc.self)
			if got := o.refs(tc.self); !equality.Semantic.DeepEqual(got, tc.refs) {
				t.Fatalf("round trip: got %+v, want %+v", got, tc.refs)
			}
			if (o.kind > 0) != tc.compact {
				t.Errorf("compact %v, want %v", o.kind > 0, tc.compact)
			}
			for _, r := range tc.refs {
				if !o.Named(r.Name, tc.self) {
					t.Errorf("Named(%q) is false", r.Name)
				}
			}
			if o.Named("nobody", tc.self) {
				t.Error("Named(nobody) is true")
			}
			c := o.deepCopy()
			if o.list != nil && &(*c.list)[0] == &(*o.list)[0] {
				t.Error("deepCopy shares the list")
			}
		})
	}
}

// status.podIPs round-trip whether they repeat podIP (kept as nothing),
// differ from it, are dual-stack, or are missing on either side.
func TestPodIPsRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		ip  string
		ips []string
	}{
		{"", nil}, {"10.0.0.1", []string{"10.0.0.1"}}, {"10.0.0.1", []string{"10.0.0.1", "fd00::1"}},
		{"10.0.0.1", nil}, {"", []string{"10.0.0.2"}}, {"10.0.0.1", []string{"10.0.0.2"}},
	} {
		pod := &corev1.Pod{Status: corev1.PodStatus{PodIP: tc.ip}}
		for _, ip := range tc.ips {
			pod.Status.PodIPs = append(pod.Status.PodIPs, corev1.PodIP{IP: ip})
		}
		p := FromPod(pod)
		if got := p.DeepCopyObject().(*Pod).ToPod().Status; got.PodIP != tc.ip || !equality.Semantic.DeepEqual(got.PodIPs, pod.Status.PodIPs) {
			t.Errorf("%q %q: got %q %+v", tc.ip, tc.ips, got.PodIP, got.PodIPs)
		}
		if len(tc.ips) == 1 && tc.ips[0] == tc.ip && p.PodIPs != nil {
			t.Errorf("%q %q: podIPs that repeat podIP are kept", tc.ip, tc.ips)
		}
	}
}

// A VMI's status interfaces round-trip: IPs that repeat IP are kept as
// nothing, MACs as bytes when they read back the same, else as written.
func TestVMIInterfacesRoundTrip(t *testing.T) {
	in := []kubevirtv1.VirtualMachineInstanceNetworkInterface{
		{Name: "default", IP: "10.0.0.1", IPs: []string{"10.0.0.1"}, MAC: "02:00:00:00:00:01"},
		{Name: "dual", IP: "10.0.0.2", IPs: []string{"10.0.0.2", "fd00::2"}, MAC: "02:00:00:00:00:02"},
		{Name: "upper", IP: "10.0.0.3", MAC: "02:AB:00:00:00:03"},
		{Name: "dashes", IPs: []string{"10.0.0.4"}, MAC: "02-00-00-00-00-04"},
		{Name: "odd", MAC: "not a mac"},
		{Name: "none"},
	}
	vmi := &kubevirtv1.VirtualMachineInstance{Status: kubevirtv1.VirtualMachineInstanceStatus{Interfaces: in}}
	p := FromVMI(vmi)
	got := p.DeepCopyObject().(*VMI).ToVMI().Status.Interfaces
	if !equality.Semantic.DeepEqual(got, in) {
		t.Fatalf("got %+v\nwant %+v", got, in)
	}
	if p.Status[0].IPs != nil || p.Status[0].MAC.other != nil || p.Status[2].MAC.other == nil {
		t.Errorf("kept %+v", p.Status)
	}
}

// The stored conditions read back as they were (vmobs' own types first):
// vmobs' own in place, any other type or status, or a repeated type, as a
// list.
func TestObservationConditionsRoundTrip(t *testing.T) {
	at := metav1.NewTime(t0)
	in := []metav1.Condition{
		{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, LastTransitionTime: at},
		{Type: "SomeoneElses", Status: metav1.ConditionFalse, LastTransitionTime: at},
		{Type: v1alpha1.ConditionStalled, Status: metav1.ConditionFalse},
		{Type: v1alpha1.ConditionGuestHealthy, Status: "Maybe", LastTransitionTime: at},
		{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, LastTransitionTime: at},
	}
	o := FromObservation(&v1alpha1.VMObservation{Status: v1alpha1.VMObservationStatus{Conditions: in}})
	got := o.DeepCopyObject().(*Observation).Previous().Conditions
	want := []metav1.Condition{in[0], in[2], in[1], in[3], in[4]}
	if !equality.Semantic.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	if o.Rare == nil || len(o.Rare.OtherConditions) != 3 {
		t.Errorf("kept in place: %v, others %v", o.CondStatus, o.Rare)
	}
}

// TestProjectionSizeClasses holds the projections every VM has to the
// malloc size classes they were brought into (docs/scale.md, Storage and
// the Event storm): a field added in place that tips one into the next
// class costs every VM the difference, and belongs behind its Rare
// pointer or in a smaller form.
func TestProjectionSizeClasses(t *testing.T) {
	for _, tt := range []struct {
		name      string
		size, max uintptr
	}{
		{"Observation", unsafe.Sizeof(Observation{}), 512},
		{"VM", unsafe.Sizeof(VM{}), 224},
		{"VMI", unsafe.Sizeof(VMI{}), 416},
		{"Pod", unsafe.Sizeof(Pod{}), 320},
		{"VolumeState", unsafe.Sizeof(VolumeState{}), 64},
		{"optSym", unsafe.Sizeof(optSym{}), 8},
		{"Cond", unsafe.Sizeof(Cond{}), 32},
		{"VMICond", unsafe.Sizeof(VMICond{}), 40},
	} {
		if tt.size > tt.max {
			t.Errorf("%s is %d bytes, over the %d of its size class", tt.name, tt.size, tt.max)
		}
	}
}

// A condition's type, status and message read back as written, a type
// holding the separator (bad input) included; the zero Cond reads empty.
func TestCondReadsBack(t *testing.T) {
	for _, tt := range [][3]string{{"Ready", "True", ""}, {"LiveMigratable", "False", "cannot migrate"}, {"a\x00b", "Unknown", "m"}, {"", "", ""}} {
		c := newCond(tt[0], tt[1], "R", tt[2], 0)
		if c.Type() != tt[0] || c.Status() != tt[1] || c.Message() != tt[2] || c.Reason.String() != "R" {
			t.Errorf("%q: read back %q %q %q", tt, c.Type(), c.Status(), c.Message())
		}
	}
	var zero Cond
	if zero.Type() != "" || zero.Status() != "" || zero.Message() != "" {
		t.Errorf("the zero Cond reads %q %q %q", zero.Type(), zero.Status(), zero.Message())
	}
}

// A claim's compact facts give back what storagefacts.FromPVC reads of it,
// for a plain claim and one with every field set.
func TestClaimFactsReadBack(t *testing.T) {
	full := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: "vm1-root", CreationTimestamp: metav1.NewTime(t0),
			Annotations: map[string]string{storagefacts.SelectedNodeAnnotation: "node-a"}},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: ptr.To("fast"), VolumeName: "pv-1", VolumeMode: ptr.To(corev1.PersistentVolumeBlock),
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany, corev1.ReadOnlyMany},
		},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, Conditions: []corev1.PersistentVolumeClaimCondition{{
			Type: corev1.PersistentVolumeClaimResizing, Status: corev1.ConditionTrue, Reason: "Resizing", Message: "m", LastTransitionTime: metav1.NewTime(t0),
		}}},
	}
	plain := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: "scratch"}}
	for _, pvc := range []*corev1.PersistentVolumeClaim{full, plain} {
		want := storagefacts.FromPVC(pvc)
		if !want.Created.IsZero() {
			want.Created = want.Created.Local() // as the API machinery decodes it
		}
		c := fromClaim(pvc)
		if got := c.F.PVC(pvc.Name); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: read back %+v, want %+v", pvc.Name, got, want)
		}
		if cp := c.DeepCopyObject().(*Claim); !reflect.DeepEqual(cp.F.PVC(pvc.Name), want) {
			t.Errorf("%s: a deep copy reads %+v", pvc.Name, cp.F.PVC(pvc.Name))
		}
	}
	if size := unsafe.Sizeof(ClaimFacts{}); size > 80 {
		t.Errorf("ClaimFacts is %d bytes, over the 80 of its size class", size)
	}
}
