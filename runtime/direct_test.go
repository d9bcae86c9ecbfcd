package runtime

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// directActions registers the actions of the direct-action tests.
type directActions struct {
	where Action[int, string] // direct: how and where it ran
	wait  Action[int, int]    // direct: waits for a future that is not ready
	spawn Action[int, int]    // direct: waits for a local task it spawned
	hold  Action[int, int]    // plain: holds its lane until release is closed
}

func newDirectActions(release <-chan struct{}, holding chan<- struct{}, gate <-chan struct{}) (*Registry, directActions) {
	reg := NewRegistry()
	var a directActions
	a.where = RegisterDirect(reg, "test.direct-where", func(ctx context.Context, n int) (string, error) {
		t := taskOf(ctx)
		if t == nil {
			return "", errors.New("not a task")
		}
		return fmt.Sprintf("direct=%v lane=%d guid=%x parent=%x n=%d", t.direct, t.lane, t.guid, t.parent, n), nil
	})
	// The waiting actions wait only when they run direct: queued as an
	// ordinary task, because the lane was taken when the call came, their
	// wait would never end, so they say so and the caller asks again.
	a.wait = RegisterDirect(reg, "test.direct-wait", func(ctx context.Context, n int) (int, error) {
		if !taskOf(ctx).direct {
			return 0, errRanQueued
		}
		return newFuture[int](nil).Get(ctx)
	})
	a.spawn = RegisterDirect(reg, "test.direct-spawn", func(ctx context.Context, n int) (int, error) {
		if !taskOf(ctx).direct {
			return 0, errRanQueued
		}
		// Not run inline either: the task might wait, on the reader.
		return Spawn(ctx, FromContext(ctx), func(context.Context) (int, error) { <-gate; return n, nil }).Get(ctx)
	})
	a.hold = Register(reg, "test.hold-lane", func(ctx context.Context, n int) (int, error) {
		holding <- struct{}{}
		<-release // a Go channel, not a future: the lane stays taken
		return n, nil
	})
	return reg, a
}

// errRanQueued is returned by a test action that was meant to run direct
// but ran queued, because the only lane was taken when its call came.
var errRanQueued = errors.New("ran queued, not direct")

// untilDirect calls action on dest until a call runs direct (the lane may
// be taken for a moment by the locality's own tasks) and returns its error.
func untilDirect(ctx context.Context, dest Target, action Action[int, int]) error {
	for {
		_, err := Async(ctx, dest, action, 1).Get(ctx)
		if err == nil || !strings.Contains(err.Error(), errRanQueued.Error()) {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		time.Sleep(time.Millisecond)
	}
}

// A direct action called from another locality runs on the goroutine that
// read the call, holding a lane, as a task with a GUID and the caller's
// task as parent, seen by the observer; a Get inside it on a future that
// is not ready fails at once with ErrDirectWait naming the action; and
// with every lane taken it runs as an ordinary task once one frees.
func TestDirectAction(t *testing.T) {
	ctx := testCtx(t)
	release, holding := make(chan struct{}), make(chan struct{}, 1)
	reg, a := newDirectActions(release, holding, nil)
	recs := []*recorder{newRecorder(), newRecorder()}
	job, err := StartLocal(ctx, 2, Config{Registry: reg, Observer: multiObserver(recs), Lanes: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer job.Close()
	err = job.Run(ctx, func(ctx context.Context, rt *Runtime) error {
		if rt.Here() != 0 {
			return nil
		}
		peer := rt.Locality(1)
		// Locality 1's only lane may still be held by its own main task
		// for a moment; a call then runs as an ordinary task. Ask until
		// one finds the lane free.
		var got string
		var err error
		for try := 0; try < 100; try++ {
			if got, err = Async(ctx, peer, a.where, 7).Get(ctx); err != nil {
				return err
			}
			if strings.HasPrefix(got, "direct=true ") {
				break
			}
			time.Sleep(time.Millisecond)
		}
		var direct bool
		var lane int
		var guid, parent uint64
		var n int
		if _, err := fmt.Sscanf(got, "direct=%t lane=%d guid=%x parent=%x n=%d", &direct, &lane, &guid, &parent, &n); err != nil {
			return fmt.Errorf("reply %q: %v", got, err)
		}
		if !direct || lane != 0 || GUIDLocality(guid) != 1 || parent != TaskGUID(ctx) || n != 7 {
			return fmt.Errorf("direct action ran as %q, want direct on lane 0 of locality 1 with parent %x", got, TaskGUID(ctx))
		}
		recs[1].mu.Lock()
		info, seen := recs[1].starts[guid]
		recs[1].mu.Unlock()
		if !seen || info.Name != "test.direct-where" || info.Lane != 0 || info.Parent != parent {
			return fmt.Errorf("observer of locality 1 saw %+v (seen %v) for task %x", info, seen, guid)
		}

		err = untilDirect(ctx, peer, a.wait)
		if !errors.Is(err, ErrDirectWait) || !strings.Contains(err.Error(), "test.direct-wait") || !strings.Contains(err.Error(), "locality 1") {
			return fmt.Errorf("direct action waiting: got %v, want ErrDirectWait naming test.direct-wait on locality 1", err)
		}

		// Take locality 1's only lane; the direct call must wait for it and
		// then run on a worker, not on the reader.
		held := Async(ctx, peer, a.hold, 3)
		select {
		case <-holding:
		case <-ctx.Done():
			return ctx.Err()
		}
		served := job.Localities[1].Counters().CallsServed
		queued := Async(ctx, peer, a.where, 8)
		// The call came, and waits in locality 1's queue for the lane.
		if err := waitUntil(ctx, "the direct call is queued on locality 1", func() bool {
			c := job.Localities[1].Counters()
			return c.CallsServed > served && c.TaskQueueLen > 0
		}); err != nil {
			return err
		}
		if queued.IsReady() {
			v, err := queued.Get(ctx)
			return fmt.Errorf("direct call answered (%q, %v) while every lane was taken", v, err)
		}
		close(release)
		if _, err := held.Get(ctx); err != nil {
			return err
		}
		got, err = queued.Get(ctx)
		if err != nil {
			return err
		}
		if !strings.HasPrefix(got, "direct=false lane=0 ") || !strings.HasSuffix(got, " n=8") {
			return fmt.Errorf("direct call with every lane taken ran as %q, want an ordinary task on lane 0", got)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Direct actions over loopback TCP, the path the reader runs them on.
func TestDirectActionTCP(t *testing.T) {
	ctx := testCtx(t)
	release, holding, gate := make(chan struct{}), make(chan struct{}, 1), make(chan struct{})
	reg, a := newDirectActions(release, holding, gate)
	close(release)
	rts := startTCPWith(t, 2, Config{Registry: reg})
	for i := range 100 {
		got, err := Async(ctx, rts[0].Locality(1), a.where, i).Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(got, "direct=true ") || !strings.HasSuffix(got, fmt.Sprintf(" n=%d", i)) {
			t.Fatalf("call %d ran as %q, want direct", i, got)
		}
	}
	if err := untilDirect(ctx, rts[1].Locality(0), a.wait); !errors.Is(err, ErrDirectWait) {
		t.Fatalf("direct action waiting over TCP: got %v, want ErrDirectWait", err)
	}
	if err := untilDirect(ctx, rts[1].Locality(0), a.spawn); !errors.Is(err, ErrDirectWait) || !strings.Contains(err.Error(), "test.direct-spawn") {
		t.Fatalf("direct action waiting for a task it spawned: got %v, want ErrDirectWait naming test.direct-spawn", err)
	}
	close(gate) // the spawned task may finish now
	finalizeAll(t, rts)
}
