package runtime

import (
	"fmt"
	"github.com/tessera-amt/tessera/runtime/internal/slots"
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

// collBox is one basename's messages and waiters with the generations
// that failed (a slotMachine, whose waiters are the futures of the runs
// that wait), its posted receives, and this locality's recent calls; a
// message for a basename not yet claimed here makes its box. Its fields
// are guarded by the mailbox's mu; a Communicator keeps a pointer to its
// box, so that its own waits look up no name.
type collBox struct {
	name    string
	claimed bool // by a Communicator of this locality
	slots   slots.Machine[collMsg, *Future[collMsg]]
	posted  map[slots.Key]postedRecv  // where messages not yet here are to be read (post)
	calls   [keptGenerations]keptCall // by generation modulo keptGenerations (collective_probe.go)
	probes  map[uint64][]collMsg      // probes for generations not reached yet
}

// collDelivery is a future to fulfil with a message or an error.
type collDelivery = slots.Delivery[collMsg, *Future[collMsg]]

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
	if m.err != nil {
		b.slots.Step(slots.Event[collMsg, *Future[collMsg]]{Kind: slots.Fail, Err: m.err})
	}
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

// arrive files message k of b, which came from a reader or a local
// Channel.Set, and hands it to its waiter if one waits. It returns why
// nobody will read the message, or nil: the generation or the locality
// failed, or a message of that key is here already.
func (m *collMailbox) arrive(b *collBox, k slots.Key, msg collMsg, err error) error {
	var buf [1]collDelivery
	m.mu.Lock()
	b.slots.Step(slots.Event[collMsg, *Future[collMsg]]{Kind: slots.Message, Key: k, Msg: msg, Err: err})
	ds, drops := b.slots.Ready()
	ds = append(buf[:0], ds...)
	var dropped error
	if len(drops) > 0 {
		dropped = drops[0].Err
	}
	b.slots.Advance()
	m.mu.Unlock()
	deliver(ds)
	return dropped
}

// wait returns message k of b if it is here (f nil), or else the future
// it will arrive in, which the caller gives back with reuse once it has
// the message. err is the failure of the generation or the locality.
func (m *collMailbox) wait(s *scheduler, b *collBox, k slots.Key) (msg collMsg, f *Future[collMsg], err error) {
	f, _ = m.slots.Get().(*Future[collMsg])
	if f == nil {
		f = newFuture[collMsg](s)
	}
	m.mu.Lock()
	b.slots.Step(slots.Event[collMsg, *Future[collMsg]]{Kind: slots.Wait, Key: k, Waiter: f})
	ds, _ := b.slots.Ready()
	now := len(ds) > 0 // the only delivery a wait makes is to its own waiter
	if now {
		msg, err = ds[0].Msg, ds[0].Err
	}
	b.slots.Advance()
	m.mu.Unlock()
	if now {
		m.slots.Put(f) // never handed out
		return msg, nil, err
	}
	return collMsg{}, f, nil
}

// deliver fulfils the futures of ds.
func deliver(ds []collDelivery) {
	for _, d := range ds {
		d.Waiter.set(d.Msg, d.Err)
	}
}

// post has message k of b, when it arrives from locality source, read
// straight into dst, which must be as long as its payload (else, or from
// another locality, it is read into memory of its own, as unposted
// messages are). A message that is here already is left as it is:
// recvInto copies it. The caller waits for k (or ends its run with unpost)
// before it touches dst again.
func (m *collMailbox) post(b *collBox, k slots.Key, source uint32, dst []float64) {
	if len(dst)*8 <= parcel.SmallChunks {
		return // read into the parcel's own room anyway
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if b.slots.Failed(k.Gen) != nil || b.slots.Pending(k) {
		return
	}
	if b.posted == nil {
		b.posted = make(map[slots.Key]postedRecv)
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
		if k.Gen == gen {
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
	k := slots.Key{Gen: h.gen, Step: h.step, From: h.from}
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
	if b.slots.Failed(gen) != nil {
		m.mu.Unlock()
		return
	}
	m.unpostLocked(b, gen)
	b.slots.Step(slots.Event[collMsg, *Future[collMsg]]{Kind: slots.Abort, Gen: gen, Err: err})
	ds, _ := b.slots.Ready()
	ds = append([]collDelivery(nil), ds...)
	b.slots.Advance()
	m.mu.Unlock()
	deliver(ds)
}

// fail fails every wait, now and later, with the runtime's cause.
func (m *collMailbox) fail(err error) {
	m.mu.Lock()
	if m.err != nil {
		m.mu.Unlock()
		return
	}
	m.err = err
	var all []collDelivery
	for _, b := range m.boxes {
		b.slots.Step(slots.Event[collMsg, *Future[collMsg]]{Kind: slots.Fail, Err: err})
		ds, _ := b.slots.Ready()
		all = append(all, ds...)
		b.slots.Advance()
		m.posted.Add(-int64(len(b.posted)))
		b.posted = nil
	}
	m.mu.Unlock()
	deliver(all)
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
			msg.data, err = rt.shared.Borrow(p.Header.Source, d)
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
	if rt.coll.arrive(b, slots.Key{Gen: h.gen, Step: h.step, From: h.from}, msg, lentErr) != nil && h.op == opLent && lentErr == nil {
		rt.giveBack(msg.data) // nobody will read it: the lender may reuse it
	}
}
