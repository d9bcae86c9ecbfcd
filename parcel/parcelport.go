package parcel

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
)

// Parcelport carries parcels between the localities of one job.
//
// Send is safe for concurrent use. Parcels that one goroutine sends to one
// peer arrive in the order they were sent.
type Parcelport interface {
	// Addr is the address other localities Connect to to reach this one.
	Addr() string
	// Connect opens the connection to peer, listening at addr, and
	// authenticates both ends. Only the locality with the higher id
	// connects; the other side learns of the peer when it accepts.
	Connect(ctx context.Context, peer uint32, addr string) error
	// Send writes p to p.Header.Dest. It blocks while the peer's queue is
	// full and returns once the parcel is written or has failed; then the
	// caller may reuse p and its chunks (the port keeps neither).
	Send(ctx context.Context, p *Parcel) error
	// Counters reports the traffic with each peer connected so far.
	Counters() []PeerCounters
	// Close says goodbye to every peer, so they do not report this locality
	// as lost, and releases the connections and the listener. It waits for
	// the port's goroutines, so a Handler method must not call it.
	Close() error
}

// Handler receives what a parcelport reads. Its methods are called from the
// port's reader goroutines; for one peer they are called one at a time.
type Handler interface {
	// Buffer returns the memory chunk i of the parcel headed by h, n bytes
	// long, is read into, or nil to let the port allocate.
	Buffer(h *Header, i int, n int) []byte
	// Receive is given every parcel but heartbeats. It must not block.
	Receive(p *Parcel)
	// PeerDown reports, once per peer, that its connection is lost: closed
	// without a goodbye, silent past the heartbeat timeout, or sending
	// garbage. err names the peer and the cause, and wraps ErrPeerDown.
	PeerDown(peer uint32, err error)
}

// PeerCounters is the traffic with one peer. Parcels are those of Send and
// Receive; the port's own heartbeats are not counted. Bytes count whole
// frames, heartbeats included.
type PeerCounters struct {
	Peer            uint32
	ParcelsSent     uint64
	BytesSent       uint64
	ParcelsReceived uint64
	BytesReceived   uint64
	QueueLen        int    // parcels waiting for the writer now
	Writes          uint64 // write system calls (a batch of parcels is one)
	SharedMemory    bool   // the peer's parcels travel through shared memory (the SHM port)
}

// ErrPeerDown is wrapped by errors about a peer that is gone.
var ErrPeerDown = errors.New("locality down")

// ErrClosed is returned by Send after Close.
var ErrClosed = errors.New("parcel: parcelport closed")

// PeerError names the peer a send or a connection failed with.
type PeerError struct {
	Locality uint32 // the peer, not this locality
	Op       string // "send", "connect", "read", "handshake", ...
	Err      error
}

func (e *PeerError) Error() string {
	return fmt.Sprintf("parcel: %s locality %d: %v", e.Op, e.Locality, e.Err)
}

// Unwrap returns the cause.
func (e *PeerError) Unwrap() error { return e.Err }

// counters are the atomics behind PeerCounters.
type counters struct {
	parcelsSent, bytesSent, parcelsRecv, bytesRecv, writes atomic.Uint64
}

func (c *counters) snapshot(peer uint32, queued int) PeerCounters {
	return PeerCounters{
		Peer:            peer,
		ParcelsSent:     c.parcelsSent.Load(),
		BytesSent:       c.bytesSent.Load(),
		ParcelsReceived: c.parcelsRecv.Load(),
		BytesReceived:   c.bytesRecv.Load(),
		QueueLen:        queued,
		Writes:          c.writes.Load(),
	}
}
