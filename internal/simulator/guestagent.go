package simulator

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// What the guest agent of a VMI answers through virt-api's guestosinfo,
// userlist and filesystemlist subresources (served by VirtAPI), and the
// knobs that make it go wrong. Like the domain faults, the knobs are kept
// by VMI name: they follow the VMI through a migration and apply to a VMI
// created again under the same name; the VMI need not exist yet.

// GuestAgentVersion is the qemu-guest-agent version the guests report
// (Fedora 41's).
const GuestAgentVersion = "9.1.2"

// GuestTimezone is the guests' timezone as virt-launcher formats it:
// "<zone>, <offset in seconds>" (kv:pkg/virt-launcher/virtwrap/manager.go
// GetGuestInfo).
const GuestTimezone = "UTC, 0"

// guestInfoLimit is how many users and filesystems guestosinfo carries:
// virt-launcher asks its agent store for 10 of each (GetGuestInfo:
// GetFS(10), GetUsers(10)); userlist and filesystemlist carry them all.
const guestInfoLimit = 10

// HugeAnswerBytes is the least size of an answer under GuestAgentHugeAnswer.
const HugeAnswerBytes = 10 << 20

// GuestFilesystem is one filesystem the guest agent reports by default.
type GuestFilesystem struct {
	MountPoint, Type, Disk string
	TotalBytes, UsedBytes  int
}

// GuestFilesystems are the filesystems of a Fedora 41 Cloud guest as
// guest-get-fsinfo reports them, the usage a freshly booted image has.
// SetGuestFilesystemUsage changes a mount point's usage or adds one.
var GuestFilesystems = []GuestFilesystem{
	{MountPoint: "/", Type: "btrfs", Disk: "vda4", TotalBytes: 5_360_320_512, UsedBytes: 1_502_412_800},
	{MountPoint: "/boot", Type: "ext4", Disk: "vda3", TotalBytes: 1_020_702_720, UsedBytes: 204_140_544},
	{MountPoint: "/boot/efi", Type: "vfat", Disk: "vda2", TotalBytes: 104_634_368, UsedBytes: 19_668_992},
}

// addedFilesystemBytes is the size of a filesystem SetGuestFilesystemUsage
// adds at a mount point the guest does not have: a 20 GiB ext4 data disk.
const addedFilesystemBytes = 20 << 30

// guestAgentCommands are the commands the guest agent says it supports
// (a subset of qemu-guest-agent's, the ones KubeVirt uses).
var guestAgentCommands = []string{
	"guest-exec", "guest-exec-status", "guest-fsfreeze-freeze", "guest-fsfreeze-status", "guest-fsfreeze-thaw",
	"guest-get-fsinfo", "guest-get-host-name", "guest-get-osinfo", "guest-get-timezone", "guest-get-users",
	"guest-info", "guest-network-get-interfaces", "guest-ping", "guest-set-user-password", "guest-shutdown", "guest-sync",
}

// GuestAgentFault is a way the guest agent of one VMI goes wrong. Faults are
// switched on and off with SetGuestAgentFault and may be combined.
type GuestAgentFault uint16

const (
	// GuestAgentUnresponsive: the agent never answers. Each of the three
	// calls blocks until the caller gives up (its request's context ends,
	// at the latest when kube-apiserver's request timeout passes), as
	// virt-handler waits on a hung agent. Real KubeVirt gives up sooner,
	// after virt-handler's 5 s gRPC deadline to virt-launcher, with a 500
	// (kv:pkg/virt-handler/cmd-client/client.go shortTimeout): a caller's
	// own timeout must be what ends the wait here. This is the fault of
	// the scenario guest-info-unreachable: the VMI's AgentConnected
	// condition stays True while every call fails. (Real virt-launcher
	// answers these calls from its cache of the agent's data, so a hung
	// agent does not fail them; what this fakes is the path virt-api →
	// virt-handler → launcher not answering.)
	GuestAgentUnresponsive GuestAgentFault = 1 << iota
	// GuestAgentHugeAnswer: each answer is valid JSON of KubeVirt's type
	// of at least HugeAnswerBytes: userlist and filesystemlist list tens of
	// thousands of users and filesystems, guestosinfo carries both lists.
	GuestAgentHugeAnswer
	// GuestAgentMalformed: each answer is 200 OK with a JSON body cut in
	// the middle. Real virt-api never sends one: it decodes virt-handler's
	// answer and encodes it again, answering 500 with the decoder's error
	// when it does not decode (kv:pkg/virt-api/rest/subresource.go
	// httpGetRequestHandler). This is a body cut or garbled between
	// virt-api and the caller (a proxy, a virt-api of another build),
	// which a caller must survive all the same.
	GuestAgentMalformed
	// GuestAgentReportsFrozen: guestosinfo says fsFreezeStatus "frozen"
	// whatever the VMI's status.fsFreezeStatus says (the agent's answer
	// is newer than what virt-handler last copied into the VMI).
	GuestAgentReportsFrozen
	// GuestAgentLauncherTimeout: virt-launcher does not answer
	// virt-handler's call, which gives up at its 5 s gRPC deadline; each
	// call answers 500 with the error as virt-api relays it. Real
	// virt-launcher answers the three calls from its agent poller's cache,
	// so a hung agent alone gives stale answers, not errors: this is what
	// a stuck virt-launcher gives. The answer comes at once; add
	// SetGuestAgentDelay(5*time.Second) for virt-handler's wait.
	GuestAgentLauncherTimeout
)

