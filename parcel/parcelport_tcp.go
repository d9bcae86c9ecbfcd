package parcel

import (
	"context"
	"errors"
	"fmt"
	"github.com/tessera-amt/tessera/internal/sockopt"
	"github.com/tessera-amt/tessera/internal/tick"
	"log/slog"
	"net"
	goruntime "runtime"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// PortConfig is what every socket parcelport (TCP, NBIO) is configured
// with. Zero values take the defaults noted.
type PortConfig struct {
	Locality uint32       // this locality's id
	Listener net.Listener // where peers connect; required, closed by Close
	Secret   []byte       // the job secret; required, at least 16 bytes
	Handler  Handler      // receives parcels; required

	MaxFrame          int64         // largest frame body accepted; DefaultMaxFrame
	HeartbeatInterval time.Duration // idle time before a heartbeat is sent; 500ms
	HeartbeatTimeout  time.Duration // silence after which a peer is down; 5s
	HandshakeTimeout  time.Duration // limit on one handshake; 10s
	Logger            *slog.Logger  // slog.Default() when nil
}

// validate checks c and fills in its defaults; kind names the port's
// configuration in errors ("TCPConfig").
func (c *PortConfig) validate(kind string) error {
	switch {
	case c.Listener == nil:
		return fmt.Errorf("parcel: %s.Listener is nil", kind)
	case len(c.Secret) < 16:
		return fmt.Errorf("parcel: %s.Secret is shorter than 16 bytes", kind)
	case c.Handler == nil:
		return fmt.Errorf("parcel: %s.Handler is nil", kind)
	}
	if c.MaxFrame <= 0 {
		c.MaxFrame = DefaultMaxFrame
	}
	if c.HeartbeatInterval <= 0 {
		c.HeartbeatInterval = 500 * time.Millisecond
	}
	if c.HeartbeatTimeout <= 0 {
		c.HeartbeatTimeout = 5 * time.Second
	}
	if c.HandshakeTimeout <= 0 {
		c.HandshakeTimeout = 10 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

// TCPConfig configures a TCP parcelport. Zero values take the defaults noted.
type TCPConfig struct {
	PortConfig
	QueueLen int // parcels queued per peer before Send blocks; 256

	// PollFor, when positive, makes the port poll for what its peers
	// send: a port's only reader tries non-blocking reads, yielding the
	// processor between tries, and blocks after PollFor without data, or
	// at once when a yield shows that another thread wants the core; the
	// readers of a port with several peers wait in one progress loop that
	// peeks at all their sockets, yielding between rounds, and blocks in
	// an epoll set of its own after PollFor without data
	// (tcp_poll_unix.go). A message then reaches a waiting reader without
	// a wake-up, at the price of a busy core while the port polls. 0: the
	// readers block at once (the default).
	PollFor time.Duration

	// MaxBatch is the most parcels one write gathers from a peer's queue
	// (the coalescing limit): parcels that senders queue while the
	// connection is busy go out together, up to MaxBatch (and about 256
	// KiB) a write. 1 writes every parcel alone; 0 means 64, the most.
	MaxBatch int

	// Congestion, if set, is the TCP congestion control of the port's
	// connections (Linux's TCP_CONGESTION: "reno" is always allowed,
	// others as net.ipv4.tcp_allowed_congestion_control says); "" keeps
	// the system's default. Bulk transfers between localities on one
	// host or in one cluster can gain from a loss-based one over a pacing
	// one such as bbr: see docs/benchmarks.md.
	Congestion string

	// RawReads makes the reads of up to 64 KiB on the connections (Linux
	// only) raw system calls, as the writes of up to 64 KiB always are:
	// system calls of which Go's scheduler is not told, which on these
	// non-blocking sockets return at once. A read the scheduler is told
	// of wakes Go's monitor thread when it sleeps, which it does whenever
	// the process has nothing to run — a wake-up and a burst of polling
	// per message for a process that waits on the network between
	// messages. That is pure cost where the machine has fewer cores than
	// busy processes (more localities than cores): about a quarter of the
	// CPU of a small AllReduce of 4 localities on 2 cores. Where cores are
	// free it is not: the round trip of 2 localities on 2 cores is slower
	// with it (see docs/architecture.md). The runtime sets it for a
	// locality that shares its machine's cores with more localities than
	// there are.
	RawReads bool
}

func (c *TCPConfig) validate() error {
	if err := c.PortConfig.validate("TCPConfig"); err != nil {
		return err
	}
	switch {
	case c.MaxBatch == 0:
		c.MaxBatch = maxBatchParcels
	case c.MaxBatch < 0 || c.MaxBatch > maxBatchParcels:
		return fmt.Errorf("parcel: TCPConfig.MaxBatch is %d, want 1 to %d", c.MaxBatch, maxBatchParcels)
	}
	if c.QueueLen <= 0 {
		c.QueueLen = 256
	}
	return nil
}

const (
	// A batch the writer gathers from its queue for one writev: at most
	// this many parcels (TCPConfig.MaxBatch) and about this many bytes.
	maxBatchParcels = 64
	maxBatchBytes   = 256 << 10
	byeVerb         = "bye"
)

// TCP is the default parcelport: Go's net package, one connection per pair
// of localities.
type TCP struct {
	cfg TCPConfig
	links[*tcpPeer]
	wg    sync.WaitGroup
	clock *tick.Ticker  // of heartbeats
	stop  chan struct{} // closed by Close: ends monitorGuard

	spin spinners  // of its polling readers (PollFor)
	reqs sync.Pool // of *sendReq, reused once answered
}

// NewTCP starts accepting connections on cfg.Listener.
func NewTCP(cfg TCPConfig) (*TCP, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Congestion != "" {
		// Connections accepted later inherit it from the listener.
		if err := sockopt.SetCongestion(cfg.Listener, cfg.Congestion); err != nil {
			return nil, fmt.Errorf("parcel: %w", err)
		}
	}
	t := &TCP{cfg: cfg}
	t.links = links[*tcpPeer]{
		peers: make(map[uint32]*tcpPeer), shaking: make(map[net.Conn]struct{}),
		locality: cfg.Locality, secret: cfg.Secret, timeout: cfg.HandshakeTimeout,
		logger: cfg.Logger, listener: cfg.Listener, wg: &t.wg,
		reservePeer: t.reserve, releasePeer: t.release, startPeer: func(p *tcpPeer, _ net.Conn) { t.start(p) },
	}
	t.clock = tick.New(heartbeatPeriod(t.cfg.HeartbeatInterval, t.cfg.HeartbeatTimeout))
	t.stop = make(chan struct{})
	if newSpinner(cfg.PollFor, &t.spin) != nil {
		// Several readers of the poll mode wait in one progress loop.
		t.spin.kick = make(chan struct{}, 1)
		t.wg.Add(1)
		go func() { defer t.wg.Done(); t.spin.progress(cfg.PollFor, t.stop) }()
	}
	t.wg.Add(2)
	go t.acceptLoop()
	go func() { defer t.wg.Done(); t.heartbeats() }()
	if cfg.RawReads {
		t.wg.Add(1)
		go func() { defer t.wg.Done(); t.monitorGuard() }()
	}
	return t, nil
}

// Addr returns the listener's address.
func (t *TCP) Addr() string { return t.cfg.Listener.Addr().String() }

// Connect dials peer at addr, retrying refused connections until ctx ends,
// and runs the handshake.
func (t *TCP) Connect(ctx context.Context, peer uint32, addr string) error {
	return t.connect(ctx, peer, addr)
}

type tcpPeer struct {
	peerState
	conn     net.Conn
	raw      syscall.RawConn // conn's descriptor, or nil
	rawReads bool            // TCPConfig.RawReads
	// queue holds the requests of senders that found the connection busy;
	// it is bounded, so senders block instead of buffering without limit.
	// Whoever holds wmu writes what is queued before letting go of it (flat
	// combining: see combine), and the writer goroutine takes over when
	// kicked. Requests leave the queue only to be answered: by a lock holder
	// (after writing them, unless the connection is closing) or, once the
	// connection is down, with downErr by whoever finds them.
	queue chan *sendReq
	kick  chan struct{} // wakes the writer goroutine to drain queue; buffered, 1
	wmu   sync.Mutex    // serialises writes on conn; release it with unlock or combine

	live   atomic.Bool   // started: the handshake is over, the reader runs
	reads  atomic.Uint64 // reads from conn that returned bytes
	beat   atomic.Bool   // the writer is to send a heartbeat when kicked
	silent atomic.Bool   // nothing was read for the heartbeat timeout
	clk    peerClock     // what the port's clock saw last; its goroutine's alone

	scratch []byte      // frame heads of a batch; guarded by wmu
	iovs    net.Buffers // the writev of a batch: kept to reuse its array; guarded by wmu
	iov     net.Buffers // what WriteTo consumes; a field, so that it does not escape per write

	// A raw write's state, guarded by wmu: the callback RawConn.Write
	// calls is made once, not per write.
	rw rawWrite
}

// sendReq is a parcel a sender queued. done receives exactly one answer,
// from whoever took the request off the queue; after sending it, that one
// does not touch the request again, and the sender waits for it before the
// request goes back to the port's pool (TCP.reqs).
type sendReq struct {
	p    *Parcel
	done chan error
}

// reserve admits the peer id that completed (or is completing) the
// handshake on c. Nothing may be written on c before the handshake has
// ended: the peer's write lock is held until start or release.
func (t *TCP) reserve(id uint32, c net.Conn) (*tcpPeer, error) {
	if t.cfg.Congestion != "" {
		if err := sockopt.SetCongestion(c, t.cfg.Congestion); err != nil {
			return nil, fmt.Errorf("parcel: %w", err)
		}
	}
	return t.admit(id, c, func() *tcpPeer {
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetNoDelay(true)
		}
		p := &tcpPeer{conn: c, raw: rawConn(c), rawReads: t.cfg.RawReads, queue: make(chan *sendReq, t.cfg.QueueLen), kick: make(chan struct{}, 1)}
		p.init(id)
		p.wmu.Lock()
		return p
	})
}

// release forgets p, reserved by a handshake that failed afterwards. Sends
// that found it fail with err.
func (t *TCP) release(p *tcpPeer, err error) {
	t.forget(p.id, p)
	p.abandon(err)
	// No writer was started; senders that queued requests see down and
	// answer them themselves.
	p.wmu.Unlock()
}

func (t *TCP) start(p *tcpPeer) {
	p.live.Store(true)
	t.wg.Add(2)
	go func() { defer t.wg.Done(); t.readLoop(p) }()
	go func() { defer t.wg.Done(); t.writeLoop(p) }()
	p.unlock() // senders may have queued requests during the handshake
}

// fail marks p down with err once; unless the loss was expected it tells the
// handler.
func (t *TCP) fail(p *tcpPeer, err error) {
	p.markDown(err, func() { p.conn.Close() }, t.cfg.Handler.PeerDown)
}

// countingReader reads p's connection and counts the reads that returned
// bytes, which the port's clock watches (see heartbeats).
type countingReader struct{ p *tcpPeer }

func (r countingReader) Read(b []byte) (int, error) {
	n, err := r.p.conn.Read(b)
	if n > 0 {
		r.p.reads.Add(1)
	}
	return n, err
}

// readLoop is the reader goroutine of p: it reads frames until the
// connection fails or closes and hands each parcel to the handler. It reads
// the descriptor itself where it can (readRaw), else through a FrameReader.
func (t *TCP) readLoop(p *tcpPeer) {
	deliver := func(pc *Parcel, wire int64) { p.received(pc, wire, t.cfg.Handler) }
	var err error
	if p.raw != nil {
		d := newFrameDecoder(t.cfg.MaxFrame, t.cfg.Handler.Buffer)
		err = readRaw(p.raw, p, d, newSpinner(t.cfg.PollFor, &t.spin), deliver)
	} else {
		fr := NewFrameReader(countingReader{p}, t.cfg.MaxFrame)
		for {
			var pc *Parcel
			if pc, err = fr.Next(t.cfg.Handler.Buffer); err != nil {
				break
			}
			deliver(pc, fr.LastFrameLen())
			if !fr.buffered() {
				// The next frame needs a read from the socket, which finds
				// nothing yet unless the peer is streaming: let the
				// goroutines that this parcel woke (the task that runs a
				// call, the one that waits for a reply) run first, so that
				// their work — a reply, the next call — does not wait
				// behind that read.
				goruntime.Gosched()
			}
		}
	}
	t.fail(p, &PeerError{p.id, "read", p.readError(err, t.cfg.HeartbeatTimeout, t.cfg.Logger, t.cfg.Locality)})
}

// writeFailed marks p down after a failed write and returns the error that
// the parcels which were not written fail with.
func (t *TCP) writeFailed(p *tcpPeer, err error) error {
	t.fail(p, &PeerError{p.id, "write", fmt.Errorf("%w: %w", ErrPeerDown, err)})
	return p.downErr
}

// writeLoop is the writer goroutine of p: it drains the queue when kicked,
// which is when a sender combining for others stopped before the queue was
// empty, or when a lock holder that does not combine (start, Close) let go
// of the lock with requests queued, or when the port's clock asks for a
// heartbeat (p.beat). It answers what is left in the queue once the
// connection is down.
//
// The writer does not receive from the queue while it waits: a send on a
// channel that a goroutine is blocked receiving from is handed to that
// goroutine, so a waiting writer would take every request out of reach of
// the lock holder, whose combining saves the wake-ups of the writer.
func (t *TCP) writeLoop(p *tcpPeer) {
	for {
		select {
		case <-p.kick:
			if p.beat.Swap(false) && p.wmu.TryLock() { // else somebody is writing anyway
				var err error
				if p.usable() == nil {
					hb := &Parcel{Header: Header{Kind: KindHeartbeat, Source: t.cfg.Locality, Dest: p.id}}
					err = t.writeOne(p, hb)
				}
				p.unlock()
				if err != nil {
					t.writeFailed(p, err)
				}
			}
			if len(p.queue) > 0 {
				p.wmu.Lock()
				t.combine(p, -1)
			}
		case <-p.down:
			p.failQueued()
			return
		}
	}
}

// peerClock is what the port's clock saw of a peer at its last tick: the
// counts of reads and writes, and for how long each has not changed.
type peerClock struct {
	reads, writes uint64
	quiet, idle   time.Duration // without a read, without a write
}

// heartbeats is the port's clock. Every tick it has the writer send a
// heartbeat on each connection that nothing was written on for
// HeartbeatInterval, and fails each peer that nothing was read from for
// HeartbeatTimeout: it ends the reader's wait with a deadline in the past,
// so that the reader reports the silence. It counts ticks instead of
// reading the time, and it is a tick.Ticker, not a Go timer: the readers
// and writers neither read the clock nor move deadlines per message, and
// between ticks no timer of the port is pending (see internal/tick).
func (t *TCP) heartbeats() {
	period := heartbeatPeriod(t.cfg.HeartbeatInterval, t.cfg.HeartbeatTimeout)
	var peers []*tcpPeer
	for t.clock.Wait() {
		t.mu.Lock()
		peers = peers[:0]
		for _, p := range t.peers {
			peers = append(peers, p)
		}
		t.mu.Unlock()
		for _, p := range peers {
			if !p.live.Load() || p.usable() != nil {
				continue // in its handshake, which has its own deadline; or down, closing, or said goodbye: so has the drain
			}
			c := &p.clk
			if r := p.reads.Load(); r != c.reads {
				c.reads, c.quiet = r, 0
			} else if c.quiet += period; c.quiet >= t.cfg.HeartbeatTimeout {
				p.silent.Store(true)
				p.conn.SetReadDeadline(time.Unix(1, 0))
				continue
			}
			if w := p.ctr.writes.Load(); w != c.writes {
				c.writes, c.idle = w, 0
			} else if c.idle += period; c.idle >= t.cfg.HeartbeatInterval {
				c.idle = 0
				p.beat.Store(true)
				p.kickWriter()
			}
			// Not needed while every lock holder keeps its duty (see
			// unlock); it bounds how long a request could wait if one
			// did not.
			if len(p.queue) > 0 {
				p.kickWriter()
			}
		}
	}
}

// Send writes pc to its destination; see Parcelport.
func (t *TCP) Send(ctx context.Context, pc *Parcel) error {
	pc.Header.Source = t.cfg.Locality
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
	// Fast path: nobody is writing and nothing is queued, so write now
	// instead of waking the writer goroutine; then write what others queued
	// meanwhile, so that they need not wake the writer either.
	if len(p.queue) == 0 && p.wmu.TryLock() {
		err := p.usable()
		if err == nil {
			if werr := t.writeOne(p, pc); werr != nil {
				p.wmu.Unlock()
				return t.writeFailed(p, werr)
			}
		}
		t.combine(p, cap(p.queue))
		return err
	}
	r, _ := t.reqs.Get().(*sendReq)
	if r == nil {
		r = &sendReq{done: make(chan error, 1)}
	}
	r.p = pc
	select {
	case p.queue <- r:
	case <-p.down:
		r.p = nil
		t.reqs.Put(r)
		return p.downErr
	case <-ctx.Done():
		r.p = nil
		t.reqs.Put(r)
		return &PeerError{p.id, "send", context.Cause(ctx)}
	}
	// If the writing has ended meanwhile, write the queue ourselves, r
	// included; otherwise the lock holder writes r before letting go.
	if p.wmu.TryLock() {
		t.combine(p, cap(p.queue))
	}
	// Once queued the chunks belong to whoever takes r off the queue until
	// r is answered, so wait for that even if ctx ends. If the connection
	// goes down, the writer may be gone: answer what is still queued, r
	// included unless someone else has taken it and so will answer it.
	select {
	case err = <-r.done:
	case <-p.down:
		p.failQueued()
		err = <-r.done
	}
	r.p = nil
	t.reqs.Put(r)
	return err
}

// Polling reports whether a reader of the port is polling its connection
// now (see TCPConfig.PollFor): a message that arrives is then picked up
// without a wake-up. A task waiting for one may spin instead of parking
// while this holds.
func (t *TCP) Polling() bool { return t.spin.polling.Load() > 0 }

// Counters reports the traffic with each connected peer, by peer id.
func (t *TCP) Counters() []PeerCounters {
	t.mu.Lock()
	out := make([]PeerCounters, 0, len(t.peers))
	for id, p := range t.peers {
		out = append(out, p.ctr.snapshot(id, len(p.queue)))
	}
	t.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Peer < out[j].Peer })
	return out
}

