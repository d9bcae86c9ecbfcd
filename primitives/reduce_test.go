package primitives

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tessera-amt/tessera/runtime"
)

// refReduce is the single-process reference: sum, mean, max, min, argmax,
// argmin (first index on ties).
func refReduce(v []float64) (sum, mean, mx, mn float64, amax, amin int) {
	mx, mn = math.Inf(-1), math.Inf(1)
	for i, x := range v {
		sum += x
		if x > mx {
			mx, amax = x, i
		}
		if x < mn {
			mn, amin = x, i
		}
	}
	return sum, sum / float64(len(v)), mx, mn, amax, amin
}

func TestReductions(t *testing.T) {
	forLocalities(t, func(t *testing.T, n int) {
		runJob(t, n, func(ctx context.Context, e *Env) error {
			for _, shape := range testShapes {
				for _, l := range layouts(shape, n) {
					what := describe(shape, l)
					for _, g := range [][]float64{
						globalData(shape, 3, -1, 1),
						tied(size(shape)),
					} {
						x, err := FromGlobal(e, shape, l, g)
						if err != nil {
							return err
						}
						a := runtime.MakeReady(x)
						// Issue everything before waiting for anything.
						fs := []*runtime.Future[float64]{Sum(ctx, e, a), Mean(ctx, e, a), Max(ctx, e, a), Min(ctx, e, a)}
						fi := []*runtime.Future[int]{ArgMax(ctx, e, a), ArgMin(ctx, e, a)}
						fshape := Shape(ctx, e, a)
						sum, mean, mx, mn, amax, amin := refReduce(g)
						for i, want := range []float64{sum, mean, mx, mn} {
							got, err := fs[i].Get(ctx)
							if err != nil {
								return fmt.Errorf("%s: reduction %d: %v", what, i, err)
							}
							if !closeTo(got, want, 1e-12) {
								return fmt.Errorf("%s: reduction %d (sum, mean, max, min): got %v, want %v", what, i, got, want)
							}
						}
						for i, want := range []int{amax, amin} {
							got, err := fi[i].Get(ctx)
							if err != nil {
								return fmt.Errorf("%s: arg reduction %d: %v", what, i, err)
							}
							if got != want {
								return fmt.Errorf("%s: arg reduction %d (argmax, argmin): got %d, want %d", what, i, got, want)
							}
						}
						s, err := fshape.Get(ctx)
						if err != nil || !slices.Equal(s, shape) {
							return fmt.Errorf("%s: Shape %v, %v", what, s, err)
						}
					}
				}
			}
			return nil
		})
	})
}

// tied returns values whose maximum and minimum occur several times, at
// both ends, so that the smallest index must win across tiles.
func tied(m int) []float64 {
	v := make([]float64, m)
	for i := range v {
		v[i] = float64(i % 3)
	}
	v[m-1] = 2
	return v
}

func TestArgWithNaN(t *testing.T) {
	runJob(t, 3, func(ctx context.Context, e *Env) error {
		g := globalData([]int{13}, 5, 0, 1)
		g[5], g[11] = math.NaN(), math.NaN()
		x, err := FromGlobal(e, []int{13}, Layout{}, g)
		if err != nil {
			return err
		}
		a := runtime.MakeReady(x)
		i, err := ArgMax(ctx, e, a).Get(ctx)
		if err != nil || i != 5 {
			return fmt.Errorf("ArgMax with NaN: %d, %v; want 5", i, err)
		}
		i, err = ArgMin(ctx, e, a).Get(ctx)
		if err != nil || i != 5 {
			return fmt.Errorf("ArgMin with NaN: %d, %v; want 5", i, err)
		}
		m, err := Max(ctx, e, a).Get(ctx)
		if err != nil || !math.IsNaN(m) {
			return fmt.Errorf("Max with NaN: %v, %v; want NaN", m, err)
		}
		return nil
	})
}

// THE RULE: two reductions whose inputs become ready in opposite orders on
// different localities both get the right results, because their
// collectives were reserved in program order. The late input of each
// locality becomes ready only once every locality issued the collective
// of its early one: took its generation then, the early reductions
// would pair with each other.
func TestReductionsPairInProgramOrder(t *testing.T) {
	for _, n := range []int{2, 3, 4} {
		t.Run(fmt.Sprintf("%d-localities", n), func(t *testing.T) {
			w := &issueWatch{prims: map[uint64]bool{}, want: n, issued: make(chan struct{})}
			runWatchedJob(t, n, w, func(ctx context.Context, e *Env) error {
				ga := globalData([]int{7, 5}, 11, 0, 1)
				gb := globalData([]int{7, 5}, 12, 10, 20)
				input := func(g []float64, late bool) *runtime.Future[*Array] {
					gate := runtime.MakeReady(struct{}{})
					if late {
						var fulfil func(struct{}, error) bool
						gate, fulfil = runtime.NewPromise[struct{}](e.Runtime())
						go func() {
							select {
							case <-w.issued:
								fulfil(struct{}{}, nil)
							case <-ctx.Done():
								fulfil(struct{}{}, context.Cause(ctx))
							}
						}()
					}
					return runtime.Then(ctx, gate, func(context.Context, struct{}) (*Array, error) {
						return FromGlobal(e, []int{7, 5}, Layout{}, g)
					})
				}
				// Even localities get a late, odd ones b late.
				lateA := e.Locality()%2 == 0
				a, b := input(ga, lateA), input(gb, !lateA)
				sa := Sum(ctx, e, a)
				sb := Max(ctx, e, b)
				wantA, _, _, _, _, _ := refReduce(ga)
				_, _, wantB, _, _, _ := refReduce(gb)
				gotB, err := sb.Get(ctx)
				if err != nil {
					return err
				}
				gotA, err := sa.Get(ctx)
				if err != nil {
					return err
				}
				if !closeTo(gotA, wantA, 1e-12) || gotB != wantB {
					return fmt.Errorf("locality %d: Sum %v (want %v), Max %v (want %v)", e.Locality(), gotA, wantA, gotB, wantB)
				}
				return nil
			})
		})
	}
}

