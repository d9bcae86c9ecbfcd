package primitives

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/runtime"
)

// TestBlockCyclicRetileMovesOnlyWhatMustMove checks, on every locality,
// that a retile to and from a block-cyclic layout fetches exactly the
// elements that change owner and go to it.
func TestBlockCyclicRetileMovesOnlyWhatMustMove(t *testing.T) {
	shape := []int{14, 11}
	ref := globalData(shape, 5, -1, 1)
	for _, loc := range []int{2, 4, 6} {
		p, q := gridOfSize(loc)
		t.Run(fmt.Sprintf("%d-localities", loc), func(t *testing.T) {
			runJob(t, loc, func(ctx context.Context, e *Env) error {
				row, err := FromGlobal(e, shape, Tiled(annotate.Row), ref)
				if err != nil {
					return err
				}
				cyc, err := BlockCyclic(shape, 3, p, q)
				if err != nil {
					return err
				}
				moved := func(src, dst annotate.Tiling) uint64 {
					ps, err := annotate.Plan(src, dst)
					if err != nil {
						t.Error(err)
					}
					n := 0
					for _, pc := range ps {
						if pc.To == e.Locality() && !pc.Local() {
							n += pc.Block.Size()
						}
					}
					return uint64(8 * n)
				}
				before := e.Counters().BytesFetched
				c, err := Retile(ctx, e, runtime.MakeReady(row), cyc).Get(ctx)
				if err != nil {
					return err
				}
				got := e.Counters().BytesFetched - before
				if want := moved(row.ann.Tiling, c.ann.Tiling); got != want {
					return fmt.Errorf("locality %d: row to block-cyclic fetched %d bytes, %d change owner to it", e.Locality(), got, want)
				}
				col, err := annotate.New(annotate.Column, shape, loc)
				if err != nil {
					return err
				}
				before = e.Counters().BytesFetched
				back, err := Retile(ctx, e, runtime.MakeReady(c), Layout{Tiling: &col}).Get(ctx)
				if err != nil {
					return err
				}
				got = e.Counters().BytesFetched - before
				if want := moved(c.ann.Tiling, col); got != want {
					return fmt.Errorf("locality %d: block-cyclic to column fetched %d bytes, %d change owner to it", e.Locality(), got, want)
				}
				return checkTile(back, ref, "block-cyclic to column")
			})
		})
	}
}

// Primitives that address tiles in global order refuse block-cyclic
// arrays, and new arrays cannot be made block-cyclic, each with an error
// that says to Retile.
func TestBlockCyclicRefusedElsewhere(t *testing.T) {
	runJob(t, 4, func(ctx context.Context, e *Env) error {
		shape := []int{8, 8}
		l, err := BlockCyclic(shape, 2, 2, 2)
		if err != nil {
			return err
		}
		if _, err := Random(ctx, e, shape, l, 1).Get(ctx); err == nil || !strings.Contains(err.Error(), "block-cyclic") || !strings.Contains(err.Error(), "Retile") {
			return fmt.Errorf("Random with a block-cyclic layout: %v", err)
		}
		cyc := Retile(ctx, e, Random(ctx, e, shape, Tiled(annotate.Row), 1), l)
		for name, f := range map[string]*runtime.Future[*Array]{"Add": Add(ctx, e, cyc, cyc), "Transpose": Transpose(ctx, e, cyc)} {
			if _, err := f.Get(ctx); err == nil || !strings.Contains(err.Error(), "is block-cyclic, which "+name+" does not read") {
				return fmt.Errorf("%s of a block-cyclic array: %v", name, err)
			}
		}
		if _, err := AllGather(ctx, e, cyc).Get(ctx); err == nil || !strings.Contains(err.Error(), "block-cyclic") {
			return fmt.Errorf("AllGather of a block-cyclic array: %v", err)
		}
		// Back to rows, it is an ordinary array again.
		if _, err := Sum(ctx, e, Retile(ctx, e, cyc, Tiled(annotate.Row))).Get(ctx); err != nil {
			return fmt.Errorf("Sum after a Retile to rows: %v", err)
		}
		return nil
	})
}