// launcherCommands are virt-handler's names of the three calls to
// virt-launcher, which its errors carry (kv:pkg/virt-handler/cmd-client/
// client.go).
var launcherCommands = map[string]string{
	"guestosinfo": "GetGuestInfo", "userlist": "GetUsers", "filesystemlist": "GetFilesystems",
}

// launcherTimeout is virt-api's message when virt-handler's call to
// virt-launcher timed out: kubecli's virtHandlerConn wraps virt-handler's
// 500, whose body is cmd-client's handleError of the gRPC error.
func launcherTimeout(call string) string {
	return fmt.Sprintf("unexpected return code 500 (500 Internal Server Error), message: unknown error encountered sending command %s: "+
		"rpc error: code = DeadlineExceeded desc = context deadline exceeded", launcherCommands[call])
}

// guestAgent is what the knobs set for one VMI.
type guestAgent struct {
	faults GuestAgentFault
	delay  time.Duration
	users  []kubevirtv1.VirtualMachineInstanceGuestOSUser
	usage  map[string]float64 // mount point → used percent
	extra  []GuestFilesystem  // AddGuestFilesystems
}

// virtAPIFailure makes virt-api answer every guest call with code until
// the clock passes until.
type virtAPIFailure struct {
	code       int
	retryAfter time.Duration
	until      time.Time
}

// guestState is what the simulator keeps for the guest agents. The zero
// value is ready to use.
type guestState struct {
	mu      sync.Mutex
	agents  map[types.NamespacedName]*guestAgent
	failure virtAPIFailure
}

// agent returns the VMI's knobs, created on first use. g.mu must be held.
func (g *guestState) agent(ns, name string) *guestAgent {
	k := types.NamespacedName{Namespace: ns, Name: name}
	if g.agents == nil {
		g.agents = map[types.NamespacedName]*guestAgent{}
	}
	a := g.agents[k]
	if a == nil {
		a = &guestAgent{}
		g.agents[k] = a
	}
	return a
}

// snapshot is a copy of the VMI's knobs (the zero value when none is set).
func (g *guestState) snapshot(ns, name string) guestAgent {
	g.mu.Lock()
	defer g.mu.Unlock()
	a := g.agents[types.NamespacedName{Namespace: ns, Name: name}]
	if a == nil {
		return guestAgent{}
	}
	out := *a
	out.users = slices.Clone(a.users)
	out.extra = slices.Clone(a.extra)
	out.usage = make(map[string]float64, len(a.usage))
	for k, v := range a.usage {
		out.usage[k] = v
	}
	return out
}

// SetGuestAgentFault switches fault f on (or off) for the guest agent of
// the VMI ns/name.
func (s *Simulator) SetGuestAgentFault(ns, name string, f GuestAgentFault, on bool) {
	g := &s.guests
	g.mu.Lock()
	defer g.mu.Unlock()
	a := g.agent(ns, name)
	if on {
		a.faults |= f
	} else {
		a.faults &^= f
	}
}

// SetGuestAgentDelay makes the guest agent of the VMI ns/name answer each
// call d late (wall-clock time, not the simulator's clock; the wait ends
// early if the caller gives up). Zero answers at once.
func (s *Simulator) SetGuestAgentDelay(ns, name string, d time.Duration) {
	g := &s.guests
	g.mu.Lock()
	defer g.mu.Unlock()
	g.agent(ns, name).delay = d
}

