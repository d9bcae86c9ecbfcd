package runtime

import (
	"context"
	"fmt"
	"math"
	goruntime "runtime"
	"sync"
	"time"

	"github.com/tessera-amt/tessera/internal/shm"
	"github.com/tessera-amt/tessera/runtime/internal/nodecoll"
)

// Collectives through the machine's shared memory. When every site of a
// communicator runs on one machine (the start barrier's shm.Node of each),
// AllReduce and Barrier of at most nodeMaxBytes, and every Broadcast, go
// through a board (runtime/internal/nodecoll) in one memory region that
// the sites map instead of through parcels: each site publishes its
// contribution in its slot of the generation, and the readers take it
// there. The first such operation on a site starts the setup (on a
// goroutine of its own), in generation 0 of the communicator: site 0 creates the region and sends
// its name (process, descriptor, inode) to the others in the job's
// authenticated parcels; each maps it and says whether it could; site 0
// tells all whether every site did. If not, or when
// Config.PointToPointCollectives is set, the operations run point to
// point as between machines.
//
// AllReduce and Barrier combine on one site (collective_node_ops.go): the
// last site to arrive checks every site's call, reduces the slots in site
// order and publishes the result, which the others copy, so every site
// gets the same bits (not necessarily those of the point-to-point
// algorithm, which combines in another order) and waits for one word. A
// Broadcast's non-roots do not know the size, so the root publishes every
// Broadcast, the data itself when it fits, else only a flag that sends
// them to the point-to-point tree.
//
// A site's slots are reused every nodecoll.Entries generations: a site
// that issues reservations more than that many generations out of order
// may wait for ever for a slot the others are to consume later.
//
// Waiting (nodeWait): on the calling goroutine, which runs the operation
// itself when it waits for its future at once (Future.Get). A poll-mode
// locality looks for nodePollSpin; a blocking one, on a crowded machine
// (more localities than cores), for nodeYieldSpin, else nodeBlockTries
// times; on a crowded machine it offers the core to the other processes
// (sched_yield) between looks. Then it gives its lane back and sleeps on
// the slot's futex word, nodeSleep at most, checking between sleeps
// whether the generation or the locality failed (a dead peer fails the
// locality); a publication wakes only when someone sleeps.
//
// With more localities than cores, where they run decides more than how
// they wait: an AllReduce of 1 double on 4 localities on 2 cores took
// 6-9 us polling bound (tessera run --bind core: two per core, for good)
// and 7-70 us, median 20-35, left to the system, which moves them about,
// when every site read every slot and a blocking wait slept at once
// (every process SCHED_FIFO so that the machine's other load did not
// decide it; Open MPI's vader 5-9 us in the same rounds). Combining on
// the last site and yielding before the sleep took the blocking runs from
// 14-33 us to 6 us, bound or not, in the same conditions (vader 4.5-4.7
// bound, 6.5-9.7 not).

const (
	// nodeMaxBytes is the largest AllReduce, Barrier or Broadcast payload
	// that goes through the board: the room of a slot.
	nodeMaxBytes = 4 << 10
	// nodePollSpin bounds the spinning of a poll-mode wait before it sleeps.
	nodePollSpin = 1 * time.Millisecond
	// nodeBlockTries is how often a blocking wait looks before it sleeps
	// on a machine with at least a core per locality.
	nodeBlockTries = 4
	// nodeYieldSpin bounds the yielding of a blocking wait before it
	// sleeps on a machine with more localities than cores.
	nodeYieldSpin = 50 * time.Microsecond
	// nodeSleep bounds one sleep, between checks for a failure.
	nodeSleep = 20 * time.Millisecond
	// nodeViaParcels is a Broadcast slot's flag: the data goes by parcels.
	nodeViaParcels = 1
	// nodeMismatch is a result slot's flag: the calls disagree.
	nodeMismatch = 1
)

// nodeState is a communicator's board on this locality.
type nodeState struct {
	mu      sync.Mutex
	off     bool                 // decided: point to point
	setup   *Future[*nodeRegion] // the setup, once started
	board   *nodeRegion          // the setup's result, nil before, when off or unmapped
	pending int                  // operations started and not finished (startOp)
	closed  bool                 // the communicator or the locality closed: unmap once none is pending
	boards  *nodeBoards          // the locality's list, which holds this one while it is mapped
	large   nodeLarge            // the large collectives' region (collective_node_large.go)
}

// nodeRegion is a board over a mapped region.
type nodeRegion struct {
	*nodecoll.Board
	region *shm.Region
}

