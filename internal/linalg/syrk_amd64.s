#include "textflag.h"

// tailmask: for t = 1, 2, 3 at byte 32t, the AVX2 mask of the first t of
// four lanes (the sign bit of each quadword selects it).
DATA tailmask<>+32(SB)/8, $-1
DATA tailmask<>+40(SB)/8, $0
DATA tailmask<>+48(SB)/8, $0
DATA tailmask<>+56(SB)/8, $0
DATA tailmask<>+64(SB)/8, $-1
DATA tailmask<>+72(SB)/8, $-1
DATA tailmask<>+80(SB)/8, $0
DATA tailmask<>+88(SB)/8, $0
DATA tailmask<>+96(SB)/8, $-1
DATA tailmask<>+104(SB)/8, $-1
DATA tailmask<>+112(SB)/8, $-1
DATA tailmask<>+120(SB)/8, $0
GLOBL tailmask<>(SB), RODATA|NOPTR, $128

// func upper4AVX2(c []float64, ldc int, s []float64, lda int, n int, alpha float64)
//
// For 0 <= a <= j < n: c[a*ldc+j] += alpha * sum over r < 4 of
// s[r*lda+a] * s[r*lda+j]. The caller checks the lengths and that the CPU
// has AVX2 and FMA.
//
// Registers: DI the row a of c, R8 ldc in bytes, SI R10 R11 R12 the four
// rows of s, AX the row a, DX the column j, CX n, Y15 alpha; Y0-Y3 alpha
// times s[r][a] for the four rows, Y4 the four elements of c in work, Y5
// the mask of a row's last 1 to 3 elements (tailmask, 32 bytes for each
// count of lanes).
TEXT ·upper4AVX2(SB), NOSPLIT, $0-80
	MOVQ c_base+0(FP), DI
	MOVQ ldc+24(FP), R8
	SHLQ $3, R8
	MOVQ s_base+32(FP), SI
	MOVQ lda+56(FP), R9
	SHLQ $3, R9
	MOVQ n+64(FP), CX
	VBROADCASTSD alpha+72(FP), Y15
	LEAQ (SI)(R9*1), R10
	LEAQ (R10)(R9*1), R11
	LEAQ (R11)(R9*1), R12
	XORQ AX, AX

row:
	CMPQ AX, CX
	JGE  done
	VBROADCASTSD (SI)(AX*8), Y0
	VBROADCASTSD (R10)(AX*8), Y1
	VBROADCASTSD (R11)(AX*8), Y2
	VBROADCASTSD (R12)(AX*8), Y3
	VMULPD       Y15, Y0, Y0
	VMULPD       Y15, Y1, Y1
	VMULPD       Y15, Y2, Y2
	VMULPD       Y15, Y3, Y3
	MOVQ         AX, DX
	MOVQ         CX, BX
	SUBQ         $4, BX  // the last j that starts a full vector

vec:
	CMPQ        DX, BX
	JG          tail
	VMOVUPD     (DI)(DX*8), Y4
	VFMADD231PD (SI)(DX*8), Y0, Y4
	VFMADD231PD (R10)(DX*8), Y1, Y4
	VFMADD231PD (R11)(DX*8), Y2, Y4
	VFMADD231PD (R12)(DX*8), Y3, Y4
	VMOVUPD     Y4, (DI)(DX*8)
	ADDQ        $4, DX
	JMP         vec

tail:
	// The last 1 to 3 elements of the row, if any, in one masked vector:
	// masked-off lanes are neither read nor written.
	MOVQ        CX, R13
	SUBQ        DX, R13
	JLE         next
	SHLQ        $5, R13
	LEAQ        tailmask<>(SB), R14
	VMOVDQU     (R14)(R13*1), Y5
	VMASKMOVPD  (DI)(DX*8), Y5, Y4
	VMASKMOVPD  (SI)(DX*8), Y5, Y6
	VFMADD231PD Y6, Y0, Y4
	VMASKMOVPD  (R10)(DX*8), Y5, Y6
	VFMADD231PD Y6, Y1, Y4
	VMASKMOVPD  (R11)(DX*8), Y5, Y6
	VFMADD231PD Y6, Y2, Y4
	VMASKMOVPD  (R12)(DX*8), Y5, Y6
	VFMADD231PD Y6, Y3, Y4
	VMASKMOVPD  Y4, Y5, (DI)(DX*8)

next:
	ADDQ R8, DI
	INCQ AX
	JMP  row

done:
	VZEROUPPER
	RET
