package runtime

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// Messages for a communicator that a locality has not created yet wait for
// it, and an operation started before Close finishes after it. On three
// sites AllReduce folds site 0 into site 1, which then exchanges with
// site 2: locality 1 starts only once locality 0's operation waits behind
// its Close, and locality 2 creates its communicator only once locality
// 1's message is in its mailbox.
func TestCollectiveBeforeCreateAndAfterClose(t *testing.T) {
	ctx := testCtx(t)
	job, err := StartLocal(ctx, 3, Config{Lanes: 2, PointToPointCollectives: true})
	if err != nil {
		t.Fatal(err)
	}
	defer job.Close()
	err = job.Run(ctx, func(ctx context.Context, rt *Runtime) error {
		if rt.Here() == 2 { // the others' messages come first
			if err := waitUntil(ctx, "locality 1's message waits in locality 2's mailbox", func() bool {
				return mailbox(rt, "late").heldFrom(1, 1) > 0
			}); err != nil {
				return err
			}
		}
		c, err := NewCommunicator(rt, "late", nil, 0)
		if err != nil {
			return err
		}
		in := []float64{float64(rt.Here() + 1)}
		var f *Future[[]float64]
		switch rt.Here() {
		case 0: // closes at once: the operation it started goes on
			f = c.AllReduce(ctx, in, ReduceSum)
			c.Close()
			if f.IsReady() { // nobody else has started
				return fmt.Errorf("AllReduce on locality 0 finished before locality 1 took part")
			}
		case 1: // joins late, so locality 0 waits after its Close
			l0 := job.Localities[0]
			if err := waitUntil(ctx, "locality 0 closed its communicator and waits", func() bool {
				s := mailbox(l0, "late")
				return s.exists && !s.claimed && s.waitedOf(1) > 0
			}); err != nil {
				return err
			}
			f = c.AllReduce(ctx, in, ReduceSum)
			defer c.Close()
		default:
			f = c.AllReduce(ctx, in, ReduceSum)
			defer c.Close()
		}
		v, err := f.Get(ctx)
		if err != nil {
			return err
		}
		if len(v) != 1 || v[0] != 6 {
			return fmt.Errorf("locality %d: AllReduce = %v, want [6]", rt.Here(), v)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A locality that dies fails the operation on all the others, naming it.
func TestCollectiveKilledLocality(t *testing.T) {
	ctx := testCtx(t)
	job, err := StartLocal(ctx, 4, Config{Lanes: 2, PointToPointCollectives: true})
	if err != nil {
		t.Fatal(err)
	}
	defer job.Close()
	var fs []*Future[[]float64]
	for _, rt := range job.Localities[:3] {
		c, err := NewCommunicator(rt, "test.kill", nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		fs = append(fs, c.AllReduce(ctx, make([]float64, 100), ReduceSum))
	}
	// Kill locality 3 once every operation is under way: each waits for a
	// message that locality 3 sends, or that a site waiting for it does.
	for i, rt := range job.Localities[:3] {
		if err := waitUntil(ctx, fmt.Sprintf("locality %d's AllReduce waits", i), func() bool {
			return mailbox(rt, "test.kill").waitedOf(1) > 0
		}); err != nil {
			t.Fatal(err)
		}
	}
	job.Network.Kill(3)
	for i, f := range fs {
		_, err := f.Get(ctx)
		// Locality 3's peers notice first; the others may learn it from
		// their abort, so the error names 3 but may be another's
		// LocalityError.
		if !errors.Is(err, ErrLocalityDown) || !strings.Contains(err.Error(), "locality 3 down") {
			t.Errorf("locality %d: AllReduce with locality 3 killed: got %v", i, err)
		}
	}
	// Later operations fail at once.
	c, err := NewCommunicator(job.Localities[0], "test.kill2", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Barrier(ctx).Err(ctx); err == nil || !strings.Contains(err.Error(), "locality 3") {
		t.Errorf("barrier after the kill: got %v", err)
	}
}

// Calls that do not match fail on every site with an error naming the two
// sites that disagree; the next generation works.
func TestCollectiveMismatch(t *testing.T) {
	runComm(t, 3, 0, func(ctx context.Context, rt *Runtime, c *Communicator) error {
		m := 4
		if c.Site() == 2 {
			m = 5
		}
		_, err := c.AllReduce(ctx, make([]float64, m), ReduceSum).Get(ctx)
		var me *MismatchError
		if !errors.As(err, &me) || me.Generation != 1 || !strings.Contains(err.Error(), "site 2 (locality 2) called AllReduce with 5 elements") ||
			!strings.Contains(err.Error(), "called AllReduce with 4 elements") {
			return fmt.Errorf("mismatched counts: got %v", err)
		}
		// Different operations in one generation.
		var f *Future[struct{}]
		if c.Site() == 0 {
			f = c.Barrier(ctx)
		} else {
			f = Then(ctx, c.AllReduce(ctx, []float64{1}, ReduceSum), func(context.Context, []float64) (struct{}, error) { return struct{}{}, nil })
		}
		err = f.Err(ctx)
		if !errors.As(err, &me) || me.Generation != 2 || !strings.Contains(err.Error(), "called Barrier") || !strings.Contains(err.Error(), "called AllReduce") {
			return fmt.Errorf("mismatched operations: got %v", err)
		}
		v, err := c.AllReduce(ctx, []float64{float64(c.Site())}, ReduceSum).Get(ctx)
		if err != nil || v[0] != 3 {
			return fmt.Errorf("generation 3 after the mismatches: %v, %v", v, err)
		}
		return nil
	})
}

func TestNewCommunicatorChecks(t *testing.T) {
	ctx := testCtx(t)
	job, err := StartLocal(ctx, 3, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer job.Close()
	rt := job.Localities[1]
	for _, tc := range []struct {
		name  string
		sites []uint32
		root  int
		want  string
	}{
		{"", nil, 0, "empty basename"},
		{"a", []uint32{0, 2}, 0, "not one of its sites"},
		{"a", []uint32{1, 0}, 0, "ascending"},
		{"a", []uint32{1, 5}, 0, "out of range"},
		{"a", []uint32{0, 1}, 2, "root 2 out of range"},
	} {
		if _, err := NewCommunicator(rt, tc.name, tc.sites, tc.root); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewCommunicator(%q, %v, %d) = %v, want error with %q", tc.name, tc.sites, tc.root, err, tc.want)
		}
	}
	c, err := NewCommunicator(rt, "dup", []uint32{1}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewCommunicator(rt, "dup", nil, 0); err == nil || !strings.Contains(err.Error(), "exists already") {
		t.Errorf("duplicate basename: %v", err)
	}
	// A communicator of one site needs nobody else.
	if v, err := c.AllReduce(ctx, []float64{2}, ReduceProd).Get(ctx); err != nil || v[0] != 2 {
		t.Errorf("AllReduce on one site: %v, %v", v, err)
	}
	c.Close()
	if err := c.Barrier(ctx).Err(ctx); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Barrier after Close: %v", err)
	}
	if _, err := NewCommunicator(rt, "dup", nil, 0); err != nil {
		t.Errorf("basename not released by Close: %v", err)
	}
}

// An operation whose context ends returns the context's cause.
func TestCollectiveContextEnds(t *testing.T) {
	ctx := testCtx(t)
	job, err := StartLocal(ctx, 2, Config{Lanes: 2, PointToPointCollectives: true})
	if err != nil {
		t.Fatal(err)
	}
	defer job.Close()
	c, err := NewCommunicator(job.Localities[0], "test.ctx", nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	stop := errors.New("given up")
	cctx, cancel := context.WithCancelCause(ctx)
	f := c.AllReduce(cctx, []float64{1}, ReduceSum) // site 1 never takes part
	if err := waitUntil(ctx, "the AllReduce waits for site 1", func() bool {
		return mailbox(job.Localities[0], "test.ctx").waitedOf(1) > 0
	}); err != nil {
		t.Fatal(err)
	}
	cancel(stop)
	if _, err := f.Get(ctx); !errors.Is(err, stop) || !strings.Contains(err.Error(), `AllReduce on communicator "test.ctx", generation 1`) {
		t.Errorf("AllReduce whose context ended: got %v", err)
	}
}
