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
			return first.AllReduce(ctx, []float64{me}, ReduceSum) // 0+1+2
		}
		issueSecond := func() *Future[[]float64] {
			return second.AllReduce(ctx, []float64{10 * me, 1}, ReduceMax) // max
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
			_, err := r.AllReduce(ctx, []float64{1}, ReduceSum).Get(ctx)
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

type reservationKey struct{}

// Regression: a reservation used to travel in a context, and the first
// collective of its communicator called with that context — or any
// context derived from it — took the reserved generation, whichever
// operation it was. Now a context holds no reservation: an operation
// called with a context that once carried one takes the next generation,
// and the operation issued later on the reservation takes the reserved
// one and matches across the sites.
func TestContextDoesNotCarryReservation(t *testing.T) {
	ctx := testCtx(t)
	job, err := StartLocal(ctx, 3, Config{})
	if err != nil {
		t.Fatal(err)
	}
	err = job.Run(ctx, func(ctx context.Context, rt *Runtime) error {
		c, err := NewCommunicator(rt, "reserve.ctx", nil, 0)
		if err != nil {
			return err
		}
		defer c.Close()
		r, err := c.Reserve()
		if err != nil {
			return err
		}
		me := float64(c.Site())
		carrying := context.WithValue(ctx, reservationKey{}, r)
		earlier := c.AllReduce(carrying, []float64{me}, ReduceSum)
		if g := c.Generation(); g != 2 {
			return fmt.Errorf("site %d: communicator at generation %d after a reservation and an operation, want 2", c.Site(), g)
		}
		later := r.AllReduce(ctx, []float64{10 * me, 1}, ReduceMax)
		ev, err := earlier.Get(ctx)
		if err != nil {
			return fmt.Errorf("site %d: the operation with the carrying context: %w", c.Site(), err)
		}
		lv, err := later.Get(ctx)
		if err != nil {
			return fmt.Errorf("site %d: the reserved operation: %w", c.Site(), err)
		}
		if ev[0] != 3 || lv[0] != 20 || lv[1] != 1 {
			return fmt.Errorf("site %d: earlier %v (want [3]), reserved %v (want [20 1])", c.Site(), ev, lv)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A reservation serves one operation: a second one, or one after Cancel,
// fails at once with an error naming the operation, the communicator, the
// site and the generation, and takes no generation of the communicator's.
func TestReservationServesOneOperation(t *testing.T) {
	ctx := testCtx(t)
	rt := startOne(t, Config{})
	c, err := NewCommunicator(rt, "reserve.once", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := c.Reserve()
	if err != nil {
		t.Fatal(err)
	}
	if r.Communicator() != c || r.Generation() != 1 {
		t.Fatalf("reservation of %p generation %d, want %p generation 1", r.Communicator(), r.Generation(), c)
	}
	if v, err := r.AllReduce(ctx, []float64{2}, ReduceSum).Get(ctx); err != nil || v[0] != 2 {
		t.Fatalf("reserved AllReduce: %v, %v", v, err)
	}
	cancelled, err := c.Reserve()
	if err != nil {
		t.Fatal(err)
	}
	cancelled.Cancel(errors.New("input failed"))
	for _, again := range []*Reservation{r, cancelled} {
		_, err := again.Barrier(ctx).Get(ctx)
		want := fmt.Sprintf(`runtime: Barrier on communicator "reserve.once", site 0 (locality 0): generation %d was reserved`, again.Generation())
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("second use of generation %d: %v, want %q...", again.Generation(), err, want)
		}
	}
	if g := c.Generation(); g != 2 {
		t.Errorf("communicator at generation %d, want 2", g)
	}
}
