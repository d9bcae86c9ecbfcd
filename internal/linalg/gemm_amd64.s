#include "textflag.h"

// PREFETCHROW8 asks for the cache lines of the row of 8 float64s of C at
// R9 (64 bytes, two lines when unaligned) and moves R9 to the next row.
#define PREFETCHROW8 \
	PREFETCHT0 (R9);   \
	PREFETCHT0 63(R9); \
	ADDQ       R8, R9

// func kernel4x8(kc int, a, b, c []float64, ldc int, alpha float64)
//
// C[i][j] += alpha * sum over p < kc of a[4p+i] * b[8p+j], for i < 4 and
// j < 8: Gemm's AVX2 micro-kernel, on a packed 4 x kc panel of A (4
// values per p) and a packed kc x 8 panel of B (8 values per p), into a
// 4 x 8 tile of the row-major C (c[i*ldc+j]). kc >= 1; the caller checks
// the lengths and HaveFMA.
//
// Registers: AX a, BX b, CX the p left, DI c, R8 ldc in bytes, R9 a row
// of C to prefetch; Y0-Y7 the tile (row i in Y2i and Y2i+1), Y8 Y9 a row
// of b, Y10 an element of a.
TEXT ·kernel4x8(SB), NOSPLIT, $0-96
	MOVQ kc+0(FP), CX
	MOVQ a_base+8(FP), AX
	MOVQ b_base+32(FP), BX
	MOVQ c_base+56(FP), DI
	MOVQ ldc+80(FP), R8
	SHLQ $3, R8

	// The tile of C is read after the loop: ask for its rows now.
	MOVQ DI, R9
	PREFETCHROW8
	PREFETCHROW8
	PREFETCHROW8
	PREFETCHROW8
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

	VBROADCASTSD alpha+88(FP), Y10
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

// func kernel8x16(kc int, a, b, c []float64, ldc int, alpha float64, cols uint64)
//
// C[i][j] += alpha * sum over p < kc of a[8p+i] * b[16p+j], for i < 8 and
// the j < 16 whose bit is set in cols: Gemm's AVX-512 micro-kernel, on a
// packed 8 x kc panel of A (8 values per p) and a packed kc x 16 panel of
// B (16 values per p), into an 8 x 16 tile of the row-major C
// (c[i*ldc+j]), or the columns of it that cols names (the tile at C's
// right edge). With bit 16 of cols set, C[i][j] = instead of +=, C not
// read. kc >= 1; the caller checks the lengths and AVX-512F.
//
// Registers: AX a, BX b, CX the groups of four p left, DX the p left past
// them, DI c, R8 ldc in bytes, R9 a row of C to prefetch, R10 cols; K1 K2
// the columns of C to add to (cols's low and high byte); Z0-Z15 the tile
// (row i in Z2i and Z2i+1), Z16 Z17 a row of b, Z18 alpha. The elements
// of a are broadcast from memory by the multiply-adds themselves
// (embedded broadcast, .BCST).

// STEP16 adds the outer product of column p of a (at p*64(AX)) and row p
// of b (at p*128(BX)) to the tile.
#define STEP16(p) \
	VMOVUPD          (p*128)(BX), Z16;        \
	VMOVUPD          (p*128+64)(BX), Z17;     \
	VFMADD231PD.BCST (p*64)(AX), Z16, Z0;     \
	VFMADD231PD.BCST (p*64)(AX), Z17, Z1;     \
	VFMADD231PD.BCST (p*64+8)(AX), Z16, Z2;   \
	VFMADD231PD.BCST (p*64+8)(AX), Z17, Z3;   \
	VFMADD231PD.BCST (p*64+16)(AX), Z16, Z4;  \
	VFMADD231PD.BCST (p*64+16)(AX), Z17, Z5;  \
	VFMADD231PD.BCST (p*64+24)(AX), Z16, Z6;  \
	VFMADD231PD.BCST (p*64+24)(AX), Z17, Z7;  \
	VFMADD231PD.BCST (p*64+32)(AX), Z16, Z8;  \
	VFMADD231PD.BCST (p*64+32)(AX), Z17, Z9;  \
	VFMADD231PD.BCST (p*64+40)(AX), Z16, Z10; \
	VFMADD231PD.BCST (p*64+40)(AX), Z17, Z11; \
	VFMADD231PD.BCST (p*64+48)(AX), Z16, Z12; \
	VFMADD231PD.BCST (p*64+48)(AX), Z17, Z13; \
	VFMADD231PD.BCST (p*64+56)(AX), Z16, Z14; \
	VFMADD231PD.BCST (p*64+56)(AX), Z17, Z15

