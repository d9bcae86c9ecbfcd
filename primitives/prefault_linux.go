//go:build linux

package primitives

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// prefault backs the fresh memory of dst with pages in one call
// (MADV_POPULATE_WRITE) before it is written by several goroutines: page
// faults of several threads on one new (shared) mapping contend in the
// kernel, one populate does not. Memory already backed is only walked.
// Errors (an old kernel) leave the pages to fault in as before.
func prefault(dst []float64) {
	if len(dst)*8 < 4<<20 {
		return
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(dst))), len(dst)*8)
	page := uintptr(os.Getpagesize())
	start := (uintptr(unsafe.Pointer(&b[0])) + page - 1) &^ (page - 1)
	off := int(start - uintptr(unsafe.Pointer(&b[0])))
	n := (len(b) - off) &^ int(page-1)
	if n <= 0 {
		return
	}
	unix.Madvise(b[off:off+n], unix.MADV_POPULATE_WRITE)
}
