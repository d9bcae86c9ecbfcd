//go:build !linux

package primitives

import "os"

// adviseSequential does nothing where posix_fadvise is not used.
func adviseSequential(*os.File, int64) {}

// adviseWillNeed does nothing where posix_fadvise is not used.
func adviseWillNeed(string) {}

// prefault does nothing where madvise(MADV_POPULATE_WRITE) is not used.
func prefault([]float64) {}
