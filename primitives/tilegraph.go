package primitives

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"

	"github.com/tessera-amt/tessera/runtime"
	"gonum.org/v1/gonum/blas/blas64"
)

// NotPositiveDefiniteError is the error of a Cholesky factorisation (and
// of SolveSPD) whose matrix is not symmetric positive definite: the pivot
// of global column Column was not positive (or not a number).
type NotPositiveDefiniteError struct {
	Array  string // the matrix, "name/generation"
	Column int    // global column of the first pivot that was not positive
}

func (e *NotPositiveDefiniteError) Error() string {
	return fmt.Sprintf("matrix %s is not positive definite: the pivot of column %d is not positive", e.Array, e.Column)
}

func (e *NotPositiveDefiniteError) column() int { return e.Column }

// columnError is an error found at one global column of a factorisation;
// its column travels to the other localities in the failure marker.
type columnError interface {
	error
	column() int
}

// tileFuture is a tile of a factorisation once a task made it: a view of
// this locality's local matrix or a tile received.
type tileFuture = *runtime.Future[blas64.General]

// tileGraph is one locality's part of a tiled algorithm run as a task
// graph: every kernel a task on the tile's owner (runtime.ThenNamed over
// the futures of its input tiles), every tile another locality needs sent
// once to each such locality over a Channel.
//
// Every message a locality expects is sent, whatever happens: a tile whose
// task failed travels as a failure marker (the tile's length plus one
// element, the global column of the failure or -1), so no locality waits
// for a tile that will never come, and every locality's result fails,
// naming the column when there is one. At the end one AllReduce (in a
// generation reserved when the primitive was called) tells every locality
// whether and where the graph failed anywhere.
type tileGraph struct {
	e     *Env
	op    string
	ctx   context.Context
	ch    *runtime.Channel
	end   *runtime.Reservation
	waits []func(ctx context.Context) error
	// failed builds the error of a failure at global column col (>= 0)
	// found elsewhere.
	failed func(col int) error
	ready  readyKernels // ranked kernels whose inputs are ready
	cur    *graphStep   // the step being built (beginStep), if any
}

// newTileGraph opens the graph's channel, named base on every locality;
// end is the reservation of the final AllReduce.
func newTileGraph(ctx context.Context, e *Env, op, base string, end *runtime.Reservation, failed func(col int) error) (*tileGraph, error) {
	ch, err := runtime.NewChannel(e.rt, base, nil)
	if err != nil {
		return nil, e.wrap(op, err)
	}
	return &tileGraph{e: e, op: op, ctx: ctx, ch: ch, end: end, failed: failed}, nil
}

// graphCollective is collective for a primitive that runs a tileGraph:
// body gets the reservation of its start barrier (start) and of the
// graph's final AllReduce (end), both taken when called; end is cancelled
// when body fails without issuing it.
func graphCollective[T any](ctx context.Context, e *Env, op string, body func(ctx context.Context, start, end *runtime.Reservation) (T, error)) *runtime.Future[T] {
	end, err := e.reserve(op)
	if err != nil {
		return runtime.MakeFailed[T](err)
	}
	return collective(ctx, e, op, func(ctx context.Context, start *runtime.Reservation) (T, error) {
		v, err := body(ctx, start, end)
		if err != nil {
			end.Cancel(err) // no effect once issued
		}
		return v, err
	})
}

// task runs fn as a task named name once every input is ready; it fails,
// without running fn, with the first failed input's error.
func (g *tileGraph) task(name string, fn func(vs []blas64.General) (blas64.General, error), in ...tileFuture) tileFuture {
	f := runtime.ThenNamed(g.ctx, name, runtime.WhenAll(in...), func(_ context.Context, vs []blas64.General) (blas64.General, error) {
		return fn(vs)
	})
	g.waits = append(g.waits, f.Err)
	track(g.cur, f)
	return f
}

