package primitives

import (
	"context"
	"fmt"
	"slices"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/runtime"
	"gonum.org/v1/gonum/blas/blas64"
)

// summa computes this locality's tile of out = A·B by SUMMA on the r x c
// grid A and B share (see CannonProduct): for every panel of the inner
// dimension, cut by A's column and B's row boundaries together, C(i, j) +=
// A(i, panel)·B(panel, j). The owner of A(i, panel) in grid row i
// broadcasts it along the row, the owner of B(panel, j) in grid column j
// along the column; each grid row (column) has one communicator per root,
// named base/row<i>/from<t> (base/col<j>/from<t>). A grid of one column
// (row) needs no row (column) broadcast: the panel is in the local tile.
func (e *Env) summa(ctx context.Context, op, base string, p productPlan, out []float64) error {
	r, c := p.ga.r(), p.ga.c()
	me := e.Locality()
	i, j := me/c, me%c
	mi, nj := p.ga.rows[i].Len(), p.gb.cols[j].Len()
	cOut := general(mi, nj, nj, out)

	s := &summaRun{e: e, ctx: ctx, p: p, i: i, j: j, mi: mi, nj: nj}
	s.ownA, s.ownB = e.ownedTile(p.x), e.ownedTile(p.y)
	defer func() { s.ownA.release(); s.ownB.release() }()

	// The panels: A's column boundaries and B's row boundaries together.
	cuts := []int{}
	for _, sp := range p.ga.cols {
		cuts = append(cuts, sp.Start)
	}
	for _, sp := range p.gb.rows {
		cuts = append(cuts, sp.Start)
	}
	slices.Sort(cuts)
	cuts = slices.Compact(append(cuts, p.x.ann.Tiling.Shape[1]))

	// One communicator per grid row (column) and root.
	s.rowComm = make([]*runtime.Communicator, c)
	s.colComm = make([]*runtime.Communicator, r)
	defer func() {
		for _, cm := range append(s.rowComm, s.colComm...) {
			if cm != nil {
				cm.Close()
			}
		}
	}()
	if c > 1 {
		sites := make([]uint32, c)
		for t := range c {
			sites[t] = uint32(i*c + t)
		}
		for t := range c {
			cm, err := runtime.NewCommunicator(e.rt, fmt.Sprintf("%s/row%d/from%d", base, i, t), sites, t)
			if err != nil {
				return e.wrap(op, err)
			}
			s.rowComm[t] = cm
		}
	}
	if r > 1 {
		sites := make([]uint32, r)
		for t := range r {
			sites[t] = uint32(t*c + j)
		}
		for t := range r {
			cm, err := runtime.NewCommunicator(e.rt, fmt.Sprintf("%s/col%d/from%d", base, j, t), sites, t)
			if err != nil {
				return e.wrap(op, err)
			}
			s.colComm[t] = cm
		}
	}

	cur := s.post(cuts[0], cuts[1])
	defer func() { cur.release(e) }()
	for k := 1; k < len(cuts); k++ {
		var next *summaPanel
		if k+1 < len(cuts) {
			next = s.post(cuts[k], cuts[k+1]) // in flight during this multiply
		}
		a, b, err := cur.wait(ctx)
		if err != nil {
			if next != nil {
				next.release(e)
			}
			return e.wrap(op, err)
		}
		gemm(a, b, cOut, k == 1)
		cur.release(e)
		if next != nil {
			cur = next
		}
	}
	return nil
}

// summaRun is one locality's state of a SUMMA product.
type summaRun struct {
	e          *Env
	ctx        context.Context
	p          productPlan
	i, j       int // this locality's grid position
	mi, nj     int // its rows of A and columns of B
	ownA, ownB inFlight
	rowComm    []*runtime.Communicator // by root's grid column; nil on a grid of one column
	colComm    []*runtime.Communicator // by root's grid row; nil on a grid of one row
}

// summaPanel is the A and B panels of the inner span [k0, k1): a local
// view, a buffer this locality broadcasts, or a broadcast to wait for.
type summaPanel struct {
	k0, k1 int
	s      *summaRun
	parts  [2]panelPart // A, B
}

type panelPart struct {
	local blas64.General // when no broadcast brings it
	sent  inFlight       // what this locality broadcasts as root
	bcast *runtime.Future[[]float64]
	root  bool
	got   inFlight // what the broadcast brought
}

