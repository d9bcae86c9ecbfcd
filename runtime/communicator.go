package runtime

import (
	"errors"
	"fmt"
	"math"
	"sync"
)

// Collectives: a Communicator is a set of localities (its sites, in site
// order) that run collective operations together under one basename. Every
// operation takes the communicator's next generation; its messages travel
// as control parcels (verb ctlColl) whose Args carry
//
//	basename, generation, step, sender site, op, element count
//
// and whose one raw chunk is the []float64 payload. The receiving reader
// goroutine deposits each message in the runtime's mailbox under
// (basename, generation, step, sender site) without blocking; the operation
// that waits for it holds a Future for the same key. Whoever comes second —
// message or waiter — completes the pair, so messages for a generation this
// locality has not reached yet simply wait (run-ahead). That matching is a
// state machine without goroutines (slotMachine, collective_slots.go); the
// mailbox (collective_mailbox.go) drives it; an operation's run
// (collective_run.go) sends and waits.

// collOp names a collective operation on the wire.
type collOp uint8

const (
	opAllReduce collOp = 1 + iota
	opBroadcast
	opReduce
	opAllGather
	opGather
	opScatter
	opBarrier
	opInclusiveScan
	opExclusiveScan
	opAllToAll
	opAllToAllV
	opChannel
	opLent  collOp = 254 // Channel.Lend's message: a segment's shm.Desc in place of the payload; received as opChannel
	opAbort collOp = 255 // a site found a mismatch: the generation fails everywhere
)

func (o collOp) String() string {
	switch o {
	case opAllReduce:
		return "AllReduce"
	case opBroadcast:
		return "Broadcast"
	case opReduce:
		return "Reduce"
	case opAllGather:
		return "AllGather"
	case opGather:
		return "Gather"
	case opScatter:
		return "Scatter"
	case opBarrier:
		return "Barrier"
	case opInclusiveScan:
		return "InclusiveScan"
	case opExclusiveScan:
		return "ExclusiveScan"
	case opAllToAll:
		return "AllToAll"
	case opAllToAllV:
		return "AllToAllV"
	case opChannel:
		return "Channel.Set"
	case opAbort:
		return "abort"
	}
	return fmt.Sprintf("op(%d)", uint8(o))
}

// anyCount in a message or an expectation means: not known, not checked.
const anyCount = ^uint64(0)

// Communicator is a group of localities that run collective operations
// together: AllReduce, Broadcast, Reduce, AllGather, Gather, Scatter,
// Barrier, InclusiveScan, ExclusiveScan, AllToAll and AllToAllV. Every
// locality in the group creates it with the same basename and sites; then
// every one of them must call the same operations, with matching element
// counts, in the same order. Each call takes the next generation, so
// consecutive operations are sequenced, and a locality may run ahead of the
// others by any number of generations: their messages wait in a mailbox
// until it gets there.
//
// Operations return at once with a future. A Communicator is safe for
// concurrent use, but concurrent calls get generations in an unspecified
// order, which must be the same on every site: call from one goroutine.
//
// Failures: when a locality of the job fails, every operation waiting on
// any locality fails with the job's cause (a *LocalityError naming the
// locality that went first). Calls that disagree fail with a
// *MismatchError on every site as soon as one site receives a message of
// the other kind or count; disagreements that exchange no message at all
// (Gather against Scatter on two sites, say) are found by the probe a site
// sends after waiting probeAfter (collective_probe.go). An
// operation whose ctx ends returns the ctx's cause on this site only; the
// other sites wait in that generation until theirs end, so the
// communicator is of no further use.
type Communicator struct {
	rt    *Runtime
	name  string
	box   *collBox // its messages on this locality
	sites []uint32 // site index -> locality
	here  int      // this locality's site index
	root  int
	// ringFrom is the payload size in bytes from which AllReduce and
	// AllGather take the ring: ringThresholdBytes, changed by benchmarks.
	ringFrom int
	// bcastRingFrom is the same for Broadcast. Off (math.MaxInt) by
	// default: inproc on two cores the tree was faster at 1 and 8 MiB.
	bcastRingFrom int

	mu     sync.Mutex
	gen    uint64 // generations taken so far
	closed bool

	node nodeState // the board on this machine (collective_node.go)
}

