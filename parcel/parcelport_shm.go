package parcel

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tessera-amt/tessera/internal/shm"
)

// SHMConfig configures a shared-memory parcelport. Its TCPConfig is that of
// the TCP port underneath, which carries the handshake, the heartbeats and
// the parcels to localities on other machines; PollFor also makes the ring
// readers poll. Zero values take the defaults noted.
type SHMConfig struct {
	TCPConfig
	// RingBytes is the size of each ring, one per direction and pair of
	// localities on this machine: a power of two from 64 KiB to 1 GiB;
	// DefaultRingBytes.
	RingBytes int
	// SpinFor is how long a ring reader (or a writer waiting for room)
	// spins before it sleeps, when the port does not poll
	// (PollFor is 0); 50µs. Negative: sleep at once.
	SpinFor time.Duration
}

// DefaultRingBytes is the size of a ring unless SHMConfig says otherwise:
// room for an 8 MiB chunk in eight pieces, copied in by the writer while
// the reader copies out.
const DefaultRingBytes = 1 << 20

// SHM is the parcelport for jobs whose localities may share a machine: a
// TCP port whose connections to localities on this machine are upgraded
// to rings in shared memory right after their handshake.
//
// # Upgrade
//
// The locality that dialed creates a segment (a memfd, sealed at its size:
// two rings, see shm_ring.go), writes a random token into it, and offers
// it over the authenticated TCP connection as a control parcel: its node
// (shm.Node: the boot id and process-id namespace), process id, descriptor
// and inode, the ring size and the token. The acceptor upgrades only if
// the node is its own, it can open the descriptor through /proc, the file
// is the size and version offered, and it holds the token: so the two
// share memory, whatever their host names say. A peer on another node is
// refused quietly and stays on TCP; one that claims this node but whose
// segment does not hold the token (or has the wrong size or version) is
// refused with a warning naming it, and stays on TCP too.
//
// Why a memfd opened through /proc rather than a named shm file or a
// descriptor passed over a unix socket: the memfd has no name anyone can
// guess or race for and nothing is left in /dev/shm when a process is
// killed; opening /proc/PID/fd/N needs the creator's user (ptrace read
// access), as a file of mode 0600 would, and the triple that names it
// only ever travels inside the connection that proved the job secret, so
// only a process of the job's user that the job told can map it; the
// token then proves the mapping is the creator's memory. A unix socket
// would need an authentication of its own for the same result. It is how
// internal/shm lends tiles, too.
//
// Rings per pair, one per direction, rather than one per receiver: each
// has one writer and one reader, so head and tail are plain atomics and
// no lock is shared between processes; a writer that dies half-way
// through an entry, or writes garbage, spoils only the ring it shares
// with this locality, which goes down with it, where a receiver's shared
// ring would be blocked for every sender. The price is a reader per peer
// on the node (a goroutine, parked while it sleeps)
// and 2 × RingBytes of memory per pair, touched only as far as the
// traffic goes.
//
// Order across the switch: each side sends on TCP until it sends a marker
// on TCP (the acceptor's "accept", the dialer's "switch") and on the ring
// from then on; TCP senders hold a per-peer lock shared, the switch holds
// it exclusively, so no parcel follows the marker on TCP. The receiver
// starts reading the ring when the marker arrives, after every parcel sent
// before it. Connect returns once its side has switched (or the upgrade
// was refused).
//
// # Waiting
//
// A ring reader polls its ring for PollFor when the port polls, else spins
// for SpinFor (with several peers on the machine, one loop spins for all
// the readers: parcelport_shm_progress.go), offering the core to the
// machine's other threads (sched_yield) every few looks while they take
// it and seldom while the yields come back at once (yieldPace: a yield
// costs about as much as the rest of a small round trip's wait); then it
// raises its sleeper
// flag in the ring's control and sleeps on its doorbell, a channel: when
// the writer finds the flag raised (see ring.publish: no lost wake-ups) it
// sends a doorbell parcel on the TCP connection, whose reader rings it. A
// futex would be the cheaper wake-up, but a thread asleep in one keeps the
// process's processor (see ringWait); the TCP reader waits in Go's network
// poller instead. An idle reader costs no processor time. A writer that
// finds its ring full waits for room on the ring's futex; a large
// chunk is copied into the ring piece by piece while the reader copies the
// pieces out into the chunk's memory: each byte is copied twice (into the
// ring, out of it), with nothing staged between. Tiles that already live in
// shared segments (internal/shm) could travel by reference instead; that is
// the runtime's lending, not the port's, for now.
//
// A task that waits, polling, for a reply need not wait for a reader:
// Poll reads the rings on the caller's goroutine while their readers do
// not, through the same decoder and handler (parcelport_shm_poll.go), and
// a spinning reader gives such a task the processor at once. A handler
// that is a Recycler has each ring's parcels read into the memory of the
// one before that it did not keep.
//
// # Failure
//
// The TCP connection stays up under the rings, with its heartbeats: a
// peer that is killed closes it at once, one that stops answering falls
// silent past the heartbeat timeout. Either way the ring reader takes out
// what complete frames the ring holds, then reports the peer down with
// the TCP port's cause, noting a frame cut short in the ring. A ring whose
// positions are impossible, or whose bytes fail the frame decoder's
// checks, is an error naming the peer, and the connection is closed.
// Close writes a goodbye into each ring before closing the TCP port.
type SHM struct {
	cfg  SHMConfig
	tcp  *TCP
	node string // shm.Node(); "" disables upgrades

	mu    sync.Mutex
	peers map[uint32]*shmPeer
	view  atomic.Pointer[[]*shmPeer] // peers by id, for Send without mu

	closed  atomic.Bool
	stop    chan struct{} // closed by Close once the TCP port is closed
	ready   chan struct{} // closed once tcp is set: the handler waits for it
	wg      sync.WaitGroup
	polling atomic.Int32  // ring waiters spinning now
	polls   atomic.Uint64 // calls of Poll: a count that moves says a task polls the rings itself

	progress ringProgress // the ring readers' loop when there are several (parcelport_shm_progress.go)

	// offerHook, if not nil, changes each offer, or the segment it
	// offers, before it is sent (tests).
	offerHook func(o *shmOffer, segment []byte)
}

