package primitives

import (
	"context"
	"testing"

	"github.com/tessera-amt/tessera/agas"
	"github.com/tessera-amt/tessera/runtime"
)

// BenchmarkMakeAndRelease is the cost of one small derived array on each
// of 2 localities, from the call to the release: AddScalar on a tile of
// 512 elements, its publication (table, AGAS) and its release.
func BenchmarkMakeAndRelease(b *testing.B) {
	ctx := context.Background()
	reg := runtime.NewRegistry()
	acts := Register(reg, agas.New(reg))
	job, err := runtime.StartLocal(ctx, 2, runtime.Config{Registry: reg})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	err = job.Run(ctx, func(ctx context.Context, rt *runtime.Runtime) error {
		e, err := NewEnv(rt, acts)
		if err != nil {
			return err
		}
		defer e.Close()
		x := Ones(ctx, e, []int{1024}, Layout{Name: "x"})
		for range b.N {
			y, err := AddScalar(ctx, e, x, 1).Get(ctx)
			if err != nil {
				return err
			}
			y.Release()
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}
