package runtime

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// onLarge tells whether c's large operations went through the region.
func onLarge(c *Communicator) bool {
	l := &c.node.large
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.bulk != nil && !l.off
}

// largeInput is site me's input of generation g: integers, so that every
// order of summation gives the same bits.
func largeInput(g, me, n int) []float64 {
	d := make([]float64, n)
	for i := range d {
		d[i] = float64((g*7+me*131+i)%1000 - 300)
	}
	return d
}

// largeSizes are payloads of the region: one element and a few (its
// AllGather; AllReduce goes through the board), one element more than the
// board's slot, a chunk less one, several chunks and a remainder.
func largeSizes() []int {
	return []int{1, 37, nodeMaxBytes/8 + 1, nodeChunk(4)/8 - 1, 3*nodeChunk(4)/8 + 17}
}

// largeRounds runs AllReduce (sum, and max) and AllGather of largeSizes
// for gens generations and returns each site's results.
func largeRounds(t *testing.T, n, gens int, cfg Config) [][][]float64 {
	t.Helper()
	out := make([][][]float64, n)
	runCommConfig(t, n, 0, cfg, func(ctx context.Context, rt *Runtime, c *Communicator) error {
		me := c.Site()
		var res [][]float64
		for g := range gens {
			for _, m := range largeSizes() {
				in := largeInput(g, me, m)
				v, err := c.AllReduce(ctx, in, ReduceSum).Get(ctx)
				if err != nil {
					return fmt.Errorf("generation %d: AllReduce of %d: %w", g, m, err)
				}
				res = append(res, v)
				if v, err = c.AllReduce(ctx, in, ReduceMax).Get(ctx); err != nil {
					return fmt.Errorf("generation %d: AllReduce max of %d: %w", g, m, err)
				}
				res = append(res, v)
				if v, err = c.AllGather(ctx, in).Get(ctx); err != nil {
					return fmt.Errorf("generation %d: AllGather of %d: %w", g, m, err)
				}
				res = append(res, v)
			}
		}
		if want := n > 1 && !cfg.PointToPointCollectives; onLarge(c) != want {
			return fmt.Errorf("locality %d: large operations through the region %v, want %v", rt.Here(), onLarge(c), want)
		}
		out[me] = res
		return nil
	})
	return out
}

// The region's AllReduce and AllGather on 1 to 5 localities (4 also in
// poll mode) agree with the parcels' to the bit.
func TestNodeLargeAgainstParcels(t *testing.T) {
	gens := 3
	if testing.Short() || raceDetector {
		gens = 1
	}
	for n := 1; n <= 5; n++ {
		for _, p := range []Progress{ProgressBlock, ProgressPoll} {
			if p == ProgressPoll && n != 4 {
				continue // spinning localities in one process are slow: one size
			}
			t.Run(fmt.Sprintf("%d/%v", n, p), func(t *testing.T) {
				region := largeRounds(t, n, gens, Config{Lanes: 2, Progress: p})
				parcels := largeRounds(t, n, gens, Config{Lanes: 2, Progress: p, PointToPointCollectives: true})
				for s := range n {
					if len(region[s]) != len(parcels[s]) {
						t.Fatalf("site %d: %d results through the region, %d by parcels", s, len(region[s]), len(parcels[s]))
					}
					for i := range region[s] {
						a, b := region[s][i], parcels[s][i]
						if len(a) != len(b) || len(a) == 0 {
							t.Fatalf("site %d, result %d: %d elements through the region, %d by parcels", s, i, len(a), len(b))
						}
						for j := range a {
							if a[j] != b[j] {
								t.Fatalf("site %d, result %d, element %d: region %v, parcels %v", s, i, j, a[j], b[j])
							}
						}
					}
				}
			})
		}
	}
}

// Reservations issued in a different order on every site: operations of
// several generations run at once, more than the region has entries for
// (the others go point to point), and every result is right.
func TestNodeLargeOutOfOrder(t *testing.T) {
	const ops, rounds = 5, 4
	m := nodeChunk(4)/8 + 5
	runCommConfig(t, 4, 0, Config{Lanes: 3}, func(ctx context.Context, rt *Runtime, c *Communicator) error {
		me := c.Site()
		for round := range rounds {
			res := make([]*Reservation, ops)
			for i := range res {
				var err error
				if res[i], err = c.Reserve(); err != nil {
					return err
				}
			}
			fs := make([]*Future[[]float64], ops)
			for j := range ops {
				i := (j*(me+1) + round + me) % ops // a permutation per site (ops is prime)
				in := largeInput(i+10*round, me, m)
				if i%2 == 0 {
					fs[i] = res[i].AllReduce(ctx, in, ReduceSum)
				} else {
					fs[i] = res[i].AllGather(ctx, in)
				}
			}
			for i, f := range fs {
				v, err := f.Get(ctx)
				if err != nil {
					return fmt.Errorf("site %d, round %d, operation %d: %w", me, round, i, err)
				}
				if err := checkLarge(v, i%2 == 0, i+10*round, 4, m); err != nil {
					return fmt.Errorf("site %d, round %d, operation %d: %w", me, round, i, err)
				}
			}
		}
		if !onLarge(c) {
			return fmt.Errorf("site %d: the region is not in use", me)
		}
		return nil
	})
}

