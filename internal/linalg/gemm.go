package linalg

import "sync"

// gemmKernel is one of Gemm's micro-kernels with the blocking that suits
// it. tile adds alpha times the packed mr x kc panel a (mr values per p,
// p < kc) times the packed kc x nr panel b (nr values per p) to the
// mr x nr tile of C at c[0] (c[i*ldc+j]). masked, where the kernel has
// it, does the same on the first cols (1 to nr) columns of the tile alone,
// not touching the others, and with set stores the product instead of
// adding it, without reading C: Gemm then runs the tiles that C's right
// edge cuts in place (other kernels go through a scratch tile), and
// needs no pass clearing C for beta 0. Gemm packs A mc rows by kc columns
// at a time, and B kc rows by nc columns.
type gemmKernel struct {
	name       string
	mr, nr     int
	kc, mc, nc int
	tile       func(kc int, a, b, c []float64, ldc int, alpha float64)
	masked     func(kc int, a, b, c []float64, ldc int, alpha float64, cols int, set bool)
}

// Gemmer computes matrix products (Gemm) with the fastest micro-kernel
// this CPU has, keeping the buffers it packs A and B into from one call
// to the next: allocating them (up to 9 MiB) on every call, and leaving
// them to the GC, made products of order 256 about four times slower.
// It is safe for concurrent use.
type Gemmer struct {
	ker  gemmKernel
	bufs sync.Pool // of *[]float64
}

// NewGemmer returns a Gemmer with the fastest of the micro-kernels this
// CPU runs (gemmKernels: AVX-512, else AVX2 and FMA), or nil if it runs
// none, gonum's Dgemm then being the faster.
func NewGemmer() *Gemmer {
	ks := gemmKernels()
	if len(ks) == 0 {
		return nil
	}
	return &Gemmer{ker: ks[0]}
}

// Kernel names the Gemmer's micro-kernel's instructions: "AVX-512" or
// "AVX2".
func (g *Gemmer) Kernel() string { return g.ker.name }

// Gemm sets C = alpha·A·B + beta·C, A being m x k (stride lda), B k x n
// (stride ldb) and C m x n (stride ldc), all row-major (the caller checks
// the shapes). With beta 0, C is set as the BLAS sets it: its old values
// (NaNs included) do not count, and with a masked kernel they are not
// even read. It packs B kc rows by nc columns at a time and A in blocks of
// mc rows, as GotoBLAS does, and splits C's rows over up to threads
// goroutines.
func (g *Gemmer) Gemm(m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int, threads int) {
	if m == 0 || n == 0 {
		return
	}
	ker := g.ker
	// The first block of k sets C where the kernel can; otherwise C is
	// scaled by beta first and every block adds to it.
	set := beta == 0 && ker.masked != nil && k > 0 && alpha != 0
	if beta != 1 && !set {
		for i := range m {
			Scale(c[i*ldc:i*ldc+n], beta)
		}
	}
	if k == 0 || alpha == 0 {
		return
	}
	mr, nr := ker.mr, ker.nr
	kc, nc := min(k, ker.kc), min(n, ker.nc)
	// Each worker takes a share of C's rows, a multiple of mr.
	threads = max(1, min(threads, (m+mr-1)/mr))
	share := ((m+threads-1)/threads + mr - 1) / mr * mr
	mc := min(ker.mc/mr*mr, share)
	// The packed block of B, then each worker's block of A.
	bsize, asize := kc*((nc+nr-1)/nr*nr), mc*kc
	buf := g.buffer(bsize + threads*asize)
	defer g.bufs.Put(buf)
	bp := (*buf)[:bsize]
	aps := make([][]float64, threads)
	for w := range aps {
		aps[w] = (*buf)[bsize+w*asize:][:asize]
	}
	for j0 := 0; j0 < n; j0 += ker.nc {
		jn := min(ker.nc, n-j0)
		nb := (jn + nr - 1) / nr
		for p0 := 0; p0 < k; p0 += ker.kc {
			pk := min(ker.kc, k-p0)
			bs := b[p0*ldb+j0:]
			rows := func(w, r0, r1 int) {
				for i0 := r0; i0 < r1; i0 += mc {
					im := min(mc, r1-i0)
					packA(aps[w], a[i0*lda+p0:], lda, im, pk, mr)
					macroKernel(ker, im, jn, pk, alpha, aps[w], bp, c[i0*ldc+j0:], ldc, set && p0 == 0)
				}
			}
			if threads == 1 {
				packB(bp, bs, ldb, pk, jn, nr, 0, nb)
				rows(0, 0, m)
				continue
			}
			// Each worker packs its share of B's panels, waits for the
			// others to pack theirs, and multiplies its rows.
			var packed, done sync.WaitGroup
			packed.Add(threads)
			done.Add(threads)
			for w := range threads {
				go func() {
					defer done.Done()
					packB(bp, bs, ldb, pk, jn, nr, w*nb/threads, (w+1)*nb/threads)
					packed.Done()
					packed.Wait()
					rows(w, min(w*share, m), min((w+1)*share, m))
				}()
			}
			done.Wait()
		}
	}
}

