package drain

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// Kind names a kind of object the caller reads, for Input.Unreadable.
type Kind string

// The kinds Input holds.
const (
	KindVMIs       Kind = "VirtualMachineInstances"
	KindVMs        Kind = "VirtualMachines"
	KindPods       Kind = "Pods"
	KindPDBs       Kind = "PodDisruptionBudgets"
	KindPVCs       Kind = "PersistentVolumeClaims"
	KindNodes      Kind = "Nodes"
	KindKubeVirt   Kind = "KubeVirts"
	KindMigrations Kind = "VirtualMachineInstanceMigrations"
)

// Input is what a prediction or a progress report is computed from: the
// objects as the caller read them, and the time.
// +kubebuilder:object:generate=false
type Input struct {
	// Node is the node drained.
	Node string
	// Now is the time of the prediction.
	Now time.Time
	// VMIs may hold VMIs of other nodes: those whose status.nodeName is
	// Node are predicted (and, for Progress, those a prediction names).
	VMIs []kubevirtv1.VirtualMachineInstance
	// VMs owning the VMIs (others are ignored).
	VMs []kubevirtv1.VirtualMachine
	// Pods are the launcher pods (others are ignored).
	Pods []corev1.Pod
	// PDBs are the PodDisruptionBudgets of the VMIs' namespaces.
	PDBs []policyv1.PodDisruptionBudget
	// PVCs are the claims of the VMIs' volumes.
	PVCs []corev1.PersistentVolumeClaim
	// Nodes are every node of the cluster.
	Nodes []corev1.Node
	// KubeVirt is the KubeVirt CR; nil when there is none (KubeVirt's
	// defaults apply) or it could not be read (see Unreadable).
	KubeVirt *kubevirtv1.KubeVirt
	// Migrations are the VMIs' migrations (read by Progress only).
	Migrations []kubevirtv1.VirtualMachineInstanceMigration
	// Unreadable says which kinds could not be read, and why (a
	// Forbidden error's message, say). What depends on them is reported
	// as a note or as OutcomeUnknown, never guessed silently.
	Unreadable map[Kind]string
}

// Tolerate records in Unreadable that kind k could not be read, when err
// says so (Forbidden, or a kind the cluster does not serve), and returns
// any other error, wrapped: what the prediction then leaves open it says,
// where a reader that stopped would say nothing.
func (in *Input) Tolerate(k Kind, err error) error {
	if err == nil {
		return nil
	}
	if apierrors.IsForbidden(err) || meta.IsNoMatchError(err) {
		if in.Unreadable == nil {
			in.Unreadable = map[Kind]string{}
		}
		if _, seen := in.Unreadable[k]; !seen {
			in.Unreadable[k] = err.Error()
		}
		return nil
	}
	return fmt.Errorf("reading %s: %w", k, err)
}

func (in Input) unreadable(k Kind) (string, bool) {
	msg, ok := in.Unreadable[k]
	return msg, ok
}

// Predict predicts what draining in.Node does to every VMI on it.
func Predict(in Input) Prediction {
	p := Prediction{Node: in.Node, Time: metav1.NewTime(in.Now.UTC().Truncate(time.Second)), VMs: []VMPrediction{}}
	for _, k := range slices.Sorted(maps.Keys(in.Unreadable)) {
		p.Notes = append(p.Notes, Reason{Code: ReasonUnreadable, Message: fmt.Sprintf("%s could not be read: %s", k, in.Unreadable[k])})
	}
	targets, excluded := targetNodes(in)
	p.TargetNodes = len(targets)
	if _, bad := in.unreadable(KindNodes); !bad && nodeByName(in.Nodes, in.Node) == nil {
		p.Notes = append(p.Notes, Reason{Code: ReasonNodeNotFound, Message: fmt.Sprintf("node %q is not among the %d nodes read", in.Node, len(in.Nodes))})
	}
	cfg := clusterConfig(in)
	for i := range in.VMIs {
		vmi := &in.VMIs[i]
		if in.Node == "" || vmi.Status.NodeName != in.Node {
			continue
		}
		p.VMs = append(p.VMs, predictVM(in, cfg, vmi, targets, excluded))
	}
	slices.SortFunc(p.VMs, func(a, b VMPrediction) int { return strings.Compare(a.Key(), b.Key()) })
	p.Counts = map[Outcome]int{}
	for _, v := range p.VMs {
		p.Counts[v.Outcome]++
	}
	p.Migrations = Migrations{Count: p.Counts[OutcomeLiveMigrates], PerNode: cfg.perNode, PerCluster: cfg.perCluster}
	if limit := min(cfg.perNode, cfg.perCluster); limit > 0 {
		p.Migrations.Rounds = (p.Migrations.Count + limit - 1) / limit
		if p.Migrations.Count > limit {
			note := Reason{
				Code: ReasonMigrationQueued,
				Message: fmt.Sprintf("%d VMs migrate off the node and KubeVirt runs at most %d at once (parallelOutboundMigrationsPerNode %d, parallelMigrationsPerCluster %d): the others wait, %d rounds at least",
					p.Migrations.Count, limit, cfg.perNode, cfg.perCluster, p.Migrations.Rounds),
				Source: srcLimits,
			}
			for i := range p.VMs {
				if p.VMs[i].Outcome == OutcomeLiveMigrates {
					p.VMs[i].Notes = append(p.VMs[i].Notes, note)
				}
			}
		}
	}
	return p
}

