package agas

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tessera-amt/tessera/runtime"
	"github.com/tinylib/msgp/msgp"
)

// counter is a component that checks the order of each sender's calls.
type counter struct {
	mu       sync.Mutex
	Total    int64
	Disorder int64            // calls that arrived out of their sender's order
	Last     map[uint32]int64 // per sender, the number of its last call
}

func (c *counter) MarshalParcel(b []byte) ([]byte, [][]byte, error) {
	b = msgp.AppendInt64(b, c.Total)
	b = msgp.AppendInt64(b, c.Disorder)
	b = msgp.AppendMapHeader(b, uint32(len(c.Last)))
	for k, v := range c.Last {
		b = msgp.AppendUint32(b, k)
		b = msgp.AppendInt64(b, v)
	}
	return b, nil, nil
}

func (c *counter) UnmarshalParcel(b []byte, _ [][]byte) error {
	var err error
	if c.Total, b, err = msgp.ReadInt64Bytes(b); err != nil {
		return err
	}
	if c.Disorder, b, err = msgp.ReadInt64Bytes(b); err != nil {
		return err
	}
	n, b, err := msgp.ReadMapHeaderBytes(b)
	if err != nil {
		return err
	}
	c.Last = make(map[uint32]int64, n)
	for range n {
		var k uint32
		var v int64
		if k, b, err = msgp.ReadUint32Bytes(b); err != nil {
			return err
		}
		if v, b, err = msgp.ReadInt64Bytes(b); err != nil {
			return err
		}
		c.Last[k] = v
	}
	return nil
}

type counterMethods struct {
	add   Method[counter, uint64, int64] // arg: sender<<32 | call number (from 1)
	total Method[counter, struct{}, int64]
	check Method[counter, struct{}, string]
}

