package simulator

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Storage: the simulator plays a CSI driver's sidecars and node plugin
// (through the kubelet) and nothing of Kubernetes' own storage
// controllers. Binding PVCs to PVs (the PV binder) and creating
// VolumeAttachments for the volumes of the pods on a node (the
// attach-detach controller) are kube-controller-manager's: the tests run
// the real one (testenv.Options.ControllerManager). The simulator answers
// them as the sidecars do: the external-provisioner creates a PV for a PVC
// the binder handed to CSIDriver, the external-attacher marks
// VolumeAttachments of CSIDriver attached (or failed), and the kubelet
// reports mount failures as Warning Events. Like the rest of the simulator
// each actor does one pass and returns; a play that needs
// kube-controller-manager's answer waits for it (await, StorageWait).

// CSIDriver is the CSI driver the simulator plays. Its volumes need
// attaching (CSIDriver attachRequired), so the attach-detach controller
// creates a VolumeAttachment for each volume of a pod on a node.
const CSIDriver = "csi.simulator.vmobs.io"

// StorageClasses of CSIDriver (InstallCSIDriver), and one whose provisioner
// nobody runs.
const (
	// StorageClassImmediate binds at once (volumeBindingMode Immediate).
	StorageClassImmediate = "sim-immediate"
	// StorageClassWFFC waits for the first consumer: the PV binder hands
	// the claim to the provisioner only once kube-scheduler has chosen a
	// node for a pod that uses it (annotation SelectedNodeAnnotation).
	StorageClassWFFC = "sim-wffc"
	// StorageClassNoProvisioner names a provisioner no component runs:
	// its claims stay Pending, the PV binder waiting for the external
	// provisioner (event ExternalProvisioning).
	StorageClassNoProvisioner = "sim-orphan"
	// orphanProvisioner is StorageClassNoProvisioner's provisioner.
	orphanProvisioner = "csi.absent.vmobs.io"
)

// Annotations and labels of the storage components, as
// k8s.io/component-helpers/storage/volume and the CSI sidecars spell them.
const (
	// SelectedNodeAnnotation is set on a WaitForFirstConsumer PVC by
	// kube-scheduler's volume binding to the node it chose for the pod.
	SelectedNodeAnnotation = "volume.kubernetes.io/selected-node"
	// StorageProvisionerAnnotation is set by the PV binder on a PVC it
	// hands to an external provisioner.
	StorageProvisionerAnnotation = "volume.kubernetes.io/storage-provisioner"
	// provisionedByAnnotation marks a PV its provisioner created.
	provisionedByAnnotation = "pv.kubernetes.io/provisioned-by"
	// nodeIDAnnotation maps CSI drivers to their node IDs on a Node
	// (written by the kubelet when a node plugin registers).
	nodeIDAnnotation = "csi.volume.kubernetes.io/nodeid"
	// TopologyKey is CSIDriver's topology label on nodes and in the node
	// affinity of the PVs it provisions for WaitForFirstConsumer claims.
	TopologyKey = "topology." + CSIDriver + "/node"
	// provisionerFinalizer is the external-provisioner's finalizer on the
	// PVs it creates.
	provisionerFinalizer = "external-provisioner.volume.kubernetes.io/finalizer"
)

// Field managers and event sources of the storage actors.
const (
	managerProvisioner = "csi-provisioner"
	managerAttacher    = "csi-attacher"
	managerCDI         = "cdi-controller"
	// The kubelet's event source component; its host is the node.
	componentKubelet = "kubelet"
)

// StorageWait bounds how long a storage play waits for
// kube-controller-manager's writes (a PVC bound, a VolumeAttachment
// created, an event recorded); it polls the API server every 100 ms.
const StorageWait = 30 * time.Second

// DefaultClaimSize is the size of the claims the simulator creates.
const DefaultClaimSize = "30Gi"

