// Package parceltest is the conformance suite of parcelports: Run tests a
// parcel.Parcelport implementation against the behaviour the runtime relies
// on, the way gonum's testblas tests a BLAS implementation. Every transport
// of package parcel runs it from its own test file in one call, and a new
// one (shared memory, UCX) passes it before the runtime may use it:
//
//	func TestMyPortConformance(t *testing.T) {
//		parceltest.Run(t, parceltest.Transport{
//			NewJob: func(t testing.TB) parceltest.Job { ... },
//			Caps:   parceltest.Authenticates | parceltest.Heartbeats | parceltest.FrameLimit,
//		})
//	}
//
// The package tests; it moves no bytes of its own, and it owns no
// transport. A transport describes itself with a Transport value: how to
// start the localities of a fresh job (NewJob, called once per subtest, so
// transports that share a namespace — a registry, shared-memory segments —
// keep each subtest's to itself), optionally how to kill a locality
// (Job.Kill) and how to open an authenticated byte stream to a port
// (Dial), and which optional behaviour it has (Caps). A subtest that needs
// what a transport does not declare is skipped, saying what is missing; none
// is left out silently.
//
// # What a transport must do to pass
//
// Always (every transport):
//
//  1. Deliver every parcel Send accepted, once, with its header (Source set
//     to the sender, Version to parcel.HeaderVersion, Chunks to the chunk
//     lengths) and its chunks intact, between any pair of localities and in
//     both directions over one connection per pair, whoever sends first.
//  2. Keep order: parcels one goroutine sends to one peer arrive in the
//     order sent, with many goroutines and localities sending at once.
//  3. Read every chunk into the memory Handler.Buffer returns for it when
//     that memory has the chunk's length, up to chunks of tens of MiB.
//  4. Count: PeerCounters per connected peer with exact parcel counts
//     (heartbeats not counted), writes counted (at least one, never more
//     than parcels and bytes), at least parcel.FrameHeadLen bytes a parcel,
//     bytes sent that the peer counts as received, nothing left queued once
//     all arrived; and Counters safe to call while parcels flow.
//  5. Refuse, before costing the connection, a parcel a reader would
//     refuse: a kind out of range, a heartbeat (the port's own), more than
//     parcel.MaxArgs bytes of arguments or parcel.MaxChunks chunks.
//  6. Fail a Send to a locality that is not connected, itself included,
//     with a *parcel.PeerError naming it.
//  7. Close as a goodbye: parcels sent before Close arrive, peers see
//     Sends fail with parcel.ErrClosed, never parcel.ErrPeerDown, and are
//     never told the closed locality is down; Close is idempotent, returns
//     while senders are still sending (each of whom gets nil or ErrClosed,
//     and every parcel sent with nil arrives), and after it Send fails with
//     ErrClosed and Connect fails.
//  8. Report a peer that died (Job.Kill, or a byte stream closed without
//     goodbye) through Handler.PeerDown with an error wrapping
//     parcel.ErrPeerDown, deliver what it sent before, and fail Sends to it
//     with ErrPeerDown.
//
// With a byte stream (Transport.Dial):
//
//  9. Refuse hostile frames — a header that does not decode, another
//     header version, an unknown kind, more than parcel.MaxChunks chunks
//     or parcel.MaxArgs bytes of arguments, chunk lengths that do not add
//     up (or wrap around to the body), a header longer than its frame or
//     empty — with a *parcel.FrameError;
//     deliver the frames before the bad one and none after; report the peer
//     down with an error wrapping ErrPeerDown and close the stream.
//  10. Report a peer cut off in the middle of a frame as down ("unexpected
//     EOF"), delivering only the whole frames.
//  11. Not hang Close on a peer that never reads while a Send of 64 MiB is
//     blocked on it; that Send then fails, and nobody is reported down.
//
// With FrameLimit: Send refuses a parcel over Options.MaxFrame with
// parcel.ErrFrameTooLarge and sends one just under it; and (with Dial) a
// frame declaring a body over it is refused before memory is taken for it
// (ErrFrameTooLarge in a *PeerError naming the peer, wrapping ErrPeerDown,
// PeerDown exactly once), and logged to Options.Logger as "oversized".
//
// With Authenticates: a locality with another secret cannot connect (the
// error wraps parcel.ErrHandshake; with Dial, neither can a stream), nobody
// is reported down for it, and the port goes on serving peers that know the
// secret.
//
// With Heartbeats: idle peers stay up for several heartbeat intervals,
// their heartbeats counted as bytes but not as parcels; and (with Dial) a
// peer that reads but says nothing hears heartbeats and is reported down,
// "silent", soon after Options.HeartbeatTimeout.
//
// The suite bounds every wait (10 s, HangLimit) to catch hangs; it asserts
// outcomes, never speed.
package parceltest
