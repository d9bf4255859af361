package verdict

import (
	"math"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/vmifacts"
)

// The series of virt-handler's domain stats collector the rules cite
// (kv:pkg/monitoring/metrics/virt-handler/domainstats), as the fold's
// queries read them (internal/domainstats/signals.go). Series read together
// are written with braces, as the collector's files list them.
const (
	// seriesPresent are the series every running domain has: a domain
	// with none of them is not exported.
	seriesPresent         = "kubevirt_vmi_{vcpu_seconds_total,memory_domain_bytes,memory_resident_bytes}"
	seriesVCPU            = "kubevirt_vmi_vcpu_seconds_total"
	seriesMemoryAvailable = "kubevirt_vmi_memory_available_bytes"
	seriesMemoryUsable    = "kubevirt_vmi_memory_usable_bytes"
	seriesSwap            = "kubevirt_vmi_memory_swap_{in,out}_traffic_bytes"
	seriesMajorFaults     = "kubevirt_vmi_memory_pgmajfault_total"
	seriesStorageLatency  = "kubevirt_vmi_storage_{read,write}_times_seconds_total / kubevirt_vmi_storage_iops_{read,write}_total"
	seriesNetworkErrors   = "kubevirt_vmi_network_{receive,transmit}_errors_total, kubevirt_vmi_network_transmit_packets_dropped_total"
	seriesNetworkRxDrops  = "kubevirt_vmi_network_receive_packets_dropped_total"
	// seriesGuestPanics is virt-handler's own counter (guest_metrics.go,
	// KubeVirt v1.9 on), not a domain stats series.
	seriesGuestPanics  = "kubevirt_vmi_guest_os_panic_total"
	seriesMigRemaining = "kubevirt_vmi_migration_data_remaining_bytes"
	seriesMigDirty     = "kubevirt_vmi_migration_dirty_memory_rate_bytes"
	// seriesMigTransfer was named ..._disk_... before kubevirt#13500
	// corrected it; the fold reads either.
	seriesMigTransfer = "kubevirt_vmi_migration_{memory,disk}_transfer_rate_bytes"
)

// How a series is cited: the field is the function the fold applied, the
// value the number with its unit, the time the sample's.
const (
	fieldMax       = "max by (namespace,name,node)"
	fieldRate      = "rate, sum by (namespace,name,node)"
	fieldSwap      = "clamp_min(delta), sum by (namespace,name,node), per second"
	fieldIncrease  = "increase, sum by (namespace,name)"
	fieldPressure  = "low headroom and thrashing since"
	fieldBaseline  = "rate, sum by (namespace,name,node), baseline of earlier samples"
	fieldPresent   = "group by (namespace,name,node)"
	fieldNode      = "{node}"
	fieldShrinking = "samples in a row not shrinking"
	fieldQuery     = "query"
)

// domainNode runs the node layer's rules on domain stats: whether
// Prometheus can be read, whether virt-handler exports the domain, and what
// the hypervisor says of its storage and network.
func (e *engine) domainNode(l *layer) {
	f := &e.f
	d := vmiFacts(f, f.in.Domain)
	if d == nil {
		return
	}
	if d.Unavailable != "" {
		// The verdict rests on the other sources, as without domain stats.
		why := bound(d.Unavailable, maxValue)
		l.note(v1alpha1.ReasonDomainStatsUnavailable, "domain stats unavailable: "+why, time.Time{})
		l.cite(kindSeries, seriesPresent, fieldQuery, why, time.Time{})
		return
	}
	if !d.Exported {
		e.domainMissing(l, d)
		return
	}
	pol := &f.pol
	// Errors both ways and transmit drops are the host's side of the tap:
	// libvirt reports a tap's counters swapped into the guest's view, so
	// the domain's tx_drop is what the host dropped of the guest's
	// packets. Receive drops are packets the guest did not take: the
	// guest's business (domainGuest), not the node's.
	if r, ok := d.NetworkErrorRate.Valid(); ok && r >= pol.NetworkErrorRate {
		l.add(v1alpha1.VerdictDegraded, v1alpha1.ReasonNetworkErrors,
			"the domain's interfaces report "+num(r)+" errors and transmit drops per second (from "+num(pol.NetworkErrorRate)+"/s)", d.SampledAt)
		l.cite(kindSeries, seriesNetworkErrors, fieldRate, num(r)+"/s", d.SampledAt)
	}
}

