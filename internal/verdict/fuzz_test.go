package verdict

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/membership"
	"github.com/vmobs/vmobs/internal/storagefacts"
	"github.com/vmobs/vmobs/internal/vmifacts"
)

var update = flag.Bool("update", false, "rewrite testdata/fuzz/FuzzEvaluate from the table fixtures (make update-golden)")

const fuzzSeedDir = "testdata/fuzz/FuzzEvaluate"

// fuzzArgs is one FuzzEvaluate input: objects as JSON, plus the two
// annotations the engine parses, plus the clock, plus the domain stats in
// fuzzDomain's binary layout, plus the guest probe's facts as JSON (the
// guest's answers are text: JSON reaches every string and number), plus the
// storage facts as JSON (claims, classes, DataVolumes, attachments and
// Warning Events of any shape and time).
type fuzzArgs struct {
	vm, vmi, pods, migrations, nodes, previous []byte
	heartbeat, networkStatus                   string
	nowOffset                                  int64 // seconds from the fixtures' now
	domain                                     []byte
	guest                                      []byte
	storage                                    []byte
}

// fuzzDomain is DomainFacts in a fixed little-endian layout, followed by
// the node label (or, with fuzzUnavailable, the reason). Binary rather than
// JSON so that the fuzzer reaches every float64 directly: NaN, ±Inf,
// negative numbers, values beyond int64. An empty input is no facts.
type fuzzDomain struct {
	Flags                                                          uint16
	SampledAt, MissingSince, VCPUStalledSince, MemoryPressureSince int64 // seconds from the fixtures' now
	Values                                                         [18]fuzzValue
	NotShrinking                                                   int32
}

type fuzzValue struct {
	V  float64
	OK bool
}

const (
	fuzzExported uint16 = 1 << iota
	fuzzNodeExports
	fuzzOtherVMI // folded for another VMI UID than the input's VMI
	fuzzUnavailable
	fuzzSampled
	fuzzMissingSince
	fuzzStalledSince
	fuzzNodeRunsOthers
	fuzzPressureSince
)

// values lists the facts' values in fuzzDomain's order.
func domainValues(d *vmifacts.DomainFacts) [18]*vmifacts.Value {
	return [...]*vmifacts.Value{&d.VCPUUsage, &d.MemoryDomain, &d.MemoryAvailable, &d.MemoryUsable, &d.SwapRate,
		&d.StorageLatency, &d.StorageBaseline, &d.StorageReadRate, &d.StorageWriteRate,
		&d.NetworkReceiveRate, &d.NetworkTransmitRate, &d.NetworkErrorRate,
		&d.MigrationDataRemaining, &d.MigrationDirtyRate, &d.MigrationTransferRate,
		&d.MajorFaultRate, &d.GuestPanics, &d.NetworkReceiveDropRate}
}

// fuzzTime is the fixtures' now moved by up to a century either way.
func fuzzTime(offset int64) time.Time {
	const century = 100 * 365 * 24 * 3600
	return now.Add(time.Duration(max(min(offset, century), -century)) * time.Second)
}

func decodeDomain(b []byte, vmi *kubevirtv1.VirtualMachineInstance) *vmifacts.DomainFacts {
	if len(b) == 0 {
		return nil
	}
	var fd fuzzDomain
	size := binary.Size(fd)
	buf := make([]byte, max(size, len(b)))
	copy(buf, b)
	_ = binary.Read(bytes.NewReader(buf[:size]), binary.LittleEndian, &fd)
	d := &vmifacts.DomainFacts{
		Exported:              fd.Flags&fuzzExported != 0,
		NodeExports:           fd.Flags&fuzzNodeExports != 0,
		NodeRunsOthers:        fd.Flags&fuzzNodeRunsOthers != 0,
		MigrationNotShrinking: fd.NotShrinking,
	}
	if rest := string(b[min(size, len(b)):]); fd.Flags&fuzzUnavailable != 0 {
		d.Unavailable = rest
	} else {
		d.Node = rest
	}
	switch {
	case fd.Flags&fuzzOtherVMI != 0:
		d.VMIUID = "an-earlier-vmi"
	case vmi != nil && d.Unavailable == "":
		d.VMIUID = vmi.UID
	}
	for _, t := range [...]struct {
		flag uint16
		dst  *time.Time
		off  int64
	}{
		{fuzzSampled, &d.SampledAt, fd.SampledAt},
		{fuzzMissingSince, &d.MissingSince, fd.MissingSince},
		{fuzzStalledSince, &d.VCPUStalledSince, fd.VCPUStalledSince},
		{fuzzPressureSince, &d.MemoryPressureSince, fd.MemoryPressureSince},
	} {
		if fd.Flags&t.flag != 0 {
			*t.dst = fuzzTime(t.off)
		}
	}
	for i, v := range domainValues(d) {
		*v = vmifacts.Value{V: fd.Values[i].V, OK: fd.Values[i].OK}
	}
	return d
}

