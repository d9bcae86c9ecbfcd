// Package collective holds the algorithms of the runtime's collective
// operations — recursive doubling, rings, Bruck, dissemination,
// Hillis-Steele scans and binomial trees — written against a Link: one
// site's sends and receives of one operation's generation. They know
// nothing of parcels, mailboxes or localities; the runtime's Communicator
// gives them a Link over its mailbox (runtime/collective_run.go), and the
// tests here one over channels.
//
// Every site of a generation calls the same function with data of the
// agreed sizes; a site's message for step s of the generation is told
// apart from its others by s alone.
package collective

import (
	"fmt"

	"github.com/tessera-amt/tessera/internal/hugepage"
)

// AnyCount is the count of a site that does not know the operation's
// element count yet (a Broadcast's or Scatter's non-roots) or whose
// messages have any length (AllToAllV).
const AnyCount = ^uint64(0)

// Link is one site's part in one generation of an operation.
type Link interface {
	Size() int // sites
	Rank() int // this site, relative to the root for the rooted operations
	// Send sends data as message step to site to; data may be reused when
	// it returns.
	Send(step uint32, to int, data []float64) error
	// Recv waits for message step from site from.
	Recv(step uint32, from int) ([]float64, error)
	// RecvN is Recv of a message that must hold n elements.
	RecvN(step uint32, from, n int) ([]float64, error)
	// RecvCount is Recv that also returns the sender's element count
	// (AnyCount when it has none).
	RecvCount(step uint32, from int) ([]float64, uint64, error)
	// SetCount sets the count sent with this site's later messages, once
	// it learnt it from one it received.
	SetCount(n uint64)
	// Post has message step from site from read straight into dst;
	// RecvInto then waits for it. Unpost forgets what is still posted.
	Post(step uint32, from int, dst []float64)
	RecvInto(step uint32, from int, dst []float64) error
	Unpost()
	// Recycle takes back a received payload that has been used up.
	Recycle(v []float64)
	// Uncleared returns n elements the caller overwrites whole.
	Uncleared(n int) []float64
}

// Combine sets dst[i] to the reduction of lo[i] and hi[i], lo holding the
// values of the lower sites; dst may be lo or hi.
type Combine func(dst, lo, hi []float64)

func clone(v []float64) []float64 { return append([]float64(nil), v...) }

// AllReduce combines data element-wise over all sites and gives every
// site the result: recursive doubling, or with ring a ring reduce-scatter
// and all-gather.
func AllReduce(l Link, data []float64, combine Combine, ring bool) ([]float64, error) {
	acc := l.Uncleared(len(data))
	copy(acc, data)
	if ring {
		return ringAllReduce(l, acc, combine)
	}
	return doublingAllReduce(l, acc, combine)
}

// AllGather gives every site the data of all sites in site order: Bruck,
// or with ring p-1 ring steps.
func AllGather(l Link, data []float64, ring bool) ([]float64, error) {
	p, me, m := l.Size(), l.Rank(), len(data)
	if ring {
		out := l.Uncleared(p * m) // every block is written
		copy(out[me*m:], data)
		err := ringShare(l, out, 0, func(j int) (int, int) { return j * m, (j + 1) * m }, 0)
		return out, err
	}
	// Bruck: buf holds the blocks of sites me, me+1, ... (mod p).
	buf := hugepage.Float64s(p * m)[:m]
	copy(buf, data)
	for dist, step := 1, uint32(0); dist < p; dist, step = dist<<1, step+1 {
		k := min(dist, p-dist)
		if err := l.Send(step, (me-dist+p)%p, buf[:k*m]); err != nil {
			return nil, err
		}
		v, err := l.RecvN(step, (me+dist)%p, k*m)
		if err != nil {
			return nil, err
		}
		buf = append(buf, v...)
		l.Recycle(v)
	}
	out := l.Uncleared(p * m) // every block is written
	for i := range p {
		s := (me + i) % p
		copy(out[s*m:(s+1)*m], buf[i*m:(i+1)*m])
	}
	return out, nil
}

// Barrier returns once every site has called it: the dissemination
// algorithm.
func Barrier(l Link) error {
	p, me := l.Size(), l.Rank()
	for dist, step := 1, uint32(0); dist < p; dist, step = dist<<1, step+1 {
		if err := l.Send(step, (me+dist)%p, nil); err != nil {
			return err
		}
		if _, err := l.Recv(step, (me-dist+p)%p); err != nil {
			return err
		}
	}
	return nil
}

// InclusiveScan gives site i the reduction of sites 0..i.
func InclusiveScan(l Link, data []float64, combine Combine) ([]float64, error) {
	incl, _, err := scan(l, data, combine, false)
	return incl, err
}

// ExclusiveScan gives site i the reduction of init and sites 0..i-1
// (combine and op are the same reduction, on slices and on elements).
func ExclusiveScan(l Link, data []float64, init float64, combine Combine, op func(a, b float64) float64) ([]float64, error) {
	_, excl, err := scan(l, data, combine, true)
	if err != nil {
		return nil, err
	}
	out := hugepage.Float64s(len(data))
	for i := range out {
		out[i] = init
		if excl != nil {
			out[i] = op(init, excl[i])
		}
	}
	return out, nil
}

// AllToAll sends block j of data to site j.
func AllToAll(l Link, data []float64) ([]float64, error) {
	p, me := l.Size(), l.Rank()
	if len(data)%p != 0 {
		return nil, fmt.Errorf("%d elements do not split into %d equal blocks", len(data), p)
	}
	m := len(data) / p
	out := hugepage.Float64s(len(data))
	copy(out[me*m:(me+1)*m], data[me*m:(me+1)*m])
	for i := 1; i < p; i++ {
		to := (me + i) % p
		if err := l.Send(0, to, data[to*m:(to+1)*m]); err != nil {
			return nil, err
		}
	}
	for i := 1; i < p; i++ {
		from := (me - i + p) % p
		v, err := l.RecvN(0, from, m)
		if err != nil {
			return nil, err
		}
		copy(out[from*m:(from+1)*m], v)
		l.Recycle(v)
	}
	return out, nil
}

// AllToAllV is AllToAll with blocks of any length.
func AllToAllV(l Link, blocks [][]float64) ([][]float64, error) {
	p, me := l.Size(), l.Rank()
	if len(blocks) != p {
		return nil, fmt.Errorf("%d blocks for %d sites", len(blocks), p)
	}
	out := make([][]float64, p)
	out[me] = append([]float64{}, blocks[me]...)
	for i := 1; i < p; i++ {
		to := (me + i) % p
		if err := l.Send(0, to, blocks[to]); err != nil {
			return nil, err
		}
	}
	for i := 1; i < p; i++ {
		from := (me - i + p) % p
		v, err := l.Recv(0, from)
		if err != nil {
			return nil, err
		}
		if v == nil {
			v = []float64{}
		}
		out[from] = v
	}
	return out, nil
}
