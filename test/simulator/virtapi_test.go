package simulator_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/vmobs/vmobs/internal/simulator"
	"github.com/vmobs/vmobs/internal/testenv"
)

// virtAPIWorld is a simulator on a fake clock with its virt-api registered
// with the control plane, a fresh namespace with a node, and a plain HTTP
// client of the control plane's admin.
type virtAPIWorld struct {
	s    *simulator.Simulator
	clk  *clocktesting.FakeClock
	ns   string
	node string
	api  *simulator.VirtAPI
	hc   *http.Client
}

func newVirtAPIWorld(t *testing.T) *virtAPIWorld {
	t.Helper()
	s, clk, ns := newSim(t)
	start := time.Now()
	api, err := s.ServeVirtAPI(context.Background(), env)
	must(t, err)
	t.Cleanup(func() {
		if err := api.Close(); err != nil {
			t.Errorf("closing virt-api: %v", err)
		}
	})
	t.Logf("virt-api registered and available in %s", time.Since(start).Round(time.Millisecond))
	hc, err := rest.HTTPClientFor(env.Config)
	must(t, err)
	return &virtAPIWorld{s: s, clk: clk, ns: ns, node: addNode(t, s, ns, "a"), api: api, hc: hc}
}

// boot creates and boots the VM name, with a guest agent or not.
func (w *virtAPIWorld) boot(t *testing.T, name string, agent bool) {
	t.Helper()
	bootVM(t, w.s, simulator.VMSpec{Namespace: w.ns, Name: name, GuestAgent: agent}, w.node)
}

// response is one answer of virt-api through kube-apiserver.
type response struct {
	code   int
	header http.Header
	body   []byte
}

// call GETs a guest subresource of the VMI ns/name through kube-apiserver,
// giving up after timeout.
func (w *virtAPIWorld) call(t *testing.T, ns, name, sub string, timeout time.Duration) (response, error) {
	t.Helper()
	return get(t, w.hc, "/apis/subresources.kubevirt.io/v1/namespaces/"+ns+"/virtualmachineinstances/"+name+"/"+sub, timeout)
}

func get(t *testing.T, hc *http.Client, path string, timeout time.Duration) (response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(env.Config.Host, "/")+path, nil)
	must(t, err)
	resp, err := hc.Do(req)
	if err != nil {
		return response{}, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	return response{code: resp.StatusCode, header: resp.Header, body: body}, err
}

// decode GETs a guest subresource that must answer 200 and decodes it
// strictly into KubeVirt's type: a field the type does not have fails.
func decode[T any](t *testing.T, w *virtAPIWorld, name, sub string) T {
	t.Helper()
	r, err := w.call(t, w.ns, name, sub, 10*time.Second)
	must(t, err)
	var v T
	if r.code != http.StatusOK {
		t.Fatalf("%s of %s: %d %s", sub, name, r.code, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s of %s: Content-Type %q, want application/json", sub, name, ct)
	}
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%s of %s does not decode into %T: %v\n%s", sub, name, v, err, r.body)
	}
	return v
}

// topKeys are the keys of the JSON object a guest subresource answers.
func topKeys(t *testing.T, w *virtAPIWorld, name, sub string) []string {
	t.Helper()
	r, err := w.call(t, w.ns, name, sub, 10*time.Second)
	must(t, err)
	var m map[string]json.RawMessage
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("%s of %s: %d %s: %v", sub, name, r.code, r.body, err)
	}
	keys := slices.Collect(maps.Keys(m))
	slices.Sort(keys)
	return keys
}

type (
	guestInfo = kubevirtv1.VirtualMachineInstanceGuestAgentInfo
	userList  = kubevirtv1.VirtualMachineInstanceGuestOSUserList
	fsList    = kubevirtv1.VirtualMachineInstanceFileSystemList
)

