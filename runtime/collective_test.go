package runtime

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	goruntime "runtime"
	"testing"
	"time"

	"github.com/tessera-amt/tessera/parcel"
)

// inputs hands out the sites' inputs of m elements: small integers, so
// that sums and products of up to five sites are exact in any order.
// Element i of input s is (7s+3i) mod 11 + 1, so every input is a window of
// one pattern and costs nothing to make. Inputs are shared: read only.
type inputs struct {
	m       int
	pattern []float64
}

func newInputs(m int) *inputs {
	in := &inputs{m: m, pattern: make([]float64, m+11)}
	for i := range in.pattern {
		in.pattern[i] = float64(3*i%11 + 1)
	}
	return in
}

// site returns input s (3k = 7s mod 11 for k = 28s mod 11).
func (in *inputs) site(s int) []float64 {
	k := 28 * s % 11
	return in.pattern[k : k+in.m : k+in.m]
}

func (in *inputs) reduce(upto int, op func(a, b float64) float64) []float64 {
	acc := append([]float64(nil), in.site(0)...)
	for s := 1; s <= upto; s++ {
		combineInto(acc, acc, in.site(s), op)
	}
	return acc
}

func (in *inputs) concat(p int) []float64 {
	out := make([]float64, 0, p*in.m)
	for s := range p {
		out = append(out, in.site(s)...)
	}
	return out
}

// plusOne is a user reduction: associative and commutative, and not one of
// the built-in ones.
func plusOne(a, b float64) float64 { return a + b + 1 }

// collCase is one operation with its sequential reference.
type collCase struct {
	name string
	run  func(ctx context.Context, c *Communicator) *Future[[]float64]
	want func(site int) []float64 // nil: the future holds nil
}

func collCases(p, m, root int) []collCase {
	in := newInputs(m)
	me := func(c *Communicator) []float64 { return in.site(c.Site()) }
	cases := []collCase{}
	for _, r := range []struct {
		name string
		op   func(a, b float64) float64
	}{{"sum", ReduceSum}, {"prod", ReduceProd}, {"min", ReduceMin}, {"max", ReduceMax}, {"user", plusOne}} {
		ref := in.reduce(p-1, r.op)
		cases = append(cases, collCase{"AllReduce/" + r.name,
			func(ctx context.Context, c *Communicator) *Future[[]float64] { return c.AllReduce(ctx, me(c), r.op) },
			func(int) []float64 { return ref }})
	}
	sum := in.reduce(p-1, ReduceSum)
	cat := in.concat(p)
	// AllToAll: block j of site s is input s*p+j.
	a2a := make([][]float64, p)
	for s := range p {
		for j := range p {
			a2a[s] = append(a2a[s], in.site(s*p+j)...)
		}
	}
	cases = append(cases,
		collCase{"Reduce", func(ctx context.Context, c *Communicator) *Future[[]float64] {
			return c.Reduce(ctx, me(c), ReduceSum)
		}, func(s int) []float64 {
			if s == root {
				return sum
			}
			return nil
		}},
		collCase{"Broadcast", func(ctx context.Context, c *Communicator) *Future[[]float64] {
			var d []float64
			if c.Site() == root {
				d = in.site(root)
			}
			return c.Broadcast(ctx, d)
		}, func(int) []float64 { return in.site(root) }},
		collCase{"Broadcast/scatter+ring", func(ctx context.Context, c *Communicator) *Future[[]float64] {
			var d []float64
			if c.Site() == root {
				d = in.site(root)
			}
			c.bcastRingFrom = 0
			defer func() { c.bcastRingFrom = math.MaxInt }()
			return c.Broadcast(ctx, d)
		}, func(int) []float64 { return in.site(root) }},
		collCase{"AllGather", func(ctx context.Context, c *Communicator) *Future[[]float64] {
			return c.AllGather(ctx, me(c))
		}, func(int) []float64 { return cat }},
		collCase{"Gather", func(ctx context.Context, c *Communicator) *Future[[]float64] {
			return c.Gather(ctx, me(c))
		}, func(s int) []float64 {
			if s == root {
				return cat
			}
			return nil
		}},
		collCase{"Scatter", func(ctx context.Context, c *Communicator) *Future[[]float64] {
			var d []float64
			if c.Site() == root {
				d = cat
			}
			return c.Scatter(ctx, d)
		}, func(s int) []float64 { return in.site(s) }},
		collCase{"InclusiveScan", func(ctx context.Context, c *Communicator) *Future[[]float64] {
			return c.InclusiveScan(ctx, me(c), ReduceSum)
		}, func(s int) []float64 { return in.reduce(s, ReduceSum) }},
		collCase{"ExclusiveScan", func(ctx context.Context, c *Communicator) *Future[[]float64] {
			return c.ExclusiveScan(ctx, me(c), 100, ReduceSum)
		}, func(s int) []float64 {
			out := make([]float64, m)
			for i := range out {
				out[i] = 100
			}
			if s > 0 {
				combineInto(out, out, in.reduce(s-1, ReduceSum), ReduceSum)
			}
			return out
		}},
		collCase{"AllToAll", func(ctx context.Context, c *Communicator) *Future[[]float64] {
			return c.AllToAll(ctx, a2a[c.Site()])
		}, func(s int) []float64 {
			out := make([]float64, 0, p*m)
			for j := range p {
				out = append(out, in.site(j*p+s)...)
			}
			return out
		}},
	)
	return cases
}