// config is what Predict reads of the KubeVirt CR.
type config struct {
	// strategy is the cluster's evictionStrategy, source "cluster" or
	// "default"; known is false when the KubeVirt CR could not be read.
	strategy, source    string
	known               bool
	unreadable          string
	perNode, perCluster int
}

// clusterConfig reads the KubeVirt CR's evictionStrategy and migration
// limits, with KubeVirt's defaults for what it leaves unset
// (kv:pkg/virt-config/configuration.go: evictionStrategy None;
// kv:pkg/virt-config/virt-config.go: 2 outbound migrations per node, 5 per
// cluster).
func clusterConfig(in Input) config {
	c := config{strategy: string(kubevirtv1.EvictionStrategyNone), source: "default", known: true, perNode: 2, perCluster: 5}
	if msg, bad := in.unreadable(KindKubeVirt); bad {
		c.known, c.unreadable = false, msg
		return c
	}
	if in.KubeVirt == nil {
		return c
	}
	conf := in.KubeVirt.Spec.Configuration
	if conf.EvictionStrategy != nil {
		c.strategy, c.source = string(*conf.EvictionStrategy), "cluster"
	}
	if m := conf.MigrationConfiguration; m != nil {
		if m.ParallelOutboundMigrationsPerNode != nil && *m.ParallelOutboundMigrationsPerNode > 0 {
			c.perNode = int(min(*m.ParallelOutboundMigrationsPerNode, 1<<20))
		}
		if m.ParallelMigrationsPerCluster != nil && *m.ParallelMigrationsPerCluster > 0 {
			c.perCluster = int(min(*m.ParallelMigrationsPerCluster, 1<<20))
		}
	}
	return c
}

