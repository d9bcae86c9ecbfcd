package runtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestParseProgress(t *testing.T) {
	for s, want := range map[string]Progress{"block": ProgressBlock, "poll": ProgressPoll} {
		if got, err := parseProgress(s); err != nil || got != want {
			t.Errorf("parseProgress(%q) = %v, %v; want %v", s, got, err, want)
		}
		if want.String() != s {
			t.Errorf("%v.String() = %q, want %q", want, want.String(), s)
		}
	}
	if _, err := parseProgress("spin"); err == nil || !strings.Contains(err.Error(), `"spin"`) {
		t.Errorf("parseProgress(spin): %v, want an error naming it", err)
	}
}

func TestProgressFromEnvironment(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "TESSERA_PROGRESS" {
				return v
			}
			return ""
		}
	}
	for _, c := range []struct {
		set  Progress
		env  string
		want Progress
	}{
		{ProgressDefault, "", ProgressBlock},
		{ProgressDefault, "poll", ProgressPoll},
		{ProgressDefault, "block", ProgressBlock},
		{ProgressBlock, "poll", ProgressBlock}, // the Config wins
		{ProgressPoll, "", ProgressPoll},
	} {
		cfg, _, err := fromEnvironment(Config{Progress: c.set}, env(c.env), "", noListener)
		if err == nil {
			err = cfg.validate()
		}
		if err != nil || cfg.Progress != c.want {
			t.Errorf("Progress %v with TESSERA_PROGRESS=%q: %v, %v; want %v", c.set, c.env, cfg.Progress, err, c.want)
		}
	}
	job := Config{Locality: 3, NumLocalities: 4, RootAddr: "127.0.0.1:9", Secret: []byte("a job secret of 32 bytes, or so")}
	if _, _, err := fromEnvironment(job, env("busy"), "", noListener); err == nil || !strings.Contains(err.Error(), "TESSERA_PROGRESS") ||
		!strings.Contains(err.Error(), `"busy"`) || !strings.Contains(err.Error(), "locality 3") {
		t.Errorf("TESSERA_PROGRESS=busy: %v, want an error naming the variable, the value and the locality", err)
	}
	cfg := Config{Progress: 9, NumLocalities: 1}
	if err := cfg.validate(); err == nil {
		t.Error("Config.Progress 9 was accepted")
	}
}

// startTCPProgress starts n localities in this process over TCP on the
// loopback, in progress mode mode, with reg's actions.
func startTCPProgress(tb testing.TB, n int, mode Progress, reg *Registry, lanes int) []*Runtime {
	tb.Helper()
	return startTCPWith(tb, n, Config{Lanes: lanes, Registry: reg, Progress: mode,
		HeartbeatInterval: 100 * time.Millisecond, HeartbeatTimeout: time.Second})
}

// finalizeAll finalizes rts at once and fails tb when one errs or hangs.
func finalizeAll(tb testing.TB, rts []*Runtime) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	errs := make([]error, len(rts))
	var wg sync.WaitGroup
	for i, rt := range rts {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = rt.Finalize(ctx) }()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		tb.Fatalf("Finalize: %v", err)
	}
}