// sameFloats compares bit for bit.
func sameFloats(got, want []float64) error {
	if (got == nil) != (want == nil) {
		return fmt.Errorf("got %d elements (nil: %v), want %d (nil: %v)", len(got), got == nil, len(want), want == nil)
	}
	if len(got) != len(want) {
		return fmt.Errorf("got %d elements, want %d", len(got), len(want))
	}
	if bytes.Equal(parcel.Float64Bytes(got), parcel.Float64Bytes(want)) {
		return nil
	}
	for i := range got {
		if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
			return fmt.Errorf("element %d = %v, want %v", i, got[i], want[i])
		}
	}
	return nil
}

// runComm runs body on every locality of a fresh job of n with a
// communicator over all of them.
func runComm(t *testing.T, n, root int, body func(ctx context.Context, rt *Runtime, c *Communicator) error) {
	t.Helper()
	runCommConfig(t, n, root, Config{Lanes: 2}, body)
}

// runCommConfig is runComm with the localities' Config.
func runCommConfig(t *testing.T, n, root int, cfg Config, body func(ctx context.Context, rt *Runtime, c *Communicator) error) {
	t.Helper()
	ctx := testCtx(t)
	job, err := StartLocal(ctx, n, cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = job.Run(ctx, func(ctx context.Context, rt *Runtime) error {
		c, err := NewCommunicator(rt, "test.comm", nil, root)
		if err != nil {
			return err
		}
		defer c.Close()
		return body(ctx, rt, c)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestCollectivesAgainstReference(t *testing.T) {
	sizes := []struct {
		name string
		m    int
	}{{"small", 5}, {"uneven", 10007}, {"4MiB", 4 << 20 / 8}}
	for _, n := range []int{1, 2, 3, 4, 5} {
		for _, sz := range sizes {
			if sz.m > 5 && testing.Short() {
				continue
			}
			if sz.m == 4<<20/8 && raceDetector && n != 2 && n != 5 {
				continue // the detector makes these slow; 2 and 5 cover both algorithms
			}
			t.Run(fmt.Sprintf("%d/%s", n, sz.name), func(t *testing.T) {
				root := n / 2 // != 0 from two localities on
				cases := collCases(n, sz.m, root)
				wants := make([][][]float64, len(cases)) // the references, computed once
				for i, cs := range cases {
					wants[i] = make([][]float64, n)
					for s := range n {
						wants[i][s] = cs.want(s)
					}
				}
				runComm(t, n, root, func(ctx context.Context, rt *Runtime, c *Communicator) error {
					for i, cs := range cases {
						got, err := cs.run(ctx, c).Get(ctx)
						if err != nil {
							return fmt.Errorf("%s: %w", cs.name, err)
						}
						if err := sameFloats(got, wants[i][c.Site()]); err != nil {
							return fmt.Errorf("%s on site %d: %w", cs.name, c.Site(), err)
						}
					}
					if err := c.Barrier(ctx).Err(ctx); err != nil {
						return fmt.Errorf("Barrier: %w", err)
					}
					if g := c.Generation(); g != uint64(len(cases)+1) {
						return fmt.Errorf("generation %d after %d operations", g, len(cases)+1)
					}
					return nil
				})
			})
		}
	}
}

// Every site gets the same bits from a reduction of arbitrary floats, with
// both algorithms, and the rooted operations work with root 0 too.
func TestAllReduceSameBitsEverywhere(t *testing.T) {
	const n = 5
	for _, m := range []int{3, 3 * ringThresholdBytes / 8} {
		results := make([][]float64, n)
		runComm(t, n, 0, func(ctx context.Context, rt *Runtime, c *Communicator) error {
			rng := rand.New(rand.NewPCG(uint64(c.Site()), 1))
			d := make([]float64, m)
			for i := range d {
				d[i] = rng.NormFloat64() * 1e3
			}
			v, err := c.AllReduce(ctx, d, ReduceSum).Get(ctx)
			results[c.Site()] = v
			if err != nil {
				return err
			}
			// Root 0: the reduction at the root and the broadcast of it.
			red, err := c.Reduce(ctx, d, ReduceSum).Get(ctx)
			if err != nil {
				return err
			}
			if c.Site() == 0 && len(red) != m {
				return fmt.Errorf("Reduce at root 0: %d elements", len(red))
			}
			b, err := c.Broadcast(ctx, red).Get(ctx)
			if err != nil {
				return err
			}
			if len(b) != m {
				return fmt.Errorf("Broadcast from root 0: %d elements", len(b))
			}
			return nil
		})
		for s := 1; s < n; s++ {
			if err := sameFloats(results[s], results[0]); err != nil {
				t.Errorf("m=%d: site %d differs from site 0: %v", m, s, err)
			}
		}
	}
}

// delay waits d. time.Sleep cannot: on this kind of machine it sleeps at
// least about a millisecond, so short delays spin, yielding the processor.
func delay(d time.Duration) {
	if d >= time.Millisecond {
		time.Sleep(d)
		return
	}
	for t := time.Now(); time.Since(t) < d; {
		goruntime.Gosched()
	}
}

// Back-to-back AllReduce generations with random delays on every locality.
func TestAllReduceManyGenerations(t *testing.T) {
	gens := 10000
	if testing.Short() || raceDetector {
		gens = 2000
	}
	start := time.Now()
	runComm(t, 4, 0, func(ctx context.Context, rt *Runtime, c *Communicator) error {
		rng := rand.New(rand.NewPCG(uint64(c.Site()), 42))
		for g := range gens {
			delay(time.Duration(rng.IntN(201)) * time.Microsecond)
			v, err := c.AllReduce(ctx, []float64{float64(g * (c.Site() + 1)), 1}, ReduceSum).Get(ctx)
			if err != nil {
				return fmt.Errorf("generation %d: %w", g+1, err)
			}
			if v[0] != float64(10*g) || v[1] != 4 {
				return fmt.Errorf("generation %d on site %d: %v, want [%d 4]", g+1, c.Site(), v, 10*g)
			}
		}
		return nil
	})
	t.Logf("%d generations in %v", gens, time.Since(start))
}

// A locality runs generations ahead of the others: its messages wait in
// their mailboxes, and nothing of the earlier generations is disturbed.
func TestCollectiveRunAhead(t *testing.T) {
	// The mailbox's run-ahead: parcels, not the machine's shared memory.
	runCommConfig(t, 3, 0, Config{Lanes: 2, PointToPointCollectives: true}, func(ctx context.Context, rt *Runtime, c *Communicator) error {
		switch c.Site() {
		case 0: // the root finishes three broadcasts without anyone
			for g := range 3 {
				if _, err := c.Broadcast(ctx, []float64{float64(g), 7}).Get(ctx); err != nil {
					return err
				}
			}
		case 1: // starts three more generations without waiting
			// once the root's three broadcasts wait in its mailbox
			if err := waitUntil(ctx, "the root's broadcasts wait at site 1", func() bool {
				s := mailbox(rt, "test.comm")
				return s.heldFrom(1, 0) > 0 && s.heldFrom(2, 0) > 0 && s.heldFrom(3, 0) > 0
			}); err != nil {
				return err
			}
			var fs []*Future[[]float64]
			for range 3 {
				fs = append(fs, c.Broadcast(ctx, nil))
			}
			fs = append(fs, c.AllReduce(ctx, []float64{1}, ReduceSum), c.AllReduce(ctx, []float64{2}, ReduceSum), c.AllReduce(ctx, []float64{3}, ReduceSum))
			for g, f := range fs {
				v, err := f.Get(ctx)
				if err != nil {
					return err
				}
				if g < 3 && (len(v) != 2 || v[0] != float64(g) || v[1] != 7) {
					return fmt.Errorf("broadcast %d: %v", g, v)
				}
				if g >= 3 && v[0] != float64(3*(g-2)) {
					return fmt.Errorf("allreduce %d: %v", g, v)
				}
			}
			return nil
		case 2: // waits while the others are ahead: the root's broadcasts
			// and site 1's message of the first AllReduce, which it sends
			// once the root's came, wait in its mailbox
			if err := waitUntil(ctx, "the others' messages of generations 1 to 4 wait at site 2", func() bool {
				s := mailbox(rt, "test.comm")
				return s.heldFrom(1, 0) > 0 && s.heldFrom(2, 0) > 0 && s.heldFrom(3, 0) > 0 && s.heldFrom(4, 1) > 0
			}); err != nil {
				return err
			}
			for g := range 3 {
				v, err := c.Broadcast(ctx, nil).Get(ctx)
				if err != nil || v[0] != float64(g) {
					return fmt.Errorf("broadcast %d: %v, %v", g, v, err)
				}
			}
		}
		for k := 1; k <= 3; k++ {
			v, err := c.AllReduce(ctx, []float64{float64(k)}, ReduceSum).Get(ctx)
			if err != nil {
				return err
			}
			if v[0] != float64(3*k) {
				return fmt.Errorf("allreduce %d: %v", k, v)
			}
		}
		return nil
	})
}

// Two disjoint sub-communicators run at the same time, each with its own
// root, without disturbing each other.
func TestDisjointSubCommunicators(t *testing.T) {
	ctx := testCtx(t)
	job, err := StartLocal(ctx, 5, Config{Lanes: 2})
	if err != nil {
		t.Fatal(err)
	}
	groups := [][]uint32{{0, 2, 4}, {1, 3}}
	err = job.Run(ctx, func(ctx context.Context, rt *Runtime) error {
		g := int(rt.Here() % 2)
		root := len(groups[g]) - 1
		c, err := NewCommunicator(rt, fmt.Sprint("test.group", g), groups[g], root)
		if err != nil {
			return err
		}
		defer c.Close()
		p := c.Size()
		for k := range 300 {
			v, err := c.AllReduce(ctx, []float64{float64(k), float64(g)}, ReduceSum).Get(ctx)
			if err != nil {
				return err
			}
			if v[0] != float64(p*k) || v[1] != float64(p*g) {
				return fmt.Errorf("group %d round %d: %v", g, k, v)
			}
			var d []float64
			if c.Site() == root {
				d = []float64{float64(k + 1000*g)}
			}
			b, err := c.Broadcast(ctx, d).Get(ctx)
			if err != nil {
				return err
			}
			if b[0] != float64(k+1000*g) {
				return fmt.Errorf("group %d broadcast %d: %v", g, k, b)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestAllToAllV(t *testing.T) {
	for _, n := range []int{1, 2, 3, 5} {
		runComm(t, n, 0, func(ctx context.Context, rt *Runtime, c *Communicator) error {
			// Site s sends s+j+k elements of value 100s+j to site j, in
			// round k.
			for k := range 2 {
				blocks := make([][]float64, n)
				for j := range blocks {
					for range c.Site() + j + k {
						blocks[j] = append(blocks[j], float64(100*c.Site()+j))
					}
				}
				got, err := c.AllToAllV(ctx, blocks).Get(ctx)
				if err != nil {
					return err
				}
				for j, b := range got {
					want := make([]float64, j+c.Site()+k)
					for i := range want {
						want[i] = float64(100*j + c.Site())
					}
					if err := sameFloats(b, want); err != nil {
						return fmt.Errorf("round %d, block from site %d: %w", k, j, err)
					}
				}
			}
			return nil
		})
	}
}