// TestVirtAPIGuestCalls reads a VM's guest through kube-apiserver's
// aggregator with a plain client: discovery lists what virt-api lists, the
// three answers decode into KubeVirt's types with the defaults, and the
// users, filesystem usage and freeze knobs show in them.
func TestVirtAPIGuestCalls(t *testing.T) {
	w := newVirtAPIWorld(t)
	ctx := context.Background()

	r, err := get(t, w.hc, "/apis/subresources.kubevirt.io/v1", 10*time.Second)
	must(t, err)
	var resources metav1.APIResourceList
	must(t, json.Unmarshal(r.body, &resources))
	var names []string
	for _, res := range resources.APIResources {
		names = append(names, res.Name)
	}
	for _, want := range []string{"virtualmachineinstances/guestosinfo", "virtualmachineinstances/userlist", "virtualmachineinstances/filesystemlist",
		"virtualmachineinstances/console", "virtualmachineinstances/vnc", "virtualmachineinstances/portforward", "virtualmachines/migrate"} {
		if !slices.Contains(names, want) {
			t.Errorf("discovery of subresources.kubevirt.io/v1 lacks %s: %v", want, names)
		}
	}

	w.boot(t, "vm1", true)
	info := decode[guestInfo](t, w, "vm1", simulator.SubresourceGuestOSInfo)
	wantEqual(t, "hostname", info.Hostname, "vm1")
	wantEqual(t, "os.prettyName", info.OS.PrettyName, simulator.GuestOSInfo.PrettyName)
	wantEqual(t, "os.kernelRelease", info.OS.KernelRelease, simulator.GuestOSInfo.KernelRelease)
	wantEqual(t, "timezone", info.Timezone, simulator.GuestTimezone)
	wantEqual(t, "guestAgentVersion", info.GAVersion, simulator.GuestAgentVersion)
	wantEqual(t, "fsFreezeStatus", info.FSFreezeStatus, "")
	wantEqual(t, "users in guestosinfo", len(info.UserList), 0)
	wantEqual(t, "filesystems in guestosinfo", len(info.FSInfo.Filesystems), len(simulator.GuestFilesystems))
	if len(info.SupportedCommands) == 0 {
		t.Error("guestosinfo lists no supported command")
	}

	// The JSON names KubeVirt's clients read (kubevirt.io/api/core/v1
	// types.go): what virtctl guestosinfo, userlist and fslist print.
	wantEqual(t, "guestosinfo's keys", strings.Join(topKeys(t, w, "vm1", simulator.SubresourceGuestOSInfo), ","),
		"fsInfo,guestAgentVersion,hostname,os,supportedCommands,timezone")
	// The lists carry an empty "metadata" too: their ListMeta is a struct,
	// which encoding/json's omitempty never leaves out, in virt-api's
	// answers as here.
	wantEqual(t, "userlist's keys", strings.Join(topKeys(t, w, "vm1", simulator.SubresourceUserList), ","), "items,metadata")
	wantEqual(t, "filesystemlist's keys", strings.Join(topKeys(t, w, "vm1", simulator.SubresourceFilesystemList), ","), "items,metadata")

	users := decode[userList](t, w, "vm1", simulator.SubresourceUserList)
	if users.Items == nil || len(users.Items) != 0 {
		t.Errorf("userlist of a guest nobody logged in to: %+v, want an empty list", users.Items)
	}
	fs := decode[fsList](t, w, "vm1", simulator.SubresourceFilesystemList)
	if len(fs.Items) != len(simulator.GuestFilesystems) {
		t.Fatalf("filesystemlist: %+v", fs.Items)
	}
	for i, f := range fs.Items {
		d := simulator.GuestFilesystems[i]
		if f.MountPoint != d.MountPoint || f.FileSystemType != d.Type || f.DiskName != d.Disk || f.UsedBytes != d.UsedBytes || f.TotalBytes != d.TotalBytes {
			t.Errorf("filesystem %d = %+v, want %+v", i, f, d)
		}
	}

	w.s.SetGuestUsers(w.ns, "vm1", "fedora", "root")
	w.s.SetGuestFilesystemUsage(w.ns, "vm1", "/", 93)
	w.s.SetGuestFilesystemUsage(w.ns, "vm1", "/var/lib/data", 50)
	users = decode[userList](t, w, "vm1", simulator.SubresourceUserList)
	if len(users.Items) != 2 || users.Items[0].UserName != "fedora" || users.Items[0].LoginTime != float64(t0.Unix()) {
		t.Errorf("userlist = %+v, want fedora and root logged in at %d", users.Items, t0.Unix())
	}
	fs = decode[fsList](t, w, "vm1", simulator.SubresourceFilesystemList)
	byMount := map[string]kubevirtv1.VirtualMachineInstanceFileSystem{}
	for _, f := range fs.Items {
		byMount[f.MountPoint] = f
	}
	root := byMount["/"]
	if got := float64(root.UsedBytes) / float64(root.TotalBytes); got < 0.929 || got > 0.931 {
		t.Errorf("/ is %.3f used, want 0.93", got)
	}
	data := byMount["/var/lib/data"]
	wantEqual(t, "added filesystem type", data.FileSystemType, "ext4")
	wantEqual(t, "added filesystem used", data.UsedBytes, data.TotalBytes/2)
	info = decode[guestInfo](t, w, "vm1", simulator.SubresourceGuestOSInfo)
	wantEqual(t, "users in guestosinfo", len(info.UserList), 2)
	wantEqual(t, "filesystems in guestosinfo", len(info.FSInfo.Filesystems), len(simulator.GuestFilesystems)+1)

	// The freeze status follows the VMI's, unless the agent says frozen
	// first.
	must(t, w.s.FreezeFilesystems(ctx, w.ns, "vm1"))
	wantEqual(t, "fsFreezeStatus when frozen", decode[guestInfo](t, w, "vm1", simulator.SubresourceGuestOSInfo).FSFreezeStatus, simulator.FSFrozen)
	must(t, w.s.ThawFilesystems(ctx, w.ns, "vm1"))
	wantEqual(t, "fsFreezeStatus when thawed", decode[guestInfo](t, w, "vm1", simulator.SubresourceGuestOSInfo).FSFreezeStatus, "")
	w.s.SetGuestAgentFault(w.ns, "vm1", simulator.GuestAgentReportsFrozen, true)
	wantEqual(t, "fsFreezeStatus the agent reports", decode[guestInfo](t, w, "vm1", simulator.SubresourceGuestOSInfo).FSFreezeStatus, simulator.FSFrozen)
	wantEqual(t, "the VMI's fsFreezeStatus", getVMI(t, w.s, w.ns, "vm1").Status.FSFreezeStatus, "")

	// guestosinfo carries 10 users and filesystems at most, the lists all
	// of them (kv:pkg/virt-launcher/virtwrap/manager.go GetGuestInfo).
	many := make([]string, 12)
	for i := range many {
		many[i] = fmt.Sprintf("user%02d", i)
	}
	w.s.SetGuestUsers(w.ns, "vm1", many...)
	for i := range 9 {
		w.s.SetGuestFilesystemUsage(w.ns, "vm1", fmt.Sprintf("/data%d", i), 10)
	}
	info = decode[guestInfo](t, w, "vm1", simulator.SubresourceGuestOSInfo)
	wantEqual(t, "users in guestosinfo, 12 logged in", len(info.UserList), 10)
	wantEqual(t, "filesystems in guestosinfo, 13 mounted", len(info.FSInfo.Filesystems), 10)
	wantEqual(t, "userlist, 12 logged in", len(decode[userList](t, w, "vm1", simulator.SubresourceUserList).Items), 12)
	wantEqual(t, "filesystemlist, 13 mounted", len(decode[fsList](t, w, "vm1", simulator.SubresourceFilesystemList).Items), 13)

	w.s.ResetGuestAgent(w.ns, "vm1")
	info = decode[guestInfo](t, w, "vm1", simulator.SubresourceGuestOSInfo)
	if info.FSFreezeStatus != "" || len(info.UserList) != 0 || len(info.FSInfo.Filesystems) != len(simulator.GuestFilesystems) {
		t.Errorf("after ResetGuestAgent: %+v", info)
	}
}

