//go:build !linux

package primitives

// prefault does nothing where madvise(MADV_POPULATE_WRITE) is not used.
func prefault([]float64) {}
