package controllers

import (
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/cachestore"
	"github.com/vmobs/vmobs/internal/drain"
	"github.com/vmobs/vmobs/internal/projection"
)

// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=list
// +kubebuilder:rbac:groups=kubevirt.io,resources=kubevirts,verbs=list

// drainTrackEvery is how often a node being drained is looked at again:
// a failed evacuation migration changes neither its VMI's node nor its
// phase, the updates that wake the node's controller.
const drainTrackEvery = 10 * time.Second

// predictDrain reads from the API server what drain.Predict needs for the
// VMIs on node, once per drain, when its cordon is first seen: the VMIs'
// specs (volumes, eviction strategy, placement rules), their VMs, claims,
// launcher pods and PodDisruptionBudgets, every Node, and the KubeVirt CR.
// The cache holds none of that in full (its budget is a few KiB per VM),
// and a drain is rare: a few reads per VM, once, cost less than keeping
// them. A kind it may not read is a note of the prediction, as in
// `kubectl vmobs drain-check`.
func (r *NodeReconciler) predictDrain(ctx context.Context, node string, vms []types.NamespacedName, now time.Time) (drain.Prediction, error) {
	in := drain.Input{Node: node, Now: now}
	namespaces := map[string]bool{}
	claims := map[types.NamespacedName]bool{}
	for _, key := range vms {
		var vmi kubevirtv1.VirtualMachineInstance
		if err := r.APIReader.Get(ctx, key, &vmi); apierrors.IsNotFound(err) {
			continue
		} else if err != nil {
			return drain.Prediction{}, err
		}
		in.VMIs = append(in.VMIs, vmi)
		namespaces[key.Namespace] = true
		for _, v := range vmi.Spec.Volumes {
			switch {
			case v.PersistentVolumeClaim != nil:
				claims[types.NamespacedName{Namespace: key.Namespace, Name: v.PersistentVolumeClaim.ClaimName}] = true
			case v.DataVolume != nil:
				claims[types.NamespacedName{Namespace: key.Namespace, Name: v.DataVolume.Name}] = true
			}
		}
		var vm kubevirtv1.VirtualMachine
		if err := r.APIReader.Get(ctx, key, &vm); err == nil {
			in.VMs = append(in.VMs, vm)
		} else if err := in.Tolerate(drain.KindVMs, client.IgnoreNotFound(err)); err != nil {
			return drain.Prediction{}, err
		}
	}
	keys := slices.SortedFunc(maps.Keys(claims), func(a, b types.NamespacedName) int { return strings.Compare(a.String(), b.String()) })
	for _, key := range keys {
		var pvc corev1.PersistentVolumeClaim
		if err := r.APIReader.Get(ctx, key, &pvc); err == nil {
			in.PVCs = append(in.PVCs, pvc)
		} else if err := in.Tolerate(drain.KindPVCs, client.IgnoreNotFound(err)); err != nil {
			return drain.Prediction{}, err
		}
	}
	var pods corev1.PodList
	err := r.APIReader.List(ctx, &pods, client.MatchingLabels{kubevirtv1.AppLabel: "virt-launcher"}, client.MatchingFields{"spec.nodeName": node})
	if err := in.Tolerate(drain.KindPods, err); err != nil {
		return drain.Prediction{}, err
	}
	in.Pods = pods.Items
	for _, ns := range slices.Sorted(maps.Keys(namespaces)) {
		var pdbs policyv1.PodDisruptionBudgetList
		if err := in.Tolerate(drain.KindPDBs, r.APIReader.List(ctx, &pdbs, client.InNamespace(ns))); err != nil {
			return drain.Prediction{}, err
		}
		in.PDBs = append(in.PDBs, pdbs.Items...)
	}
	var nodes corev1.NodeList
	if err := in.Tolerate(drain.KindNodes, r.APIReader.List(ctx, &nodes)); err != nil {
		return drain.Prediction{}, err
	}
	in.Nodes = nodes.Items
	var kvs kubevirtv1.KubeVirtList
	if err := in.Tolerate(drain.KindKubeVirt, r.APIReader.List(ctx, &kvs)); err != nil {
		return drain.Prediction{}, err
	}
	if len(kvs.Items) > 0 {
		// KubeVirt runs one CR; were there more, the same one as the
		// plugin's (the first by namespace and name).
		slices.SortFunc(kvs.Items, func(a, b kubevirtv1.KubeVirt) int {
			return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
		})
		in.KubeVirt = &kvs.Items[0]
	}
	return drain.Predict(in), nil
}

// drainObjects reads from the cache what tracks a drain of node: the VMIs
// its section names and their migrations. A VMI gone from the cache is
// gone (drain.Track reads that as shut down).
func (r *NodeReconciler) drainObjects(st *v1alpha1.NodeDrainStatus) (drain.Input, error) {
	var in drain.Input
	if st == nil || st.Outcome != nil {
		return in, nil
	}
	for _, v := range st.VMs {
		key := v.Namespace + "/" + v.Name
		vmi, ok, err := cachestore.Get[*projection.VMI](r.Store.VMIs, key)
		if err != nil {
			return in, err
		}
		if ok {
			in.VMIs = append(in.VMIs, *vmi.ToVMI())
		}
		migs, err := cachestore.ByIndex[*projection.Migration](r.Store.Migrations, cachestore.IndexMigrationVMI, key)
		if err != nil {
			return in, err
		}
		for _, m := range migs {
			in.Migrations = append(in.Migrations, *m.ToMigration())
		}
	}
	return in, nil
}
