#include "textflag.h"

// func passAVX2(g, d, acc, wa, wb []float32, f int)
//
// For each row j of the n x f block g (n = len(wa), f a multiple of 8):
// t = g_j·d in two 8-wide FMA chains, w = wa[j] + wb[j] t, then
// acc += w g_j. The row is read twice while it is in the L1 cache.
TEXT ·passAVX2(SB), NOSPLIT, $0-128
	MOVQ g_base+0(FP), SI
	MOVQ d_base+24(FP), DI
	MOVQ acc_base+48(FP), DX
	MOVQ wa_base+72(FP), R8
	MOVQ wa_len+80(FP), CX
	MOVQ wb_base+96(FP), R9
	MOVQ f+120(FP), BX
	XORQ R10, R10

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