// Close says goodbye to every peer and closes the connections and the
// listener. It waits for the port's goroutines to end.
//
// The goodbye is followed by a half close, and the connection is drained
// until the peer closes its end too (for at most a second or the heartbeat
// timeout): closing a socket with unread data in it would reset the
// connection, and the peer might then report a loss before it has read the
// goodbye.
func (t *TCP) Close() error {
	peers, shaking, first := t.closing()
	if !first {
		return nil
	}
	err := t.cfg.Listener.Close()
	t.clock.Close()
	close(t.stop)
	for _, c := range shaking {
		c.Close()
	}
	drain := time.Now().Add(min(t.cfg.HeartbeatTimeout, time.Second))
	for _, p := range peers {
		p.closing.Store(true)
		// A peer that does not read must not hold Close up: the deadline
		// also ends a write that is blocked now.
		p.conn.SetWriteDeadline(time.Now().Add(time.Second))
	}
	for _, p := range peers {
		p.wmu.Lock()
		werr := t.writeOne(p, &Parcel{Header: Header{Kind: KindHeartbeat, Action: byeVerb, Source: t.cfg.Locality, Dest: p.id}})
		if werr == nil {
			if cw, ok := p.conn.(interface{ CloseWrite() error }); ok {
				werr = cw.CloseWrite()
			} else {
				werr = errors.ErrUnsupported
			}
		}
		p.unlock() // requests queued meanwhile get their ErrClosed from the writer
		if werr != nil {
			t.fail(p, ErrClosed)
		} else {
			p.conn.SetReadDeadline(drain) // the reader ends at EOF or then
		}
	}
	t.wg.Wait()
	return err
}
