package primitives

import (
	"context"
	"testing"
	"time"

	"github.com/tessera-amt/tessera/agas"
	"github.com/tessera-amt/tessera/annotate"
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

// BenchmarkCannonProduct is one CannonProduct of two 256 x 256 matrices on
// 4 localities in this process (a 2 x 2 grid), from the call to the
// release of the result. gemm-ratio is its time over one Dgemm of the
// whole matrices on one core, measured in the same run.
func BenchmarkCannonProduct(b *testing.B) {
	const n = 256
	ctx := context.Background()
	reg := runtime.NewRegistry()
	acts := Register(reg, agas.New(reg))
	job, err := runtime.StartLocal(ctx, 4, runtime.Config{Registry: reg})
	if err != nil {
		b.Fatal(err)
	}
	defer job.Close()
	whole := make([]float64, n*n)
	for i := range whole {
		whole[i] = float64(i%13) / 7
	}
	out := make([]float64, n*n)
	start := time.Now()
	const gemms = 5
	for range gemms {
		gemm(general(n, n, n, whole), general(n, n, n, whole), general(n, n, n, out), true)
	}
	perGemm := time.Since(start) / gemms
	b.ResetTimer()
	err = job.Run(ctx, func(ctx context.Context, rt *runtime.Runtime) error {
		e, err := NewEnv(rt, acts)
		if err != nil {
			return err
		}
		defer e.Close()
		sym := Layout{Kind: annotate.Sym}
		x, err := FromGlobal(e, []int{n, n}, sym, whole)
		if err != nil {
			return err
		}
		for range b.N {
			c, err := CannonProduct(ctx, e, runtime.MakeReady(x), runtime.MakeReady(x)).Get(ctx)
			if err != nil {
				return err
			}
			c.Release()
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.Elapsed())/float64(b.N)/float64(perGemm), "gemm-ratio")
}

// BenchmarkFetchRemoteTile is one Fetch by locality 0 of locality 1's
// tile of 512 elements on 3 localities: from its locality, by name (home),
// and after the tile moved to locality 2, through AGAS from the owner in
// the cache (moved).
func BenchmarkFetchRemoteTile(b *testing.B) {
	for _, moved := range []bool{false, true} {
		name := "home"
		if moved {
			name = "moved"
		}
		b.Run(name, func(b *testing.B) { benchmarkFetch(b, moved) })
	}
}

func benchmarkFetch(b *testing.B, moved bool) {
	ctx := context.Background()
	reg := runtime.NewRegistry()
	acts := Register(reg, agas.New(reg))
	job, err := runtime.StartLocal(ctx, 3, runtime.Config{Registry: reg})
	if err != nil {
		b.Fatal(err)
	}
	defer job.Close()
	err = job.Run(ctx, func(ctx context.Context, rt *runtime.Runtime) error {
		e, err := NewEnv(rt, acts)
		if err != nil {
			return err
		}
		defer e.Close()
		x, err := Ones(ctx, e, []int{3 * 16, 32}, Layout{Name: "x"}).Get(ctx)
		if err != nil {
			return err
		}
		tile := x.Annotation().Tiling.Tiles[1].Owned
		if _, err := x.Fetch(ctx, tile).Get(ctx); err != nil { // names it everywhere
			return err
		}
		if moved && e.Locality() == 1 {
			if err := MigrateTile(ctx, x, 1, 2); err != nil {
				return err
			}
		}
		if err := Sum(ctx, e, runtime.MakeReady(x)).Err(ctx); err != nil {
			return err
		}
		if e.Locality() == 0 {
			if _, err := x.Fetch(ctx, tile).Get(ctx); err != nil { // learns where it is
				return err
			}
			b.ResetTimer()
			for range b.N {
				v, err := x.Fetch(ctx, tile).Get(ctx)
				if err != nil {
					return err
				}
				runtime.AdoptTile(e.rt, v).Release()
			}
			b.StopTimer()
		}
		return Sum(ctx, e, runtime.MakeReady(x)).Err(ctx)
	})
	if err != nil {
		b.Fatal(err)
	}
}