// InstallCSIDriver installs what deploying CSIDriver leaves in a cluster
// (an administrator's writes, field manager kubectl): the CSIDriver object
// (attachRequired, persistent volumes only) and the StorageClasses
// StorageClassImmediate and StorageClassWFFC of its provisioner, plus
// StorageClassNoProvisioner. It keeps what exists.
func (s *Simulator) InstallCSIDriver(ctx context.Context) error {
	objs := []client.Object{
		&storagev1.CSIDriver{
			ObjectMeta: metav1.ObjectMeta{Name: CSIDriver},
			Spec: storagev1.CSIDriverSpec{
				AttachRequired:       ptr.To(true),
				PodInfoOnMount:       ptr.To(false),
				VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent},
			},
		},
		storageClass(StorageClassImmediate, CSIDriver, storagev1.VolumeBindingImmediate),
		storageClass(StorageClassWFFC, CSIDriver, storagev1.VolumeBindingWaitForFirstConsumer),
		storageClass(StorageClassNoProvisioner, orphanProvisioner, storagev1.VolumeBindingImmediate),
	}
	for _, o := range objs {
		if err := s.Client.Create(ctx, o, client.FieldOwner(managerUser)); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("installing %T %s: %w", o, o.GetName(), err)
		}
	}
	return nil
}

func storageClass(name, provisioner string, mode storagev1.VolumeBindingMode) *storagev1.StorageClass {
	return &storagev1.StorageClass{
		ObjectMeta:           metav1.ObjectMeta{Name: name},
		Provisioner:          provisioner,
		ReclaimPolicy:        ptr.To(corev1.PersistentVolumeReclaimDelete),
		VolumeBindingMode:    ptr.To(mode),
		AllowVolumeExpansion: ptr.To(true),
	}
}

// RegisterCSINode is the kubelet registering CSIDriver's node plugin on
// node: the CSINode object (owned by the Node) lists the driver with its
// node ID and topology key, the Node gets the driver's topology label and
// its csi.volume.kubernetes.io/nodeid annotation. The Node must exist.
func (s *Simulator) RegisterCSINode(ctx context.Context, node string) error {
	n := &corev1.Node{}
	if err := s.Client.Get(ctx, key("", node), n); err != nil {
		return fmt.Errorf("reading node %s: %w", node, err)
	}
	csiNode := &storagev1.CSINode{
		ObjectMeta: metav1.ObjectMeta{
			Name: node,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Node", Name: node, UID: n.UID,
			}},
		},
		Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{
			Name: CSIDriver, NodeID: node, TopologyKeys: []string{TopologyKey},
		}}},
	}
	if err := s.Client.Create(ctx, csiNode, client.FieldOwner(managerKubelet)); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("registering CSINode %s: %w", node, err)
	}
	_, err := s.updateNode(ctx, node, managerKubelet, func(n *corev1.Node) error {
		setLabel(n, TopologyKey, node)
		setAnnotation(n, nodeIDAnnotation, fmt.Sprintf(`{%q:%q}`, CSIDriver, node))
		return nil
	})
	return err
}

// EnsureStorage installs the CSI driver (InstallCSIDriver) and registers
// its node plugin on the scenario nodes and on nodes (RegisterCSINode),
// creating those nodes if missing.
func (s *Simulator) EnsureStorage(ctx context.Context, nodes ...string) error {
	if err := s.InstallCSIDriver(ctx); err != nil {
		return err
	}
	for _, n := range append(append([]string(nil), ScenarioNodes...), nodes...) {
		if err := s.EnsureNode(ctx, n); err != nil {
			return err
		}
		if err := s.RegisterCSINode(ctx, n); err != nil {
			return err
		}
	}
	return nil
}

// ClaimSpec describes a PersistentVolumeClaim to create.
type ClaimSpec struct {
	// Namespace and Name of the claim.
	Namespace, Name string
	// StorageClass of the claim; empty is StorageClassImmediate. A class
	// that does not exist leaves the claim Pending (the PV binder's
	// ProvisioningFailed event says so).
	StorageClass string
	// Size requested; empty is DefaultClaimSize.
	Size string
	// AccessMode; empty is ReadWriteOnce.
	AccessMode corev1.PersistentVolumeAccessMode
	// Block asks for volumeMode Block (the kubelet maps the volume rather
	// than mounting it: FailedMapVolume instead of FailedMount).
	Block bool
}

