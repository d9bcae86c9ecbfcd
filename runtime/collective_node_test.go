package runtime

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"github.com/tessera-amt/tessera/runtime/internal/nodecoll"
)

// onBoard tells whether c's operations go through the machine's shared
// memory.
func onBoard(c *Communicator) bool {
	c.node.mu.Lock()
	defer c.node.mu.Unlock()
	return c.node.board != nil
}

// nodeRounds runs AllReduce (sum and max), Broadcast from every root
// (small, and large enough for the tree) and Barrier for gens generations
// and returns each site's results, one slice per generation.
func nodeRounds(t *testing.T, n, gens int, cfg Config) [][][]float64 {
	t.Helper()
	ctx := testCtx(t)
	job, err := StartLocal(ctx, n, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer job.Close()
	out := make([][][]float64, n)
	err = job.Run(ctx, func(ctx context.Context, rt *Runtime) error {
		comms := make([]*Communicator, n)
		for root := range n {
			c, err := NewCommunicator(rt, fmt.Sprintf("test.node/%d", root), nil, root)
			if err != nil {
				return err
			}
			defer c.Close()
			comms[root] = c
		}
		c := comms[0]
		me := c.Site()
		var res [][]float64
		for g := range gens {
			// Integers: every order of summation gives the same bits, so
			// the board's results equal the parcels' exactly.
			in := []float64{float64(g*(me+1) - 3*me), float64(me), float64((g + me) % 5)}
			v, err := c.AllReduce(ctx, in, ReduceSum).Get(ctx)
			if err != nil {
				return fmt.Errorf("generation %d: AllReduce: %w", g, err)
			}
			res = append(res, v)
			if v, err = c.AllReduce(ctx, in[2:], ReduceMax).Get(ctx); err != nil {
				return fmt.Errorf("generation %d: AllReduce max: %w", g, err)
			}
			res = append(res, v)
			root := g % n
			var data []float64
			if me == root {
				data = make([]float64, 1+g%7)
				if g%10 == 9 {
					data = make([]float64, nodeMaxBytes/8+1+g) // by parcels
				}
				for i := range data {
					data[i] = float64(g*100 + root + i)
				}
			}
			if v, err = comms[root].Broadcast(ctx, data).Get(ctx); err != nil {
				return fmt.Errorf("generation %d: Broadcast from %d: %w", g, root, err)
			}
			res = append(res, v)
			if err := c.Barrier(ctx).Err(ctx); err != nil {
				return fmt.Errorf("generation %d: Barrier: %w", g, err)
			}
		}
		if want := n > 1 && !cfg.PointToPointCollectives; onBoard(c) != want || onBoard(comms[n-1]) != want {
			return fmt.Errorf("locality %d: on the board %v, %v; want %v", rt.Here(), onBoard(c), onBoard(comms[n-1]), want)
		}
		out[me] = res
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The board's AllReduce, Broadcast (every root, by the board and by
// parcels) and Barrier on 1 to 5 localities agree with the parcels'.
func TestNodeCollectivesAgainstParcels(t *testing.T) {
	gens := 300
	if testing.Short() || raceDetector {
		gens = 60
	}
	for n := 1; n <= 5; n++ {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			board := nodeRounds(t, n, gens, Config{Lanes: 2})
			parcels := nodeRounds(t, n, gens, Config{Lanes: 2, PointToPointCollectives: true})
			for s := range n {
				if len(board[s]) != len(parcels[s]) {
					t.Fatalf("site %d: %d results on the board, %d by parcels", s, len(board[s]), len(parcels[s]))
				}
				for i := range board[s] {
					if fmt.Sprint(board[s][i]) != fmt.Sprint(parcels[s][i]) || len(board[s][i]) == 0 {
						t.Fatalf("site %d, result %d: board %v, parcels %v", s, i, board[s][i], parcels[s][i])
					}
				}
			}
		})
	}
}

// Many back-to-back generations with random pauses, in both progress
// modes: slots are reused while slow sites still read them, and sleepers
// are woken (a lost wake-up stalls the test).
func TestNodeAllReduceManyGenerations(t *testing.T) {
	gens := 5000
	if testing.Short() || raceDetector {
		gens = 1500
	}
	// 4 localities on as many cores as the machine has, and on 64: the
	// waits on a crowded machine yield the core, the others sleep soon.
	for _, cpus := range []int{goruntime.NumCPU(), 64} {
		for _, p := range []Progress{ProgressBlock, ProgressPoll} {
			t.Run(fmt.Sprintf("%s/%dcpus", p, cpus), func(t *testing.T) {
				manyGenerations(t, gens, Config{Lanes: 2, Progress: p, NodeCPUs: cpus})
			})
		}
	}
}

// manyGenerations runs gens AllReduces with random pauses on 4 localities.
func manyGenerations(t *testing.T, gens int, cfg Config) {
	start := time.Now()
	runCommConfig(t, 4, 0, cfg, func(ctx context.Context, rt *Runtime, c *Communicator) error {
		for g := range gens {
			if (g+c.Site())%97 == 0 {
				time.Sleep(time.Duration(g%300) * time.Microsecond)
			}
			v, err := c.AllReduce(ctx, []float64{float64(g * (c.Site() + 1)), 0.1}, ReduceSum).Get(ctx)
			if err != nil {
				return fmt.Errorf("generation %d: %w", g+1, err)
			}
			if v[0] != float64(10*g) || v[1] != ((0.1+0.1)+0.1)+0.1 {
				return fmt.Errorf("generation %d on site %d: %v, want [%d %v]", g+1, c.Site(), v, 10*g, ((0.1+0.1)+0.1)+0.1)
			}
		}
		if !onBoard(c) {
			return fmt.Errorf("site %d: not on the board", c.Site())
		}
		return nil
	})
	t.Logf("%d generations in %v", gens, time.Since(start))
}

// Calls that disagree on the board fail on every site with a
// MismatchError, and the communicator goes on: the slots the failed
// generation left unread are taken again when their turn comes.
func TestNodeMismatch(t *testing.T) {
	runComm(t, 3, 0, func(ctx context.Context, rt *Runtime, c *Communicator) error {
		if _, err := c.AllReduce(ctx, []float64{1}, ReduceSum).Get(ctx); err != nil {
			return err
		}
		var f *Future[[]float64]
		if c.Site() == 1 {
			f = c.AllReduce(ctx, []float64{1, 2}, ReduceSum)
		} else {
			f = c.AllReduce(ctx, []float64{1}, ReduceSum)
		}
		_, err := f.Get(ctx)
		var me *MismatchError
		if !errors.As(err, &me) || me.Generation != 2 || !strings.Contains(err.Error(), "with 2 elements") {
			return fmt.Errorf("site %d: mismatched AllReduce: %v, want a MismatchError in generation 2 naming 2 elements", c.Site(), err)
		}
		for g := range 3 * nodecoll.Entries {
			v, err := c.AllReduce(ctx, []float64{float64(g + c.Site())}, ReduceSum).Get(ctx)
			if err != nil || v[0] != float64(3*g+3) {
				return fmt.Errorf("site %d, %d generations after the mismatch: %v, %v; want [%d]", c.Site(), g+1, v, err, 3*g+3)
			}
		}
		// Another operation on one site: a Barrier where the others
		// AllReduce.
		gen := uint64(3 + 3*nodecoll.Entries)
		if c.Site() == 0 {
			err = c.Barrier(ctx).Err(ctx)
		} else {
			_, err = c.AllReduce(ctx, []float64{1}, ReduceSum).Get(ctx)
		}
		if !errors.As(err, &me) || me.Generation != gen || !strings.Contains(err.Error(), "Barrier") {
			return fmt.Errorf("site %d: a Barrier against AllReduces: %v, want a MismatchError in generation %d naming the Barrier", c.Site(), err, gen)
		}
		if err := c.Barrier(ctx).Err(ctx); err != nil {
			return fmt.Errorf("site %d: the Barrier after the mismatch: %w", c.Site(), err)
		}
		return nil
	})
}

// A locality that dies while the others wait on the board, asleep, fails
// them within seconds with an error naming it.
func TestNodeKilledLocality(t *testing.T) {
	ctx := testCtx(t)
	job, err := StartLocal(ctx, 4, Config{Lanes: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer job.Close()
	comms := make([]*Communicator, 4)
	for i, rt := range job.Localities {
		if comms[i], err = NewCommunicator(rt, "test.nodekill", nil, 0); err != nil {
			t.Fatal(err)
		}
	}
	// Every site on the board first.
	var fs []*Future[struct{}]
	for _, c := range comms {
		fs = append(fs, c.Barrier(ctx))
	}
	for i, f := range fs {
		if err := f.Err(ctx); err != nil || !onBoard(comms[i]) {
			t.Fatalf("site %d: barrier %v, on the board %v", i, err, onBoard(comms[i]))
		}
	}
	var rs []*Future[[]float64]
	for _, c := range comms[:3] {
		rs = append(rs, c.AllReduce(ctx, []float64{1}, ReduceSum))
	}
	failWhenKilled(ctx, t, job, rs)
}

// failWhenKilled checks that the AllReduces rs, started on every locality
// of job but 3, wait for it (they sleep on the bell by now) and fail,
// naming it, within seconds of its kill.
func failWhenKilled(ctx context.Context, t *testing.T, job *LocalJob, rs []*Future[[]float64]) {
	t.Helper()
	time.Sleep(3 * nodeSleep)
	for _, f := range rs {
		if f.IsReady() {
			t.Fatal("an AllReduce finished without locality 3")
		}
	}
	job.Network.Kill(3)
	killed := time.Now()
	for i, f := range rs {
		_, err := f.Get(ctx)
		if !errors.Is(err, ErrLocalityDown) || !strings.Contains(err.Error(), "locality 3 down") {
			t.Errorf("locality %d: AllReduce with locality 3 killed: got %v", i, err)
		}
	}
	if d := time.Since(killed); d > 5*time.Second {
		t.Errorf("the waits failed %v after the kill, want seconds", d)
	}
}

// An operation started before Close finishes on the board; the region is
// unmapped once it is done, and the locality's list of boards lets go of
// it.
func TestNodeBoardUnmappedAfterClose(t *testing.T) {
	ctx := testCtx(t)
	job, err := StartLocal(ctx, 3, Config{Lanes: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer job.Close()
	err = job.Run(ctx, func(ctx context.Context, rt *Runtime) error {
		c, err := NewCommunicator(rt, "test.nodeclose", nil, 0)
		if err != nil {
			return err
		}
		if err := c.Barrier(ctx).Err(ctx); err != nil || !onBoard(c) {
			return fmt.Errorf("locality %d: barrier %v, on the board %v", rt.Here(), err, onBoard(c))
		}
		if rt.Here() > 0 {
			time.Sleep(50 * time.Millisecond) // locality 0 closes first
		}
		f := c.AllReduce(ctx, []float64{float64(rt.Here())}, ReduceSum)
		c.Close()
		v, err := f.Get(ctx)
		if err != nil || v[0] != 3 {
			return fmt.Errorf("locality %d: AllReduce started before Close: %v, %v", rt.Here(), v, err)
		}
		if err := waitUntil(ctx, "the board unmapped", func() bool {
			rt.nodes.mu.Lock()
			defer rt.nodes.mu.Unlock()
			return !onBoard(c) && len(rt.nodes.all) == 0
		}); err != nil {
			return fmt.Errorf("locality %d: %w", rt.Here(), err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A reservation cancelled on one site, before any operation of the
// communicator: the others' AllReduce, which waits for the board's setup,
// fails with the reason, and the job still ends (the setup left waiting
// for that site is no work in flight).
func TestNodeCancelledReservation(t *testing.T) {
	reason := errors.New("the input broke")
	runComm(t, 3, 0, func(ctx context.Context, rt *Runtime, c *Communicator) error {
		res, err := c.Reserve()
		if err != nil {
			return err
		}
		if c.Site() == 1 {
			res.Cancel(reason)
			return nil
		}
		_, err = res.AllReduce(ctx, []float64{1}, ReduceSum).Get(ctx)
		if !errors.Is(err, reason) && (err == nil || !strings.Contains(err.Error(), reason.Error())) {
			return fmt.Errorf("site %d: AllReduce of a cancelled generation: %v, want %q", c.Site(), err, reason)
		}
		return nil
	})
}
