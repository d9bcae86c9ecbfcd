#include "textflag.h"

// func dotAxpyAVX2(s, d, acc []float64, a, b float64)
//
// t = s·d, then acc += (a + b·t) s, over len(s) elements (the caller
// makes d and acc as long): eight at a time in two AVX2 registers with
// FMA, the rest one at a time. The row s is read twice while it is in the
// L1 cache.
TEXT ·dotAxpyAVX2(SB), NOSPLIT, $0-88
	MOVQ s_base+0(FP), SI
	MOVQ s_len+8(FP), CX
	MOVQ d_base+24(FP), DI
	MOVQ acc_base+48(FP), DX
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	MOVQ CX, BX
	ANDQ $-8, BX
	XORQ AX, AX

dot8:
	CMPQ AX, BX
	JGE  dotsum
	VMOVUPD     (SI)(AX*8), Y2
	VFMADD231PD (DI)(AX*8), Y2, Y0
	VMOVUPD     32(SI)(AX*8), Y3
	VFMADD231PD 32(DI)(AX*8), Y3, Y1
	ADDQ        $8, AX
	JMP         dot8

dotsum:
	VADDPD       Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPD       X1, X0, X0
	VHADDPD      X0, X0, X0

dot1:
	CMPQ        AX, CX
	JGE         weight
	VMOVSD      (SI)(AX*8), X2
	VFMADD231SD (DI)(AX*8), X2, X0
	INCQ        AX
	JMP         dot1

weight:
	// w = a + b·t, in every lane of Y4.
	VMOVSD       a+72(FP), X4
	VFMADD231SD  b+80(FP), X0, X4
	VBROADCASTSD X4, Y4
	XORQ         AX, AX

axpy8:
	CMPQ        AX, BX
	JGE         axpy1
	VMOVUPD     (DX)(AX*8), Y2
	VFMADD231PD (SI)(AX*8), Y4, Y2
	VMOVUPD     Y2, (DX)(AX*8)
	VMOVUPD     32(DX)(AX*8), Y3
	VFMADD231PD 32(SI)(AX*8), Y4, Y3
	VMOVUPD     Y3, 32(DX)(AX*8)
	ADDQ        $8, AX
	JMP         axpy8

axpy1:
	CMPQ        AX, CX
	JGE         done
	VMOVSD      (DX)(AX*8), X2
	VFMADD231SD (SI)(AX*8), X4, X2
	VMOVSD      X2, (DX)(AX*8)
	INCQ        AX
	JMP         axpy1

done:
	VZEROUPPER
	RET
