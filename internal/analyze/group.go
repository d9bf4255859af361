package analyze

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/membership"
	"github.com/vmobs/vmobs/internal/storagefacts"
	"github.com/vmobs/vmobs/internal/verdict"
)

// VMGroup is everything the verdict engine reads about one VM, gathered
// from the loaded objects as the controller's watches would gather it.
type VMGroup struct {
	// Input holds the objects as the engine reads them: VM and VMI (each
	// may be nil), the migrations whose spec.vmiName is the VMI (oldest
	// first), the launcher pods of the VMI (by name), the Nodes they name
	// that the input holds, and the kinds the input does not capture.
	// Observe adds the policy and now.
	verdict.Input
	// MissingNodes are the node names the VMI and the pods name but the
	// input lacks, sorted. The engine reports them (a missing Node).
	MissingNodes []string
	// Observation is the VMObservation the input declares for this VM,
	// if any: its spec.policy overrides apply.
	Observation *v1alpha1.VMObservation
	// Policies are the VMObservationPolicies of the VM's namespace the
	// input holds: those that select the VM apply (internal/policyset).
	Policies []*v1alpha1.VMObservationPolicy
}

// Note is something the grouping or the engine run left out, and why.
type Note struct {
	// Object names what the note is about: "Pod ns/name".
	Object string
	// Message says what happened.
	Message string
}

func (n Note) String() string { return n.Object + ": " + n.Message }

type nsName struct{ namespace, name string }

// GroupVMs gathers the objects per VM: one group per VirtualMachine,
// VirtualMachineInstance or VMObservation target (namespace/name), sorted
// by namespace and name. Objects that belong to no group are reported in
// the notes when they would have mattered (a launcher pod of a VMI that is
// not in the input, or of a previous VMI of the same name).
func GroupVMs(objs Objects) ([]VMGroup, []Note) {
	var notes []Note
	groups := map[nsName]*VMGroup{}
	get := func(ns, name string) *VMGroup {
		k := nsName{ns, name}
		g := groups[k]
		if g == nil {
			g = &VMGroup{Input: verdict.Input{Namespace: ns, Name: name, Nodes: map[string]*corev1.Node{},
				// Kinds the whole input holds none of: there an absent
				// pod or Node was not captured, rather than gone.
				Uncaptured: verdict.Uncaptured{VMIs: len(objs.VMIs) == 0, Pods: len(objs.Pods) == 0, Nodes: len(objs.Nodes) == 0}}}
			groups[k] = g
		}
		return g
	}
	for _, vm := range objs.VMs {
		get(vm.Namespace, vm.Name).VM = vm
	}
	vmiByUID := map[types.UID]*kubevirtv1.VirtualMachineInstance{}
	for _, vmi := range objs.VMIs {
		get(vmi.Namespace, vmi.Name).VMI = vmi
		if vmi.UID != "" {
			vmiByUID[vmi.UID] = vmi
		}
	}
	for _, o := range objs.Observations {
		target := o.Spec.VMName
		if target == "" {
			target = o.Name
		}
		if target != o.Name {
			notes = append(notes, Note{
				Object:  "VMObservation " + o.Namespace + "/" + o.Name,
				Message: fmt.Sprintf("spec.vmName %q differs from metadata.name; analysed as %q", target, o.Name),
			})
		}
		get(o.Namespace, o.Name).Observation = o
	}

	for _, m := range objs.Migrations {
		g := groups[nsName{m.Namespace, m.Spec.VMIName}]
		if g == nil || (g.VMI == nil && g.VM == nil) {
			notes = append(notes, Note{
				Object:  "VirtualMachineInstanceMigration " + m.Namespace + "/" + m.Name,
				Message: fmt.Sprintf("VirtualMachineInstance %q is not in the input; migration not analysed", m.Spec.VMIName),
			})
			continue
		}
		g.Migrations = append(g.Migrations, m)
	}

	for _, pod := range objs.Pods {
		vmi, note := launcherOf(pod, groups, vmiByUID)
		if note != "" {
			notes = append(notes, Note{Object: "Pod " + pod.Namespace + "/" + pod.Name, Message: note})
		}
		if vmi != nil {
			g := groups[nsName{vmi.Namespace, vmi.Name}]
			g.Pods = append(g.Pods, pod)
		}
	}

	nodes := map[string]*corev1.Node{}
	for _, n := range objs.Nodes {
		nodes[n.Name] = n
	}
	storage := storageOf(objs, nodes)
	out := make([]VMGroup, 0, len(groups))
	for _, g := range groups {
		g.Storage = storage(g.Namespace, g.VM, g.VMI)
		sort.SliceStable(g.Migrations, func(i, j int) bool {
			a, b := g.Migrations[i], g.Migrations[j]
			if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
				return a.CreationTimestamp.Before(&b.CreationTimestamp)
			}
			return a.Name < b.Name
		})
		sort.Slice(g.Pods, func(i, j int) bool { return g.Pods[i].Name < g.Pods[j].Name })
		for _, name := range membership.NodeNames(g.VMI, g.Pods) {
			if n := nodes[name]; n != nil {
				g.Nodes[name] = n
			} else {
				g.MissingNodes = append(g.MissingNodes, name)
			}
		}
		for _, p := range objs.Policies {
			if p.Namespace == g.Namespace {
				g.Policies = append(g.Policies, p)
			}
		}
		out = append(out, *g)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	sort.SliceStable(notes, func(i, j int) bool { return notes[i].Object < notes[j].Object })
	return out, notes
}

