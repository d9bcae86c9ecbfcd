// Command colljob is a Tessera SPMD program for the runtime's real-process
// collective tests.
//
//	colljob [check]   every collective on small and large (4 MiB) payloads
//	                  against a sequential reference, 200 back-to-back
//	                  AllReduce generations, and sub-communicators over the
//	                  odd and the even localities; prints "locality N ok"
//	colljob spin      AllReduce in a loop until the job fails; prints
//	                  "ready" after the first generations
//	colljob spin-large the same with 1 MiB AllReduces (the large ones'
//	                  shared region on one machine)
//
// Every site's input is computed from its site index alone, so each
// locality can compute every other site's input, and from those the
// expected result, sequentially. The inputs are small integers: sums of a
// few of them are exact in any order, so results are compared bit for bit.
package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/tessera-amt/tessera/runtime"
)

func main() {
	mode := "check"
	if len(os.Args) > 1 {
		mode = os.Args[1]
	}
	os.Exit(runtime.Main(runtime.Config{}, func(ctx context.Context, rt *runtime.Runtime) error {
		switch mode {
		case "check":
			if err := check(ctx, rt); err != nil {
				return err
			}
			shared := 0
			for _, p := range rt.Counters().Peers {
				if p.SharedMemory {
					shared++
				}
			}
			fmt.Printf("locality %d ok\nlocality %d: %d peers in shared memory\n", rt.Here(), rt.Here(), shared)
			return nil
		case "spin":
			return spin(ctx, rt, 2)
		case "spin-large":
			return spin(ctx, rt, 1<<17)
		}
		return errors.New("colljob: unknown mode " + mode)
	}))
}

// input returns site s's input of m elements for salt: element i is
// (7s + 3i + salt) mod 11 + 1.
func input(s, m, salt int) []float64 {
	v := make([]float64, m)
	for i := range v {
		v[i] = float64((7*s+3*i+salt)%11 + 1)
	}
	return v
}

// reduce combines the inputs of sites from..to (inclusive) in site order.
func reduce(from, to, m, salt int, op func(a, b float64) float64) []float64 {
	acc := input(from, m, salt)
	for s := from + 1; s <= to; s++ {
		for i, x := range input(s, m, salt) {
			acc[i] = op(acc[i], x)
		}
	}
	return acc
}

func concat(blocks ...[]float64) []float64 {
	var out []float64
	for _, b := range blocks {
		out = append(out, b...)
	}
	return out
}

// same compares bit for bit.
func same(got, want []float64) error {
	if (got == nil) != (want == nil) {
		return fmt.Errorf("got %d elements (nil: %v), want %d (nil: %v)", len(got), got == nil, len(want), want == nil)
	}
	if len(got) != len(want) {
		return fmt.Errorf("got %d elements, want %d", len(got), len(want))
	}
	for i := range got {
		if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
			return fmt.Errorf("element %d = %v, want %v", i, got[i], want[i])
		}
	}
	return nil
}

// op is one collective call and its expected result on this site.
type op struct {
	name string
	run  func() ([]float64, error)
	want []float64 // nil: the future holds nil
}

func runOps(ctx context.Context, what string, ops []op) error {
	for _, o := range ops {
		got, err := o.run()
		if err != nil {
			return fmt.Errorf("%s %s: %w", what, o.name, err)
		}
		if err := same(got, o.want); err != nil {
			return fmt.Errorf("%s %s: %w", what, o.name, err)
		}
	}
	return nil
}