// predictVM predicts one VMI's outcome, collecting every reason.
func predictVM(in Input, cfg config, vmi *kubevirtv1.VirtualMachineInstance, targets []*corev1.Node, excluded map[string]int) VMPrediction {
	v := VMPrediction{Namespace: vmi.Namespace, Name: vmi.Name, UID: string(vmi.UID)}
	switch {
	case vmi.IsFinal():
		v.Outcome = OutcomeUnaffected
		v.Reasons = []Reason{{Code: ReasonVMIFinal, Message: fmt.Sprintf("the VMI is %s: it runs no more and its pod is not evicted", vmi.Status.Phase), Source: srcLifecycle}}
		return v
	case vmi.DeletionTimestamp != nil:
		v.Outcome = OutcomeUnaffected
		v.Reasons = []Reason{{Code: ReasonVMIDeleting, Message: "the VMI is being deleted: it shuts down whatever the drain does", Source: srcLifecycle}}
		return v
	}
	if vmi.IsMarkedForEviction() {
		v.Notes = append(v.Notes, Reason{Code: ReasonAlreadyEvacuating, Message: fmt.Sprintf("the VMI is already marked for evacuation from %s", vmi.Status.EvacuationNodeName), Source: srcAdmitter})
	}

	// The strategy, as the admitter reads it: the VMI's spec, else the
	// cluster's (kv:pkg/util/migrations/migrations.go VMIEvictionStrategy).
	strategy, source := "", ""
	switch {
	case vmi.Spec.EvictionStrategy != nil:
		strategy, source = string(*vmi.Spec.EvictionStrategy), "spec"
	case cfg.known:
		strategy, source = cfg.strategy, cfg.source
	default:
		v.Outcome = OutcomeUnknown
		v.Reasons = []Reason{{
			Code:    ReasonClusterStrategyUnknown,
			Message: "the VMI sets no evictionStrategy and the KubeVirt CR that holds the cluster's could not be read: " + cfg.unreadable,
			Source:  srcStrategy,
		}}
		return v
	}
	v.EvictionStrategy, v.EvictionStrategySource = strategy, source

	migratable, whyNot, migNotes := liveMigratable(in, vmi)
	v.Notes = append(v.Notes, migNotes...)
	fits, noTarget := fittingTargets(in, vmi, targets, excluded)
	if noTarget.Code == ReasonNodesUnreadable {
		v.Notes = append(v.Notes, noTarget)
	}
	pdbs, pdbNotes := blockingBudgets(in, vmi)

	byStrategy := func(code, what string) Reason {
		return Reason{Code: code, Message: fmt.Sprintf("evictionStrategy %s (from %s): %s", strategy, source, what), Source: srcAdmitter}
	}
	migrate := func(r Reason) {
		// The admitter marks the VMI and refuses the eviction; the
		// evacuation controller creates a migration.
		v.Reasons = append(v.Reasons, r)
		if len(fits) == 0 {
			v.Outcome = OutcomeBlocksDrain
			v.Reasons = append(v.Reasons, noTarget)
		} else {
			v.Outcome = OutcomeLiveMigrates
			v.Reasons = append(v.Reasons, Reason{
				Code:    ReasonLiveMigrationPossible,
				Message: fmt.Sprintf("LiveMigratable=True and %d other node(s) fit the VMI%s", len(fits), nodeNames(fits, maxNamesInMessage)),
				Source:  srcEvacuation,
			})
		}
		for _, n := range pdbNotes {
			v.Notes = append(v.Notes, Reason{Code: ReasonPDBMoot, Message: n + ": the admitter refuses the eviction before the budget is consulted", Source: srcK8sEvict})
		}
	}
	switch kubevirtv1.EvictionStrategy(strategy) {
	case kubevirtv1.EvictionStrategyLiveMigrate:
		if migratable {
			migrate(byStrategy(ReasonStrategyLiveMigrate, "the admitter refuses the eviction and marks the VMI for evacuation, and the evacuation controller makes a migration"))
			break
		}
		v.Outcome = OutcomeBlocksDrain
		v.Reasons = append(v.Reasons, Reason{
			Code:    ReasonEvictionDeniedNotMigratable,
			Message: fmt.Sprintf("evictionStrategy %s (from %s) but the VMI is not live-migratable: the admitter refuses every eviction of its pod, and the drain retries until its timeout", strategy, source),
			Source:  srcAdmitter,
		})
		v.Reasons = append(v.Reasons, whyNot...)
		if len(fits) == 0 {
			v.Reasons = append(v.Reasons, noTarget)
		}
	case kubevirtv1.EvictionStrategyLiveMigrateIfPossible:
		if migratable {
			migrate(byStrategy(ReasonStrategyIfPossible, "the VMI is live-migratable, so the admitter refuses the eviction and marks the VMI for evacuation, and the evacuation controller makes a migration"))
			break
		}
		v.Reasons = append(v.Reasons, byStrategy(ReasonStrategyIfPossible, "the VMI is not live-migratable, so the admitter lets its pod be evicted"))
		v.Reasons = append(v.Reasons, whyNot...)
		evicted(in, &v, vmi, fits, noTarget, pdbs)
	case kubevirtv1.EvictionStrategyExternal:
		v.Outcome = OutcomeLeftToExternal
		v.Reasons = append(v.Reasons, byStrategy(ReasonStrategyExternal,
			"the admitter marks the VMI for evacuation and refuses the eviction; KubeVirt's evacuation controller does not migrate it (kv:pkg/util/migrations/migrations.go VMIMigratableOnEviction): an external controller must move or stop it before the drain can go on"))
	case kubevirtv1.EvictionStrategyNone:
		v.Reasons = append(v.Reasons, byStrategy(ReasonStrategyNone, "the admitter lets the launcher pod be evicted"))
		evicted(in, &v, vmi, fits, noTarget, pdbs)
	default:
		v.Reasons = append(v.Reasons, Reason{
			Code:    ReasonStrategyUnrecognised,
			Message: fmt.Sprintf("evictionStrategy %q (from %s) is none KubeVirt knows: its admitter lets the launcher pod be evicted, as for None", strategy, source),
			Source:  srcAdmitter,
		})
		evicted(in, &v, vmi, fits, noTarget, pdbs)
	}
	return v
}