// domainCauses are the node layer's findings that explain a domain without
// series: virt-handler or the node cannot report, or the launcher that runs
// the domain is not there to be seen.
var domainCauses = [...]string{
	v1alpha1.ReasonNodeNotReady, v1alpha1.ReasonNodeAgentStale, v1alpha1.ReasonNodeMissing,
	v1alpha1.ReasonMalformedHeartbeat, v1alpha1.ReasonFutureTimestamp, v1alpha1.ReasonNotInInput,
	v1alpha1.ReasonLauncherPodMissing, v1alpha1.ReasonLauncherPodFailed, v1alpha1.ReasonLauncherPodNotReady,
	v1alpha1.ReasonLauncherPodTerminating, v1alpha1.ReasonComputeContainerOOMKilled,
	v1alpha1.ReasonComputeContainerTerminated, v1alpha1.ReasonStatusLagging, v1alpha1.ReasonDomainSyncFailed,
}

// domainMissing judges a running VMI whose domain virt-handler does not
// export. virt-handler reports a domain from its first scrape after the
// domain starts; the controller samples every DomainStatsInterval. So the
// series are due two intervals and a grace after Running (or after the
// migration that moved the VMI to another node's virt-handler), and a
// series that vanishes from a VMI running for long counts once it stayed
// away for the grace: one sample does not decide.
func (e *engine) domainMissing(l *layer, d *vmifacts.DomainFacts) {
	f := &e.f
	if f.mig.inProgress {
		// The handoff changes the node, and so the exporter.
		return
	}
	if f.vmi.DeletionTimestamp != nil || (f.vm != nil && f.runStratOK && f.runStrat == kubevirtv1.RunStrategyHalted) {
		// A VMI that is stopping loses its domain by design; the control
		// plane judges the stop (Stopping, StuckStopping).
		return
	}
	pol := &f.pol
	wait := 2*pol.DomainStatsInterval + pol.DomainStatsGrace
	if wait < 0 {
		wait = math.MaxInt64 // thresholds too large to add up: never due
	}
	start := f.phaseSince
	if f.mig.present && f.mig.succeeded {
		start = later(start, f.mig.endTime())
	}
	var due time.Time
	if !start.IsZero() {
		due = ceilSec(start.Add(wait))
	}
	if !d.MissingSince.IsZero() {
		due = later(due, ceilSec(d.MissingSince.Add(pol.DomainStatsGrace)))
	}
	if !due.IsZero() && !crossed(f.now, due) {
		e.deadline(due)
		l.stale(due)
		return
	}
	// virt-handler drops one VMI's whole report when its launcher's
	// GetDomainStats or GetFilesystems call fails or takes longer than
	// StatsMaxAge, when the previous collection of that launcher still
	// runs, or when the launcher says the domain is gone
	// (kv:pkg/monitoring/metrics/virt-handler/domainstats/scrapper.go,
	// kv:pkg/monitoring/metrics/virt-handler/collector/collector.go). A
	// libvirt or QEMU stats call that hangs, typically on hung storage,
	// hides a running domain that way.
	// From KubeVirt v1.9, KubeVirt's observability controller may be what
	// Prometheus scrapes (VEP 143, the VMStatsCollector gate): it polls
	// virt-handler's /v1/vmstats, so virt-handler still reads each
	// launcher, but a series can also go missing in that poll
	// (docs/compatibility.md).
	node := orUnknown(f.nodeName)
	const cannotRead = " cannot read this domain's stats from its virt-launcher: libvirt or QEMU does not answer " +
		"(often hung storage), the launcher's command socket does not, or the domain is gone"
	const exporterDown = "its exporter or the scrape of it is down (or, where KubeVirt's observability controller collects the domain stats, that controller's poll of it)"
	var msg, nodeValue string
	switch {
	case d.NodeExports:
		msg = "virt-handler on node " + node + " exports other domains but" + cannotRead
		nodeValue = node + ": other domains"
	case d.NodeRunsOthers:
		msg = "virt-handler on node " + node + " exports no domain at all, though other VMIs run there: " + exporterDown
		nodeValue = node + ": none, other VMIs running"
	default:
		msg = "virt-handler on node " + node + ", where no other VMI runs, exports no domain: it" + cannotRead +
			"; or " + exporterDown
		nodeValue = node + ": none, no other VMI running"
	}
	absent := "absent"
	if !d.MissingSince.IsZero() {
		absent += " since " + rfc(d.MissingSince)
	}
	l.add(v1alpha1.VerdictUnknown, v1alpha1.ReasonDomainStatsMissing, msg, due)
	l.cite(kindSeries, seriesPresent, fieldPresent, absent, d.MissingSince)
	l.cite(kindSeries, seriesPresent, fieldNode, nodeValue, d.SampledAt)
	if l.cur < 0 {
		return
	}
	for i := 0; i < l.nf; i++ {
		c := &l.findings[i]
		if c.verdict == v1alpha1.VerdictHealthy {
			continue // a note explains nothing
		}
		for _, r := range domainCauses {
			if c.reason == r {
				l.findings[l.cur].consequence = true
			}
		}
	}
}

