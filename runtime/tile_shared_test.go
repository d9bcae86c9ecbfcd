package runtime

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/tessera-amt/tessera/internal/shm"
	"github.com/tessera-amt/tessera/parcel"
)

// lendFloats is 4 MiB of float64s: the least a lendable tile takes from
// shared memory.
const lendFloats = 1 << 19

// lendable returns a new lendable tile of n float64s on rt.
func lendable(rt *Runtime, n int) *Tile { return NewTile(rt, n, TileOptions{Lendable: true}) }

// startSharing starts n localities in this process with cfg and a
// Channel over all of them.
func startSharing(t *testing.T, n int, cfg Config) (context.Context, *LocalJob, []*Channel) {
	t.Helper()
	return startSharingWith(t, n, cfg, hooks{})
}

// startSharingWith is startSharing with the tests' hooks hk.
func startSharingWith(t *testing.T, n int, cfg Config, hk hooks) (context.Context, *LocalJob, []*Channel) {
	t.Helper()
	if !shm.Supported {
		t.Skip("no shared segments on this system: Lend is Set")
	}
	ctx := testCtx(t)
	job, err := startLocal(ctx, n, cfg, hk)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { job.Close() })
	chs := make([]*Channel, n)
	for i, rt := range job.Localities {
		if chs[i], err = NewChannel(rt, "test.lend", nil); err != nil {
			t.Fatal(err)
		}
	}
	return ctx, job, chs
}

func same(a, b []float64) bool { return unsafe.SliceData(a) == unsafe.SliceData(b) }

// TestChannelLendSharesMemory: a lendable tile lent to another locality
// on the machine arrives as the same memory (a write by its owner shows),
// passes on to a third locality the same way, and is reused by its owner
// only once both have released it.
func TestChannelLendSharesMemory(t *testing.T) {
	ctx, job, ch := startSharing(t, 3, Config{})
	rt := job.Localities
	vt := lendable(rt[0], lendFloats)
	v := vt.Float64s()
	for i := range v {
		v[i] = float64(i)
	}
	if err := ch[0].Lend(ctx, 1, 1, v).Err(ctx); err != nil {
		t.Fatal(err)
	}
	w, err := ch[1].Get(ctx, 0, 1).Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wt := AdoptTile(rt[1], w)
	if len(w) != lendFloats || w[lendFloats-1] != lendFloats-1 {
		t.Fatalf("lent value arrived with %d elements, last %v", len(w), w[len(w)-1])
	}
	if same(v, w) {
		t.Fatal("the borrower got the owner's slice, want a mapping of its own")
	}
	v[5] = -5
	if w[5] != -5 {
		t.Fatalf("borrower's element 5 is %v after the owner wrote -5: the value was copied", w[5])
	}
	if err := ch[1].Lend(ctx, 2, 2, w).Err(ctx); err != nil {
		t.Fatal(err)
	}
	x, err := ch[2].Get(ctx, 1, 2).Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	xt := AdoptTile(rt[2], x)
	if x[5] != -5 || x[7] != 7 {
		t.Fatalf("passed-on value has elements 5, 7 = %v, %v, want -5, 7", x[5], x[7])
	}
	for i, want := range []struct{ lent, borrowed uint64 }{{8 * lendFloats, 0}, {8 * lendFloats, 8 * lendFloats}, {0, 8 * lendFloats}} {
		if c := rt[i].Counters(); c.BytesLent != want.lent || c.BytesBorrowed != want.borrowed {
			t.Errorf("locality %d counted %d bytes lent, %d borrowed; want %d, %d", i, c.BytesLent, c.BytesBorrowed, want.lent, want.borrowed)
		}
	}

	vt.Release() // the owner is done; 1 and 2 still hold it
	u := lendable(rt[0], lendFloats).Float64s()
	if same(u, v) {
		t.Fatal("the owner reused a tile two localities still hold")
	}
	wt.Release()
	u2 := lendable(rt[0], lendFloats).Float64s()
	if same(u2, v) {
		t.Fatal("the owner reused a tile locality 2 still holds")
	}
	if x[5] != -5 {
		t.Fatal("the tile changed under locality 2")
	}
	xt.Release()
	r := lendable(rt[0], lendFloats).Float64s()
	if !same(r, v) {
		t.Fatal("the owner did not reuse its tile once every borrower recycled it")
	}
	if r[5] != 0 || r[lendFloats-1] != 0 {
		t.Fatal("a reused tile is not zeroed")
	}
}

