package runtime

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
)

// startTiles starts a job of n localities in this process with reg.
func startTiles(t *testing.T, n int, reg *Registry) (context.Context, *LocalJob) {
	t.Helper()
	ctx := testCtx(t)
	job, err := StartLocal(ctx, n, Config{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { job.Close() })
	return ctx, job
}

// mustPanicReleased runs f and checks that it panics with ErrTileReleased
// and a message naming the tile and the locality.
func mustPanicReleased(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		err, ok := r.(error)
		if !ok || !errors.Is(err, ErrTileReleased) {
			t.Fatalf("%s: panicked with %v, want ErrTileReleased", what, r)
		}
		if msg := err.Error(); !strings.Contains(msg, "locality 0") || !strings.Contains(msg, "tile of 4096 float64s") {
			t.Fatalf("%s: panic %q does not name the locality and the tile", what, msg)
		}
	}()
	f()
	t.Fatalf("%s: did not panic", what)
}

// A released tile cannot be read through its handle, and UseTile of it
// fails without running the call; the tile still says its length.
func TestTileUseAfterReleasePanics(t *testing.T) {
	_, job := startTiles(t, 1, nil)
	rt := job.Localities[0]
	tl := NewTile(rt, 4096, TileOptions{})
	tl.Float64s()[0] = 1
	tl.Release()
	if !tl.Released() || tl.Len() != 4096 {
		t.Fatalf("released tile: Released %v, Len %d; want true, 4096", tl.Released(), tl.Len())
	}
	mustPanicReleased(t, "Float64s after Release", func() { tl.Float64s() })
	ran := false
	err := UseTile(tl, func(b []float64) *Future[int] { ran = true; return MakeReady(len(b)) }).Err(context.Background())
	if !errors.Is(err, ErrTileReleased) || ran {
		t.Fatalf("UseTile of a released tile: %v, use ran %v; want ErrTileReleased, not run", err, ran)
	}
	if tl.Hold() {
		t.Fatal("Hold of a released tile succeeded")
	}
}

// Releasing twice gives the memory back once: two new tiles of the length
// do not share it.
func TestTileDoubleReleaseGivesBackOnce(t *testing.T) {
	_, job := startTiles(t, 1, nil)
	rt := job.Localities[0]
	tl := NewTile(rt, 4096, TileOptions{})
	p := &tl.Float64s()[0]
	tl.Release()
	tl.Release()
	a, b := NewTile(rt, 4096, TileOptions{}), NewTile(rt, 4096, TileOptions{})
	if pa, pb := &a.Float64s()[0], &b.Float64s()[0]; pa == pb || (pa != p && pb != p) {
		t.Fatalf("after two Releases the memory went to %v and %v (released %v): want it reused exactly once", pa, pb, p)
	}
	var none *Tile
	none.Release()
	if none.Float64s() != nil || none.Len() != 0 || none.Released() {
		t.Fatal("a nil tile is not empty")
	}
}

// A hold keeps the memory of a released tile from reuse until it ends;
// then the next tile of the length reuses it. Unhold without a Hold is a
// bug that panics.
func TestTileHoldDefersReuse(t *testing.T) {
	_, job := startTiles(t, 1, nil)
	rt := job.Localities[0]
	tl := NewTile(rt, 4096, TileOptions{})
	p := &tl.Float64s()[0]
	if !tl.Hold() || !tl.Hold() {
		t.Fatal("Hold of a live tile failed")
	}
	tl.Release()
	mustPanicReleased(t, "Float64s of a held, released tile", func() { tl.Float64s() })
	tl.Unhold()
	if q := &NewTile(rt, 4096, TileOptions{}).Float64s()[0]; q == p {
		t.Fatal("memory of a tile still held was reused")
	}
	tl.Unhold()
	if q := &NewTile(rt, 4096, TileOptions{}).Float64s()[0]; q != p {
		t.Fatal("memory of a released tile was not reused once its holds ended")
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "without a Hold") {
			t.Fatalf("Unhold without a Hold: %v, want a panic", r)
		}
	}()
	tl.Unhold()
}

