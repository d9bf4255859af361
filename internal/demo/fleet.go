package demo

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/vmobs/vmobs/internal/simulator"
)

// Namespaces of the demo: the healthy fleet is spread over two, the
// scripted scenarios play in their own, one VM each, named after them.
const (
	scenarioNamespace = "scenarios"
)

var fleetNamespaces = []string{"prod", "staging"}

// fleetRoles name the healthy VMs.
var fleetRoles = []string{"web", "api", "db", "cache", "queue", "batch", "auth", "search"}

// fleetVM is one healthy background VM.
type fleetVM struct {
	ns, name string
	node     string
	ready    bool // booted, not migrating
}

// plannedScenario is a scripted scenario with its VM and start time.
type plannedScenario struct {
	sc     simulator.Scenario
	ns, vm string
	at     time.Duration // since the fleet started playing
}

// director plays the fleet through the simulator: the healthy VMs' everyday
// life (live), the scenarios at staggered times, the beats on live nodes,
// and then a healthy VM's migration now and then.
type director struct {
	sim  *simulator.Simulator
	tr   *tracker
	pace Pace

	mu        sync.Mutex
	rnd       *rand.Rand
	workers   []string
	fleet     []*fleetVM
	scenarios []plannedScenario
	// joins brings the scenarios of a tool that joined (joinRequest).
	joins chan joinRequest
}

// joinRequest asks the director to play scenarios that joined late;
// planned closes once the tracker has them.
type joinRequest struct {
	scenarios []simulator.Scenario
	planned   chan struct{}
}

// newDirector plans the fleet and the scenarios; those that need a
// missing tool are left out (they may join later).
func newDirector(sim *simulator.Simulator, tr *tracker, pace Pace, opts Options, missing func(Tool) bool) *director {
	d := &director{
		sim:   sim,
		tr:    tr,
		pace:  pace,
		rnd:   rand.New(rand.NewPCG(uint64(opts.Seed), 0xdeb0)),
		joins: make(chan joinRequest),
	}
	d.workers = workerNodes(opts.VMs)
	for i := range opts.VMs {
		d.fleet = append(d.fleet, &fleetVM{
			ns:   fleetNamespaces[i%len(fleetNamespaces)],
			name: fmt.Sprintf("%s-%d", fleetRoles[i%len(fleetRoles)], i/len(fleetRoles)+1),
			node: d.workers[i%len(d.workers)],
		})
	}
	var scs []simulator.Scenario
	for _, sc := range Catalogue() {
		if (opts.Scenario != "" && sc.Name != opts.Scenario) || (needs(sc) != "" && missing(needs(sc))) {
			continue
		}
		scs = append(scs, sc)
	}
	d.scenarios = plan(scs, pace)
	return d
}

// plan staggers scenarios from the pace's ScenarioStart, ScenarioEvery
// apart.
func plan(scs []simulator.Scenario, pace Pace) []plannedScenario {
	var out []plannedScenario
	at := pace.ScenarioStart
	for _, sc := range scs {
		out = append(out, plannedScenario{sc: sc, ns: scenarioNamespace, vm: sc.Name, at: at})
		at += pace.ScenarioEvery
	}
	return out
}

// join has run play scenarios that joined late, staggered from now as
// the first ones were from the start; it returns once the tracker has
// them, so that the run does not count as settled in between.
func (d *director) join(ctx context.Context, scs []simulator.Scenario) error {
	req := joinRequest{scenarios: scs, planned: make(chan struct{})}
	select {
	case d.joins <- req:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-req.planned:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// workerNodes are the nodes of vms healthy VMs: about eight VMs a node,
// at least two so that they can migrate; none without VMs.
func workerNodes(vms int) []string {
	if vms <= 0 {
		return nil
	}
	var out []string
	for i := range max(2, (vms+7)/8) {
		out = append(out, fmt.Sprintf("worker-%d", i+1))
	}
	return out
}

// fail records err unless the demo is stopping (then every step fails).
func (d *director) fail(ctx context.Context, format string, a ...any) {
	if ctx.Err() != nil {
		return
	}
	d.tr.errorf(format, a...)
}

// run plays until ctx ends.
func (d *director) run(ctx context.Context) {
	for _, ns := range append(append([]string(nil), fleetNamespaces...), scenarioNamespace) {
		if err := d.sim.EnsureNamespace(ctx, ns); err != nil {
			d.fail(ctx, "namespace %s: %v", ns, err)
			return
		}
	}
	for _, n := range append(append([]string(nil), d.workers...), simulator.ScenarioNodes...) {
		if err := d.sim.EnsureNode(ctx, n); err != nil {
			d.fail(ctx, "node %s: %v", n, err)
			return
		}
	}
	playStart := time.Now()
	d.tr.setPlan(d.scenarios, d.pace, playStart)
	var wg sync.WaitGroup
	wg.Go(func() { d.heartbeats(ctx) })
	wg.Go(func() { d.play(ctx, playStart, d.scenarios) })
	wg.Go(func() {
		d.live(ctx)
		d.churn(ctx)
	})
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			return
		case req := <-d.joins:
			joinStart := time.Now()
			planned := plan(req.scenarios, d.pace)
			d.tr.setPlan(planned, d.pace, joinStart)
			close(req.planned)
			wg.Go(func() { d.play(ctx, joinStart, planned) })
		}
	}
}