func counterJob(t *testing.T, n int) (*runtime.LocalJob, *Service, counterMethods, context.Context) {
	t.Helper()
	reg := runtime.NewRegistry()
	s := New(reg)
	var m counterMethods
	m.add = RegisterMethod(reg, s, "counter.add", func(ctx context.Context, c *counter, arg uint64) (int64, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		from, num := uint32(arg>>32), int64(arg&(1<<32-1))
		if c.Last == nil {
			c.Last = map[uint32]int64{}
		}
		if num != c.Last[from]+1 {
			c.Disorder++
		}
		c.Last[from] = num
		c.Total++
		return c.Total, nil
	})
	m.total = RegisterMethod(reg, s, "counter.total", func(ctx context.Context, c *counter, _ struct{}) (int64, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.Total, nil
	})
	m.check = RegisterMethod(reg, s, "counter.check", func(ctx context.Context, c *counter, _ struct{}) (string, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		return fmt.Sprintf("total=%d disorder=%d last=%v", c.Total, c.Disorder, c.Last), nil
	})
	ctx := testCtx(t)
	job, err := runtime.StartLocal(ctx, n, runtime.Config{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	return job, s, m, ctx
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60e9)
	t.Cleanup(cancel)
	return ctx
}

// Objects everywhere, called by GID from everywhere.
func TestCallByGIDFromEverywhere(t *testing.T) {
	job, s, m, ctx := counterJob(t, 4)
	err := job.Run(ctx, func(ctx context.Context, rt *runtime.Runtime) error {
		gid := Create(s, rt, &counter{})
		if err := s.RegisterWithBasename(ctx, rt, "counter", gid, rt.Here()).Err(ctx); err != nil {
			return err
		}
		gids, err := s.FindAll(ctx, rt, "counter", rt.NumLocalities()).Get(ctx)
		if err != nil {
			return err
		}
		var calls []*runtime.Future[int64]
		for _, g := range gids {
			for i := range 10 {
				calls = append(calls, Call(ctx, s, rt, g, m.add, uint64(rt.Here())<<32|uint64(i+1)))
			}
		}
		return runtime.WhenAll(calls...).Err(ctx)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A stream of numbered increments from every locality to one counter while
// it migrates around all localities 50 times: every increment is applied
// once, and each sender's in order.
func TestMigrationUnderLoad(t *testing.T) {
	job, s, m, ctx := counterJob(t, 4)
	defer job.Close()
	const perSender = 300
	owner := job.Localities[0]
	gid := Create(s, owner, &counter{})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for _, rt := range job.Localities {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var calls []*runtime.Future[int64]
			for i := range perSender {
				calls = append(calls, Call(ctx, s, rt, gid, m.add, uint64(rt.Here())<<32|uint64(i+1)))
			}
			if err := runtime.WhenAll(calls...).Err(ctx); err != nil {
				errs <- fmt.Errorf("locality %d's increments: %w", rt.Here(), err)
			}
		}()
	}
	for i := range 50 {
		to := uint32(i+1) % 4
		from := job.Localities[i%4]
		if err := s.Migrate(ctx, from, gid, to); err != nil {
			t.Fatalf("migration %d to locality %d: %v", i, to, err)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	total, err := Call(ctx, s, job.Localities[2], gid, m.total, struct{}{}).Get(ctx)
	if err != nil || total != 4*perSender {
		t.Fatalf("total %d, %v; want %d", total, err, 4*perSender)
	}
	state, err := Call(ctx, s, job.Localities[1], gid, m.check, struct{}{}).Get(ctx)
	if err != nil || !strings.Contains(state, "disorder=0") {
		t.Fatalf("counter after the migrations: %s, %v", state, err)
	}
	var migrations, forwarded uint64
	for _, rt := range job.Localities {
		c := s.Counters(rt)
		migrations += c.Migrations
		forwarded += c.Forwarded
	}
	if migrations != 50 {
		t.Errorf("counters say %d migrations, want 50", migrations)
	}
	t.Logf("%d calls forwarded during 50 migrations", forwarded)
}

func TestFreedAndUnknownGIDs(t *testing.T) {
	job, s, m, ctx := counterJob(t, 3)
	defer job.Close()
	rt0, rt1 := job.Localities[0], job.Localities[1]
	gid := Create(s, rt1, &counter{})
	if _, err := Call(ctx, s, rt0, gid, m.add, 1).Get(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Free(ctx, rt0, gid); err != nil {
		t.Fatalf("free: %v", err)
	}
	for _, rt := range job.Localities {
		_, err := Call(ctx, s, rt, gid, m.add, 2).Get(ctx)
		if !errors.Is(err, ErrFreed) || !strings.Contains(err.Error(), gid.String()) {
			t.Errorf("call from locality %d to a freed object: %v", rt.Here(), err)
		}
	}
	never := MakeGID(2, 999)
	if _, err := Call(ctx, s, rt0, never, m.add, 1).Get(ctx); !errors.Is(err, ErrUnknownGID) || !strings.Contains(err.Error(), never.String()) {
		t.Errorf("call to a GID never created: %v", err)
	}
	if _, err := Call(ctx, s, rt0, MakeGID(9, 1), m.add, 1).Get(ctx); !errors.Is(err, ErrUnknownGID) || !strings.Contains(err.Error(), "locality 9") {
		t.Errorf("call to a GID of a locality outside the job: %v", err)
	}
	other := Create(s, rt0, &struct{ X int }{})
	if _, err := Call(ctx, s, rt1, other, m.add, 1).Get(ctx); err == nil || !strings.Contains(err.Error(), "not a") {
		t.Errorf("method of the wrong type: %v", err)
	}
}

// Calls to objects of a locality that died fail, naming it.
func TestObjectsOfDeadLocality(t *testing.T) {
	job, s, m, ctx := counterJob(t, 3)
	defer job.Close()
	gid := Create(s, job.Localities[2], &counter{})
	if _, err := Call(ctx, s, job.Localities[0], gid, m.add, 1).Get(ctx); err != nil {
		t.Fatal(err)
	}
	job.Network.Kill(2)
	_, err := Call(ctx, s, job.Localities[0], gid, m.add, 2).Get(ctx)
	if err == nil || !strings.Contains(err.Error(), "locality 2") {
		t.Fatalf("call to an object of a dead locality: %v", err)
	}
}

// The first call from elsewhere goes through the home; the answer teaches the
// caller where the object is, and later calls hit the cache.
func TestResolutionCache(t *testing.T) {
	job, s, m, ctx := counterJob(t, 3)
	defer job.Close()
	gid := Create(s, job.Localities[0], &counter{})
	if err := s.Migrate(ctx, job.Localities[0], gid, 2); err != nil {
		t.Fatal(err)
	}
	caller := job.Localities[1]
	for i := range 5 {
		if _, err := Call(ctx, s, caller, gid, m.add, uint64(1)<<32|uint64(i+1)).Get(ctx); err != nil {
			t.Fatal(err)
		}
	}
	c := s.Counters(caller)
	if c.CacheMisses != 1 || c.CacheHits != 4 {
		t.Errorf("caller's cache: %+v, want 1 miss then 4 hits", c)
	}
	if f := s.Counters(job.Localities[0]).Forwarded; f != 1 {
		t.Errorf("home forwarded %d calls, want 1", f)
	}
	if live := s.Counters(job.Localities[2]).LiveObjects; live != 1 {
		t.Errorf("locality 2 has %d live objects, want 1", live)
	}
}

// The last Release frees the object, wherever it moved meanwhile.
func TestReferenceCounting(t *testing.T) {
	job, s, m, ctx := counterJob(t, 3)
	defer job.Close()
	rt0, rt1, rt2 := job.Localities[0], job.Localities[1], job.Localities[2]
	gid := Create(s, rt0, &counter{})
	if err := s.AddRef(ctx, rt1, gid); err != nil { // locality 1 keeps it too
		t.Fatal(err)
	}
	if err := s.Migrate(ctx, rt2, gid, 2); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, rt0, gid); err != nil { // the creator's reference
		t.Fatal(err)
	}
	if _, err := Call(ctx, s, rt1, gid, m.add, uint64(1)<<32|1).Get(ctx); err != nil {
		t.Fatalf("call while locality 1 still holds a reference: %v", err)
	}
	if err := s.Release(ctx, rt1, gid); err != nil { // the last one
		t.Fatal(err)
	}
	for _, rt := range job.Localities {
		if _, err := Call(ctx, s, rt, gid, m.total, struct{}{}).Get(ctx); !errors.Is(err, ErrFreed) {
			t.Errorf("call from locality %d after the last release: %v", rt.Here(), err)
		}
	}
	if n := s.Counters(rt2).LiveObjects; n != 0 {
		t.Errorf("locality 2 still holds %d objects", n)
	}
	if err := s.Release(ctx, rt1, gid); !errors.Is(err, ErrFreed) {
		t.Errorf("releasing a freed object: %v", err)
	}
}

// Free waits for the call running on the object.
func TestFreeWaitsForRunningCall(t *testing.T) {
	reg := runtime.NewRegistry()
	s := New(reg)
	entered, release := make(chan struct{}), make(chan struct{})
	slow := RegisterMethod(reg, s, "slow.run", func(ctx context.Context, c *counter, _ struct{}) (int, error) {
		close(entered)
		<-release
		return 1, nil
	})
	ctx := testCtx(t)
	job, err := runtime.StartLocal(ctx, 2, runtime.Config{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer job.Close()
	gid := Create(s, job.Localities[1], &counter{})
	call := Call(ctx, s, job.Localities[0], gid, slow, struct{}{})
	<-entered
	freed := make(chan error, 1)
	go func() { freed <- s.Free(ctx, job.Localities[0], gid) }()
	select {
	case err := <-freed:
		t.Fatalf("Free returned (%v) while a call was running on the object", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if v, err := call.Get(ctx); err != nil || v != 1 {
		t.Fatalf("the running call: %v, %v", v, err)
	}
	if err := <-freed; err != nil {
		t.Fatalf("Free: %v", err)
	}
	if _, err := Call(ctx, s, job.Localities[0], gid, slow, struct{}{}).Get(ctx); !errors.Is(err, ErrFreed) {
		t.Fatalf("call after Free: %v", err)
	}
}

// placed is a component that records where it lives, as tiles do.
type placed struct {
	counter
	At uint32
}

func (p *placed) Moved(ctx context.Context, locality uint32) { p.At = locality }

func (p *placed) MarshalParcel(b []byte) ([]byte, [][]byte, error) {
	return msgp.AppendUint32(b, p.At), nil, nil
}

func (p *placed) UnmarshalParcel(b []byte, _ [][]byte) error {
	var err error
	p.At, _, err = msgp.ReadUint32Bytes(b)
	return err
}

func TestMovedIsToldItsLocality(t *testing.T) {
	reg := runtime.NewRegistry()
	s := New(reg)
	where := RegisterMethod(reg, s, "placed.where", func(ctx context.Context, p *placed, _ struct{}) (uint32, error) {
		return p.At, nil
	})
	ctx := testCtx(t)
	job, err := runtime.StartLocal(ctx, 3, runtime.Config{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer job.Close()
	gid := Create(s, job.Localities[0], &placed{At: 0})
	for _, to := range []uint32{2, 1, 0} {
		if err := s.Migrate(ctx, job.Localities[1], gid, to); err != nil {
			t.Fatal(err)
		}
		if at, err := Call(ctx, s, job.Localities[2], gid, where, struct{}{}).Get(ctx); err != nil || at != to {
			t.Fatalf("after migrating to %d the object says it is at %d (%v)", to, at, err)
		}
	}
}