func encodeDomain(t testing.TB, d *vmifacts.DomainFacts, vmi *kubevirtv1.VirtualMachineInstance) []byte {
	if d == nil {
		return nil
	}
	fd := fuzzDomain{NotShrinking: d.MigrationNotShrinking}
	for _, f := range [...]struct {
		on   bool
		flag uint16
	}{
		{d.Exported, fuzzExported},
		{d.NodeExports, fuzzNodeExports},
		{d.NodeRunsOthers, fuzzNodeRunsOthers},
		{!d.MemoryPressureSince.IsZero(), fuzzPressureSince},
		{d.VMIUID != "" && (vmi == nil || d.VMIUID != vmi.UID), fuzzOtherVMI},
		{d.Unavailable != "", fuzzUnavailable},
		{!d.SampledAt.IsZero(), fuzzSampled},
		{!d.MissingSince.IsZero(), fuzzMissingSince},
		{!d.VCPUStalledSince.IsZero(), fuzzStalledSince},
	} {
		if f.on {
			fd.Flags |= f.flag
		}
	}
	for _, tt := range [...]struct {
		src time.Time
		dst *int64
	}{
		{d.SampledAt, &fd.SampledAt}, {d.MissingSince, &fd.MissingSince}, {d.VCPUStalledSince, &fd.VCPUStalledSince},
		{d.MemoryPressureSince, &fd.MemoryPressureSince},
	} {
		if !tt.src.IsZero() {
			*tt.dst = int64(tt.src.Sub(now) / time.Second)
		}
	}
	for i, v := range domainValues(d) {
		fd.Values[i] = fuzzValue{V: v.V, OK: v.OK}
	}
	var b bytes.Buffer
	if err := binary.Write(&b, binary.LittleEndian, &fd); err != nil {
		t.Fatal(err)
	}
	if d.Unavailable != "" {
		b.WriteString(d.Unavailable)
	} else {
		b.WriteString(d.Node)
	}
	return b.Bytes()
}

func (a fuzzArgs) input() Input {
	in := Input{Namespace: ns, Policy: DefaultPolicy(), Nodes: map[string]*corev1.Node{}}
	// Decoding errors leave a partial object: exactly the "status only
	// partly captured" case, so they are not filtered out.
	if len(a.vm) > 0 && string(a.vm) != "null" {
		in.VM = &kubevirtv1.VirtualMachine{}
		_ = json.Unmarshal(a.vm, in.VM)
	}
	if len(a.vmi) > 0 && string(a.vmi) != "null" {
		in.VMI = &kubevirtv1.VirtualMachineInstance{}
		_ = json.Unmarshal(a.vmi, in.VMI)
	}
	_ = json.Unmarshal(a.pods, &in.Pods)
	_ = json.Unmarshal(a.migrations, &in.Migrations)
	var nodes []*corev1.Node
	_ = json.Unmarshal(a.nodes, &nodes)
	for _, n := range nodes {
		if n != nil {
			if a.heartbeat != "" {
				if n.Annotations == nil {
					n.Annotations = map[string]string{}
				}
				n.Annotations[kubevirtv1.VirtHandlerHeartbeat] = a.heartbeat
			}
			in.Nodes[n.Name] = n
		}
	}
	if a.networkStatus != "" {
		for _, p := range in.Pods {
			if p != nil {
				if p.Annotations == nil {
					p.Annotations = map[string]string{}
				}
				p.Annotations[membership.NetworkStatusAnnotation] = a.networkStatus
			}
		}
	}
	if len(a.previous) > 0 && string(a.previous) != "null" {
		in.Previous = &v1alpha1.VMObservationStatus{}
		_ = json.Unmarshal(a.previous, in.Previous)
	}
	switch {
	case in.VMI != nil:
		in.Name = in.VMI.Name
	case in.VM != nil:
		in.Name = in.VM.Name
	}
	in.Now = fuzzTime(a.nowOffset)
	in.Domain = decodeDomain(a.domain, in.VMI)
	if len(a.guest) > 0 && string(a.guest) != "null" {
		in.Guest = &vmifacts.GuestFacts{}
		_ = json.Unmarshal(a.guest, in.Guest)
	}
	if len(a.storage) > 0 && string(a.storage) != "null" {
		in.Storage = &storagefacts.Facts{}
		_ = json.Unmarshal(a.storage, in.Storage)
	}
	return in
}

