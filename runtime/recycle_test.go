package runtime

import (
	"context"
	"testing"

	"github.com/tessera-amt/tessera/parcel"
)

// NewTile hands out the memory of a released tile of the asked length or
// at most a quarter longer, zeroed, and fresh memory otherwise; slices too small to keep are
// never reused.
func TestNewTileReusesReleasedMemory(t *testing.T) {
	ctx := testCtx(t)
	job, err := StartLocal(ctx, 1, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer job.Close()
	rt := job.Localities[0]
	ot := NewTile(rt, 4096, TileOptions{})
	old := ot.Float64s()
	for i := range old {
		old[i] = 7
	}
	ot.Release()
	if b := NewTile(rt, 3000, TileOptions{}).Float64s(); &b[0] == &old[0] {
		t.Errorf("NewTile(3000) got the released memory of 4096, more than a quarter longer")
	}
	b := NewTile(rt, 4096, TileOptions{}).Float64s()
	if &b[0] != &old[0] {
		t.Fatalf("NewTile(4096) did not reuse the released memory of 4096")
	}
	for i, v := range b {
		if v != 0 {
			t.Fatalf("reused element %d is %v, want it zeroed", i, v)
		}
	}
	bt := NewTile(rt, 4096, TileOptions{})
	if c := bt.Float64s(); &c[0] == &b[0] {
		t.Errorf("the released memory was handed out twice")
	}
	bt.Release()
	if c := NewTile(rt, 3500, TileOptions{}).Float64s(); &c[0] != &bt.data[0] || len(c) != 3500 {
		t.Errorf("NewTile(3500) did not get the released memory of 4096 cut to its length")
	}
	small := make([]float64, parcel.SmallChunks/8)
	AdoptTile(rt, small).Release()
	if c := NewTile(rt, len(small), TileOptions{}).Float64s(); &c[0] == &small[0] {
		t.Errorf("a slice of %d bytes was kept, want slices of at most parcel.SmallChunks left to the collector", 8*len(small))
	}
}

// Memory an action releases receives the next parcel of the same size.
func TestReleasedArgumentIsReused(t *testing.T) {
	ctx := testCtx(t)
	reg := NewRegistry()
	seen := make(chan *float64, 2)
	keep := Register(reg, "test.keep", func(ctx context.Context, v []float64) (float64, error) {
		seen <- &v[0]
		s := 0.0
		for _, x := range v {
			s += x
		}
		AdoptTile(FromContext(ctx), v).Release()
		return s, nil
	})
	job, err := StartLocal(ctx, 2, Config{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer job.Close()
	rt := job.Localities[0]
	for round := range 2 {
		v := make([]float64, 4096)
		for i := range v {
			v[i] = float64(round + 1)
		}
		s, err := Async(ctx, rt.Locality(1), keep, v).Get(ctx)
		if err != nil || s != float64(4096*(round+1)) {
			t.Fatalf("round %d: sum %v, %v", round, s, err)
		}
	}
	if a, b := <-seen, <-seen; a != b {
		t.Errorf("the second call's argument was not read into the released memory")
	}
}
