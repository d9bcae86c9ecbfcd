package parcel

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
)

// The upgrade of a TCP connection to shared memory (see SHM): control
// parcels on the TCP connection whose verbs start with shmVerbPrefix, which
// the port consumes; handlers never see them.
const (
	shmVerbPrefix = portVerbPrefix + "shm-"
	shmOfferVerb  = shmVerbPrefix + "offer"  // dialer: here is a segment
	shmAcceptVerb = shmVerbPrefix + "accept" // acceptor: mapped; my parcels come on ring 1 now
	shmRefuseVerb = shmVerbPrefix + "refuse" // acceptor: staying on tcp (Error says why)
	shmSwitchVerb = shmVerbPrefix + "switch" // dialer: my parcels come on ring 0 now
	shmBellVerb   = shmVerbPrefix + "bell"   // either: your ring reader sleeps and there is data
)

// errTokenMismatch: the segment a peer offered does not hold the token the
// offer carried.
var errTokenMismatch = errors.New("the segment does not hold the offered token")

// shmPeer is what the port keeps of a peer besides its TCP connection:
// the ring state (peerState counts the ring's traffic, and its down is
// the ring's end), the switch, and the upgrade.
type shmPeer struct {
	peerState
	tcp *tcpPeer

	// sw is held shared by TCP senders and exclusively by the switch to
	// the ring, after which onRing holds: no parcel follows the marker on
	// TCP.
	sw     sync.RWMutex
	onRing atomic.Bool

	mu       sync.Mutex   // guards seg, out, in until the readers and writers take them
	seg      *ringSegment // this process's mapping; nil until offered (dialer) or mapped (acceptor)
	out, in  *ring
	upgraded chan struct{} // the dialer's: closed once switched or refused
	bell     chan struct{} // a doorbell parcel came (SHM.publish); buffered, 1
	once     sync.Once     // closes upgraded

	wmu     sync.Mutex // one writer of out at a time
	scratch []byte     // frame heads; guarded by wmu

	tcpOnly  atomic.Bool            // the upgrade was refused: no switch will come
	reading  atomic.Bool            // the ring reader runs: it reports the peer down
	rx       atomic.Pointer[ringRx] // the ring's reading side, shared with SHM.Poll; set by the reader
	abort    atomic.Bool            // Close gave up waiting: writers stop where they are
	ctrlSent atomic.Uint64          // the port's own control parcels sent (tests)
}

func (p *shmPeer) segment() *ringSegment {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seg
}

func (p *shmPeer) upgradeDone() { p.once.Do(func() { close(p.upgraded) }) }

// shmOffer is the dialer's offer of a segment.
type shmOffer struct {
	node      string
	pid, fd   int32
	ino       uint64
	ringBytes uint64
	token     [ringTokenLen]byte
}

func (o *shmOffer) marshal() []byte {
	b := binary.LittleEndian.AppendUint16(nil, uint16(len(o.node)))
	b = append(b, o.node...)
	b = binary.LittleEndian.AppendUint32(b, uint32(o.pid))
	b = binary.LittleEndian.AppendUint32(b, uint32(o.fd))
	b = binary.LittleEndian.AppendUint64(b, o.ino)
	b = binary.LittleEndian.AppendUint64(b, o.ringBytes)
	return append(b, o.token[:]...)
}

func (o *shmOffer) unmarshal(b []byte) error {
	if len(b) < 2 {
		return errors.New("offer too short")
	}
	n := int(binary.LittleEndian.Uint16(b))
	b = b[2:]
	if len(b) != n+4+4+8+8+ringTokenLen {
		return fmt.Errorf("offer of %d bytes after a node name of %d", len(b), n)
	}
	o.node, b = string(b[:n]), b[n:]
	o.pid, o.fd = int32(binary.LittleEndian.Uint32(b)), int32(binary.LittleEndian.Uint32(b[4:]))
	o.ino, o.ringBytes = binary.LittleEndian.Uint64(b[8:]), binary.LittleEndian.Uint64(b[16:])
	copy(o.token[:], b[24:])
	return nil
}

// control sends a control parcel of the upgrade to p over TCP.
func (s *SHM) control(p *shmPeer, verb, why string, args []byte) error {
	pc := &Parcel{Header: Header{Kind: KindControl, Dest: p.id, Action: verb, Error: why, Args: args}}
	err := s.tcp.Send(context.Background(), pc)
	if err == nil {
		p.ctrlSent.Add(1)
	}
	return err
}

// offer creates p's segment and offers it; the returned channel is closed
// once the dialer has switched, or the offer was refused.
func (s *SHM) offer(p *shmPeer) (<-chan struct{}, error) {
	var o shmOffer
	rand.Read(o.token[:])
	seg, err := newRingSegment(uint64(s.cfg.RingBytes), o.token[:])
	if err != nil {
		return nil, err
	}
	o.node, o.pid, o.fd, o.ino, o.ringBytes = s.node, seg.reg.PID, seg.reg.FD, seg.reg.Ino, seg.size
	if s.offerHook != nil {
		s.offerHook(&o, seg.reg.Mem)
	}
	p.mu.Lock()
	if p.seg != nil || s.closed.Load() {
		p.mu.Unlock()
		seg.close()
		return nil, errors.New("offered twice, or closing")
	}
	p.seg = seg
	p.mu.Unlock()
	if err := s.control(p, shmOfferVerb, "", o.marshal()); err != nil {
		return nil, err
	}
	return p.upgraded, nil
}

