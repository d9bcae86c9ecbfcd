package collective

// segment returns the bounds of segment j of n elements in p parts.
func segment(n, p, j int) (int, int) { return j * n / p, (j + 1) * n / p }

// doublingAllReduce is recursive doubling. With p not a power of two, the
// first 2r sites (r = p - 2^k) pair up first: the even one hands its value
// to the odd one and waits for the result. Each step combines two
// contiguous blocks of sites, lower block first, so every site computes the
// same expression tree.
func doublingAllReduce(l Link, acc []float64, combine Combine) ([]float64, error) {
	p, me := l.Size(), l.Rank()
	p2 := 1
	for p2*2 <= p {
		p2 *= 2
	}
	rem := p - p2
	const stepFold, stepUnfold = 0, 1
	var vr int // rank among the p2 sites that take part in the doubling
	switch {
	case me < 2*rem && me%2 == 0:
		if err := l.Send(stepFold, me+1, acc); err != nil {
			return nil, err
		}
		return l.RecvN(stepUnfold, me+1, len(acc))
	case me < 2*rem:
		v, err := l.RecvN(stepFold, me-1, len(acc))
		if err != nil {
			return nil, err
		}
		combine(acc, v, acc)
		l.Recycle(v)
		vr = me / 2
	default:
		vr = me - rem
	}
	site := func(v int) int {
		if v < rem {
			return 2*v + 1
		}
		return v + rem
	}
	for mask, step := 1, uint32(2); mask < p2; mask, step = mask<<1, step+1 {
		pv := vr ^ mask
		partner := site(pv)
		if err := l.Send(step, partner, acc); err != nil {
			return nil, err
		}
		v, err := l.RecvN(step, partner, len(acc))
		if err != nil {
			return nil, err
		}
		if pv < vr {
			combine(acc, v, acc)
		} else {
			combine(acc, acc, v)
		}
		l.Recycle(v)
	}
	if me < 2*rem {
		if err := l.Send(stepUnfold, me-1, acc); err != nil {
			return nil, err
		}
	}
	return acc, nil
}

// ringAllReduce is reduce-scatter then all-gather around the ring of
// sites. Segment j is reduced starting at site j, in ring order, exactly
// once; the all-gather only copies, so all sites get the same bits.
func ringAllReduce(l Link, acc []float64, combine Combine) ([]float64, error) {
	p, me, n := l.Size(), l.Rank(), len(acc)
	right, left := (me+1)%p, (me-1+p)%p
	for s := 0; s < p-1; s++ {
		lo, hi := segment(n, p, (me-s+p)%p)
		if err := l.Send(uint32(s), right, acc[lo:hi]); err != nil {
			return nil, err
		}
		lo, hi = segment(n, p, (me-s-1+2*p)%p)
		v, err := l.RecvN(uint32(s), left, hi-lo)
		if err != nil {
			return nil, err
		}
		combine(acc[lo:hi], v, acc[lo:hi])
		l.Recycle(v)
	}
	// Site me now holds the whole of segment me+1.
	return acc, ringShare(l, acc, uint32(p), func(j int) (int, int) { return segment(n, p, j) }, 1)
}

// ringShare is the ring all-gather: site me holds block (me+shift) mod p of
// buf, with bounds from block, and after p-1 steps holds them all. The
// receives are posted first, so the blocks are read straight into buf.
func ringShare(l Link, buf []float64, step0 uint32, block func(j int) (int, int), shift int) error {
	p, me := l.Size(), l.Rank()
	right, left := (me+1)%p, (me-1+p)%p
	in := func(s int) []float64 {
		lo, hi := block((me + shift - s - 1 + 2*p) % p)
		return buf[lo:hi]
	}
	for s := 0; s < p-1; s++ {
		l.Post(step0+uint32(s), left, in(s))
	}
	defer l.Unpost()
	for s := 0; s < p-1; s++ {
		lo, hi := block((me + shift - s + 2*p) % p)
		if err := l.Send(step0+uint32(s), right, buf[lo:hi]); err != nil {
			return err
		}
		if err := l.RecvInto(step0+uint32(s), left, in(s)); err != nil {
			return err
		}
	}
	return nil
}

// scan is Hillis-Steele: after the round with distance d, incl holds the
// reduction of sites me-2d+1..me and excl that of sites below me (nil while
// there are none).
func scan(l Link, data []float64, combine Combine, wantExcl bool) (incl, excl []float64, err error) {
	p, me := l.Size(), l.Rank()
	incl = clone(data)
	for dist, step := 1, uint32(0); dist < p; dist, step = dist<<1, step+1 {
		if me+dist < p {
			if err := l.Send(step, me+dist, incl); err != nil {
				return nil, nil, err
			}
		}
		if me-dist >= 0 {
			v, err := l.RecvN(step, me-dist, len(incl))
			if err != nil {
				return nil, nil, err
			}
			if wantExcl {
				if excl == nil {
					excl = clone(v)
				} else {
					combine(excl, v, excl)
				}
			}
			combine(incl, v, incl)
			l.Recycle(v)
		}
	}
	return incl, excl, nil
}
