package parcel

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// TCPConfig configures a TCP parcelport. Zero values take the defaults noted.
type TCPConfig struct {
	Locality uint32       // this locality's id
	Listener net.Listener // where peers connect; required, closed by Close
	Secret   []byte       // the job secret; required, at least 16 bytes
	Handler  Handler      // receives parcels; required

	MaxFrame          int64         // largest frame body accepted; DefaultMaxFrame
	QueueLen          int           // parcels queued per peer before Send blocks; 256
	HeartbeatInterval time.Duration // idle time before a heartbeat is sent; 500ms
	HeartbeatTimeout  time.Duration // silence after which a peer is down; 5s
	HandshakeTimeout  time.Duration // limit on one handshake; 10s
	Logger            *slog.Logger  // slog.Default() when nil
}

func (c *TCPConfig) validate() error {
	switch {
	case c.Listener == nil:
		return errors.New("parcel: TCPConfig.Listener is nil")
	case len(c.Secret) < 16:
		return errors.New("parcel: TCPConfig.Secret is shorter than 16 bytes")
	case c.Handler == nil:
		return errors.New("parcel: TCPConfig.Handler is nil")
	}
	if c.MaxFrame <= 0 {
		c.MaxFrame = DefaultMaxFrame
	}
	if c.QueueLen <= 0 {
		c.QueueLen = 256
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

const (
	// A batch the writer gathers from its queue for one writev.
	maxBatchParcels = 64
	maxBatchBytes   = 256 << 10
	byeVerb         = "bye"
)

// TCP is the default parcelport: Go's net package, one connection per pair
// of localities.
type TCP struct {
	cfg TCPConfig

	mu      sync.Mutex
	peers   map[uint32]*tcpPeer
	shaking map[net.Conn]struct{} // connections in their handshake
	closed  bool
	wg      sync.WaitGroup
}

// NewTCP starts accepting connections on cfg.Listener.
func NewTCP(cfg TCPConfig) (*TCP, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	t := &TCP{cfg: cfg, peers: make(map[uint32]*tcpPeer), shaking: make(map[net.Conn]struct{})}
	t.wg.Add(1)
	go t.acceptLoop()
	return t, nil
}

// Addr returns the listener's address.
func (t *TCP) Addr() string { return t.cfg.Listener.Addr().String() }

func (t *TCP) acceptLoop() {
	defer t.wg.Done()
	for {
		c, err := t.cfg.Listener.Accept()
		if err != nil {
			t.mu.Lock()
			closed := t.closed
			t.mu.Unlock()
			if closed || errors.Is(err, net.ErrClosed) {
				return
			}
			t.cfg.Logger.Warn("parcel: accept failed", "locality", t.cfg.Locality, "err", err)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		t.wg.Add(1)
		go func() {
			defer t.wg.Done()
			t.accept(c)
		}()
	}
}

func (t *TCP) accept(c net.Conn) {
	if !t.shake(c) {
		c.Close()
		return
	}
	c.SetDeadline(time.Now().Add(t.cfg.HandshakeTimeout))
	var reserved *tcpPeer
	_, err := acceptHandshake(c, t.cfg.Locality, t.cfg.Secret, func(peer uint32) error {
		p, err := t.reserve(peer, c)
		reserved = p
		return err
	})
	t.shaken(c)
	if err != nil {
		if reserved != nil {
			t.release(reserved, err)
		}
		t.cfg.Logger.Warn("parcel: dropped connection that failed the handshake",
			"locality", t.cfg.Locality, "remote", c.RemoteAddr().String(), "err", err)
		c.Close()
		return
	}
	c.SetDeadline(time.Time{})
	t.start(reserved)
}

// shake records c as being in its handshake, so that Close can cut the
// handshake short instead of waiting for its timeout. It reports false once
// the port is closed.
func (t *TCP) shake(c net.Conn) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.shaking[c] = struct{}{}
	return true
}

func (t *TCP) shaken(c net.Conn) {
	t.mu.Lock()
	delete(t.shaking, c)
	t.mu.Unlock()
}

// Connect dials peer at addr, retrying refused connections until ctx ends,
// and runs the handshake.
func (t *TCP) Connect(ctx context.Context, peer uint32, addr string) error {
	var d net.Dialer
	backoff := 10 * time.Millisecond
	for {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			if err = t.dialed(ctx, peer, c); err != nil {
				c.Close()
				return &PeerError{peer, "connect", err}
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return &PeerError{peer, "connect", fmt.Errorf("dialing %s: %w (last error: %v)", addr, context.Cause(ctx), err)}
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

func (t *TCP) dialed(ctx context.Context, peer uint32, c net.Conn) error {
	deadline := time.Now().Add(t.cfg.HandshakeTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if !t.shake(c) {
		return ErrClosed
	}
	c.SetDeadline(deadline)
	err := dialHandshake(c, t.cfg.Locality, peer, t.cfg.Secret)
	t.shaken(c)
	if err != nil {
		return err
	}
	c.SetDeadline(time.Time{})
	p, err := t.reserve(peer, c)
	if err != nil {
		return err
	}
	t.start(p)
	return nil
}

type tcpPeer struct {
	id    uint32
	conn  net.Conn
	queue chan *sendReq
	wmu   sync.Mutex // serialises writes on conn
	ctr   counters

	lastWrite  atomic.Int64 // unix nanoseconds
	gotBye     atomic.Bool  // the peer said goodbye: its EOF is no failure
	closing    atomic.Bool  // we are closing: errors are expected
	drainUntil atomic.Int64 // unix nanoseconds; once closing, the read deadline

	downOnce   sync.Once
	down       chan struct{} // closed when the connection is gone
	downErr    error         // why; set before down is closed
	writerDone chan struct{} // closed when the writer will answer no more requests

	scratch []byte // frame heads of a batch; guarded by wmu
}

type sendReq struct {
	p    *Parcel
	done chan error
}

var sendReqPool = sync.Pool{New: func() any { return &sendReq{done: make(chan error, 1)} }}

func (t *TCP) reserve(id uint32, c net.Conn) (*tcpPeer, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.closed:
		return nil, ErrClosed
	case id == t.cfg.Locality:
		return nil, fmt.Errorf("locality %d connected to itself", id)
	case t.peers[id] != nil:
		return nil, fmt.Errorf("locality %d is already connected", id)
	}
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	p := &tcpPeer{id: id, conn: c, queue: make(chan *sendReq, t.cfg.QueueLen), down: make(chan struct{}), writerDone: make(chan struct{})}
	p.lastWrite.Store(time.Now().UnixNano())
	// Sends can find p from now on, but nothing may be written on c before
	// the handshake has ended: start or release unlocks.
	p.wmu.Lock()
	t.peers[id] = p
	delete(t.shaking, c) // Close says goodbye to it instead of cutting it
	return p, nil
}

// release forgets p, reserved by a handshake that failed afterwards. Sends
// that found it fail with err.
func (t *TCP) release(p *tcpPeer, err error) {
	t.mu.Lock()
	if t.peers[p.id] == p {
		delete(t.peers, p.id)
	}
	t.mu.Unlock()
	p.downOnce.Do(func() {
		p.downErr = &PeerError{p.id, "connect", err}
		close(p.down)
	})
	close(p.writerDone)
	p.wmu.Unlock()
}

func (t *TCP) start(p *tcpPeer) {
	t.wg.Add(2)
	go func() { defer t.wg.Done(); t.readLoop(p) }()
	go func() {
		defer t.wg.Done()
		defer close(p.writerDone)
		t.writeLoop(p)
	}()
	p.wmu.Unlock()
}

// usable returns nil while parcels may be written to p.
func (p *tcpPeer) usable() error {
	select {
	case <-p.down:
		return p.downErr
	default:
	}
	if p.closing.Load() || p.gotBye.Load() {
		return &PeerError{p.id, "send", ErrClosed}
	}
	return nil
}

// fail marks p down with err once; unless the loss was expected it tells the
// handler.
func (t *TCP) fail(p *tcpPeer, err error) {
	p.downOnce.Do(func() {
		expected := p.closing.Load() || p.gotBye.Load()
		if expected {
			err = &PeerError{p.id, "send", ErrClosed}
		}
		p.downErr = err
		close(p.down)
		p.conn.Close()
		if !expected {
			t.cfg.Handler.PeerDown(p.id, err)
		}
	})
}

// deadlineReader extends the read deadline before every read, so silence —
// not the length of a large frame — is what times a peer out. Once the port
// is closing, the deadline is the end of the drain instead.
type deadlineReader struct {
	p *tcpPeer
	d time.Duration
}

func (r deadlineReader) Read(b []byte) (int, error) {
	if until := r.p.drainUntil.Load(); until != 0 {
		r.p.conn.SetReadDeadline(time.Unix(0, until))
	} else {
		r.p.conn.SetReadDeadline(time.Now().Add(r.d))
	}
	return r.p.conn.Read(b)
}

func (t *TCP) readLoop(p *tcpPeer) {
	fr := NewFrameReader(bufio.NewReaderSize(deadlineReader{p, t.cfg.HeartbeatTimeout}, 64<<10), t.cfg.MaxFrame)
	for {
		pc, err := fr.Next(t.cfg.Handler.Buffer)
		if err != nil {
			t.fail(p, &PeerError{p.id, "read", t.readError(p, err)})
			return
		}
		p.ctr.bytesRecv.Add(uint64(fr.LastFrameLen()))
		if pc.Header.Kind == KindHeartbeat {
			if pc.Header.Action == byeVerb {
				p.gotBye.Store(true)
			}
			continue
		}
		p.ctr.parcelsRecv.Add(1)
		if p.closing.Load() {
			continue // draining the connection; nobody is listening
		}
		t.cfg.Handler.Receive(pc)
	}
}

// readError says why reading from p failed. Every cause wraps ErrPeerDown:
// after it the connection is gone.
func (t *TCP) readError(p *tcpPeer, err error) error {
	var ne net.Error
	switch {
	case p.gotBye.Load() || p.closing.Load():
		return err // expected; fail replaces it
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%w: connection closed without goodbye (%v)", ErrPeerDown, err)
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("%w: silent for %v (no heartbeat)", ErrPeerDown, t.cfg.HeartbeatTimeout)
	case errors.Is(err, ErrFrameTooLarge):
		t.cfg.Logger.Error("parcel: refused oversized frame", "locality", t.cfg.Locality, "peer", p.id, "err", err)
	}
	return fmt.Errorf("%w: %w", ErrPeerDown, err)
}

// writeFailed marks p down after a failed write and returns the error that
// the parcels which were not written fail with.
func (t *TCP) writeFailed(p *tcpPeer, err error) error {
	t.fail(p, &PeerError{p.id, "write", fmt.Errorf("%w: %w", ErrPeerDown, err)})
	return p.downErr
}

func (t *TCP) writeLoop(p *tcpPeer) {
	tick := time.NewTicker(max(t.cfg.HeartbeatInterval/2, time.Millisecond))
	defer tick.Stop()
	batch := make([]*sendReq, 0, maxBatchParcels)
	for {
		select {
		case r := <-p.queue:
			batch = append(batch[:0], r)
			size := r.p.Size()
		gather:
			for len(batch) < maxBatchParcels && size < maxBatchBytes {
				select {
				case r := <-p.queue:
					batch = append(batch, r)
					size += r.p.Size()
				default:
					break gather
				}
			}
			p.wmu.Lock()
			err := p.usable()
			var werr error
			if err == nil {
				werr = t.writeBatch(p, batch)
			}
			p.wmu.Unlock()
			if werr != nil {
				err = t.writeFailed(p, werr)
			}
			for i, r := range batch {
				r.done <- err
				batch[i] = nil
			}
		case <-tick.C:
			if time.Since(time.Unix(0, p.lastWrite.Load())) >= t.cfg.HeartbeatInterval && p.wmu.TryLock() {
				var err error
				if p.usable() == nil {
					hb := &Parcel{Header: Header{Kind: KindHeartbeat, Source: t.cfg.Locality, Dest: p.id}}
					err = t.writeOne(p, hb)
				}
				p.wmu.Unlock()
				if err != nil {
					t.writeFailed(p, err)
				}
			}
		case <-p.down:
			for {
				select {
				case r := <-p.queue:
					r.done <- p.downErr
				default:
					return
				}
			}
		}
	}
}

func (t *TCP) writeOne(p *tcpPeer, pc *Parcel) error {
	one := [1]*sendReq{{p: pc}}
	return t.writeBatch(p, one[:])
}

// writeBatch writes the frames of batch with one writev. Callers hold p.wmu.
func (t *TCP) writeBatch(p *tcpPeer, batch []*sendReq) error {
	var ends [maxBatchParcels]int
	buf := p.scratch[:0]
	var err error
	for i, r := range batch {
		if buf, err = AppendFrameHead(buf, &r.p.Header, r.p.Chunks); err != nil {
			return err
		}
		ends[i] = len(buf)
	}
	p.scratch = buf
	bufs := make(net.Buffers, 0, 2*len(batch)+1)
	start := 0
	for i, r := range batch {
		if len(r.p.Chunks) == 0 {
			continue // its head merges with the next one's
		}
		bufs = append(bufs, buf[start:ends[i]])
		start = ends[i]
		for _, c := range r.p.Chunks {
			if len(c) > 0 {
				bufs = append(bufs, c)
			}
		}
	}
	if start < len(buf) {
		bufs = append(bufs, buf[start:])
	}
	n, err := bufs.WriteTo(p.conn)
	p.lastWrite.Store(time.Now().UnixNano())
	p.ctr.writes.Add(1)
	p.ctr.bytesSent.Add(uint64(n))
	if err == nil {
		parcels := uint64(0)
		for _, r := range batch {
			if r.p.Header.Kind != KindHeartbeat {
				parcels++
			}
		}
		p.ctr.parcelsSent.Add(parcels)
	}
	return err
}

func (t *TCP) peer(id uint32) (*tcpPeer, error) {
	t.mu.Lock()
	p := t.peers[id]
	closed := t.closed
	t.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	if p == nil {
		return nil, &PeerError{id, "send", errors.New("not connected")}
	}
	return p, nil
}

// Send writes pc to its destination; see Parcelport.
func (t *TCP) Send(ctx context.Context, pc *Parcel) error {
	pc.Header.Source = t.cfg.Locality
	if err := t.check(pc); err != nil {
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
	// instead of waking the writer goroutine.
	if len(p.queue) == 0 && p.wmu.TryLock() {
		err := p.usable()
		var werr error
		if err == nil {
			werr = t.writeOne(p, pc)
		}
		p.wmu.Unlock()
		if werr != nil {
			err = t.writeFailed(p, werr)
		}
		return err
	}
	r := sendReqPool.Get().(*sendReq)
	r.p = pc
	select {
	case p.queue <- r:
	case <-p.down:
		r.p = nil
		sendReqPool.Put(r)
		return p.downErr
	case <-ctx.Done():
		r.p = nil
		sendReqPool.Put(r)
		return &PeerError{p.id, "send", context.Cause(ctx)}
	}
	// Once queued the chunks belong to the writer until it reports back,
	// so wait for it even if ctx ends or the connection goes down: the
	// writer answers every request it has taken before it exits.
	select {
	case err = <-r.done:
	case <-p.down:
		<-p.writerDone
		select {
		case err = <-r.done:
		default:
			return p.downErr // never taken; r stays in the dead queue
		}
	}
	r.p = nil
	sendReqPool.Put(r)
	return err
}

// check refuses a parcel the receiving side would refuse, before it costs
// the connection.
func (t *TCP) check(pc *Parcel) error {
	if pc.Header.Kind == KindHeartbeat {
		return errors.New("parcel: heartbeats are the parcelport's own")
	}
	if err := checkHeader(&pc.Header, len(pc.Chunks)); err != nil {
		return err
	}
	body := int64(headerBound(&pc.Header, len(pc.Chunks)))
	for _, c := range pc.Chunks {
		body += int64(len(c))
	}
	if body > t.cfg.MaxFrame {
		return fmt.Errorf("%w: parcel of up to %d bytes, limit %d", ErrFrameTooLarge, body, t.cfg.MaxFrame)
	}
	return nil
}

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
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	peers := make([]*tcpPeer, 0, len(t.peers))
	for _, p := range t.peers {
		peers = append(peers, p)
	}
	shaking := make([]net.Conn, 0, len(t.shaking))
	for c := range t.shaking {
		shaking = append(shaking, c)
	}
	t.mu.Unlock()
	err := t.cfg.Listener.Close()
	for _, c := range shaking {
		c.Close()
	}
	drain := time.Now().Add(min(t.cfg.HeartbeatTimeout, time.Second))
	for _, p := range peers {
		p.closing.Store(true)
		p.drainUntil.Store(drain.UnixNano())
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
		p.wmu.Unlock()
		if werr != nil {
			t.fail(p, ErrClosed)
		} else {
			p.conn.SetReadDeadline(drain) // the reader ends at EOF or then
		}
	}
	t.wg.Wait()
	return err
}
