package runtime

import (
	"context"
	"unsafe"

	"github.com/tessera-amt/tessera/parcel"
)

// The receiving side's path of a direct call and of a reply when the
// parcelport reuses a parcel's memory for the next one it reads
// (parcel.Recycler). A reply: what the runtime keeps of it — the small
// chunks the port read into the parcel's own room, which a []byte or
// []float64 result is a view of — is copied into memory of the call's own
// (smallRoom), so that the parcel itself is free once ReceiveOnce
// returns. A direct call run on the reader keeps nothing past the action's
// return (RegisterDirect's contract): its arguments are views of the
// parcel, and its serving — the task, the reply's parcel — is kept in its
// action's entry for the next call. A round trip of a direct action then
// allocates the caller's future with its room, and nothing else.

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
		e := rt.sched.lastDirect.Load().entry(p.Header.Action)
		if e == nil {
			if e = rt.reg.lookup(p.Header.Action); e == nil || !e.direct {
				rt.serve(p)
				return true
			}
			rt.sched.lastDirect.Store(&directName{p.Header.Action, e})
		}
		rt.served.Add(1)
		ds := e.spare.Swap(nil)
		if ds == nil {
			ds = new(directServing)
		}
		ds.serving = serving{rt: rt, call: p, e: e}
		ds.t.job = ds
		if rt.sched.runHere(&ds.t, rt.ctx, p.Header.Parent, e.name) {
			// Run and answered: nothing reads the parcel or the serving
			// again, and the next call of the action takes the serving.
			ds.serving = serving{}
			e.spare.Store(ds)
			return false
		}
		// Every lane is busy: it runs as a task later, and the parcel is
		// kept until then.
		rt.sched.submit(&ds.t, rt.ctx, p.Header.Parent, e.name)
		return true
	}
	ph.Receive(p)
	return true
}

// directName is a direct action's entry under the name a call carried.
// The port interns action names, so the next call of the action carries
// the same string: entry compares its bytes' address, not the bytes.
// Entries never change once registered.
type directName struct {
	name string
	e    *actionEntry
}

// entry returns the entry of the action named name if d is its, else nil.
func (d *directName) entry(name string) *actionEntry {
	if d == nil || len(d.name) != len(name) || unsafe.StringData(d.name) != unsafe.StringData(name) {
		return nil
	}
	return d.e
}

// directServing is a direct call served on the reader, with the parcel of
// its reply: after the call ran on the reader it serves the action's next
// call (actionEntry.spare), so a direct call costs no allocation.
type directServing struct {
	serving
	out outParcel
}

// run is the task: serving.run with the reply in ds's own parcel rather
// than one from the locality's pool.
func (ds *directServing) run(ctx context.Context) {
	ds.reply(ctx, &ds.out)
	// Keep none of the result's memory alive (a port's Send is done with
	// the parcel once it returns).
	ds.out.p = parcel.Parcel{}
	ds.out.chunks = [2][]byte{}
}

// ownedChunks is how many chunks of a parcel a call or a reply copies
// into its own memory: the parcels of more are kept.
const ownedChunks = 2

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