// evicted completes v for a VMI whose launcher pod the admitter lets be
// evicted: a PodDisruptionBudget may refuse the eviction; else the VMI fails
// (kv:pkg/virt-controller/watch/vmi/lifecycle.go: a running VMI whose pod is
// gone is Failed; a guest shut down by the pod's SIGTERM ends Succeeded) and
// its VM's runStrategy says whether it starts again.
func evicted(in Input, v *VMPrediction, vmi *kubevirtv1.VirtualMachineInstance, fits []*corev1.Node, noTarget Reason, pdbs []Reason) {
	if len(pdbs) > 0 {
		v.Outcome = OutcomeBlocksDrain
		v.Reasons = append(v.Reasons, pdbs...)
		return
	}
	if msg, bad := in.unreadable(KindPDBs); bad {
		v.Notes = append(v.Notes, Reason{Code: ReasonPDBUnknown, Message: "PodDisruptionBudgets could not be read, so one may yet refuse the eviction: " + msg, Source: srcK8sEvict})
	}
	owner := metav1.GetControllerOf(vmi)
	if owner == nil || owner.Kind != "VirtualMachine" {
		v.Outcome = OutcomeStaysDown
		v.Reasons = append(v.Reasons, Reason{Code: ReasonNoVM, Message: "the VMI has no VirtualMachine: nothing starts it again", Source: srcVM})
		return
	}
	vm := vmByName(in.VMs, vmi.Namespace, owner.Name)
	if vm == nil {
		if msg, bad := in.unreadable(KindVMs); bad {
			v.Outcome = OutcomeUnknown
			v.Reasons = append(v.Reasons, Reason{Code: ReasonVMUnreadable, Message: fmt.Sprintf("the VMI is shut down, and whether VirtualMachine %s starts it again could not be read: %s", owner.Name, msg), Source: srcVM})
			return
		}
		v.Outcome = OutcomeStaysDown
		v.Reasons = append(v.Reasons, Reason{Code: ReasonNoVM, Message: fmt.Sprintf("the VMI's VirtualMachine %s was not found: nothing starts it again", owner.Name), Source: srcVM})
		return
	}
	rs, err := vm.RunStrategy()
	if err != nil {
		v.Outcome = OutcomeUnknown
		v.Reasons = append(v.Reasons, Reason{Code: ReasonRunStrategyUnrecognised, Message: fmt.Sprintf("VirtualMachine %s: %v", vm.Name, err), Source: srcVM})
		return
	}
	v.RunStrategy = string(rs)
	switch rs {
	case kubevirtv1.RunStrategyAlways:
		v.Reasons = append(v.Reasons, Reason{Code: ReasonRunStrategyAlways, Message: "runStrategy Always: the VM controller starts a new VMI once the old one is final", Source: srcVM})
		if len(fits) == 0 {
			v.Outcome = OutcomeStaysDown
			v.Reasons = append(v.Reasons, Reason{Code: ReasonNoNodeForRestart, Message: "the new VMI cannot be scheduled until a node fits: " + noTarget.Message, Source: srcScheduler})
			return
		}
		v.Outcome = OutcomeRestartsElsewhere
	case kubevirtv1.RunStrategyRerunOnFailure:
		v.Outcome = OutcomeStaysDown
		v.Reasons = append(v.Reasons, Reason{
			Code:    ReasonRunStrategyRerun,
			Message: "runStrategy RerunOnFailure restarts a Failed VMI only; an evicted launcher shuts the guest down and the VMI ends Succeeded, so it stays down",
			Source:  srcRerun,
		})
	case kubevirtv1.RunStrategyManual, kubevirtv1.RunStrategyHalted, kubevirtv1.RunStrategyOnce, kubevirtv1.RunStrategyWaitAsReceiver:
		v.Outcome = OutcomeStaysDown
		v.Reasons = append(v.Reasons, Reason{Code: ReasonRunStrategyNoRestart, Message: fmt.Sprintf("runStrategy %s: the VM controller does not start the VMI again on its own", rs), Source: srcVM})
	default:
		v.Outcome = OutcomeUnknown
		v.Reasons = append(v.Reasons, Reason{Code: ReasonRunStrategyUnrecognised, Message: fmt.Sprintf("VirtualMachine %s has runStrategy %q, which KubeVirt does not know", vm.Name, rs), Source: srcVM})
	}
}

