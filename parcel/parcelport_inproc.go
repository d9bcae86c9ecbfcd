package parcel

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"
)

// InprocNetwork joins the localities of one process. Each gets a Parcelport
// from Port; parcels between them are copied through the receiver's
// Handler.Buffer like the TCP port reads them, and delivered by one goroutine
// per direction, in order. Kill and Disconnect make failures happen on
// demand.
type InprocNetwork struct {
	mu       sync.Mutex
	ports    map[uint32]*Inproc
	queueLen int
}

// NewInprocNetwork returns an empty network whose links queue up to
// queueLen parcels before Send blocks (256 when queueLen <= 0).
func NewInprocNetwork(queueLen int) *InprocNetwork {
	if queueLen <= 0 {
		queueLen = 256
	}
	return &InprocNetwork{ports: make(map[uint32]*Inproc), queueLen: queueLen}
}

// Port creates the parcelport of locality id, delivering to h.
func (nw *InprocNetwork) Port(id uint32, h Handler) (*Inproc, error) {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	if nw.ports[id] != nil {
		return nil, fmt.Errorf("parcel: inproc locality %d exists already", id)
	}
	p := &Inproc{nw: nw, id: id, h: h, links: make(map[uint32]*inprocLink)}
	nw.ports[id] = p
	return p, nil
}

// Kill makes locality id vanish as if its process died: every peer connected
// to it is told it is down, and it is told the same of them.
func (nw *InprocNetwork) Kill(id uint32) {
	nw.mu.Lock()
	p := nw.ports[id]
	nw.mu.Unlock()
	if p == nil {
		return
	}
	// Dead first: whatever the killed locality still tries to send from now
	// on goes nowhere, as with a process that is gone.
	p.mu.Lock()
	p.dead = true
	peers := make([]uint32, 0, len(p.links))
	for peer := range p.links {
		peers = append(peers, peer)
	}
	p.mu.Unlock()
	for _, peer := range peers {
		nw.Disconnect(id, peer)
	}
}

// Disconnect breaks the link between a and b; both are told the other is
// down.
func (nw *InprocNetwork) Disconnect(a, b uint32) {
	nw.mu.Lock()
	pa, pb := nw.ports[a], nw.ports[b]
	nw.mu.Unlock()
	if pa == nil || pb == nil {
		return
	}
	err := errors.New("link broken")
	pa.breakLink(b, &PeerError{b, "read", fmt.Errorf("%w: %v", ErrPeerDown, err)}, true)
	pb.breakLink(a, &PeerError{a, "read", fmt.Errorf("%w: %v", ErrPeerDown, err)}, true)
}

// Inproc is the parcelport of one locality in an InprocNetwork.
type Inproc struct {
	nw     *InprocNetwork
	id     uint32
	h      Handler
	mu     sync.Mutex
	links  map[uint32]*inprocLink // outgoing, by destination
	closed bool
	dead   bool // killed by InprocNetwork.Kill: sends go nowhere
}

// inprocLink is one direction, from -> to.
type inprocLink struct {
	from, to *Inproc
	mu       sync.Mutex // serialises copies into the receiver's buffers
	closing  bool       // the sender closed; guarded by mu
	queue    chan *Parcel
	gone     chan struct{} // closed when the link breaks: the queue is dropped
	bye      chan struct{} // closed when the sender closes: the queue is delivered
	done     chan struct{} // closed when deliver has returned
	once     sync.Once
	err      error
	ctr      counters
}

// Addr returns a name for the locality; Connect ignores addresses.
func (p *Inproc) Addr() string { return fmt.Sprintf("inproc:%d", p.id) }

// Connect links this locality and peer in both directions.
func (p *Inproc) Connect(ctx context.Context, peer uint32, addr string) error {
	if peer == p.id {
		return &PeerError{peer, "connect", errors.New("a locality cannot connect to itself")}
	}
	// Like a dial to a process not listening yet, wait for the peer's port.
	var q *Inproc
	for {
		p.nw.mu.Lock()
		q = p.nw.ports[peer]
		p.nw.mu.Unlock()
		if q != nil {
			break
		}
		select {
		case <-ctx.Done():
			return &PeerError{peer, "connect", fmt.Errorf("no inproc locality %d: %w", peer, context.Cause(ctx))}
		case <-time.After(time.Millisecond):
		}
	}
	if err := p.addLink(q); err != nil {
		return &PeerError{peer, "connect", err}
	}
	if err := q.addLink(p); err != nil {
		return &PeerError{peer, "connect", err}
	}
	return nil
}

func (p *Inproc) addLink(to *Inproc) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	if p.links[to.id] != nil {
		return fmt.Errorf("locality %d is already connected", to.id)
	}
	l := &inprocLink{from: p, to: to, queue: make(chan *Parcel, p.nw.queueLen),
		gone: make(chan struct{}), bye: make(chan struct{}), done: make(chan struct{})}
	p.links[to.id] = l
	go l.deliver()
	return nil
}

