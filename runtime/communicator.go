package runtime

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tessera-amt/tessera/internal/hugepage"
	"github.com/tessera-amt/tessera/internal/shm"
	"github.com/tessera-amt/tessera/parcel"
	"github.com/tinylib/msgp/msgp"
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
// message or waiter — removes the slot, so messages for a generation this
// locality has not reached yet simply wait (run-ahead).

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
	// AllGather take the ring: RingThresholdBytes, changed by benchmarks.
	ringFrom int
	// bcastRingFrom is the same for Broadcast. Off (math.MaxInt) by
	// default: inproc on two cores the tree was faster at 1 and 8 MiB.
	bcastRingFrom int

	mu     sync.Mutex
	gen    uint64 // generations taken so far
	closed bool
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
		ringFrom: RingThresholdBytes, bcastRingFrom: math.MaxInt}, nil
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

// collHeader is the metadata of a collective message.
type collHeader struct {
	base  string
	gen   uint64
	step  uint32
	from  uint32 // sender's site index
	op    collOp
	count uint64 // elements in the sender's call, or anyCount
}

func (h *collHeader) appendTo(b []byte) []byte {
	b = msgp.AppendString(b, h.base)
	b = msgp.AppendUint64(b, h.gen)
	b = msgp.AppendUint32(b, h.step)
	b = msgp.AppendUint32(b, h.from)
	b = msgp.AppendUint8(b, uint8(h.op))
	return msgp.AppendUint64(b, h.count)
}

// readCollHeader decodes a collHeader but for its basename, which it
// returns as a view of b's bytes.
func readCollHeader(b []byte) (h collHeader, base, rest []byte, err error) {
	var op uint8
	if base, b, err = msgp.ReadStringZC(b); err != nil {
		return
	}
	if h.gen, b, err = msgp.ReadUint64Bytes(b); err != nil {
		return
	}
	if h.step, b, err = msgp.ReadUint32Bytes(b); err != nil {
		return
	}
	if h.from, b, err = msgp.ReadUint32Bytes(b); err != nil {
		return
	}
	if op, b, err = msgp.ReadUint8Bytes(b); err != nil {
		return
	}
	h.op = collOp(op)
	h.count, b, err = msgp.ReadUint64Bytes(b)
	return h, base, b, err
}

func appendCall(b []byte, c CollectiveCall) []byte {
	b = msgp.AppendInt(b, c.Site)
	b = msgp.AppendUint32(b, c.Locality)
	b = msgp.AppendString(b, c.Op)
	return msgp.AppendInt64(b, c.Count)
}

func readCall(b []byte) (c CollectiveCall, rest []byte, err error) {
	if c.Site, b, err = msgp.ReadIntBytes(b); err != nil {
		return
	}
	if c.Locality, b, err = msgp.ReadUint32Bytes(b); err != nil {
		return
	}
	if c.Op, b, err = msgp.ReadStringBytes(b); err != nil {
		return
	}
	c.Count, b, err = msgp.ReadInt64Bytes(b)
	return c, b, err
}

// collMsg is a received collective message.
type collMsg struct {
	collHeader
	source uint32 // the sending locality
	data   []float64
}

// slotKey names a message of one basename: generation (a channel's tag),
// step and sender site.
type slotKey struct {
	gen  uint64
	step uint32
	from uint32
}

// collMailbox is a locality's collective state: a box per basename, the
// runs waiting for a message (for the watchdog) and how the locality
// failed.
type collMailbox struct {
	mu      sync.Mutex
	boxes   map[string]*collBox
	waits   map[*opRun]collWait // runs waiting for a message, for the watchdog
	tick    uint64              // the watchdog's ticks so far
	watched bool                // the watchdog runs
	err     error               // the runtime failed
	sends   sync.Pool           // of *collSend, reused once a send returns
	slots   sync.Pool           // of *Future[collMsg], reused once a run took its message
	posted  atomic.Int64        // receives posted in all boxes (post), for Runtime.Buffer's fast check
	inPlace atomic.Uint64       // messages read straight into a posted receive's memory
}

// collBox is one basename's messages and waiters, the generations that
// failed, and this locality's recent calls; a message for a basename not
// yet claimed here makes its box. Its fields are guarded by the mailbox's
// mu; a Communicator keeps a pointer to its box, so that its own waits
// look up no name.
type collBox struct {
	name    string
	claimed bool // by a Communicator of this locality
	slots   map[slotKey]*Future[collMsg]
	posted  map[slotKey]postedRecv    // where messages not yet here are to be read (post)
	aborted map[uint64]error          // by generation
	calls   [keptGenerations]keptCall // by generation modulo keptGenerations (collective_probe.go)
	probes  map[uint64][]collMsg      // probes for generations not reached yet
}