// liveMigratable says whether KubeVirt takes the VMI for live-migratable:
// its LiveMigratable condition is True (VirtualMachineInstance.IsMigratable,
// which the admitter and the evacuation controller read; virt-handler sets
// it, kv:pkg/virt-handler/vm.go). When it is not, whyNot holds the
// condition's reason and every cause found in the spec (KubeVirt's
// condition names only the first).
func liveMigratable(in Input, vmi *kubevirtv1.VirtualMachineInstance) (migratable bool, whyNot, notes []Reason) {
	var cond *kubevirtv1.VirtualMachineInstanceCondition
	for i := range vmi.Status.Conditions {
		if vmi.Status.Conditions[i].Type == kubevirtv1.VirtualMachineInstanceIsMigratable {
			cond = &vmi.Status.Conditions[i]
		}
	}
	if cond != nil && cond.Status == corev1.ConditionTrue {
		return true, nil, nil
	}
	if cond == nil || cond.Status != corev1.ConditionFalse {
		whyNot = append(whyNot, Reason{Code: ReasonLiveMigratableUnknown, Message: "the VMI has no LiveMigratable=True condition (virt-handler has not set it): KubeVirt takes it for not live-migratable", Source: srcMigratable})
	} else {
		msg := "LiveMigratable=False"
		if cond.Reason != "" {
			msg += " (" + cond.Reason + ")"
		}
		if cond.Message != "" {
			msg += ": " + cond.Message
		}
		whyNot = append(whyNot, Reason{Code: ReasonNotLiveMigratable, Message: msg, Source: srcMigratable})
	}
	for _, vol := range vmi.Spec.Volumes {
		claim := ""
		switch {
		case vol.PersistentVolumeClaim != nil:
			claim = vol.PersistentVolumeClaim.ClaimName
		case vol.DataVolume != nil:
			claim = vol.DataVolume.Name
		default:
			continue
		}
		pvc := pvcByName(in.PVCs, vmi.Namespace, claim)
		if pvc == nil {
			if msg, bad := in.unreadable(KindPVCs); bad {
				notes = append(notes, Reason{Code: ReasonPVCUnreadable, Message: fmt.Sprintf("volume %s: PersistentVolumeClaim %s could not be read: %s", vol.Name, claim, msg)})
			}
			continue
		}
		if !slices.Contains(pvc.Spec.AccessModes, corev1.ReadWriteMany) {
			whyNot = append(whyNot, Reason{
				Code:    ReasonVolumeReadWriteOnce,
				Message: fmt.Sprintf("volume %s: PersistentVolumeClaim %s is not ReadWriteMany (access modes %v): live migration needs shared storage", vol.Name, claim, pvc.Spec.AccessModes),
				Source:  srcMigratable,
			})
		}
	}
	for _, d := range vmi.Spec.Domain.Devices.HostDevices {
		whyNot = append(whyNot, Reason{Code: ReasonHostDevice, Message: fmt.Sprintf("host device %s (%s) is passed through", d.Name, d.DeviceName), Source: srcMigratable})
	}
	for _, g := range vmi.Spec.Domain.Devices.GPUs {
		whyNot = append(whyNot, Reason{Code: ReasonGPU, Message: fmt.Sprintf("GPU %s (%s) is passed through", g.Name, g.DeviceName), Source: srcMigratable})
	}
	return false, whyNot, notes
}