// heartbeats is virt-handler on every node that is not lost.
func (d *director) heartbeats(ctx context.Context) {
	d.sim.RunHeartbeats(ctx, simulator.Heartbeats{Every: d.pace.HeartbeatEvery, Round: func(_ time.Time, failed []error) {
		if len(failed) > 0 {
			d.fail(ctx, "heartbeats: %v", errors.Join(failed...))
		}
	}})
}

// live plays the healthy fleet's everyday life (simulator.Everyday, the
// life `make soak` plays): boots with the guest agent before DHCP,
// reboots, pauses, queued migrations, hotplugs, a memory dump, snapshot
// freezes, a drain and the rest, at the pace's speed; then the VMs are
// ready for the background migrations.
func (d *director) live(ctx context.Context) {
	if len(d.fleet) == 0 {
		return
	}
	life := &simulator.Everyday{
		Sim: d.sim, Nodes: d.workers, Factor: d.pace.factor(), Duration: simulator.EverydayLife, Seed: int64(d.rnd.Uint64() >> 1),
		Note: func(format string, a ...any) { d.tr.note("· everyday: " + fmt.Sprintf(format, a...)) },
	}
	for _, vm := range d.fleet {
		life.Fleet = append(life.Fleet, types.NamespacedName{Namespace: vm.ns, Name: vm.name})
	}
	rep, err := life.Play(ctx)
	if err != nil {
		d.fail(ctx, "the fleet's everyday life: %v", err)
		return
	}
	for _, e := range rep.Errors {
		d.fail(ctx, "the fleet's everyday life: %s", e)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, vm := range d.fleet {
		vm.node = life.Node(types.NamespacedName{Namespace: vm.ns, Name: vm.name})
		vm.ready = ctx.Err() == nil
	}
}

// play plays each planned scenario at its time after playStart, each on
// its own VM (and its own node where it takes one down), so that a slow
// play does not hold up the next.
func (d *director) play(ctx context.Context, playStart time.Time, scenarios []plannedScenario) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for _, p := range scenarios {
		if !simulator.Sleep(ctx, time.Until(playStart.Add(p.at))) {
			return
		}
		wg.Go(func() {
			err := p.sc.Play(ctx, d.sim, p.ns, p.vm)
			if ctx.Err() != nil {
				return
			}
			d.tr.played(p.ns, p.vm, time.Now(), err, d.pace)
		})
	}
}

// churn migrates a random healthy VM to another worker now and then, one
// visible phase at a time.
func (d *director) churn(ctx context.Context) {
	if len(d.fleet) == 0 || len(d.workers) < 2 {
		return
	}
	for {
		d.mu.Lock()
		wait := d.pace.ChurnMin + time.Duration(d.rnd.Int64N(int64(d.pace.ChurnMax-d.pace.ChurnMin)+1))
		var ready []*fleetVM
		for _, vm := range d.fleet {
			if vm.ready {
				ready = append(ready, vm)
			}
		}
		var vm *fleetVM
		var target string
		if len(ready) > 0 {
			vm = ready[d.rnd.IntN(len(ready))]
			for target == "" || target == vm.node {
				target = d.workers[d.rnd.IntN(len(d.workers))]
			}
			vm.ready = false
		}
		d.mu.Unlock()
		if !simulator.Sleep(ctx, wait) {
			return
		}
		if vm == nil {
			continue
		}
		d.tr.note(fmt.Sprintf("↔ background: live-migrating %s/%s from %s to %s", vm.ns, vm.name, vm.node, target))
		if err := d.migrate(ctx, vm, target); err != nil {
			d.fail(ctx, "migrating %s/%s: %v", vm.ns, vm.name, err)
			return
		}
	}
}

func (d *director) migrate(ctx context.Context, vm *fleetVM, target string) error {
	m, err := d.sim.StartMigration(ctx, vm.ns, vm.name, simulator.MigrationOptions{TargetNode: target, Outcome: simulator.MigrationSucceeds})
	if err != nil {
		return err
	}
	for !m.Done() {
		if !simulator.Sleep(ctx, d.pace.StepPause) {
			return nil
		}
		if err := m.Step(ctx); err != nil {
			return err
		}
	}
	d.mu.Lock()
	vm.node, vm.ready = target, true
	d.mu.Unlock()
	return nil
}
