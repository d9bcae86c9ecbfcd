#include "textflag.h"

// func passAVX2(g, d, acc, wa, wb []float32, f int)
//
// For each row j of the n x f block g (n = len(wa), f a multiple of 8):
// t = g_j·d, w = wa[j] + wb[j] t, then acc += w g_j. Rows go two at a
// time: both dot products share the loads of d and one horizontal sum,
// and acc is loaded and stored once for both updates; a last odd row goes
// alone. Each row is read twice while it is in the L1 cache.
TEXT ·passAVX2(SB), NOSPLIT, $0-128
	MOVQ g_base+0(FP), SI
	MOVQ d_base+24(FP), DI
	MOVQ acc_base+48(FP), DX
	MOVQ wa_base+72(FP), R8
	MOVQ wa_len+80(FP), CX
	MOVQ wb_base+96(FP), R9
	MOVQ f+120(FP), BX
	XORQ R10, R10

pair:
	LEAQ   1(R10), R12
	CMPQ   R12, CX
	JGE    row
	LEAQ   (SI)(BX*4), R11
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	XORQ   AX, AX

dot2:
	CMPQ        AX, BX
	JGE         dot2sum
	VMOVUPS     (DI)(AX*4), Y4
	VFMADD231PS (SI)(AX*4), Y4, Y0
	VFMADD231PS (R11)(AX*4), Y4, Y1
	ADDQ        $8, AX
	CMPQ        AX, BX
	JGE         dot2sum
	VMOVUPS     (DI)(AX*4), Y5
	VFMADD231PS (SI)(AX*4), Y5, Y2
	VFMADD231PS (R11)(AX*4), Y5, Y3
	ADDQ        $8, AX
	JMP         dot2

dot2sum:
	// Y0: row j's partial sums, Y1: row j+1's; X0 ends as
	// [t_j, t_j+1, t_j, t_j+1].
	VADDPS       Y2, Y0, Y0
	VADDPS       Y3, Y1, Y1
	VHADDPS      Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VHADDPS      X0, X0, X0

	// w_j, w_j+1 = wa + wb·t in the two low lanes of X4; each broadcast.
	VMOVSD       (R8)(R10*4), X4
	VMOVSD       (R9)(R10*4), X5
	VFMADD231PS  X5, X0, X4
	VBROADCASTSS X4, Y6
	VPERMILPS    $0x55, X4, X7
	VBROADCASTSS X7, Y7
	XORQ         AX, AX

axpy2:
	CMPQ        AX, BX
	JGE         next2
	VMOVUPS     (DX)(AX*4), Y2
	VFMADD231PS (SI)(AX*4), Y6, Y2
	VFMADD231PS (R11)(AX*4), Y7, Y2
	VMOVUPS     Y2, (DX)(AX*4)
	ADDQ        $8, AX
	JMP         axpy2

next2:
	LEAQ (R11)(BX*4), SI
	ADDQ $2, R10
	JMP  pair

row:
	CMPQ   R10, CX
	JGE    done
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	XORQ   AX, AX

dot:
	CMPQ        AX, BX
	JGE         dotsum
	VMOVUPS     (SI)(AX*4), Y2
	VFMADD231PS (DI)(AX*4), Y2, Y0
	ADDQ        $8, AX
	CMPQ        AX, BX
	JGE         dotsum
	VMOVUPS     (SI)(AX*4), Y3
	VFMADD231PS (DI)(AX*4), Y3, Y1
	ADDQ        $8, AX
	JMP         dot

dotsum:
	VADDPS       Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0

	// w = wa[j] + wb[j]·t, in every lane of Y4.
	VMOVSS       (R8)(R10*4), X4
	VFMADD231SS  (R9)(R10*4), X0, X4
	VBROADCASTSS X4, Y4
	XORQ         AX, AX

axpy:
	CMPQ        AX, BX
	JGE         next
	VMOVUPS     (DX)(AX*4), Y2
	VFMADD231PS (SI)(AX*4), Y4, Y2
	VMOVUPS     Y2, (DX)(AX*4)
	ADDQ        $8, AX
	JMP         axpy

next:
	LEAQ (SI)(BX*4), SI
	INCQ R10
	JMP  row

done:
	VZEROUPPER
	RET

// func prefetchLines(p unsafe.Pointer, n int)
//
// PREFETCHT0 of every 64-byte line that the n bytes at p touch.
TEXT ·prefetchLines(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	ADDQ SI, CX
	ANDQ $-64, SI

line:
	PREFETCHT0 (SI)
	ADDQ       $64, SI
	CMPQ       SI, CX
	JB         line
	RET

// func axpyRowsAVX2(g, acc, w []float32, f int)
//
// acc += Σ_j w[j] g_j over the rows of the n x f block g (n = len(w), f a
// multiple of 8), two rows at a time (acc loaded and stored once for
// both), a last odd row alone.
TEXT ·axpyRowsAVX2(SB), NOSPLIT, $0-80
	MOVQ g_base+0(FP), SI
	MOVQ acc_base+24(FP), DX
	MOVQ w_base+48(FP), R8
	MOVQ w_len+56(FP), CX
	MOVQ f+72(FP), BX
	XORQ R10, R10

apair:
	LEAQ         1(R10), R12
	CMPQ         R12, CX
	JGE          arow
	LEAQ         (SI)(BX*4), R11
	VBROADCASTSS (R8)(R10*4), Y6
	VBROADCASTSS (R8)(R12*4), Y7
	XORQ         AX, AX

aloop2:
	CMPQ        AX, BX
	JGE         anext2
	VMOVUPS     (DX)(AX*4), Y2
	VFMADD231PS (SI)(AX*4), Y6, Y2
	VFMADD231PS (R11)(AX*4), Y7, Y2
	VMOVUPS     Y2, (DX)(AX*4)
	ADDQ        $8, AX
	JMP         aloop2

anext2:
	LEAQ (R11)(BX*4), SI
	ADDQ $2, R10
	JMP  apair

arow:
	CMPQ         R10, CX
	JGE          adone
	VBROADCASTSS (R8)(R10*4), Y6
	XORQ         AX, AX

aloop1:
	CMPQ        AX, BX
	JGE         adone
	VMOVUPS     (DX)(AX*4), Y2
	VFMADD231PS (SI)(AX*4), Y6, Y2
	VMOVUPS     Y2, (DX)(AX*4)
	ADDQ        $8, AX
	JMP         aloop1

adone:
	VZEROUPPER
	RET