// post starts the broadcasts of panel [k0, k1).
func (s *summaRun) post(k0, k1 int) *summaPanel {
	p, e := s.p, s.e
	w := k1 - k0
	pan := &summaPanel{k0: k0, k1: k1, s: s}
	// A(i, [k0, k1)) is in the tile of grid column ca.
	ca := spanOf(p.ga.cols, k0)
	a0, kA := p.ga.cols[ca].Start, p.ga.cols[ca].Len()
	pa := &pan.parts[0]
	switch {
	case s.rowComm[ca] == nil: // one grid column: the tile has every column
		pa.local = general(s.mi, w, kA, s.ownA.data[k0-a0:])
	case s.j == ca:
		if w == kA {
			pa.sent = borrowed(s.ownA.data)
		} else {
			pa.sent = e.countedTile(runtime.NewTile(e.rt, s.mi*w, runtime.TileOptions{Uncleared: true}))
			buf := pa.sent.data
			for r := range s.mi {
				copy(buf[r*w:(r+1)*w], s.ownA.data[r*kA+k0-a0:])
			}
		}
		pa.root = true
		pa.bcast = broadcast(s.ctx, s.rowComm[ca], &pa.sent)
	default:
		pa.bcast = s.rowComm[ca].Broadcast(s.ctx, nil)
	}
	// B([k0, k1), j) is in the tile of grid row rb: whole rows of it.
	rb := spanOf(p.gb.rows, k0)
	b0 := p.gb.rows[rb].Start
	pb := &pan.parts[1]
	rowsB := s.ownB.data
	if s.colComm[rb] == nil || s.i == rb {
		rowsB = s.ownB.data[(k0-b0)*s.nj : (k1-b0)*s.nj]
	}
	switch {
	case s.colComm[rb] == nil:
		pb.local = general(w, s.nj, s.nj, rowsB)
	case s.i == rb:
		pb.sent = borrowed(rowsB)
		pb.root = true
		pb.bcast = s.colComm[rb].Broadcast(s.ctx, rowsB)
	default:
		pb.bcast = s.colComm[rb].Broadcast(s.ctx, nil)
	}
	return pan
}

// spanOf returns the index of the span holding k.
func spanOf(spans []annotate.Span, k int) int {
	for i, s := range spans {
		if s.Start <= k && k < s.Stop {
			return i
		}
	}
	return -1
}

// wait waits for the panel's broadcasts and returns A's and B's panels.
func (pan *summaPanel) wait(ctx context.Context) (a, b blas64.General, err error) {
	s := pan.s
	w := pan.k1 - pan.k0
	dims := [2][2]int{{s.mi, w}, {w, s.nj}}
	names := [2]string{s.p.x.Name(), s.p.y.Name()}
	var out [2]blas64.General
	for t := range pan.parts {
		pt := &pan.parts[t]
		rows, cols := dims[t][0], dims[t][1]
		switch {
		case pt.bcast == nil:
			out[t] = pt.local
			continue
		case pt.root:
			v, err := pt.bcast.Get(ctx)
			if err != nil {
				return a, b, err
			}
			if len(v) > 0 && &v[0] != &pt.sent.data[0] {
				// The communicator's copy; the sent buffer is the panel.
				runtime.AdoptTile(s.e.rt, v).Release()
			}
			out[t] = general(rows, cols, cols, pt.sent.data)
		default:
			v, err := pt.bcast.Get(ctx)
			if err != nil {
				return a, b, err
			}
			pt.got = s.e.countedTile(runtime.AdoptTile(s.e.rt, v))
			if len(v) != rows*cols {
				return a, b, fmt.Errorf("panel [%d, %d) of %s: got %d elements, want %dx%d", pan.k0, pan.k1, names[t], len(v), rows, cols)
			}
			out[t] = general(rows, cols, cols, v)
		}
	}
	return out[0], out[1], nil
}

// release gives back the panel's buffers; one a broadcast may still be
// sending goes back to the runtime once the broadcast is done with it
// (broadcast holds it).
func (pan *summaPanel) release(e *Env) {
	for t := range pan.parts {
		pt := &pan.parts[t]
		e.recycle(&pt.sent)
		e.recycle(&pt.got)
	}
}

// broadcast broadcasts f's memory as the root of cm; memory the product
// owns is held until the broadcast is done with it (runtime.UseTile).
func broadcast(ctx context.Context, cm *runtime.Communicator, f *inFlight) *runtime.Future[[]float64] {
	if f.mem == nil {
		return cm.Broadcast(ctx, f.data)
	}
	return runtime.UseTile(f.mem, func(b []float64) *runtime.Future[[]float64] { return cm.Broadcast(ctx, b) })
}