func (c ClaimSpec) claim() (*corev1.PersistentVolumeClaim, error) {
	size, err := resource.ParseQuantity(cmpOr(c.Size, DefaultClaimSize))
	if err != nil {
		return nil, fmt.Errorf("claim %s/%s: size %q: %w", c.Namespace, c.Name, c.Size, err)
	}
	mode := corev1.PersistentVolumeFilesystem
	if c.Block {
		mode = corev1.PersistentVolumeBlock
	}
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: c.Name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{cmpOr(c.AccessMode, corev1.ReadWriteOnce)},
			StorageClassName: ptr.To(cmpOr(c.StorageClass, StorageClassImmediate)),
			VolumeMode:       &mode,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
		},
	}, nil
}

func cmpOr[T comparable](v, dflt T) T {
	var zero T
	if v == zero {
		return dflt
	}
	return v
}

// CreateClaim creates the PVC as a user does. The namespace must exist.
func (s *Simulator) CreateClaim(ctx context.Context, c ClaimSpec) error {
	pvc, err := c.claim()
	if err != nil {
		return err
	}
	if err := s.Client.Create(ctx, pvc, client.FieldOwner(managerUser)); err != nil {
		return fmt.Errorf("creating PVC %s/%s: %w", c.Namespace, c.Name, err)
	}
	return nil
}

// SelectNode is kube-scheduler's volume binding choosing node for a pod
// that uses the WaitForFirstConsumer claim ns/claim: it sets
// SelectedNodeAnnotation, which makes the PV binder hand the claim to its
// provisioner. (kube-scheduler then waits for the claim to bind before it
// binds the pod.)
func (s *Simulator) SelectNode(ctx context.Context, ns, claim, node string) error {
	_, err := mutate(ctx, s.Client, key(ns, claim), func() *corev1.PersistentVolumeClaim { return &corev1.PersistentVolumeClaim{} }, false, managerScheduler,
		func(pvc *corev1.PersistentVolumeClaim) error {
			setAnnotation(pvc, SelectedNodeAnnotation, node)
			return nil
		})
	return err
}

// Provision is one pass of CSIDriver's external-provisioner: for every
// Pending PVC the PV binder has handed to CSIDriver
// (StorageProvisionerAnnotation) and, when its class waits for the first
// consumer, on which kube-scheduler has set SelectedNodeAnnotation, it
// creates the PV "pvc-<claim UID>" pre-bound to the claim (claimRef), with
// the class's reclaim policy, CSIDriver's volume handle and, for a selected
// node, a node affinity on TopologyKey; and records the Normal events
// Provisioning and ProvisioningSucceeded on the claim. The PV binder then
// binds the two. It returns the PVs it created, by name.
func (s *Simulator) Provision(ctx context.Context) ([]string, error) {
	var claims corev1.PersistentVolumeClaimList
	if err := s.Client.List(ctx, &claims); err != nil {
		return nil, fmt.Errorf("listing PVCs: %w", err)
	}
	var made []string
	for i := range claims.Items {
		pvc := &claims.Items[i]
		if pvc.Status.Phase != corev1.ClaimPending || pvc.Spec.VolumeName != "" || pvc.Annotations[StorageProvisionerAnnotation] != CSIDriver {
			continue
		}
		name, err := s.provision(ctx, pvc)
		if err != nil {
			return made, err
		}
		if name != "" {
			made = append(made, name)
		}
	}
	return made, nil
}

// provision creates the PV for pvc unless it exists or the claim waits for
// a node; it returns the PV's name when it created one.
func (s *Simulator) provision(ctx context.Context, pvc *corev1.PersistentVolumeClaim) (string, error) {
	sc := &storagev1.StorageClass{}
	if err := s.Client.Get(ctx, key("", ptr.Deref(pvc.Spec.StorageClassName, "")), sc); err != nil {
		return "", fmt.Errorf("provisioning %s/%s: reading its StorageClass: %w", pvc.Namespace, pvc.Name, err)
	}
	node := pvc.Annotations[SelectedNodeAnnotation]
	if ptr.Deref(sc.VolumeBindingMode, storagev1.VolumeBindingImmediate) == storagev1.VolumeBindingWaitForFirstConsumer && node == "" {
		return "", nil
	}
	name := "pvc-" + string(pvc.UID)
	if err := s.Client.Get(ctx, key("", name), &corev1.PersistentVolume{}); err == nil {
		return "", nil
	} else if !apierrors.IsNotFound(err) {
		return "", err
	}
	component := s.provisionerIdentity()
	if err := s.recordEvent(ctx, pvc, corev1.EventTypeNormal, "Provisioning",
		fmt.Sprintf("External provisioner is provisioning volume for claim %q", pvc.Namespace+"/"+pvc.Name), component, ""); err != nil {
		return "", err
	}
	pv := provisionedPV(name, pvc, sc.Name, ptr.Deref(sc.ReclaimPolicy, corev1.PersistentVolumeReclaimDelete), component, node)
	if err := s.Client.Create(ctx, pv, client.FieldOwner(managerProvisioner)); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return "", nil
		}
		return "", fmt.Errorf("creating PV %s for %s/%s: %w", name, pvc.Namespace, pvc.Name, err)
	}
	return name, s.recordEvent(ctx, pvc, corev1.EventTypeNormal, "ProvisioningSucceeded", "Successfully provisioned volume "+name, component, "")
}

