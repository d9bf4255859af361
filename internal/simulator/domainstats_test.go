package simulator

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/vmobs/vmobs/internal/scheme"
)

// These tests need no control plane: the simulator reads the VMIs from a
// fake client holding them as KubeVirt leaves them. The simulator's tests
// on the control plane are in test/simulator.

// t0 is second-aligned, as the API server stores times.
var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func wantEqual[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

// runningVMI is a VMI Running on node since t0, with 2 vCPUs, the two
// disks and, with multus, the two interfaces of the simulator's VMs.
func runningVMI(ns, name, node string, multus bool, labels map[string]string) *kubevirtv1.VirtualMachineInstance {
	ifaces := 1
	if multus {
		ifaces = 2
	}
	spec := New(nil).vmiSpec(VMSpec{Name: name, Namespace: ns, Interfaces: ifaces})
	l := map[string]string{"kubevirt.io/domain": name, kubevirtv1.NodeNameLabel: node}
	for k, v := range labels {
		l[k] = v
	}
	vmi := &kubevirtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: l, CreationTimestamp: metav1.NewTime(t0.Add(-time.Minute))},
		Spec:       spec,
	}
	setVMIPhase(vmi, kubevirtv1.Scheduled, metav1.NewTime(t0.Add(-10*time.Second)))
	setVMIPhase(vmi, kubevirtv1.Running, metav1.NewTime(t0))
	vmi.Status.NodeName = node
	vmi.Status.CurrentCPUTopology = &kubevirtv1.CPUTopology{Cores: 2, Sockets: 1, Threads: 1}
	return vmi
}

func fakeSim(t *testing.T, objs ...client.Object) (*Simulator, *clocktesting.FakeClock) {
	t.Helper()
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(objs...).Build()
	clk := clocktesting.NewFakeClock(t0)
	return New(c, WithClock(clk.Now)), clk
}

// scrape GETs path from h and parses the text exposition.
func scrape(t *testing.T, h http.Handler, path string) (int, map[string]*dto.MetricFamily) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequestWithContext(context.Background(), http.MethodGet, path, nil))
	if rec.Code != http.StatusOK {
		return rec.Code, nil
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("Content-Type %q, want the text format 0.0.4", ct)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("parsing %s: %v", path, err)
	}
	return rec.Code, fams
}

