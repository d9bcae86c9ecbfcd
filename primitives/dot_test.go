package primitives

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/runtime"
)

// rowLayouts are the row tilings Dot accepts for a matrix of shape on n
// localities: by kind, explicit uneven rows, each also with an overlap.
func rowLayouts(shape []int, n int) []Layout {
	out := []Layout{Tiled(annotate.Row)}
	if t, ok := unevenUser(shape, n, 0); ok {
		out = append(out, Layout{Tiling: &t})
	}
	if n > 1 {
		out = append(out, Layout{Kind: annotate.Row, Halo: 1})
	}
	return out
}

// matmul is the reference product of a (m×k) and b (k×n), row-major.
func matmul(a, b []float64, m, k, n int) []float64 {
	out := make([]float64, m*n)
	for i := range m {
		for j := range n {
			s := 0.0
			for l := range k {
				s += a[i*k+l] * b[l*n+j]
			}
			out[i*n+j] = s
		}
	}
	return out
}

func TestVDot(t *testing.T) {
	forLocalities(t, func(t *testing.T, n int) {
		runJob(t, n, func(ctx context.Context, e *Env) error {
			shape := []int{17}
			ga, gb := globalData(shape, 1, -1, 1), globalData(shape, 2, -1, 1)
			want := 0.0
			for i := range ga {
				want += ga[i] * gb[i]
			}
			for _, la := range retileLayouts(shape, n) {
				for _, lb := range retileLayouts(shape, n) {
					x, err := FromGlobal(e, shape, la, ga)
					if err != nil {
						return err
					}
					y, err := FromGlobal(e, shape, lb, gb)
					if err != nil {
						return err
					}
					got, err := VDot(ctx, e, runtime.MakeReady(x), runtime.MakeReady(y)).Get(ctx)
					if err != nil {
						return err
					}
					if !closeTo(got, want, 1e-12) {
						return fmt.Errorf("%s . %s: %v, want %v", describeLayout(la), describeLayout(lb), got, want)
					}
				}
			}
			return nil
		})
	})
}

func TestDot(t *testing.T) {
	forLocalities(t, func(t *testing.T, n int) {
		runJob(t, n, func(ctx context.Context, e *Env) error {
			m, k, p := 11, 7, 5
			ga := globalData([]int{m, k}, 1, -1, 1)
			gv := globalData([]int{k}, 2, -1, 1)
			gb := globalData([]int{k, p}, 3, -1, 1)
			wantV := matmul(ga, gv, m, k, 1)
			wantM := matmul(ga, gb, m, k, p)
			for _, la := range rowLayouts([]int{m, k}, n) {
				x, err := FromGlobal(e, []int{m, k}, la, ga)
				if err != nil {
					return err
				}
				for _, lv := range retileLayouts([]int{k}, n) {
					v, err := FromGlobal(e, []int{k}, lv, gv)
					if err != nil {
						return err
					}
					what := fmt.Sprintf("matrix %s . vector %s", describeLayout(la), describeLayout(lv))
					y, err := Dot(ctx, e, runtime.MakeReady(x), runtime.MakeReady(v)).Get(ctx)
					if err != nil {
						return fmt.Errorf("%s: %w", what, err)
					}
					if err := checkTile(y, wantV, what); err != nil {
						return err
					}
					if y.OwnedBlock()[0] != x.OwnedBlock()[0] || y.LocalBlock()[0] != x.LocalBlock()[0] {
						return fmt.Errorf("%s: result holds %v owning %v, want the rows of %v owning %v", what, y.LocalBlock(), y.OwnedBlock(), x.LocalBlock(), x.OwnedBlock())
					}
				}
				for _, lb := range retileLayouts([]int{k, p}, n) {
					b, err := FromGlobal(e, []int{k, p}, lb, gb)
					if err != nil {
						return err
					}
					what := fmt.Sprintf("matrix %s . matrix %s", describeLayout(la), describeLayout(lb))
					y, err := Dot(ctx, e, runtime.MakeReady(x), runtime.MakeReady(b)).Get(ctx)
					if err != nil {
						return fmt.Errorf("%s: %w", what, err)
					}
					if err := checkTile(y, wantM, what); err != nil {
						return err
					}
				}
			}
			return nil
		})
	})
}

func TestDotErrors(t *testing.T) {
	runJob(t, 2, func(ctx context.Context, e *Env) error {
		a := Ones(ctx, e, []int{6, 4}, Layout{Name: "a"})
		c := Ones(ctx, e, []int{6, 4}, Layout{Name: "c", Kind: annotate.Column})
		v := Ones(ctx, e, []int{4}, Layout{Name: "v"})
		w := Ones(ctx, e, []int{6}, Layout{Name: "w"})
		for _, tc := range []struct {
			name string
			f    func() error
			want []string
		}{
			{"vector . vector", func() error { _, err := Dot(ctx, e, v, w).Get(ctx); return err }, []string{"Dot", "v/0", "w/0", "not conformable"}},
			{"not conformable", func() error { _, err := Dot(ctx, e, a, w).Get(ctx); return err }, []string{"Dot", "a/0", "w/0", "not conformable"}},
			{"matrix . matrix", func() error { _, err := Dot(ctx, e, c, a).Get(ctx); return err }, []string{"Dot", "c/0", "a/0", "not conformable", "shapes (6,4) and (6,4) not aligned"}},
			{"vdot lengths", func() error { _, err := VDot(ctx, e, v, w).Get(ctx); return err }, []string{"VDot", "v/0", "w/0"}},
		} {
			err := tc.f()
			for _, s := range tc.want {
				if err == nil || !strings.Contains(err.Error(), s) {
					return fmt.Errorf("%s: error %v, want one naming %q", tc.name, err, s)
				}
			}
			if !strings.Contains(err.Error(), "locality") {
				return fmt.Errorf("%s: error %v does not name the locality", tc.name, err)
			}
		}
		return nil
	})
}
