package verdict

import (
	"cmp"
	"net/netip"
	"slices"
	"strings"

	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/netstatus"
)

const (
	maxInterfaces = 64 // the CRD's MaxItems
	maxIfaceIPs   = 32 // the CRD's MaxItems per IP list

	// KubeVirt's infoSource values (kv:pkg/network/vmispec/infosource.go),
	// joined with ", "; the API module has no constants for them.
	infoSourceGuestAgent = "guest-agent"
	infoSourceDomain     = "domain"
	infoSourceSeparator  = ", "

	// primaryPodInterface is the pod-side name of the primary interface
	// (kv:pkg/network/namescheme/networknamescheme.go).
	primaryPodInterface = "eth0"
)

// interfaces joins what the VMI status, the launcher pod and Multus say
// about each interface, sorted so that input order does not matter.
func (e *engine) interfaces() []v1alpha1.InterfaceStatus {
	f := &e.f
	if f.vmi == nil || len(f.vmi.Status.Interfaces) == 0 {
		return nil
	}
	src := f.vmi.Status.Interfaces
	n := min(len(src), maxInterfaces)
	var out []v1alpha1.InterfaceStatus
	if n <= len(e.a.ifcs) {
		out = e.a.ifcs[:0:n]
	} else {
		out = make([]v1alpha1.InterfaceStatus, 0, n)
	}
	for i := range src[:n] {
		ifc := &src[i]
		s := v1alpha1.InterfaceStatus{Name: ifc.Name, InterfaceName: ifc.InterfaceName, MAC: ifc.MAC}
		s.IPAddresses = e.ipList(ifc)
		s.InfoSources = e.infoSources(ifc.InfoSource)
		s.PodIPs = e.podIPList(i)
		out = append(out, s)
	}
	slices.SortFunc(out, compareInterfaces)
	return out
}

func compareInterfaces(a, b v1alpha1.InterfaceStatus) int {
	return cmp.Or(
		strings.Compare(a.Name, b.Name),
		strings.Compare(a.InterfaceName, b.InterfaceName),
		strings.Compare(a.MAC, b.MAC),
		slices.Compare(a.IPAddresses, b.IPAddresses),
		slices.Compare(a.InfoSources, b.InfoSources),
		slices.Compare(a.PodIPs, b.PodIPs),
	)
}

// ipList is ipAddress and ipAddresses (KubeVirt keeps the first of the list
// in ipAddress), sorted and deduplicated.
func (e *engine) ipList(ifc *kubevirtv1.VirtualMachineInstanceNetworkInterface) []string {
	var buf [8]string
	out := buf[:0]
	add := func(ip string) {
		if ip != "" && len(out) < maxIfaceIPs && !slices.Contains(out, ip) {
			out = append(out, bound(ip, 64))
		}
	}
	add(ifc.IP)
	for _, ip := range ifc.IPs {
		add(ip)
	}
	return e.a.keep(out)
}

// infoSources splits KubeVirt's ", "-joined infoSource.
func (e *engine) infoSources(s string) []string {
	if s == "" {
		return nil
	}
	var buf [4]string
	out := buf[:0]
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part != "" && len(out) < 8 && !slices.Contains(out, part) {
			out = append(out, bound(part, 64))
		}
	}
	return e.a.keep(out)
}

func hasInfoSource(s, src string) bool {
	for part := range strings.SplitSeq(s, ",") {
		if strings.TrimSpace(part) == src {
			return true
		}
	}
	return false
}

// podIPList is the pod-side IPs of status interface i, sorted.
func (e *engine) podIPList(i int) []string {
	f := &e.f
	primary, ns := f.podSide(i)
	var buf [8]string
	out := buf[:0]
	add := func(ip string) {
		if ip != "" && len(out) < maxIfaceIPs && !slices.Contains(out, ip) {
			out = append(out, bound(ip, 64))
		}
	}
	switch {
	case primary && f.active != nil && (len(f.active.Status.PodIPs) > 0 || f.active.Status.PodIP != ""):
		p := f.active
		add(p.Status.PodIP)
		for _, ip := range p.Status.PodIPs {
			add(ip.IP)
		}
	case ns != nil && len(ns.IPs) > 0:
		for _, ip := range ns.IPs {
			add(stripPrefix(ip))
		}
	}
	return e.a.keep(out)
}

