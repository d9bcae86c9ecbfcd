package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// Gets come first on odd sites, Sets on even ones: every value of tag 7
// for an odd site is sent once all of that site's Gets wait in its
// mailbox, and an even site Gets once all its values wait there.
func TestChannel(t *testing.T) {
	ctx := testCtx(t)
	job, err := StartLocal(ctx, 3, Config{Lanes: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer job.Close()
	getsWait := make([]chan struct{}, len(job.Localities)) // closed once the site's Gets wait
	for i := range getsWait {
		getsWait[i] = make(chan struct{})
	}
	err = job.Run(ctx, func(ctx context.Context, rt *Runtime) error {
		ch, err := NewChannel(rt, "test.chan", nil)
		if err != nil {
			return err
		}
		defer ch.Close()
		me, p := ch.Site(), ch.Size()
		var gets []*Future[[]float64]
		if me%2 == 1 {
			for from := range p {
				gets = append(gets, ch.Get(ctx, from, 7))
			}
			if err := waitUntil(ctx, fmt.Sprintf("the Gets of site %d wait", me), func() bool {
				return mailbox(rt, "test.chan").waitedOf(7) == p
			}); err != nil {
				return err
			}
			close(getsWait[me]) // nothing comes for them before this
		}
		for l := 1; l < p; l += 2 {
			select {
			case <-getsWait[l]:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		for to := range p {
			if err := ch.Set(ctx, to, 7, []float64{float64(10*me + to)}).Err(ctx); err != nil {
				return err
			}
		}
		if me%2 == 0 {
			if err := waitUntil(ctx, fmt.Sprintf("the values for site %d wait", me), func() bool {
				return mailbox(rt, "test.chan").heldOf(7) == p
			}); err != nil {
				return err
			}
			for from := range p {
				gets = append(gets, ch.Get(ctx, from, 7))
			}
		}
		for from, f := range gets {
			v, err := f.Get(ctx)
			if err != nil {
				return err
			}
			if len(v) != 1 || v[0] != float64(10*from+me) {
				return fmt.Errorf("site %d got %v from site %d", me, v, from)
			}
		}
		// Another tag, in a ring.
		next, prev := (me+1)%p, (me+p-1)%p
		if err := ch.Set(ctx, next, 8, []float64{1, 2, float64(me)}).Err(ctx); err != nil {
			return err
		}
		v, err := ch.Get(ctx, prev, 8).Get(ctx)
		if err != nil || len(v) != 3 || v[2] != float64(prev) {
			return fmt.Errorf("tag 8 from site %d: %v, %v", prev, v, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestChannelSetTravelsWhileSetterComputes: a value Set travels while the
// task that set it keeps the locality's only lane busy (as Cannon's
// multiply does while its next tiles travel): the receiver gets it before
// the setter lets go of its lane.
func TestChannelSetTravelsWhileSetterComputes(t *testing.T) {
	ctx := testCtx(t)
	job, err := StartLocal(ctx, 2, Config{Lanes: 1})
	if err != nil {
		t.Fatal(err)
	}
	var arrived atomic.Bool
	err = job.Run(ctx, func(ctx context.Context, rt *Runtime) error {
		ch, err := NewChannel(rt, "test.busy", nil)
		if err != nil {
			return err
		}
		defer ch.Close()
		if ch.Site() == 1 {
			v, err := ch.Get(ctx, 0, 1).Get(ctx)
			if err != nil || len(v) != 3 || v[2] != 3 {
				return fmt.Errorf("site 1 got %v, %v", v, err)
			}
			arrived.Store(true)
			return nil
		}
		sent := ch.Set(ctx, 1, 1, []float64{1, 2, 3})
		// Compute without waiting for a future: the lane stays taken.
		deadline := time.Now().Add(10 * time.Second)
		for !arrived.Load() {
			if time.Now().After(deadline) {
				return errors.New("site 0 held its only lane for 10 s and the value it set never arrived")
			}
		}
		return sent.Err(ctx)
	})
	if err != nil {
		t.Fatal(err)
	}
}