// TestUnclearedTileReusesAsLeft: an Uncleared lendable tile reuses a
// released tile as it was left, a shared segment or ordinary memory
// alike, fresh memory zeroed; a cleared one clears the same memory when
// it is reused after that.
func TestUnclearedTileReusesAsLeft(t *testing.T) {
	_, job, _ := startSharing(t, 2, Config{})
	rt := job.Localities[0]
	for _, n := range []int{lendFloats, lendFloats / 4} { // a segment; ordinary memory (under 4 MiB)
		vt := NewTile(rt, n, TileOptions{Lendable: true, Uncleared: true})
		v := vt.Float64s()
		if len(v) != n || v[0] != 0 || v[n-1] != 0 {
			t.Fatalf("%d float64s: a fresh tile has %d elements, first and last %v %v; want zeros", n, len(v), v[0], v[n-1])
		}
		v[0], v[n-1] = 3, 4
		vt.Release()
		ut := NewTile(rt, n, TileOptions{Lendable: true, Uncleared: true})
		u := ut.Float64s()
		if !same(u, v) || u[0] != 3 || u[n-1] != 4 {
			t.Fatalf("%d float64s: the recycled tile came back as %v (same memory: %v), want it as left (3 ... 4)", n, []float64{u[0], u[n-1]}, same(u, v))
		}
		ut.Release()
		w := lendable(rt, n).Float64s()
		if !same(w, v) || w[0] != 0 || w[n-1] != 0 {
			t.Fatalf("%d float64s: a cleared tile gave back the tile with %v (same memory: %v), want it zeroed", n, []float64{w[0], w[n-1]}, same(w, v))
		}
	}
	if c := rt.Counters(); c.BytesLent != 0 {
		t.Fatalf("nothing was lent, yet %d bytes were counted", c.BytesLent)
	}
}

// TestChannelLendCopiesWhatIsNotShared: Lend of ordinary memory, of part
// of a tile, or to the lender's own site is Set: the receiver gets a copy.
func TestChannelLendCopiesWhatIsNotShared(t *testing.T) {
	ctx, job, ch := startSharing(t, 2, Config{})
	rt := job.Localities
	tile := lendable(rt[0], lendFloats).Float64s()
	for k, c := range []struct {
		name string
		v    []float64
		to   int
	}{
		{"ordinary memory", make([]float64, lendFloats), 1},
		{"part of a tile", tile[1:], 1},
		{"a tile to its own site", tile, 0},
		{"a small slice", lendable(rt[0], 10).Float64s(), 1},
	} {
		c.v[0] = 42
		tag := uint64(10 + k)
		if err := ch[0].Lend(ctx, c.to, tag, c.v).Err(ctx); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got, err := ch[c.to].Get(ctx, 0, tag).Get(ctx)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		c.v[0] = 1
		if len(got) != len(c.v) || got[0] != 42 {
			t.Fatalf("%s: got %d elements, first %v; want a copy of %d, first 42", c.name, len(got), got[0], len(c.v))
		}
	}
	if c := rt[0].Counters(); c.BytesLent != 0 {
		t.Fatalf("%d bytes counted as lent, want 0: every value was copied", c.BytesLent)
	}
}