func labelNames(m *dto.Metric) string {
	var names []string
	for _, l := range m.GetLabel() {
		names = append(names, l.GetName())
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func value(m *dto.Metric) float64 {
	if m.Counter != nil {
		return m.Counter.GetValue()
	}
	return m.Gauge.GetValue()
}

// TestVirtHandlerExposition pins what a node's endpoint serves to
// KubeVirt v1.9.0's virt-handler: every metric name, its type, the label
// names of its series and how many series a VMI with 2 vCPUs, 2 drives and
// 2 interfaces has; only the node's Running VMIs, labelled with the VMI's
// labels as virt-handler sanitises them.
func TestVirtHandlerExposition(t *testing.T) {
	db := runningVMI("prod", "db", "node-a", true, map[string]string{"app.kubernetes.io/name": "postgres"})
	other := runningVMI("prod", "web", "node-b", false, nil)
	done := runningVMI("prod", "batch", "node-a", false, nil)
	setVMIPhase(done, kubevirtv1.Succeeded, metav1.NewTime(t0))
	scheduled := runningVMI("prod", "starting", "node-a", false, nil)
	scheduled.Status.Phase = kubevirtv1.Scheduled
	s, clk := fakeSim(t, db, other, done, scheduled)
	clk.Step(100 * time.Second)

	code, fams := scrape(t, s.VirtHandlerMetrics(), "/nodes/node-a/metrics")
	wantEqual(t, "status", code, http.StatusOK)

	const base = "kubernetes_vmi_label_app_kubernetes_io_name,kubernetes_vmi_label_kubevirt_io_domain,kubernetes_vmi_label_kubevirt_io_nodeName,name,namespace,node"
	type want struct {
		typ    dto.MetricType
		labels string // names beyond base, sorted in with them
		series int
	}
	counter, gauge := dto.MetricType_COUNTER, dto.MetricType_GAUGE
	wants := map[string]want{
		"kubevirt_vmi_memory_resident_bytes":                  {gauge, "", 1},
		"kubevirt_vmi_memory_available_bytes":                 {gauge, "", 1},
		"kubevirt_vmi_memory_unused_bytes":                    {gauge, "", 1},
		"kubevirt_vmi_memory_cached_bytes":                    {gauge, "", 1},
		"kubevirt_vmi_memory_swap_in_traffic_bytes":           {gauge, "", 1},
		"kubevirt_vmi_memory_swap_out_traffic_bytes":          {gauge, "", 1},
		"kubevirt_vmi_memory_pgmajfault_total":                {counter, "", 1},
		"kubevirt_vmi_memory_pgminfault_total":                {counter, "", 1},
		"kubevirt_vmi_memory_actual_balloon_bytes":            {gauge, "", 1},
		"kubevirt_vmi_memory_usable_bytes":                    {gauge, "", 1},
		"kubevirt_vmi_memory_domain_bytes":                    {gauge, "", 1},
		"kubevirt_vmi_node_cpu_affinity":                      {gauge, "", 1},
		"kubevirt_vmi_cpu_usage_seconds_total":                {counter, "", 1},
		"kubevirt_vmi_cpu_user_usage_seconds_total":           {counter, "", 1},
		"kubevirt_vmi_cpu_system_usage_seconds_total":         {counter, "", 1},
		"kubevirt_vmi_vcpu_seconds_total":                     {counter, "id,state", 2},
		"kubevirt_vmi_vcpu_wait_seconds_total":                {counter, "id", 2},
		"kubevirt_vmi_vcpu_delay_seconds_total":               {counter, "id", 2},
		"kubevirt_vmi_storage_iops_read_total":                {counter, "drive", 2},
		"kubevirt_vmi_storage_iops_write_total":               {counter, "drive", 2},
		"kubevirt_vmi_storage_read_traffic_bytes_total":       {counter, "drive", 2},
		"kubevirt_vmi_storage_write_traffic_bytes_total":      {counter, "drive", 2},
		"kubevirt_vmi_storage_read_times_seconds_total":       {counter, "drive", 2},
		"kubevirt_vmi_storage_write_times_seconds_total":      {counter, "drive", 2},
		"kubevirt_vmi_storage_flush_requests_total":           {counter, "drive", 2},
		"kubevirt_vmi_storage_flush_times_seconds_total":      {counter, "drive", 2},
		"kubevirt_vmi_network_traffic_bytes_total":            {counter, "interface,type", 4},
		"kubevirt_vmi_network_receive_bytes_total":            {counter, "interface", 2},
		"kubevirt_vmi_network_transmit_bytes_total":           {counter, "interface", 2},
		"kubevirt_vmi_network_receive_packets_total":          {counter, "interface", 2},
		"kubevirt_vmi_network_transmit_packets_total":         {counter, "interface", 2},
		"kubevirt_vmi_network_receive_errors_total":           {counter, "interface", 2},
		"kubevirt_vmi_network_transmit_errors_total":          {counter, "interface", 2},
		"kubevirt_vmi_network_receive_packets_dropped_total":  {counter, "interface", 2},
		"kubevirt_vmi_network_transmit_packets_dropped_total": {counter, "interface", 2},
	}
	for name, w := range wants {
		f, ok := fams[name]
		if !ok {
			t.Errorf("%s missing", name)
			continue
		}
		wantEqual(t, name+" type", f.GetType(), w.typ)
		wantEqual(t, name+" series", len(f.GetMetric()), w.series)
		names := strings.Split(base, ",")
		if w.labels != "" {
			names = append(names, strings.Split(w.labels, ",")...)
		}
		sort.Strings(names)
		for _, m := range f.GetMetric() {
			wantEqual(t, name+" labels", labelNames(m), strings.Join(names, ","))
			wantEqual(t, name+" node", label(m, "node"), "node-a")
			wantEqual(t, name+" namespace", label(m, "namespace"), "prod")
			wantEqual(t, name+" name", label(m, "name"), "db")
			wantEqual(t, name+" VMI label", label(m, "kubernetes_vmi_label_app_kubernetes_io_name"), "postgres")
			if m.TimestampMs != nil {
				t.Errorf("%s has a timestamp", name)
			}
		}
	}
	for name := range fams {
		if _, ok := wants[name]; !ok {
			t.Errorf("unexpected metric %s", name)
		}
	}

	// The per-device labels are the VMI spec's names (libvirt's user
	// aliases), the vCPU ids 0 and 1 in state running.
	var drives, ifaces, vcpus []string
	for _, m := range fams["kubevirt_vmi_storage_iops_read_total"].GetMetric() {
		drives = append(drives, label(m, "drive"))
	}
	for _, m := range fams["kubevirt_vmi_network_receive_bytes_total"].GetMetric() {
		ifaces = append(ifaces, label(m, "interface"))
	}
	for _, m := range fams["kubevirt_vmi_vcpu_seconds_total"].GetMetric() {
		vcpus = append(vcpus, label(m, "id")+"/"+label(m, "state"))
	}
	wantEqual(t, "drives", strings.Join(drives, ","), "cloudinitdisk,rootdisk")
	wantEqual(t, "interfaces", strings.Join(ifaces, ","), "blue,default")
	wantEqual(t, "vcpus", strings.Join(vcpus, ","), "0/running,1/running")

	// Values after 100 s: the guest's 2 GiB, vCPU time within the
	// profile's 10-60% of wall time, traffic counted.
	one := func(name string) float64 { return value(fams[name].GetMetric()[0]) }
	wantEqual(t, "domain bytes", one("kubevirt_vmi_memory_domain_bytes"), float64(2<<30))
	wantEqual(t, "balloon bytes", one("kubevirt_vmi_memory_actual_balloon_bytes"), float64(2<<30))
	wantEqual(t, "CPU affinities of 2 unpinned vCPUs on 16 cores", one("kubevirt_vmi_node_cpu_affinity"), 32)
	for _, m := range fams["kubevirt_vmi_vcpu_seconds_total"].GetMetric() {
		if v := value(m); v < 10 || v > 60 {
			t.Errorf("vCPU %s: %v s in 100 s", label(m, "id"), v)
		}
	}
	if one("kubevirt_vmi_memory_usable_bytes") <= one("kubevirt_vmi_memory_unused_bytes") ||
		one("kubevirt_vmi_memory_usable_bytes") >= one("kubevirt_vmi_memory_available_bytes") {
		t.Errorf("usable %v not between unused %v and available %v", one("kubevirt_vmi_memory_usable_bytes"),
			one("kubevirt_vmi_memory_unused_bytes"), one("kubevirt_vmi_memory_available_bytes"))
	}

	// node-b serves its own VMI only; a node without VMIs serves nothing.
	_, fams = scrape(t, s.VirtHandlerMetrics(), "/nodes/node-b/metrics")
	for _, m := range fams["kubevirt_vmi_memory_domain_bytes"].GetMetric() {
		wantEqual(t, "node-b's VMI", label(m, "name"), "web")
	}
	wantEqual(t, "node-b series", len(fams["kubevirt_vmi_memory_domain_bytes"].GetMetric()), 1)
	_, fams = scrape(t, s.NodeVirtHandlerMetrics("node-c"), "/metrics")
	wantEqual(t, "node-c families", len(fams), 0)
}

// sampleKey names a sample by metric name and the values of its labels
// other than node, namespace, name and the VMI's labels.
func sampleKey(sm sample) string {
	k := sm.metric.name
	for _, l := range sm.labels {
		switch {
		case l[0] == "node", l[0] == "namespace", l[0] == "name", strings.HasPrefix(l[0], vmiLabelPrefix):
		default:
			k += "/" + l[1]
		}
	}
	return k
}

func sampleValues(samples []sample) map[string]float64 {
	out := map[string]float64{}
	for _, sm := range samples {
		out[sampleKey(sm)] = sm.value
	}
	return out
}

func hasName(samples []sample) bool {
	for _, sm := range samples {
		if !slices.ContainsFunc(sm.labels, func(l [2]string) bool { return l[0] == "name" }) {
			return false
		}
	}
	return len(samples) > 0
}

// TestDomainFaults switches each fault on at t0+60s and compares the
// counters' growth over the next 10 s with the growth without the fault.
func TestDomainFaults(t *testing.T) {
	vmi := runningVMI("prod", "db", "node-a", false, nil)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	history := func(f DomainFault) []faultChange { return []faultChange{{at: at(60), faults: f}} }
	// growth of key between 60 s and 70 s under faults, and the value at 70 s.
	growth := func(h []faultChange, key string) (float64, float64) {
		v0, v1 := sampleValues(domainSamples(vmi, h, at(60)))[key], sampleValues(domainSamples(vmi, h, at(70)))[key]
		return v1 - v0, v1
	}
	near := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-6*math.Max(1, math.Abs(want)) {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}

	t.Run("vcpu frozen", func(t *testing.T) {
		d, _ := growth(nil, "kubevirt_vmi_vcpu_seconds_total/0/running")
		if d <= 1 || d >= 6 {
			t.Errorf("vCPU 0 ran %v s of 10", d)
		}
		d, _ = growth(history(DomainVCPUFrozen), "kubevirt_vmi_vcpu_seconds_total/0/running")
		wantEqual(t, "frozen vCPU's growth", d, 0)
		d, _ = growth(history(DomainVCPUFrozen), "kubevirt_vmi_cpu_usage_seconds_total")
		near("frozen domain's CPU usage", d, qemuOverhead*10)
	})
	t.Run("memory pressure", func(t *testing.T) {
		h := history(DomainMemoryPressure)
		v := sampleValues(domainSamples(vmi, h, at(70)))
		ratio := v["kubevirt_vmi_memory_usable_bytes"] / v["kubevirt_vmi_memory_available_bytes"]
		if ratio > 0.1 {
			t.Errorf("usable/available under pressure = %v", ratio)
		}
		if v["kubevirt_vmi_memory_unused_bytes"] > 0.05*v["kubevirt_vmi_memory_available_bytes"] {
			t.Errorf("unused under pressure = %v", v["kubevirt_vmi_memory_unused_bytes"])
		}
		d, _ := growth(h, "kubevirt_vmi_memory_swap_in_traffic_bytes")
		near("swap in", d, 10*swapInKiBps*1024)
		d, _ = growth(h, "kubevirt_vmi_memory_swap_out_traffic_bytes")
		near("swap out", d, 10*swapOutKiBps*1024)
		d, _ = growth(nil, "kubevirt_vmi_memory_swap_in_traffic_bytes")
		wantEqual(t, "swap in without pressure", d, 0)
		v = sampleValues(domainSamples(vmi, nil, at(70)))
		if r := v["kubevirt_vmi_memory_usable_bytes"] / v["kubevirt_vmi_memory_available_bytes"]; r < 0.3 {
			t.Errorf("usable/available without pressure = %v", r)
		}
	})
	t.Run("storage slow", func(t *testing.T) {
		latency := func(h []faultChange) float64 {
			ops, _ := growth(h, "kubevirt_vmi_storage_iops_read_total/rootdisk")
			secs, _ := growth(h, "kubevirt_vmi_storage_read_times_seconds_total/rootdisk")
			return secs / ops
		}
		normal, slow := latency(nil), latency(history(DomainStorageSlow))
		if r := slow / normal; r < 45 || r > 55 {
			t.Errorf("read latency %v s slow, %v s normal: ×%.1f, want ×50", slow, normal, r)
		}
	})
	t.Run("network errors", func(t *testing.T) {
		for key, want := range map[string]float64{
			"kubevirt_vmi_network_receive_errors_total/default":           60,
			"kubevirt_vmi_network_transmit_errors_total/default":          20,
			"kubevirt_vmi_network_receive_packets_dropped_total/default":  250,
			"kubevirt_vmi_network_transmit_packets_dropped_total/default": 100,
		} {
			d, _ := growth(history(DomainNetworkErrors), key)
			wantEqual(t, key, d, want)
			d, _ = growth(nil, key)
			wantEqual(t, key+" without the fault", d, 0)
		}
	})
	t.Run("unnamed series", func(t *testing.T) {
		if !hasName(domainSamples(vmi, nil, at(70))) {
			t.Error("a series without name and no fault")
		}
		for _, sm := range domainSamples(vmi, history(DomainUnnamedSeries), at(70)) {
			if slices.ContainsFunc(sm.labels, func(l [2]string) bool { return l[0] == "name" }) {
				t.Fatalf("%s has a name under DomainUnnamedSeries", sm.metric.name)
			}
		}
	})
	t.Run("odd values", func(t *testing.T) {
		v := sampleValues(domainSamples(vmi, history(DomainOddValues), at(70)))
		if !math.IsNaN(v["kubevirt_vmi_vcpu_seconds_total/0/running"]) {
			t.Errorf("vCPU seconds %v, want NaN", v["kubevirt_vmi_vcpu_seconds_total/0/running"])
		}
		wantEqual(t, "available", v["kubevirt_vmi_memory_available_bytes"], math.Inf(1))
		wantEqual(t, "usable", v["kubevirt_vmi_memory_usable_bytes"], -1024)
		wantEqual(t, "receive errors", v["kubevirt_vmi_network_receive_errors_total/default"], -1)
	})
	t.Run("counters never shrink across fault changes", func(t *testing.T) {
		var h []faultChange
		for i, f := range []DomainFault{DomainVCPUFrozen | DomainStorageSlow, DomainMemoryPressure | DomainNetworkErrors, 0, DomainVCPUFrozen} {
			h = append(h, faultChange{at: at(10 * (i + 1)), faults: f})
		}
		prev := sampleValues(domainSamples(vmi, h, t0))
		for step := 1; step <= 60; step++ {
			cur := domainSamples(vmi, h, at(step))
			for _, sm := range cur {
				// The swap traffic gauges only grow too.
				if grows := sm.metric.counter || sm.metric == mMemorySwapIn || sm.metric == mMemorySwapOut; grows && sm.value < prev[sampleKey(sm)] {
					t.Errorf("%s went from %v to %v at %d s", sampleKey(sm), prev[sampleKey(sm)], sm.value, step)
				}
			}
			prev = sampleValues(cur)
		}
	})
}

// TestDomainOriginAfterMigration restarts the counters on the target: a
// new QEMU process counts from zero from the migration's end.
func TestDomainOriginAfterMigration(t *testing.T) {
	vmi := runningVMI("prod", "db", "node-b", false, nil)
	end := metav1.NewTime(t0.Add(time.Hour))
	vmi.Status.MigrationState = &kubevirtv1.VirtualMachineInstanceMigrationState{
		SourceNode: "node-a", TargetNode: "node-b", Completed: true, EndTimestamp: &end,
	}
	wantEqual(t, "origin after a migration", domainOrigin(vmi), end.Time)
	vmi.Status.MigrationState.Failed = true
	vmi.Status.NodeName = "node-a"
	wantEqual(t, "origin after a failed migration", domainOrigin(vmi), t0)
	v := sampleValues(domainSamples(runningVMI("prod", "db", "node-a", false, nil), nil, t0.Add(-time.Second)))
	wantEqual(t, "vCPU time before the domain started", v["kubevirt_vmi_vcpu_seconds_total/0/running"], 0)
}

// TestMigrationMetrics follows a migration on its source: present from the
// source's start to completion, converging (data remaining shrinking,
// transfer rate above dirty rate) or, under DomainMigrationNotConverging,
// not (remaining back to the guest's memory and staying, dirty rate at or
// above transfer rate), and never on the target.
func TestMigrationMetrics(t *testing.T) {
	start := metav1.NewTime(t0.Add(time.Minute))
	migratingVMI := func() *kubevirtv1.VirtualMachineInstance {
		vmi := runningVMI("prod", "db", "node-a", false, nil)
		vmi.Status.MigrationState = &kubevirtv1.VirtualMachineInstanceMigrationState{
			SourceNode: "node-a", TargetNode: "node-b", StartTimestamp: &start,
		}
		return vmi
	}
	at := func(s int) time.Time { return start.Add(time.Duration(s) * time.Second) }
	series := func(vmi *kubevirtv1.VirtualMachineInstance, h []faultChange, s int) map[string]float64 {
		return sampleValues(migrationSamples(vmi, h, at(s)))
	}
	const total = float64(2 << 30)

	vmi := migratingVMI()
	v2, v4 := series(vmi, nil, 2), series(vmi, nil, 4)
	wantEqual(t, "metrics", len(v2), 5)
	wantEqual(t, "data total", v2["kubevirt_vmi_migration_data_bytes_total"], total)
	if !(v4["kubevirt_vmi_migration_data_remaining_bytes"] < v2["kubevirt_vmi_migration_data_remaining_bytes"]) {
		t.Errorf("converging: remaining %v then %v", v2["kubevirt_vmi_migration_data_remaining_bytes"], v4["kubevirt_vmi_migration_data_remaining_bytes"])
	}
	if !(v4["kubevirt_vmi_migration_memory_transfer_rate_bytes"] > v4["kubevirt_vmi_migration_dirty_memory_rate_bytes"]) {
		t.Errorf("converging: transfer %v, dirty %v", v4["kubevirt_vmi_migration_memory_transfer_rate_bytes"], v4["kubevirt_vmi_migration_dirty_memory_rate_bytes"])
	}
	wantEqual(t, "processed after 4 s", v4["kubevirt_vmi_migration_data_processed_bytes"], 4*float64(migrationFastBps))
	wantEqual(t, "remaining once converged", series(vmi, nil, 60)["kubevirt_vmi_migration_data_remaining_bytes"], 0)

	// Not converging from the start: remaining stays at the total.
	h := []faultChange{{at: t0, faults: DomainMigrationNotConverging}}
	for _, s := range []int{2, 4, 30} {
		v := series(vmi, h, s)
		wantEqual(t, "remaining, not converging", v["kubevirt_vmi_migration_data_remaining_bytes"], total)
		if v["kubevirt_vmi_migration_dirty_memory_rate_bytes"] < v["kubevirt_vmi_migration_memory_transfer_rate_bytes"] {
			t.Errorf("not converging: dirty %v below transfer %v", v["kubevirt_vmi_migration_dirty_memory_rate_bytes"], v["kubevirt_vmi_migration_memory_transfer_rate_bytes"])
		}
	}
	// Stops converging after 4 s: remaining grows back.
	h = []faultChange{{at: at(4), faults: DomainMigrationNotConverging}}
	r4, r6 := series(vmi, h, 4)["kubevirt_vmi_migration_data_remaining_bytes"], series(vmi, h, 6)["kubevirt_vmi_migration_data_remaining_bytes"]
	wantEqual(t, "remaining regrown in 2 s", r6-r4, 2*float64(migrationSlowDty-migrationSlowBps))

	// Not yet started on the source, completed, or asked of the target:
	// no job, no series.
	for what, change := range map[string]func(*kubevirtv1.VirtualMachineInstance){
		"before the source starts": func(v *kubevirtv1.VirtualMachineInstance) { v.Status.MigrationState.StartTimestamp = nil },
		"once completed":           func(v *kubevirtv1.VirtualMachineInstance) { v.Status.MigrationState.Completed = true },
		"on the target":            func(v *kubevirtv1.VirtualMachineInstance) { v.Status.NodeName = "node-b" },
		"without a migration":      func(v *kubevirtv1.VirtualMachineInstance) { v.Status.MigrationState = nil },
	} {
		vmi := migratingVMI()
		change(vmi)
		if got := migrationSamples(vmi, nil, at(2)); len(got) != 0 {
			t.Errorf("%s: %d migration series", what, len(got))
		}
	}

	// Through the endpoint: labels node (the source), namespace, name.
	s, clk := fakeSim(t, migratingVMI())
	clk.Step(time.Minute + 2*time.Second)
	_, fams := scrape(t, s.VirtHandlerMetrics(), "/nodes/node-a/metrics")
	for _, name := range []string{
		"kubevirt_vmi_migration_data_bytes_total", "kubevirt_vmi_migration_data_remaining_bytes",
		"kubevirt_vmi_migration_data_processed_bytes", "kubevirt_vmi_migration_dirty_memory_rate_bytes",
		"kubevirt_vmi_migration_memory_transfer_rate_bytes",
	} {
		f := fams[name]
		if f == nil || len(f.GetMetric()) != 1 {
			t.Errorf("%s: %v", name, f)
			continue
		}
		wantEqual(t, name+" labels", labelNames(f.GetMetric()[0]), "name,namespace,node")
		wantEqual(t, name+" node", label(f.GetMetric()[0], "node"), "node-a")
	}
	wantEqual(t, "data total type", fams["kubevirt_vmi_migration_data_bytes_total"].GetType(), dto.MetricType_COUNTER)
	wantEqual(t, "transfer rate type", fams["kubevirt_vmi_migration_memory_transfer_rate_bytes"].GetType(), dto.MetricType_GAUGE)
}

// TestEndpointFaults: a domain not exported leaves the node's others, a
// node down answers 503, both through SetDomainFault and
// SetVirtHandlerMetricsDown, and unnamed and odd series reach the wire.
func TestEndpointFaults(t *testing.T) {
	s, clk := fakeSim(t,
		runningVMI("prod", "db", "node-a", false, nil),
		runningVMI("prod", "web", "node-a", false, nil),
		runningVMI("prod", "cache", "node-b", false, nil))
	clk.Step(time.Minute)
	names := func(node string) []string {
		t.Helper()
		code, fams := scrape(t, s.VirtHandlerMetrics(), "/nodes/"+node+"/metrics")
		if code != http.StatusOK {
			return []string{http.StatusText(code)}
		}
		var out []string
		for _, m := range fams["kubevirt_vmi_memory_domain_bytes"].GetMetric() {
			out = append(out, label(m, "name"))
		}
		return out
	}
	wantEqual(t, "node-a", strings.Join(names("node-a"), ","), "db,web")

	s.SetDomainFault("prod", "db", DomainNotExported, true)
	wantEqual(t, "node-a without db's domain", strings.Join(names("node-a"), ","), "web")
	clk.Step(time.Second)
	s.SetDomainFault("prod", "db", DomainNotExported, false)
	wantEqual(t, "node-a with db back", strings.Join(names("node-a"), ","), "db,web")

	s.SetVirtHandlerMetricsDown("node-a", true)
	wantEqual(t, "node-a down", strings.Join(names("node-a"), ","), http.StatusText(http.StatusServiceUnavailable))
	wantEqual(t, "node-b while node-a is down", strings.Join(names("node-b"), ","), "cache")
	s.SetVirtHandlerMetricsDown("node-a", false)
	wantEqual(t, "node-a up again", strings.Join(names("node-a"), ","), "db,web")

	s.SetDomainFault("prod", "cache", DomainUnnamedSeries, true)
	s.SetDomainFault("prod", "cache", DomainOddValues, true)
	_, fams := scrape(t, s.VirtHandlerMetrics(), "/nodes/node-b/metrics")
	m := fams["kubevirt_vmi_memory_available_bytes"].GetMetric()[0]
	wantEqual(t, "unnamed series' name", label(m, "name"), "")
	wantEqual(t, "unnamed series' namespace", label(m, "namespace"), "prod")
	wantEqual(t, "+Inf on the wire", value(m), math.Inf(1))
	if v := value(fams["kubevirt_vmi_vcpu_seconds_total"].GetMetric()[0]); !math.IsNaN(v) {
		t.Errorf("vCPU seconds %v on the wire, want NaN", v)
	}
	wantEqual(t, "negative counter on the wire", value(fams["kubevirt_vmi_network_receive_errors_total"].GetMetric()[0]), -1)

	// Switching a fault that is already in force changes nothing.
	before := len(s.faultHistory("prod", "cache"))
	s.SetDomainFault("prod", "cache", DomainOddValues, true)
	wantEqual(t, "history after a no-op switch", len(s.faultHistory("prod", "cache")), before)
}

func TestSegments(t *testing.T) {
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	h := []faultChange{{at(10), DomainVCPUFrozen}, {at(20), 0}, {at(30), DomainStorageSlow}}
	tests := []struct {
		name     string
		from, to int
		want     []segment
	}{
		{"before any change", 0, 5, []segment{{0, 5}}},
		{"across two changes", 5, 25, []segment{{0, 5}, {DomainVCPUFrozen, 10}, {0, 5}}},
		{"from a change on", 10, 15, []segment{{DomainVCPUFrozen, 5}}},
		{"up to a change", 20, 30, []segment{{0, 10}}},
		{"after the last change", 35, 40, []segment{{DomainStorageSlow, 5}}},
		{"empty", 40, 40, nil},
		{"backwards", 40, 30, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := segments(h, at(tc.from), at(tc.to))
			if !slices.Equal(got, tc.want) {
				t.Errorf("segments(%d, %d) = %v, want %v", tc.from, tc.to, got, tc.want)
			}
		})
	}
}

func TestVirtHandlerTargets(t *testing.T) {
	got := VirtHandlerTargets("127.0.0.1:9999", "node-a", "node-b")
	wantEqual(t, "targets", len(got), 2)
	wantEqual(t, "path", got[1].MetricsPath, "/nodes/node-b/metrics")
	wantEqual(t, "address", got[1].Address, "127.0.0.1:9999")
	wantEqual(t, "namespace label", got[0].Labels["namespace"], KubeVirtNamespace)
	if _, ok := got[0].Labels["node"]; ok {
		t.Error("a target carries node: virt-handler's series do")
	}
	if !strings.HasPrefix(got[0].Labels["pod"], "virt-handler-") || got[0].Labels["pod"] == got[1].Labels["pod"] {
		t.Errorf("pods %q and %q", got[0].Labels["pod"], got[1].Labels["pod"])
	}
	wantEqual(t, "pod name is stable", virtHandlerPod("node-a"), got[0].Labels["pod"])
}

// BenchmarkDomainSamples measures what a scrape computes for each VMI
// (without the List): the series of a VMI with 1 vCPU, 2 drives and 1
// interface, rendered through the registry.
func BenchmarkDomainSamples(b *testing.B) {
	vmi := runningVMI("prod", "db", "node-a", false, nil)
	h := []faultChange{{t0.Add(time.Minute), DomainStorageSlow}}
	now := t0.Add(time.Hour)
	for b.Loop() {
		reg := newSampleRegistry(append(domainSamples(vmi, h, now), migrationSamples(vmi, h, now)...))
		if _, err := reg.Gather(); err != nil {
			b.Fatal(err)
		}
	}
}
