//go:build ucx

package parcel

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// UCXBuiltIn reports whether this build has the UCX parcelport (-tags ucx).
const UCXBuiltIn = true

// UCXVersion is the version of the UCX library the build links, or "" in
// a build without it.
func UCXVersion() string { return ucxVersion() }

// UCX is the fabric parcelport: parcels travel as UCX active messages
// (ucp_am_send_nbx), which UCX sends eagerly when small and by rendezvous
// when large, over the transports UCX_TLS names (verbs on a cluster, tcp,
// shared memory). Next to it each pair of localities keeps a connection
// of a TCP port: the handshake proves the job secret on it, the UCX
// worker addresses and a token per direction are exchanged over it, and
// its heartbeats and goodbye say whether a peer lives, left or was lost.
// An active message carries its sender, the token the receiver gave it
// and a sequence number in its AM header, with the frame's prefix and
// header when they fit (else in the data); its data are the chunks, which
// a rendezvous receives straight into the memory Handler.Buffer gives.
// The frame decoder of every port checks what arrives.
//
// One goroutine progresses the UCX worker (parcelport_ucx_recv.go): after
// the last event it keeps calling ucp_worker_progress for 50 µs (PollFor
// if longer), then arms the worker and blocks on its event descriptor in
// Go's poller, judging it ready by its level (an edge can come before the
// wait and be forgotten); it stops spinning early once a sched_yield shows
// the cores are shared, and waits at most 200 µs while operations are in
// flight. A caller waiting for a reply may progress the worker itself
// for as long (Await, parcelport_ucx_await.go); the goroutine stands
// aside meanwhile. Handler methods run on whichever progresses it, in
// each peer's order, never inside UCX: UCX's callbacks only queue events,
// in C.
type UCX struct {
	cfg      UCXConfig
	recycler Recycler      // the Handler, if it says which parcels it keeps
	spin     time.Duration // polling after the last event when blocking
	tcp      *TCP
	w        *ucxWorker

	mu    sync.Mutex // guards peers
	peers map[uint32]*ucxPeer
	view  atomic.Pointer[[]*ucxPeer] // peers by id, republished under mu

	// Guarded by w.mu: the operations in flight by id, the next id, and
	// whether the port is closed to senders.
	ops    map[uint64]*ucxOp
	nextID uint64
	shut   bool

	// Callers progressing the worker (UCX.Await), the progress
	// goroutine parked while they do, its wake-up, and the memory of
	// the callers' rounds.
	callers atomic.Int32
	benched atomic.Bool
	shared  atomic.Int64 // when (UnixNano) a poller's sched_yield last showed the cores shared; 0: not since
	busy    atomic.Bool  // operations were in flight at the last round
	unbench chan struct{}
	steps   sync.Pool // *ucxStep

	// The parcels due to the Handler, in order (guarded by w.mu), and
	// the one goroutine handing them over (holds dmu).
	dq, dqSpare []ucxDue
	dmu         sync.Mutex

	closed   atomic.Bool
	done     chan struct{} // closed by Close
	stop     atomic.Bool   // ends the progress goroutine
	polling  atomic.Bool
	sleeping atomic.Bool // the progress goroutine armed the worker and waits
	downs    atomic.Bool // a peer went down: closeDown has work
	efd      *os.File
	wg       sync.WaitGroup
}

// UCXConfig configures a UCX port. The TCP side uses PortConfig as a TCP
// port does; UCX reads its own settings (UCX_TLS, UCX_NET_DEVICES, ...)
// from the environment when the port starts.
type UCXConfig struct {
	PortConfig
	// PollFor, when positive, makes the progress goroutine keep calling
	// ucp_worker_progress, yielding the processor between calls, until
	// nothing has happened for PollFor; then it blocks on the worker's
	// event descriptor. 0: it blocks at once.
	PollFor time.Duration
}

// ucxPeer is a peer reached through UCX.
type ucxPeer struct {
	id       uint32
	recvTok  [16]byte      // what its AMs must carry; ours to choose
	sendTok  [16]byte      // what ours must carry; set before ready
	ready    chan struct{} // closed once ep and sendTok are set
	ep       *ucxEndpoint  // guarded by UCX.w.mu, like seq and broken
	seq      uint64        // the next AM's sequence number
	broken   error         // UCX reported the endpoint failed
	epClosed bool          // ep was closed (its peer is down)

	ctr              counters
	ctlSent, ctlRecv atomic.Uint64 // control parcels on the TCP side
	delivered        atomic.Uint64 // AMs handed to the handler (or dropped)

	// The receiving side, the progress goroutine's alone.
	dec    *frameDecoder
	next   uint64            // sequence number to deliver next
	parked map[uint64]*ucxIn // arrived (or arriving) out of turn
	failed bool              // a bad message was received
}

