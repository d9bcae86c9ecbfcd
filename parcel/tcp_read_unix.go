//go:build unix

package parcel

import (
	"net"
	"os"
	"syscall"
	"time"
)

// rawConn returns c's raw descriptor access, or nil if it has none.
func rawConn(c net.Conn) syscall.RawConn {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return raw
}

// readRaw reads frames from raw into d until the connection ends, calling
// deliver for each, and returns why it ended. It reads the descriptor
// itself, inside one RawConn.Read, and when a read comes back short — the
// socket had nothing more then — it waits: in Go's network poller, which a
// new arrival wakes, or first by spinning (spin, the poll progress mode;
// nil: block). A plain Read would read once more first and hear EAGAIN —
// one system call per message that this saves. The price: an end of
// stream that came with the last bytes read is noticed only at the next
// arrival or when the heartbeat timeout passes, so after the peer's
// goodbye (and while closing) the reader reads on to the end instead. Payloads are read straight
// into the memory Handler.Buffer gives, as FrameReader does. The read
// deadline and Close end the wait as they end a Read; the reads that
// returned bytes are counted in p.reads for the port's clock.
func readRaw(raw syscall.RawConn, p *tcpPeer, d *frameDecoder, spin *spinner, deliver func(*Parcel, int64)) error {
	if spin != nil {
		spin.port.readers.Add(1)
		defer spin.port.readers.Add(-1)
	}
	var rerr error
	// A spinning reader is not in the poller, where a deadline would end
	// its wait: it looks at the peer itself.
	over := func(time.Time) bool { return p.usable() != nil || p.silent.Load() }
	err := raw.Read(func(fd uintptr) bool {
		var b []byte
		var direct bool
		var n int
		var err error
		read := func() {
			b, direct = d.space()
			n, err = sysRead(int(fd), b, p.rawReads)
		}
		// The spinner's probe is the next read: the loop takes its result
		// instead of reading again.
		probed := false
		probe := func() bool {
			read()
			probed = err != syscall.EAGAIN
			return probed
		}
		for {
			if !probed {
				read()
			}
			probed = false
			switch {
			case err == syscall.EINTR:
				continue
			case err == syscall.EAGAIN:
				if spin != nil && spin.wait(int(fd), probe, over) {
					continue
				}
				return false
			case err != nil:
				rerr = &net.OpError{Op: "read", Net: "tcp", Source: p.conn.LocalAddr(), Addr: p.conn.RemoteAddr(), Err: os.NewSyscallError("read", err)}
				return true
			case n == 0:
				rerr = d.end()
				return true
			}
			p.reads.Add(1)
			if err := d.feed(n, direct, deliver); err != nil {
				rerr = err
				return true
			}
			if n < len(b) && !p.gotBye.Load() && !p.closing.Load() {
				// Drained: wait for the next arrival. (Once the peer said
				// goodbye, or we are closing, read on: its end of stream
				// may have come with the last bytes, and an end that came
				// before this read wakes no one.)
				if spin != nil && spin.wait(int(fd), probe, over) {
					continue
				}
				return false
			}
		}
	})
	if err != nil {
		return err
	}
	return rerr
}

// write writes b to p's connection: through its descriptor with sysWrite
// (a raw system call up to 64 KiB), waiting in Go's network poller while
// the socket takes nothing; with conn.Write where the connection has no
// descriptor. The caller holds p.wmu.
//
// The write is raw even where reads are told to the scheduler: the round
// trip of 2 localities on 2 cores ran about 8% faster so, in alternating
// rounds on a virtual machine whose idle cores halt (docs/architecture.md).
func (p *tcpPeer) write(b []byte) (int, error) {
	if p.raw == nil {
		return p.conn.Write(b)
	}
	w := &p.rw
	if w.fn == nil {
		w.fn = w.write
	}
	w.b, w.n, w.err = b, 0, nil
	err := p.raw.Write(w.fn)
	n := w.n
	if err == nil {
		err = w.err
	}
	w.b, w.err = nil, nil
	if err != nil {
		return n, &net.OpError{Op: "write", Net: "tcp", Source: p.conn.LocalAddr(), Addr: p.conn.RemoteAddr(), Err: err}
	}
	return n, nil
}

// rawWrite is a raw write in progress: what to write, how much is written,
// and how it failed; fn is its write method as a RawConn.Write callback.
type rawWrite struct {
	b   []byte
	n   int
	err error
	fn  func(fd uintptr) bool
}

// write writes w.b to fd from w.n on; false: the socket takes nothing now.
func (w *rawWrite) write(fd uintptr) bool {
	for w.n < len(w.b) {
		m, err := sysWrite(int(fd), w.b[w.n:])
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return false // wait until the socket takes more
		case err != nil:
			w.err = os.NewSyscallError("write", err)
			return true
		}
		w.n += m
	}
	return true
}
