// Package simulator plays KubeVirt's part through a real API server: it
// writes what virt-controller, virt-handler and virt-api write, and what the
// Kubernetes components KubeVirt leans on write (kube-scheduler, the kubelet,
// Multus, the node lifecycle controller), in the order they write it.
//
// It is built for end-to-end controller tests, `vmobs demo` and the scale
// harness, so it is explicit and deterministic: no goroutines, no sleeps, no
// watches. The storage plays are the one exception: the PV binder and the
// attach-detach controller are the real kube-controller-manager's, and a
// play polls for their writes (storage.go, StorageWait). Every method does one named step (or a documented sequence of
// steps) and returns when the API server has accepted its writes. What
// KubeVirt serves rather than writes is served from the API server's objects
// and the simulator's knobs: virt-handler's metrics (VirtHandlerMetrics, a
// handler) and virt-api's guest agent subresources (VirtAPI, a server of
// its own behind kube-apiserver's aggregator). Timestamps
// written into objects come from Simulator.Clock, truncated to seconds;
// generated names and addresses come from a seeded random source.
//
// Objects are shaped the way KubeVirt v1.9 shapes them (see
// reference/kubevirt-surface.md in the shared design notes): the VMI is
// written with full Updates because its CRD has no status subresource; VMs,
// migrations, pods and nodes get their status through the status
// subresource. Every write names the component that would make it as the
// field manager, so managedFields read like a real cluster's.
//
// A Simulator is safe for concurrent use on different VMs. Calls that act on
// the same VM must not overlap; the simulator retries resourceVersion
// conflicts with other writers (such as the controller under test) by
// re-reading the object.
//
// Use it with a direct client (client.New), not a manager's cached client:
// each step reads the object it changes and must see its previous step.
package simulator

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Clock returns the current time. The simulator reads it for every
// timestamp it writes into an object; tests inject a fake clock.
type Clock func() time.Time

// Field managers: the component each write stands for.
const (
	managerVirtController = "virt-controller"
	managerVirtHandler    = "virt-handler"
	managerVirtAPI        = "virt-api"
	managerScheduler      = "kube-scheduler"
	managerKubelet        = "kubelet"
	managerMultus         = "multus"
	managerNodeLifecycle  = "kube-controller-manager"
	managerUser           = "kubectl"
	managerVirtctl        = "virtctl"
)

// DefaultLauncherImage is the virt-launcher image of KubeVirt v1.9.0.
const DefaultLauncherImage = "quay.io/kubevirt/virt-launcher:v1.9.0"

// DefaultSeed seeds the random source when WithSeed is not given.
const DefaultSeed = 1

// Simulator writes KubeVirt's objects through Client. Create it with New.
type Simulator struct {
	// Client talks to the API server. It must know the core and
	// kubevirt.io/v1 types (internal/scheme.New does).
	Client client.Client
	// Clock is read for every timestamp the simulator writes.
	Clock Clock
	// LauncherImage is the image of the launcher pod's compute container
	// and of status.launcherContainerImageVersion.
	LauncherImage string
	// Release is the KubeVirt release whose writes are played, "vX.Y";
	// empty is the newest. Only what vmobs reads differs
	// (docs/compatibility.md).
	Release string

	mu     sync.Mutex
	rnd    *rand.Rand
	specs  map[types.NamespacedName]VMSpec
	nodes  int            // nodes added, for addresses
	podIPs map[string]int // next pod address per node

	// domains holds the domain stats' fault knobs (domainstats.go).
	domains domainState
	// guests holds the guest agents' knobs (guestagent.go).
	guests guestState
	// attachErrors are the external-attacher's failures by claim
	// (SetAttachError, storage.go).
	attachErrors map[types.NamespacedName]string
	// provisionerID is the external-provisioner's identity, drawn once
	// (storage.go).
	provisionerID string
}

// Option configures a Simulator.
type Option func(*Simulator)

// WithClock sets the clock timestamps come from (default time.Now).
func WithClock(c Clock) Option { return func(s *Simulator) { s.Clock = c } }

// WithSeed seeds the random source behind generated names (launcher pods,
// migrations), MAC addresses and container IDs, so runs are reproducible.
func WithSeed(seed int64) Option {
	return func(s *Simulator) { s.rnd = rand.New(rand.NewPCG(uint64(seed), 0x5eed)) }
}

