package nodebulk

// reduceBlock is the float64s AllReduce combines at a time: 8 KiB of
// partial result and 8 KiB of a site's input fit a first-level cache.
const reduceBlock = 1024

// AllReduce reduces data over the sites through entry e for generation
// gen, site being this one, into out (len(data) elements; every site
// passes the same length). Chunk k goes through three stages, run one
// chunk apart so that a site copies chunk k in while others still reduce
// chunk k-1: copy in (its input buffer is free once every site reduced
// chunk k-2), reduce this site's part (once every site copied chunk k in,
// and copied chunk k-2's result out), copy the result out (once every
// site reduced chunk k). Every site combines its part in site order, so
// every site gets the same bits. arrived, if not nil, is called once the
// first chunk is in, before any wait; an error from it or from a wait
// ends the operation.
func (e *Entry) AllReduce(site int, gen uint64, data, out []float64, op Combine, wait Wait, arrived func() error) error {
	ce, m, p := e.chunk/8, len(data), e.sites
	chunks := (m + ce - 1) / ce
	span := func(k int) (lo, hi int) { return k * ce, min(m, (k+1)*ce) }
	part := func(k, s int) (lo, hi int) {
		a, b := span(k)
		return a + (b-a)*s/p, a + (b-a)*(s+1)/p
	}
	for k := 0; k < chunks+2; k++ {
		if k < chunks {
			if k >= depth {
				if err := e.wait(wait, cRed, gen, k-depth+1); err != nil {
					return err
				}
			}
			// Only this site reads its own part, from data.
			a, b := span(k)
			lo, hi := part(k, site)
			in := e.in(site, k)
			copy(in[:lo-a], data[a:lo])
			copy(in[hi-a:b-a], data[hi:b])
			e.set(site, cIn, gen, k+1)
			if k == 0 && arrived != nil {
				if err := arrived(); err != nil {
					return err
				}
			}
		}
		if c := k - 1; c >= 0 && c < chunks {
			if err := e.wait(wait, cIn, gen, c+1); err != nil {
				return err
			}
			if c >= depth {
				if err := e.wait(wait, cOut, gen, c-depth+1); err != nil {
					return err
				}
			}
			a, _ := span(c)
			lo, hi := part(c, site)
			res := e.result(c)[lo-a : hi-a]
			src := func(s int) []float64 {
				if s == site {
					return data[lo:hi]
				}
				return e.in(s, c)[lo-a : hi-a]
			}
			if p == 1 {
				copy(res, data[lo:hi])
			}
			// A block at a time, so the partial result stays in the
			// first-level cache while every site's block is added.
			for b := 0; b < len(res) && p > 1; b += reduceBlock {
				c := min(len(res), b+reduceBlock)
				op(res[b:c], src(0)[b:c], src(1)[b:c])
				for s := 2; s < p; s++ {
					op(res[b:c], res[b:c], src(s)[b:c])
				}
			}
			copy(out[lo:hi], res)
			e.set(site, cRed, gen, c+1)
		}
		if c := k - 2; c >= 0 && c < chunks {
			if err := e.wait(wait, cRed, gen, c+1); err != nil {
				return err
			}
			a, b := span(c)
			res := e.result(c)
			mlo, mhi := part(c, site)
			copy(out[a:mlo], res[:mlo-a])
			copy(out[mhi:b], res[mhi-a:b-a])
			e.set(site, cOut, gen, c+1)
		}
	}
	return nil
}

// AllGather gathers data of every site through entry e for generation
// gen into out (sites*len(data) elements, site order). Chunk k is copied
// in once its input buffer is free (every site copied chunk k-2 out), and
// the others' chunk k copied out once every site copied it in. arrived is
// as for AllReduce.
func (e *Entry) AllGather(site int, gen uint64, data, out []float64, wait Wait, arrived func() error) error {
	ce, m := e.chunk/8, len(data)
	chunks := (m + ce - 1) / ce
	span := func(k int) (lo, hi int) { return k * ce, min(m, (k+1)*ce) }
	for k := 0; k < chunks+1; k++ {
		if k < chunks {
			if k >= depth {
				if err := e.wait(wait, cOut, gen, k-depth+1); err != nil {
					return err
				}
			}
			a, b := span(k)
			copy(e.in(site, k), data[a:b])
			e.set(site, cIn, gen, k+1)
			copy(out[site*m+a:site*m+b], data[a:b])
			if k == 0 && arrived != nil {
				if err := arrived(); err != nil {
					return err
				}
			}
		}
		if c := k - 1; c >= 0 {
			if err := e.wait(wait, cIn, gen, c+1); err != nil {
				return err
			}
			a, b := span(c)
			for i := 1; i < e.sites; i++ { // the next site first: not all read one
				s := (site + i) % e.sites
				copy(out[s*m+a:s*m+b], e.in(s, c)[:b-a])
			}
			e.set(site, cOut, gen, c+1)
		}
	}
	return nil
}
