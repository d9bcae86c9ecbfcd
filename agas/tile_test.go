package agas

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/parcel"
	"github.com/tessera-amt/tessera/runtime"
	"github.com/tinylib/msgp/msgp"
)

// tile is a distributed array's tile as a component: its annotation and
// its data, which migrates as one raw chunk.
type tile struct {
	Ann  annotate.Annotation
	Data []float64
}

// Moved keeps the annotation's locality true after a migration.
func (t *tile) Moved(ctx context.Context, locality uint32) { t.Ann.Locality = int(locality) }

func (t *tile) MarshalParcel(b []byte) ([]byte, [][]byte, error) {
	return msgp.AppendString(b, t.Ann.String()), [][]byte{parcel.Float64Bytes(t.Data)}, nil
}

func (t *tile) UnmarshalParcel(b []byte, chunks [][]byte) error {
	s, _, err := msgp.ReadStringBytes(b)
	if err != nil {
		return err
	}
	if t.Ann, err = annotate.Parse(s); err != nil {
		return err
	}
	t.Data = make([]float64, len(chunks[0])/8)
	copy(parcel.Float64Bytes(t.Data), chunks[0])
	return nil
}

// A migrated tile's annotation names its new locality, and its data
// arrives whole.
func TestMigratedTileAnnotation(t *testing.T) {
	reg := runtime.NewRegistry()
	s := New(reg)
	describe := RegisterMethod(reg, s, "tile.describe", func(ctx context.Context, tl *tile, _ struct{}) (string, error) {
		sum := 0.0
		for _, v := range tl.Data {
			sum += v
		}
		return fmt.Sprintf("%s sum=%g", tl.Ann, sum), nil
	})
	ctx := testCtx(t)
	job, err := runtime.StartLocal(ctx, 3, runtime.Config{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer job.Close()
	tiling, err := annotate.New(annotate.Row, []int{6, 4}, 3)
	if err != nil {
		t.Fatal(err)
	}
	ann, err := annotate.NewAnnotation("A", 0, tiling)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]float64, 8) // locality 0's 2x4 rows
	for i := range data {
		data[i] = float64(i)
	}
	gid := Create(s, job.Localities[0], &tile{Ann: ann, Data: data})
	for _, to := range []uint32{2, 1} {
		if err := s.Migrate(ctx, job.Localities[0], gid, to); err != nil {
			t.Fatal(err)
		}
		got, err := Call(ctx, s, job.Localities[0], gid, describe, struct{}{}).Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf(`["locality", %d, 3]`, to); !strings.Contains(got, want) || !strings.HasSuffix(got, "sum=28") {
			t.Fatalf("after migrating to %d: %s; want %s and sum=28", to, got, want)
		}
	}
}

// CreateOn puts a component on another locality, which becomes its home.
func TestCreateOn(t *testing.T) {
	job, s, m, ctx := counterJob(t, 3)
	defer job.Close()
	rt0 := job.Localities[0]
	gid, err := CreateOn(ctx, s, rt0, 2, &counter{Total: 41})
	if err != nil {
		t.Fatal(err)
	}
	if gid.Home() != 2 {
		t.Fatalf("CreateOn(2) made %v, homed at %d", gid, gid.Home())
	}
	if n, err := Call(ctx, s, job.Localities[1], gid, m.add, uint64(1)<<32|1).Get(ctx); err != nil || n != 42 {
		t.Fatalf("call on the created object: %d, %v", n, err)
	}
	if live := s.Counters(job.Localities[2]).LiveObjects; live != 1 {
		t.Fatalf("locality 2 has %d objects", live)
	}
	if _, err := CreateOn(ctx, s, rt0, 7, &counter{}); err == nil || !strings.Contains(err.Error(), "locality 7") {
		t.Fatalf("CreateOn a locality outside the job: %v", err)
	}
	if _, err := CreateOn(ctx, s, rt0, 1, &struct{ X int }{}); err == nil || !strings.Contains(err.Error(), "cannot travel") {
		t.Fatalf("CreateOn of a type that cannot travel: %v", err)
	}
}