// TestLendOfABadSegmentFails: a lent value that cannot be mapped — a
// descriptor of no segment, or a truncated one — fails the Get that waits
// for it with an error that says so.
func TestLendOfABadSegmentFails(t *testing.T) {
	ctx, job, ch := startSharing(t, 2, Config{})
	rt := job.Localities
	v := lendable(rt[0], lendFloats).Float64s()
	d, ok := rt[0].shared.Lend(v)
	if !ok {
		t.Fatal("a lendable tile is not lendable")
	}
	bogus := d
	bogus.Ino++
	for k, c := range []struct {
		name, want string
		args       func(b []byte) []byte
	}{
		{"another file", "cannot map", func(b []byte) []byte { return appendDesc(b, bogus) }},
		{"truncated", "segment descriptor", func(b []byte) []byte { return appendDesc(b, d)[:len(b)+5] }},
	} {
		tag := uint64(20 + k)
		h := collHeader{base: "test.lend", gen: tag, from: 0, op: opLent, count: anyCount}
		p := &parcel.Parcel{Header: parcel.Header{Kind: parcel.KindControl, Dest: 1, Action: ctlColl, Args: c.args(h.appendTo(nil))}}
		if err := rt[0].port.Send(ctx, p); err != nil {
			t.Fatal(err)
		}
		_, err := ch[1].Get(ctx, 0, tag).Get(ctx)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "lent") {
			t.Fatalf("%s: Get returned %v, want an error with %q", c.name, err, c.want)
		}
	}
}

// TestLendingOnlyToLocalitiesThatMapped: when the other localities
// cannot map locality 0's segments (the start barrier's probe fails),
// locality 0's Lend copies, and the others still lend to each other and
// to it.
func TestLendingOnlyToLocalitiesThatMapped(t *testing.T) {
	hk := hooks{mapProbe: func(from uint32, d shm.Desc) error {
		if from == 0 {
			return fmt.Errorf("permission denied (test)")
		}
		seg, err := shm.Map(d)
		if err == nil {
			seg.Close()
		}
		return err
	}}
	ctx, job, ch := startSharingWith(t, 3, Config{}, hk)
	rt := job.Localities
	for k, c := range []struct{ from, to int }{{0, 1}, {0, 2}, {1, 2}, {2, 0}} {
		v := lendable(rt[c.from], lendFloats).Float64s()
		v[1] = float64(k + 1)
		if err := ch[c.from].Lend(ctx, c.to, uint64(k), v).Err(ctx); err != nil {
			t.Fatal(err)
		}
		w, err := ch[c.to].Get(ctx, c.from, uint64(k)).Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		v[1] = -1
		shared := w[1] == -1
		if want := c.from != 0; shared != want || (!shared && w[1] != float64(k+1)) {
			t.Errorf("%d to %d: shared %v (element %v), want shared %v", c.from, c.to, shared, w[1], want)
		}
	}
	if c := rt[0].Counters(); c.BytesLent != 0 {
		t.Errorf("locality 0 lent %d bytes, want 0: nobody mapped its probe", c.BytesLent)
	}
}

// TestIdleMappingsAreBounded: mappings of lent tiles that a locality gave
// back stay for the next loan only up to Config.RecycleBytes, as they keep
// their segments' memory alive.
func TestIdleMappingsAreBounded(t *testing.T) {
	ctx, job, ch := startSharing(t, 2, Config{RecycleBytes: 2 * 8 * lendFloats})
	rt := job.Localities
	var got [][]float64
	for k := range 3 {
		v := lendable(rt[0], lendFloats).Float64s()
		v[0] = float64(k)
		if err := ch[0].Lend(ctx, 1, uint64(k), v).Err(ctx); err != nil {
			t.Fatal(err)
		}
		w, err := ch[1].Get(ctx, 0, uint64(k)).Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if w[0] != float64(k) {
			t.Fatalf("loan %d arrived with first element %v", k, w[0])
		}
		got = append(got, w)
	}
	s := &rt[1].shared
	if n, idle := s.Mappings(); n != 3 || idle != 0 {
		t.Errorf("3 tiles borrowed: %d mappings, %d idle bytes; want 3, 0", n, idle)
	}
	for _, w := range got {
		AdoptTile(rt[1], w).Release()
	}
	if n, idle := s.Mappings(); n != 2 || idle != 2*8*lendFloats {
		t.Errorf("all given back with room for 2: %d mappings, %d idle bytes; want 2, %d", n, idle, 2*8*lendFloats)
	}
}
