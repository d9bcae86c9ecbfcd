package runtime

import (
	"context"

	"github.com/tessera-amt/tessera/runtime/internal/collective"
)

// Rooted operations: Broadcast, Reduce, Gather and Scatter, along binomial
// trees rooted at the communicator's root (runtime/internal/collective).
// Their runs see the sites by rank relative to the root (rootedRun).

// Broadcast gives every site the root's data; the others may pass nil.
// The data goes down a binomial tree (ceil(log2 p) rounds). A
// bandwidth-optimal variant — the tree scatters one segment to each site
// and a ring all-gather completes them (van de Geijn) — is implemented but
// off: on one node it was slower than the tree. The non-roots learn the
// size, and so the algorithm, from the first message they get.
func (c *Communicator) Broadcast(ctx context.Context, data []float64) *Future[[]float64] {
	return c.broadcast(ctx, nil, data)
}

// broadcast is Broadcast in res's generation, or in the next one when res is nil.
func (c *Communicator) broadcast(ctx context.Context, res *Reservation, data []float64) *Future[[]float64] {
	count := anyCount
	if c.here == c.root {
		count = uint64(len(data))
	}
	ringFrom := c.bcastRingFrom
	return startOp(ctx, c, res, opBroadcast, count, anyCount, func(r *opRun) ([]float64, error) {
		if v, ok, err := r.nodeBroadcast(data, ringFrom); ok {
			return v, err
		}
		return collective.Broadcast(rootedRun{r}, data, ringFrom)
	})
}

// Reduce combines data element-wise over all sites with op, along a
// binomial tree towards the root. The root's future holds the result, the
// others' nil.
func (c *Communicator) Reduce(ctx context.Context, data []float64, op func(a, b float64) float64) *Future[[]float64] {
	return c.reduce(ctx, nil, data, op)
}

// reduce is Reduce in res's generation, or in the next one when res is nil.
func (c *Communicator) reduce(ctx context.Context, res *Reservation, data []float64, op func(a, b float64) float64) *Future[[]float64] {
	n := uint64(len(data))
	return startOp(ctx, c, res, opReduce, n, n, func(r *opRun) ([]float64, error) {
		return collective.Reduce(rootedRun{r}, data, combiner(op))
	})
}

// Gather gives the root the data of all sites, concatenated in site order,
// along a binomial tree. Every site passes the same number of elements; the
// others' futures hold nil.
func (c *Communicator) Gather(ctx context.Context, data []float64) *Future[[]float64] {
	return c.gather(ctx, nil, data)
}

// gather is Gather in res's generation, or in the next one when res is nil.
func (c *Communicator) gather(ctx context.Context, res *Reservation, data []float64) *Future[[]float64] {
	m := len(data)
	return startOp(ctx, c, res, opGather, uint64(m), uint64(m), func(r *opRun) ([]float64, error) {
		return collective.Gather(rootedRun{r}, data, c.root)
	})
}

// Scatter gives site i block i of the root's data, which holds Size()
// blocks of equal length; the others may pass nil. It runs along a binomial
// tree.
func (c *Communicator) Scatter(ctx context.Context, data []float64) *Future[[]float64] {
	return c.scatter(ctx, nil, data)
}

// scatter is Scatter in res's generation, or in the next one when res is nil.
func (c *Communicator) scatter(ctx context.Context, res *Reservation, data []float64) *Future[[]float64] {
	count := anyCount
	if c.here == c.root {
		count = uint64(len(data))
	}
	return startOp(ctx, c, res, opScatter, count, anyCount, func(r *opRun) ([]float64, error) {
		return collective.Scatter(rootedRun{r}, data, c.root)
	})
}

// rootedRun is a run seen by rank relative to the communicator's root, as
// the rooted algorithms see the sites: rank 0 is the root.
type rootedRun struct{ *opRun }

func (r rootedRun) site(rank int) int { return (rank + r.c.root) % len(r.c.sites) }

func (r rootedRun) Rank() int { return (r.c.here - r.c.root + len(r.c.sites)) % len(r.c.sites) }
func (r rootedRun) Send(step uint32, to int, data []float64) error {
	return r.opRun.Send(step, r.site(to), data)
}
func (r rootedRun) Recv(step uint32, from int) ([]float64, error) {
	return r.opRun.Recv(step, r.site(from))
}
func (r rootedRun) RecvN(step uint32, from, n int) ([]float64, error) {
	return r.opRun.RecvN(step, r.site(from), n)
}
func (r rootedRun) RecvCount(step uint32, from int) ([]float64, uint64, error) {
	return r.opRun.RecvCount(step, r.site(from))
}
func (r rootedRun) Post(step uint32, from int, dst []float64) {
	r.opRun.Post(step, r.site(from), dst)
}
func (r rootedRun) RecvInto(step uint32, from int, dst []float64) error {
	return r.opRun.RecvInto(step, r.site(from), dst)
}