// provisionerIdentity is the external-provisioner's event source and
// csiProvisionerIdentity: the driver, its pod and an ID drawn at its start.
func (s *Simulator) provisionerIdentity() string {
	s.mu.Lock()
	id := s.provisionerID
	s.mu.Unlock()
	if id != "" {
		return id
	}
	id = CSIDriver + "_csi-provisioner-0_" + s.uuid() // uuid takes s.mu
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.provisionerID == "" {
		s.provisionerID = id
	}
	return s.provisionerID
}

// SetAttachError makes CSIDriver's external-attacher fail every attach of
// the volume bound to claim ns/claim with message (ControllerPublishVolume's
// gRPC error, such as "rpc error: code = Internal desc = ..."); an empty
// message lets it attach again.
func (s *Simulator) SetAttachError(ns, claim, message string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.attachErrors == nil {
		s.attachErrors = map[types.NamespacedName]string{}
	}
	k := types.NamespacedName{Namespace: ns, Name: claim}
	if message == "" {
		delete(s.attachErrors, k)
		return
	}
	s.attachErrors[k] = message
}

func (s *Simulator) attachError(ns, claim string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.attachErrors[types.NamespacedName{Namespace: ns, Name: claim}]
}

// attacherFinalizer is the external-attacher's finalizer on the
// VolumeAttachments it handles: "external-attacher/" and the driver name
// with every character but letters, digits and '-' turned into '-'.
var attacherFinalizer = "external-attacher/" + regexp.MustCompile(`[^a-zA-Z0-9-]`).ReplaceAllString(CSIDriver, "-")

// AttachVolumes is one pass of CSIDriver's external-attacher over the
// VolumeAttachments the attach-detach controller created for it: each not
// yet attached gets the attacher's finalizer, then status.attached=true
// with the device path in attachmentMetadata, or, when SetAttachError set
// a message for the volume's claim, status.attachError with that message
// and the time. It returns the VolumeAttachments it wrote, by name.
func (s *Simulator) AttachVolumes(ctx context.Context) ([]string, error) {
	var vas storagev1.VolumeAttachmentList
	if err := s.Client.List(ctx, &vas); err != nil {
		return nil, fmt.Errorf("listing VolumeAttachments: %w", err)
	}
	sort.Slice(vas.Items, func(i, j int) bool { return vas.Items[i].Name < vas.Items[j].Name })
	var wrote []string
	for i := range vas.Items {
		va := &vas.Items[i]
		if va.Spec.Attacher != CSIDriver || va.Status.Attached || va.DeletionTimestamp != nil || va.Spec.Source.PersistentVolumeName == nil {
			continue
		}
		pv := &corev1.PersistentVolume{}
		if err := s.Client.Get(ctx, key("", *va.Spec.Source.PersistentVolumeName), pv); err != nil {
			return wrote, fmt.Errorf("attaching %s: reading its PV: %w", va.Name, err)
		}
		msg := ""
		if ref := pv.Spec.ClaimRef; ref != nil {
			msg = s.attachError(ref.Namespace, ref.Name)
		}
		if va.Status.AttachError != nil && va.Status.AttachError.Message == msg {
			continue
		}
		if _, err := mutate(ctx, s.Client, key("", va.Name), func() *storagev1.VolumeAttachment { return &storagev1.VolumeAttachment{} }, false, managerAttacher,
			func(va *storagev1.VolumeAttachment) error {
				addFinalizer(va, attacherFinalizer)
				return nil
			}); err != nil {
			return wrote, err
		}
		now := s.now()
		if _, err := mutate(ctx, s.Client, key("", va.Name), func() *storagev1.VolumeAttachment { return &storagev1.VolumeAttachment{} }, true, managerAttacher,
			func(va *storagev1.VolumeAttachment) error {
				if msg != "" {
					va.Status.AttachError = &storagev1.VolumeError{Time: now, Message: msg}
					return nil
				}
				va.Status.Attached = true
				va.Status.AttachError = nil
				va.Status.AttachmentMetadata = map[string]string{"devicePath": "/dev/disk/by-id/virtio-" + pv.Spec.CSI.VolumeHandle}
				return nil
			}); err != nil {
			return wrote, err
		}
		wrote = append(wrote, va.Name)
	}
	return wrote, nil
}

