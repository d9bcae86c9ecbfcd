// Command objectsjob is AGAS's real-process test program: every locality
// creates a counter, publishes it by name, calls every counter by GID, and
// moves its own counter to the next locality; then each checks its counter's
// total.
package main

import (
	"context"
	"fmt"
	"os"
	"sync"

	"github.com/tessera-amt/tessera/agas"
	"github.com/tessera-amt/tessera/runtime"
	"github.com/tinylib/msgp/msgp"
)

type counter struct {
	mu    sync.Mutex
	Total int64
}

func (c *counter) MarshalParcel(b []byte) ([]byte, [][]byte, error) {
	return msgp.AppendInt64(b, c.Total), nil, nil
}

func (c *counter) UnmarshalParcel(b []byte, _ [][]byte) error {
	var err error
	c.Total, _, err = msgp.ReadInt64Bytes(b)
	return err
}

func main() {
	reg := runtime.NewRegistry()
	s := agas.New(reg)
	add := agas.RegisterMethod(reg, s, "objectsjob.add", func(ctx context.Context, c *counter, n int64) (int64, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.Total += n
		return c.Total, nil
	})
	const calls = 50
	os.Exit(runtime.Main(runtime.Config{Registry: reg}, func(ctx context.Context, rt *runtime.Runtime) error {
		n := rt.NumLocalities()
		mine := agas.Create(s, rt, &counter{})
		if err := s.RegisterWithBasename(ctx, rt, "objectsjob", mine, rt.Here()).Err(ctx); err != nil {
			return err
		}
		gids, err := s.FindAll(ctx, rt, "objectsjob", n).Get(ctx)
		if err != nil {
			return err
		}
		var fs []*runtime.Future[int64]
		for _, g := range gids {
			for range calls {
				fs = append(fs, agas.Call(ctx, s, rt, g, add, 1))
			}
		}
		if err := s.Migrate(ctx, rt, mine, (rt.Here()+1)%n); err != nil {
			return err
		}
		if err := runtime.WhenAll(fs...).Err(ctx); err != nil {
			return err
		}
		// Everyone has made their calls once all passed this point.
		barrier := fmt.Sprintf("objectsjob-done-%d", rt.Here())
		if err := s.RegisterWithBasename(ctx, rt, barrier, mine, 0).Err(ctx); err != nil {
			return err
		}
		for l := range n {
			if _, err := s.FindFromBasename(ctx, rt, fmt.Sprintf("objectsjob-done-%d", l), 0).Get(ctx); err != nil {
				return err
			}
		}
		total, err := agas.Call(ctx, s, rt, mine, add, 0).Get(ctx)
		if err != nil {
			return err
		}
		if want := int64(calls * n); total != want {
			return fmt.Errorf("counter %v has %d, want %d", mine, total, want)
		}
		c := s.Counters(rt)
		fmt.Printf("locality %d: counter %v total %d, lives %d here now, %d migrations from here\n",
			rt.Here(), mine, total, c.LiveObjects, c.Migrations)
		return nil
	}))
}