// PREFETCHROW asks for the cache lines of the row of C at R9 (128 bytes,
// over two or three lines) and moves R9 to the next row.
#define PREFETCHROW \
	PREFETCHT0 (R9);    \
	PREFETCHT0 64(R9);  \
	PREFETCHT0 127(R9); \
	ADDQ       R8, R9

// STOREROW adds alpha times the tile's row in lo and hi to the row of C
// at DI, in the columns of the masks K1 (lo's 8) and K2 (hi's 8), and
// moves DI to the next row. The columns outside the masks are neither
// read nor written (AVX-512 suppresses masked-off memory accesses).
#define STOREROW(lo, hi) \
	VFMADD213PD (DI), Z18, K1, lo;   \
	VFMADD213PD 64(DI), Z18, K2, hi; \
	VMOVUPD     lo, K1, (DI);        \
	VMOVUPD     hi, K2, 64(DI);      \
	ADDQ        R8, DI

// SETROW stores alpha times the tile's row in lo and hi into the row of C
// at DI, in the columns of the masks K1 and K2, without reading C, and
// moves DI to the next row.
#define SETROW(lo, hi) \
	VMULPD  Z18, lo, lo;     \
	VMULPD  Z18, hi, hi;     \
	VMOVUPD lo, K1, (DI);    \
	VMOVUPD hi, K2, 64(DI);  \
	ADDQ    R8, DI

TEXT ·kernel8x16(SB), NOSPLIT, $0-104
	MOVQ kc+0(FP), CX
	MOVQ a_base+8(FP), AX
	MOVQ b_base+32(FP), BX
	MOVQ c_base+56(FP), DI
	MOVQ ldc+80(FP), R8
	SHLQ $3, R8
	MOVQ cols+96(FP), R10
	KMOVW R10, K1
	MOVQ R10, R11
	SHRQ $8, R11
	KMOVW R11, K2

	// C's tile is needed only at the end: ask for it now.
	MOVQ DI, R9
	PREFETCHROW
	PREFETCHROW
	PREFETCHROW
	PREFETCHROW
	PREFETCHROW
	PREFETCHROW
	PREFETCHROW
	PREFETCHROW

	VPXORQ Z0, Z0, Z0
	VPXORQ Z1, Z1, Z1
	VPXORQ Z2, Z2, Z2
	VPXORQ Z3, Z3, Z3
	VPXORQ Z4, Z4, Z4
	VPXORQ Z5, Z5, Z5
	VPXORQ Z6, Z6, Z6
	VPXORQ Z7, Z7, Z7
	VPXORQ Z8, Z8, Z8
	VPXORQ Z9, Z9, Z9
	VPXORQ Z10, Z10, Z10
	VPXORQ Z11, Z11, Z11
	VPXORQ Z12, Z12, Z12
	VPXORQ Z13, Z13, Z13
	VPXORQ Z14, Z14, Z14
	VPXORQ Z15, Z15, Z15

	MOVQ CX, DX
	ANDQ $3, DX
	SHRQ $2, CX
	JZ   rest

loop4:
	STEP16(0)
	STEP16(1)
	STEP16(2)
	STEP16(3)
	ADDQ $256, AX
	ADDQ $512, BX
	DECQ CX
	JNZ  loop4

rest:
	TESTQ DX, DX
	JZ    store

loop1:
	STEP16(0)
	ADDQ $64, AX
	ADDQ $128, BX
	DECQ DX
	JNZ  loop1

store:
	VBROADCASTSD alpha+88(FP), Z18
	BTQ $16, R10
	JCS set
	STOREROW(Z0, Z1)
	STOREROW(Z2, Z3)
	STOREROW(Z4, Z5)
	STOREROW(Z6, Z7)
	STOREROW(Z8, Z9)
	STOREROW(Z10, Z11)
	STOREROW(Z12, Z13)
	STOREROW(Z14, Z15)
	VZEROUPPER
	RET

set:
	SETROW(Z0, Z1)
	SETROW(Z2, Z3)
	SETROW(Z4, Z5)
	SETROW(Z6, Z7)
	SETROW(Z8, Z9)
	SETROW(Z10, Z11)
	SETROW(Z12, Z13)
	SETROW(Z14, Z15)
	VZEROUPPER
	RET