// checkLarge compares v with the AllReduce (sum) or AllGather of
// largeInput(g, s, m) over n sites.
func checkLarge(v []float64, reduce bool, g, n, m int) error {
	if reduce {
		if len(v) != m {
			return fmt.Errorf("%d elements, want %d", len(v), m)
		}
		want := make([]float64, m)
		for s := range n {
			for i, x := range largeInput(g, s, m) {
				want[i] += x
			}
		}
		for i := range v {
			if v[i] != want[i] {
				return fmt.Errorf("element %d is %v, want %v", i, v[i], want[i])
			}
		}
		return nil
	}
	if len(v) != n*m {
		return fmt.Errorf("%d elements, want %d", len(v), n*m)
	}
	for s := range n {
		for i, x := range largeInput(g, s, m) {
			if v[s*m+i] != x {
				return fmt.Errorf("site %d's element %d is %v, want %v", s, i, v[s*m+i], x)
			}
		}
	}
	return nil
}

// Large calls that disagree fail on every site with a MismatchError, and
// the communicator goes on through the region: the entry the failed
// generation left is taken again.
func TestNodeLargeMismatch(t *testing.T) {
	m := nodeChunk(4)/8 + 3
	runComm(t, 3, 0, func(ctx context.Context, rt *Runtime, c *Communicator) error {
		me := c.Site()
		if _, err := c.AllReduce(ctx, largeInput(0, me, m), ReduceSum).Get(ctx); err != nil {
			return err
		}
		n := m
		if me == 2 {
			n = m + 1
		}
		_, err := c.AllGather(ctx, largeInput(1, me, n)).Get(ctx)
		var mm *MismatchError
		if !errors.As(err, &mm) || mm.Generation != 2 {
			return fmt.Errorf("site %d: mismatched AllGather: %v, want a MismatchError in generation 2", me, err)
		}
		for g := range 6 {
			v, err := c.AllReduce(ctx, largeInput(g, me, m), ReduceSum).Get(ctx)
			if err == nil {
				err = checkLarge(v, true, g, 3, m)
			}
			if err != nil {
				return fmt.Errorf("site %d, %d generations after the mismatch: %w", me, g+1, err)
			}
		}
		if !onLarge(c) {
			return fmt.Errorf("site %d: the region is not in use", me)
		}
		return nil
	})
}

// A locality that dies while the others wait in a large AllReduce fails
// them within seconds with an error naming it.
func TestNodeLargeKilledLocality(t *testing.T) {
	ctx := testCtx(t)
	job, err := StartLocal(ctx, 4, Config{Lanes: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer job.Close()
	comms := make([]*Communicator, 4)
	for i, rt := range job.Localities {
		if comms[i], err = NewCommunicator(rt, "test.nodelargekill", nil, 0); err != nil {
			t.Fatal(err)
		}
	}
	m := 2*nodeChunk(4)/8 + 1
	var first []*Future[[]float64]
	for i, c := range comms {
		first = append(first, c.AllReduce(ctx, largeInput(0, i, m), ReduceSum))
	}
	for i, f := range first {
		if _, err := f.Get(ctx); err != nil || !onLarge(comms[i]) {
			t.Fatalf("site %d: AllReduce %v, through the region %v", i, err, onLarge(comms[i]))
		}
	}
	var rs []*Future[[]float64]
	for i, c := range comms[:3] {
		rs = append(rs, c.AllReduce(ctx, largeInput(1, i, m), ReduceSum))
	}
	failWhenKilled(ctx, t, job, rs)
}

// The region goes with the board: once the communicator is closed and its
// last operation done, no site maps it any more.
func TestNodeLargeUnmappedAfterClose(t *testing.T) {
	ctx := testCtx(t)
	job, err := StartLocal(ctx, 3, Config{Lanes: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer job.Close()
	err = job.Run(ctx, func(ctx context.Context, rt *Runtime) error {
		c, err := NewCommunicator(rt, "test.nodelargeclose", nil, 0)
		if err != nil {
			return err
		}
		m := nodeMaxBytes
		if err := c.AllReduce(ctx, largeInput(0, c.Site(), m), ReduceSum).Err(ctx); err != nil || !onLarge(c) {
			return fmt.Errorf("locality %d: AllReduce %v, through the region %v", rt.Here(), err, onLarge(c))
		}
		f := c.AllGather(ctx, largeInput(1, c.Site(), m))
		c.Close()
		v, err := f.Get(ctx)
		if err == nil {
			err = checkLarge(v, false, 1, 3, m)
		}
		if err != nil {
			return fmt.Errorf("locality %d: AllGather started before Close: %w", rt.Here(), err)
		}
		return waitUntil(ctx, "the region unmapped", func() bool {
			l := &c.node.large
			l.mu.Lock()
			defer l.mu.Unlock()
			return l.region == nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
}
