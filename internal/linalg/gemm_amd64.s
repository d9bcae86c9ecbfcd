#include "textflag.h"

// func kernel4x8(kc int, a, b, c *float64, ldc int, alpha float64)
//
// C[i][j] += alpha * sum over p < kc of a[4p+i] * b[8p+j], for i < 4 and
// j < 8: the micro-kernel of Gemm, on a packed 4 x kc panel of A (4 values
// per p) and a packed kc x 8 panel of B (8 values per p), into a 4 x 8
// tile of the row-major C of stride ldc. kc >= 1; the caller checks
// HaveFMA.
//
// Registers: AX a, BX b, CX the p left, DI c, R8 ldc in bytes; Y0-Y7 the
// tile (row i in Y2i and Y2i+1), Y8 Y9 a row of b, Y10 an element of a.
TEXT ·kernel4x8(SB), NOSPLIT, $0-48
	MOVQ kc+0(FP), CX
	MOVQ a+8(FP), AX
	MOVQ b+16(FP), BX
	MOVQ c+24(FP), DI
	MOVQ ldc+32(FP), R8
	SHLQ $3, R8
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7

loop:
	VMOVUPD      (BX), Y8
	VMOVUPD      32(BX), Y9
	VBROADCASTSD (AX), Y10
	VFMADD231PD  Y8, Y10, Y0
	VFMADD231PD  Y9, Y10, Y1
	VBROADCASTSD 8(AX), Y10
	VFMADD231PD  Y8, Y10, Y2
	VFMADD231PD  Y9, Y10, Y3
	VBROADCASTSD 16(AX), Y10
	VFMADD231PD  Y8, Y10, Y4
	VFMADD231PD  Y9, Y10, Y5
	VBROADCASTSD 24(AX), Y10
	VFMADD231PD  Y8, Y10, Y6
	VFMADD231PD  Y9, Y10, Y7
	ADDQ         $32, AX
	ADDQ         $64, BX
	DECQ         CX
	JNZ          loop

	VBROADCASTSD alpha+40(FP), Y10
	VMOVUPD      (DI), Y8
	VMOVUPD      32(DI), Y9
	VFMADD231PD  Y0, Y10, Y8
	VFMADD231PD  Y1, Y10, Y9
	VMOVUPD      Y8, (DI)
	VMOVUPD      Y9, 32(DI)
	ADDQ         R8, DI
	VMOVUPD      (DI), Y8
	VMOVUPD      32(DI), Y9
	VFMADD231PD  Y2, Y10, Y8
	VFMADD231PD  Y3, Y10, Y9
	VMOVUPD      Y8, (DI)
	VMOVUPD      Y9, 32(DI)
	ADDQ         R8, DI
	VMOVUPD      (DI), Y8
	VMOVUPD      32(DI), Y9
	VFMADD231PD  Y4, Y10, Y8
	VFMADD231PD  Y5, Y10, Y9
	VMOVUPD      Y8, (DI)
	VMOVUPD      Y9, 32(DI)
	ADDQ         R8, DI
	VMOVUPD      (DI), Y8
	VMOVUPD      32(DI), Y9
	VFMADD231PD  Y6, Y10, Y8
	VFMADD231PD  Y7, Y10, Y9
	VMOVUPD      Y8, (DI)
	VMOVUPD      Y9, 32(DI)
	VZEROUPPER
	RET