// NewSHM starts a shared-memory parcelport: a TCP port configured by
// cfg.TCPConfig, whose connections to localities on this machine move to
// rings in shared memory.
func NewSHM(cfg SHMConfig) (*SHM, error) {
	if cfg.RingBytes == 0 {
		cfg.RingBytes = DefaultRingBytes
	}
	if cfg.RingBytes < 0 || !validRingBytes(uint64(cfg.RingBytes)) {
		return nil, fmt.Errorf("parcel: SHMConfig.RingBytes is %d, want a power of two from %d to %d", cfg.RingBytes, minRingBytes, maxRingBytes)
	}
	if cfg.SpinFor == 0 {
		cfg.SpinFor = 50 * time.Microsecond
	}
	if cfg.Handler == nil {
		return nil, errors.New("parcel: SHMConfig.Handler is nil")
	}
	// The defaults, before the TCP port starts: its readers call the
	// port's handler (shmHandler) from then on.
	if err := cfg.TCPConfig.validate(); err != nil {
		return nil, err
	}
	s := &SHM{cfg: cfg, node: shm.Node(), peers: make(map[uint32]*shmPeer), stop: make(chan struct{}), ready: make(chan struct{})}
	inner := cfg.TCPConfig
	inner.Handler = (*shmHandler)(s)
	t, err := NewTCP(inner)
	if err != nil {
		return nil, err
	}
	s.tcp = t
	close(s.ready)
	return s, nil
}

// Addr returns the TCP listener's address.
func (s *SHM) Addr() string { return s.tcp.Addr() }

// Connect connects to peer over TCP and, if the peer shares this machine,
// moves the connection to shared memory before it returns (see SHM).
func (s *SHM) Connect(ctx context.Context, peer uint32, addr string) error {
	if err := s.tcp.Connect(ctx, peer, addr); err != nil {
		return err
	}
	if s.node == "" {
		return nil
	}
	p := s.slot(peer, true)
	if p == nil {
		return nil // gone already; Sends will say so
	}
	done, err := s.offer(p)
	if err != nil {
		p.tcpOnly.Store(true)
		s.cfg.Logger.Warn("parcel: staying on tcp", "locality", s.cfg.Locality, "peer", peer, "err", err)
		return nil
	}
	wait := time.NewTimer(s.cfg.HandshakeTimeout)
	defer wait.Stop()
	select {
	case <-done:
	case <-ctx.Done():
	case <-wait.C:
		s.cfg.Logger.Warn("parcel: no answer to the shared-memory offer yet; sending on tcp until it comes",
			"locality", s.cfg.Locality, "peer", peer)
	}
	return nil
}