func (l *inprocLink) deliver() {
	defer close(l.done)
	for {
		select {
		case pc := <-l.queue:
			l.to.h.Receive(pc)
		case <-l.gone:
			return
		case <-l.bye:
			// Parcels sent before Close arrive, as they do over TCP.
			for {
				select {
				case pc := <-l.queue:
					l.to.h.Receive(pc)
				default:
					return
				}
			}
		}
	}
}

func (p *Inproc) breakLink(peer uint32, err error, report bool) {
	p.mu.Lock()
	l := p.links[peer]
	report = report && !p.closed // a closed locality has nobody to tell
	p.mu.Unlock()
	if l == nil {
		return
	}
	l.once.Do(func() {
		l.err = err
		close(l.gone)
		if report {
			p.h.PeerDown(peer, err)
		}
	})
}

// Send copies pc into the destination's buffers and queues it for delivery.
func (p *Inproc) Send(ctx context.Context, pc *Parcel) error {
	pc.Header.Source = p.id
	if pc.Header.Kind == KindHeartbeat {
		return &PeerError{pc.Header.Dest, "send", errors.New("parcel: heartbeats are the parcelport's own")}
	}
	if err := checkHeader(&pc.Header, len(pc.Chunks)); err != nil {
		return &PeerError{pc.Header.Dest, "send", err}
	}
	p.mu.Lock()
	l, closed, dead := p.links[pc.Header.Dest], p.closed, p.dead
	p.mu.Unlock()
	if dead {
		return &PeerError{pc.Header.Dest, "send", fmt.Errorf("%w: this locality was killed", ErrPeerDown)}
	}
	if closed {
		return ErrClosed
	}
	if l == nil {
		return &PeerError{pc.Header.Dest, "send", errors.New("not connected")}
	}
	select {
	case <-l.gone:
		return l.err
	default:
	}
	h := pc.Header
	h.Version = HeaderVersion
	h.Args = append([]byte(nil), pc.Header.Args...)
	h.Chunks = make([]uint64, len(pc.Chunks))
	out := &Parcel{Header: h}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closing {
		return ErrClosed
	}
	if len(pc.Chunks) > 0 {
		out.Chunks = make([][]byte, len(pc.Chunks))
	}
	size := uint64(FrameHeadLen + h.Msgsize())
	for i, c := range pc.Chunks {
		h.Chunks[i] = uint64(len(c))
		size += uint64(len(c))
	}
	for i, c := range pc.Chunks {
		b := l.to.h.Buffer(&out.Header, i, len(c))
		if len(b) != len(c) {
			b = make([]byte, len(c))
		}
		copy(b, c)
		out.Chunks[i] = b
	}
	select {
	case l.queue <- out:
	case <-l.gone:
		return l.err
	case <-ctx.Done():
		return &PeerError{pc.Header.Dest, "send", context.Cause(ctx)}
	}
	l.ctr.parcelsSent.Add(1)
	l.ctr.bytesSent.Add(size)
	l.ctr.writes.Add(1)
	return nil
}

// Counters reports the traffic with each peer. Received counts are the
// peer's sent counts towards this locality.
func (p *Inproc) Counters() []PeerCounters {
	p.mu.Lock()
	links := make([]*inprocLink, 0, len(p.links))
	for _, l := range p.links {
		links = append(links, l)
	}
	p.mu.Unlock()
	// The peer's lock is taken only after this one's is released: two
	// localities asking at once would otherwise deadlock.
	out := make([]PeerCounters, 0, len(links))
	for _, l := range links {
		c := l.ctr.snapshot(l.to.id, len(l.queue))
		l.to.mu.Lock()
		back := l.to.links[p.id]
		l.to.mu.Unlock()
		if back != nil {
			c.ParcelsReceived = back.ctr.parcelsSent.Load()
			c.BytesReceived = back.ctr.bytesSent.Load()
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Peer < out[j].Peer })
	return out
}

// Close ends this locality's links without reporting it down: its peers see
// a goodbye, as with TCP. Parcels it sent before are delivered first; Close
// returns once they have been.
func (p *Inproc) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	links := make([]*inprocLink, 0, len(p.links))
	for _, l := range p.links {
		links = append(links, l)
	}
	p.mu.Unlock()
	for _, l := range links {
		// Links towards this locality end now: nobody reads them anymore.
		l.to.breakLink(p.id, &PeerError{p.id, "send", ErrClosed}, false)
		// Links from it deliver what is queued, then end.
		l.mu.Lock() // waits for a Send in progress
		if !l.closing {
			l.closing = true
			close(l.bye)
		}
		l.mu.Unlock()
	}
	for _, l := range links {
		<-l.done
		l.once.Do(func() { l.err = ErrClosed })
	}
	return nil
}