// domainGuest runs the guest layer's rules on domain stats. A paused
// guest is judged by its pause: its vCPUs stand still by design, and what
// its balloon driver said before is not current.
func (e *engine) domainGuest(l *layer) {
	f := &e.f
	d := vmiData(f, f.in.Domain)
	if d == nil || f.paused() != nil {
		return
	}
	pol := &f.pol
	if n, ok := d.GuestPanics.Valid(); ok && n > 0 {
		// virt-handler counts each GUEST_PANICKED event of the domain
		// (kv:pkg/virt-handler/vm.go emitPanicMetricIfNeeded); KubeVirt's
		// VMNonRecoverableOSPanic alert pages on more than 5 in 24 hours
		// (kv:pkg/monitoring/rules/alerts/vms.go). A panic within the
		// window is a guest fault now, whatever the alert's count.
		l.add(v1alpha1.VerdictDegraded, v1alpha1.ReasonGuestOSPanic,
			"the guest OS panicked "+countText(n)+" within the last domain-stats window (KubeVirt alerts with VMNonRecoverableOSPanic above 5 in 24h)",
			d.SampledAt)
		l.cite(kindSeries, seriesGuestPanics, fieldIncrease, num(n), d.SampledAt)
	}
	if s := d.VCPUStalledSince; !s.IsZero() && !e.vcpusPausedByKubeVirt() {
		due := ceilSec(later(s, e.kubeVirtPauseEnded()).Add(pol.GuestCPUStalledAfter))
		if crossed(f.now, due) {
			l.add(v1alpha1.VerdictDegraded, v1alpha1.ReasonGuestCPUStalled,
				"the guest's vCPUs have used no CPU time since "+rfc(s)+", longer than "+pol.GuestCPUStalledAfter.String()+
					": the guest hangs, or QEMU does, or libvirt paused the domain without a Paused condition "+
					"(a watchdog's pause action, a crash)", s)
			l.cite(kindSeries, seriesVCPU, fieldRate, "0 cores since "+rfc(s), s)
		} else {
			e.deadline(due)
			l.stale(due)
		}
	}
	e.memoryPressure(l, d)
	if r, ok := d.NetworkReceiveDropRate.Valid(); ok && r >= pol.NetworkErrorRate {
		l.note(v1alpha1.ReasonGuestNetworkDrops,
			"the guest does not take "+num(r)+" received packets per second (an interface down or unconfigured in the guest, or its receive ring full)",
			d.SampledAt)
		l.cite(kindSeries, seriesNetworkRxDrops, fieldRate, num(r)+"/s", d.SampledAt)
	}
}