// SharedMemory reports whether parcels to peer travel through shared
// memory now.
func (s *SHM) SharedMemory(peer uint32) bool {
	p := s.slot(peer, false)
	return p != nil && p.onRing.Load()
}

// Polling reports whether a reader of the port is polling now: a ring
// reader spinning on its ring, or a TCP reader polling its socket.
func (s *SHM) Polling() bool { return s.polling.Load() > 0 || s.tcp.Polling() }

// known returns the record of peer id, or nil if it has none yet: a look
// at the peers' view, cheap enough for every Send.
func (s *SHM) known(id uint32) *shmPeer {
	if v := s.view.Load(); v != nil && id < uint32(len(*v)) {
		return (*v)[id]
	}
	return nil
}

// slot returns the record of peer, creating it if create and the TCP port
// knows the peer; nil otherwise.
func (s *SHM) slot(id uint32, create bool) *shmPeer {
	if p := s.known(id); p != nil {
		return p
	}
	if !create {
		return nil
	}
	tp, err := s.tcp.peer(id)
	if err != nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.peers[id]; p != nil {
		return p
	}
	p := &shmPeer{tcp: tp, upgraded: make(chan struct{}), bell: make(chan struct{}, 1)}
	p.init(id)
	s.peers[id] = p
	var n uint32
	for id := range s.peers {
		n = max(n, id+1)
	}
	v := make([]*shmPeer, n)
	for id, q := range s.peers {
		v[id] = q
	}
	s.view.Store(&v)
	return p
}

// Send writes pc to its destination: through the ring once the connection
// to it is upgraded, else over TCP.
func (s *SHM) Send(ctx context.Context, pc *Parcel) error {
	pc.Header.Source = s.cfg.Locality
	p := s.known(pc.Header.Dest)
	if p == nil {
		p = s.slot(pc.Header.Dest, true)
	}
	if p == nil {
		return s.tcp.Send(ctx, pc) // it says why not
	}
	if p.onRing.Load() {
		return s.sendRing(ctx, p, pc)
	}
	if p.tcpOnly.Load() {
		return s.tcp.Send(ctx, pc) // no switch to wait for
	}
	p.sw.RLock()
	if p.onRing.Load() {
		p.sw.RUnlock()
		return s.sendRing(ctx, p, pc)
	}
	err := s.tcp.Send(ctx, pc)
	p.sw.RUnlock()
	return err
}

// Counters reports the traffic with each connected peer: TCP's and the
// ring's together; the port's own control parcels are not counted as
// parcels by the TCP port (their bytes count, as heartbeats' do).
func (s *SHM) Counters() []PeerCounters {
	out := s.tcp.Counters()
	for i := range out {
		p := s.slot(out[i].Peer, false)
		if p == nil {
			continue
		}
		c := &out[i]
		c.ParcelsSent += p.ctr.parcelsSent.Load()
		c.BytesSent += p.ctr.bytesSent.Load()
		c.ParcelsReceived += p.ctr.parcelsRecv.Load()
		c.BytesReceived += p.ctr.bytesRecv.Load()
		c.Writes += p.ctr.writes.Load()
		c.SharedMemory = p.onRing.Load()
	}
	return out
}

// Close writes a goodbye into every ring, closes the TCP port (which says
// goodbye on every connection) and unmaps the segments. It waits for the
// port's goroutines.
func (s *SHM) Close() error {
	if !s.closed.CompareAndSwap(false, true) {
		return nil
	}
	s.mu.Lock()
	peers := make([]*shmPeer, 0, len(s.peers))
	for _, p := range s.peers {
		peers = append(peers, p)
	}
	s.mu.Unlock()
	for _, p := range peers {
		p.closing.Store(true)
	}
	var wg sync.WaitGroup
	for _, p := range peers {
		if p.onRing.Load() {
			wg.Add(1)
			go func() { defer wg.Done(); s.sayGoodbye(p) }()
		}
	}
	wg.Wait()
	err := s.tcp.Close()
	close(s.stop)
	for _, p := range peers {
		if seg := p.segment(); seg != nil {
			seg.rings[0].wakeReader()
			seg.rings[1].wakeReader()
		}
	}
	s.wg.Wait()
	for _, p := range peers {
		p.mu.Lock()
		if p.seg != nil {
			p.seg.close()
			p.seg = nil
		}
		p.mu.Unlock()
	}
	return err
}
