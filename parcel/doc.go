// Package parcel is the wire of Tessera: it moves parcels — active messages —
// between localities and knows nothing about what they mean.
//
// A parcel is a versioned Header, encoded with msgp, followed by zero or more
// raw payload chunks. Chunks are never encoded element by element: a tile of
// float64 is sent as its little-endian bytes with one writev and read straight
// into memory the receiver provides (Handler.Buffer), so the bytes cross the
// wire once and are copied by nobody.
//
// A Parcelport carries parcels between the localities of one job. Five
// implementations live here:
//
//   - TCP (the default): Go's net package, one connection per pair of
//     localities, a writer goroutine per peer with a bounded queue, senders
//     that write for each other while they hold the connection (small
//     parcels queued together go out in one writev), heartbeats, and a
//     handshake in which both sides prove they know the job secret before a
//     single parcel is decoded. Its readers block in Go's network poller,
//     or, with TCPConfig.PollFor, poll their connection for a while first.
//   - NBIO: the same handshake, frames and heartbeats over
//     github.com/lesismal/nbio's event loop — one poller goroutine per port
//     reads every connection, decoding frames as bytes arrive and reading
//     chunks straight into Handler.Buffer memory. nbio's writes never
//     block, so the port bounds what nbio holds unsent per peer (a window)
//     and Send waits while it is full. Chosen by TESSERA_PARCELPORT=nbio.
//   - SHM: the TCP port, whose connections to localities on the same
//     machine move, after the handshake, to a pair of rings in a memfd
//     segment the dialer offers over the authenticated connection (checked
//     by a token written into it); frames go through the same decoder, and
//     a reader spins briefly, then sleeps on a futex. TCP stays underneath
//     for heartbeats and for peers on other machines. Chosen by
//     TESSERA_PARCELPORT=shm (NewSHM has the detail).
//   - UCX (build tag ucx, cgo over libucp): parcels as UCX active
//     messages, eager or rendezvous as UCX chooses, beside a TCP port that
//     keeps the handshake, heartbeats and goodbye and carries the worker
//     addresses; received frames go through the same decoder. UCX picks
//     its transport (UCX_TLS: tcp, shared memory, verbs). Chosen by
//     TESSERA_PARCELPORT=ucx; without the tag NewUCX says how to build it.
//   - Inproc: N localities inside one process, used by unit tests. It copies
//     chunks through Handler.Buffer exactly like the TCP port does, and it can
//     kill or disconnect localities so failure handling is testable without
//     sockets.
//
// The package does not own actions, futures, tasks or names: the runtime
// package gives a parcel its meaning, agas gives objects their names.
//
// Every parcelport passes one conformance suite, package parceltest:
// ordering, large payloads, counters, Close as a goodbye and Close while
// sending, dead peers, and — where the transport has them — hostile and
// truncated frames, the frame limit, a wrong secret, heartbeats and
// silent peers. TCP (blocking, polling, raw reads), NBIO and Inproc each
// run it from their own test file in one call (*_conformance_test.go),
// declaring what they can do; a new transport (shared memory, UCX) passes
// it too. What only one transport does is tested in its own test files.
//
// # Wire format
//
// Every frame on a connection is
//
//	u64 body length (little endian)   header length + sum of chunk lengths
//	u32 header length (little endian)
//	header                            msgp tuple, first element the version
//	chunk 0 .. chunk k-1              raw bytes, lengths listed in the header
//
// A frame whose body length exceeds the configured maximum is refused before
// anything is allocated for it; a frame whose header does not decode, or whose
// chunk lengths do not add up to the body length, closes the connection.
//
// One codec knows this layout. AppendFrameHead writes it (every port's
// writers use it), and one decoder reads it: a state machine without I/O
// (frame_decoder.go) that is fed the bytes each read brings, keeps its
// place between reads, and hands back the frames they complete, reading a
// chunk straight into its Handler.Buffer memory once the bytes before it
// are consumed. Every check of a peer's bytes is made there, in order and
// before memory is taken for what they declare: the body against MaxFrame,
// the header length (not zero, at most MaxHeader, within the body), the
// header (version first, then every length in it against the bytes there,
// at most MaxChunks chunks and MaxArgs bytes of arguments), the chunk
// lengths (each within the rest of the body, together exactly the body,
// subtracted so that hostile lengths cannot wrap), and an end of stream
// inside a frame. TCP's raw reader and nbio's event loop feed it what their
// reads return; FrameReader is the same decoder as a blocking loop over an
// io.Reader (TCP's reader where the connection has no descriptor, and tools
// and tests). Receiving a parcel costs one allocation, which holds its
// small arguments and chunk list and up to SmallChunks bytes of chunks the
// handler gives no memory for; only larger chunks of that kind cost more.
//
// Caller's duties: Handler.Receive is called on the port's reader goroutine,
// one parcel at a time per peer, in the order that peer sent them; it must
// hand work off instead of blocking. Send blocks until the parcel has been
// written (or failed), so the caller may reuse the chunk memory once it
// returns.
package parcel