// podSide finds where the pod network says something about status interface
// i: the primary interface (on the pod network, or eth0, or the first when
// the spec does not tell) takes the pod's IPs; a secondary one takes the
// Multus network-status entry of its pod interface.
func (f *facts) podSide(i int) (primary bool, ns *netstatus.Status) {
	if i < len(f.podSides) {
		c := &f.podSides[i]
		if !c.done {
			c.primary, c.ns = f.findPodSide(i)
			c.done = true
		}
		return c.primary, c.ns
	}
	return f.findPodSide(i)
}

type podSideInfo struct {
	done    bool
	primary bool
	ns      *netstatus.Status
}

func (f *facts) findPodSide(i int) (primary bool, ns *netstatus.Status) {
	ifc := &f.vmi.Status.Interfaces[i]
	primary = f.isPrimary(i)
	for j := range f.netStatus {
		s := &f.netStatus[j]
		switch {
		case primary && s.Default:
			return primary, s
		case !primary && ifc.PodInterfaceName != "" && s.Interface == ifc.PodInterfaceName:
			return primary, s
		case !primary && ifc.PodInterfaceName == "" && ifc.Name != "" && f.multusNetworkIs(ifc.Name, s.Name):
			return primary, s
		}
	}
	return primary, nil
}

func (f *facts) isPrimary(i int) bool {
	ifc := &f.vmi.Status.Interfaces[i]
	if ifc.Name != "" {
		for j := range f.vmi.Spec.Networks {
			if n := &f.vmi.Spec.Networks[j]; n.Name == ifc.Name {
				return n.Pod != nil || (n.Multus != nil && n.Multus.Default)
			}
		}
	}
	if ifc.PodInterfaceName != "" {
		return ifc.PodInterfaceName == primaryPodInterface
	}
	// KubeVirt moves the primary interface to index 0
	// (kv:pkg/network/setup/netstat.go).
	return i == 0 && ifc.Name != "" && len(f.vmi.Spec.Networks) == 0
}

// multusNetworkIs matches a VMI network's networkName ("nad" or "ns/nad")
// with a network-status name (always "ns/nad").
func (f *facts) multusNetworkIs(netName, statusName string) bool {
	for j := range f.vmi.Spec.Networks {
		n := &f.vmi.Spec.Networks[j]
		if n.Name != netName || n.Multus == nil {
			continue
		}
		want := n.Multus.NetworkName
		if want == statusName {
			return true
		}
		ns, name, ok := strings.Cut(statusName, "/")
		return ok && name == want && ns == f.vmi.Namespace
	}
	return false
}

func stripPrefix(ip string) string {
	if i := strings.IndexByte(ip, '/'); i >= 0 {
		return ip[:i]
	}
	return ip
}

// specInterface is the spec of the VMI interface called name.
func (f *facts) specInterface(name string) *kubevirtv1.Interface {
	if name == "" {
		return nil
	}
	for i := range f.vmi.Spec.Domain.Devices.Interfaces {
		if s := &f.vmi.Spec.Domain.Devices.Interfaces[i]; s.Name == name {
			return s
		}
	}
	return nil
}

// ipMismatch says whether interface i's status IPs and its pod-side IPs
// share nothing.
//   - Masquerade, core passt (passtBinding, v1.8+) and binding plugins (the
//     passt plugin among them) on the pod network: virt-handler caches the
//     pod interface's IPs — always for masquerade and passtBinding, for a
//     plugin when the pod interface exists — and writes them into the
//     status; the agent's fill in only a family the cache lacks
//     (kv:pkg/network/setup/netpod/discover.go:71-94, kv:pkg/network/setup/
//     netstat.go:215-232, 371-398; kv:pkg/network/vmispec/interface.go:74
//     treats masquerade and passtBinding alike). A status IP that is not
//     the pod's is KubeVirt's reporting failing, whatever the infoSource
//     says; for a plugin only a pod that has IPs is compared (the return
//     below needs pod IPs). The passt: {} field of before v1.3 is rejected
//     by KubeVirt's admitter ("discontinued since v1.3",
//     kv:pkg/network/admitter/discontinued.go:40-45) and not read.
//   - Bridge and SR-IOV hand the pod-side address to the guest: compared
//     once the agent reported.
//   - Binding plugins on secondary networks do their own addressing: not
//     compared.
//
// Nothing is compared while a migration runs: the VMI may already name the
// target (its virt-handler acknowledges the handoff and writes nodeName,
// kv:pkg/virt-handler/migration-target.go ackMigrationCompletion) before its
// next sync replaces the source pod's addresses. After the migration's end
// the lag grace applies (podIPsSince).
func (f *facts) ipMismatch(i int) bool {
	if f.mig.inProgress {
		return false
	}
	ifc := &f.vmi.Status.Interfaces[i]
	spec := f.specInterface(ifc.Name)
	if spec == nil {
		return false
	}
	primary, ns := f.podSide(i)
	switch {
	case spec.Masquerade != nil || spec.PasstBinding != nil || spec.Binding != nil:
		if !primary {
			return false
		}
		if f.natMismatch(i) {
			return true
		}
		ns = nil
	case spec.Bridge != nil || spec.SRIOV != nil:
		if !hasInfoSource(ifc.InfoSource, infoSourceGuestAgent) {
			return false
		}
	default:
		return false
	}
	guestIPs := 0
	overlap := false
	check := func(ip string) {
		if ip == "" || strings.HasPrefix(strings.ToLower(ip), "fe80:") {
			return
		}
		guestIPs++
		if primary && f.active != nil {
			if f.active.Status.PodIP == ip {
				overlap = true
			}
			for _, p := range f.active.Status.PodIPs {
				overlap = overlap || p.IP == ip
			}
		}
		if ns != nil {
			for _, p := range ns.IPs {
				overlap = overlap || stripPrefix(p) == ip
			}
		}
	}
	check(ifc.IP)
	for _, ip := range ifc.IPs {
		check(ip)
	}
	podIPs := 0
	if primary && f.active != nil {
		podIPs = len(f.active.Status.PodIPs)
		if f.active.Status.PodIP != "" {
			podIPs++
		}
	}
	if ns != nil {
		podIPs += len(ns.IPs)
	}
	return guestIPs > 0 && podIPs > 0 && !overlap
}