// WithLauncherImage sets the virt-launcher image (default
// DefaultLauncherImage).
func WithLauncherImage(image string) Option { return func(s *Simulator) { s.LauncherImage = image } }

// WithKubeVirtRelease plays the writes of KubeVirt release r ("v1.5" …
// "v1.9"): an older release leaves out what it does not write yet.
func WithKubeVirtRelease(r string) Option { return func(s *Simulator) { s.Release = r } }

// writes reports whether the played release writes what KubeVirt release
// since ("vX.Y") introduced.
func (s *Simulator) writes(since string) bool {
	return s.Release == "" || !ReleaseOlder(s.Release, since)
}

// ReleaseOlder reports whether release a ("vX.Y") is older than b; a
// release it cannot read counts as the newest.
func ReleaseOlder(a, b string) bool {
	var amaj, amin, bmaj, bmin int
	if _, err := fmt.Sscanf(a, "v%d.%d", &amaj, &amin); err != nil {
		return false
	}
	if _, err := fmt.Sscanf(b, "v%d.%d", &bmaj, &bmin); err != nil {
		return false
	}
	return amaj < bmaj || (amaj == bmaj && amin < bmin)
}

// New returns a Simulator that writes through c.
func New(c client.Client, opts ...Option) *Simulator {
	s := &Simulator{
		Client:        c,
		Clock:         time.Now,
		LauncherImage: DefaultLauncherImage,
		specs:         map[types.NamespacedName]VMSpec{},
		podIPs:        map[string]int{},
	}
	WithSeed(DefaultSeed)(s)
	for _, o := range opts {
		o(s)
	}
	return s
}

// Now is the simulator's clock in UTC, truncated to seconds (the API server
// stores times with second precision).
func (s *Simulator) Now() time.Time { return s.Clock().UTC().Truncate(time.Second) }

func (s *Simulator) now() metav1.Time { return metav1.NewTime(s.Now()) }

// EnsureNamespace creates the namespace name, with its "default"
// ServiceAccount that pods are admitted with, unless they exist.
func (s *Simulator) EnsureNamespace(ctx context.Context, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := s.Client.Create(ctx, ns, client.FieldOwner(managerUser)); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "default"}}
	if err := s.Client.Create(ctx, sa, client.FieldOwner(managerNodeLifecycle)); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the default ServiceAccount of %s: %w", name, err)
	}
	return nil
}

// randAlphabet is the one Kubernetes uses for generateName suffixes
// (k8s.io/apimachinery/pkg/util/rand): lowercase, no vowels.
const randAlphabet = "bcdfghjklmnpqrstvwxz2456789"

// suffix returns n random characters for a generated name.
func (s *Simulator) suffix(n int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := make([]byte, n)
	for i := range b {
		b[i] = randAlphabet[s.rnd.IntN(len(randAlphabet))]
	}
	return string(b)
}

// generateName mimics the API server's generateName: the base is cut to
// leave room for a 5-character suffix within 63 characters.
func (s *Simulator) generateName(base string) string {
	const maxBase = 63 - 5
	if len(base) > maxBase {
		base = base[:maxBase]
	}
	return base + s.suffix(5)
}

func (s *Simulator) randBytes(n int) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(s.rnd.IntN(256))
	}
	return b
}

func (s *Simulator) hex(n int) string { return fmt.Sprintf("%x", s.randBytes(n)) }

// uuid returns a random RFC 4122 version 4 UUID from the seeded source.
func (s *Simulator) uuid() string {
	b := s.randBytes(16)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// mac returns a MAC address in the 52:54:00 (QEMU) range, as libvirt assigns.
func (s *Simulator) mac() string {
	b := s.randBytes(3)
	return fmt.Sprintf("52:54:00:%02x:%02x:%02x", b[0], b[1], b[2])
}

func (s *Simulator) rememberSpec(spec VMSpec) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.specs[types.NamespacedName{Namespace: spec.Namespace, Name: spec.Name}] = spec
}

// spec returns the VMSpec a VM was created with by this Simulator.
func (s *Simulator) spec(ns, name string) (VMSpec, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sp, ok := s.specs[types.NamespacedName{Namespace: ns, Name: name}]
	return sp, ok
}

func key(ns, name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }
