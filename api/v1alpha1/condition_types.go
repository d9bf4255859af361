package v1alpha1

// Condition types. Ready, Reconciling and Stalled follow kstatus, so Flux,
// kubectl wait and cli-utils read a VMObservation without custom code. The
// layer conditions repeat each layer's verdict for tools that only read
// conditions.
const (
	// ConditionReady is True when the overall verdict is Healthy or
	// Suspended (a VM stopped as declared is what the user asked for),
	// Unknown when the verdict is Unknown, and False otherwise.
	ConditionReady = "Ready"

	// ConditionReconciling is True while the overall verdict is Progressing:
	// the VM is booting, scheduling or migrating. Abnormal-true polarity.
	ConditionReconciling = "Reconciling"

	// ConditionStalled is True when the verdict is Failed, or Degraded for
	// longer than the stalled threshold: the VM will not heal by waiting.
	// Abnormal-true polarity.
	ConditionStalled = "Stalled"

	// ConditionControlPlaneHealthy is True when the control plane layer is
	// Healthy or Suspended.
	ConditionControlPlaneHealthy = "ControlPlaneHealthy"

	// ConditionNodeHealthy is True when the node layer is Healthy or
	// Suspended.
	ConditionNodeHealthy = "NodeHealthy"

	// ConditionGuestHealthy is True when the guest layer is Healthy or
	// Suspended.
	ConditionGuestHealthy = "GuestHealthy"

	// ConditionStorageHealthy is True when the storage layer is Healthy or
	// Suspended.
	ConditionStorageHealthy = "StorageHealthy"
)

// Condition reasons that are not verdict reasons. The conditions otherwise
// carry the reason of the verdict they reflect (see reasons.go).
const (
	// ReasonDegradedPastThreshold is the Stalled reason when a Degraded
	// verdict has lasted longer than the stalled threshold.
	ReasonDegradedPastThreshold = "DegradedPastThreshold"

	// ReasonNotStalled is the Stalled=False reason.
	ReasonNotStalled = "NotStalled"

	// ReasonNotProgressing is the Reconciling=False reason.
	ReasonNotProgressing = "NotProgressing"
)