// vcpusPausedByKubeVirt says the domain's vCPUs may stand still by design
// though the VMI has no Paused condition: virt-handler writes that
// condition only for a user's pause, a migration's and an I/O error's
// (kv:pkg/virt-handler/vm.go calculatePausedCondition). libvirt pauses the
// domain for a non-live memory dump, which KubeVirt requests
// (kv:pkg/virt-launcher/virtwrap/storage/memoryDump.go: no DUMP_LIVE flag)
// while the VM's status.memoryDumpRequest is InProgress; and a post-copy
// migration pauses the source, whose series still carry the VMI's node
// until the handoff.
func (e *engine) vcpusPausedByKubeVirt() bool {
	f := &e.f
	if f.mig.inProgress {
		return true
	}
	if f.vm != nil && f.vm.Status.MemoryDumpRequest != nil &&
		f.vm.Status.MemoryDumpRequest.Phase == kubevirtv1.MemoryDumpInProgress {
		return true
	}
	return false
}

// kubeVirtPauseEnded is when the latest pause KubeVirt knows of ended: a
// memory dump's end (the VM's status.memoryDumpRequest.endTimestamp), the
// migration's end, the launcher pod's unpause readiness gate turning True
// (virt-controller flips it after a user's unpause, kv:pkg/virt-controller/
// watch/vmi/lifecycle.go syncPausedConditionToPod). The domain-stats window
// still spans the pause for one window after it, so the vCPU stall that the
// fold dates from inside the pause counts only from its end.
func (e *engine) kubeVirtPauseEnded() time.Time {
	f := &e.f
	var t time.Time
	if f.vm != nil && f.vm.Status.MemoryDumpRequest != nil {
		t = later(t, mtp(f.vm.Status.MemoryDumpRequest.EndTimestamp))
	}
	if f.mig.present && !f.mig.inProgress {
		t = later(t, f.mig.endTime())
	}
	if p := f.active; p != nil {
		if g := podCond(p, kubevirtv1.VirtualMachineUnpaused); g != nil && g.Status == corev1.ConditionTrue {
			t = later(t, mt(g.LastTransitionTime))
		}
	}
	return t
}

// memoryPressure follows KubeVirt's own alerts
// (kv:pkg/monitoring/rules/alerts/vms.go): KubeVirtVMGuestMemoryPressure
// (warning) is low headroom AND thrashing (major faults or swap) for 5
// minutes; KubeVirtVMGuestMemoryAvailableLow is low headroom alone, and
// only severity info. So low headroom is a note, low headroom with
// thrashing is Degraded once it lasted GuestMemoryPressureAfter (the
// fold keeps its onset), and thrashing with plenty of headroom is nothing.
func (e *engine) memoryPressure(l *layer, d *vmifacts.DomainFacts) {
	f := &e.f
	pol := &f.pol
	m := pol.MemoryThresholds().State(d)
	if !m.Low {
		return
	}
	var b strings.Builder
	b.WriteString("the guest can use only " + bytesText(m.Usable) + " of its " + bytesText(m.Available) +
		" without swapping (under " + num(float64(pol.GuestMemoryAvailablePercent)) + "%)")
	if m.Thrashing() {
		b.WriteString(" and ")
		if m.Swapping {
			b.WriteString("swaps " + bytesText(m.Swap) + "/s (from " + bytesText(pol.GuestSwapRate) + "/s)")
		}
		if m.Swapping && m.Faulting {
			b.WriteString(" with ")
		}
		if m.Faulting {
			b.WriteString(num(m.Faults) + " major page faults per second (above " + num(pol.GuestMajorFaultRate) + "/s)")
		}
	}
	since := d.MemoryPressureSince
	degraded := false
	if m.Thrashing() && !since.IsZero() {
		due := ceilSec(since.Add(pol.GuestMemoryPressureAfter))
		if crossed(f.now, due) {
			degraded = true
			b.WriteString(", since " + rfc(since))
		} else {
			e.deadline(due)
			l.stale(due)
		}
	}
	if degraded {
		l.add(v1alpha1.VerdictDegraded, v1alpha1.ReasonGuestMemoryPressure, b.String(), since)
	} else {
		l.note(v1alpha1.ReasonGuestMemoryAvailableLow, b.String(), d.SampledAt)
	}
	l.cite(kindSeries, seriesMemoryUsable, fieldMax, bytesText(m.Usable), d.SampledAt)
	l.cite(kindSeries, seriesMemoryAvailable, fieldMax, bytesText(m.Available), d.SampledAt)
	if m.Swapping {
		l.cite(kindSeries, seriesSwap, fieldSwap, bytesText(m.Swap)+"/s", d.SampledAt)
	}
	if m.Faulting {
		l.cite(kindSeries, seriesMajorFaults, fieldRate, num(m.Faults)+"/s", d.SampledAt)
	}
	if degraded {
		l.cite(kindSeries, seriesMemoryUsable, fieldPressure, rfc(since), since)
	}
}

