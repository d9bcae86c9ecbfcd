package collective

import (
	"fmt"
	"slices"
	"sync"
	"testing"
)

// net is p sites joined by unbounded mailboxes keyed by (step, from, to):
// a Link for each site, without the runtime.
type net struct {
	mu    sync.Mutex
	cond  *sync.Cond
	boxes map[[3]int][]msg
	count []uint64
}

type msg struct {
	data  []float64
	count uint64
}

func newNet(p int, count uint64) *net {
	n := &net{boxes: map[[3]int][]msg{}, count: make([]uint64, p)}
	n.cond = sync.NewCond(&n.mu)
	for i := range n.count {
		n.count[i] = count
	}
	return n
}

// link is site me of n; root shifts the ranks as the runtime's rooted runs do.
type link struct {
	n        *net
	me, root int
	posted   map[[2]int][]float64
}

func (l *link) Size() int         { return len(l.n.count) }
func (l *link) site(rank int) int { return (rank + l.root) % l.Size() }
func (l *link) Rank() int         { return (l.me - l.root + l.Size()) % l.Size() }
func (l *link) SetCount(c uint64) { l.n.count[l.me] = c }
func (l *link) Unpost()           { l.posted = nil }
func (l *link) Recycle([]float64) {}
func (l *link) Uncleared(n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = -99 // the algorithm must overwrite it
	}
	return v
}

func (l *link) Send(step uint32, to int, data []float64) error {
	l.n.mu.Lock()
	defer l.n.mu.Unlock()
	k := [3]int{int(step), l.me, l.site(to)}
	l.n.boxes[k] = append(l.n.boxes[k], msg{slices.Clone(data), l.n.count[l.me]})
	l.n.cond.Broadcast()
	return nil
}

func (l *link) RecvCount(step uint32, from int) ([]float64, uint64, error) {
	l.n.mu.Lock()
	defer l.n.mu.Unlock()
	k := [3]int{int(step), l.site(from), l.me}
	for len(l.n.boxes[k]) == 0 {
		l.n.cond.Wait()
	}
	m := l.n.boxes[k][0]
	l.n.boxes[k] = l.n.boxes[k][1:]
	return m.data, m.count, nil
}

func (l *link) Recv(step uint32, from int) ([]float64, error) {
	v, _, err := l.RecvCount(step, from)
	return v, err
}

func (l *link) RecvN(step uint32, from, n int) ([]float64, error) {
	v, err := l.Recv(step, from)
	if err == nil && len(v) != n {
		err = fmt.Errorf("%d elements, want %d", len(v), n)
	}
	return v, err
}

func (l *link) Post(step uint32, from int, dst []float64) {
	if l.posted == nil {
		l.posted = map[[2]int][]float64{}
	}
	l.posted[[2]int{int(step), from}] = dst
}

func (l *link) RecvInto(step uint32, from int, dst []float64) error {
	v, err := l.RecvN(step, from, len(dst))
	copy(dst, v)
	return err
}

func sum(dst, lo, hi []float64) {
	for i := range dst {
		dst[i] = lo[i] + hi[i]
	}
}

// run runs f on every site of p at once and returns the results by site.
func run[T any](t *testing.T, p, root int, count uint64, f func(l Link) (T, error)) []T {
	t.Helper()
	n := newNet(p, count)
	out := make([]T, p)
	errs := make([]error, p)
	var wg sync.WaitGroup
	for s := range p {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[s], errs[s] = f(&link{n: n, me: s, root: root})
		}()
	}
	wg.Wait()
	for s, err := range errs {
		if err != nil {
			t.Fatalf("p=%d site %d: %v", p, s, err)
		}
	}
	return out
}

