package linalg

import "sync"

// Gemm's blocking: the micro-kernel's tile of C is gemmMR x gemmNR; A is
// packed gemmMC rows by gemmKC columns at a time (256 KiB, which stays in
// L2), B gemmKC rows by up to gemmNC columns (at most 8 MiB), in panels
// of gemmNR columns (16 KiB each, which stay in L1 while the kernel walks
// A's panels).
const (
	gemmMR = 4
	gemmNR = 8
	gemmKC = 256
	gemmMC = 128
	gemmNC = 4096
)

// Gemm adds alpha·A·B to C, A being m x k (stride lda), B k x n (stride
// ldb) and C m x n (stride ldc), all row-major, with the AVX2 and FMA
// micro-kernel (the caller checks HaveFMA and the shapes, and scales C by
// its beta first). It packs B gemmKC rows by gemmNC columns at a time and
// A in blocks of gemmMC rows, as GotoBLAS does, and splits C's rows over
// up to threads goroutines.
func Gemm(m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, c []float64, ldc int, threads int) {
	if m == 0 || n == 0 || k == 0 {
		return
	}
	kc, nc := min(k, gemmKC), min(n, gemmNC)
	bp := make([]float64, kc*((nc+gemmNR-1)/gemmNR*gemmNR))
	// Each worker takes a share of C's rows, a multiple of gemmMR.
	threads = max(1, min(threads, (m+gemmMR-1)/gemmMR))
	share := ((m+threads-1)/threads + gemmMR - 1) / gemmMR * gemmMR
	mc := min(gemmMC, share)
	aps := make([][]float64, threads)
	for w := range aps {
		aps[w] = make([]float64, mc*kc)
	}
	for j0 := 0; j0 < n; j0 += gemmNC {
		jn := min(gemmNC, n-j0)
		for p0 := 0; p0 < k; p0 += gemmKC {
			pk := min(gemmKC, k-p0)
			packB(bp, b[p0*ldb+j0:], ldb, pk, jn)
			rows := func(w, r0, r1 int) {
				for i0 := r0; i0 < r1; i0 += mc {
					im := min(mc, r1-i0)
					packA(aps[w], a[i0*lda+p0:], lda, im, pk)
					macroKernel(im, jn, pk, alpha, aps[w], bp, c[i0*ldc+j0:], ldc)
				}
			}
			if threads == 1 {
				rows(0, 0, m)
				continue
			}
			var wg sync.WaitGroup
			for w := range threads {
				r0, r1 := w*share, min((w+1)*share, m)
				if r0 >= r1 {
					break
				}
				wg.Add(1)
				go func() { defer wg.Done(); rows(w, r0, r1) }()
			}
			wg.Wait()
		}
	}
}

// packB packs rows [0, pk) of the n columns of b (stride ldb) into bp:
// panel jb of gemmNR columns at jb*pk*gemmNR, row p of it at p*gemmNR,
// the columns past n as zeros.
func packB(bp, b []float64, ldb, pk, n int) {
	nb := (n + gemmNR - 1) / gemmNR
	for p := range pk {
		row := b[p*ldb : p*ldb+n]
		for jb := range nb {
			dst := bp[jb*pk*gemmNR+p*gemmNR:][:gemmNR]
			j0 := jb * gemmNR
			m := copy(dst, row[j0:])
			clear(dst[m:])
		}
	}
}

// packA packs the im x pk block of a (stride lda) into ap: panel ib of
// gemmMR rows at ib*pk*gemmMR, column p of it at p*gemmMR, the rows past
// im as zeros.
func packA(ap, a []float64, lda, im, pk int) {
	for ib := range (im + gemmMR - 1) / gemmMR {
		panel := ap[ib*pk*gemmMR:][:pk*gemmMR]
		for i := range gemmMR {
			r := ib*gemmMR + i
			if r >= im {
				for p := range pk {
					panel[p*gemmMR+i] = 0
				}
				continue
			}
			row := a[r*lda:][:pk]
			for p, v := range row {
				panel[p*gemmMR+i] = v
			}
		}
	}
}

// macroKernel adds alpha times the packed im x pk block of A (ap) times
// the packed pk x n block of B (bp) to the im x n block of C at c: the
// micro-kernel on every gemmMR x gemmNR tile, through a scratch tile
// where C's edge cuts it.
func macroKernel(im, n, pk int, alpha float64, ap, bp, c []float64, ldc int) {
	for jb := range (n + gemmNR - 1) / gemmNR {
		j0 := jb * gemmNR
		jn := min(gemmNR, n-j0)
		bpanel := bp[jb*pk*gemmNR:][:pk*gemmNR]
		for i0 := 0; i0 < im; i0 += gemmMR {
			in := min(gemmMR, im-i0)
			apanel := ap[i0*pk:][:pk*gemmMR]
			if in == gemmMR && jn == gemmNR {
				_ = c[(i0+gemmMR-1)*ldc+j0+gemmNR-1] // the tile is inside c
				kernel4x8(pk, &apanel[0], &bpanel[0], &c[i0*ldc+j0], ldc, alpha)
				continue
			}
			var t [gemmMR * gemmNR]float64
			kernel4x8(pk, &apanel[0], &bpanel[0], &t[0], gemmNR, alpha)
			for i := range in {
				dst := c[(i0+i)*ldc+j0:][:jn]
				for j := range dst {
					dst[j] += t[i*gemmNR+j]
				}
			}
		}
	}
}
