package parcel

import (
	"context"
	"errors"
	"fmt"
	"github.com/tessera-amt/tessera/internal/tick"
	"io"
	"net"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	goruntime "runtime"

	"github.com/lesismal/nbio"
)

// NBIOConfig configures an NBIO parcelport. Zero values take the defaults
// noted.
type NBIOConfig struct {
	PortConfig
	// Window bounds the bytes per peer that nbio holds written but not yet
	// sent; a Send that would exceed it blocks. 4 MiB; at least 256 KiB.
	Window int
}

// DefaultNBIOWindow is NBIOConfig.Window's default.
const DefaultNBIOWindow = 4 << 20

func (c *NBIOConfig) validate() error {
	if err := c.PortConfig.validate("NBIOConfig"); err != nil {
		return err
	}
	if c.Window != 0 && c.Window < minNBIOWindow {
		return fmt.Errorf("parcel: NBIOConfig.Window of %d bytes, at least %d", c.Window, minNBIOWindow)
	}
	if c.Window == 0 {
		c.Window = DefaultNBIOWindow
	}
	return nil
}

const (
	minNBIOWindow = 256 << 10
	// Frames up to this long are copied into the peer's outgoing buffer,
	// where frames queued together leave in one write; longer ones are
	// written from the caller's memory.
	nbioCoalesceMax = 16 << 10
	// The outgoing buffer kept between writes; a larger one is dropped.
	nbioKeepBuffer = 256 << 10
)

// NBIO is the alternative parcelport: the same handshake, frames and
// heartbeats as TCP over github.com/lesismal/nbio's event loop. One poller
// goroutine reads every connection of the port; it decodes frames as bytes
// arrive and reads a chunk straight into the memory Handler.Buffer provides.
//
// nbio's Write never blocks: what the socket does not take is copied into
// a cache that nbio sends as the socket drains. Send therefore returns once
// its parcel is in the socket or that cache, and blocks (until its context
// ends) while the bytes nbio holds unsent for the peer would exceed
// NBIOConfig.Window; nbio's write callback returns the window as it sends.
// Parcels of up to 16 KiB of payload are copied into a per-peer buffer, and
// the sender that finds nobody writing writes everything buffered in one
// call; a sender that finds somebody writing returns at once, its parcel
// left to them. Either way the caller may reuse the chunks when Send
// returns; a parcel lost with the connection after that is reported through
// Handler.PeerDown, not to its sender.
//
// Handler methods run on the port's single poller goroutine, for every
// peer: Receive must hand work off at once.
type NBIO struct {
	cfg    NBIOConfig
	engine *nbio.Engine

	links[*nbioPeer]
	clock *tick.Ticker // of heartbeats; closed by Close
	wg    sync.WaitGroup
}

// NewNBIO starts an nbio engine and accepts connections on cfg.Listener.
func NewNBIO(cfg NBIOConfig) (*NBIO, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	t := &NBIO{cfg: cfg}
	t.engine = nbio.NewEngine(nbio.Config{
		Name:           fmt.Sprintf("tessera-L%d", cfg.Locality),
		NPoller:        1,
		ReadBufferSize: 4 << 10, // the poller's own buffer; the port reads into its own
		// A backstop: the window keeps the cache below this, and should it
		// not, nbio closes the connection instead of growing the cache.
		MaxWriteBufferSize: cfg.Window + 1<<20,
	})
	t.engine.OnRead(t.onRead)
	t.engine.OnClose(t.onClose)
	t.engine.OnWrittenSize(t.onWritten)
	if err := t.engine.Start(); err != nil {
		return nil, fmt.Errorf("parcel: locality %d: starting nbio: %w", cfg.Locality, err)
	}
	t.clock = tick.New(heartbeatPeriod(cfg.HeartbeatInterval, cfg.HeartbeatTimeout))
	t.links = links[*nbioPeer]{
		peers: make(map[uint32]*nbioPeer), shaking: make(map[net.Conn]struct{}),
		locality: cfg.Locality, secret: cfg.Secret, timeout: cfg.HandshakeTimeout,
		logger: cfg.Logger, listener: cfg.Listener, wg: &t.wg,
		reservePeer: t.reserve, releasePeer: t.release, startPeer: t.start,
	}
	t.wg.Add(2)
	go t.acceptLoop()
	go func() { defer t.wg.Done(); t.heartbeats() }()
	return t, nil
}

// Addr returns the listener's address.
func (t *NBIO) Addr() string { return t.cfg.Listener.Addr().String() }

