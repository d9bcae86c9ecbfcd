package primitives

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"strings"
	"testing"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/runtime"
)

// conv1dReference is the convolution by its definition, loop by loop, for
// x of shape (pages, steps, in) and a kernel (k, in, out); it returns the
// output steps and the result (pages, outLen, out).
func conv1dReference(x []float64, pages, steps, in int, w []float64, k, out int, pad Padding, stride, dil int) (int, []float64) {
	span := (k-1)*dil + 1
	var outLen, left int
	switch pad {
	case PadValid:
		outLen = (steps-span)/stride + 1
	case PadSame:
		outLen = (steps + stride - 1) / stride
		left = max((outLen-1)*stride+span-steps, 0) / 2
	case PadCausal:
		outLen = (steps + stride - 1) / stride
		left = span - 1
	}
	y := make([]float64, pages*outLen*out)
	for b := range pages {
		for t := range outLen {
			for o := range out {
				s := 0.0
				for kk := range k {
					i := t*stride + kk*dil - left
					if i < 0 || i >= steps {
						continue
					}
					for c := range in {
						s += x[(b*steps+i)*in+c] * w[(kk*in+c)*out+o]
					}
				}
				y[(b*outLen+t)*out+o] = s
			}
		}
	}
	return outLen, y
}

func TestConv1D(t *testing.T) {
	const pages, steps, in, k, out = 7, 29, 3, 4, 5
	x3 := globalData([]int{pages, steps, in}, 21, -1, 1)
	x2 := x3[:steps*in] // one sequence
	kernel := Whole{Shape: []int{k, in, out}, Data: globalData([]int{k, in, out}, 22, -1, 1)}
	type params struct {
		pad         Padding
		stride, dil int
	}
	var ps []params
	for _, pad := range []Padding{PadValid, PadSame, PadCausal} {
		for _, s := range []int{1, 2, 3} {
			for _, d := range []int{1, 2} {
				ps = append(ps, params{pad, s, d})
			}
		}
	}
	for n := 1; n <= 5; n++ {
		t.Run(fmt.Sprintf("%d-localities", n), func(t *testing.T) {
			runJob(t, n, func(ctx context.Context, e *Env) error {
				kf := runtime.MakeReady(kernel)
				var l3 []Layout
				l3 = append(l3, Tiled(annotate.Page))
				if n > 1 {
					l3 = append(l3, Layout{Kind: annotate.Page, Halo: 1})
				}
				for _, l := range l3 {
					xa, err := FromGlobal(e, []int{pages, steps, in}, l, x3)
					if err != nil {
						return err
					}
					for _, p := range ps {
						what := fmt.Sprintf("3-D, halo %d, %+v", l.Halo, p)
						outLen, want := conv1dReference(x3, pages, steps, in, kernel.Data, k, out, p.pad, p.stride, p.dil)
						y, err := Conv1D(ctx, e, runtime.MakeReady(xa), kf, Conv1DOptions{Padding: p.pad, Stride: p.stride, Dilation: p.dil}).Get(ctx)
						if err != nil {
							return fmt.Errorf("%s: %w", what, err)
						}
						if got, wantShape := fmt.Sprint(y.Shape()), fmt.Sprint([]int{pages, outLen, out}); got != wantShape {
							return fmt.Errorf("%s: shape %s, want %s", what, got, wantShape)
						}
						if !strings.HasPrefix(y.Annotation().Name, xa.Annotation().Name+"~") || y.Annotation().Generation != 1 {
							return fmt.Errorf("%s: result %s, want %s~<k>/1", what, y.Name(), xa.Annotation().Name)
						}
						if !y.LocalBlock()[0].Contains(xa.LocalBlock()[0]) || !xa.LocalBlock()[0].Contains(y.LocalBlock()[0]) {
							return fmt.Errorf("%s: result holds pages %v, the input %v", what, y.LocalBlock()[0], xa.LocalBlock()[0])
						}
						if err := checkTile(y, want, what); err != nil {
							return err
						}
					}
				}
				var l2 []Layout
				for _, kind := range []annotate.Kind{annotate.Row, annotate.Column, annotate.Sym} {
					if _, err := annotate.New(kind, []int{steps, in}, n); err == nil {
						l2 = append(l2, Tiled(kind))
					}
				}
				if n > 1 {
					l2 = append(l2, Layout{Kind: annotate.Row, Halo: 2})
				}
				for _, l := range l2 {
					xa, err := FromGlobal(e, []int{steps, in}, l, x2)
					if err != nil {
						return err
					}
					for _, p := range ps {
						what := fmt.Sprintf("2-D, %v tiling, halo %d, %+v", l.Kind, l.Halo, p)
						outLen, want := conv1dReference(x2, 1, steps, in, kernel.Data, k, out, p.pad, p.stride, p.dil)
						if outLen < n {
							continue
						}
						// Chained on a future that is not ready yet.
						xf := runtime.Then(ctx, runtime.MakeReady(xa), func(context.Context, *Array) (*Array, error) { return xa, nil })
						y, err := Conv1D(ctx, e, xf, kf, Conv1DOptions{Padding: p.pad, Stride: p.stride, Dilation: p.dil}).Get(ctx)
						if err != nil {
							return fmt.Errorf("%s: %w", what, err)
						}
						if got, wantShape := fmt.Sprint(y.Shape()), fmt.Sprint([]int{outLen, out}); got != wantShape {
							return fmt.Errorf("%s: shape %s, want %s", what, got, wantShape)
						}
						if err := checkTile(y, want, what); err != nil {
							return err
						}
					}
				}
				return nil
			})
		})
	}
}