// blockingBudgets are the PodDisruptionBudgets that refuse the eviction of
// the VMI's launcher pod, each as a reason, and notes naming every budget
// that selects it. The eviction subresource refuses an eviction when a
// budget selecting the pod allows no disruption, its status is older than
// its spec, or more than one budget selects the pod (k8s:pkg/registry/core/
// pod/storage/eviction.go). KubeVirt before v1.5 made a budget of its own
// per VMI (kubevirt-disruption-budget-*, owned by the VMI); from v1.5 its
// controller only deletes them (kv:pkg/virt-controller/watch/drain/
// disruptionbudget/disruptionbudget.go).
func blockingBudgets(in Input, vmi *kubevirtv1.VirtualMachineInstance) (blocking []Reason, selecting []string) {
	podLabels := launcherLabels(in, vmi)
	var names []string
	pdbs := slices.Clone(in.PDBs)
	slices.SortFunc(pdbs, func(a, b policyv1.PodDisruptionBudget) int { return strings.Compare(a.Name, b.Name) })
	for i := range pdbs {
		pdb := &pdbs[i]
		if pdb.Namespace != vmi.Namespace || pdb.Spec.Selector == nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || !sel.Matches(podLabels) {
			continue
		}
		names = append(names, pdb.Name)
		owner := ""
		if o := metav1.GetControllerOf(pdb); o != nil && o.Kind == "VirtualMachineInstance" {
			owner = " (KubeVirt's own, from before v1.5, " + srcPDB + ")"
		}
		selecting = append(selecting, fmt.Sprintf("PodDisruptionBudget %s%s selects the launcher pod", pdb.Name, owner))
		switch {
		case pdb.Status.ObservedGeneration < pdb.Generation:
			blocking = append(blocking, Reason{Code: ReasonPDBDisallows, Message: fmt.Sprintf("PodDisruptionBudget %s%s is not processed yet (observedGeneration %d < generation %d): the eviction is refused", pdb.Name, owner, pdb.Status.ObservedGeneration, pdb.Generation), Source: srcK8sEvict})
		case pdb.Status.DisruptionsAllowed < 1:
			blocking = append(blocking, Reason{Code: ReasonPDBDisallows, Message: fmt.Sprintf("PodDisruptionBudget %s%s allows %d disruptions: the eviction is refused", pdb.Name, owner, pdb.Status.DisruptionsAllowed), Source: srcK8sEvict})
		}
	}
	if len(names) > 1 {
		blocking = append(blocking, Reason{Code: ReasonPDBDisallows, Message: fmt.Sprintf("%d PodDisruptionBudgets select the launcher pod (%s): the eviction subresource refuses a pod with more than one", len(names), strings.Join(names, ", ")), Source: srcK8sEvict})
	}
	return blocking, selecting
}

// launcherLabels are the labels of the VMI's launcher pod on the node; when
// the pod was not read, the VMI's labels plus kubevirt.io=virt-launcher,
// which KubeVirt copies onto the pod (kv:pkg/virt-controller/services/
// template.go).
func launcherLabels(in Input, vmi *kubevirtv1.VirtualMachineInstance) labels.Set {
	for i := range in.Pods {
		pod := &in.Pods[i]
		if pod.Namespace == vmi.Namespace && pod.Spec.NodeName == vmi.Status.NodeName && pod.DeletionTimestamp == nil &&
			(vmi.UID != "" && pod.Labels[kubevirtv1.CreatedByLabel] == string(vmi.UID) || pod.Annotations[kubevirtv1.DomainAnnotation] == vmi.Name) {
			return labels.Set(pod.Labels)
		}
	}
	set := labels.Set{}
	for k, val := range vmi.Labels {
		set[k] = val
	}
	set[kubevirtv1.AppLabel] = "virt-launcher"
	if vmi.UID != "" {
		set[kubevirtv1.CreatedByLabel] = string(vmi.UID)
	}
	return set
}

func vmByName(vms []kubevirtv1.VirtualMachine, ns, name string) *kubevirtv1.VirtualMachine {
	for i := range vms {
		if vms[i].Namespace == ns && vms[i].Name == name {
			return &vms[i]
		}
	}
	return nil
}

func pvcByName(pvcs []corev1.PersistentVolumeClaim, ns, name string) *corev1.PersistentVolumeClaim {
	for i := range pvcs {
		if pvcs[i].Namespace == ns && pvcs[i].Name == name {
			return &pvcs[i]
		}
	}
	return nil
}