// ranked is task for a kernel that runs before the ready kernels of
// greater rank: when its inputs are ready it joins the graph's ready
// kernels, and each task the graph spawns for a ready kernel runs the one
// of least rank at that moment (as a task named after it), so kernels on
// the critical path overtake the bulk of the work queued before them.
func (g *tileGraph) ranked(name string, rank int64, fn func(vs []blas64.General) (blas64.General, error), in ...tileFuture) tileFuture {
	out, fulfil := runtime.NewPromise[blas64.General](g.e.rt)
	all := runtime.WhenAll(in...)
	runtime.Finally(all, func() {
		vs, err := all.Get(g.ctx) // ready: does not wait
		if err != nil {
			fulfil(blas64.General{}, err)
			return
		}
		g.ready.push(readyKernel{rank: rank, name: name, run: func() {
			defer func() {
				if p := recover(); p != nil {
					fulfil(blas64.General{}, fmt.Errorf("kernel %s panicked: %v", name, p))
				}
			}()
			fulfil(fn(vs))
		}})
		runtime.SpawnNamed(g.ctx, g.e.rt, "dispatch", func(ctx context.Context) (struct{}, error) {
			k := g.ready.pop()
			_, err := runtime.SpawnNamed(ctx, g.e.rt, k.name, func(context.Context) (struct{}, error) {
				k.run()
				return struct{}{}, nil
			}).Get(ctx)
			return struct{}{}, err
		})
	})
	g.waits = append(g.waits, out.Err)
	track(g.cur, out)
	return out
}

// readyKernel is a ranked kernel whose inputs are ready.
type readyKernel struct {
	rank int64
	seq  uint64
	name string
	run  func()
}

// readyKernels is a heap of ready kernels, least rank first, then first
// come first.
type readyKernels struct {
	mu   sync.Mutex
	seq  uint64
	heap []readyKernel
}

func (q *readyKernels) less(a, b readyKernel) bool {
	return a.rank < b.rank || (a.rank == b.rank && a.seq < b.seq)
}

func (q *readyKernels) push(k readyKernel) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.seq++
	k.seq = q.seq
	h := append(q.heap, k)
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !q.less(h[i], h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
	q.heap = h
}