// postedRecv is a posted receive: the memory a message is to be read into,
// and the locality it is to come from.
type postedRecv struct {
	dst    []float64
	source uint32
}

// keptCall is this locality's call in generation gen; gen 0: none.
type keptCall struct {
	gen  uint64
	call collCall
}

// boxLocked returns the box of name, making it if there is none; m.mu is
// held. name may be a view of a message's bytes (string(b) in the lookup
// does not copy them): a new box copies it.
func (m *collMailbox) boxLocked(name []byte) *collBox {
	if b := m.boxes[string(name)]; b != nil {
		return b
	}
	if m.boxes == nil {
		m.boxes = make(map[string]*collBox)
	}
	b := &collBox{name: string(name)}
	m.boxes[b.name] = b
	return b
}

// claim reserves name for a communicator of rt's and returns its box, and
// starts rt's watchdog of collective waits with the first one.
func (m *collMailbox) claim(rt *Runtime, name string) (*collBox, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.boxes[name]
	if b != nil && b.claimed {
		return nil, fmt.Errorf("runtime: communicator %q exists already on this locality", name)
	}
	if b == nil {
		b = m.boxLocked([]byte(name))
	}
	b.claimed = true
	if !m.watched {
		m.watched = true
		go rt.watchWaits()
	}
	return b, nil
}

// release gives b's name back. The box stays: operations of the closed
// communicator that started still take their messages from it.
func (m *collMailbox) release(b *collBox) {
	m.mu.Lock()
	b.claimed = false
	m.mu.Unlock()
}

// slot returns the future for message k of b. The first of message and
// waiter to ask creates it; the second takes it out of the box. It returns
// nil when the generation or the runtime has failed, with the error.
func (m *collMailbox) slot(s *scheduler, b *collBox, k slotKey) (*Future[collMsg], error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return nil, m.err
	}
	if err := b.aborted[k.gen]; err != nil {
		return nil, err
	}
	if f := b.slots[k]; f != nil {
		delete(b.slots, k)
		return f, nil
	}
	if b.slots == nil {
		b.slots = make(map[slotKey]*Future[collMsg])
	}
	f, _ := m.slots.Get().(*Future[collMsg])
	if f == nil {
		f = newFuture[collMsg](s)
	}
	b.slots[k] = f
	return f, nil
}