// nodeBoards are a locality's boards, closed at its end.
type nodeBoards struct {
	mu  sync.Mutex
	all map[*nodeState]struct{}
}

// add lists st, under st.mu.
func (nb *nodeBoards) add(st *nodeState) {
	nb.mu.Lock()
	defer nb.mu.Unlock()
	if nb.all == nil {
		nb.all = make(map[*nodeState]struct{})
	}
	nb.all[st] = struct{}{}
	st.boards = nb
}

func (nb *nodeBoards) remove(st *nodeState) {
	nb.mu.Lock()
	defer nb.mu.Unlock()
	delete(nb.all, st)
}

// closeAll closes every board once no operation uses it.
func (nb *nodeBoards) closeAll() {
	nb.mu.Lock()
	all := nb.all
	nb.all = nil
	nb.mu.Unlock()
	for st := range all {
		st.close()
	}
}

// close unmaps the board now or, when operations started before are
// still running, once the last one is done.
func (st *nodeState) close() {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.closed = true
	st.unmapIfIdle()
}

func (st *nodeState) unmapIfIdle() {
	if st.closed && st.pending == 0 && st.board != nil {
		st.board.region.Close()
		st.large.close()
		st.board = nil
		st.boards.remove(st)
	}
}

// begin counts an operation that took a generation; end, once it is done.
func (st *nodeState) begin() {
	st.mu.Lock()
	st.pending++
	st.mu.Unlock()
}

func (st *nodeState) end() {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.pending--
	st.unmapIfIdle()
}

// onOneNode tells whether the communicator may use a board: every site on
// this machine, and the job does not insist on parcels.
func (c *Communicator) onOneNode() bool {
	rt := c.rt
	if rt.cfg.PointToPointCollectives || !shm.Supported || len(c.sites) < 2 {
		return false
	}
	rt.ctl.mu.Lock()
	defer rt.ctl.mu.Unlock()
	nodes := rt.ctl.nodes
	if int(rt.here) >= len(nodes) || nodes[rt.here] == "" {
		return false
	}
	for _, l := range c.sites {
		if int(l) >= len(nodes) || nodes[l] != nodes[rt.here] {
			return false
		}
	}
	return true
}