// launcherOf finds the VMI a pod is the virt-launcher pod of. It returns a
// note when the pod is a launcher pod that cannot be attached.
// Which pod is whose is membership's to decide, as in the controller.
func launcherOf(pod *corev1.Pod, groups map[nsName]*VMGroup, byUID map[types.UID]*kubevirtv1.VirtualMachineInstance) (*kubevirtv1.VirtualMachineInstance, string) {
	ref, ok := membership.LauncherRef(pod)
	if !ok {
		// Controlled by something else (a hotplug attachment pod is
		// controlled by the launcher pod), or claims no VMI.
		return nil, ""
	}
	if ref.Name != "" {
		var vmi *kubevirtv1.VirtualMachineInstance
		if g := groups[nsName{pod.Namespace, ref.Name}]; g != nil {
			vmi = g.VMI
		}
		switch {
		case vmi == nil:
			return nil, fmt.Sprintf("its controller VirtualMachineInstance %q (uid %s) is not in the input; pod not analysed", ref.Name, ref.UID)
		case !membership.IsLauncherOf(pod, vmi):
			return nil, fmt.Sprintf("its controller is VirtualMachineInstance %q with uid %s, but the VMI in the input has uid %s (a previous VMI of the same name); pod not analysed", ref.Name, ref.UID, vmi.UID)
		}
		return vmi, ""
	}
	if vmi := byUID[ref.UID]; vmi != nil && vmi.Namespace == pod.Namespace {
		return vmi, ""
	}
	if pod.Labels[kubevirtv1.AppLabel] == "virt-launcher" {
		return nil, fmt.Sprintf("no controller ownerReference, and the VirtualMachineInstance with uid %s (label %s) is not in the input; pod not analysed", ref.UID, kubevirtv1.CreatedByLabel)
	}
	return nil, ""
}

// storageOf returns, for a dump that holds storage objects (claims,
// StorageClasses, VolumeAttachments or DataVolumes) or Events, the storage
// facts of a VM from the objects of its namespace; for one that holds
// none, nil facts: the storage layer then judges only what the VM and VMI
// say, as for a paste. Events without claims (a pasted `describe`) explain
// what they describe; the claims are then unknown, not missing.
func storageOf(objs Objects, nodes map[string]*corev1.Node) func(ns string, vm *kubevirtv1.VirtualMachine, vmi *kubevirtv1.VirtualMachineInstance) *storagefacts.Facts {
	if len(objs.PVCs) == 0 && len(objs.StorageClasses) == 0 && len(objs.VolumeAttachments) == 0 && len(objs.DataVolumes) == 0 && len(objs.Events) == 0 {
		return func(string, *kubevirtv1.VirtualMachine, *kubevirtv1.VirtualMachineInstance) *storagefacts.Facts {
			return nil
		}
	}
	if len(objs.Nodes) == 0 {
		// The dump holds no Nodes: an attachment's node is not judged.
		nodes = nil
	}
	folded := map[string]storagefacts.Objects{}
	return func(ns string, vm *kubevirtv1.VirtualMachine, vmi *kubevirtv1.VirtualMachineInstance) *storagefacts.Facts {
		o, ok := folded[ns]
		if !ok {
			var pvcs []*corev1.PersistentVolumeClaim
			for _, p := range objs.PVCs {
				if p.Namespace == ns {
					pvcs = append(pvcs, p)
				}
			}
			var dvs []map[string]any
			for _, d := range objs.DataVolumes {
				if d.GetNamespace() == ns {
					dvs = append(dvs, d.Object)
				}
			}
			var evs []*corev1.Event
			for _, e := range objs.Events {
				if e.Namespace == ns || e.InvolvedObject.Namespace == ns {
					evs = append(evs, e)
				}
			}
			o = storagefacts.Fold(pvcs, objs.StorageClasses, len(objs.DataVolumes) > 0, dvs, objs.VolumeAttachments, nodes, evs)
			o.ClaimsNotRead = len(objs.PVCs) == 0
			folded[ns] = o
		}
		return storagefacts.Assemble(storagefacts.VolumesOf(vm, vmi), o)
	}
}