// ucxOp is an operation in flight: a send (the sender waits on done), a
// rendezvous receive (in), or an endpoint's flush or close.
type ucxOp struct {
	done chan error
	iov  *ucxIOV
	cmem unsafe.Pointer // C memory a copied send is sent from, freed when done
	in   *ucxIn
}

// ucxDue is a parcel due to the Handler, from peer, its sequence number
// seq, wire bytes long.
type ucxDue struct {
	peer *ucxPeer
	seq  uint64
	p    *Parcel
	wire int64
}

// ucxIn is a received AM on its way to the handler, parked while
// messages before it are missing or its data are still arriving.
type ucxIn struct {
	peer  *ucxPeer
	seq   uint64
	p     *Parcel
	wire  int64
	ready bool
	whole []byte // the whole frame, when it did not fit the AM header
}

const (
	ucxHello    = "parcel.ucx.hello" // the dialer's worker address and token
	ucxAck      = "parcel.ucx.ack"   // the acceptor's
	ucxLast     = "parcel.ucx.last"  // before the goodbye: how many AMs were sent
	ucxPrefix   = 32                 // source, flags, sequence number, token
	ucxInlined  = 1                  // flag: the frame head is in the AM header
	ucxGather   = 8 << 10            // data in pieces up to this long is copied into one
	ucxHeadRoom = 256                // an AM header up to this long is built on the stack
)

// NewUCX starts a UCX port: its UCX worker, then its TCP side on
// cfg.Listener. A UCX_TLS naming no usable transport fails here with
// UCX's reason.
func NewUCX(cfg UCXConfig) (*UCX, error) { return newUCX(cfg, ucxSpin) }

// newUCX is NewUCX with the spin of a blocking port: how long its progress
// goroutine polls after the last event before it blocks (0: not at all).
func newUCX(cfg UCXConfig, spin time.Duration) (*UCX, error) {
	if err := cfg.PortConfig.validate("UCXConfig"); err != nil {
		return nil, err
	}
	w, err := openUCXWorker()
	if err != nil {
		return nil, fmt.Errorf("parcel: locality %d: %w", cfg.Locality, err)
	}
	u := &UCX{cfg: cfg, spin: spin, w: w, peers: map[uint32]*ucxPeer{}, ops: map[uint64]*ucxOp{}, nextID: 1, done: make(chan struct{}), unbench: make(chan struct{}, 1)}
	u.steps.New = func() any { return new(ucxStep) }
	u.recycler, _ = cfg.Handler.(Recycler)
	fd, err := syscall.Dup(w.efd)
	if err == nil {
		err = syscall.SetNonblock(fd, true)
	}
	if err != nil {
		w.close()
		return nil, fmt.Errorf("parcel: locality %d: UCX event descriptor: %w", cfg.Locality, err)
	}
	u.efd = os.NewFile(uintptr(fd), "ucx-worker-events")
	tc := TCPConfig{PortConfig: cfg.PortConfig}
	tc.Handler = (*ucxControl)(u)
	if u.tcp, err = NewTCP(tc); err != nil {
		u.efd.Close()
		w.close()
		return nil, err
	}
	u.wg.Add(1)
	go func() { defer u.wg.Done(); u.progressLoop() }()
	return u, nil
}

// Addr is the TCP side's address.
func (u *UCX) Addr() string { return u.tcp.Addr() }

// Polling reports whether the progress goroutine is polling the worker.
func (u *UCX) Polling() bool { return u.polling.Load() }

// peer returns the peer id, or nil; any goroutine, without a lock.
func (u *UCX) peer(id uint32) *ucxPeer {
	if v := u.view.Load(); v != nil && id < uint32(len(*v)) {
		return (*v)[id]
	}
	return nil
}

// addPeer records p. mu held.
func (u *UCX) addPeer(p *ucxPeer) {
	u.peers[p.id] = p
	var n uint32
	for id := range u.peers {
		n = max(n, id+1)
	}
	v := make([]*ucxPeer, n)
	for id, q := range u.peers {
		v[id] = q
	}
	u.view.Store(&v)
}

