package agas

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tessera-amt/tessera/runtime"
)

func startJob(t *testing.T, n int) (*runtime.LocalJob, *Service, context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	reg := runtime.NewRegistry()
	ns := New(reg)
	job, err := runtime.StartLocal(ctx, n, runtime.Config{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	return job, ns, ctx
}

func TestGIDParts(t *testing.T) {
	g := MakeGID(3, 77)
	if g.Home() != 3 || g.Seq() != 77 || g.String() != "{3:77}" {
		t.Fatalf("MakeGID(3, 77) = %v: home %d seq %d", g, g.Home(), g.Seq())
	}
	if top := MakeGID(1<<runtime.GUIDLocalityBits-1, 1<<44-1); top.Home() != 1<<runtime.GUIDLocalityBits-1 || top.Seq() != 1<<44-1 {
		t.Fatalf("largest GID %v", top)
	}
}

// Every locality registers names and finds everyone's; the names are spread
// over several home localities.
func TestNamespaceRegisterFindEverywhere(t *testing.T) {
	job, ns, ctx := startJob(t, 4)
	err := job.Run(ctx, func(ctx context.Context, rt *runtime.Runtime) error {
		for i := range uint32(25) {
			seq := rt.Here()*25 + i
			if err := ns.RegisterWithBasename(ctx, rt, "obj", MakeGID(rt.Here(), uint64(i+1)), seq).Err(ctx); err != nil {
				return err
			}
		}
		all, err := ns.FindAll(ctx, rt, "obj", 100).Get(ctx)
		if err != nil {
			return err
		}
		for seq, g := range all {
			if want := MakeGID(uint32(seq/25), uint64(seq%25+1)); g != want {
				return fmt.Errorf("/obj/%d = %v, want %v", seq, g, want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestNamespaceIsDistributed(t *testing.T) {
	job, ns, ctx := startJob(t, 4)
	defer job.Close()
	rt := job.Localities[0]
	for seq := range uint32(40) {
		if err := ns.RegisterWithBasename(ctx, rt, "spread", MakeGID(0, uint64(seq+1)), seq).Err(ctx); err != nil {
			t.Fatal(err)
		}
	}
	homes := 0
	for _, l := range job.Localities {
		ns.mu.Lock()
		tb := ns.locals[l]
		ns.mu.Unlock()
		if tb != nil && len(tb.names.names) > 0 {
			homes++
		}
	}
	if homes < 2 {
		t.Fatalf("40 names live on %d localities; the namespace must spread them", homes)
	}
}

// Finds issued before their names are registered complete once they are.
func TestNamespaceFindBeforeRegister(t *testing.T) {
	job, ns, ctx := startJob(t, 4)
	defer job.Close()
	const n = 1000
	finder := job.Localities[0]
	finds := make([]*runtime.Future[GID], n)
	for seq := range uint32(n) {
		finds[seq] = ns.FindFromBasename(ctx, finder, "late", seq)
	}
	// The finds wait at their homes before anything is registered.
	for pending(ns, job) < n {
		if ctx.Err() != nil {
			t.Fatalf("%d of %d finds reached their homes", pending(ns, job), n)
		}
		time.Sleep(100 * time.Microsecond)
	}
	for _, f := range finds {
		if f.IsReady() {
			t.Fatal("a find completed before anything was registered")
		}
	}
	var regs []*runtime.Future[struct{}]
	for seq := range uint32(n) {
		rt := job.Localities[seq%4]
		regs = append(regs, ns.RegisterWithBasename(ctx, rt, "late", MakeGID(seq%4, uint64(seq+1)), seq))
	}
	if err := runtime.WhenAll(regs...).Err(ctx); err != nil {
		t.Fatal(err)
	}
	for seq, f := range finds {
		g, err := f.Get(ctx)
		if err != nil || g != MakeGID(uint32(seq%4), uint64(seq+1)) {
			t.Fatalf("find /late/%d = %v, %v", seq, g, err)
		}
	}
}

// pending returns the number of finds that wait at their homes for their
// names, over the localities of job.
func pending(ns *Service, job *runtime.LocalJob) int {
	n := 0
	for _, l := range job.Localities {
		ns.mu.Lock()
		tb := ns.locals[l]
		ns.mu.Unlock()
		if tb == nil {
			continue
		}
		tb.names.mu.Lock()
		for _, ws := range tb.names.waiters {
			n += len(ws)
		}
		tb.names.mu.Unlock()
	}
	return n
}

func TestNamespaceBadInput(t *testing.T) {
	job, ns, ctx := startJob(t, 3)
	defer job.Close()
	rt := job.Localities[1]
	if err := ns.RegisterWithBasename(ctx, rt, "dup", MakeGID(1, 1), 0).Err(ctx); err != nil {
		t.Fatal(err)
	}
	err := ns.RegisterWithBasename(ctx, job.Localities[2], "dup", MakeGID(2, 9), 0).Err(ctx)
	if !errors.Is(err, ErrNameTaken) || !strings.Contains(err.Error(), "/dup/0") || !strings.Contains(err.Error(), "{1:1}") {
		t.Fatalf("second registration of /dup/0: %v", err)
	}
	if err := ns.RegisterWithBasename(ctx, rt, "zero", 0, 0).Err(ctx); err == nil || !strings.Contains(err.Error(), "zero GID") {
		t.Fatalf("registering the zero GID: %v", err)
	}
	g, err := ns.Unregister(ctx, rt, "dup", 0).Get(ctx)
	if err != nil || g != MakeGID(1, 1) {
		t.Fatalf("unregister /dup/0: %v %v", g, err)
	}
	if _, err := ns.Unregister(ctx, rt, "dup", 0).Get(ctx); !errors.Is(err, ErrNoName) || !strings.Contains(err.Error(), "/dup/0") {
		t.Fatalf("unregistering twice: %v", err)
	}
	if err := ns.RegisterWithBasename(ctx, rt, "dup", MakeGID(2, 9), 0).Err(ctx); err != nil {
		t.Fatalf("registering a freed name again: %v", err)
	}
}