// Masquerade's VM-side networks: the guest is .2 behind the NAT
// (kv:pkg/network/... masquerade defaults, api:core/v1/schema.go
// PodNetwork.VMNetworkCIDR / VMIPv6NetworkCIDR).
var (
	defaultVMNetwork     = netip.MustParsePrefix("10.0.2.0/24")
	defaultVMIPv6Network = netip.MustParsePrefix("fd10:0:2::/120")
)

// natMismatch says whether status interface i is a masquerade interface on
// the pod network whose status shows an address of the VM-side network
// behind the NAT (10.0.2.2 by default): virt-handler must report the pod's
// address there (kubevirt#18760), so this is wrong whatever the pod says.
func (f *facts) natMismatch(i int) bool {
	ifc := &f.vmi.Status.Interfaces[i]
	spec := f.specInterface(ifc.Name)
	if spec == nil || spec.Masquerade == nil {
		return false
	}
	primary, _ := f.podSide(i)
	return primary && f.natAddress(ifc)
}

// natAddress says whether an interface's status shows an address of the
// masquerade VM-side network behind the NAT.
func (f *facts) natAddress(ifc *kubevirtv1.VirtualMachineInstanceNetworkInterface) bool {
	v4, v6 := defaultVMNetwork, defaultVMIPv6Network
	for j := range f.vmi.Spec.Networks {
		n := &f.vmi.Spec.Networks[j]
		if n.Name != ifc.Name || n.Pod == nil {
			continue
		}
		// Parsed only when set: a failed parse allocates its error.
		if n.Pod.VMNetworkCIDR != "" {
			if p, err := netip.ParsePrefix(n.Pod.VMNetworkCIDR); err == nil {
				v4 = p
			}
		}
		if n.Pod.VMIPv6NetworkCIDR != "" {
			if p, err := netip.ParsePrefix(n.Pod.VMIPv6NetworkCIDR); err == nil {
				v6 = p
			}
		}
	}
	in := func(ip string) bool {
		a, err := netip.ParseAddr(ip)
		return err == nil && (v4.Contains(a) || v6.Contains(a))
	}
	if in(ifc.IP) {
		return true
	}
	for _, ip := range ifc.IPs {
		if in(ip) {
			return true
		}
	}
	return false
}

// interfaceOrder is the indexes of the first n status interfaces in the
// order the status lists them (name, guest name, MAC, pod interface), so
// that rules visit them independently of KubeVirt's order.
func (f *facts) interfaceOrder(n int, buf []int) []int {
	idx := buf[:0]
	for i := 0; i < n; i++ {
		idx = append(idx, i)
	}
	src := f.vmi.Status.Interfaces
	slices.SortFunc(idx, func(a, b int) int {
		x, y := &src[a], &src[b]
		return cmp.Or(
			strings.Compare(x.Name, y.Name),
			strings.Compare(x.InterfaceName, y.InterfaceName),
			strings.Compare(x.MAC, y.MAC),
			strings.Compare(x.PodInterfaceName, y.PodInterfaceName),
			strings.Compare(x.IP, y.IP),
		)
	})
	return idx
}