type nbioPeer struct {
	peerState
	port  *NBIO
	conn  *nbio.Conn    // set by start, under mu, before nbio has it
	dec   *frameDecoder // the poller goroutine's
	ready atomic.Bool   // set once p is complete, before nbio has the connection

	mu       sync.Mutex
	out      []byte        // small frames waiting for the writer; guarded by mu
	flushing bool          // someone holds the connection for writing; guarded by mu
	changed  chan struct{} // closed (and replaced) when a waiter may proceed; guarded by mu
	waiting  int           // senders blocked; guarded by mu
	nwait    atomic.Int32  // goroutines waiting on changed, for onWritten

	accepted atomic.Int64 // bytes handed to conn.Write
	written  atomic.Int64 // bytes nbio wrote to the socket
	peak     atomic.Int64 // most bytes nbio held unsent after a write

	lastRead, lastWrite atomic.Int64 // unix nanoseconds

	eof     chan struct{} // closed when the reader reaches the end of the stream
	eofOnce sync.Once
	handed  chan struct{} // closed once start (or release) is done with p
}

// unsent is what nbio holds written but not sent.
func (p *nbioPeer) unsent() int64 { return p.accepted.Load() - p.written.Load() }

// Connect dials peer at addr, retrying refused connections until ctx ends,
// and runs the handshake.
func (t *NBIO) Connect(ctx context.Context, peer uint32, addr string) error {
	return t.connect(ctx, peer, addr)
}

// reserve registers the peer id that completed (or is completing) the
// handshake on c. Senders may find it from now on; they queue until start
// hands the connection over, since the handshake may not be over yet.
func (t *NBIO) reserve(id uint32, c net.Conn) (*nbioPeer, error) {
	return t.admit(id, c, func() *nbioPeer {
		p := &nbioPeer{port: t, changed: make(chan struct{}), eof: make(chan struct{}),
			handed: make(chan struct{}), flushing: true, dec: newFrameDecoder(t.cfg.MaxFrame, t.cfg.Handler.Buffer)}
		p.init(id)
		now := time.Now().UnixNano()
		p.lastRead.Store(now)
		p.lastWrite.Store(now)
		return p
	})
}

// release forgets p, reserved by a handshake that failed afterwards.
func (t *NBIO) release(p *nbioPeer, err error) {
	t.forget(p.id, p)
	p.abandon(err)
	close(p.handed)
}

// start hands the connection c of p, handshake done, to the nbio engine and
// writes what senders buffered meanwhile.
func (t *NBIO) start(p *nbioPeer, c net.Conn) {
	defer close(p.handed)
	conn, err := nbio.NBConn(c) // a duplicate of c's socket; c is closed
	if err == nil {
		conn.SetSession(p)
		// nbio's poller finds p through the connection with no
		// synchronisation the race detector sees; this store and the load
		// in every callback are that synchronisation.
		p.ready.Store(true)
		p.mu.Lock()
		p.conn = conn
		p.mu.Unlock()
		select {
		case <-p.down: // Close got here first
			conn.Close()
			p.mu.Lock()
			p.out = nil
			p.release()
			p.mu.Unlock()
			return
		default:
		}
		_, err = t.engine.AddConn(conn)
	}
	if err != nil {
		c.Close()
		t.fail(p, &PeerError{p.id, "connect", fmt.Errorf("%w: handing the connection to nbio: %w", ErrPeerDown, err)})
		p.mu.Lock()
		p.out = nil
		p.release()
		p.mu.Unlock()
		return
	}
	p.mu.Lock()
	err = p.flushLocked()
	p.release()
	p.mu.Unlock()
	if err != nil {
		t.writeFailed(p, err)
	}
}

// peerOf returns the peer a connection of the engine belongs to.
func peerOf(c *nbio.Conn) *nbioPeer {
	p, _ := c.Session().(*nbioPeer)
	if p == nil || !p.ready.Load() {
		return nil
	}
	return p
}

// fail marks p down with err once, closes the connection and, unless the
// loss was expected, tells the handler. It must not be called with p.mu
// held.
func (t *NBIO) fail(p *nbioPeer, err error) {
	p.markDown(err, func() {
		p.mu.Lock()
		c := p.conn
		p.mu.Unlock()
		if c != nil {
			c.Close()
		}
	}, t.cfg.Handler.PeerDown)
}

