package parcel

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// links is what the socket parcelports (TCP and NBIO) share about their
// connections: the state one lock guards — the peers, the connections in
// their handshake, whether the port is closed — and setting connections
// up: accepting and dialing (retrying refused dials), the handshake under
// a deadline, and the hand-over of each authenticated connection to the
// port as a peer of type P. A port embeds it, so its own code uses mu,
// peers, shaking and closed directly (changing peers or closed under mu,
// then calling publish).
type links[P any] struct {
	mu      sync.Mutex
	peers   map[uint32]P
	shaking map[net.Conn]struct{} // connections in their handshake
	closed  bool
	// view is peers and closed as of the last change, for sends to read
	// without taking mu: nil until the first change.
	view atomic.Pointer[peerView[P]]

	locality uint32
	secret   []byte
	timeout  time.Duration // of a handshake
	logger   *slog.Logger
	listener net.Listener
	wg       *sync.WaitGroup // the port's goroutines

	// reservePeer claims the peer's slot for c once its id is known;
	// releasePeer gives a reserved slot back when the handshake fails after
	// all; startPeer makes the peer live.
	reservePeer func(peer uint32, c net.Conn) (P, error)
	releasePeer func(p P, err error)
	startPeer   func(p P, c net.Conn)
}

// peerView is a copy of a port's peers, by id, and whether it is closed.
type peerView[P any] struct {
	closed bool
	peers  []P
	ok     []bool // peers[id] is connected
}

// publish makes the view of the peers match peers and closed. Callers hold
// l.mu.
func (l *links[P]) publish() {
	v := &peerView[P]{closed: l.closed}
	var n uint32
	for id := range l.peers {
		n = max(n, id+1)
	}
	v.peers, v.ok = make([]P, n), make([]bool, n)
	for id, p := range l.peers {
		v.peers[id], v.ok[id] = p, true
	}
	l.view.Store(v)
}

// peer returns the connected peer id, for a Send to it.
func (l *links[P]) peer(id uint32) (P, error) {
	var none P
	v := l.view.Load()
	switch {
	case v != nil && v.closed:
		return none, ErrClosed
	case v == nil || id >= uint32(len(v.ok)) || !v.ok[id]:
		return none, &PeerError{id, "send", errors.New("not connected")}
	}
	return v.peers[id], nil
}

// isClosed reports whether the port was closed.
func (l *links[P]) isClosed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed
}

// shake records c as being in its handshake, so that Close can cut the
// handshake short instead of waiting for its timeout. It reports false once
// the port is closed.
func (l *links[P]) shake(c net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.shaking[c] = struct{}{}
	return true
}

func (l *links[P]) shaken(c net.Conn) {
	l.mu.Lock()
	delete(l.shaking, c)
	l.mu.Unlock()
}

// closing marks the port closed and returns its peers and the connections
// in their handshake, for Close to say goodbye to and to cut; first is
// false when the port was closed already.
func (l *links[P]) closing() (peers []P, shaking []net.Conn, first bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, nil, false
	}
	l.closed = true
	l.publish()
	peers = make([]P, 0, len(l.peers))
	for _, p := range l.peers {
		peers = append(peers, p)
	}
	shaking = make([]net.Conn, 0, len(l.shaking))
	for c := range l.shaking {
		shaking = append(shaking, c)
	}
	return peers, shaking, true
}

// acceptLoop accepts connections until the listener is closed, each
// handshake on a goroutine of its own. The caller has added it to wg.
func (l *links[P]) acceptLoop() {
	defer l.wg.Done()
	for {
		c, err := l.listener.Accept()
		if err != nil {
			if l.isClosed() || errors.Is(err, net.ErrClosed) {
				return
			}
			l.logger.Warn("parcel: accept failed", "locality", l.locality, "err", err)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			l.accept(c)
		}()
	}
}

// accept runs the accepting side of the handshake on c; a peer that fails
// it is dropped with a log line naming its address.
func (l *links[P]) accept(c net.Conn) {
	if !l.shake(c) {
		c.Close()
		return
	}
	c.SetDeadline(time.Now().Add(l.timeout))
	var reserved P
	got := false
	_, err := acceptHandshake(c, l.locality, l.secret, func(peer uint32) error {
		p, err := l.reservePeer(peer, c)
		reserved, got = p, err == nil
		return err
	})
	l.shaken(c)
	if err != nil {
		if got {
			l.releasePeer(reserved, err)
		}
		l.logger.Warn("parcel: dropped connection that failed the handshake",
			"locality", l.locality, "remote", c.RemoteAddr().String(), "err", err)
		c.Close()
		return
	}
	c.SetDeadline(time.Time{})
	l.startPeer(reserved, c)
}

// connect dials peer at addr, retrying refused connections until ctx
// ends, and runs the handshake.
func (l *links[P]) connect(ctx context.Context, peer uint32, addr string) error {
	var d net.Dialer
	backoff := 10 * time.Millisecond
	for {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			if err = l.dialed(ctx, peer, c); err != nil {
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

// dialed runs the dialing side of the handshake on c, under the handshake
// timeout or ctx's deadline, whichever comes first.
func (l *links[P]) dialed(ctx context.Context, peer uint32, c net.Conn) error {
	deadline := time.Now().Add(l.timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if !l.shake(c) {
		return ErrClosed
	}
	c.SetDeadline(deadline)
	err := dialHandshake(c, l.locality, peer, l.secret)
	l.shaken(c)
	if err != nil {
		return err
	}
	c.SetDeadline(time.Time{})
	p, err := l.reservePeer(peer, c)
	if err != nil {
		return err
	}
	l.startPeer(p, c)
	return nil
}

// admit records the peer that made it through (or is making it through)
// the handshake on c as peer id, made by mk, unless the port is closed, id
// is this locality, or id is connected already. Sends find it from then on.
func (l *links[P]) admit(id uint32, c net.Conn, mk func() P) (P, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var none P
	switch _, dup := l.peers[id]; {
	case l.closed:
		return none, ErrClosed
	case id == l.locality:
		return none, fmt.Errorf("locality %d connected to itself", id)
	case dup:
		return none, fmt.Errorf("locality %d is already connected", id)
	}
	p := mk()
	l.peers[id] = p
	l.publish()
	delete(l.shaking, c) // Close says goodbye to it instead of cutting it
	return p, nil
}

// forget removes p, admitted as peer id, if it is still there.
func (l *links[P]) forget(id uint32, p P) {
	l.mu.Lock()
	if q, ok := l.peers[id]; ok && any(q) == any(p) {
		delete(l.peers, id)
		l.publish()
	}
	l.mu.Unlock()
}
