package hugepage

// MinBytes is the least size of a buffer that Float64s advises for huge
// pages: NumPy's threshold. Below it a buffer spans too few 2 MiB pages
// for the advice to matter.
const MinBytes = 4 << 20

// pageBytes is the size of a transparent huge page on x86-64 and arm64
// with 4 KiB base pages.
const pageBytes = 2 << 20

// Float64s returns a zeroed []float64 of length n from Go's heap, like
// make. When n float64s take MinBytes or more it also advises the kernel
// to back the 2 MiB pages inside the buffer with huge pages (advise); the
// few KiB at its ends that share a 2 MiB page with other memory stay
// as they are. The buffer is garbage collected like any other.
func Float64s(n int) []float64 {
	b := make([]float64, n)
	if n*8 >= MinBytes {
		advise(b)
	}
	return b
}
