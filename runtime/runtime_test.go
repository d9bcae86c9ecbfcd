package runtime

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tessera-amt/tessera/parcel"
)

// testCtx bounds a test so a hang fails it instead of stalling the suite.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

type echoActions struct {
	greet  Action[uint32, string]
	fail   Action[string, int]
	boom   Action[int, int]
	square Action[[]float64, []float64]
	ghost  Action[int, int] // registered in another registry only
}

func newEchoActions() (*Registry, echoActions) {
	reg := NewRegistry()
	var a echoActions
	a.greet = Register(reg, "test.greet", func(ctx context.Context, from uint32) (string, error) {
		return fmt.Sprintf("hello %d from %d (task %x)", from, ctxLocality(ctx), TaskGUID(ctx)), nil
	})
	a.fail = Register(reg, "test.fail", func(ctx context.Context, msg string) (int, error) {
		return 0, errors.New(msg)
	})
	a.boom = Register(reg, "test.boom", func(ctx context.Context, n int) (int, error) {
		var m map[int]int
		m[n] = n // nil map write: panics
		return n, nil
	})
	a.square = Register(reg, "test.square", func(ctx context.Context, v []float64) ([]float64, error) {
		out := make([]float64, len(v))
		for i, x := range v {
			out[i] = x * x
		}
		return out, nil
	})
	a.ghost = Register(NewRegistry(), "test.ghost", func(ctx context.Context, n int) (int, error) { return n, nil })
	return reg, a
}

func ctxLocality(ctx context.Context) uint32 {
	if t := taskOf(ctx); t != nil {
		return t.s.locality
	}
	return 1 << 31
}