// Connect connects the TCP side to peer, then sends it this worker's
// address and waits for its own.
func (u *UCX) Connect(ctx context.Context, peer uint32, addr string) error {
	if u.closed.Load() {
		return &PeerError{peer, "connect", ErrClosed}
	}
	if err := u.tcp.Connect(ctx, peer, addr); err != nil {
		return err
	}
	p := newUCXPeer(peer)
	u.mu.Lock()
	if u.peers[peer] != nil {
		u.mu.Unlock()
		return &PeerError{peer, "connect", errors.New("already connected through UCX")}
	}
	u.addPeer(p)
	u.mu.Unlock()
	hello := &Parcel{Header: Header{Kind: KindControl, Dest: peer, Action: ucxHello, Args: p.recvTok[:]}, Chunks: [][]byte{u.w.addr}}
	if err := u.tcp.Send(ctx, hello); err != nil {
		return err
	}
	p.ctlSent.Add(1)
	tp, err := u.tcp.peer(peer)
	if err != nil {
		return err
	}
	select {
	case <-p.ready:
		return nil
	case <-tp.down:
		return tp.downErr
	case <-u.done:
		return &PeerError{peer, "connect", ErrClosed}
	case <-ctx.Done():
		return &PeerError{peer, "connect", fmt.Errorf("no UCX address from the peer: %w", context.Cause(ctx))}
	}
}

func newUCXPeer(id uint32) *ucxPeer {
	p := &ucxPeer{id: id, ready: make(chan struct{}), parked: map[uint64]*ucxIn{}}
	rand.Read(p.recvTok[:])
	return p
}

// ucxControl is the handler of the TCP side: it takes the UCX addresses
// and passes everything else on.
type ucxControl UCX

// isUCXControl reports whether h heads a control parcel of the port's own.
func isUCXControl(h *Header) bool {
	return h.Kind == KindControl && (h.Action == ucxHello || h.Action == ucxAck || h.Action == ucxLast)
}

func (c *ucxControl) Buffer(h *Header, i int, n int) []byte {
	if isUCXControl(h) {
		return nil
	}
	return c.cfg.Handler.Buffer(h, i, n)
}

func (c *ucxControl) Receive(pc *Parcel) {
	u := (*UCX)(c)
	h := &pc.Header
	if !isUCXControl(h) {
		u.cfg.Handler.Receive(pc)
		return
	}
	if h.Action == ucxLast {
		u.last(pc)
		return
	}
	if err := u.control(pc); err != nil {
		if tp, perr := u.tcp.peer(h.Source); perr == nil {
			// Not on the reader goroutine: closing the connection waits
			// for its read to end.
			go u.tcp.fail(tp, &PeerError{h.Source, "handshake", fmt.Errorf("%w: %w", ErrPeerDown, err)})
		}
	}
}

func (c *ucxControl) PeerDown(peer uint32, err error) {
	u := (*UCX)(c)
	if p := u.peer(peer); p != nil {
		u.downs.Store(true)
		u.w.signal() // the progress goroutine closes its endpoint
	}
	u.cfg.Handler.PeerDown(peer, err)
}

// last takes the count of AMs a peer sent before its goodbye and waits,
// holding up the TCP side's reader and so the goodbye behind it, until
// all of them were handed over (for at most the heartbeat timeout): a
// peer's Close returns once the others have what it sent.
func (u *UCX) last(pc *Parcel) {
	p := u.peer(pc.Header.Source)
	if p == nil || len(pc.Header.Args) != 8 {
		return
	}
	p.ctlRecv.Add(1)
	n := binary.LittleEndian.Uint64(pc.Header.Args)
	deadline := time.Now().Add(u.cfg.HeartbeatTimeout)
	for p.delivered.Load() < n && !u.closed.Load() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Microsecond)
	}
}

// control takes a peer's hello or ack: its worker address (the chunk) and
// the token our AMs are to carry (the arguments).
func (u *UCX) control(pc *Parcel) error {
	h := &pc.Header
	if len(h.Args) != 16 || len(pc.Chunks) != 1 {
		return fmt.Errorf("malformed UCX %s: %d bytes of token, %d chunks", h.Action, len(h.Args), len(pc.Chunks))
	}
	var p *ucxPeer
	u.mu.Lock()
	if h.Action == ucxHello {
		if u.peers[h.Source] != nil {
			u.mu.Unlock()
			return errors.New("a second UCX hello")
		}
		p = newUCXPeer(h.Source)
		u.addPeer(p)
	} else if p = u.peers[h.Source]; p == nil || p.ep != nil {
		u.mu.Unlock()
		return errors.New("a UCX ack nobody asked for")
	}
	u.mu.Unlock()
	p.ctlRecv.Add(1)
	copy(p.sendTok[:], h.Args)
	u.w.mu.Lock()
	if u.shut {
		u.w.mu.Unlock()
		return nil
	}
	ep, err := u.w.connect(p.id, pc.Chunks[0])
	p.ep = ep
	u.w.mu.Unlock()
	if err != nil {
		return err
	}
	close(p.ready)
	if h.Action == ucxHello {
		ack := &Parcel{Header: Header{Kind: KindControl, Dest: p.id, Action: ucxAck, Args: p.recvTok[:]}, Chunks: [][]byte{u.w.addr}}
		// Not on the reader goroutine, which must not block.
		go func() {
			if u.tcp.Send(context.Background(), ack) == nil {
				p.ctlSent.Add(1)
			}
		}()
	}
	return nil
}