// VolumeAttachments lists the VolumeAttachments of the PV bound to claim
// ns/claim (the attach-detach controller's objects, named
// csi-<sha256 of volume handle, driver and node>).
func (s *Simulator) VolumeAttachments(ctx context.Context, ns, claim string) ([]storagev1.VolumeAttachment, error) {
	pvc := &corev1.PersistentVolumeClaim{}
	if err := s.Client.Get(ctx, key(ns, claim), pvc); err != nil {
		return nil, fmt.Errorf("reading PVC %s/%s: %w", ns, claim, err)
	}
	if pvc.Spec.VolumeName == "" {
		return nil, nil
	}
	var vas storagev1.VolumeAttachmentList
	if err := s.Client.List(ctx, &vas); err != nil {
		return nil, fmt.Errorf("listing VolumeAttachments: %w", err)
	}
	var out []storagev1.VolumeAttachment
	for _, va := range vas.Items {
		if p := va.Spec.Source.PersistentVolumeName; p != nil && *p == pvc.Spec.VolumeName {
			out = append(out, va)
		}
	}
	return out, nil
}

// recordEvent writes a core/v1 Event about obj as client-go's event
// recorder does for a component (source.component and
// reportingComponent) on host (source.host and reportingInstance; empty
// for a cluster-wide controller), at the simulator's clock.
func (s *Simulator) recordEvent(ctx context.Context, obj client.Object, eventType, reason, message, component, host string) error {
	gvk, err := apiutil.GVKForObject(obj, s.Client.Scheme())
	if err != nil {
		return fmt.Errorf("event %s on %T: %w", reason, obj, err)
	}
	now := s.now()
	ns := obj.GetNamespace()
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns,
			// client-go names an event after its object and the time
			// in 16 hex digits of nanoseconds; the simulator's clock
			// has seconds, so the digits are drawn.
			Name: obj.GetName() + "." + s.hex(8),
		},
		InvolvedObject: corev1.ObjectReference{
			Kind: gvk.Kind, APIVersion: gvk.GroupVersion().String(), Namespace: obj.GetNamespace(), Name: obj.GetName(),
			UID: obj.GetUID(), ResourceVersion: obj.GetResourceVersion(),
		},
		Reason: reason, Message: message, Type: eventType, Count: 1,
		FirstTimestamp: now, LastTimestamp: now,
		Source:              corev1.EventSource{Component: component, Host: host},
		ReportingController: component, ReportingInstance: host,
	}
	if err := s.createEvent(ctx, ev); err != nil {
		return fmt.Errorf("recording event %s on %s %s/%s: %w", reason, gvk.Kind, obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

// createEvent creates ev as its source component, drawing another name
// suffix when the name is taken.
func (s *Simulator) createEvent(ctx context.Context, ev *corev1.Event) error {
	err := s.Client.Create(ctx, ev, client.FieldOwner(ev.Source.Component))
	for try := 0; apierrors.IsAlreadyExists(err) && try < 8; try++ {
		ev.Name = ev.InvolvedObject.Name + "." + s.hex(8)
		err = s.Client.Create(ctx, ev, client.FieldOwner(ev.Source.Component))
	}
	return err
}

// Events lists the Events about the object of kind ns/name, oldest first.
func (s *Simulator) Events(ctx context.Context, kind, ns, name string) ([]corev1.Event, error) {
	var list corev1.EventList
	if err := s.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing events in %s: %w", ns, err)
	}
	var out []corev1.Event
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == kind && e.InvolvedObject.Name == name {
			out = append(out, e)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].LastTimestamp.Before(&out[j].LastTimestamp) })
	return out, nil
}

