package projection

import (
	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// ClaimVolume is a volume of a VM's or VMI's spec that a claim backs: what
// the storage layer reads to find the VM's claims and DataVolumes
// (internal/storagefacts VolumesOf). Other volumes are not kept.
type ClaimVolume struct {
	Name, ClaimName string
	// Kind says which source named the claim.
	Kind         claimKind
	Hotpluggable bool
}

type claimKind uint8

const (
	claimPVC claimKind = iota
	claimDataVolume
	claimMemoryDump
)

// claimVolumes keeps the claim-backed volumes; nil when there are none,
// as for a VM of container disks.
func claimVolumes(in []kubevirtv1.Volume) []ClaimVolume {
	var out []ClaimVolume
	for i := range in {
		v := &in[i]
		switch {
		case v.PersistentVolumeClaim != nil:
			out = append(out, ClaimVolume{Name: v.Name, ClaimName: v.PersistentVolumeClaim.ClaimName, Kind: claimPVC, Hotpluggable: v.PersistentVolumeClaim.Hotpluggable})
		case v.DataVolume != nil:
			out = append(out, ClaimVolume{Name: v.Name, ClaimName: v.DataVolume.Name, Kind: claimDataVolume, Hotpluggable: v.DataVolume.Hotpluggable})
		case v.MemoryDump != nil:
			out = append(out, ClaimVolume{Name: v.Name, ClaimName: v.MemoryDump.ClaimName, Kind: claimMemoryDump, Hotpluggable: v.MemoryDump.Hotpluggable})
		}
	}
	return out
}

// toVolumes rebuilds the volumes as far as they were kept.
func toVolumes(in []ClaimVolume) []kubevirtv1.Volume { return convert(in, (*ClaimVolume).volume) }

func (c *ClaimVolume) volume() kubevirtv1.Volume {
	out := kubevirtv1.Volume{Name: c.Name}
	pvc := kubevirtv1.PersistentVolumeClaimVolumeSource{
		PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: c.ClaimName}, Hotpluggable: c.Hotpluggable,
	}
	switch c.Kind {
	case claimDataVolume:
		out.DataVolume = &kubevirtv1.DataVolumeSource{Name: c.ClaimName, Hotpluggable: c.Hotpluggable}
	case claimMemoryDump:
		out.MemoryDump = &kubevirtv1.MemoryDumpVolumeSource{PersistentVolumeClaimVolumeSource: pvc}
	default:
		out.PersistentVolumeClaim = &pvc
	}
	return out
}