// Send sends pc as an active message and waits until UCX is done with its
// memory; see Parcelport.
func (u *UCX) Send(ctx context.Context, pc *Parcel) error {
	pc.Header.Source = u.cfg.Locality
	dest := pc.Header.Dest
	if err := checkSend(pc, u.cfg.MaxFrame); err != nil {
		return &PeerError{dest, "send", err}
	}
	if u.closed.Load() {
		return &PeerError{dest, "send", ErrClosed}
	}
	p, err := u.readyPeer(ctx, dest)
	if err != nil {
		return err
	}
	// The AM header: our prefix, then the frame's prefix and header if
	// they fit; else they lead the data.
	var room [ucxHeadRoom]byte
	hdr := room[:ucxPrefix]
	if hdr, err = appendFrameHead(hdr, &pc.Header, pc.Chunks); err != nil {
		return &PeerError{dest, "send", err}
	}
	binary.LittleEndian.PutUint32(hdr, u.cfg.Locality)
	copy(hdr[16:32], p.sendTok[:])
	wire := int64(len(hdr) - ucxPrefix)
	for _, c := range pc.Chunks {
		wire += int64(len(c))
	}
	if len(hdr) <= u.w.maxH && wire-int64(len(hdr)-ucxPrefix) <= ucxGather {
		err = u.sendCopied(p, hdr, pc.Chunks)
	} else {
		err = u.sendPinned(p, hdr, pc.Chunks, wire)
	}
	if err != nil {
		return err
	}
	p.ctr.parcelsSent.Add(1)
	p.ctr.bytesSent.Add(uint64(wire))
	p.ctr.writes.Add(1)
	return nil
}

// readyPeer returns dest once its UCX endpoint exists, waiting for the
// peer's hello if the TCP side is connected but the hello has not come.
func (u *UCX) readyPeer(ctx context.Context, dest uint32) (*ucxPeer, error) {
	for {
		tp, err := u.tcp.peer(dest)
		if err != nil {
			return nil, err
		}
		if err := tp.usable(); err != nil {
			return nil, err
		}
		if p := u.peer(dest); p != nil {
			select {
			case <-p.ready:
				return p, nil
			default:
			}
		}
		select {
		case <-ctx.Done():
			return nil, &PeerError{dest, "send", context.Cause(ctx)}
		case <-u.done:
			return nil, &PeerError{dest, "send", ErrClosed}
		case <-tp.down:
		case <-time.After(time.Millisecond):
		}
	}
}

// verdict is what a failed UCX operation with p means. The TCP side is
// the judge of whether a peer lives: if it says the peer left or was
// lost, that is the answer; if it still says nothing after the heartbeat
// timeout, the peer is failed for the UCX error.
func (u *UCX) verdict(p *ucxPeer, cause error) error {
	if cause == nil {
		cause = errors.New("no UCX endpoint")
	}
	deadline := time.Now().Add(u.cfg.HeartbeatTimeout)
	for {
		if u.closed.Load() {
			return &PeerError{p.id, "send", ErrClosed}
		}
		tp, err := u.tcp.peer(p.id)
		if err != nil {
			return err
		}
		if err := tp.usable(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			u.tcp.fail(tp, &PeerError{p.id, "send", fmt.Errorf("%w: %w", ErrPeerDown, cause)})
			return tp.usable()
		}
		select {
		case <-tp.down:
		case <-time.After(time.Millisecond):
		}
	}
}

// Counters reports the traffic with each peer: parcels through UCX and the
// TCP side (which the peers that are not UCX ports use), but not the
// control parcels; bytes of both.
func (u *UCX) Counters() []PeerCounters {
	out := u.tcp.Counters()
	for i := range out {
		c := &out[i]
		p := u.peer(c.Peer)
		if p == nil {
			continue
		}
		c.ParcelsSent += p.ctr.parcelsSent.Load() - p.ctlSent.Load()
		c.ParcelsReceived += p.ctr.parcelsRecv.Load() - p.ctlRecv.Load()
		c.BytesSent += p.ctr.bytesSent.Load()
		c.BytesReceived += p.ctr.bytesRecv.Load()
		c.Writes += p.ctr.writes.Load()
	}
	return out
}
