package verdict

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/internal/membership"
)

// Huge lists and annotations must give a bounded status that the CRD's
// limits accept (interfaces 64, launcher pods 16, evidence 8 per layer,
// messages 1024), or the status write would be refused forever.
func TestHugeInputGivesABoundedStatus(t *testing.T) {
	cases := map[string]inputMod{
		"1000 interfaces": func(in *Input) {
			for i := 0; i < 1000; i++ {
				in.VMI.Status.Interfaces = append(in.VMI.Status.Interfaces, kubevirtv1.VirtualMachineInstanceNetworkInterface{
					Name: fmt.Sprintf("net%04d", i), IP: fmt.Sprintf("10.1.%d.%d", i/250, i%250), InfoSource: "domain, guest-agent",
				})
			}
		},
		"1000 conditions of unknown types": func(in *Input) {
			for i := 0; i < 1000; i++ {
				in.VMI.Status.Conditions = append(in.VMI.Status.Conditions, kubevirtv1.VirtualMachineInstanceCondition{
					Type: kubevirtv1.VirtualMachineInstanceConditionType(fmt.Sprintf("Vendor%04d", i)), Status: corev1.ConditionFalse,
					Reason: strings.Repeat("R", 300), Message: strings.Repeat("m", 5000),
				})
			}
		},
		"256 KiB network-status annotation": func(in *Input) {
			var b strings.Builder
			b.WriteString(`[{"name":"ovn-kubernetes","interface":"eth0","ips":["10.244.0.17"],"default":true}`)
			for b.Len() < 256<<10 {
				fmt.Fprintf(&b, `,{"name":"net-%d","interface":"pod%x","ips":["192.168.%d.%d"],"mac":"02:00:00:00:00:01"}`, b.Len(), b.Len(), b.Len()%250, b.Len()%200)
			}
			b.WriteString("]")
			in.Pods[0].Annotations[membership.NetworkStatusAnnotation] = b.String()
		},
		"500 launcher pods and activePods entries": func(in *Input) {
			for i := 0; i < 500; i++ {
				p := in.Pods[0].DeepCopy()
				p.Name, p.UID = fmt.Sprintf("virt-launcher-%s-%05d", vmName, i), types.UID(fmt.Sprintf("pod-%05d", i))
				p.Status.Phase = corev1.PodSucceeded
				in.Pods = append(in.Pods, p)
				in.VMI.Status.ActivePods[p.UID] = nodeA
			}
		},
		"a pod that claims the VMI with another UID": func(in *Input) {
			p := in.Pods[0].DeepCopy()
			p.Name, p.UID = "virt-launcher-"+vmName+"-other", "pod-other"
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstance", Name: vmName, UID: "not-this-vmi", Controller: ptr(true)}}
			in.Pods = append(in.Pods, p)
		},
	}
	for name, mod := range cases {
		t.Run(name, func(t *testing.T) {
			in := input(mod)
			if in.VMI.Status.ActivePods == nil {
				in.VMI.Status.ActivePods = map[types.UID]string{}
			}
			st := Evaluate(in).Status
			if len(st.Interfaces) > 64 || len(st.LauncherPods) > 16 || len(st.Conditions) > 16 {
				t.Fatalf("unbounded lists: %d interfaces, %d pods, %d conditions", len(st.Interfaces), len(st.LauncherPods), len(st.Conditions))
			}
			if st.LiveMigratable != nil && len(st.LiveMigratable.Reasons) > 16 {
				t.Fatalf("%d live-migratable reasons", len(st.LiveMigratable.Reasons))
			}
			for _, l := range []struct {
				n string
				v int
				m string
			}{{"controlPlane", len(st.Layers.ControlPlane.Evidence), st.Layers.ControlPlane.Message}, {"node", len(st.Layers.Node.Evidence), st.Layers.Node.Message}, {"guest", len(st.Layers.Guest.Evidence), st.Layers.Guest.Message}} {
				if l.v > 8 || len(l.m) > 1024 {
					t.Fatalf("layer %s: %d evidence, message of %d bytes", l.n, l.v, len(l.m))
				}
			}
			if len(st.Message) > 1024 {
				t.Fatalf("message of %d bytes", len(st.Message))
			}
			raw, err := json.Marshal(st)
			if err != nil {
				t.Fatal(err)
			}
			if len(raw) > 64<<10 {
				t.Fatalf("status of %d bytes", len(raw))
			}
			t.Logf("%s: %s/%s, status %d bytes", name, st.Verdict, st.Reason, len(raw))
		})
	}
}
