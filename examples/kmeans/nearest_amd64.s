#include "textflag.h"

// func nearestAVX2(x, ct, norms, labels, sums, counts []float64, d, k int) (changed int)
//
// nearestGo in AVX2 and FMA instructions for 16 centres (ct d x 16, norms
// 16). Points go two at a time: one row of ct (four registers) meets the
// broadcast coordinate of both, into eight accumulators, lane c of
// accumulator q of a point holding its product with centre 4q+c. A point
// is then finished alone (finish): distances, their least non-NaN value
// (VMINPD keeps its second operand, the running minimum, when the first
// is NaN), the first centre reaching it, the label, the counts and the
// sums. A last odd point goes alone.
//
// Registers: SI the point, DI ct, R8 norms, R9 labels, R10 its index, CX
// n, BX d, DX sums; R11 is 1 while the second point of a pair waits in
// Y4-Y7; Y14 holds 1.0 and Y15 +Inf in every lane.
TEXT ·nearestAVX2(SB), NOSPLIT, $0-168
	MOVQ x_base+0(FP), SI
	MOVQ ct_base+24(FP), DI
	MOVQ norms_base+48(FP), R8
	MOVQ labels_base+72(FP), R9
	MOVQ labels_len+80(FP), CX
	MOVQ sums_base+96(FP), DX
	MOVQ d+144(FP), BX
	MOVQ $0, changed+160(FP)
	XORQ R10, R10

	MOVQ         $0x3ff0000000000000, AX
	MOVQ         AX, X14
	VBROADCASTSD X14, Y14
	MOVQ         $0x7ff0000000000000, AX
	MOVQ         AX, X15
	VBROADCASTSD X15, Y15

pair:
	LEAQ   1(R10), AX
	CMPQ   AX, CX
	JGE    single
	MOVQ   $1, R11
	LEAQ   (SI)(BX*8), R12
	MOVQ   DI, R13
	XORQ   AX, AX
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7

dot2:
	// Two coordinates a round while both are left, then the last one.
	LEAQ 1(AX), R14
	CMPQ R14, BX
	JGE  dot2last
	VMOVUPD      (R13), Y8
	VMOVUPD      32(R13), Y9
	VMOVUPD      64(R13), Y10
	VMOVUPD      96(R13), Y11
	VBROADCASTSD (SI)(AX*8), Y12
	VBROADCASTSD (R12)(AX*8), Y13
	VFMADD231PD  Y8, Y12, Y0
	VFMADD231PD  Y9, Y12, Y1
	VFMADD231PD  Y10, Y12, Y2
	VFMADD231PD  Y11, Y12, Y3
	VFMADD231PD  Y8, Y13, Y4
	VFMADD231PD  Y9, Y13, Y5
	VFMADD231PD  Y10, Y13, Y6
	VFMADD231PD  Y11, Y13, Y7
	VMOVUPD      128(R13), Y8
	VMOVUPD      160(R13), Y9
	VMOVUPD      192(R13), Y10
	VMOVUPD      224(R13), Y11
	VBROADCASTSD 8(SI)(AX*8), Y12
	VBROADCASTSD 8(R12)(AX*8), Y13
	VFMADD231PD  Y8, Y12, Y0
	VFMADD231PD  Y9, Y12, Y1
	VFMADD231PD  Y10, Y12, Y2
	VFMADD231PD  Y11, Y12, Y3
	VFMADD231PD  Y8, Y13, Y4
	VFMADD231PD  Y9, Y13, Y5
	VFMADD231PD  Y10, Y13, Y6
	VFMADD231PD  Y11, Y13, Y7
	ADDQ         $256, R13
	ADDQ         $2, AX
	JMP          dot2

dot2last:
	CMPQ         AX, BX
	JGE          finish
	VMOVUPD      (R13), Y8
	VMOVUPD      32(R13), Y9
	VMOVUPD      64(R13), Y10
	VMOVUPD      96(R13), Y11
	VBROADCASTSD (SI)(AX*8), Y12
	VBROADCASTSD (R12)(AX*8), Y13
	VFMADD231PD  Y8, Y12, Y0
	VFMADD231PD  Y9, Y12, Y1
	VFMADD231PD  Y10, Y12, Y2
	VFMADD231PD  Y11, Y12, Y3
	VFMADD231PD  Y8, Y13, Y4
	VFMADD231PD  Y9, Y13, Y5
	VFMADD231PD  Y10, Y13, Y6
	VFMADD231PD  Y11, Y13, Y7
	JMP          finish

single:
	CMPQ   R10, CX
	JGE    done
	XORQ   R11, R11
	MOVQ   DI, R13
	XORQ   AX, AX
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3

