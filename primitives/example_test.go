package primitives_test

import (
	"context"
	"fmt"

	"github.com/tessera-amt/tessera/agas"
	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/primitives"
	"github.com/tessera-amt/tessera/runtime"
)

// A chain of distributed primitives on four localities: a matrix of ones,
// its Cannon product with itself, and the sum and the whole of the result.
// Every primitive returns a future at once; only Get waits.
func ExampleCannonProduct() {
	ctx := context.Background()
	reg := runtime.NewRegistry()
	acts := primitives.Register(reg, agas.New(reg))
	job, err := runtime.StartLocal(ctx, 4, runtime.Config{Registry: reg})
	if err != nil {
		fmt.Println(err)
		return
	}
	var sum float64
	var whole primitives.Whole
	err = job.Run(ctx, func(ctx context.Context, rt *runtime.Runtime) error {
		e, err := primitives.NewEnv(rt, acts)
		if err != nil {
			return err
		}
		defer e.Close()
		a := primitives.Ones(ctx, e, []int{4, 4}, primitives.Tiled(annotate.Sym))
		c := primitives.CannonProduct(ctx, e, a, a)
		total := primitives.Sum(ctx, e, c)
		all := primitives.AllGather(ctx, e, c)
		s, err := total.Get(ctx)
		if err != nil {
			return err
		}
		w, err := all.Get(ctx)
		if rt.Here() == 0 {
			sum, whole = s, w
		}
		return err
	})
	fmt.Println(sum, whole.Shape, whole.Data[:4], err)
	// Output: 64 [4 4] [4 4 4 4] <nil>
}