// TestVirtAPIErrors: what virt-api answers for a VMI it cannot ask: 500
// with KubeVirt's message in plain text, a missing VMI included (not a
// 404: kv:pkg/virt-api/rest/subresource.go httpGetRequestHandler writes
// prepareConnection's StatusError with WriteError(500, err)), relayed
// as-is by kube-apiserver.
func TestVirtAPIErrors(t *testing.T) {
	w := newVirtAPIWorld(t)
	must(t, w.s.CreateVM(context.Background(), simulator.VMSpec{Namespace: w.ns, Name: "pending", GuestAgent: true}))
	w.boot(t, "noagent", false)
	for _, tc := range []struct {
		vmi, want string
	}{
		{"missing", `virtualmachineinstance.kubevirt.io "missing" not found`},
		{"pending", `Operation cannot be fulfilled on virtualmachineinstance.kubevirt.io "pending": VMI is not running`},
		{"noagent", `Operation cannot be fulfilled on virtualmachineinstance.kubevirt.io "noagent": VMI does not have guest agent connected`},
	} {
		for _, sub := range []string{simulator.SubresourceGuestOSInfo, simulator.SubresourceUserList, simulator.SubresourceFilesystemList} {
			r, err := w.call(t, w.ns, tc.vmi, sub, 10*time.Second)
			must(t, err)
			if r.code != http.StatusInternalServerError || string(r.body) != tc.want {
				t.Errorf("%s of %s: %d %q, want 500 %q", sub, tc.vmi, r.code, r.body, tc.want)
			}
		}
	}
}