// nodeBoard returns the communicator's board for this run, starting the
// setup if it is the first, or nil when the run is to go point to point.
// The board stays mapped while the run is pending (begin, end).
func (r *opRun) nodeBoard() (*nodeRegion, error) {
	c, st := r.c, &r.c.node
	st.mu.Lock()
	if b := st.board; b != nil {
		st.mu.Unlock()
		return b, nil
	}
	if st.off {
		st.mu.Unlock()
		return nil, nil
	}
	if st.setup != nil && st.setup.IsReady() { // unmapped: the communicator closed
		st.mu.Unlock()
		return nil, fmt.Errorf("communicator %q is closed", c.name)
	}
	if st.setup == nil {
		if !c.onOneNode() {
			st.off = true
			st.mu.Unlock()
			return nil, nil
		}
		c.rt.nodes.add(st)
		// A goroutine, not a task: a site that never reaches such an
		// operation (its reservation cancelled) leaves the others' setup
		// waiting until the locality ends, which must not count as work
		// in flight.
		f := newFuture[*nodeRegion](c.rt.sched)
		st.setup = f
		go func() { f.set(c.nodeSetup(c.rt.ctx)) }()
	}
	f := st.setup
	st.mu.Unlock()
	for !f.IsReady() {
		wctx, cancel := context.WithTimeout(r.ctx, nodeSleep)
		f.Get(wctx)
		cancel()
		if err := r.nodeFailed(); err != nil {
			return nil, err
		}
	}
	if _, err := f.Get(r.ctx); err != nil {
		return nil, fmt.Errorf("setting up the shared memory of the locality's machine: %w", err)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.board == nil && !st.off {
		return nil, fmt.Errorf("communicator %q is closed", c.name)
	}
	return st.board, nil // nil: off
}

// nodeSetup makes the board in generation 0 (see the top of the file) and
// records it, or that there is none, in c.node.
func (c *Communicator) nodeSetup(ctx context.Context) (*nodeRegion, error) {
	b, err := c.nodeHandshake(ctx)
	st := &c.node
	st.mu.Lock()
	defer st.mu.Unlock()
	if b != nil {
		st.board = b
		st.unmapIfIdle()
	} else {
		st.off = true
	}
	return b, err
}

func (c *Communicator) nodeHandshake(ctx context.Context) (*nodeRegion, error) {
	r := &opRun{c: c, ctx: ctx, gen: 0, op: opBarrier, count: anyCount, expect: anyCount}
	n, size := len(c.sites), nodecoll.Size(len(c.sites), nodeMaxBytes)
	bits := func(v uint64) float64 { return math.Float64frombits(v) }
	if c.here == 0 {
		reg, err := shm.NewRegion(size)
		var b *nodeRegion
		if err == nil {
			b, err = newNodeRegion(reg, n)
		}
		if err != nil {
			c.rt.log.Warn("runtime: no shared memory for collectives", "communicator", c.name, "locality", c.rt.here, "err", err)
		}
		name := make([]float64, 4)
		if b != nil {
			name = []float64{bits(uint64(reg.PID)), bits(uint64(reg.FD)), bits(reg.Ino), bits(uint64(size))}
		}
		fail := func(err error) (*nodeRegion, error) {
			if b != nil {
				b.region.Close()
			}
			return nil, err
		}
		for s := 1; s < n; s++ {
			if err := r.Send(0, s, name); err != nil {
				return fail(err)
			}
		}
		all := b != nil
		for s := 1; s < n; s++ {
			v, err := r.Recv(1, s)
			if err != nil {
				return fail(err)
			}
			all = all && len(v) == 1 && v[0] == 1
		}
		verdict := []float64{0}
		if all {
			verdict[0] = 1
		}
		for s := 1; s < n; s++ {
			if err := r.Send(2, s, verdict); err != nil {
				return fail(err)
			}
		}
		if !all {
			return fail(nil)
		}
		return b, nil
	}
	v, err := r.Recv(0, 0)
	if err != nil {
		return nil, err
	}
	var b *nodeRegion
	if len(v) == 4 && math.Float64bits(v[3]) == uint64(size) {
		u := func(i int) uint64 { return math.Float64bits(v[i]) }
		reg, err := shm.MapRegion(int32(u(0)), int32(u(1)), u(2), int64(size))
		if err == nil {
			if b, err = newNodeRegion(reg, n); err != nil {
				reg.Close()
			}
		}
		if err != nil {
			c.rt.log.Warn("runtime: no shared memory for collectives", "communicator", c.name, "locality", c.rt.here, "err", err)
		}
	}
	ok := []float64{0}
	if b != nil {
		ok[0] = 1
	}
	fail := func(err error) (*nodeRegion, error) {
		if b != nil {
			b.region.Close()
		}
		return nil, err
	}
	if err := r.Send(1, 0, ok); err != nil {
		return fail(err)
	}
	verdict, err := r.Recv(2, 0)
	if err != nil || len(verdict) != 1 || verdict[0] != 1 {
		return fail(err)
	}
	return b, nil
}

func newNodeRegion(reg *shm.Region, sites int) (*nodeRegion, error) {
	b, err := nodecoll.New(reg.Mem, sites, nodeMaxBytes)
	if err != nil {
		return nil, err
	}
	return &nodeRegion{Board: b, region: reg}, nil
}

// nodeFailed returns why the run is to stop waiting: the locality or the
// generation failed, or its context ended.
func (r *opRun) nodeFailed() error {
	m := &r.c.rt.coll
	m.mu.Lock()
	err := m.err
	if err == nil {
		err = r.c.box.slots.Failed(r.gen)
	}
	m.mu.Unlock()
	if err == nil && r.ctx.Err() != nil {
		err = context.Cause(r.ctx)
	}
	return err
}

// genFailed tells whether generation gen of the communicator failed.
func (r *opRun) genFailed(gen uint64) bool {
	m := &r.c.rt.coll
	m.mu.Lock()
	defer m.mu.Unlock()
	return r.c.box.slots.Failed(gen) != nil
}

// nodeWait waits until ready: it looks again at once a few times, then
// offers the core to others between looks (see nodeYield), then gives its
// lane back and sleeps on a futex, one sleep at most d at a time, until
// sleep(d) says it is ready, checking between sleeps whether the locality
// or the generation failed.
func (r *opRun) nodeWait(ready func() bool, sleep func(d time.Duration) bool) error {
	if ready() {
		return nil
	}
	if r.nodeYield(ready) {
		return nil
	}
	if t := taskOf(r.ctx); t != nil && t.waiting.CompareAndSwap(false, true) {
		t.yield(false)
		defer func() {
			t.resume()
			t.waiting.Store(false)
		}()
	}
	checked := time.Now()
	for !sleep(nodeSleep) {
		if now := time.Now(); now.Sub(checked) >= nodeSleep {
			checked = now
			if err := r.nodeFailed(); err != nil {
				return err
			}
		}
	}
	return nil
}

// nodeYield is the wait before the sleep: it reports whether ready turned
// true. A poll-mode locality keeps looking for nodePollSpin; a blocking
// one, on a machine with more localities than cores (crowded), for
// nodeYieldSpin, else nodeBlockTries looks.
//
// Between looks the process's goroutines get the core (Gosched) and, on a
// crowded machine or every fourth look, the machine's threads
// (sched_yield): with more localities than cores the threads that want
// the core are most likely the sites this one waits for, and the yield
// hands it to them at the cost of a switch, where a sleep costs the
// waker a futex wake-up and the sleeper a switch back when it comes. A
// yield that gave the core away for long does not end the wait, as it
// does a ring reader's (Open MPI, oversubscribed, likewise keeps
// yielding in its progress loop).
func (r *opRun) nodeYield(ready func() bool) bool {
	crowded := r.c.rt.nodeCrowded(len(r.c.sites))
	var budget time.Duration
	switch {
	case r.c.rt.cfg.Progress == ProgressPoll:
		budget = nodePollSpin
	case crowded:
		budget = nodeYieldSpin
	default:
		for range nodeBlockTries {
			goruntime.Gosched()
			if ready() {
				return true
			}
		}
		return false
	}
	start := time.Now()
	for try := 1; ; try++ {
		goruntime.Gosched()
		if ready() {
			return true
		}
		if crowded || try%4 == 0 {
			nodecoll.Yield()
			if ready() {
				return true
			}
		}
		if try%8 == 0 && time.Since(start) >= budget {
			return false
		}
	}
}

// nodeCrowded tells whether the localities on this machine, sites of
// them in the communicator at least, outnumber its cores.
func (rt *Runtime) nodeCrowded(sites int) bool {
	return max(sites, rt.cfg.NodeLocalities) > rt.cfg.NodeCPUs
}

// nodeCheck compares site s's call, as its slot says, with this one's.
func (r *opRun) nodeCheck(s int, h nodecoll.Header) error {
	if collOp(h.Op) == r.op && int(h.Root) == r.c.root &&
		(r.expect == anyCount || h.Count == anyCount || h.Count == r.expect) {
		return nil
	}
	rt := r.c.rt
	e := &MismatchError{Basename: r.c.name, Generation: r.gen, Calls: [2]CollectiveCall{
		{Site: r.c.here, Locality: rt.here, Op: r.op.String(), Count: countOf(r.count)},
		{Site: s, Locality: r.c.sites[s], Op: collOp(h.Op).String(), Count: countOf(h.Count)},
	}}
	r.abort(e)
	return e
}

// header is this run's call as its slot says it.
func (r *opRun) header() nodecoll.Header {
	return nodecoll.Header{Op: uint32(r.op), Root: uint32(r.c.root), Count: r.count}
}

// publish claims this site's slot of the generation and fills it for
// every other site to read.
func (r *opRun) publish(b *nodeRegion, h nodecoll.Header, data []float64) error {
	return r.publishFor(b, b.Slot(r.c.here, r.gen), h, data, b.Sites()-1)
}

// publishFor claims the slot mine for the run's generation and fills it
// for readers readers.
func (r *opRun) publishFor(b *nodeRegion, mine nodecoll.Slot, h nodecoll.Header, data []float64, readers int) error {
	if !mine.Claim() {
		sleep := func(d time.Duration) bool {
			if mine.SleepClaim(d) {
				return true
			}
			// The readers of a generation that failed everywhere (a
			// mismatch, a cancelled reservation) gave it up unread.
			last := mine.Gen()
			return last != 0 && last != r.gen && r.genFailed(last) && mine.Reclaim()
		}
		if err := r.nodeWait(mine.Claim, sleep); err != nil {
			return err
		}
	}
	b.Publish(mine, r.gen, h, data, readers)
	return nil
}

// arrived waits for site s's slot of the generation and checks its call.
func (r *opRun) arrived(b *nodeRegion, s int) (nodecoll.Slot, error) {
	sl := b.Slot(s, r.gen)
	return sl, r.awaitSlot(sl, func(h nodecoll.Header) error { return r.nodeCheck(s, h) })
}

// awaitSlot waits until sl holds the run's generation and checks its header.
func (r *opRun) awaitSlot(sl nodecoll.Slot, check func(nodecoll.Header) error) error {
	if !sl.Holds(r.gen) {
		gen := r.gen
		ready := func() bool { return sl.Holds(gen) }
		sleep := func(d time.Duration) bool { return sl.SleepArrival(gen, d) }
		if err := r.nodeWait(ready, sleep); err != nil {
			return err
		}
	}
	return check(sl.Header())
}