func fuzzArgsOf(t testing.TB, in Input) fuzzArgs {
	var nodes []*corev1.Node
	for _, n := range []string{nodeA, nodeB} {
		if in.Nodes[n] != nil {
			nodes = append(nodes, in.Nodes[n])
		}
	}
	a := fuzzArgs{
		vm: mustJSON(t, in.VM), vmi: mustJSON(t, in.VMI), pods: mustJSON(t, in.Pods),
		migrations: mustJSON(t, in.Migrations), nodes: mustJSON(t, nodes), previous: mustJSON(t, in.Previous),
		nowOffset: int64(in.Now.Sub(now) / time.Second),
		domain:    encodeDomain(t, in.Domain, in.VMI),
	}
	if in.Guest != nil {
		a.guest = mustJSON(t, in.Guest)
	}
	if in.Storage != nil {
		a.storage = mustJSON(t, in.Storage)
	}
	return a
}

func (a fuzzArgs) corpusFile() []byte {
	var b bytes.Buffer
	b.WriteString("go test fuzz v1\n")
	for _, v := range [][]byte{a.vm, a.vmi, a.pods, a.migrations, a.nodes, a.previous} {
		fmt.Fprintf(&b, "[]byte(%q)\n", v)
	}
	fmt.Fprintf(&b, "string(%q)\nstring(%q)\nint64(%d)\n[]byte(%q)\n[]byte(%q)\n[]byte(%q)\n", a.heartbeat, a.networkStatus, a.nowOffset, a.domain, a.guest, a.storage)
	return b.Bytes()
}

var nonWord = regexp.MustCompile(`[^A-Za-z0-9]+`)

func seedName(situation string) string {
	return "seed-" + strings.Trim(nonWord.ReplaceAllString(situation, "_"), "_")
}

