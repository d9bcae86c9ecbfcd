package runtime

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// Operations issued in different orders on different sites still pair up
// by the generations reserved in program order.
func TestReservedGenerationsPairOperations(t *testing.T) {
	ctx := testCtx(t)
	job, err := StartLocal(ctx, 3, Config{})
	if err != nil {
		t.Fatal(err)
	}
	err = job.Run(ctx, func(ctx context.Context, rt *Runtime) error {
		c, err := NewCommunicator(rt, "reserve", nil, 0)
		if err != nil {
			return err
		}
		defer c.Close()
		first, err := c.Reserve()
		if err != nil {
			return err
		}
		second, err := c.Reserve()
		if err != nil {
			return err
		}
		me := float64(c.Site())
		issueFirst := func() *Future[[]float64] {
			return c.AllReduce(first.Context(ctx), []float64{me}, ReduceSum) // 0+1+2
		}
		issueSecond := func() *Future[[]float64] {
			return c.AllReduce(second.Context(ctx), []float64{10 * me, 1}, ReduceMax) // max
		}
		var a, b *Future[[]float64]
		if c.Site() == 0 { // the other order here
			b = issueSecond()
			a = issueFirst()
		} else {
			a = issueFirst()
			b = issueSecond()
		}
		av, err := a.Get(ctx)
		if err != nil {
			return err
		}
		bv, err := b.Get(ctx)
		if err != nil {
			return err
		}
		if av[0] != 3 || bv[0] != 20 || bv[1] != 1 {
			return fmt.Errorf("site %d: first %v, second %v", c.Site(), av, bv)
		}
		// An operation without a reservation takes the next generation.
		v, err := c.AllReduce(ctx, []float64{1}, ReduceSum).Get(ctx)
		if err != nil || v[0] != 3 {
			return fmt.Errorf("after the reservations: %v, %v", v, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A cancelled reservation fails its generation on every site instead of
// leaving them waiting.
func TestCancelledReservation(t *testing.T) {
	ctx := testCtx(t)
	job, err := StartLocal(ctx, 3, Config{})
	if err != nil {
		t.Fatal(err)
	}
	err = job.Run(ctx, func(ctx context.Context, rt *Runtime) error {
		c, err := NewCommunicator(rt, "cancel", nil, 0)
		if err != nil {
			return err
		}
		defer c.Close()
		r, err := c.Reserve()
		if err != nil {
			return err
		}
		if c.Site() == 1 {
			r.Cancel(errors.New("input failed"))
		} else {
			_, err := c.AllReduce(r.Context(ctx), []float64{1}, ReduceSum).Get(ctx)
			var me *MismatchError
			if !errors.As(err, &me) || !strings.Contains(err.Error(), "cancelled: input failed") {
				return fmt.Errorf("site %d: %v, want the cancellation", c.Site(), err)
			}
		}
		v, err := c.AllReduce(ctx, []float64{2}, ReduceSum).Get(ctx)
		if err != nil || v[0] != 6 {
			return fmt.Errorf("site %d after the cancelled generation: %v, %v", c.Site(), v, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
