package agas

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/runtime"
)

// tileJob starts n localities with a reader of the rows [from, to) of a
// tile (see tile_test.go) and a tile of 6 rows of 4 on locality 0.
func tileJob(t *testing.T, n int) (*runtime.LocalJob, *Service, Reader[tile, uint64], GID, context.Context) {
	t.Helper()
	reg := runtime.NewRegistry()
	s := New(reg)
	rows := RegisterReader(reg, s, "tile.rows", func(ctx context.Context, tl *tile, r uint64) ([]float64, error) {
		r0, r1 := int(r>>32), int(r&(1<<32-1))
		if r1 > len(tl.Data)/4 || r0 > r1 {
			return nil, fmt.Errorf("rows [%d, %d) of a tile of %d rows", r0, r1, len(tl.Data)/4)
		}
		out := make([]float64, 4*(r1-r0))
		copy(out, tl.Data[4*r0:4*r1])
		return out, nil
	})
	ctx := testCtx(t)
	job, err := runtime.StartLocal(ctx, n, runtime.Config{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	tiling, err := annotate.New(annotate.Row, []int{6 * n, 4}, n)
	if err != nil {
		t.Fatal(err)
	}
	ann, err := annotate.NewAnnotation("T", 0, tiling)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]float64, 24)
	for i := range data {
		data[i] = float64(i)
	}
	return job, s, rows, Create(s, job.Localities[0], &tile{Ann: ann, Data: data}), ctx
}

// rowSpan is the reader's argument for rows [r0, r1).
func rowSpan(r0, r1 int) uint64 { return uint64(r0)<<32 | uint64(r1) }

// checkRows reads rows [r0, r1) of the tile into memory of the caller's
// and checks them.
func checkRows(ctx context.Context, s *Service, rt *runtime.Runtime, gid GID, rows Reader[tile, uint64], r0, r1 int) error {
	dst := make([]float64, 4*(r1-r0))
	got, err := ReadInto(ctx, s, rt, gid, rows, rowSpan(r0, r1), dst).Get(ctx)
	if err != nil {
		return fmt.Errorf("locality %d reading rows [%d, %d): %w", rt.Here(), r0, r1, err)
	}
	if &got[0] != &dst[0] {
		return fmt.Errorf("locality %d: the rows were not read into the caller's memory", rt.Here())
	}
	for i, v := range got {
		if want := float64(4*r0 + i); v != want {
			return fmt.Errorf("locality %d: element %d of rows [%d, %d) is %v, want %v", rt.Here(), i, r0, r1, v, want)
		}
	}
	return nil
}

// Reads follow an object that moved twice: the first read from a locality
// that knew the old owner is forwarded, and the caller learns the new one.
func TestReadIntoFollowsMigrations(t *testing.T) {
	job, s, rows, gid, ctx := tileJob(t, 3)
	defer job.Close()
	rt0, rt1, rt2 := job.Localities[0], job.Localities[1], job.Localities[2]
	for _, rt := range job.Localities {
		if err := checkRows(ctx, s, rt, gid, rows, 1, 4); err != nil {
			t.Fatal(err)
		}
	}
	if !s.IsLocal(rt0, gid) || s.IsLocal(rt1, gid) {
		t.Fatalf("before any move: IsLocal says %v on its home, %v on locality 1", s.IsLocal(rt0, gid), s.IsLocal(rt1, gid))
	}
	if err := s.Migrate(ctx, rt1, gid, 2); err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(ctx, rt0, gid, 1); err != nil {
		t.Fatal(err)
	}
	if !s.IsLocal(rt1, gid) || s.IsLocal(rt0, gid) || s.IsLocal(rt2, gid) {
		t.Fatal("after moving to 2, then 1: IsLocal is not true on locality 1 alone")
	}
	if at, err := s.Owner(rt0, gid); err != nil || at != 1 {
		t.Fatalf("the home says the object is on %d (%v), want 1", at, err)
	}
	// Locality 2 last saw it arrive and leave: it forwards to 1. A read
	// from 0 goes where the home knows; from 2 straight to 1.
	before := s.Counters(rt2).Forwarded
	for _, rt := range job.Localities {
		if err := checkRows(ctx, s, rt, gid, rows, 0, 6); err != nil {
			t.Fatal(err)
		}
	}
	// Locality 0 cached locality 2 when it sent the object there; its
	// first read went to 2, which forwarded it and told 0 the new owner.
	if fw := s.Counters(rt2).Forwarded - before; fw != 1 {
		t.Errorf("locality 2 forwarded %d reads, want 1 (locality 0's, with a stale cache)", fw)
	}
	if at, err := s.Owner(rt0, gid); err != nil || at != 1 {
		t.Errorf("locality 0 owns %v in its cache after the forwarded read (%v), want 1", at, err)
	}
	before = s.Counters(rt2).Forwarded
	if err := checkRows(ctx, s, rt0, gid, rows, 2, 3); err != nil {
		t.Fatal(err)
	}
	if fw := s.Counters(rt2).Forwarded - before; fw != 0 {
		t.Errorf("locality 0's second read was forwarded again (%d)", fw)
	}
	// A reader's own error names the object's locality and the action.
	_, err := ReadInto(ctx, s, rt2, gid, rows, rowSpan(5, 9), nil).Get(ctx)
	var ae *runtime.ActionError
	if !errors.As(err, &ae) || ae.Locality != 1 {
		t.Fatalf("reading rows [5, 9): %v, want an ActionError from locality 1", err)
	}
	// After a free, reads fail with ErrFreed.
	if err := s.Free(ctx, rt2, gid); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadInto(ctx, s, rt1, gid, rows, rowSpan(0, 1), nil).Get(ctx); !errors.Is(err, ErrFreed) {
		t.Fatalf("read after free: %v, want ErrFreed", err)
	}
}

// Reads from every locality while the object migrates around them all:
// each read sees the whole, unchanged tile.
func TestReadsDuringMigrations(t *testing.T) {
	job, s, rows, gid, ctx := tileJob(t, 4)
	defer job.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for _, rt := range job.Localities {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 60 {
				if err := checkRows(ctx, s, rt, gid, rows, i%6, 6); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := range 20 {
		if err := s.Migrate(ctx, job.Localities[i%4], gid, uint32(i+1)%4); err != nil {
			t.Fatalf("migration %d: %v", i, err)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
