package primitives

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/tessera-amt/tessera/runtime"
)

// released runs f and returns the error it panicked with (nil: no panic).
func released(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			e, ok := r.(error)
			if !ok {
				e = fmt.Errorf("panic %v", r)
			}
			err = e
		}
	}()
	f()
	return nil
}

// An array's local view is gone with Release: Local panics, Dense and
// View fail, each naming the array and wrapping runtime.ErrTileReleased.
func TestReleasedArrayViewsFail(t *testing.T) {
	runJob(t, 2, func(ctx context.Context, e *Env) error {
		x, err := Random(ctx, e, []int{8, 6}, Layout{Name: "gone"}, 1).Get(ctx)
		if err != nil {
			return err
		}
		x.Release()
		view := func() error { _, err := x.View(x.LocalBlock()); return err }
		dense := func() error { _, err := x.Dense(); return err }
		for _, c := range []struct {
			op  string
			err error
		}{
			{"Local", released(func() { x.Local() })},
			{"Dense", dense()},
			{"View", view()},
		} {
			if !errors.Is(c.err, runtime.ErrTileReleased) || !strings.Contains(c.err.Error(), "gone/0") ||
				!strings.Contains(c.err.Error(), fmt.Sprintf("locality %d", e.Locality())) || !strings.Contains(c.err.Error(), c.op) {
				return fmt.Errorf("%s of a released array: %v; want ErrTileReleased naming %s, gone/0 and locality %d", c.op, c.err, c.op, e.Locality())
			}
		}
		return nil
	})
}

// A fetch buffer released while the fetch's reply is on its way is not
// reused before the reply landed: a tile made meanwhile gets other memory
// and keeps its data, the released buffer cannot be read, and once the
// reply is in, its memory is reused.
func TestFetchBufferReleasedWhileReplyLands(t *testing.T) {
	shape := []int{16, 32}
	global := make([]float64, 16*32)
	for i := range global {
		global[i] = float64(i)
	}
	gate, done := make(chan struct{}), make(chan struct{})
	runJob(t, 2, func(ctx context.Context, e *Env) error {
		if e.Locality() == 1 {
			// Made only once locality 0's fetch waits for it.
			select {
			case <-gate:
			case <-ctx.Done():
				return ctx.Err()
			}
			x, err := FromGlobal(e, shape, Layout{Name: "late"}, global)
			if err != nil {
				return err
			}
			<-done
			x.Release()
			return nil
		}
		defer close(done)
		x, err := FromGlobal(e, shape, Layout{Name: "late"}, global)
		if err != nil {
			return err
		}
		defer x.Release()
		b := x.ann.Tiling.Tiles[1].Owned
		dst := runtime.NewTile(e.rt, b.Size(), runtime.TileOptions{})
		p := &dst.Float64s()[0]
		f := e.fetchTile(ctx, x, 1, b, dst)
		dst.Hold() // to read the reply below
		dst.Release()
		other := runtime.NewTile(e.rt, b.Size(), runtime.TileOptions{})
		o := other.Float64s()
		if &o[0] == p {
			return fmt.Errorf("a fetch buffer whose reply is on its way was reused")
		}
		for i := range o {
			o[i] = -1
		}
		close(gate)
		v, err := f.Get(ctx)
		if err != nil {
			return err
		}
		if &v[0] != p || v[0] != global[b[0].Start*32] || v[len(v)-1] != global[len(global)-1] {
			return fmt.Errorf("the reply (first %v, last %v) did not land in the released buffer's memory", v[0], v[len(v)-1])
		}
		dst.Unhold()
		// The memory went back with the last hold, poisoned (runJob): a
		// slice kept past Release reads NaN, not the next owner's data.
		if !math.IsNaN(v[0]) || !math.IsNaN(v[len(v)-1]) {
			return fmt.Errorf("the released buffer's memory reads %v ... %v after it went back, want NaN", v[0], v[len(v)-1])
		}
		for i, w := range o {
			if w != -1 {
				return fmt.Errorf("element %d of the tile made meanwhile is %v, want -1: the reply landed in it", i, w)
			}
		}
		if err := released(func() { dst.Float64s() }); !errors.Is(err, runtime.ErrTileReleased) {
			return fmt.Errorf("reading the released buffer: %v, want a panic with ErrTileReleased", err)
		}
		if q := &runtime.NewTile(e.rt, b.Size(), runtime.TileOptions{}).Float64s()[0]; q != p {
			return fmt.Errorf("the released buffer's memory was not reused after its reply landed")
		}
		// A buffer released before its fetch starts fails it.
		if _, err := e.fetchTile(ctx, x, 1, b, dst).Get(ctx); !errors.Is(err, runtime.ErrTileReleased) {
			return fmt.Errorf("fetch into a released buffer: %v, want ErrTileReleased", err)
		}
		return nil
	})
}