// TestVirtAPIFaults: each guest agent knob and virt-api's failures do what
// they say, through kube-apiserver, and touch no other VM.
func TestVirtAPIFaults(t *testing.T) {
	w := newVirtAPIWorld(t)
	w.boot(t, "vm1", true)
	w.boot(t, "vm2", true)
	calls := []string{simulator.SubresourceGuestOSInfo, simulator.SubresourceUserList, simulator.SubresourceFilesystemList}

	t.Run("unresponsive", func(t *testing.T) {
		w.s.SetGuestAgentFault(w.ns, "vm1", simulator.GuestAgentUnresponsive, true)
		var wg sync.WaitGroup
		var blocked error
		start := time.Now()
		wg.Go(func() {
			_, blocked = w.call(t, w.ns, "vm1", simulator.SubresourceGuestOSInfo, 1500*time.Millisecond)
		})
		// The other VM answers meanwhile.
		r, err := w.call(t, w.ns, "vm2", simulator.SubresourceGuestOSInfo, 10*time.Second)
		must(t, err)
		wantEqual(t, "vm2 while vm1 hangs", r.code, http.StatusOK)
		wg.Wait()
		if !errors.Is(blocked, context.DeadlineExceeded) || time.Since(start) < 1500*time.Millisecond {
			t.Errorf("a call to an unresponsive agent ended after %s with %v, want the caller's deadline", time.Since(start), blocked)
		}
		w.s.SetGuestAgentFault(w.ns, "vm1", simulator.GuestAgentUnresponsive, false)
		decode[guestInfo](t, w, "vm1", simulator.SubresourceGuestOSInfo)
	})

	t.Run("launcher timeout", func(t *testing.T) {
		w.s.SetGuestAgentFault(w.ns, "vm1", simulator.GuestAgentLauncherTimeout, true)
		defer w.s.SetGuestAgentFault(w.ns, "vm1", simulator.GuestAgentLauncherTimeout, false)
		for sub, cmd := range map[string]string{simulator.SubresourceGuestOSInfo: "GetGuestInfo", simulator.SubresourceUserList: "GetUsers", simulator.SubresourceFilesystemList: "GetFilesystems"} {
			r, err := w.call(t, w.ns, "vm1", sub, 10*time.Second)
			must(t, err)
			if r.code != http.StatusInternalServerError || !strings.Contains(string(r.body), "sending command "+cmd+": rpc error: code = DeadlineExceeded") {
				t.Errorf("%s when virt-launcher times out: %d %s", sub, r.code, r.body)
			}
		}
	})

	t.Run("slow", func(t *testing.T) {
		w.s.SetGuestAgentDelay(w.ns, "vm1", 700*time.Millisecond)
		defer w.s.SetGuestAgentDelay(w.ns, "vm1", 0)
		start := time.Now()
		decode[fsList](t, w, "vm1", simulator.SubresourceFilesystemList)
		if d := time.Since(start); d < 700*time.Millisecond {
			t.Errorf("a slow agent answered in %s, want 700ms or more", d)
		}
	})

	t.Run("huge", func(t *testing.T) {
		w.s.SetGuestAgentFault(w.ns, "vm1", simulator.GuestAgentHugeAnswer, true)
		defer w.s.SetGuestAgentFault(w.ns, "vm1", simulator.GuestAgentHugeAnswer, false)
		for _, sub := range calls {
			start := time.Now()
			r, err := w.call(t, w.ns, "vm1", sub, 30*time.Second)
			must(t, err)
			t.Logf("%s: %d bytes in %s", sub, len(r.body), time.Since(start).Round(time.Millisecond))
			if r.code != http.StatusOK || len(r.body) < simulator.HugeAnswerBytes {
				t.Errorf("%s of a huge answer: %d, %d bytes, want 200 and %d bytes or more", sub, r.code, len(r.body), simulator.HugeAnswerBytes)
			}
		}
		// Valid JSON of KubeVirt's type, tens of thousands of items.
		if fs := decode[fsList](t, w, "vm1", simulator.SubresourceFilesystemList); len(fs.Items) < 50000 {
			t.Errorf("a huge answer lists %d filesystems", len(fs.Items))
		}
	})

	t.Run("malformed", func(t *testing.T) {
		w.s.SetGuestAgentFault(w.ns, "vm1", simulator.GuestAgentMalformed, true)
		defer w.s.SetGuestAgentFault(w.ns, "vm1", simulator.GuestAgentMalformed, false)
		for _, sub := range calls {
			r, err := w.call(t, w.ns, "vm1", sub, 10*time.Second)
			must(t, err)
			var v map[string]any
			if r.code != http.StatusOK || json.Unmarshal(r.body, &v) == nil {
				t.Errorf("%s of a malformed answer: %d %s, want 200 and a body that does not decode", sub, r.code, r.body)
			}
		}
	})

	t.Run("virt-api failing", func(t *testing.T) {
		for _, tc := range []struct {
			code       int
			retryAfter time.Duration
			header     string
			reason     metav1.StatusReason
		}{
			{http.StatusInternalServerError, 0, "", metav1.StatusReasonInternalError},
			{http.StatusServiceUnavailable, 5 * time.Second, "5", metav1.StatusReasonServiceUnavailable},
			{http.StatusTooManyRequests, 2500 * time.Millisecond, "3", metav1.StatusReasonTooManyRequests},
		} {
			w.s.SetVirtAPIFailure(tc.code, tc.retryAfter, time.Minute)
			for _, vm := range []string{"vm1", "vm2"} {
				r, err := w.call(t, w.ns, vm, simulator.SubresourceUserList, 10*time.Second)
				must(t, err)
				var st metav1.Status
				_ = json.Unmarshal(r.body, &st)
				if r.code != tc.code || r.header.Get("Retry-After") != tc.header || st.Reason != tc.reason || int(st.Code) != tc.code {
					t.Errorf("userlist of %s while virt-api fails with %d: %d Retry-After %q %s %s, want %d Retry-After %q %s",
						vm, tc.code, r.code, r.header.Get("Retry-After"), st.Reason, r.body, tc.code, tc.header, tc.reason)
				}
			}
			// Discovery still answers, so the APIService stays available.
			r, err := get(t, w.hc, "/apis/subresources.kubevirt.io/v1", 10*time.Second)
			must(t, err)
			wantEqual(t, "discovery while virt-api fails", r.code, http.StatusOK)
			w.clk.Step(time.Minute)
			decode[userList](t, w, "vm1", simulator.SubresourceUserList)
		}
	})
}