// MemoryThresholds are the policy's thresholds of a domain's memory
// (defaults filling what p leaves zero): the domain stats fold keeps the
// onset of pressure (DomainFacts.MemoryPressureSince) with the
// controller's; the engine judges the same facts with the VM's.
func (p Policy) MemoryThresholds() vmifacts.MemoryThresholds {
	p = p.withDefaults()
	return vmifacts.MemoryThresholds{
		AvailablePercent: p.GuestMemoryAvailablePercent,
		SwapRate:         p.GuestSwapRate,
		MajorFaultRate:   p.GuestMajorFaultRate,
	}
}

// countText is a count of events: "once", "twice", "3 times".
func countText(n float64) string {
	switch {
	case n < 1.5:
		return "once"
	case n < 2.5:
		return "twice"
	}
	return num(math.Round(n)) + " times"
}

// domainMigration judges the live migration in progress by its source
// domain's job: remaining data that does not shrink, or memory dirtied as
// fast as it is copied, will not converge by itself (KubeVirt's
// progressTimeout or completionTimeoutPerGiB aborts it, or post-copy or
// auto-converge must help).
func (e *engine) domainMigration(l *layer) {
	f := &e.f
	m := &f.mig
	d := vmiData(f, f.in.Domain)
	if d == nil || !m.inProgress {
		return
	}
	dirty, okDirty := d.MigrationDirtyRate.Valid()
	xfer, okXfer := d.MigrationTransferRate.Valid()
	n := d.MigrationNotShrinking
	outpaced := okDirty && okXfer && dirty >= xfer && n >= 1
	if n < f.pol.MigrationNotConvergingSamples && !outpaced {
		return
	}
	label := "the migration"
	if m.name != "" {
		label = "migration " + m.name
	}
	var b strings.Builder
	b.WriteString(label + " is not converging: ")
	remaining, okRem := d.MigrationDataRemaining.Valid()
	if okRem {
		b.WriteString(bytesText(remaining) + " remaining")
	} else {
		b.WriteString("the data remaining is not known")
	}
	b.WriteString(", not shrinking over " + strconv.Itoa(int(n)) + " samples")
	if okDirty && okXfer {
		b.WriteString("; the guest dirties memory at " + bytesText(dirty) + "/s, copied at " + bytesText(xfer) + "/s")
	}
	l.add(v1alpha1.VerdictDegraded, v1alpha1.ReasonMigrationNotConverging, b.String(), d.SampledAt)
	if okRem {
		l.cite(kindSeries, seriesMigRemaining, fieldMax, bytesText(remaining), d.SampledAt)
	}
	l.cite(kindSeries, seriesMigRemaining, fieldShrinking, strconv.Itoa(int(n)), d.SampledAt)
	if okDirty {
		l.cite(kindSeries, seriesMigDirty, fieldMax, bytesText(dirty)+"/s", d.SampledAt)
	}
	if okXfer {
		l.cite(kindSeries, seriesMigTransfer, fieldMax, bytesText(xfer)+"/s", d.SampledAt)
	}
}