func (t *NBIO) writeFailed(p *nbioPeer, err error) error {
	t.fail(p, &PeerError{p.id, "write", fmt.Errorf("%w: %w", ErrPeerDown, err)})
	return p.downErr
}

// signal wakes the goroutines waiting on p.changed. Called with p.mu held.
func (p *nbioPeer) signal() {
	if p.nwait.Load() > 0 {
		close(p.changed)
		p.changed = make(chan struct{})
	}
}

// release gives up the connection held for writing. Called with p.mu held.
func (p *nbioPeer) release() {
	p.flushing = false
	p.signal()
}

// wait waits, with p.mu held, until ready holds. It gives up when ctx (if
// not nil) ends or the connection goes down.
func (p *nbioPeer) wait(ctx context.Context, ready func() bool) error {
	var done <-chan struct{}
	if ctx != nil {
		done = ctx.Done()
	}
	p.nwait.Add(1) // before looking: see onWritten
	defer p.nwait.Add(-1)
	for !ready() {
		select {
		case <-p.down:
			return p.downErr
		default:
		}
		ch := p.changed
		p.waiting++
		p.mu.Unlock()
		var err error
		select {
		case <-ch:
		case <-p.down:
		case <-done:
			err = &PeerError{p.id, "send", context.Cause(ctx)}
		}
		p.mu.Lock()
		p.waiting--
		if err != nil {
			return err
		}
	}
	return nil
}

// onWritten is nbio's report that n bytes went into the socket: the window
// opens by as much.
func (t *NBIO) onWritten(c *nbio.Conn, _ []byte, n int) {
	p := peerOf(c)
	if p == nil {
		return
	}
	p.written.Add(int64(n))
	if p.nwait.Load() > 0 {
		p.mu.Lock()
		p.signal()
		p.mu.Unlock()
	}
}

// Send writes pc to its destination; see Parcelport. It returns once the
// parcel is in the socket or in nbio's cache.
func (t *NBIO) Send(ctx context.Context, pc *Parcel) error {
	pc.Header.Source = t.cfg.Locality
	if err := ctx.Err(); err != nil {
		return &PeerError{pc.Header.Dest, "send", context.Cause(ctx)}
	}
	if err := checkSend(pc, t.cfg.MaxFrame); err != nil {
		return &PeerError{pc.Header.Dest, "send", err}
	}
	p, err := t.peer(pc.Header.Dest)
	if err != nil {
		return err
	}
	if err := p.usable(); err != nil {
		return err
	}
	size := 0
	for _, c := range pc.Chunks {
		size += len(c)
	}
	if size <= nbioCoalesceMax {
		return t.sendSmall(ctx, p, pc)
	}
	return t.sendLarge(ctx, p, pc)
}

// onRead is called on the poller goroutine when c is readable. It reads
// until the socket is empty: nbio closes a connection whose peer has shut
// its end as soon as this returns.
func (t *NBIO) onRead(c *nbio.Conn) {
	p := peerOf(c)
	if p == nil {
		c.Close()
		return
	}
	select {
	case <-p.down:
		return
	default:
	}
	delivered := false
	deliver := func(pc *Parcel, wire int64) {
		if p.received(pc, wire, t.cfg.Handler) {
			delivered = true
		}
	}
	for {
		b, direct := p.dec.space()
		n, err := c.Read(b)
		if n > 0 {
			p.lastRead.Store(time.Now().UnixNano())
			if ferr := p.dec.feed(n, direct, deliver); ferr != nil {
				t.fail(p, &PeerError{p.id, "read", p.readError(ferr, t.cfg.HeartbeatTimeout, t.cfg.Logger, t.cfg.Locality)})
				return
			}
			continue
		}
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EAGAIN):
			if delivered {
				// The poller goes back to epoll_wait, a blocking system
				// call that keeps this P until the scheduler's monitor
				// takes it away, which can take milliseconds; the
				// goroutines Receive woke would wait as long when they
				// have no other P. Let them run first.
				goruntime.Gosched()
			}
			return
		case err == nil: // end of stream
			p.eofOnce.Do(func() { close(p.eof) })
			err = p.dec.end()
		}
		t.fail(p, &PeerError{p.id, "read", p.readError(err, t.cfg.HeartbeatTimeout, t.cfg.Logger, t.cfg.Locality)})
		return
	}
}

