// Command tour is the program of the README's five-minute tour. Every Go
// snippet in README.md is an excerpt of this file, and a test checks that
// it is, builds the first snippet alone and runs this program on four
// localities, so the tour cannot drift from what compiles and runs.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/tessera-amt/tessera/runtime"
	// ... and, for sections 4 and 5:
	"github.com/tessera-amt/tessera/agas"
	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/primitives"
)

func main() {
	reg := runtime.NewRegistry()
	square := runtime.Register(reg, "tour.square", func(ctx context.Context, x int) (int, error) {
		return x * x, nil
	})
	// ... sections 4 and 5 register more here
	gas := agas.New(reg) // once per registry: objects and arrays share it
	add := agas.RegisterMethod(reg, gas, "counter.add",
		func(ctx context.Context, c *Counter, n int) (int, error) { c.N += n; return c.N, nil })
	acts := primitives.Register(reg, gas) // before the runtime starts, with AGAS

	os.Exit(runtime.Main(runtime.Config{Registry: reg}, func(ctx context.Context, rt *runtime.Runtime) error {
		// Ask the next locality to square our id; chain a continuation.
		next := rt.Locality((rt.Here() + 1) % rt.NumLocalities())
		f := runtime.Async(ctx, next, square, int(rt.Here()))
		msg := runtime.Then(ctx, f, func(ctx context.Context, sq int) (string, error) {
			return fmt.Sprintf("locality %d of %d: %d squared on %d is %d",
				rt.Here(), rt.NumLocalities(), rt.Here(), next.Locality(), sq), nil
		})
		s, err := msg.Get(ctx)
		if err != nil {
			return err
		}
		fmt.Println(s)
		// ... sections 4 and 5 go on here
		if err := synchronise(ctx, rt, gas, add); err != nil {
			return err
		}
		if err := arrays(ctx, rt, acts); err != nil {
			return err
		}
		return nil
	}))
}

// synchronise is section 4: a collective, and an object called by its
// global id.
func synchronise(ctx context.Context, rt *runtime.Runtime, gas *agas.Service, add agas.Method[Counter, int, int]) error {
	comm, err := runtime.NewCommunicator(rt, "sums", nil, 0) // all localities, root 0
	if err != nil {
		return err
	}
	total, err := comm.AllReduce(ctx, []float64{float64(rt.Here())}, runtime.ReduceSum).Get(ctx)
	if err != nil {
		return err
	}

	gid := agas.Create(gas, rt, &Counter{})
	if err := gas.RegisterWithBasename(ctx, rt, "counter", gid, rt.Here()).Err(ctx); err != nil {
		return err
	}
	n, err := agas.Call(ctx, gas, rt, gid, add, 1).Get(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("locality %d: the ids add up to %g; its counter is at %d\n", rt.Here(), total[0], n)
	return nil
}

// arrays is section 5: a chain of distributed primitives.
func arrays(ctx context.Context, rt *runtime.Runtime, acts *primitives.Actions) error {
	e, err := primitives.NewEnv(rt, acts)
	if err != nil {
		return err
	}
	a := primitives.Random(ctx, e, []int{1000, 1000}, primitives.Tiled(annotate.Sym), 1)
	b := primitives.Transpose(ctx, e, a)
	c := primitives.CannonProduct(ctx, e, a, primitives.Retile(ctx, e, b, primitives.Tiled(annotate.Sym)))
	total, err := primitives.Sum(ctx, e, c).Get(ctx)
	if err != nil {
		return err
	}
	if rt.Here() == 0 {
		fmt.Printf("sum of A times its transpose: %.6g\n", total)
	}
	return nil
}

// Counter is an object that lives on one locality and is called by its
// global id from any other.
type Counter struct{ N int }
