package guestprobe

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/vmobs/vmobs/internal/factsource"
	"github.com/vmobs/vmobs/internal/vmifacts"
)

// Typical answers of a Linux guest: KubeVirt's JSON for a guest with two
// users and four filesystems.
var (
	benchOSInfo = []byte(`{"guestAgentVersion":"8.2.0","supportedCommands":[{"name":"guest-get-osinfo","enabled":true},{"name":"guest-get-users","enabled":true},{"name":"guest-get-fsinfo","enabled":true}],"hostname":"web-1","os":{"name":"Fedora Linux","kernelRelease":"6.8.5-301.fc40.x86_64","version":"40 (Cloud Edition)","prettyName":"Fedora Linux 40 (Cloud Edition)","versionId":"40","kernelVersion":"#1 SMP PREEMPT_DYNAMIC Thu Apr 11 20:38:31 UTC 2024","machine":"x86_64","id":"fedora"},"timezone":"UTC, 0","userList":[{"userName":"fedora","loginTime":1733220000.5}],"fsInfo":{"disks":[{"diskName":"vda4","mountPoint":"/","fileSystemType":"btrfs","usedBytes":1855475712,"totalBytes":5354008576,"disk":[{"busType":"virtio"}]}]}}`)
	benchUsers  = []byte(`{"kind":"VirtualMachineInstanceGuestOSUserList","apiVersion":"v1","metadata":{},"items":[{"userName":"fedora","loginTime":1733220000.5},{"userName":"root","loginTime":1733220100.25}]}`)
	benchFS     = []byte(`{"kind":"VirtualMachineInstanceFileSystemList","apiVersion":"v1","metadata":{},"items":[` +
		`{"diskName":"vda4","mountPoint":"/","fileSystemType":"btrfs","usedBytes":1855475712,"totalBytes":5354008576,"disk":[{"busType":"virtio"}]},` +
		`{"diskName":"vda4","mountPoint":"/home","fileSystemType":"btrfs","usedBytes":1855475712,"totalBytes":5354008576,"disk":[{"busType":"virtio"}]},` +
		`{"diskName":"vda3","mountPoint":"/boot","fileSystemType":"ext4","usedBytes":189792256,"totalBytes":1020702720,"disk":[{"busType":"virtio"}]},` +
		`{"diskName":"vda2","mountPoint":"/boot/efi","fileSystemType":"vfat","usedBytes":19370496,"totalBytes":104634368,"disk":[{"busType":"virtio"}]}]}`)
)

// BenchmarkDecodeAndFold is the CPU side of one probe of an unchanging
// guest: its three answers decoded and folded into facts equal to the
// last ones (no notification).
func BenchmarkDecodeAndFold(b *testing.B) {
	decode := func() *result {
		r := &result{usersKnown: true}
		var err *Error
		if r.info, err = decodeGuestOSInfo(benchOSInfo); err != nil {
			b.Fatal(err)
		}
		if r.users, _, err = decodeUserList(benchUsers); err != nil {
			b.Fatal(err)
		}
		if r.fs, _, err = decodeFilesystemList(benchFS); err != nil {
			b.Fatal(err)
		}
		return r
	}
	prev, _ := fold(&vmifacts.GuestFacts{}, "uid-1", decode(), t0)
	b.ReportAllocs()
	for b.Loop() {
		if _, changed := fold(&prev, "uid-1", decode(), t0); changed {
			b.Fatal("changed")
		}
	}
}

// BenchmarkFold is the fold alone.
func BenchmarkFold(b *testing.B) {
	r := answered(gfs("/", 85), gfs("/boot", 20), gfs("/home", 35), gfs("/boot/efi", 15))
	prev, _ := fold(&vmifacts.GuestFacts{}, "uid-1", r, t0)
	fs := r.fs
	b.ReportAllocs()
	for b.Loop() {
		r.fs = append(r.fs[:0], fs...)
		if _, changed := fold(&prev, "uid-1", r, t0); changed {
			b.Fatal("changed")
		}
	}
}

// BenchmarkProbe is a whole probe through the client (three GETs to a
// local server) and its settling into unchanged facts.
func BenchmarkProbe(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == Path(vm1, SubGuestOSInfo):
			_, _ = w.Write(benchOSInfo)
		case r.URL.Path == Path(vm1, SubUserList):
			_, _ = w.Write(benchUsers)
		default:
			_, _ = w.Write(benchFS)
		}
	}))
	defer srv.Close()
	c, err := NewClient(&rest.Config{Host: srv.URL}, nil, Defaults.Timeout)
	if err != nil {
		b.Fatal(err)
	}
	s := NewSource(Config{}, c, nil, factsource.Deps{
		Targets: func() []factsource.Target { return []factsource.Target{{Key: vm1, UID: "uid-1"}} },
		Notify:  func(types.NamespacedName) {}, Log: logr.Discard(),
	})
	s.step(context.Background()) // the target, not yet due
	j := job{t: factsource.Target{Key: vm1, UID: "uid-1"}}
	s.finish(context.Background(), j, s.probe(context.Background(), vm1), 0)
	b.ReportAllocs()
	for b.Loop() {
		s.finish(context.Background(), j, s.probe(context.Background(), vm1), 0)
	}
	if f := s.Facts(vm1); f == nil || len(f.Filesystems) != 4 {
		b.Fatalf("facts %+v", f)
	}
}