// spawnOnEach runs body as a task on every locality of rts at once, each
// with its runtime, and returns their errors joined.
func spawnOnEach(ctx context.Context, rts []*Runtime, body func(ctx context.Context, rt *Runtime) error) error {
	errs := make([]error, len(rts))
	var wg sync.WaitGroup
	for i, rt := range rts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = Spawn(ctx, rt, func(ctx context.Context) (struct{}, error) {
				return struct{}{}, body(ctx, rt)
			}).Err(ctx)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// In poll mode the runtime does what it does blocking: calls each way,
// calls that wait on calls, many calls in flight, collectives, a failed
// action; Finalize ends it, also after the connections have been quiet for
// longer than the polling window.
func TestPollModeTCP(t *testing.T) {
	reg := NewRegistry()
	echo := Register(reg, "progress.echo", func(ctx context.Context, b []byte) ([]byte, error) { return b, nil })
	var relay Action[uint32, uint32]
	relay = Register(reg, "progress.relay", func(ctx context.Context, hops uint32) (uint32, error) {
		if hops == 0 {
			return 0, nil
		}
		rt := FromContext(ctx)
		next := rt.Locality((rt.Here() + 1) % rt.NumLocalities())
		v, err := Async(ctx, next, relay, hops-1).Get(ctx)
		return v + 1, err
	})
	fails := Register(reg, "progress.fails", func(ctx context.Context, _ struct{}) (int, error) {
		return 0, errors.New("on purpose")
	})
	const n = 3
	rts := startTCPProgress(t, n, ProgressPoll, reg, 1)
	for _, rt := range rts {
		if rt.cfg.Progress != ProgressPoll {
			t.Fatalf("locality %d runs in %v, want poll", rt.here, rt.cfg.Progress)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err := spawnOnEach(ctx, rts, func(ctx context.Context, rt *Runtime) error {
		return pollWorkload(ctx, rt, echo, relay, fails)
	})
	if err != nil {
		t.Fatal(err)
	}
	// Every reader blocks now; the next parcels wake them. Whether a
	// reader polls or blocks is the parcelport's state, which the runtime
	// does not see: this pause is a length of time, not a wait for it.
	time.Sleep(3 * pollWindow)
	err = spawnOnEach(ctx, rts, func(ctx context.Context, rt *Runtime) error {
		_, err := Async(ctx, rt.Locality((rt.here+1)%n), echo, []byte("after a pause")).Get(ctx)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	finalizeAll(t, rts)
}

func pollWorkload(ctx context.Context, rt *Runtime, echo Action[[]byte, []byte], relay Action[uint32, uint32], fails Action[struct{}, int]) error {
	me, n := rt.Here(), rt.NumLocalities()
	next := rt.Locality((me + 1) % n)
	for i := range 200 {
		msg := []byte(fmt.Sprintf("call %d from %d", i, me))
		got, err := Async(ctx, next, echo, msg).Get(ctx)
		if err != nil || !bytes.Equal(got, msg) {
			return fmt.Errorf("echo %d: %q, %v", i, got, err)
		}
	}
	if v, err := Async(ctx, next, relay, 10).Get(ctx); err != nil || v != 10 {
		return fmt.Errorf("relay of 10 hops: %d, %v", v, err)
	}
	fs := make([]*Future[[]byte], 64)
	for i := range fs {
		fs[i] = Async(ctx, rt.Locality(uint32(i)%n), echo, []byte{byte(i)})
	}
	for i, f := range fs {
		if got, err := f.Get(ctx); err != nil || len(got) != 1 || got[0] != byte(i) {
			return fmt.Errorf("call %d in flight: %v, %v", i, got, err)
		}
	}
	var ae *ActionError
	if _, err := Async(ctx, next, fails, struct{}{}).Get(ctx); !errors.As(err, &ae) || !strings.Contains(err.Error(), "on purpose") {
		return fmt.Errorf("failing action: %v", err)
	}
	c, err := NewCommunicator(rt, "progress", nil, 0)
	if err != nil {
		return err
	}
	defer c.Close()
	for i := range 50 {
		v, err := c.AllReduce(ctx, []float64{float64(me + 1)}, ReduceSum).Get(ctx)
		if want := float64(n * (n + 1) / 2); err != nil || len(v) != 1 || v[0] != want {
			return fmt.Errorf("AllReduce %d: %v, %v; want [%v]", i, v, err, want)
		}
	}
	return c.Barrier(ctx).Err(ctx)
}

// An idle polling locality goes back to blocking: after pollWindow without
// messages its readers wait in the network poller, so that a job that
// waits for long (heartbeats every 100 ms here) does not keep its cores
// busy. The bound is loose: spinning readers would take about a core each.
func TestPollModeIdleBlocks(t *testing.T) {
	rts := startTCPProgress(t, 2, ProgressPoll, NewRegistry(), 1)
	defer finalizeAll(t, rts)
	time.Sleep(50 * time.Millisecond) // past the start's traffic
	before := cpuTime(t)
	const idle = time.Second
	time.Sleep(idle)
	if used := cpuTime(t) - before; used > idle/2 {
		t.Errorf("the process used %v of CPU in %v with 2 idle polling localities: their readers do not block", used, idle)
	} else {
		t.Logf("%v of CPU in %v idle", used, idle)
	}
}

// benchEcho times calls of echo with 64 bytes from locality 0 to 1 of
// rts, each waited for before the next, after 200 untimed ones, then
// finalizes rts.
func benchEcho(b *testing.B, rts []*Runtime, echo Action[[]byte, []byte]) {
	ctx := context.Background()
	msg := make([]byte, 64)
	err := Spawn(ctx, rts[0], func(ctx context.Context) (struct{}, error) {
		for range 200 {
			if _, err := Async(ctx, rts[0].Locality(1), echo, msg).Get(ctx); err != nil {
				return struct{}{}, err
			}
		}
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			if _, err := Async(ctx, rts[0].Locality(1), echo, msg).Get(ctx); err != nil {
				return struct{}{}, err
			}
		}
		b.StopTimer()
		return struct{}{}, nil
	}).Err(ctx)
	if err != nil {
		b.Fatal(err)
	}
	finalizeAll(b, rts)
}

// BenchmarkRoundTripTCP: one call of an action echoing 64 bytes, waited for
// before the next, between two localities of this process over loopback
// TCP, blocking and polling. -benchmem counts the allocations of both
// localities per round trip.
func BenchmarkRoundTripTCP(b *testing.B) {
	for _, mode := range []Progress{ProgressBlock, ProgressPoll} {
		b.Run(mode.String(), func(b *testing.B) {
			reg := NewRegistry()
			echo := Register(reg, "progress.echo", func(ctx context.Context, b []byte) ([]byte, error) { return b, nil })
			rts := startTCPProgress(b, 2, mode, reg, 1)
			benchEcho(b, rts, echo)
		})
	}
}
