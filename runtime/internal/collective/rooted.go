package collective

import (
	"fmt"

	"github.com/tessera-amt/tessera/internal/hugepage"
)

// The rooted operations run along binomial trees; Link.Rank is the rank
// relative to the root, and site numbers are relative ranks too.

// Broadcast gives every site the root's data along a binomial tree; from
// ringFrom bytes on, the tree scatters segments and a ring all-gather
// completes them.
func Broadcast(l Link, data []float64, ringFrom int) ([]float64, error) {
	p, rel := l.Size(), l.Rank()
	n := len(data)
	mask := 1 // rel's subtree is [rel, rel+mask)
	if rel == 0 {
		for mask < p {
			mask <<= 1
		}
	} else {
		for rel&mask == 0 {
			mask <<= 1
		}
		v, cnt, err := l.RecvCount(0, rel-mask)
		if err != nil {
			return nil, err
		}
		if cnt == AnyCount {
			return nil, fmt.Errorf("broadcast message from rank %d below the root without a count", rel-mask)
		}
		l.SetCount(cnt)
		data, n = v, int(cnt)
	}
	if n*8 < ringFrom || p <= 2 {
		if rel == 0 {
			data = clone(data)
		} else if len(data) != n {
			return nil, fmt.Errorf("broadcast message of %d elements, want %d", len(data), n)
		}
		for mask >>= 1; mask > 0; mask >>= 1 {
			if rel+mask < p {
				if err := l.Send(0, rel+mask, data); err != nil {
					return nil, err
				}
			}
		}
		if data == nil {
			data = []float64{}
		}
		return data, nil
	}
	// Segment j of the result belongs to relative rank j.
	seg := func(j int) (int, int) { return segment(n, p, j) }
	span := func(from, to int) (int, int) { // the segments of ranks [from, to)
		lo, _ := seg(from)
		_, hi := seg(to - 1)
		return lo, hi
	}
	buf := data
	if rel == 0 {
		buf = clone(data)
	} else {
		lo, hi := span(rel, min(rel+mask, p))
		if len(data) != hi-lo {
			return nil, fmt.Errorf("broadcast message of %d elements, want %d", len(data), hi-lo)
		}
		buf = hugepage.Float64s(n)
		copy(buf[lo:hi], data)
	}
	for mask >>= 1; mask > 0; mask >>= 1 {
		if rel+mask < p {
			lo, hi := span(rel+mask, min(rel+2*mask, p))
			if err := l.Send(0, rel+mask, buf[lo:hi]); err != nil {
				return nil, err
			}
		}
	}
	return buf, ringShare(l, buf, 1, seg, 0)
}

// Reduce combines data over all sites along a binomial tree towards the
// root; the others get nil.
func Reduce(l Link, data []float64, combine Combine) ([]float64, error) {
	p, rel := l.Size(), l.Rank()
	acc := clone(data)
	for mask := 1; mask < p; mask <<= 1 {
		if rel&mask != 0 {
			return nil, l.Send(0, rel&^mask, acc)
		}
		if rel|mask < p {
			v, err := l.RecvN(0, rel|mask, len(acc))
			if err != nil {
				return nil, err
			}
			combine(acc, acc, v)
			l.Recycle(v)
		}
	}
	return acc, nil
}

// Gather gives the root the data of all sites, in the order of their
// sites (not ranks): the root is site root.
func Gather(l Link, data []float64, root int) ([]float64, error) {
	p, rel, m := l.Size(), l.Rank(), len(data)
	subtree := p - rel // sites whose blocks pass through this one
	if low := rel & -rel; low > 0 {
		subtree = min(low, subtree)
	}
	buf := hugepage.Float64s(subtree * m)[:m] // blocks of relative ranks rel, rel+1, ...
	copy(buf, data)
	for mask := 1; mask < p; mask <<= 1 {
		if rel&mask != 0 {
			return nil, l.Send(0, rel&^mask, buf)
		}
		if src := rel | mask; src < p {
			v, err := l.RecvN(0, src, min(mask, p-src)*m)
			if err != nil {
				return nil, err
			}
			buf = append(buf, v...)
			l.Recycle(v)
		}
	}
	out := hugepage.Float64s(p * m)
	for i := range p {
		s := (i + root) % p
		copy(out[s*m:(s+1)*m], buf[i*m:(i+1)*m])
	}
	return out, nil
}

// Scatter gives site i block i of the root's data, whose blocks are in
// the order of the sites (not ranks): the root is site root.
func Scatter(l Link, data []float64, root int) ([]float64, error) {
	p, rel := l.Size(), l.Rank()
	var buf []float64 // blocks of relative ranks rel, rel+1, ...
	var m int
	mask := 1
	if rel == 0 {
		if len(data)%p != 0 {
			return nil, fmt.Errorf("the root's %d elements do not split into %d equal blocks", len(data), p)
		}
		m = len(data) / p
		buf = hugepage.Float64s(len(data))
		for i := range p {
			s := (i + root) % p
			copy(buf[i*m:(i+1)*m], data[s*m:(s+1)*m])
		}
		for mask < p {
			mask <<= 1
		}
	} else {
		for ; mask < p; mask <<= 1 {
			if rel&mask != 0 {
				v, cnt, err := l.RecvCount(0, rel-mask)
				if err != nil {
					return nil, err
				}
				blocks := min(mask, p-rel)
				if cnt == AnyCount || cnt%uint64(p) != 0 || len(v) != blocks*int(cnt/uint64(p)) {
					return nil, fmt.Errorf("scatter message of %d elements for %d of %d sites, from a root with %d", len(v), blocks, p, count(cnt))
				}
				l.SetCount(cnt)
				buf, m = v, int(cnt/uint64(p))
				break
			}
		}
	}
	for mask >>= 1; mask > 0; mask >>= 1 {
		if rel+mask < p {
			hi := min(2*mask, p-rel) * m
			if err := l.Send(0, rel+mask, buf[mask*m:hi]); err != nil {
				return nil, err
			}
		}
	}
	out := append([]float64{}, buf[:m]...)
	l.Recycle(buf)
	return out, nil
}

// count is n as a number, -1 for AnyCount.
func count(n uint64) int64 {
	if n == AnyCount {
		return -1
	}
	return int64(n)
}