// NewCommunicator creates this locality's end of the communicator named
// basename over sites (the localities taking part, in ascending order; nil
// means all of the job's), with root (a site index, not a locality) as the
// root of rooted operations. Every locality in sites must create it, with
// the same arguments; this locality must be one of them. Disjoint groups
// run at the same time without interference as long as their basenames
// differ; a basename is in use on a locality until Close.
func NewCommunicator(rt *Runtime, basename string, sites []uint32, root int) (*Communicator, error) {
	if basename == "" {
		return nil, errors.New("runtime: NewCommunicator: empty basename")
	}
	if sites == nil {
		sites = make([]uint32, rt.n)
		for i := range sites {
			sites[i] = uint32(i)
		}
	} else {
		sites = append([]uint32(nil), sites...)
	}
	here := -1
	for i, l := range sites {
		if l >= rt.n {
			return nil, fmt.Errorf("runtime: communicator %q: locality %d out of range for a job of %d", basename, l, rt.n)
		}
		if i > 0 && l <= sites[i-1] {
			return nil, fmt.Errorf("runtime: communicator %q: sites must be ascending and distinct, got %v", basename, sites)
		}
		if l == rt.here {
			here = i
		}
	}
	if here < 0 {
		return nil, fmt.Errorf("runtime: communicator %q: locality %d is not one of its sites %v", basename, rt.here, sites)
	}
	if root < 0 || root >= len(sites) {
		return nil, fmt.Errorf("runtime: communicator %q: root %d out of range for %d sites", basename, root, len(sites))
	}
	box, err := rt.coll.claim(rt, basename)
	if err != nil {
		return nil, err
	}
	return &Communicator{rt: rt, name: basename, box: box, sites: sites, here: here, root: root,
		ringFrom: ringThresholdBytes, bcastRingFrom: math.MaxInt}, nil
}

// Basename returns the name the communicator was created with.
func (c *Communicator) Basename() string { return c.name }

// Size returns the number of sites.
func (c *Communicator) Size() int { return len(c.sites) }

// Site returns this locality's site index.
func (c *Communicator) Site() int { return c.here }

// Root returns the site index of the root of rooted operations.
func (c *Communicator) Root() int { return c.root }

// Sites returns the localities of the sites, in site order.
func (c *Communicator) Sites() []uint32 { return append([]uint32(nil), c.sites...) }

// Generation returns the number of operations started so far; the next one
// runs in generation Generation()+1.
func (c *Communicator) Generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// Close releases the basename on this locality. Operations already started
// finish; later ones fail.
func (c *Communicator) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.closed = true
		c.rt.coll.release(c.box)
		c.node.close()
	}
}

// nextGen takes the next generation.
func (c *Communicator) nextGen() (uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, fmt.Errorf("runtime: communicator %q is closed", c.name)
	}
	c.gen++
	return c.gen, nil
}

// MismatchError reports that the sites of a communicator called different
// operations, or the same one with different element counts, in one
// generation. Every site of the generation fails with it.
type MismatchError struct {
	Basename   string
	Generation uint64
	Calls      [2]CollectiveCall // the two calls that disagree
}

// CollectiveCall describes one site's call in a MismatchError.
type CollectiveCall struct {
	Site     int    // index in the communicator
	Locality uint32 // the locality of that site
	Op       string // the operation's name
	Count    int64  // elements it contributed; -1 when it does not say
}

// String describes the call, as a MismatchError does.
func (c CollectiveCall) String() string {
	s := fmt.Sprintf("site %d (locality %d) called %s", c.Site, c.Locality, c.Op)
	if c.Count >= 0 {
		s += fmt.Sprintf(" with %d elements", c.Count)
	}
	return s
}

// Error names the communicator, the generation and both calls.
func (e *MismatchError) Error() string {
	return fmt.Sprintf("runtime: communicator %q generation %d: mismatched collective calls: %v, but %v",
		e.Basename, e.Generation, e.Calls[0], e.Calls[1])
}

func countOf(n uint64) int64 {
	if n == anyCount {
		return -1
	}
	return int64(n)
}
