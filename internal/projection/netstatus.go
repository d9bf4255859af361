package projection

import (
	"encoding/json"
	"net"
	"net/netip"
	"slices"

	"github.com/vmobs/vmobs/internal/membership"
	"github.com/vmobs/vmobs/internal/netstatus"
)

// PodNet is one entry of Multus' network-status annotation as the engine
// reads it (netstatus.Status), packed: names interned, the address and the
// MAC as bytes. The annotation's text, even compacted, was the largest
// part of a launcher pod's projection (about 250 bytes for two networks);
// packed, an entry is 40.
type PodNet struct {
	Name, Interface Sym
	IP              [16]byte // netip.Addr.As16
	MAC             [6]byte
	Flags           uint8
}

// PodNet flags.
const (
	netHasIP uint8 = 1 << iota
	netIPv4
	netHasMAC
	netDefault
)

// packNetStatus packs a network-status annotation when its text can be
// rebuilt from the entries the engine reads: at most one address per
// network, addresses and MACs written as Go writes them. Anything else (a dual-stack network, a zone, an uppercase MAC, an
// annotation that does not parse, which the engine cites as written) stays
// text.
func packNetStatus(s string) (*[]PodNet, bool) {
	entries, err := netstatus.Parse(s)
	if err != nil || len(entries) == 0 {
		return nil, false
	}
	out := make([]PodNet, len(entries))
	for i := range entries {
		e, o := &entries[i], &out[i]
		o.Name, o.Interface = Intern(e.Name), Intern(e.Interface)
		switch len(e.IPs) {
		case 0:
		case 1:
			a, err := netip.ParseAddr(e.IPs[0])
			if err != nil || a.Zone() != "" || a.String() != e.IPs[0] {
				return nil, false
			}
			o.IP, o.Flags = a.As16(), o.Flags|netHasIP
			if a.Is4() {
				o.Flags |= netIPv4
			}
		default:
			return nil, false
		}
		if e.MAC != "" {
			m, ok := packMAC(e.MAC)
			if !ok {
				return nil, false
			}
			o.MAC, o.Flags = m, o.Flags|netHasMAC
		}
		if e.Default {
			o.Flags |= netDefault
		}
	}
	return &out, true
}

// MAC is a MAC address as it was written: six bytes when Go writes them
// the same way (lowercase, colons, as KubeVirt and the CNIs do), else the
// text. 16 bytes, where a string cost 16 and 24 more for its text.
type MAC struct {
	b     [6]byte
	set   bool
	other *string
}

func macOf(s string) MAC {
	if s == "" {
		return MAC{}
	}
	if b, ok := packMAC(s); ok {
		return MAC{b: b, set: true}
	}
	return MAC{other: &s}
}

// String is the MAC as it was written.
func (m MAC) String() string {
	switch {
	case m.other != nil:
		return *m.other
	case m.set:
		return net.HardwareAddr(m.b[:]).String()
	}
	return ""
}

// packMAC is s as six bytes, when they are written back as s.
func packMAC(s string) ([6]byte, bool) {
	var b [6]byte
	m, err := net.ParseMAC(s)
	if err != nil || len(m) != len(b) || m.String() != s {
		return b, false
	}
	copy(b[:], m)
	return b, true
}

// netStatusText is the annotation's text rebuilt from packed entries: what
// netstatus.Parse reads back as the entries it was packed from.
func netStatusText(nets []PodNet) string {
	type entry struct {
		Name      string   `json:"name"`
		Interface string   `json:"interface,omitempty"`
		IPs       []string `json:"ips,omitempty"`
		MAC       string   `json:"mac,omitempty"`
		Default   bool     `json:"default,omitempty"`
	}
	out := make([]entry, len(nets))
	for i, n := range nets {
		e := &out[i]
		e.Name, e.Interface, e.Default = n.Name.String(), n.Interface.String(), n.Flags&netDefault != 0
		if n.Flags&netHasIP != 0 {
			a := netip.AddrFrom16(n.IP)
			if n.Flags&netIPv4 != 0 {
				a = a.Unmap()
			}
			e.IPs = []string{a.String()}
		}
		if n.Flags&netHasMAC != 0 {
			e.MAC = net.HardwareAddr(n.MAC[:]).String()
		}
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return ""
	}
	return string(raw)
}

// packNet moves a packable network-status annotation out of the kept
// pairs into p.Net; any other stays text, compacted.
func (p *Pod) packNet() {
	i := slices.IndexFunc(p.Kept, func(a Pair) bool { return a.Key.String() == membership.NetworkStatusAnnotation })
	if i < 0 {
		return
	}
	if nets, ok := packNetStatus(p.Kept[i].Value); ok {
		p.Net = nets
		p.Kept = slices.Delete(p.Kept, i, i+1)
		if len(p.Kept) == 0 {
			p.Kept = nil
		} else {
			p.Kept = slices.Clip(p.Kept)
		}
		return
	}
	p.Kept[i].Value = compactJSON(p.Kept[i].Value)
}
