package parcel

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// peerState is what both socket ports keep of a connected peer's life: who
// it is, whether it said goodbye or this side is closing, and whether — and
// why — its connection is down. A port's peer type embeds it.
type peerState struct {
	id      uint32
	gotBye  atomic.Bool // the peer said goodbye: its EOF is no failure
	closing atomic.Bool // we are closing: errors are expected

	downOnce sync.Once
	down     chan struct{} // closed when the connection is gone
	// gone is set just before down is closed: usable looks at it, and at
	// closing and gotBye, rather than selecting on down for every send.
	gone    atomic.Bool
	downErr error // why; set before down is closed

	ctr counters
}

func (s *peerState) init(id uint32) {
	s.id = id
	s.down = make(chan struct{})
}

// portVerbPrefix begins the actions of the control parcels a port sends
// for itself through the port underneath it (the shm port's upgrade and
// doorbells over tcp).
const portVerbPrefix = "parcel/"

// counted says whether a parcel with header h counts in the parcel
// counters: heartbeats and a port's own control parcels do not (their
// bytes do). Counting them where they are written and read, not by a
// subtraction above, keeps one in flight out of the figures.
func counted(h *Header) bool {
	if h.Kind == KindHeartbeat {
		return false
	}
	return h.Kind != KindControl || !strings.HasPrefix(h.Action, portVerbPrefix)
}

// received counts the frame of pc, wire bytes long, read from the peer and
// hands pc to h unless it is the port's own (a heartbeat, the goodbye) or
// the connection is closing. It reports whether h got pc.
func (s *peerState) received(pc *Parcel, wire int64, h Handler) bool {
	s.ctr.bytesRecv.Add(uint64(wire))
	if pc.Header.Kind == KindHeartbeat {
		if pc.Header.Action == byeVerb {
			s.gotBye.Store(true)
		}
		return false
	}
	if counted(&pc.Header) {
		s.ctr.parcelsRecv.Add(1)
	}
	if s.closing.Load() {
		return false // draining the connection; nobody is listening
	}
	h.Receive(pc)
	return true
}

// usable returns nil while parcels may be written to the peer.
func (s *peerState) usable() error {
	if !s.gone.Load() && !s.closing.Load() && !s.gotBye.Load() {
		return nil // three loads where a select costs tens of instructions
	}
	select {
	case <-s.down:
		return s.downErr
	default:
	}
	if s.closing.Load() || s.gotBye.Load() {
		return &PeerError{s.id, "send", ErrClosed}
	}
	return nil
}

// markDown marks the peer down with err once: it closes the connection
// (closeConn) and, unless the loss was expected, reports it (report).
func (s *peerState) markDown(err error, closeConn func(), report func(peer uint32, err error)) {
	s.downOnce.Do(func() {
		expected := s.closing.Load() || s.gotBye.Load()
		if expected {
			err = &PeerError{s.id, "send", ErrClosed}
		}
		s.downErr = err
		s.gone.Store(true)
		close(s.down)
		closeConn()
		if !expected {
			report(s.id, err)
		}
	})
}

// abandon marks down a peer whose handshake failed after it was reserved.
func (s *peerState) abandon(err error) {
	s.downOnce.Do(func() {
		s.downErr = &PeerError{s.id, "connect", err}
		s.gone.Store(true)
		close(s.down)
	})
}

// readError says why reading from the peer failed. Every cause wraps
// ErrPeerDown: after it the connection is gone. silence is the heartbeat
// timeout that a read deadline stands for; an oversized frame is logged.
func (s *peerState) readError(err error, silence time.Duration, logger *slog.Logger, locality uint32) error {
	var ne net.Error
	switch {
	case s.gotBye.Load() || s.closing.Load():
		return err // expected; markDown replaces it
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%w: connection closed without goodbye (%v)", ErrPeerDown, err)
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("%w: silent for %v (no heartbeat)", ErrPeerDown, silence)
	case errors.Is(err, ErrFrameTooLarge):
		logger.Error("parcel: refused oversized frame", "locality", locality, "peer", s.id, "err", err)
	}
	return fmt.Errorf("%w: %w", ErrPeerDown, err)
}

// heartbeatPeriod is the period of a socket port's heartbeat clock: often
// enough to send a heartbeat before interval has passed by much, and to
// find a silent peer at most a quarter of timeout late.
func heartbeatPeriod(interval, timeout time.Duration) time.Duration {
	return max(min(interval/2, timeout/4), time.Millisecond)
}
