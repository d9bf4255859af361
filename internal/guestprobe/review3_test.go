package guestprobe

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/kvtest"
	"github.com/vmobs/vmobs/internal/verdict"
	"github.com/vmobs/vmobs/internal/vmifacts"
)

// A probe that caught a snapshot's brief freeze must not make the guest
// frozen while the VMI says thawed: the VMI's status.fsFreezeStatus, which
// virt-handler updates from the same poller as each change happens, is
// authoritative (engine review B3). Decoded, folded and judged as the
// controller does, the freeze the probe saw goes nowhere.
func TestProbeFreezeIsNotTheVMIs(t *testing.T) {
	info, err := decodeGuestOSInfo([]byte(`{"hostname":"vm1","os":{"prettyName":"Fedora Linux 41"},"timezone":"UTC, 0","fsFreezeStatus":"frozen"}`))
	if err != nil {
		t.Fatal(err)
	}
	now := kvtest.Now
	facts, _ := fold(nil, kvtest.VMIUID, &result{info: info, usersKnown: true}, now.Add(-3*time.Minute))
	for _, prev := range []*v1alpha1.VMObservationStatus{
		nil,
		// A status written while the probe still counted, eleven minutes ago.
		{VMI: &v1alpha1.VMISummary{Name: kvtest.VMName, UID: kvtest.VMIUID, FSFrozenSince: kvtest.Atp(-11 * time.Minute)}},
	} {
		st := verdict.Evaluate(verdict.Input{
			Namespace: kvtest.Namespace, Name: kvtest.VMName,
			VM: kvtest.VM(), VMI: kvtest.RunningVMI(), Pods: []*corev1.Pod{kvtest.LauncherPod()},
			Nodes:  map[string]*corev1.Node{kvtest.NodeA: kvtest.Node(kvtest.NodeA)},
			Policy: verdict.DefaultPolicy(), Guest: &facts, Previous: prev, Now: now,
		}).Status
		g := st.Layers.Guest
		if g.Verdict != v1alpha1.VerdictHealthy || strings.Contains(g.Message, v1alpha1.ReasonFilesystemsFrozen) {
			t.Errorf("previous %v: guest %s/%s: %s", prev != nil, g.Verdict, g.Reason, g.Message)
		}
		if st.VMI.FSFrozenSince != nil {
			t.Errorf("previous %v: fsFrozenSince %v while the VMI is thawed", prev != nil, st.VMI.FSFrozenSince)
		}
	}
}

// KubeVirt's GuestFilesystemAlmostOutOfSpace leaves out filesystems full by
// design (engine review B2); the decode drops them before the cap, so a
// guest with many snaps keeps its real disks in the facts.
func TestFilesystemListDropsWhatKubeVirtExcludes(t *testing.T) {
	var items []string
	for i := range 30 {
		items = append(items, fmt.Sprintf(`{"mountPoint":"/snap/app%d/1","fileSystemType":"squashfs","usedBytes":100,"totalBytes":100}`, i))
	}
	items = append(items,
		`{"mountPoint":"/media/cdrom","fileSystemType":"iso9660","usedBytes":100,"totalBytes":100}`,
		`{"mountPoint":"System Reserved","fileSystemType":"NTFS","usedBytes":99,"totalBytes":100}`,
		`{"mountPoint":"/run/user/1000/gvfs","fileSystemType":"fuse.gvfsd-fuse","usedBytes":100,"totalBytes":100}`,
		`{"mountPoint":"/sys/fs/cgroup","fileSystemType":"cgroup2","usedBytes":1,"totalBytes":1}`,
		`{"mountPoint":"/","fileSystemType":"xfs","usedBytes":90,"totalBytes":100}`,
		`{"mountPoint":"C:\\","fileSystemType":"NTFS","usedBytes":50,"totalBytes":100}`,
	)
	fs, skipped, err := decodeFilesystemList([]byte(`{"items":[` + strings.Join(items, ",") + `]}`))
	if err != nil {
		t.Fatal(err)
	}
	if skipped != 0 || len(fs) != 2 || fs[0].MountPoint != "/" || fs[0].UsedPercent != 90 || fs[1].MountPoint != `C:\` {
		t.Fatalf("skipped %d, kept %+v; want / and C:\\ only", skipped, fs)
	}
}

// The fold dates every level of a filesystem's run, so that the rule can
// ask how long it has been at 85% or more while it climbed to 90% and fell
// back (engine review B2: KubeVirt's warning is 85% for 10 minutes).
func TestFilesystemLevelsDated(t *testing.T) {
	var f *vmifacts.GuestFacts
	probe := func(pct int32, at time.Time) *vmifacts.GuestFilesystem {
		t.Helper()
		next, _ := fold(f, "uid-1", answered(gfs("/", pct)), at)
		f = &next
		return &f.Filesystems[0]
	}
	since := func(fs *vmifacts.GuestFilesystem, p int32) time.Time {
		got, ok := fs.AtLeastSince(p)
		if !ok {
			t.Fatalf("%d%% is not at %d%%", fs.UsedPercent, p)
		}
		return got
	}
	t1, t2, t3, t4 := t0.Add(5*time.Minute), t0.Add(10*time.Minute), t0.Add(15*time.Minute), t0.Add(20*time.Minute)
	probe(85, t0)
	fs := probe(90, t1)
	if got := since(fs, 85); !got.Equal(t0) {
		t.Errorf("at 90%% after 85%%: at 85%% or more since %v, want %v", got, t0)
	}
	if got := since(fs, 90); !got.Equal(t1) || !fs.Since.Equal(t1) {
		t.Errorf("at 90%%: since %v (Since %v), want %v", got, fs.Since, t1)
	}
	probe(95, t2)
	fs = probe(90, t3)
	if got := since(fs, 90); !got.Equal(t1) {
		t.Errorf("back at 90%% from 95%%: at 90%% or more since %v, want %v", got, t1)
	}
	if got := since(fs, 85); !got.Equal(t0) {
		t.Errorf("back at 90%%: at 85%% or more since %v, want %v", got, t0)
	}
	fs = probe(80, t4)
	if _, ok := fs.AtLeastSince(85); ok {
		t.Errorf("at 80%%: still at 85%% or more")
	}
	if got := since(fs, 80); !got.Equal(t0) {
		t.Errorf("at 80%%: at 80%% or more since %v, want %v", got, t0)
	}
	fs = probe(90, t4.Add(time.Minute))
	if got := since(fs, 85); !got.Equal(t4.Add(time.Minute)) {
		t.Errorf("back at 90%% after a fall under 85%%: at 85%% or more since %v, want the new climb", got)
	}
	if fs = probe(20, t4.Add(2*time.Minute)); fs.Steps != nil {
		t.Errorf("under the lowest level: steps %+v", fs.Steps)
	}
}