// SetGuestUsers sets who is logged in to the guest of the VMI ns/name
// (nobody by default), each since the clock's now. No user clears the
// list. userlist lists them all; guestosinfo the first 10, as
// virt-launcher's GetGuestInfo does. Like every knob here it is per VMI
// and holds until ResetGuestAgent, so a scenario sets it once (e.g. the
// users of the VM in guest-info-unreachable, to see them kept while the
// calls fail).
func (s *Simulator) SetGuestUsers(ns, name string, users ...string) {
	login := float64(s.Clock().UnixMilli()) / 1000
	list := make([]kubevirtv1.VirtualMachineInstanceGuestOSUser, len(users))
	for i, u := range users {
		list[i] = kubevirtv1.VirtualMachineInstanceGuestOSUser{UserName: u, LoginTime: login}
	}
	g := &s.guests
	g.mu.Lock()
	defer g.mu.Unlock()
	g.agent(ns, name).users = list
}

// SetGuestFilesystemUsage sets how full the filesystem mounted at
// mountPoint in the guest of the VMI ns/name is, in percent of its size;
// a mount point the guest does not have (see GuestFilesystems) is added
// as a 20 GiB ext4 data disk. The value is not clamped: over 100 or below
// 0 the guest reports sizes no real filesystem has, as a lying guest can.
// This is the knob of the scenario filesystem-nearly-full: e.g. "/" at 93
// on one VMI, the others untouched. guestosinfo carries the first 10
// filesystems, filesystemlist all of them.
func (s *Simulator) SetGuestFilesystemUsage(ns, name, mountPoint string, usedPercent float64) {
	g := &s.guests
	g.mu.Lock()
	defer g.mu.Unlock()
	a := g.agent(ns, name)
	if a.usage == nil {
		a.usage = map[string]float64{}
	}
	a.usage[mountPoint] = usedPercent
}

// AddGuestFilesystems adds filesystems to those the guest agent of the VMI
// ns/name reports, after the defaults, as they are (type and sizes), such
// as the squashfs, iso9660 and "System Reserved" filesystems that are full
// by design.
func (s *Simulator) AddGuestFilesystems(ns, name string, fs ...GuestFilesystem) {
	g := &s.guests
	g.mu.Lock()
	defer g.mu.Unlock()
	a := g.agent(ns, name)
	a.extra = append(a.extra, fs...)
}

// ResetGuestAgent clears every guest agent knob of the VMI ns/name: the
// agent answers the defaults again.
func (s *Simulator) ResetGuestAgent(ns, name string) {
	g := &s.guests
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.agents, types.NamespacedName{Namespace: ns, Name: name})
}

// SetVirtAPIFailure makes virt-api answer every guestosinfo, userlist and
// filesystemlist call with the HTTP status code (500, 503 or 429 are the
// interesting ones) for d from the clock's now, with a Retry-After header
// of retryAfter (rounded up to seconds) when it is not zero. The body is a
// metav1.Status, as an API server's. Discovery keeps answering, or
// kube-apiserver would mark the APIService unavailable and answer 503
// itself. A zero d ends the failure.
func (s *Simulator) SetVirtAPIFailure(code int, retryAfter, d time.Duration) {
	g := &s.guests
	g.mu.Lock()
	defer g.mu.Unlock()
	g.failure = virtAPIFailure{code: code, retryAfter: retryAfter, until: s.Clock().Add(d)}
}

// virtAPIFailing is the failure in force at the clock's now, if any.
func (s *Simulator) virtAPIFailing() (virtAPIFailure, bool) {
	g := &s.guests
	g.mu.Lock()
	defer g.mu.Unlock()
	f := g.failure
	return f, f.code != 0 && s.Clock().Before(f.until)
}

// guestFilesystems are the VMI's filesystems with the knobs' usage: the
// defaults in their order, then added mount points sorted.
func guestFilesystems(a guestAgent) []kubevirtv1.VirtualMachineInstanceFileSystem {
	var out []kubevirtv1.VirtualMachineInstanceFileSystem
	known := map[string]bool{}
	add := func(fs GuestFilesystem) {
		item := kubevirtv1.VirtualMachineInstanceFileSystem{
			DiskName: fs.Disk, MountPoint: fs.MountPoint, FileSystemType: fs.Type,
			TotalBytes: fs.TotalBytes, UsedBytes: fs.UsedBytes,
			Disk: []kubevirtv1.VirtualMachineInstanceFileSystemDisk{{BusType: "virtio"}},
		}
		if p, ok := a.usage[fs.MountPoint]; ok {
			item.UsedBytes = int(float64(fs.TotalBytes) * p / 100)
		}
		out = append(out, item)
		known[fs.MountPoint] = true
	}
	for _, fs := range GuestFilesystems {
		add(fs)
	}
	for _, fs := range a.extra {
		add(fs)
	}
	var extra []string
	for mp := range a.usage {
		if !known[mp] {
			extra = append(extra, mp)
		}
	}
	slices.Sort(extra)
	for i, mp := range extra {
		add(GuestFilesystem{MountPoint: mp, Type: "ext4", Disk: fmt.Sprintf("vd%c", 'b'+rune(i%24)), TotalBytes: addedFilesystemBytes})
	}
	return out
}