// allOps is every operation on c with m elements per site; salt varies the
// inputs between payload sizes.
func allOps(ctx context.Context, c *runtime.Communicator, m, salt int) []op {
	p, me, root := c.Size(), c.Site(), c.Root()
	mine := input(me, m, salt)
	sum := reduce(0, p-1, m, salt, runtime.ReduceSum)
	var all []float64
	for s := range p {
		all = append(all, input(s, m, salt)...)
	}
	ops := []op{
		{"AllReduce/sum", func() ([]float64, error) { return c.AllReduce(ctx, mine, runtime.ReduceSum).Get(ctx) }, sum},
		{"AllReduce/max", func() ([]float64, error) { return c.AllReduce(ctx, mine, runtime.ReduceMax).Get(ctx) },
			reduce(0, p-1, m, salt, runtime.ReduceMax)},
		{"AllGather", func() ([]float64, error) { return c.AllGather(ctx, mine).Get(ctx) }, all},
	}
	// Broadcast: the root sends its input.
	var bdata []float64
	if me == root {
		bdata = mine
	}
	ops = append(ops, op{"Broadcast", func() ([]float64, error) { return c.Broadcast(ctx, bdata).Get(ctx) }, input(root, m, salt)})
	rwant, gwant := []float64(nil), []float64(nil)
	if me == root {
		rwant, gwant = sum, all
	}
	ops = append(ops,
		op{"Reduce", func() ([]float64, error) { return c.Reduce(ctx, mine, runtime.ReduceSum).Get(ctx) }, rwant},
		op{"Gather", func() ([]float64, error) { return c.Gather(ctx, mine).Get(ctx) }, gwant})
	// Scatter: the root's data is the p inputs of salt+1, one per site.
	var sdata []float64
	if me == root {
		for s := range p {
			sdata = append(sdata, input(s, m, salt+1)...)
		}
	}
	ops = append(ops, op{"Scatter", func() ([]float64, error) { return c.Scatter(ctx, sdata).Get(ctx) }, input(me, m, salt+1)})
	ops = append(ops, op{"Barrier", func() ([]float64, error) {
		return []float64{}, c.Barrier(ctx).Err(ctx)
	}, []float64{}})
	ops = append(ops, op{"InclusiveScan", func() ([]float64, error) { return c.InclusiveScan(ctx, mine, runtime.ReduceSum).Get(ctx) },
		reduce(0, me, m, salt, runtime.ReduceSum)})
	const init = 100
	ewant := make([]float64, m)
	for i := range ewant {
		ewant[i] = init
	}
	if me > 0 {
		for i, x := range reduce(0, me-1, m, salt, runtime.ReduceSum) {
			ewant[i] += x
		}
	}
	ops = append(ops, op{"ExclusiveScan", func() ([]float64, error) { return c.ExclusiveScan(ctx, mine, init, runtime.ReduceSum).Get(ctx) }, ewant})
	// AllToAll: blocks of ceil(m/p) elements; block j of site s is input
	// s*p+j, so the payload is at least m elements per site.
	b := (m + p - 1) / p
	var a2a, a2aWant []float64
	for j := range p {
		a2a = append(a2a, input(me*p+j, b, salt)...)
		a2aWant = append(a2aWant, input(j*p+me, b, salt)...)
	}
	ops = append(ops, op{"AllToAll", func() ([]float64, error) { return c.AllToAll(ctx, a2a).Get(ctx) }, a2aWant})
	return ops
}

func check(ctx context.Context, rt *runtime.Runtime) error {
	n := int(rt.NumLocalities())
	here := int(rt.Here())
	root := n - 1 // != 0 from two localities on
	c, err := runtime.NewCommunicator(rt, "colljob.all", nil, root)
	if err != nil {
		return err
	}
	defer c.Close()
	for _, sz := range []struct {
		name string
		m    int
	}{{"small", 5}, {"uneven", 10007}, {"4MiB", 4 << 20 / 8}} {
		if err := runOps(ctx, sz.name, allOps(ctx, c, sz.m, sz.m%11)); err != nil {
			return err
		}
	}

	// Back-to-back AllReduce generations. Every site starts the next one
	// as soon as its own result is in, and now and then a site dawdles, so
	// sites run ahead of each other.
	const gens = 200
	for g := range gens {
		if (g+here)%37 == 0 {
			time.Sleep(time.Duration(here+1) * 300 * time.Microsecond)
		}
		d := []float64{float64(here*1000 + g), float64(g), 1}
		got, err := c.AllReduce(ctx, d, runtime.ReduceSum).Get(ctx)
		if err != nil {
			return fmt.Errorf("generation %d: AllReduce: %w", g, err)
		}
		want := []float64{float64(1000*n*(n-1)/2 + n*g), float64(n * g), float64(n)}
		if err := same(got, want); err != nil {
			return fmt.Errorf("AllReduce generation %d: %w", g, err)
		}
	}

	// Disjoint sub-communicators over the odd and the even localities,
	// working at the same time; the root of each is its last site.
	var sub []uint32
	for l := here % 2; l < n; l += 2 {
		sub = append(sub, uint32(l))
	}
	name := map[int]string{0: "colljob.even", 1: "colljob.odd"}[here%2]
	sc, err := runtime.NewCommunicator(rt, name, sub, len(sub)-1)
	if err != nil {
		return err
	}
	defer sc.Close()
	for _, m := range []int{7, 3 << 17} {
		if err := runOps(ctx, fmt.Sprintf("%s (%d elements)", name, m), allOps(ctx, sc, m, here%2+m%5)); err != nil {
			return err
		}
	}

	if err := c.Barrier(ctx).Err(ctx); err != nil {
		return fmt.Errorf("final Barrier: %w", err)
	}
	return nil
}

// spin runs AllReduce of m elements over all localities until it fails.
func spin(ctx context.Context, rt *runtime.Runtime, m int) error {
	c, err := runtime.NewCommunicator(rt, "colljob.spin", nil, 0)
	if err != nil {
		return err
	}
	n := float64(rt.NumLocalities())
	v := make([]float64, m)
	for g := 0; ; g++ {
		v[0], v[m-1] = 1, float64(g)
		got, err := c.AllReduce(ctx, v, runtime.ReduceSum).Get(ctx)
		if err != nil {
			return err
		}
		if got[0] != n || got[m-1] != n*float64(g) {
			return fmt.Errorf("generation %d: AllReduce gave %v ... %v", g, got[0], got[m-1])
		}
		if g == 50 {
			fmt.Println("ready")
		}
		if g%16 == 0 {
			time.Sleep(time.Millisecond)
		}
	}
}