// domainSummary renders the domain's series into the status. The fold
// has rounded the values to buckets, so the same facts give the same
// quantities.
func (e *engine) domainSummary() *v1alpha1.DomainSummary {
	d := vmiData(&e.f, e.f.in.Domain)
	if d == nil {
		return nil
	}
	a := e.a
	s := &a.dom
	s.SampledAt = a.time(trunc(d.SampledAt))
	s.Node = bound(d.Node, maxValue)
	s.VCPUUsage = a.milli(d.VCPUUsage)
	s.MemoryAvailable = a.bytes(d.MemoryAvailable)
	if avail, ok := d.MemoryAvailable.Valid(); ok {
		if usable, ok := d.MemoryUsable.Valid(); ok && usable <= avail {
			s.MemoryUsed = a.bytes(vmifacts.Value{V: avail - usable, OK: true})
		}
	}
	s.SwapRate = a.bytes(d.SwapRate)
	s.StorageReadRate = a.bytes(d.StorageReadRate)
	s.StorageWriteRate = a.bytes(d.StorageWriteRate)
	if lat, ok := d.StorageLatency.Valid(); ok && lat < maxSeconds {
		a.dur = metav1.Duration{Duration: time.Duration(math.Round(lat * float64(time.Second)))}
		s.StorageLatency = &a.dur
	}
	s.NetworkReceiveRate = a.bytes(d.NetworkReceiveRate)
	s.NetworkTransmitRate = a.bytes(d.NetworkTransmitRate)
	s.NetworkErrorRate = a.milli(d.NetworkErrorRate)
	s.MigrationDataRemaining = a.bytes(d.MigrationDataRemaining)
	s.MigrationDirtyRate = a.bytes(d.MigrationDirtyRate)
	s.MigrationTransferRate = a.bytes(d.MigrationTransferRate)
	return s
}

const (
	// maxWhole bounds the values rendered as quantities, below int64's
	// limit: larger ones (no memory or rate is that large) are absent.
	maxWhole = 1 << 62
	// maxSeconds bounds a latency rendered as a duration (int64
	// nanoseconds hold 292 years).
	maxSeconds = 1e9
)

// bytes is a whole number of bytes (or bytes per second) as a binary-SI
// quantity ("4Gi"), nil when absent.
func (a *arena) bytes(v vmifacts.Value) *resource.Quantity {
	x, ok := v.Valid()
	if !ok || x >= maxWhole {
		return nil
	}
	q := a.quantity(resource.BinarySI)
	q.Set(int64(math.Round(x)))
	return q
}

// milli is a quantity in thousandths, decimal-SI ("250m"), nil when absent.
func (a *arena) milli(v vmifacts.Value) *resource.Quantity {
	x, ok := v.Valid()
	if !ok || x*1000 >= maxWhole {
		return nil
	}
	q := a.quantity(resource.DecimalSI)
	q.SetMilli(int64(math.Round(x * 1000)))
	return q
}

func (a *arena) quantity(format resource.Format) *resource.Quantity {
	if a.nq < len(a.qty) {
		a.qty[a.nq] = resource.Quantity{Format: format}
		a.nq++
		return &a.qty[a.nq-1]
	}
	return &resource.Quantity{Format: format}
}

// num writes a non-negative number with about three significant digits and
// no trailing zeros; callers pass only values val accepted.
func num(x float64) string {
	var prec int
	switch {
	case x >= 1e6:
		return strconv.FormatFloat(x, 'g', 3, 64)
	case x >= 100:
		prec = 0
	case x >= 10:
		prec = 1
	case x >= 1:
		prec = 2
	default:
		prec = 3
	}
	s := strconv.FormatFloat(x, 'f', prec, 64)
	if strings.IndexByte(s, '.') >= 0 {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// bytesText writes bytes in binary units ("1.5 GiB").
func bytesText(x float64) string {
	const units = "KMGTPE"
	if x < 1024 {
		return num(x) + " B"
	}
	u := -1
	for x >= 1024 && u < len(units)-1 {
		x /= 1024
		u++
	}
	return num(x) + " " + units[u:u+1] + "iB"
}

// secondsText writes a latency in milliseconds under a second.
func secondsText(x float64) string {
	if x < 1 {
		return num(x*1000) + " ms"
	}
	return num(x) + " s"
}
