package primitives

import (
	"context"

	"github.com/tessera-amt/tessera/runtime"
)

// cannon computes this locality's tile of out = A·B by Cannon's algorithm
// on the q x q grid of p (see CannonProduct): locality (i, j) = i*q+j
// multiplies A(i, k) by B(k, j) for k = i+j+s mod q at step s = 0..q-1.
// Tiles travel over a Channel named base, under tag 2s (A) and 2s+1 (B)
// for the tiles of step s; they are lent (Channel.Lend), so between
// localities on one machine they move without a copy.
func (e *Env) cannon(ctx context.Context, op, base string, p productPlan, out []float64) error {
	q := p.ga.r()
	me := e.Locality()
	i, j := me/q, me%q
	at := func(i, j int) int { return ((i%q+q)%q)*q + (j%q+q)%q }
	mi, nj := p.ga.rows[i].Len(), p.gb.cols[j].Len()
	c := general(mi, nj, nj, out)

	// A tile of row i returns to its owner at the step s with i+s = 0 mod
	// q (the skew for row 0), a tile of column j at j+s = 0: that step's
	// shift of the row (column) moves nothing, each locality takes its own
	// tile again, which it keeps for the whole product.
	ownA, ownB := e.ownedTile(p.x), e.ownedTile(p.y)
	defer func() { ownA.release(); ownB.release() }()
	curA, curB := borrowed(ownA.data), borrowed(ownB.data)
	// The tiles held at the end were received (or are the own ones): their
	// memory takes the next product's tiles.
	defer func() { e.recycle(&curA); e.recycle(&curB) }()
	if q == 1 {
		k := p.ga.cols[0].Len()
		gemm(general(mi, k, k, curA.data), general(k, nj, nj, curB.data), c, true)
		return nil
	}
	ch, err := runtime.NewChannel(e.rt, base, nil)
	if err != nil {
		return e.wrap(op, err)
	}
	defer ch.Close()

	// The initial skew: A(i, j) goes to (i, j-i), B(i, j) to (i-j, j); A(i,
	// i+j) comes from (i, i+j), B(i+j, j) from (i+j, j).
	sk := e.shift(ctx, ch, 0, &curA, &curB, at(i, j-i), at(i-j, j), at(i, j+i), at(i+j, j), i%q == 0, j%q == 0)
	// A locality on the diagonal holds both tiles of one of its products,
	// A(i, i) and B(i, i), the product of step (q-i) mod q, when its own
	// tiles come back: it multiplies them while the skew travels instead of
	// waiting for it, and skips that step. (Locality 0's is step 0, which
	// needs no skew.)
	first, early := true, -1
	if i == j && i != 0 {
		early = q - i
		kw := p.ga.cols[i].Len()
		gemm(general(mi, kw, kw, ownA.data), general(kw, nj, nj, ownB.data), c, first)
		first = false
	}
	if err := sk.wait(ctx, &curA, &curB, ownA, ownB); err != nil {
		return e.wrap(op, err)
	}
	for s := range q {
		var next *shifting
		if s+1 < q {
			// Step s+1's tiles travel during step s's multiply: A to the
			// left, B up.
			next = e.shift(ctx, ch, uint64(s+1), &curA, &curB, at(i, j-1), at(i-1, j), at(i, j+1), at(i+1, j), (i+s+1)%q == 0, (j+s+1)%q == 0)
		}
		k := (i + j + s) % q
		kw := p.ga.cols[k].Len()
		if len(curA.data) != mi*kw || len(curB.data) != kw*nj {
			return e.errorf(op, "step %d of Cannon on a %dx%d grid: got a tile of %s of %d elements and a tile of %s of %d elements, want %dx%d and %dx%d",
				s, q, q, p.x.Name(), len(curA.data), p.y.Name(), len(curB.data), mi, kw, kw, nj)
		}
		if s != early {
			gemm(general(mi, kw, kw, curA.data), general(kw, nj, nj, curB.data), c, first)
			first = false
		}
		if next != nil {
			if err := next.wait(ctx, &curA, &curB, ownA, ownB); err != nil {
				return e.wrap(op, err)
			}
		}
	}
	return nil
}

// shifting is one exchange of Cannon: this locality's tiles of A and B on
// their way to their next holders and the ones it gets in their place.
type shifting struct {
	e          *Env
	sent       []*runtime.Future[struct{}]
	getA, getB *runtime.Future[[]float64]
	ownA, ownB bool // the row's (column's) shift moves nothing: the owner's tile is next
}

// shift lends *a to locality toA and *b to toB and asks for the tiles
// fromA and fromB send, all under step's tags; but when ownA (ownB) the
// tile that would come is this locality's own, and nothing moves.
func (e *Env) shift(ctx context.Context, ch *runtime.Channel, step uint64, a, b *inFlight, toA, toB, fromA, fromB int, ownA, ownB bool) *shifting {
	sh := &shifting{e: e, ownA: ownA, ownB: ownB}
	if !sh.ownA {
		sh.sent = append(sh.sent, lend(ctx, ch, toA, 2*step, a))
		sh.getA = ch.Get(ctx, fromA, 2*step)
	}
	if !sh.ownB {
		sh.sent = append(sh.sent, lend(ctx, ch, toB, 2*step+1, b))
		sh.getB = ch.Get(ctx, fromB, 2*step+1)
	}
	return sh
}

// lend lends f's memory to site under tag; memory the product owns is
// held until the send is done (runtime.UseTile), so a product that ends
// early, on an error, does not reuse it under the send.
func lend(ctx context.Context, ch *runtime.Channel, site int, tag uint64, f *inFlight) *runtime.Future[struct{}] {
	if f.mem == nil {
		return ch.Lend(ctx, site, tag, f.data)
	}
	return runtime.UseTile(f.mem, func(b []float64) *runtime.Future[struct{}] { return ch.Lend(ctx, site, tag, b) })
}

// wait waits for the exchange and puts the new tiles in *a and *b (the
// own tiles ownA and ownB where nothing moved), releasing (and
// recycling) the ones they replace.
func (sh *shifting) wait(ctx context.Context, a, b *inFlight, ownA, ownB inFlight) error {
	for _, f := range sh.sent {
		if _, err := f.Get(ctx); err != nil {
			return err
		}
	}
	for _, x := range []struct {
		own  bool
		get  *runtime.Future[[]float64]
		cur  *inFlight
		mine []float64
	}{{sh.ownA, sh.getA, a, ownA.data}, {sh.ownB, sh.getB, b, ownB.data}} {
		if x.own {
			sh.e.recycle(x.cur)
			*x.cur = borrowed(x.mine)
			continue
		}
		v, err := x.get.Get(ctx)
		if err != nil {
			return err
		}
		sh.e.recycle(x.cur)
		// The product owns what it received: memory lent by a neighbour
		// goes back to it when released.
		*x.cur = sh.e.countedTile(runtime.AdoptTile(sh.e.rt, v))
	}
	return nil
}

// recycle releases f and its memory, if the product received or
// allocated it: back to the runtime for the next message or tile of its
// size, or to the locality that lent it.
func (e *Env) recycle(f *inFlight) {
	f.mem.Release()
	f.release()
}