// The algorithms, on 1 to 9 sites over channels, give NumPy's answers.
func TestAlgorithms(t *testing.T) {
	const m = 5
	for p := 1; p <= 9; p++ {
		t.Run(fmt.Sprint("p=", p), func(t *testing.T) {
			data := func(s int) []float64 {
				v := make([]float64, m)
				for i := range v {
					v[i] = float64(s*10 + i)
				}
				return v
			}
			var total, all []float64
			for s := range p {
				all = append(all, data(s)...)
			}
			total = make([]float64, m)
			for s := range p {
				sum(total, total, data(s))
			}
			for _, ring := range []bool{false, true} {
				got := run(t, p, 0, m, func(l Link) ([]float64, error) { return AllReduce(l, data(l.Rank()), sum, ring) })
				for s, v := range got {
					if !slices.Equal(v, total) {
						t.Errorf("AllReduce (ring %v) on site %d: %v, want %v", ring, s, v, total)
					}
				}
				gathered := run(t, p, 0, m, func(l Link) ([]float64, error) { return AllGather(l, data(l.Rank()), ring) })
				for s, v := range gathered {
					if !slices.Equal(v, all) {
						t.Errorf("AllGather (ring %v) on site %d: %v, want %v", ring, s, v, all)
					}
				}
			}
			run(t, p, 0, 0, func(l Link) (struct{}, error) { return struct{}{}, Barrier(l) })
			incl := run(t, p, 0, m, func(l Link) ([]float64, error) { return InclusiveScan(l, data(l.Rank()), sum) })
			excl := run(t, p, 0, m, func(l Link) ([]float64, error) {
				return ExclusiveScan(l, data(l.Rank()), 0, sum, func(a, b float64) float64 { return a + b })
			})
			acc := make([]float64, m)
			for s := range p {
				if !slices.Equal(excl[s], acc) {
					t.Errorf("ExclusiveScan on site %d: %v, want %v", s, excl[s], acc)
				}
				sum(acc, acc, data(s))
				if !slices.Equal(incl[s], acc) {
					t.Errorf("InclusiveScan on site %d: %v, want %v", s, incl[s], acc)
				}
			}
			// Site s sends block j (the value 100*s + j) to site j.
			a2a := run(t, p, 0, uint64(p), func(l Link) ([]float64, error) {
				d := make([]float64, p)
				for j := range d {
					d[j] = float64(100*l.Rank() + j)
				}
				return AllToAll(l, d)
			})
			a2av := run(t, p, 0, AnyCount, func(l Link) ([][]float64, error) {
				b := make([][]float64, p)
				for j := range b {
					b[j] = slices.Repeat([]float64{float64(100*l.Rank() + j)}, j)
				}
				return AllToAllV(l, b)
			})
			for s := range p {
				for j := range p {
					if a2a[s][j] != float64(100*j+s) || len(a2av[s][j]) != s || (s > 0 && a2av[s][j][0] != float64(100*j+s)) {
						t.Errorf("AllToAll(V) on site %d, block from %d: %v, %v", s, j, a2a[s][j], a2av[s][j])
					}
				}
			}
			for root := range p {
				// The rooted runs see ranks relative to the root.
				bc := run(t, p, root, AnyCount, func(l Link) ([]float64, error) {
					var d []float64
					if l.Rank() == 0 {
						l.SetCount(m)
						d = data(root)
					}
					return Broadcast(l, d, 0)
				})
				red := run(t, p, root, m, func(l Link) ([]float64, error) { return Reduce(l, data((l.Rank()+root)%p), sum) })
				gat := run(t, p, root, m, func(l Link) ([]float64, error) { return Gather(l, data((l.Rank()+root)%p), root) })
				sc := run(t, p, root, AnyCount, func(l Link) ([]float64, error) {
					var d []float64
					if l.Rank() == 0 {
						l.SetCount(uint64(len(all)))
						d = all
					}
					return Scatter(l, d, root)
				})
				for s := range p {
					if !slices.Equal(bc[s], data(root)) {
						t.Errorf("Broadcast from %d on site %d: %v", root, s, bc[s])
					}
					if !slices.Equal(sc[s], data(s)) {
						t.Errorf("Scatter from %d on site %d: %v, want %v", root, s, sc[s], data(s))
					}
				}
				if !slices.Equal(red[root], total) || !slices.Equal(gat[root], all) {
					t.Errorf("root %d: Reduce %v (want %v), Gather %v (want %v)", root, red[root], total, gat[root], all)
				}
			}
		})
	}
}
