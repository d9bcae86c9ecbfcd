package runtime

import (
	"context"
	"sync/atomic"
)

// Reservation is a generation of a communicator taken ahead of its
// operation. Primitives chained on futures need it: they call their
// collective when their inputs are ready, and inputs become ready in
// different orders on different localities, so taking the generation at
// that moment would pair the wrong operations across sites. Reserving when
// the primitive is called — in program order, the same on every site —
// and issuing the operation later with the reservation keeps them matched.
type Reservation struct {
	c    *Communicator
	gen  uint64
	used atomic.Bool
}

type reservationKey struct{}

// Reserve takes the communicator's next generation now for one operation
// issued later, with a context from Reservation.Context.
func (c *Communicator) Reserve() (*Reservation, error) {
	gen, err := c.nextGen()
	if err != nil {
		return nil, err
	}
	return &Reservation{c: c, gen: gen}, nil
}

// Generation returns the reserved generation.
func (r *Reservation) Generation() uint64 { return r.gen }

// Context returns ctx carrying the reservation: the first operation on the
// reservation's communicator called with it (or a context derived from it)
// runs in the reserved generation; later ones take new generations as
// usual.
func (r *Reservation) Context(ctx context.Context) context.Context {
	return context.WithValue(ctx, reservationKey{}, r)
}

// Cancel gives the reservation up when its operation will never be issued
// (an input failed, say): the generation fails on every site with a
// *MismatchError that says why, so no site waits for this one.
func (r *Reservation) Cancel(reason error) {
	if !r.used.CompareAndSwap(false, true) {
		return
	}
	c := r.c
	call := CollectiveCall{Site: c.here, Locality: c.rt.here, Op: "nothing (cancelled: " + reason.Error() + ")", Count: -1}
	e := &MismatchError{Basename: c.name, Generation: r.gen, Calls: [2]CollectiveCall{call, call}}
	run := &opRun{c: c, gen: r.gen}
	run.abort(e)
}

// reservedGen returns the generation reserved in ctx for c, if one is
// there and unused, and marks it used.
func reservedGen(ctx context.Context, c *Communicator) (uint64, bool) {
	r, ok := ctx.Value(reservationKey{}).(*Reservation)
	if !ok || r.c != c || !r.used.CompareAndSwap(false, true) {
		return 0, false
	}
	return r.gen, true
}
