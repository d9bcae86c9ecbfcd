package runtime

import (
	"context"
	"errors"
	"fmt"
	"github.com/tessera-amt/tessera/runtime/internal/slots"
	"testing"
	"time"

	"github.com/tessera-amt/tessera/parcel"
)

// The payloads of small collective messages are read into their parcels'
// own memory; an operation that recycles them must not keep them (and the
// parcels with them) for reuse that never comes: that grew the heap by a
// parcel per message.
func TestSmallCollectivePayloadsAreNotKept(t *testing.T) {
	ctx := testCtx(t)
	rts := startTCPWith(t, 2, Config{Lanes: 1})
	err := spawnOnEach(ctx, rts, func(ctx context.Context, rt *Runtime) error {
		c, err := NewCommunicator(rt, "small", nil, 0)
		if err != nil {
			return err
		}
		defer c.Close()
		for g := range 200 {
			v, err := c.AllReduce(ctx, []float64{float64(g)}, ReduceSum).Get(ctx)
			if err != nil {
				return err
			}
			if v[0] != float64(2*g) {
				return fmt.Errorf("generation %d: %v", g, v)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range rts {
		held, lists := rt.recycle.Held()
		if held != 0 || lists != 0 {
			t.Errorf("locality %d keeps %d bytes in %d lists for reuse after 200 one-double AllReduces", rt.Here(), held, lists)
		}
	}
	finalizeAll(t, rts)
}

// The ring all-gather posts its receives: a site whose receives are posted
// before its blocks arrive has the port read them straight into its
// result, and one whose blocks came first copies them. Over TCP, 4 sites.
func TestRingAllGatherReadsIntoItsResult(t *testing.T) {
	const p, m = 4, 3 * ringThresholdBytes / 8
	ctx := testCtx(t)
	// Parcels: on one machine the sites' shared memory would carry it.
	rts := startTCPWith(t, p, Config{Lanes: 2, PointToPointCollectives: true})
	in := newInputs(m)
	for _, first := range []int{0, 3} {
		before := make([]uint64, p)
		for i, rt := range rts {
			before[i] = rt.coll.inPlace.Load()
		}
		// The others start once site `first` posted its p-1 receives. One
		// watcher sees that (nothing takes a receive back before the others
		// send) and tells them.
		posted := make(chan struct{})
		go func() {
			defer close(posted)
			for rts[first].coll.posted.Load() < p-1 && ctx.Err() == nil {
				time.Sleep(100 * time.Microsecond)
			}
		}()
		err := spawnOnEach(ctx, rts, func(ctx context.Context, rt *Runtime) error {
			c, err := NewCommunicator(rt, fmt.Sprintf("posted.%d", first), nil, 0)
			if err != nil {
				return err
			}
			defer c.Close()
			if c.Site() != first {
				select {
				case <-posted:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			v, err := c.AllGather(ctx, in.site(c.Site())).Get(ctx)
			if err != nil {
				return err
			}
			return sameFloats(v, in.concat(p))
		})
		if err != nil {
			t.Fatalf("site %d first: %v", first, err)
		}
		if got := rts[first].coll.inPlace.Load() - before[first]; got != p-1 {
			t.Errorf("site %d, which posted its receives first, read %d of its %d blocks in place", first, got, p-1)
		}
		for i, rt := range rts {
			if n := rt.coll.posted.Load(); n != 0 {
				t.Errorf("locality %d keeps %d posted receives after the operation", i, n)
			}
		}
	}
	finalizeAll(t, rts)
}

// A posted receive takes only the message it was posted for: its key, its
// sender's locality and its length; an abort of its generation takes it
// back.
func TestPostedReceiveTakesOnlyItsMessage(t *testing.T) {
	var m collMailbox
	b := m.box([]byte("posted"))
	dst := make([]float64, 1024)
	k := slots.Key{Gen: 7, Step: 1, From: 2}
	m.post(b, k, 5, dst)
	args := func(gen uint64, step, from uint32) []byte {
		h := collHeader{base: "posted", gen: gen, step: step, from: from, op: opAllGather}
		return h.appendTo(nil)
	}
	n := len(dst) * 8
	for _, c := range []struct {
		what   string
		source uint32
		args   []byte
		n      int
	}{
		{"another generation", 5, args(8, 1, 2), n},
		{"another step", 5, args(7, 2, 2), n},
		{"another site", 5, args(7, 1, 3), n},
		{"another locality", 4, args(7, 1, 2), n},
		{"another length", 5, args(7, 1, 2), n - 8},
		{"garbage", 5, []byte{0xc1}, n},
	} {
		if got := m.postedFor(c.source, c.args, c.n); got != nil {
			t.Errorf("%s: took the posted receive", c.what)
		}
	}
	got := m.postedFor(5, args(7, 1, 2), n)
	if len(got) != n || &got[0] != &parcel.Float64Bytes(dst)[0] {
		t.Fatalf("its message got %d bytes, not the posted memory", len(got))
	}
	if m.posted.Load() != 0 || m.postedFor(5, args(7, 1, 2), n) != nil {
		t.Errorf("the receive is still posted after its message took it")
	}
	m.post(b, k, 5, dst)
	m.abort(b, 7, errors.New("aborted"))
	if m.posted.Load() != 0 || m.postedFor(5, args(7, 1, 2), n) != nil {
		t.Errorf("the receive is still posted after its generation aborted")
	}
}

// A waiter's future, taken back once its message was taken, serves the
// next message as a new one; a message that came first is handed over
// without a future.
func TestCollMailboxReusesSlots(t *testing.T) {
	var m collMailbox
	s := &scheduler{}
	b := m.box([]byte("reuse"))
	if got := m.box([]byte("reuse")); got != b {
		t.Fatal("a second lookup of the name made a second box")
	}
	for i := range 100 {
		k := slots.Key{Gen: uint64(i + 1), Step: 1, From: 2}
		sent := collMsg{data: []float64{float64(i)}}
		// The waiter comes first on even rounds, the message on odd ones.
		if i%2 == 1 {
			if err := m.arrive(b, k, sent, nil); err != nil {
				t.Fatal(err)
			}
		}
		msg, f, err := m.wait(s, b, k)
		if err != nil {
			t.Fatal(err)
		}
		if (f == nil) != (i%2 == 1) {
			t.Fatalf("message %d: future %v for a waiter that came %s", i, f, map[bool]string{true: "second", false: "first"}[i%2 == 1])
		}
		if f != nil {
			if f.IsReady() {
				t.Fatalf("message %d: a waiter's future is ready before its message came", i)
			}
			go m.arrive(b, k, sent, nil)
			if msg, err = f.Get(context.Background()); err != nil {
				t.Fatal(err)
			}
			m.reuse(f)
		}
		if len(msg.data) != 1 || msg.data[0] != float64(i) {
			t.Fatalf("message %d: got %v", i, msg.data)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if n := b.slots.Len(); n != 0 {
		t.Errorf("%d slots left in the box", n)
	}
}