dot1:
	CMPQ         AX, BX
	JGE          finish
	VBROADCASTSD (SI)(AX*8), Y12
	VFMADD231PD  (R13), Y12, Y0
	VFMADD231PD  32(R13), Y12, Y1
	VFMADD231PD  64(R13), Y12, Y2
	VFMADD231PD  96(R13), Y12, Y3
	ADDQ         $128, R13
	INCQ         AX
	JMP          dot1

finish:
	// Distances |c|² - 2g: 2g is exact, so one rounding as in Go.
	VMOVUPD (R8), Y8
	VMOVUPD 32(R8), Y9
	VMOVUPD 64(R8), Y10
	VMOVUPD 96(R8), Y11
	VADDPD  Y0, Y0, Y0
	VADDPD  Y1, Y1, Y1
	VADDPD  Y2, Y2, Y2
	VADDPD  Y3, Y3, Y3
	VSUBPD  Y0, Y8, Y0
	VSUBPD  Y1, Y9, Y1
	VSUBPD  Y2, Y10, Y2
	VSUBPD  Y3, Y11, Y3

	// The least non-NaN distance in every lane of Y12.
	VMINPD       Y15, Y0, Y12
	VMINPD       Y12, Y1, Y12
	VMINPD       Y12, Y2, Y12
	VMINPD       Y12, Y3, Y12
	VEXTRACTF128 $1, Y12, X13
	VMINPD       X13, X12, X12
	VPERMILPD    $1, X12, X13
	VMINPD       X13, X12, X12
	VBROADCASTSD X12, Y12

	// One bit per centre at its least distance; the first is the label.
	VCMPPD    $0, Y12, Y0, Y13
	VMOVMSKPD Y13, AX
	VCMPPD    $0, Y12, Y1, Y13
	VMOVMSKPD Y13, R12
	SHLQ      $4, R12
	ORQ       R12, AX
	VCMPPD    $0, Y12, Y2, Y13
	VMOVMSKPD Y13, R12
	SHLQ      $8, R12
	ORQ       R12, AX
	VCMPPD    $0, Y12, Y3, Y13
	VMOVMSKPD Y13, R12
	SHLQ      $12, R12
	ORQ       R12, AX
	BSFQ      AX, AX
	JEQ       none
	CMPQ      AX, k+152(FP)
	JLT       label

none:
	XORQ AX, AX

label:
	VCVTSI2SDQ AX, X12, X12
	VUCOMISD   (R9)(R10*8), X12
	JNE        relabel
	JPS        relabel
	JMP        count

relabel:
	VMOVSD X12, (R9)(R10*8)
	INCQ   changed+160(FP)

count:
	MOVQ   counts_base+120(FP), R13
	VMOVSD (R13)(AX*8), X12
	VADDSD X14, X12, X12
	VMOVSD X12, (R13)(AX*8)

	// Row AX of sums += the point: eight, four, then one coordinate a
	// round.
	MOVQ  AX, R13
	IMULQ BX, R13
	LEAQ  (DX)(R13*8), R13
	XORQ  AX, AX

sum8:
	LEAQ    8(AX), R12
	CMPQ    R12, BX
	JGT     sum4
	VMOVUPD (R13)(AX*8), Y12
	VMOVUPD 32(R13)(AX*8), Y13
	VADDPD  (SI)(AX*8), Y12, Y12
	VADDPD  32(SI)(AX*8), Y13, Y13
	VMOVUPD Y12, (R13)(AX*8)
	VMOVUPD Y13, 32(R13)(AX*8)
	MOVQ    R12, AX
	JMP     sum8

sum4:
	LEAQ    4(AX), R12
	CMPQ    R12, BX
	JGT     sum1
	VMOVUPD (R13)(AX*8), Y12
	VADDPD  (SI)(AX*8), Y12, Y12
	VMOVUPD Y12, (R13)(AX*8)
	MOVQ    R12, AX
	JMP     sum4

sum1:
	CMPQ   AX, BX
	JGE    next
	VMOVSD (R13)(AX*8), X12
	VADDSD (SI)(AX*8), X12, X12
	VMOVSD X12, (R13)(AX*8)
	INCQ   AX
	JMP    sum1

next:
	LEAQ    (SI)(BX*8), SI
	INCQ    R10
	TESTQ   R11, R11
	JEQ     pair
	XORQ    R11, R11
	VMOVAPD Y4, Y0
	VMOVAPD Y5, Y1
	VMOVAPD Y6, Y2
	VMOVAPD Y7, Y3
	JMP     finish

done:
	VZEROUPPER
	RET