func TestConv1DErrors(t *testing.T) {
	for n := 1; n <= 3; n++ {
		t.Run(fmt.Sprintf("%d-localities", n), func(t *testing.T) {
			runJob(t, n, func(ctx context.Context, e *Env) error {
				x := Random(ctx, e, []int{6, 10, 3}, Tiled(annotate.Page), 1)
				x2 := Random(ctx, e, []int{10, 3}, Tiled(annotate.Row), 1)
				good := runtime.MakeReady(Whole{Shape: []int{3, 3, 2}, Data: make([]float64, 18)})
				cases := []struct {
					name string
					x    *runtime.Future[*Array]
					w    *runtime.Future[Whole]
					opts Conv1DOptions
					want string
				}{
					{"channels", x, runtime.MakeReady(Whole{Shape: []int{3, 4, 2}, Data: make([]float64, 24)}), Conv1DOptions{}, "kernel of shape [3 4 2] has 4 input channels, array random_1/0 of shape [6 10 3] has 3"},
					{"kernel data", x, runtime.MakeReady(Whole{Shape: []int{3, 3, 2}, Data: make([]float64, 17)}), Conv1DOptions{}, "kernel of shape [3 3 2] holds 17 elements, want 18"},
					{"kernel shape", x, runtime.MakeReady(Whole{Shape: []int{3, 3}, Data: make([]float64, 9)}), Conv1DOptions{}, "want (kernel size, input channels, output channels)"},
					{"stride", x, good, Conv1DOptions{Stride: -1}, "stride -1 and dilation 0: want 1 or more"},
					{"dilation", x2, good, Conv1DOptions{Dilation: -2}, "stride 0 and dilation -2: want 1 or more"},
					{"padding", x, good, Conv1DOptions{Padding: "full"}, `padding "full": want "valid", "same" or "causal"`},
					{"too short", x, good, Conv1DOptions{Dilation: 5}, "shorter than the kernel's span of 11 steps"},
					{"not page tiled", Random(ctx, e, []int{6, 10, 3}, Tiled(annotate.Column), 1), good, Conv1DOptions{}, "must be tiled on pages only"},
					{"1-D", Random(ctx, e, []int{10}, Tiled(annotate.Row), 1), good, Conv1DOptions{}, "want a 2-D (steps, channels) or 3-D"},
					{"failed input", runtime.MakeFailed[*Array](errors.New("no input")), good, Conv1DOptions{}, "no input"},
				}
				for _, c := range cases {
					if c.name == "not page tiled" && n == 1 {
						continue // one tile holds everything
					}
					_, err := Conv1D(ctx, e, c.x, c.w, c.opts).Get(ctx)
					if err == nil || !strings.Contains(err.Error(), c.want) {
						return fmt.Errorf("%s: error %v, want one saying %q", c.name, err, c.want)
					}
				}
				// A 2-D convolution after the failures pairs up.
				y, err := Conv1D(ctx, e, x2, good, Conv1DOptions{Padding: PadSame}).Get(ctx)
				if err == nil && y.Shape()[0] != 10 {
					err = fmt.Errorf("shape %v, want [10 2]", y.Shape())
				}
				return err
			})
		})
	}
}