func TestActionsEveryPair(t *testing.T) {
	for _, n := range []int{1, 2, 3, 5} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			ctx := testCtx(t)
			reg, a := newEchoActions()
			job, err := StartLocal(ctx, n, Config{Registry: reg, Lanes: 2})
			if err != nil {
				t.Fatal(err)
			}
			err = job.Run(ctx, func(ctx context.Context, rt *Runtime) error {
				fs := make([]*Future[string], rt.NumLocalities())
				for l := range rt.NumLocalities() {
					fs[l] = Async(ctx, rt.Locality(l), a.greet, rt.Here())
				}
				all, err := WhenAll(fs...).Get(ctx)
				if err != nil {
					return err
				}
				for l, s := range all {
					want := fmt.Sprintf("hello %d from %d", rt.Here(), l)
					if !strings.HasPrefix(s, want) {
						return fmt.Errorf("reply from %d = %q, want prefix %q", l, s, want)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestActionErrors(t *testing.T) {
	ctx := testCtx(t)
	reg, a := newEchoActions()
	job, err := StartLocal(ctx, 2, Config{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	err = job.Run(ctx, func(ctx context.Context, rt *Runtime) error {
		for l := range rt.NumLocalities() {
			_, err := Async(ctx, rt.Locality(l), a.fail, "no luck").Get(ctx)
			var ae *ActionError
			if !errors.As(err, &ae) || ae.Locality != l || ae.Action != "test.fail" || !strings.Contains(err.Error(), "no luck") {
				return fmt.Errorf("error action: got %v", err)
			}
			_, err = Async(ctx, rt.Locality(l), a.boom, 3).Get(ctx)
			if !errors.Is(err, ErrActionPanic) || !strings.Contains(err.Error(), "test.boom") || !strings.Contains(err.Error(), fmt.Sprintf("locality %d", l)) {
				return fmt.Errorf("panicking action: got %v", err)
			}
			if l != rt.Here() {
				_, err = Async(ctx, rt.Locality(l), a.ghost, 3).Get(ctx)
				if !errors.Is(err, ErrUnknownAction) || !strings.Contains(err.Error(), "test.ghost") {
					return fmt.Errorf("unknown action: got %v", err)
				}
			}
		}
		_, err := Async(ctx, rt.Locality(7), a.greet, 1).Get(ctx)
		if err == nil || !strings.Contains(err.Error(), "locality 7") {
			return fmt.Errorf("call to locality 7: got %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestFloat64PayloadIntoCallerMemory(t *testing.T) {
	ctx := testCtx(t)
	reg, a := newEchoActions()
	job, err := StartLocal(ctx, 2, Config{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	err = job.Run(ctx, func(ctx context.Context, rt *Runtime) error {
		for _, l := range []uint32{(rt.Here() + 1) % 2, rt.Here()} { // remote, then local
			v := make([]float64, 1000)
			for i := range v {
				v[i] = float64(i)
			}
			dst := make([]float64, len(v))
			got, err := AsyncInto(ctx, rt.Locality(l), a.square, v, dst).Get(ctx)
			if err != nil {
				return err
			}
			if &got[0] != &dst[0] {
				return fmt.Errorf("result from locality %d not in the caller's memory", l)
			}
			for i := range v {
				if got[i] != v[i]*v[i] {
					return fmt.Errorf("got[%d] = %v from locality %d", i, got[i], l)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestKilledLocalityFailsPendingCalls(t *testing.T) {
	ctx := testCtx(t)
	job, block, started := blockingJob(t, ctx, 3)
	rt0 := job.Localities[0]
	f := Async(ctx, rt0.Locality(2), block, 1)
	for started.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	job.Network.Kill(2)
	_, err := f.Get(ctx)
	var le *LocalityError
	if !errors.As(err, &le) || le.Locality != 2 || !errors.Is(err, ErrLocalityDown) {
		t.Fatalf("pending call to killed locality: got %v", err)
	}
	for _, rt := range job.Localities[:2] {
		select {
		case <-rt.Done():
		case <-ctx.Done():
			t.Fatalf("locality %d did not fail", rt.Here())
		}
		if !strings.Contains(rt.Err().Error(), "locality 2") {
			t.Errorf("locality %d failed with %v, want it to name locality 2", rt.Here(), rt.Err())
		}
	}
}

// blockingJob starts n localities in this process with the action
// test.block, which counts its calls in started and returns when the
// locality ends.
func blockingJob(t *testing.T, ctx context.Context, n int) (*LocalJob, Action[int, int], *atomic.Int32) {
	t.Helper()
	reg := NewRegistry()
	started := new(atomic.Int32)
	block := Register(reg, "test.block", func(ctx context.Context, _ int) (int, error) {
		started.Add(1)
		<-ctx.Done()
		return 0, context.Cause(ctx)
	})
	job, err := StartLocal(ctx, n, Config{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { job.Close() })
	return job, block, started
}

// A pending call to a locality that is lost fails naming that locality
// also when another locality's abort, caused by the same loss, arrives
// before this locality notices the loss itself.
func TestAbortNamesTheLostLocalityOfAPendingCall(t *testing.T) {
	ctx := testCtx(t)
	job, block, started := blockingJob(t, ctx, 3)
	rt0 := job.Localities[0]
	toLost := Async(ctx, rt0.Locality(2), block, 1)
	toLive := Async(ctx, rt0.Locality(1), block, 1)
	for started.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	// Locality 1's abort, as it sends it once it lost locality 2.
	args := abortArgs("locality 2 down: link broken", &LocalityError{Locality: 2, Reason: "link broken"})
	rt0.control(&parcel.Parcel{Header: parcel.Header{Kind: parcel.KindControl, Source: 1, Dest: 0, Action: ctlAbort, Args: args}})
	_, err := toLost.Get(ctx)
	var le *LocalityError
	if !errors.As(err, &le) || le.Locality != 2 || le.Reason != "link broken" || !errors.Is(err, ErrLocalityDown) {
		t.Errorf("pending call to the lost locality: got %v, want locality 2 down: link broken", err)
	}
	_, err = toLive.Get(ctx)
	if !errors.As(err, &le) || le.Locality != 1 || !strings.Contains(err.Error(), "locality 1 down: aborted: locality 2 down: link broken") {
		t.Errorf("pending call to the aborting locality: got %v, want locality 1 down: aborted: ...", err)
	}
}

func TestAbortArgs(t *testing.T) {
	for _, c := range []struct {
		why  string
		lost *LocalityError
	}{
		{"locality 5 down: silent for 5s", &LocalityError{Locality: 5, Reason: "silent for 5s"}},
		{"main: input file missing", nil},
		{"", nil},
	} {
		why, lost := readAbort(abortArgs(c.why, c.lost))
		if why != c.why || (lost == nil) != (c.lost == nil) || (lost != nil && (lost.Locality != c.lost.Locality || lost.Reason != c.lost.Reason)) {
			t.Errorf("abort %q, %v: read back %q, %v", c.why, c.lost, why, lost)
		}
	}
	if why, lost := readAbort([]byte("ab")); why != "ab" || lost != nil {
		t.Errorf("short abort: %q, %v", why, lost)
	}
	// A reason that does not start the text travels all the same.
	why, lost := readAbort(abortArgs("job failed", &LocalityError{Locality: 2, Reason: "link broken"}))
	if why != "job failed" || lost == nil || lost.Locality != 2 || lost.Reason != "link broken" {
		t.Errorf("abort with a separate reason read back %q, %v", why, lost)
	}
	// A reason length past the end is refused as a layout.
	bad := append(binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, 3), 99), "xy"...)
	if why, lost := readAbort(bad); lost != nil || why != string(bad) {
		t.Errorf("abort with a bad reason length read back %q, %v", why, lost)
	}
}

// The counters move with the work: calls, tasks and traffic per peer.
func TestCountersCountTheWork(t *testing.T) {
	ctx := testCtx(t)
	reg, a := newEchoActions()
	job, err := StartLocal(ctx, 3, Config{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer job.Close()
	rt := job.Localities[0]
	for l := range rt.NumLocalities() {
		for range 10 {
			if _, err := Async(ctx, rt.Locality(l), a.greet, 0).Get(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A task counts as executed once its function has returned, which is
	// after it fulfilled its future: the last count may trail the Get.
	c := rt.Counters()
	for deadline := time.Now().Add(5 * time.Second); c.TasksExecuted < 10 && time.Now().Before(deadline); c = rt.Counters() {
		time.Sleep(time.Millisecond)
	}
	if c.CallsSent != 20 || c.PendingCalls != 0 || c.TasksExecuted < 10 || c.Lanes < 1 || c.Locality != 0 {
		t.Errorf("locality 0 counters after 20 remote and 10 local calls: %+v", c)
	}
	if len(c.Peers) != 2 {
		t.Fatalf("locality 0 has counters for %d peers, want 2", len(c.Peers))
	}
	for _, p := range c.Peers {
		if p.ParcelsSent < 10 || p.ParcelsReceived < 10 || p.BytesSent == 0 || p.BytesReceived == 0 {
			t.Errorf("traffic with locality %d: %+v", p.Peer, p)
		}
	}
	if s := job.Localities[1].Counters(); s.CallsServed != 10 {
		t.Errorf("locality 1 served %d calls, want 10", s.CallsServed)
	}
}

var errTestSentinel = errors.New("test: the sentinel")

// A registered sentinel keeps its identity across localities.
func TestRegisteredErrorsTravel(t *testing.T) {
	ctx := testCtx(t)
	reg := NewRegistry()
	reg.RegisterErrors(errTestSentinel)
	act := Register(reg, "test.sentinel", func(ctx context.Context, n int) (int, error) {
		if n == 0 {
			return 0, fmt.Errorf("wrapped: %w", errTestSentinel)
		}
		return 0, errors.New("plain")
	})
	job, err := StartLocal(ctx, 2, Config{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer job.Close()
	rt := job.Localities[0]
	_, err = Async(ctx, rt.Locality(1), act, 0).Get(ctx)
	if !errors.Is(err, errTestSentinel) || !strings.Contains(err.Error(), "wrapped: test: the sentinel") {
		t.Errorf("remote sentinel error: %v", err)
	}
	if _, err = Async(ctx, rt.Locality(1), act, 1).Get(ctx); errors.Is(err, errTestSentinel) || !strings.Contains(err.Error(), "plain") {
		t.Errorf("remote plain error: %v", err)
	}
}

// Work a program started and never waited for still finishes before the
// job ends: Finalize waits for the replies to a locality's calls. The calls
// finish only once every body has returned.
func TestFinalizeWaitsForUnwaitedCalls(t *testing.T) {
	ctx := testCtx(t)
	reg := NewRegistry()
	var ran, returned atomic.Int32
	bodiesReturned := make(chan struct{})
	slow := Register(reg, "test.slow", func(ctx context.Context, n int) (int, error) {
		select {
		case <-bodiesReturned:
		case <-ctx.Done():
			return 0, context.Cause(ctx)
		}
		ran.Add(1)
		return n, nil
	})
	// A lane for each of the three calls a locality serves, and one for
	// its body.
	job, err := StartLocal(ctx, 3, Config{Registry: reg, Lanes: 4})
	if err != nil {
		t.Fatal(err)
	}
	err = job.Run(ctx, func(ctx context.Context, rt *Runtime) error {
		defer func() {
			if returned.Add(1) == 3 {
				close(bodiesReturned)
			}
		}()
		for l := range rt.NumLocalities() {
			Async(ctx, rt.Locality(l), slow, 1) // nobody waits
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := ran.Load(); n != 9 {
		t.Fatalf("%d of the 9 calls ran before the job ended", n)
	}
}
