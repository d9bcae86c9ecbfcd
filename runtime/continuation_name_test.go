package runtime

import (
	"context"
	"testing"
)

// Continuations are named after the task that created them, once however
// deep they chain, or with the name ThenNamed gives (issue 27: traces
// showed them under Go closure names such as main.main.func2.1).
func TestContinuationNames(t *testing.T) {
	ctx := testCtx(t)
	recs := []*recorder{newRecorder()}
	job, err := startObserved(ctx, recs, NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	rt := job.Localities[0]
	type guids struct{ then, thenThen, named, dataflow, outside uint64 }
	var g guids
	phase := SpawnNamed(ctx, rt, "als.phase", func(ctx context.Context) (struct{}, error) {
		one := Then(ctx, MakeReady(1), func(ctx context.Context, v int) (int, error) {
			g.then = TaskGUID(ctx)
			two := Then(ctx, MakeReady(v), func(ctx context.Context, v int) (int, error) {
				g.thenThen = TaskGUID(ctx)
				return v, nil
			})
			return two.Get(ctx)
		})
		named := ThenNamed(ctx, "als.check", MakeReady(2), func(ctx context.Context, v int) (int, error) {
			g.named = TaskGUID(ctx)
			return v, nil
		})
		df := Dataflow(ctx, func(ctx context.Context, vs []int) (int, error) {
			g.dataflow = TaskGUID(ctx)
			return len(vs), nil
		}, one, named)
		_, err := df.Get(ctx)
		return struct{}{}, err
	})
	if _, err := phase.Get(ctx); err != nil {
		t.Fatal(err)
	}
	// Outside any task the continuation keeps its function's name.
	out := Then(ctx, Spawn(ctx, rt, func(ctx context.Context) (int, error) { return 3, nil }), func(ctx context.Context, v int) (int, error) {
		g.outside = TaskGUID(ctx)
		return v, nil
	})
	if _, err := out.Get(ctx); err != nil {
		t.Fatal(err)
	}
	job.Close()
	r := recs[0]
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range []struct {
		guid uint64
		want string
	}{
		{g.then, "als.phase.then"},
		{g.thenThen, "als.phase.then"},
		{g.named, "als.check"},
		{g.dataflow, "als.phase.then"},
	} {
		if got := r.starts[c.guid].Name; got != c.want {
			t.Errorf("task %x named %q, want %q", c.guid, got, c.want)
		}
	}
	if got := r.starts[g.outside].Name; got == "" || got == "als.phase.then" {
		t.Errorf("a continuation made outside any task is named %q, want its function's name", got)
	}
}
