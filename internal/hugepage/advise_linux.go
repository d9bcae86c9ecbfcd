package hugepage

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// advise marks the whole 2 MiB pages inside b with MADV_HUGEPAGE. Memory
// that the program has not touched yet then faults in 2 MiB at a time;
// memory already touched (a reused span of the heap) is left to the
// kernel's khugepaged. The advice is a hint: an error (a kernel without
// transparent huge pages) leaves b as it is.
func advise(b []float64) {
	raw := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(b))), len(b)*8)
	start := uintptr(unsafe.Pointer(unsafe.SliceData(raw)))
	lo := int((start+pageBytes-1)&^(pageBytes-1) - start)
	hi := int((start+uintptr(len(raw)))&^(pageBytes-1) - start)
	if hi <= lo {
		return
	}
	_ = unix.Madvise(raw[lo:hi], unix.MADV_HUGEPAGE)
}