// await polls cond every 100 ms until it holds, for at most StorageWait:
// the storage plays' wait for kube-controller-manager's writes.
func (s *Simulator) await(ctx context.Context, what string, cond func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, StorageWait)
	defer cancel()
	if err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, cond); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("%s not seen within %s (is kube-controller-manager running? testenv.Options.ControllerManager)", what, StorageWait)
		}
		return fmt.Errorf("waiting for %s: %w", what, err)
	}
	return nil
}

// AwaitEvent waits (StorageWait) for an Event with reason about the
// object of kind ns/name, and returns the newest.
func (s *Simulator) AwaitEvent(ctx context.Context, kind, ns, name, reason string) (corev1.Event, error) {
	var got corev1.Event
	err := s.await(ctx, fmt.Sprintf("event %s on %s %s/%s", reason, kind, ns, name), func(ctx context.Context) (bool, error) {
		evs, err := s.Events(ctx, kind, ns, name)
		if err != nil {
			return false, err
		}
		for _, e := range evs {
			if e.Reason == reason {
				got = e
			}
		}
		return got.Name != "", nil
	})
	return got, err
}

// AwaitBound provisions (Provision) until the PV binder has bound claim
// ns/claim, and returns its PV's name.
func (s *Simulator) AwaitBound(ctx context.Context, ns, claim string) (string, error) {
	pv := ""
	err := s.await(ctx, fmt.Sprintf("PVC %s/%s bound", ns, claim), func(ctx context.Context) (bool, error) {
		if _, err := s.Provision(ctx); err != nil {
			return false, err
		}
		pvc := &corev1.PersistentVolumeClaim{}
		if err := s.Client.Get(ctx, key(ns, claim), pvc); err != nil {
			return false, err
		}
		pv = pvc.Spec.VolumeName
		return pvc.Status.Phase == corev1.ClaimBound, nil
	})
	return pv, err
}

// AwaitAttachment runs the external-attacher (AttachVolumes) until the
// attach-detach controller's VolumeAttachment for claim ns/claim on node
// exists and the attacher has answered it (attached, or attachError when
// SetAttachError set one), and returns it.
func (s *Simulator) AwaitAttachment(ctx context.Context, ns, claim, node string) (storagev1.VolumeAttachment, error) {
	var got storagev1.VolumeAttachment
	err := s.await(ctx, fmt.Sprintf("VolumeAttachment of PVC %s/%s on %s", ns, claim, node), func(ctx context.Context) (bool, error) {
		if _, err := s.AttachVolumes(ctx); err != nil {
			return false, err
		}
		vas, err := s.VolumeAttachments(ctx, ns, claim)
		if err != nil {
			return false, err
		}
		for _, va := range vas {
			if va.Spec.NodeName == node && (va.Status.Attached || va.Status.AttachError != nil) {
				got = va
				return true, nil
			}
		}
		return false, nil
	})
	return got, err
}

// claimsOf are the PVC names the pod's volumes use.
func claimsOf(p *corev1.Pod) []string {
	var out []string
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			out = append(out, v.PersistentVolumeClaim.ClaimName)
		}
	}
	return out
}

// Kubelet volume failures for FailVolumeSetup, as the kubelet's operation
// generator words them (k8s.io/kubernetes pkg/volume/util/
// operationexecutor): the event reason, and the prefix of its message.
const (
	// FailedMount is a Filesystem volume's NodeStage or NodePublish
	// failing ("MountVolume.MountDevice failed for volume ...").
	FailedMount = "FailedMount"
	// FailedMapVolume is a Block volume's failing
	// ("MapVolume.SetUpDevice failed for volume ...").
	FailedMapVolume = "FailedMapVolume"
)