// TestConv1DParts convolves tiles big enough to be cut into parts, one
// task each (conv1dMinRows), on 1 and 2 localities.
func TestConv1DParts(t *testing.T) {
	defer goruntime.GOMAXPROCS(goruntime.GOMAXPROCS(3))
	const pages, steps, in, k, out = 150, 80, 2, 5, 3
	x := globalData([]int{pages, steps, in}, 41, -1, 1)
	kernel := Whole{Shape: []int{k, in, out}, Data: globalData([]int{k, in, out}, 42, -1, 1)}
	for n := 1; n <= 2; n++ {
		runJob(t, n, func(ctx context.Context, e *Env) error {
			for _, p := range []Conv1DOptions{{Padding: PadValid}, {Padding: PadSame, Dilation: 3}} {
				_, want := conv1dReference(x, pages, steps, in, kernel.Data, k, out, p.Padding, 1, max(p.Dilation, 1))
				xa, err := FromGlobal(e, []int{pages, steps, in}, Tiled(annotate.Page), x)
				if err != nil {
					return err
				}
				y, err := Conv1D(ctx, e, runtime.MakeReady(xa), runtime.MakeReady(kernel), p).Get(ctx)
				if err != nil {
					return err
				}
				if err := checkTile(y, want, fmt.Sprintf("%d localities, %+v", n, p)); err != nil {
					return err
				}
			}
			return nil
		})
	}
}

// TestConv1DSetsReusedMemory: a convolution's result may take the memory
// of an array released before it as that array left it
// (runtime.TileOptions.Uncleared), so the convolution must set every
// element, not add to it: 3-D and 2-D, with padding (taps outside the
// input), more rows than one Gemm block, and filters that are no multiple
// of the Gemm kernel's width.
func TestConv1DSetsReusedMemory(t *testing.T) {
	const pages, steps, in, k, out = 9, 70, 3, 5, 21
	x3 := globalData([]int{pages, steps, in}, 31, -1, 1)
	x2 := x3[:steps*in]
	k1 := runtime.MakeReady(Whole{Shape: []int{k, in, out}, Data: globalData([]int{k, in, out}, 32, -1, 1)})
	w2 := globalData([]int{k, in, out}, 33, -1, 1)
	k2 := runtime.MakeReady(Whole{Shape: []int{k, in, out}, Data: w2})
	runJob(t, 1, func(ctx context.Context, e *Env) error {
		for _, c := range []struct {
			what   string
			shape  []int
			kind   annotate.Kind
			x      []float64
			pages  int
			padded Padding
		}{
			{"3-D", []int{pages, steps, in}, annotate.Page, x3, pages, PadSame},
			{"2-D", []int{steps, in}, annotate.Row, x2, 1, PadCausal},
		} {
			xa, err := FromGlobal(e, c.shape, Tiled(c.kind), c.x)
			if err != nil {
				return err
			}
			for _, pad := range []Padding{PadValid, c.padded} {
				what := fmt.Sprintf("%s, %s padding, into the memory of a released result", c.what, pad)
				opts := Conv1DOptions{Padding: pad}
				first, err := Conv1D(ctx, e, runtime.MakeReady(xa), k1, opts).Get(ctx)
				if err != nil {
					return err
				}
				old := &first.Local()[0]
				first.Release()
				y, err := Conv1D(ctx, e, runtime.MakeReady(xa), k2, opts).Get(ctx)
				if err != nil {
					return err
				}
				if &y.Local()[0] != old {
					return fmt.Errorf("%s: the result did not take the released result's memory; the test tests nothing", what)
				}
				_, want := conv1dReference(c.x, c.pages, steps, in, w2, k, out, pad, 1, 1)
				if err := checkTile(y, want, what); err != nil {
					return err
				}
				y.Release()
			}
		}
		return nil
	})
}
