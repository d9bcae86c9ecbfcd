package runtime

import (
	"context"
	"fmt"
	"sync/atomic"
)

// Reservation is a generation of a communicator taken ahead of its
// operation. Primitives chained on futures need it: they call their
// collective when their inputs are ready, and inputs become ready in
// different orders on different localities, so taking the generation at
// that moment would pair the wrong operations across sites. Reserving when
// the primitive is called — in program order, the same on every site —
// and issuing the operation later on the reservation keeps them matched:
//
//	r, err := c.Reserve() // now, in program order
//	...
//	sum := r.AllReduce(ctx, v, runtime.ReduceSum) // later, once v is known
//
// A reservation is a value the caller holds and passes on: its
// operations are its methods, the same as the Communicator's, and a
// context never carries one. It serves exactly one operation; a second
// fails, and so does one after Cancel.
type Reservation struct {
	c    *Communicator
	gen  uint64
	used atomic.Bool
}

// Reserve takes the communicator's next generation now, for one operation
// issued later through the returned Reservation's methods.
func (c *Communicator) Reserve() (*Reservation, error) {
	gen, err := c.nextGen()
	if err != nil {
		return nil, err
	}
	return &Reservation{c: c, gen: gen}, nil
}

// Generation returns the reserved generation.
func (r *Reservation) Generation() uint64 { return r.gen }

// Communicator returns the communicator the generation belongs to.
func (r *Reservation) Communicator() *Communicator { return r.c }

// take marks the reservation used by an operation and returns its
// generation, or an error if an operation or Cancel used it already.
func (r *Reservation) take() (uint64, error) {
	if !r.used.CompareAndSwap(false, true) {
		return 0, fmt.Errorf("generation %d was reserved for one operation, which was issued or cancelled already", r.gen)
	}
	return r.gen, nil
}

// Cancel gives the reservation up when its operation will never be issued
// (an input failed, say): the generation fails on every site with a
// *MismatchError that says why, so no site waits for this one. It has no
// effect once the operation was issued.
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

// The operations of a reservation are the Communicator's, run in the
// reserved generation; see the Communicator's methods of the same names.

// AllReduce is Communicator.AllReduce in the reserved generation.
func (r *Reservation) AllReduce(ctx context.Context, data []float64, op func(a, b float64) float64) *Future[[]float64] {
	return r.c.allReduce(ctx, r, data, op)
}

// AllGather is Communicator.AllGather in the reserved generation.
func (r *Reservation) AllGather(ctx context.Context, data []float64) *Future[[]float64] {
	return r.c.allGather(ctx, r, data)
}

// Broadcast is Communicator.Broadcast in the reserved generation.
func (r *Reservation) Broadcast(ctx context.Context, data []float64) *Future[[]float64] {
	return r.c.broadcast(ctx, r, data)
}

// Reduce is Communicator.Reduce in the reserved generation.
func (r *Reservation) Reduce(ctx context.Context, data []float64, op func(a, b float64) float64) *Future[[]float64] {
	return r.c.reduce(ctx, r, data, op)
}

// Gather is Communicator.Gather in the reserved generation.
func (r *Reservation) Gather(ctx context.Context, data []float64) *Future[[]float64] {
	return r.c.gather(ctx, r, data)
}

// Scatter is Communicator.Scatter in the reserved generation.
func (r *Reservation) Scatter(ctx context.Context, data []float64) *Future[[]float64] {
	return r.c.scatter(ctx, r, data)
}

// Barrier is Communicator.Barrier in the reserved generation.
func (r *Reservation) Barrier(ctx context.Context) *Future[struct{}] {
	return r.c.barrier(ctx, r)
}

// InclusiveScan is Communicator.InclusiveScan in the reserved generation.
func (r *Reservation) InclusiveScan(ctx context.Context, data []float64, op func(a, b float64) float64) *Future[[]float64] {
	return r.c.inclusiveScan(ctx, r, data, op)
}

// ExclusiveScan is Communicator.ExclusiveScan in the reserved generation.
func (r *Reservation) ExclusiveScan(ctx context.Context, data []float64, init float64, op func(a, b float64) float64) *Future[[]float64] {
	return r.c.exclusiveScan(ctx, r, data, init, op)
}

// AllToAll is Communicator.AllToAll in the reserved generation.
func (r *Reservation) AllToAll(ctx context.Context, data []float64) *Future[[]float64] {
	return r.c.allToAll(ctx, r, data)
}

// AllToAllV is Communicator.AllToAllV in the reserved generation.
func (r *Reservation) AllToAllV(ctx context.Context, blocks [][]float64) *Future[[][]float64] {
	return r.c.allToAllV(ctx, r, blocks)
}