// guestOSInfo is guestosinfo's answer for vmi with the knobs a, as
// virt-launcher builds it from its agent store.
func guestOSInfo(vmi *kubevirtv1.VirtualMachineInstance, a guestAgent) kubevirtv1.VirtualMachineInstanceGuestAgentInfo {
	info := kubevirtv1.VirtualMachineInstanceGuestAgentInfo{
		GAVersion: GuestAgentVersion,
		Hostname:  vmi.Name,
		OS:        GuestOSInfo,
		Timezone:  GuestTimezone,
		// virt-handler copies the agent's freeze status into the VMI, so
		// the two agree unless a fault says otherwise.
		FSFreezeStatus: vmi.Status.FSFreezeStatus,
	}
	if vmi.Spec.Hostname != "" {
		info.Hostname = vmi.Spec.Hostname
	}
	for _, c := range guestAgentCommands {
		info.SupportedCommands = append(info.SupportedCommands, kubevirtv1.GuestAgentCommandInfo{Name: c, Enabled: true})
	}
	if a.faults&GuestAgentReportsFrozen != 0 {
		info.FSFreezeStatus = FSFrozen
	}
	fs := guestFilesystems(a)
	info.FSInfo.Filesystems = fs[:min(len(fs), guestInfoLimit)]
	if len(a.users) > 0 {
		info.UserList = a.users[:min(len(a.users), guestInfoLimit)]
	}
	return info
}

// guestAnswer is the JSON body of one guest call for vmi: guestosinfo,
// userlist or filesystemlist.
func guestAnswer(call string, vmi *kubevirtv1.VirtualMachineInstance, a guestAgent) ([]byte, error) {
	huge := a.faults&GuestAgentHugeAnswer != 0
	var v any
	switch call {
	case "guestosinfo":
		info := guestOSInfo(vmi, a)
		if huge {
			users, fs := hugeUsers(), hugeFilesystems()
			info.UserList = users[:len(users)/2+1]
			info.FSInfo.Filesystems = fs[:len(fs)/2+1]
		}
		v = info
	case "userlist":
		list := kubevirtv1.VirtualMachineInstanceGuestOSUserList{Items: a.users}
		if list.Items == nil {
			list.Items = []kubevirtv1.VirtualMachineInstanceGuestOSUser{}
		}
		if huge {
			list.Items = hugeUsers()
		}
		v = list
	case "filesystemlist":
		list := kubevirtv1.VirtualMachineInstanceFileSystemList{Items: guestFilesystems(a)}
		if huge {
			list.Items = hugeFilesystems()
		}
		v = list
	default:
		return nil, fmt.Errorf("no guest call %q", call)
	}
	body, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if a.faults&GuestAgentMalformed != 0 {
		body = body[:len(body)/2]
	}
	return body, nil
}

// hugeUsers is a user list of at least HugeAnswerBytes of JSON, made
// once: the lists are the same for every VMI and are only read.
var hugeUsers = sync.OnceValue(func() []kubevirtv1.VirtualMachineInstanceGuestOSUser {
	// {"userName":"user-0000000","domain":"EXAMPLE","loginTime":1764504000.5}, is 72 bytes.
	out := make([]kubevirtv1.VirtualMachineInstanceGuestOSUser, HugeAnswerBytes/72+1)
	for i := range out {
		out[i] = kubevirtv1.VirtualMachineInstanceGuestOSUser{UserName: fmt.Sprintf("user-%07d", i), Domain: "EXAMPLE", LoginTime: 1764504000.5}
	}
	return out
})

// hugeFilesystems is a filesystem list of at least HugeAnswerBytes of
// JSON, made once.
var hugeFilesystems = sync.OnceValue(func() []kubevirtv1.VirtualMachineInstanceFileSystem {
	// Each item is about 160 bytes of JSON; 140 makes sure of the size.
	out := make([]kubevirtv1.VirtualMachineInstanceFileSystem, HugeAnswerBytes/140+1)
	for i := range out {
		out[i] = kubevirtv1.VirtualMachineInstanceFileSystem{
			DiskName: "vdb", MountPoint: fmt.Sprintf("/mnt/volume-%07d", i), FileSystemType: "ext4",
			TotalBytes: addedFilesystemBytes, UsedBytes: addedFilesystemBytes / 2,
			Disk: []kubevirtv1.VirtualMachineInstanceFileSystemDisk{{BusType: "virtio"}},
		}
	}
	return out
})
