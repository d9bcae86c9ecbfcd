package parcel

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"
)

// links sets up the connections of a socket parcelport (TCP and NBIO share
// it): it accepts and dials (retrying refused dials), runs the handshake
// under a deadline, and hands each authenticated connection to the port as
// a peer of type P. The port keeps its own state and lock; links reaches
// them through the functions below.
type links[P any] struct {
	locality uint32
	secret   []byte
	timeout  time.Duration // of a handshake
	logger   *slog.Logger
	listener net.Listener
	wg       *sync.WaitGroup // the port's goroutines

	closed func() bool // the port is closed
	// shake records c as in its handshake, so that the port's Close can
	// cut it short; false once the port is closed. shaken forgets it.
	shake  func(c net.Conn) bool
	shaken func(c net.Conn)
	// reserve claims the peer's slot for c once its id is known; release
	// gives a reserved slot back when the handshake fails after all;
	// start makes the peer live.
	reserve func(peer uint32, c net.Conn) (P, error)
	release func(p P, err error)
	start   func(p P, c net.Conn)
}

// acceptLoop accepts connections until the listener is closed, each
// handshake on a goroutine of its own. The caller has added it to wg.
func (l *links[P]) acceptLoop() {
	defer l.wg.Done()
	for {
		c, err := l.listener.Accept()
		if err != nil {
			if l.closed() || errors.Is(err, net.ErrClosed) {
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
		p, err := l.reserve(peer, c)
		reserved, got = p, err == nil
		return err
	})
	l.shaken(c)
	if err != nil {
		if got {
			l.release(reserved, err)
		}
		l.logger.Warn("parcel: dropped connection that failed the handshake",
			"locality", l.locality, "remote", c.RemoteAddr().String(), "err", err)
		c.Close()
		return
	}
	c.SetDeadline(time.Time{})
	l.start(reserved, c)
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
	p, err := l.reserve(peer, c)
	if err != nil {
		return err
	}
	l.start(p, c)
	return nil
}
