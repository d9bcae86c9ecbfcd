package runtime

import (
	"github.com/tessera-amt/tessera/parcel"
)

// The receiving side's path of a direct call and of a reply when the
// parcelport reuses a parcel's memory for the next one it reads
// (parcel.Recycler): what the runtime keeps of such a parcel — the small
// chunks the port read into the parcel's own room, which a []byte or
// []float64 argument or result is a view of — is copied into memory of
// the call's own (smallRoom), so that the parcel itself is free once
// ReceiveOnce returns. A round trip of a direct action then allocates the
// caller's future and the callee's serving, each with its room, and
// nothing for the parcels.

// ReceiveOnce implements parcel.Recycler: replies and the direct calls
// that run on the reader keep nothing of their parcel; other parcels go
// to Receive and are kept.
func (ph *portHandler) ReceiveOnce(p *parcel.Parcel) bool {
	rt := (*Runtime)(ph)
	switch p.Header.Kind {
	case parcel.KindReply:
		ph.Receive(p) // remoteCall.reply copies what it keeps of up to 2 chunks
		return len(p.Chunks) > ownedChunks
	case parcel.KindCall:
		e := rt.reg.lookup(p.Header.Action)
		if e == nil || !e.direct || len(p.Chunks) > ownedChunks {
			rt.serve(p)
			return true
		}
		rt.served.Add(1)
		ds := &directServing{}
		ds.serving = serving{rt: rt, call: p, e: e}
		if len(p.Chunks) > 0 {
			p.Chunks = ds.room.own(ds.chunks[:0], p.Chunks, nil)
		}
		ds.t.job = &ds.serving
		if rt.sched.runHere(&ds.t, rt.ctx, p.Header.Parent, e.name) {
			ds.call = nil // run and answered: nothing reads the parcel again
			return false
		}
		rt.sched.submit(&ds.t, rt.ctx, p.Header.Parent, e.name)
		return true
	}
	ph.Receive(p)
	return true
}

// ownedChunks is how many chunks of a parcel a call or a reply copies
// into its own memory: the parcels of more are kept.
const ownedChunks = 2

// directServing is a direct call served on the reader, with room for its
// small chunks.
type directServing struct {
	serving
	room   smallRoom
	chunks [ownedChunks][]byte
}

// smallRoom is memory of a call's own for the small chunks of a parcel
// (up to parcel.SmallChunks bytes in all, each 8-byte aligned), which
// the port may have read into the parcel's own room.
type smallRoom struct {
	mem  [parcel.SmallChunks / 8]float64
	used int
}

// own appends to dst each of chunks, copying those of up to
// parcel.SmallChunks bytes into r while it has room (a copy in fresh
// memory once it has not), except chunk i that is the caller's bufs[i]
// (AsyncInto: the reply was read into it). Larger chunks are the
// handler's Buffer memory, owned already.
func (r *smallRoom) own(dst [][]byte, chunks, bufs [][]byte) [][]byte {
	for i, c := range chunks {
		switch {
		case len(c) == 0 || len(c) > parcel.SmallChunks:
		case i < len(bufs) && len(bufs[i]) == len(c) && &bufs[i][0] == &c[0]:
		case len(c) <= parcel.SmallChunks-r.used:
			m := parcel.Float64Bytes(r.mem[:])[r.used : r.used+len(c) : r.used+len(c)]
			copy(m, c)
			r.used += (len(c) + 7) &^ 7
			c = m
		default:
			c = append([]byte(nil), c...)
		}
		dst = append(dst, c)
	}
	return dst
}