// pop removes the kernel of least rank; there is one for every dispatch.
func (q *readyKernels) pop() readyKernel {
	q.mu.Lock()
	defer q.mu.Unlock()
	h := q.heap
	k := h[0]
	n := len(h) - 1
	h[0] = h[n]
	h[n] = readyKernel{}
	h = h[:n]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < n && q.less(h[l], h[m]) {
			m = l
		}
		if r := l + 1; r < n && q.less(h[r], h[m]) {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	q.heap = h
	return k
}

// send sends the tile f makes, rows x cols, under tag to each of dests,
// once it is ready, or the failure marker when f fails.
func (g *tileGraph) send(f tileFuture, tag uint64, rows, cols int, dests []int) {
	if len(dests) == 0 {
		return
	}
	name := fmt.Sprintf("send(%d)", tag)
	s := runtime.SpawnNamed(g.ctx, g.e.rt, name, func(ctx context.Context) (struct{}, error) {
		t, err := f.Get(ctx)
		var msg []float64
		if err != nil {
			msg = make([]float64, rows*cols+1)
			msg[rows*cols] = -1
			var ce columnError
			if errors.As(err, &ce) {
				msg[rows*cols] = float64(ce.column())
			}
		} else {
			// A tile of the locality's reused memory, given back once
			// every copy is on its way.
			mem := runtime.NewTile(g.e.rt, rows*cols, runtime.TileOptions{Uncleared: true})
			defer mem.Release()
			msg = mem.Float64s()
			packInto(msg, t)
		}
		sent := make([]*runtime.Future[struct{}], len(dests))
		for k, d := range dests {
			sent[k] = g.ch.Set(ctx, d, tag, msg)
		}
		var first error
		for _, s := range sent {
			if err := s.Err(ctx); err != nil && first == nil {
				first = err
			}
		}
		return struct{}{}, first
	})
	g.waits = append(g.waits, s.Err)
	track(g.cur, s)
}

// recv is the tile rows x cols that locality from sends under tag. The
// received value becomes the tile where it arrives, without a task of
// its own, so a kernel waiting for it is ready at once rather than after
// the tasks queued meanwhile.
func (g *tileGraph) recv(from int, tag uint64, rows, cols int) tileFuture {
	got := g.ch.Get(g.ctx, from, tag)
	f, fulfil := runtime.NewPromise[blas64.General](g.e.rt)
	s := g.cur
	runtime.Finally(got, func() {
		v, err := got.Get(g.ctx) // ready: does not wait
		if err != nil {
			fulfil(blas64.General{}, err)
			return
		}
		s.keep(runtime.AdoptTile(g.e.rt, v))
		fulfil(g.unpack(from, tag, rows, cols, v))
	})
	g.waits = append(g.waits, f.Err)
	track(s, f)
	return f
}

// unpack turns the value v received from locality from under tag into the
// tile rows x cols, or into the error its failure marker stands for.
func (g *tileGraph) unpack(from int, tag uint64, rows, cols int, v []float64) (blas64.General, error) {
	switch len(v) {
	case rows * cols:
		return blas64.General{Rows: rows, Cols: cols, Stride: cols, Data: v}, nil
	case rows*cols + 1:
		if col := int(v[rows*cols]); col >= 0 {
			return blas64.General{}, g.failed(col)
		}
		return blas64.General{}, fmt.Errorf("the tile of tag %d from locality %d failed there", tag, from)
	}
	return blas64.General{}, fmt.Errorf("the tile of tag %d from locality %d has %d elements, want %dx%d", tag, from, len(v), rows, cols)
}

// wait waits for every task, send and receive of the graph, closes the
// channel, and returns the error that names a column if any failed so,
// else the first error.
func (g *tileGraph) wait(ctx context.Context) error {
	var first error
	for _, w := range g.waits {
		err := w(ctx)
		if err == nil {
			continue
		}
		var ce columnError
		if first == nil || (errors.As(err, &ce) && !errors.As(first, &ce)) {
			first = err
		}
	}
	g.ch.Close()
	// Where it failed, everywhere: the smallest failed column (+Inf for
	// none) and -1 when any locality failed.
	mine := []float64{math.Inf(1), 0}
	if first != nil {
		mine[1] = -1
		var ce columnError
		if errors.As(first, &ce) {
			mine[0] = float64(ce.column())
		}
	}
	got, err := g.end.AllReduce(ctx, mine, math.Min).Get(ctx)
	switch {
	case err != nil && first == nil:
		first = err
	case err != nil:
	case !math.IsInf(got[0], 1) && got[0] != mine[0]:
		first = g.failed(int(got[0]))
	case first == nil && got[1] < 0:
		first = errors.New("the factorisation failed on another locality")
	}
	if first != nil {
		return g.e.wrap(g.op, first)
	}
	return nil
}

// destinations returns the localities marked in set but this one.
func destinations(set []bool, me int) []int {
	var out []int
	for l, ok := range set {
		if ok && l != me {
			out = append(out, l)
		}
	}
	return out
}

// checkFinite is the start barrier of a primitive whose inputs must be
// finite: an AllReduce (in the reserved generation r) of the largest
// magnitude of this locality's elements of xs, NaN when one is NaN. Every
// locality fails alike, naming the arrays, when any element anywhere is
// NaN or Inf.
func (e *Env) checkFinite(ctx context.Context, op string, r *runtime.Reservation, xs ...*Array) error {
	big := 0.0
	for _, x := range xs {
		for _, v := range x.data {
			if av := math.Abs(v); av > big || math.IsNaN(av) {
				big = av
			}
		}
	}
	got, err := r.AllReduce(ctx, []float64{big}, nanMax).Get(ctx)
	if err != nil {
		return e.wrap(op, err)
	}
	if math.IsNaN(got[0]) || math.IsInf(got[0], 0) {
		names := make([]string, len(xs))
		for i, x := range xs {
			names[i] = x.Name()
		}
		return e.errorf(op, "array %s holds NaN or Inf: want finite elements", strings.Join(names, " or "))
	}
	return nil
}