// onClose is nbio's report that a connection is closed, by either side or
// by nbio itself (a write error, a cache overflow).
func (t *NBIO) onClose(c *nbio.Conn, err error) {
	p := peerOf(c)
	if p == nil {
		return
	}
	p.eofOnce.Do(func() { close(p.eof) })
	if err == nil {
		err = io.EOF
	}
	t.fail(p, &PeerError{p.id, "read", p.readError(err, t.cfg.HeartbeatTimeout, t.cfg.Logger, t.cfg.Locality)})
}

// heartbeats sends a heartbeat on every idle connection and declares down
// the peers that were silent for the heartbeat timeout. Its clock is a
// tick.Ticker, not a Go timer (see internal/tick).
func (t *NBIO) heartbeats() {
	var peers []*nbioPeer
	for t.clock.Wait() {
		peers = peers[:0]
		t.mu.Lock()
		for _, p := range t.peers {
			peers = append(peers, p)
		}
		t.mu.Unlock()
		now := time.Now()
		for _, p := range peers {
			select {
			case <-p.down:
				continue
			default:
			}
			if p.closing.Load() || !p.started() {
				continue
			}
			if silent := now.Sub(time.Unix(0, p.lastRead.Load())); silent > t.cfg.HeartbeatTimeout {
				t.fail(p, &PeerError{p.id, "read", fmt.Errorf("%w: silent for %v (no heartbeat)", ErrPeerDown, silent.Round(time.Millisecond))})
				continue
			}
			if p.usable() == nil && now.Sub(time.Unix(0, p.lastWrite.Load())) >= t.cfg.HeartbeatInterval {
				t.sendControl(p, "")
			}
		}
	}
}

// started reports whether start is done with p.
func (p *nbioPeer) started() bool {
	select {
	case <-p.handed:
		return true
	default:
		return false
	}
}

// Counters reports the traffic with each connected peer, by peer id.
// QueueLen is the number of senders waiting for the window.
func (t *NBIO) Counters() []PeerCounters {
	t.mu.Lock()
	peers := make([]*nbioPeer, 0, len(t.peers))
	for _, p := range t.peers {
		peers = append(peers, p)
	}
	t.mu.Unlock()
	out := make([]PeerCounters, 0, len(peers))
	for _, p := range peers {
		p.mu.Lock()
		w := p.waiting
		p.mu.Unlock()
		out = append(out, p.ctr.snapshot(p.id, w))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Peer < out[j].Peer })
	return out
}

// Close says goodbye to every peer and closes the connections, the listener
// and the nbio engine. It waits for the port's goroutines to end.
//
// As for TCP, the goodbye is followed by a half close once nbio has sent
// everything, and the connection is read until the peer closes its end too
// (for at most a second or the heartbeat timeout).
func (t *NBIO) Close() error {
	peers, shaking, first := t.closing()
	if !first {
		return nil
	}
	err := t.cfg.Listener.Close()
	for _, c := range shaking {
		c.Close()
	}
	for _, p := range peers {
		p.closing.Store(true)
	}
	drain := time.Now().Add(min(t.cfg.HeartbeatTimeout, time.Second))
	var wg sync.WaitGroup
	for _, p := range peers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.goodbye(p, drain)
		}()
	}
	wg.Wait()
	t.clock.Close()
	t.wg.Wait()
	t.engine.Stop()
	return err
}

// goodbye sends the goodbye to p, waits until nbio has sent it and the peer
// has closed its end (or until drain), and closes the connection.
func (t *NBIO) goodbye(p *nbioPeer, drain time.Time) {
	defer t.fail(p, ErrClosed) // expected: closing is set
	// Wait (within a second) for the handshake's end to be handed over,
	// for the connection to be free, then for nbio to send everything, the
	// goodbye included.
	limit, stop := context.WithDeadline(context.Background(), drain)
	defer stop()
	select {
	case <-p.handed:
	case <-limit.Done():
		return
	}
	select {
	case <-p.down:
		return
	default:
	}
	p.mu.Lock()
	err := p.wait(limit, func() bool { return !p.flushing })
	p.mu.Unlock()
	if err != nil {
		return // a writer is stuck on a peer that does not read: cut it
	}
	t.sendControl(p, byeVerb)
	p.mu.Lock()
	err = p.wait(limit, func() bool { return !p.flushing && len(p.out) == 0 && p.unsent() == 0 })
	p.mu.Unlock()
	if err != nil {
		return
	}
	raw, err := p.conn.SyscallConn()
	if err != nil {
		return
	}
	raw.Control(shutdownWrite)
	select {
	case <-p.eof:
	case <-p.down:
	case <-limit.Done():
	}
}