// shmHandler is the Handler of the TCP port under an SHM port: it takes
// the upgrade's control parcels and passes everything else on.
type shmHandler SHM

func (h *shmHandler) Buffer(hd *Header, i int, n int) []byte { return h.cfg.Handler.Buffer(hd, i, n) }

func (h *shmHandler) Receive(pc *Parcel) {
	s := (*SHM)(h)
	<-s.ready
	if pc.Header.Kind != KindControl || !strings.HasPrefix(pc.Header.Action, shmVerbPrefix) {
		s.cfg.Handler.Receive(pc)
		return
	}
	p := s.slot(pc.Header.Source, true)
	if p == nil {
		return
	}
	switch pc.Header.Action {
	case shmOfferVerb:
		// Mapping and answering may block: not on the reader.
		s.wg.Add(1)
		go func() { defer s.wg.Done(); s.accept(p, pc.Header.Args) }()
	case shmAcceptVerb:
		// Every parcel the acceptor sent on TCP has been delivered: read
		// its ring from now on, then switch our side.
		p.mu.Lock()
		seg := p.seg
		if seg != nil {
			p.out, p.in = &seg.rings[0], &seg.rings[1]
		}
		p.mu.Unlock()
		if seg == nil {
			s.cfg.Logger.Error("parcel: accept of a shared-memory offer never made", "locality", s.cfg.Locality, "peer", p.id)
			return
		}
		s.startReader(p)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer p.upgradeDone()
			s.switchToRing(p, shmSwitchVerb)
		}()
	case shmRefuseVerb:
		p.tcpOnly.Store(true)
		s.cfg.Logger.Info("parcel: peer stays on tcp", "locality", s.cfg.Locality, "peer", p.id, "reason", pc.Header.Error)
		p.mu.Lock()
		if p.seg != nil {
			p.seg.close()
			p.seg = nil
		}
		p.mu.Unlock()
		p.upgradeDone()
	case shmSwitchVerb:
		s.startReader(p)
	case shmBellVerb:
		select {
		case p.bell <- struct{}{}:
		default: // rung already
		}
	}
}

func (h *shmHandler) PeerDown(peer uint32, err error) {
	s := (*SHM)(h)
	<-s.ready
	p := s.slot(peer, false)
	if p == nil {
		s.cfg.Handler.PeerDown(peer, err)
		return
	}
	p.upgradeDone()
	if p.reading.Load() {
		return // the ring reader drains the ring, then reports
	}
	p.markDown(err, func() { p.wakeWriter() }, s.cfg.Handler.PeerDown)
}

// accept answers an offer from p: the acceptor maps the segment, checks
// it and switches to ring 1; or refuses, and p stays on TCP.
func (s *SHM) accept(p *shmPeer, args []byte) {
	var o shmOffer
	var err error
	if err = o.unmarshal(args); err == nil && (o.node != s.node || s.node == "") {
		p.tcpOnly.Store(true)
		s.control(p, shmRefuseVerb, "another node", nil)
		return
	}
	var seg *ringSegment
	if err == nil {
		seg, err = mapRingSegment(&o)
	}
	if err == nil {
		p.mu.Lock()
		if p.seg != nil || s.closed.Load() {
			err = errors.New("a segment was offered twice, or the port is closing")
		} else {
			p.seg, p.out, p.in = seg, &seg.rings[1], &seg.rings[0]
		}
		p.mu.Unlock()
		if err != nil {
			seg.close()
		}
	}
	if err != nil {
		s.cfg.Logger.Warn("parcel: peer claims this node but its shared-memory segment is refused; staying on tcp",
			"locality", s.cfg.Locality, "peer", p.id, "err", err)
		p.tcpOnly.Store(true)
		s.control(p, shmRefuseVerb, err.Error(), nil)
		return
	}
	s.switchToRing(p, shmAcceptVerb)
}

// switchToRing sends the marker verb on TCP and moves p's Sends to the
// ring, waiting for the TCP Sends in flight first.
func (s *SHM) switchToRing(p *shmPeer, verb string) {
	p.sw.Lock()
	defer p.sw.Unlock()
	if err := s.control(p, verb, "", nil); err != nil {
		return // the connection is down or closing: so is the peer
	}
	p.onRing.Store(true)
}

// startReader starts the ring reader of p and the watcher of its TCP
// connection.
func (s *SHM) startReader(p *shmPeer) {
	p.mu.Lock()
	in := p.in
	p.mu.Unlock()
	if in == nil || p.reading.Swap(true) {
		return
	}
	s.wg.Add(2)
	go func() { defer s.wg.Done(); s.readRing(p, in) }()
	go func() {
		defer s.wg.Done()
		select {
		case <-p.tcp.down:
		case <-p.down:
		case <-s.stop:
		}
		in.wakeReader()
		p.wakeWriter()
	}()
}

// wakeWriter wakes a writer of p waiting for room, to look at why it
// should stop.
func (p *shmPeer) wakeWriter() {
	p.mu.Lock()
	out := p.out
	p.mu.Unlock()
	if out != nil {
		out.wakeWriter()
	}
}