// FailVolumeSetup is the kubelet failing to set up the volumes of the
// VMI's launcher pod on its node, which must be bound (PlaceLauncherPod):
// for each PVC volume a Warning Event on the pod from the kubelet (source
// host the node): FailedMount "MountVolume.MountDevice failed for volume
// <pv> : <message>" for a Filesystem volume, FailedMapVolume
// "MapVolume.SetUpDevice failed for volume <pv> : <message>" for a Block
// one; the pod stays Pending with its containers ContainerCreating.
// message is the CSI node plugin's error ("rpc error: code = Internal desc
// = ..."). It returns the reasons it recorded.
func (s *Simulator) FailVolumeSetup(ctx context.Context, ns, name, message string) ([]string, error) {
	vmi, err := s.getVMI(ctx, ns, name)
	if err != nil {
		return nil, err
	}
	pod, err := s.boundLauncher(ctx, vmi)
	if err != nil {
		return nil, err
	}
	var reasons []string
	for _, claim := range claimsOf(pod) {
		pvc := &corev1.PersistentVolumeClaim{}
		if err := s.Client.Get(ctx, key(ns, claim), pvc); err != nil {
			return reasons, fmt.Errorf("reading PVC %s/%s: %w", ns, claim, err)
		}
		reason, prefix := FailedMount, "MountVolume.MountDevice failed"
		if ptr.Deref(pvc.Spec.VolumeMode, corev1.PersistentVolumeFilesystem) == corev1.PersistentVolumeBlock {
			reason, prefix = FailedMapVolume, "MapVolume.SetUpDevice failed"
		}
		volume := cmpOr(pvc.Spec.VolumeName, claim)
		if err := s.recordEvent(ctx, pod, corev1.EventTypeWarning, reason,
			fmt.Sprintf("%s for volume %q : %s", prefix, volume, message), componentKubelet, pod.Spec.NodeName); err != nil {
			return reasons, err
		}
		reasons = append(reasons, reason)
	}
	return reasons, nil
}

// boundLauncher is the VMI's newest launcher pod bound to a node and not
// running yet.
func (s *Simulator) boundLauncher(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance) (*corev1.Pod, error) {
	pods, err := s.LauncherPods(ctx, vmi)
	if err != nil {
		return nil, err
	}
	for i := len(pods) - 1; i >= 0; i-- {
		p := &pods[i]
		if p.Spec.NodeName != "" && p.Status.Phase == corev1.PodPending && p.DeletionTimestamp == nil {
			return p, nil
		}
	}
	return nil, fmt.Errorf("VMI %s/%s has no launcher pod bound to a node and waiting for its volumes", vmi.Namespace, vmi.Name)
}

// provisionedPV is the volume the external provisioner creates for pvc
// (kubernetes-csi/external-provisioner pkg/controller/controller.go): a
// CSI volume of the driver, bound to the claim by its claimRef, with the
// node's topology when the claim waited for its first consumer (node set).
func provisionedPV(name string, pvc *corev1.PersistentVolumeClaim, class string, reclaim corev1.PersistentVolumeReclaimPolicy, identity, node string) *corev1.PersistentVolume {
	fsType := "ext4"
	if ptr.Deref(pvc.Spec.VolumeMode, corev1.PersistentVolumeFilesystem) == corev1.PersistentVolumeBlock {
		fsType = ""
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{provisionedByAnnotation: CSIDriver},
			Finalizers:  []string{provisionerFinalizer},
		},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: pvc.Spec.Resources.Requests[corev1.ResourceStorage]},
			AccessModes:                   pvc.Spec.AccessModes,
			VolumeMode:                    pvc.Spec.VolumeMode,
			StorageClassName:              class,
			PersistentVolumeReclaimPolicy: reclaim,
			ClaimRef: &corev1.ObjectReference{
				Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: pvc.Namespace, Name: pvc.Name,
				UID: pvc.UID, ResourceVersion: pvc.ResourceVersion,
			},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: CSIDriver, VolumeHandle: "vol-" + string(pvc.UID), FSType: fsType,
				VolumeAttributes: map[string]string{"storage.kubernetes.io/csiProvisionerIdentity": identity},
			}},
		},
	}
	if node != "" {
		pv.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: TopologyKey, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
		}}}}
	}
	return pv
}