// issueWatch is a task observer that closes issued once want collectives
// of primitives started: AllReduce tasks spawned by "primitives.*" tasks.
type issueWatch struct {
	mu      sync.Mutex
	prims   map[uint64]bool // GUIDs of the primitives' tasks
	started int
	want    int
	issued  chan struct{}
}

func (w *issueWatch) TaskStart(i runtime.TaskInfo) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case strings.HasPrefix(i.Name, "primitives."):
		w.prims[i.GUID] = true
	case i.Name == "AllReduce" && w.prims[i.Parent]:
		if w.started++; w.started == w.want {
			close(w.issued)
		}
	}
}

func (w *issueWatch) TaskStop(runtime.TaskInfo)   {}
func (w *issueWatch) TaskYield(runtime.TaskInfo)  {}
func (w *issueWatch) TaskResume(runtime.TaskInfo) {}

// runWatchedJob is runJob with obs watching every locality's tasks.
func runWatchedJob(t *testing.T, n int, obs runtime.TaskObserver, body func(ctx context.Context, e *Env) error) {
	t.Helper()
	runJobWith(t, n, 20*time.Second, runtime.Config{Observer: obs}, body)
}

// An input that fails on one locality only cancels the reservation: every
// locality's reduction fails instead of waiting, and later collectives
// still work.
func TestFailedInputCancelsReservation(t *testing.T) {
	runJob(t, 3, func(ctx context.Context, e *Env) error {
		in := Ones(ctx, e, []int{13}, Layout{})
		if e.Locality() == 1 {
			in = runtime.MakeFailed[*Array](errors.New("input broke"))
		}
		_, err := Sum(ctx, e, in).Get(ctx)
		if err == nil {
			return fmt.Errorf("locality %d: Sum of a failed input succeeded", e.Locality())
		}
		if e.Locality() != 1 && !strings.Contains(err.Error(), "input broke") {
			return fmt.Errorf("locality %d: %v, want the cancellation naming the cause", e.Locality(), err)
		}
		s, err := Sum(ctx, e, Ones(ctx, e, []int{13}, Layout{})).Get(ctx)
		if err != nil || s != 13 {
			return fmt.Errorf("locality %d after the cancelled reduction: %v, %v", e.Locality(), s, err)
		}
		return nil
	})
}

func TestEmptyReductions(t *testing.T) {
	runJob(t, 1, func(ctx context.Context, e *Env) error {
		a := Zeros(ctx, e, []int{0}, Layout{})
		if _, err := Max(ctx, e, a).Get(ctx); err == nil || !strings.Contains(err.Error(), "no element") {
			return fmt.Errorf("Max of an empty array: %v", err)
		}
		if _, err := ArgMin(ctx, e, a).Get(ctx); err == nil || !strings.Contains(err.Error(), "no element") {
			return fmt.Errorf("ArgMin of an empty array: %v", err)
		}
		if m, err := Mean(ctx, e, a).Get(ctx); err != nil || !math.IsNaN(m) {
			return fmt.Errorf("Mean of an empty array: %v, %v", m, err)
		}
		if s, err := Sum(ctx, e, a).Get(ctx); err != nil || s != 0 {
			return fmt.Errorf("Sum of an empty array: %v, %v", s, err)
		}
		return nil
	})
}

// The whole-array reductions of a 0-d array (Scalar) give its value on
// any number of localities, which all hold it.
func TestReductionsOfAScalar(t *testing.T) {
	forLocalities(t, func(t *testing.T, n int) {
		runJob(t, n, func(ctx context.Context, e *Env) error {
			s := Scalar(ctx, e, 2.5)
			for name, f := range map[string]*runtime.Future[float64]{
				"Sum": Sum(ctx, e, s), "Mean": Mean(ctx, e, s), "Max": Max(ctx, e, s), "Min": Min(ctx, e, s),
			} {
				if v, err := f.Get(ctx); err != nil || v != 2.5 {
					return fmt.Errorf("%s of Scalar(2.5) on %d localities: %v, %v", name, n, v, err)
				}
			}
			for name, f := range map[string]*runtime.Future[int]{"ArgMax": ArgMax(ctx, e, s), "ArgMin": ArgMin(ctx, e, s)} {
				if i, err := f.Get(ctx); err != nil || i != 0 {
					return fmt.Errorf("%s of Scalar(2.5) on %d localities: %v, %v", name, n, i, err)
				}
			}
			return nil
		})
	})
}