// A tile released while a call's reply is on its way into it (UseTile
// around AsyncInto) is not reused before the reply landed: a tile made
// meanwhile gets other memory and keeps its data, and the released tile
// cannot be read. Once the reply is in, the memory is reused.
func TestTileReleasedWhileReplyLands(t *testing.T) {
	const n = 4096
	reg := NewRegistry()
	gate := make(chan struct{})
	slow := Register(reg, "test.slow", func(ctx context.Context, x float64) ([]float64, error) {
		<-gate
		v := make([]float64, n)
		for i := range v {
			v[i] = x
		}
		return v, nil
	})
	ctx, job := startTiles(t, 2, reg)
	rt := job.Localities[0]
	dst := NewTile(rt, n, TileOptions{})
	p := &dst.Float64s()[0]
	f := UseTile(dst, func(b []float64) *Future[[]float64] {
		return AsyncInto(ctx, rt.Locality(1), slow, 9, b)
	})
	dst.Release()
	other := NewTile(rt, n, TileOptions{})
	o := other.Float64s()
	if &o[0] == p {
		t.Fatal("a tile whose reply is on its way was reused")
	}
	for i := range o {
		o[i] = 1
	}
	close(gate)
	v, err := f.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(v) != n || &v[0] != p || v[n-1] != 9 {
		t.Fatalf("the reply (%d elements, last %v) did not land in the released tile's memory", len(v), v[len(v)-1])
	}
	for i, x := range o {
		if x != 1 {
			t.Fatalf("element %d of the tile made meanwhile is %v, want 1: the reply landed in it", i, x)
		}
	}
	mustPanicReleased(t, "Float64s of the released destination", func() { dst.Float64s() })
	if q := &NewTile(rt, n, TileOptions{}).Float64s()[0]; q != p {
		t.Fatal("the released tile's memory was not reused after its reply landed")
	}
}

// With Config.PoisonReleased, memory that goes back reads NaN through a
// slice kept past Release; the next tile is cleared all the same.
func TestPoisonReleasedTile(t *testing.T) {
	ctx := testCtx(t)
	job, err := StartLocal(ctx, 1, Config{PoisonReleased: true})
	if err != nil {
		t.Fatal(err)
	}
	defer job.Close()
	rt := job.Localities[0]
	tl := NewTile(rt, 4096, TileOptions{})
	kept := tl.Float64s()
	kept[0], kept[4095] = 1, 2
	tl.Release()
	if !math.IsNaN(kept[0]) || !math.IsNaN(kept[4095]) {
		t.Fatalf("a slice kept past Release reads %v ... %v, want NaN", kept[0], kept[4095])
	}
	if b := NewTile(rt, 4096, TileOptions{}).Float64s(); &b[0] != &kept[0] || b[0] != 0 || b[4095] != 0 {
		t.Fatalf("the poisoned memory came back as %v ... %v (reused: %v), want it reused and cleared", b[0], b[4095], &b[0] == &kept[0])
	}
}

// A lendable tile lent to another locality is not poisoned when its owner
// releases it: the borrower still reads it. Once both gave it back, the
// owner reuses the segment, cleared.
func TestPoisonSparesLentTile(t *testing.T) {
	ctx, job, ch := startSharing(t, 2, Config{PoisonReleased: true})
	rt := job.Localities
	vt := lendable(rt[0], lendFloats)
	v := vt.Float64s()
	v[3] = 3
	if err := ch[0].Lend(ctx, 1, 1, v).Err(ctx); err != nil {
		t.Fatal(err)
	}
	w, err := ch[1].Get(ctx, 0, 1).Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	vt.Release()
	if w[3] != 3 {
		t.Fatalf("the borrower reads %v after the owner released the tile, want 3", w[3])
	}
	AdoptTile(rt[1], w).Release()
	u := lendable(rt[0], lendFloats)
	if !same(u.Float64s(), v) || u.Float64s()[3] != 0 {
		t.Fatalf("the segment given back by both was not reused cleared")
	}
}