// Scale multiplies row by beta, setting it to zero when beta is 0 (NaNs
// included), as the BLAS does with beta·C.
func Scale(row []float64, beta float64) {
	if beta == 0 {
		clear(row)
		return
	}
	for j := range row {
		row[j] *= beta
	}
}

// buffer returns a buffer of n float64s from g's pool, or a new one if
// the pool has none so large.
func (g *Gemmer) buffer(n int) *[]float64 {
	if p, ok := g.bufs.Get().(*[]float64); ok && cap(*p) >= n {
		*p = (*p)[:n]
		return p
	}
	s := make([]float64, n)
	return &s
}

// packB packs panels [jb0, jb1) of nr columns of the first pk rows of b
// (stride ldb, n columns) into bp: panel jb at jb*pk*nr, row p of it at
// p*nr, the columns past n as zeros.
func packB(bp, b []float64, ldb, pk, n, nr, jb0, jb1 int) {
	for p := range pk {
		row := b[p*ldb : p*ldb+n]
		for jb := jb0; jb < jb1; jb++ {
			dst := bp[jb*pk*nr+p*nr:][:nr]
			clear(dst[copy(dst, row[jb*nr:]):])
		}
	}
}

// packA packs the im x pk block of a (stride lda) into ap in panels of mr
// rows: panel ib at ib*pk*mr, column p of it at p*mr, the rows past im as
// zeros. It reads four rows at a time, which takes a third less time
// than one row at a time.
func packA(ap, a []float64, lda, im, pk, mr int) {
	for i0 := 0; i0 < im; i0 += mr {
		panel := ap[i0*pk:][:pk*mr]
		in := min(mr, im-i0)
		i := 0
		for ; i+4 <= in; i += 4 {
			r := a[(i0+i)*lda:]
			r0, r1, r2, r3 := r[:pk], r[lda:][:pk], r[2*lda:][:pk], r[3*lda:][:pk]
			for p := range pk {
				d := panel[p*mr+i:][:4]
				d[0], d[1], d[2], d[3] = r0[p], r1[p], r2[p], r3[p]
			}
		}
		for ; i < in; i++ {
			for p, v := range a[(i0+i)*lda:][:pk] {
				panel[p*mr+i] = v
			}
		}
		for ; i < mr; i++ {
			for p := range pk {
				panel[p*mr+i] = 0
			}
		}
	}
}

// macroKernel adds alpha times the packed im x pk block of A (ap) times
// the packed pk x n block of B (bp) to the im x n block of C at c, or with
// set (only for a kernel with masked) stores it there: ker's masked (or
// tile) on every tile of mr rows, and a scratch tile where C's bottom edge
// cuts it (or the right edge, for a kernel without masked).
func macroKernel(ker gemmKernel, im, n, pk int, alpha float64, ap, bp, c []float64, ldc int, set bool) {
	mr, nr := ker.mr, ker.nr
	var t []float64
	for jb := range (n + nr - 1) / nr {
		j0 := jb * nr
		jn := min(nr, n-j0)
		bpanel := bp[jb*pk*nr:][:pk*nr]
		for i0 := 0; i0 < im; i0 += mr {
			in := min(mr, im-i0)
			apanel := ap[i0*pk:][:pk*mr]
			if in == mr && ker.masked != nil {
				ker.masked(pk, apanel, bpanel, c[i0*ldc+j0:][:(mr-1)*ldc+jn], ldc, alpha, jn, set)
				continue
			}
			if in == mr && jn == nr {
				ker.tile(pk, apanel, bpanel, c[i0*ldc+j0:][:(mr-1)*ldc+nr], ldc, alpha)
				continue
			}
			if t == nil {
				t = make([]float64, mr*nr)
			}
			clear(t)
			ker.tile(pk, apanel, bpanel, t, nr, alpha)
			for i := range in {
				dst := c[(i0+i)*ldc+j0:][:jn]
				if set {
					copy(dst, t[i*nr:])
					continue
				}
				for j := range dst {
					dst[j] += t[i*nr+j]
				}
			}
		}
	}
}
