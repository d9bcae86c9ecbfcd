package runtime

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/tessera-amt/tessera/internal/hugepage"
	"github.com/tessera-amt/tessera/internal/shm"
	"github.com/tessera-amt/tessera/parcel"
)

// The collective mailbox: where a locality keeps the collective messages
// that arrived and the operations waiting for them, by basename.

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