// post has message k of b, when it arrives from locality source, read
// straight into dst, which must be as long as its payload (else, or from
// another locality, it is read into memory of its own, as unposted
// messages are). A message that is here already is left as it is:
// recvInto copies it. The caller waits for k (or ends its run with unpost)
// before it touches dst again.
func (m *collMailbox) post(b *collBox, k slotKey, source uint32, dst []float64) {
	if len(dst)*8 <= parcel.SmallChunks {
		return // read into the parcel's own room anyway
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil || b.aborted[k.gen] != nil || b.slots[k] != nil {
		return
	}
	if b.posted == nil {
		b.posted = make(map[slotKey]postedRecv)
	}
	if _, ok := b.posted[k]; !ok {
		m.posted.Add(1)
	}
	b.posted[k] = postedRecv{dst, source}
}

// unpost takes back the receives of generation gen of b that no message
// took (a run that failed part-way).
func (m *collMailbox) unpost(b *collBox, gen uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.unpostLocked(b, gen)
}

func (m *collMailbox) unpostLocked(b *collBox, gen uint64) {
	for k := range b.posted {
		if k.gen == gen {
			delete(b.posted, k)
			m.posted.Add(-1)
		}
	}
}

// postedFor returns the posted memory for the message from locality source
// that a collective parcel's header args describe, as bytes, if it is n
// bytes long, and takes it out of its box; else nil. It runs on a reader,
// before the payload is read.
func (m *collMailbox) postedFor(source uint32, args []byte, n int) []byte {
	h, base, _, err := readCollHeader(args)
	if err != nil {
		return nil
	}
	k := slotKey{h.gen, h.step, h.from}
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.boxes[string(base)]
	if b == nil {
		return nil
	}
	pr, ok := b.posted[k]
	if !ok || pr.source != source || len(pr.dst)*8 != n {
		return nil
	}
	delete(b.posted, k)
	m.posted.Add(-1)
	m.inPlace.Add(1)
	return parcel.Float64Bytes(pr.dst)
}

// box returns the box of name (a view of a message's bytes), making it if
// there is none.
func (m *collMailbox) box(name []byte) *collBox {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.boxLocked(name)
}

// reuse takes back a slot's future once its waiter has its message: the
// waiter took it out of the box, so the one that fulfilled it is the only
// other that may still hold it, and only until set returns — which taking
// f.mu waits for (set calls no callbacks here, as nobody adds any).
func (m *collMailbox) reuse(f *Future[collMsg]) {
	f.mu.Lock()
	f.val, f.err, f.wait, f.waiter, f.cbs = collMsg{}, nil, nil, nil, nil
	f.ready.Store(false)
	f.mu.Unlock()
	m.slots.Put(f)
}

// abort fails generation gen of b on this locality: its waiters now, its
// later waits at once; its buffered messages are dropped.
func (m *collMailbox) abort(b *collBox, gen uint64, err error) {
	m.mu.Lock()
	if b.aborted[gen] != nil || m.err != nil {
		m.mu.Unlock()
		return
	}
	if b.aborted == nil {
		b.aborted = make(map[uint64]error)
	}
	b.aborted[gen] = err
	m.unpostLocked(b, gen)
	var fs []*Future[collMsg]
	for k, f := range b.slots {
		if k.gen == gen {
			fs = append(fs, f)
			delete(b.slots, k)
		}
	}
	m.mu.Unlock()
	for _, f := range fs {
		f.set(collMsg{}, err)
	}
}

// fail fails every wait, now and later, with the runtime's cause.
func (m *collMailbox) fail(err error) {
	m.mu.Lock()
	if m.err != nil {
		m.mu.Unlock()
		return
	}
	m.err = err
	var fs []*Future[collMsg]
	for _, b := range m.boxes {
		for _, f := range b.slots {
			fs = append(fs, f)
		}
		b.slots = nil
		m.posted.Add(-int64(len(b.posted)))
		b.posted = nil
	}
	m.mu.Unlock()
	for _, f := range fs {
		f.set(collMsg{}, err)
	}
}

// deliverColl files a collective message; it runs on the reader goroutine
// and does not block.
func (rt *Runtime) deliverColl(p *parcel.Parcel) {
	h, base, rest, err := readCollHeader(p.Header.Args)
	if err != nil || len(p.Chunks) > 1 {
		rt.log.Warn("runtime: bad collective message", "from", p.Header.Source, "err", err)
		return
	}
	b := rt.coll.box(base)
	h.base = b.name
	if h.op == opAbort {
		var e MismatchError
		e.Basename, e.Generation = h.base, h.gen
		for i := range e.Calls {
			if e.Calls[i], rest, err = readCall(rest); err != nil {
				rt.log.Warn("runtime: bad collective abort", "from", p.Header.Source, "err", err)
				return
			}
		}
		rt.coll.abort(b, h.gen, &e)
		return
	}
	msg := collMsg{collHeader: h, source: p.Header.Source}
	if h.step == probeStep {
		rt.probe(b, msg)
		return
	}
	var lentErr error
	if h.op == opLent {
		msg.op = opChannel
		var d shm.Desc
		if d, _, err = readDesc(rest); err == nil {
			msg.data, err = rt.shared.borrow(p.Header.Source, d)
		}
		if err != nil {
			lentErr = fmt.Errorf("lent value: %w", err)
		}
	}
	if len(p.Chunks) == 1 && len(p.Chunks[0]) > 0 {
		c := p.Chunks[0]
		if len(c)%8 != 0 {
			rt.log.Warn("runtime: collective payload is not float64s", "from", p.Header.Source, "bytes", len(c))
			return
		}
		msg.data = parcel.BytesFloat64(c)
		if msg.data == nil { // unaligned: copy
			msg.data = hugepage.Float64s(len(c) / 8)
			copy(parcel.Float64Bytes(msg.data), c)
		}
	}
	f, err := rt.coll.slot(rt.sched, b, slotKey{h.gen, h.step, h.from})
	if err != nil {
		if h.op == opLent && lentErr == nil {
			rt.Recycle(msg.data) // nobody will read it: the lender may reuse it
		}
		return // the generation or the locality failed: nobody will read it
	}
	f.set(msg, lentErr)
}

// opRun is one site's part in one generation of one operation.
type opRun struct {
	c      *Communicator
	ctx    context.Context
	gen    uint64
	op     collOp
	count  uint64 // this site's element count, sent with every message
	expect uint64 // the count expected of the others, or anyCount
	// lent, for Channel.Lend (op opLent), is the segment sent in place
	// of the data.
	lent *shm.Desc
}

// collSend is a collective message being sent: the parcel, room for its
// encoded collHeader (a longer basename spills over to the heap) and its
// one chunk.
type collSend struct {
	p     parcel.Parcel
	head  [64]byte
	chunk [1][]byte
}

// send sends data to site `to` as message step of this generation. The
// caller may reuse data when it returns.
func (r *opRun) send(step uint32, to int, data []float64) error {
	h := collHeader{base: r.c.name, gen: r.gen, step: step, from: uint32(r.c.here), op: r.op, count: r.count}
	dest := r.c.sites[to]
	// One allocation for the parcel, its header and its chunk list, reused:
	// once Send returns, the port keeps nothing of it.
	m, _ := r.c.rt.coll.sends.Get().(*collSend)
	if m == nil {
		m = new(collSend)
	}
	defer func() {
		m.p, m.chunk[0] = parcel.Parcel{}, nil // keeps none of data alive
		r.c.rt.coll.sends.Put(m)
	}()
	p := &m.p
	p.Header = parcel.Header{Kind: parcel.KindControl, Dest: dest, Action: ctlColl, Args: h.appendTo(m.head[:0])}
	if r.lent != nil {
		p.Header.Args = appendDesc(p.Header.Args, *r.lent)
	}
	if len(data) > 0 {
		m.chunk[0] = parcel.Float64Bytes(data)
		p.Chunks = m.chunk[:]
	}
	if err := r.c.rt.port.Send(r.ctx, p); err != nil {
		return r.c.rt.sendError(dest, err)
	}
	return nil
}

// recv waits for message step of this generation from site `from` and
// checks that the sender is in the same operation with the same count.
func (r *opRun) recv(step uint32, from int) ([]float64, error) {
	v, _, err := r.recvCount(step, from)
	return v, err
}

// recvCount is recv that also returns the sender's element count.
func (r *opRun) recvCount(step uint32, from int) ([]float64, uint64, error) {
	rt := r.c.rt
	f, err := rt.coll.slot(rt.sched, r.c.box, slotKey{r.gen, step, uint32(from)})
	if err != nil {
		return nil, 0, err
	}
	msg, err := r.await(f, from)
	if err != nil {
		return nil, 0, err
	}
	rt.coll.reuse(f)
	if msg.source != r.c.sites[from] {
		return nil, 0, fmt.Errorf("message for site %d (locality %d) came from locality %d: the sites disagree on the communicator's localities",
			from, r.c.sites[from], msg.source)
	}
	if msg.op != r.op || (r.expect != anyCount && msg.count != anyCount && msg.count != r.expect) {
		e := &MismatchError{Basename: r.c.name, Generation: r.gen, Calls: [2]CollectiveCall{
			{Site: r.c.here, Locality: rt.here, Op: r.op.String(), Count: countOf(r.count)},
			{Site: from, Locality: msg.source, Op: msg.op.String(), Count: countOf(msg.count)},
		}}
		r.abort(e)
		return nil, 0, e
	}
	return msg.data, msg.count, nil
}

// recvN is recv that also checks the payload's length.
func (r *opRun) recvN(step uint32, from int, n int) ([]float64, error) {
	v, err := r.recv(step, from)
	if err == nil && len(v) != n {
		err = fmt.Errorf("message from site %d (locality %d) has %d elements, want %d", from, r.c.sites[from], len(v), n)
	}
	return v, err
}

// post has message step of this generation from site `from` read straight
// into dst when it arrives (collMailbox.post); recvInto then takes it.
func (r *opRun) post(step uint32, from int, dst []float64) {
	r.c.rt.coll.post(r.c.box, slotKey{r.gen, step, uint32(from)}, r.c.sites[from], dst)
}

// recvInto is recvN into dst: it waits for message step from site `from`
// and leaves its elements in dst — read there by the port if the receive
// was posted before the message came, copied otherwise.
func (r *opRun) recvInto(step uint32, from int, dst []float64) error {
	v, err := r.recvN(step, from, len(dst))
	if err != nil {
		return err
	}
	if len(v) > 0 && &v[0] != &dst[0] {
		copy(dst, v)
		r.recycle(v)
	}
	return nil
}

// abort fails this generation here and tells every other site, so that
// none of them waits for messages that will not come.
func (r *opRun) abort(e *MismatchError) {
	rt := r.c.rt
	rt.coll.abort(r.c.box, r.gen, e)
	h := collHeader{base: r.c.name, gen: r.gen, from: uint32(r.c.here), op: opAbort}
	args := appendCall(appendCall(h.appendTo(nil), e.Calls[0]), e.Calls[1])
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	for s, l := range r.c.sites {
		if s == r.c.here {
			continue
		}
		p := &parcel.Parcel{Header: parcel.Header{Kind: parcel.KindControl, Dest: l, Action: ctlColl, Args: args}}
		rt.port.Send(ctx, p) // best effort: a site that is gone fails anyway
	}
}

// startOp runs body as a task for the communicator's next generation and
// returns the future of its result. Waits inside body give the task's lane
// back; they end when ctx ends, when the generation fails, or when the
// locality does.
func startOp[T any](ctx context.Context, c *Communicator, op collOp, count, expect uint64, body func(r *opRun) (T, error)) *Future[T] {
	gen, ok := reservedGen(ctx, c)
	var err error
	if !ok {
		gen, err = c.nextGen()
	}
	if err == nil {
		err = c.rt.Err()
	}
	if err != nil {
		return MakeFailed[T](fmt.Errorf("runtime: %v on communicator %q: %w", op, c.name, err))
	}
	early := c.rt.coll.enter(c, gen, op, count, expect)
	return SpawnNamed(ctx, c.rt, op.String(), func(wctx context.Context) (T, error) {
		r := &opRun{c: c, ctx: wctx, gen: gen, op: op, count: count, expect: expect}
		if early != nil {
			r.abort(early)
			var zero T
			return zero, early
		}
		v, err := body(r)
		if err != nil {
			var me *MismatchError
			if errors.As(err, &me) {
				return v, err
			}
			return v, fmt.Errorf("runtime: %v on communicator %q, generation %d, site %d (locality %d): %w",
				op, c.name, gen, c.here, c.rt.here, err)
		}
		return v, nil
	})
}

// Channel is a point-to-point channel communicator: a site Sets a []float64
// for another site under a tag, and that site Gets it, in either order —
// a value set before anyone asks waits in the receiver's mailbox. Each
// (sender, receiver, tag) carries one value; reusing one is an error of the
// program's that this type does not detect.
type Channel struct {
	c *Communicator
}

// NewChannel creates this locality's end of the channel communicator named
// basename over sites (ascending localities; nil: all of the job's). Every
// site creates it; the basename must differ from those of other
// communicators.
func NewChannel(rt *Runtime, basename string, sites []uint32) (*Channel, error) {
	c, err := NewCommunicator(rt, basename, sites, 0)
	if err != nil {
		return nil, err
	}
	return &Channel{c}, nil
}

// Site returns this locality's site index.
func (ch *Channel) Site() int { return ch.c.here }

// Size returns the number of sites.
func (ch *Channel) Size() int { return len(ch.c.sites) }

// Close releases the basename on this locality.
func (ch *Channel) Close() { ch.c.Close() }

// Set sends v to site under tag. The future is ready once v is on its way;
// the caller may then reuse v.
//
// The send is not a task: it runs on a goroutine of its own, which waits
// for the connection rather than for a lane, so a value travels while the
// task that set it goes on computing (Cannon's next tiles during this
// step's multiply) even when that task holds the locality's only lane.
func (ch *Channel) Set(ctx context.Context, site int, tag uint64, v []float64) *Future[struct{}] {
	c := ch.c
	if site < 0 || site >= c.Size() {
		return MakeFailed[struct{}](fmt.Errorf("runtime: channel %q: Set to site %d of %d", c.name, site, c.Size()))
	}
	if site == c.here {
		msg := collMsg{collHeader: collHeader{base: c.name, gen: tag, from: uint32(c.here), op: opChannel, count: anyCount},
			source: c.rt.here, data: append([]float64(nil), v...)}
		f, err := c.rt.coll.slot(c.rt.sched, c.box, slotKey{tag, 0, uint32(c.here)})
		if err != nil {
			return MakeFailed[struct{}](err)
		}
		f.set(msg, nil)
		return MakeReady(struct{}{})
	}
	return ch.post(ctx, site, tag, "Set", &opRun{c: c, ctx: ctx, gen: tag, op: opChannel, count: anyCount, expect: anyCount}, v, nil)
}

// post sends Set's or Lend's message r on a goroutine of its own and
// returns the future of the send; done, if set, learns how the send went
// before the future does.
func (ch *Channel) post(ctx context.Context, site int, tag uint64, verb string, r *opRun, v []float64, done func(error)) *Future[struct{}] {
	c := ch.c
	f := newFuture[struct{}](c.rt.sched)
	go func() {
		err := ctx.Err()
		if err == nil {
			err = r.send(0, site, v)
		}
		if done != nil {
			done(err)
		}
		if err != nil {
			err = fmt.Errorf("runtime: channel %q: %s to site %d, tag %d: %w", c.name, verb, site, tag, err)
		}
		f.set(struct{}{}, err)
	}()
	return f
}

// Lend sends v to site under tag as Set does, but without a copy when v
// is shared memory — a tile of SharedFloat64s, or a value lent to this
// locality — and site runs on this machine and could map this locality's
// memory when the job started (the start barrier's probe, shared.go):
// site's Get then returns the
// same memory, mapped read-only there, and the memory is not reused until
// site hands it back with Recycle (as this locality does with its own
// reference). The caller must not change v afterwards. In every other case
// Lend is Set. Primitives lend the tiles that travel between the steps of
// Cannon's product.
func (ch *Channel) Lend(ctx context.Context, site int, tag uint64, v []float64) *Future[struct{}] {
	c := ch.c
	if site < 0 || site >= c.Size() || site == c.here || !c.rt.shared.lendsTo(c.sites[site]) {
		return ch.Set(ctx, site, tag, v)
	}
	d, ok := c.rt.shared.lend(v)
	if !ok {
		return ch.Set(ctx, site, tag, v)
	}
	r := &opRun{c: c, ctx: ctx, gen: tag, op: opLent, count: anyCount, expect: anyCount, lent: &d}
	return ch.post(ctx, site, tag, "Lend", r, nil, func(err error) { c.rt.shared.sent(v, err) })
}

func appendDesc(b []byte, d shm.Desc) []byte {
	b = msgp.AppendInt32(b, d.PID)
	b = msgp.AppendInt32(b, d.FD)
	b = msgp.AppendUint64(b, d.Ino)
	return msgp.AppendUint64(b, d.N)
}

func appendDescs(b []byte, ds []shm.Desc) []byte {
	b = msgp.AppendArrayHeader(b, uint32(len(ds)))
	for _, d := range ds {
		b = appendDesc(b, d)
	}
	return b
}

func readDescs(b []byte) ([]shm.Desc, error) {
	k, b, err := msgp.ReadArrayHeaderBytes(b)
	if err != nil {
		return nil, fmt.Errorf("segment descriptors: %w", err)
	}
	if int(k) > len(b) {
		return nil, fmt.Errorf("segment descriptors: %d in %d bytes", k, len(b))
	}
	ds := make([]shm.Desc, k)
	for i := range ds {
		if ds[i], b, err = readDesc(b); err != nil {
			return nil, err
		}
	}
	return ds, nil
}

func readDesc(b []byte) (d shm.Desc, rest []byte, err error) {
	if d.PID, b, err = msgp.ReadInt32Bytes(b); err == nil {
		if d.FD, b, err = msgp.ReadInt32Bytes(b); err == nil {
			if d.Ino, b, err = msgp.ReadUint64Bytes(b); err == nil {
				d.N, b, err = msgp.ReadUint64Bytes(b)
			}
		}
	}
	if err != nil {
		return d, b, fmt.Errorf("segment descriptor: %w", err)
	}
	return d, b, nil
}

// Get returns the value site Set (or Lend) for this site under tag. A
// value lent from shared memory is read-only — writing it faults — and is
// handed back with Recycle.
func (ch *Channel) Get(ctx context.Context, site int, tag uint64) *Future[[]float64] {
	c := ch.c
	if site < 0 || site >= c.Size() {
		return MakeFailed[[]float64](fmt.Errorf("runtime: channel %q: Get from site %d of %d", c.name, site, c.Size()))
	}
	return Spawn(ctx, c.rt, func(wctx context.Context) ([]float64, error) {
		r := &opRun{c: c, ctx: wctx, gen: tag, op: opChannel, count: anyCount, expect: anyCount}
		v, err := r.recv(0, site)
		if err != nil {
			return nil, fmt.Errorf("runtime: channel %q: Get from site %d, tag %d: %w", c.name, site, tag, err)
		}
		if v == nil {
			v = []float64{}
		}
		return v, nil
	})
}