// TestFuzzSeedsCurrent keeps the committed FuzzEvaluate corpus equal to the
// table fixtures; run with -update after changing them.
func TestFuzzSeedsCurrent(t *testing.T) {
	want := map[string][]byte{}
	for _, c := range allSituations() {
		if c.in.Now.Sub(now)%time.Second != 0 {
			continue // the corpus carries whole seconds
		}
		want[seedName(c.name)] = fuzzArgsOf(t, c.in).corpusFile()
	}
	if *update {
		if err := os.MkdirAll(fuzzSeedDir, 0o755); err != nil {
			t.Fatal(err)
		}
		old, _ := filepath.Glob(filepath.Join(fuzzSeedDir, "seed-*"))
		for _, f := range old {
			_ = os.Remove(f)
		}
		for name, b := range want {
			if err := os.WriteFile(filepath.Join(fuzzSeedDir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	for name, b := range want {
		got, err := os.ReadFile(filepath.Join(fuzzSeedDir, name))
		if err != nil || !bytes.Equal(got, b) {
			t.Errorf("fuzz seed %s is missing or stale; run go test ./internal/verdict -run TestFuzzSeedsCurrent -update", name)
		}
	}
	files, _ := filepath.Glob(filepath.Join(fuzzSeedDir, "seed-*"))
	if len(files) != len(want) {
		t.Errorf("%d seed files, %d table cases; regenerate with -update", len(files), len(want))
	}
}

// FuzzEvaluate feeds arbitrary JSON as the VM, VMI, pods, migrations,
// nodes and previous status, arbitrary heartbeat and network-status
// annotations, arbitrary domain stats (any float64, any time) and
// arbitrary answers of the guest agent and arbitrary storage facts. Evaluate
// must never panic, must return valid verdicts with bounded evidence and
// messages, must return the same status twice, and must never write NaN or
// Inf that the input did not carry as text.
func FuzzEvaluate(f *testing.F) {
	f.Fuzz(func(t *testing.T, vm, vmi, pods, migrations, nodes, previous []byte, heartbeat, networkStatus string, nowOffset int64, domain, guest, storage []byte) {
		a := fuzzArgs{vm, vmi, pods, migrations, nodes, previous, heartbeat, networkStatus, nowOffset, domain, guest, storage}
		in := a.input()
		r := Evaluate(in)
		st := r.Status
		if !validVerdict(st.Verdict) || st.Reason == "" || len(st.Message) > maxMessage {
			t.Fatalf("overall %q/%q, %d-byte message", st.Verdict, st.Reason, len(st.Message))
		}
		if st.Layers == nil {
			t.Fatal("no layers")
		}
		for _, l := range []v1alpha1.LayerStatus{st.Layers.ControlPlane, st.Layers.Node, st.Layers.Guest, st.Layers.Storage} {
			if !validVerdict(l.Verdict) || l.Reason == "" || len(l.Message) > maxMessage || len(l.Evidence) > maxEvidence {
				t.Fatalf("layer %q/%q, %d-byte message, %d evidence", l.Verdict, l.Reason, len(l.Message), len(l.Evidence))
			}
			// A layer the input says nothing about (NotInInput) does not
			// decide the overall verdict, as checkInvariants holds.
			if l.Reason != v1alpha1.ReasonNotInInput && l.Verdict.Severity() > st.Verdict.Severity() {
				t.Fatalf("layer %s/%s worse than overall %s", l.Verdict, l.Reason, st.Verdict)
			}
		}
		if len(st.Conditions) != 7 || r.NextDeadline < 0 || len(st.LauncherPods) > maxLauncherPods || len(st.Interfaces) > maxInterfaces {
			t.Fatalf("%d conditions, deadline %v, %d pods, %d interfaces", len(st.Conditions), r.NextDeadline, len(st.LauncherPods), len(st.Interfaces))
		}
		if st.LiveMigratable != nil && len(st.LiveMigratable.Reasons) > maxMigratableReasons {
			t.Fatalf("%d migratable reasons", len(st.LiveMigratable.Reasons))
		}
		if st.VMI != nil && len(st.VMI.HotplugVolumes) > maxHotplugVolumes {
			t.Fatalf("%d hotplug volumes", len(st.VMI.HotplugVolumes))
		}
		if g := st.Guest; g != nil && (len(g.Filesystems) > vmifacts.MaxGuestFilesystems || len(g.Hostname) > vmifacts.MaxGuestString ||
			len(g.Timezone) > vmifacts.MaxGuestString || g.Users != nil && (*g.Users < 0 || *g.Users > vmifacts.MaxGuestUsers)) {
			t.Fatalf("guest summary out of bounds: %d filesystems, %d-byte hostname, %d-byte timezone", len(g.Filesystems), len(g.Hostname), len(g.Timezone))
		}
		first, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("status does not marshal: %v", err)
		}
		again, _ := json.Marshal(Evaluate(a.input()))
		if !bytes.Equal(first, again) {
			t.Fatalf("not deterministic:\n%s\n%s", first, again)
		}
		text := bytes.Join([][]byte{vm, vmi, pods, migrations, nodes, previous, []byte(heartbeat), []byte(networkStatus), domain, guest, storage}, nil)
		for _, bad := range []string{"NaN", "Inf"} {
			if bytes.Contains(first, []byte(bad)) && !bytes.Contains(text, []byte(bad)) {
				t.Fatalf("the status carries %s: %s", bad, first)
			}
		}
	})
}

// TestFuzzDomainRoundTrip: the seeds carry the table cases' domain stats
// as they are, so that fuzzing starts from every domain rule.
func TestFuzzDomainRoundTrip(t *testing.T) {
	n := 0
	for _, c := range allSituations() {
		if c.in.Domain == nil {
			continue
		}
		n++
		got := decodeDomain(encodeDomain(t, c.in.Domain, c.in.VMI), c.in.VMI)
		if !reflect.DeepEqual(got, c.in.Domain) && !equalNaN(got, c.in.Domain) {
			t.Errorf("%s: decoded\n%+v\nwant\n%+v", c.name, got, c.in.Domain)
		}
	}
	if n == 0 {
		t.Fatal("no table case has domain stats")
	}
}

// equalNaN compares facts whose values may be NaN, which DeepEqual never
// finds equal.
func equalNaN(a, b *vmifacts.DomainFacts) bool {
	ca, cb := *a, *b
	for i, v := range domainValues(&ca) {
		w := domainValues(&cb)[i]
		if math.IsNaN(v.V) && math.IsNaN(w.V) && v.OK == w.OK {
			*v, *w = vmifacts.Value{}, vmifacts.Value{}
		}
	}
	return reflect.DeepEqual(ca, cb)
}
