package agas_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/tessera-amt/tessera/agas"
	"github.com/tessera-amt/tessera/runtime"
)

// Tally is an object that lives on one locality.
type Tally struct {
	mu sync.Mutex
	N  int
}

// One locality creates an object and registers it under a symbolic name;
// every locality finds it by that name and calls a method on it by its
// global id. Calls from one locality run in the order it made them, but
// calls from different localities may run at the same time, so the method
// guards the object.
func ExampleCall() {
	ctx := context.Background()
	reg := runtime.NewRegistry()
	s := agas.New(reg)
	add := agas.RegisterMethod(reg, s, "tally.add", func(ctx context.Context, t *Tally, n int) (int, error) {
		t.mu.Lock()
		defer t.mu.Unlock()
		t.N += n
		return t.N, nil
	})
	job, err := runtime.StartLocal(ctx, 3, runtime.Config{Registry: reg})
	if err != nil {
		fmt.Println(err)
		return
	}
	var final int
	err = job.Run(ctx, func(ctx context.Context, rt *runtime.Runtime) error {
		comm, err := runtime.NewCommunicator(rt, "example", nil, 0)
		if err != nil {
			return err
		}
		defer comm.Close()
		if rt.Here() == 0 {
			gid := agas.Create(s, rt, &Tally{})
			if err := s.RegisterWithBasename(ctx, rt, "tally", gid, 0).Err(ctx); err != nil {
				return err
			}
		}
		gid, err := s.FindFromBasename(ctx, rt, "tally", 0).Get(ctx) // ready once registered
		if err != nil {
			return err
		}
		if err := agas.Call(ctx, s, rt, gid, add, int(rt.Here())+1).Err(ctx); err != nil {
			return err
		}
		if _, err := comm.Barrier(ctx).Get(ctx); err != nil { // every locality has added
			return err
		}
		if rt.Here() == 0 {
			final, err = agas.Call(ctx, s, rt, gid, add, 0).Get(ctx)
		}
		return err
	})
	fmt.Println(final, err)
	// Output: 6 <nil>
}