// TestVirtAPIAuthentication: virt-api serves the guest calls to the front
// proxy alone, for users RBAC allows them to; discovery is open.
func TestVirtAPIAuthentication(t *testing.T) {
	w := newVirtAPIWorld(t)
	w.boot(t, "vm1", true)
	path := "/apis/subresources.kubevirt.io/v1/namespaces/" + w.ns + "/virtualmachineinstances/vm1/guestosinfo"
	api := w.api.AggregatedAPI()
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(w.api.CABundle())

	other, err := testenv.NewCA("front-proxy-ca")
	must(t, err)
	impostor, err := other.ClientCert(testenv.FrontProxyClientName)
	must(t, err)
	wrongName, err := env.FrontProxyCA().ClientCert("not-the-front-proxy")
	must(t, err)
	frontProxy, err := env.FrontProxyCA().ClientCert(testenv.FrontProxyClientName)
	must(t, err)

	direct := func(cert *testenv.IssuedCert, path string, header http.Header) (response, error) {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots, ServerName: api.ServerName()}
		if cert != nil {
			cfg.Certificates = []tls.Certificate{cert.TLS}
		}
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}, Timeout: 10 * time.Second}
		req, err := http.NewRequest(http.MethodGet, "https://"+w.api.Address()+path, nil)
		must(t, err)
		req.Header = header
		resp, err := hc.Do(req)
		if err != nil {
			return response{}, err
		}
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		return response{code: resp.StatusCode, body: body}, err
	}
	user := func(name string, groups ...string) http.Header {
		h := http.Header{}
		h.Set(testenv.RemoteUserHeader, name)
		for _, g := range groups {
			h.Add(testenv.RemoteGroupHeader, g)
		}
		return h
	}

	for _, tc := range []struct {
		name   string
		cert   *testenv.IssuedCert
		path   string
		header http.Header
		code   int    // 0: the handshake fails
		body   string // a part of the body
	}{
		{"discovery without a certificate", nil, "/apis/subresources.kubevirt.io/v1", nil, http.StatusOK, "guestosinfo"},
		{"no certificate", nil, path, user("admin", "system:masters"), http.StatusUnauthorized, "request is not authenticated"},
		{"a certificate of another CA", impostor, path, user("admin", "system:masters"), 0, ""},
		{"the front-proxy CA, another name", wrongName, path, user("admin", "system:masters"), 0, ""},
		{"the front proxy, no user", frontProxy, path, http.Header{}, http.StatusUnauthorized, "a user is required"},
		{"the front proxy, a user RBAC refuses", frontProxy, path, user("system:serviceaccount:default:nobody", "system:authenticated"), http.StatusUnauthorized, ""},
		{"the front proxy, an admin", frontProxy, path, user("admin", "system:masters"), http.StatusOK, `"hostname":"vm1"`},
	} {
		r, err := direct(tc.cert, tc.path, tc.header)
		switch {
		case tc.code == 0:
			if err == nil {
				t.Errorf("%s: got %d %s, want the handshake refused", tc.name, r.code, r.body)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case r.code != tc.code || !strings.Contains(string(r.body), tc.body):
			t.Errorf("%s: %d %s, want %d %q", tc.name, r.code, r.body, tc.code, tc.body)
		}
	}

	// Through kube-apiserver, a user without RBAC is refused there.
	nobody, err := env.AddUser(envtest.User{Name: "nobody", Groups: []string{"system:authenticated"}}, env.Config)
	must(t, err)
	hc, err := rest.HTTPClientFor(nobody.Config())
	must(t, err)
	r, err := get(t, hc, path, 10*time.Second)
	must(t, err)
	wantEqual(t, "guestosinfo as a user without RBAC", r.code, http.StatusForbidden)
}
