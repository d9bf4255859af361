package v1alpha1

import "iter"

// Layer names, as status.layers spells them and as metrics labels, Events,
// alerts and the demo name the layers.
const (
	LayerControlPlane = "controlPlane"
	LayerNode         = "node"
	LayerGuest        = "guest"
	LayerStorage      = "storage"
)

// LayerNames are the layers in their fixed order: control plane, node,
// guest, storage (the order of ties in the overall verdict and of the
// conditions). Storage comes last: it was added last, and a VM whose
// storage fails usually shows it in the control plane first (a VMI that
// waits for its volumes), which then explains it.
var LayerNames = [...]string{LayerControlPlane, LayerNode, LayerGuest, LayerStorage}

// All yields each layer with its name, in the order of LayerNames. A nil
// Layers yields nothing.
func (l *Layers) All() iter.Seq2[string, *LayerStatus] {
	return func(yield func(string, *LayerStatus) bool) {
		if l == nil {
			return
		}
		for _, name := range LayerNames {
			if !yield(name, l.Get(name)) {
				return
			}
		}
	}
}

// Get is the layer called name, nil for a name that is not a layer.
func (l *Layers) Get(name string) *LayerStatus {
	if l == nil {
		return nil
	}
	switch name {
	case LayerControlPlane:
		return &l.ControlPlane
	case LayerNode:
		return &l.Node
	case LayerGuest:
		return &l.Guest
	case LayerStorage:
		return &l.Storage
	}
	return nil
}
