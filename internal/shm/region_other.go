//go:build !linux

package shm

// NewRegion fails: regions need Linux's memfd and /proc.
func NewRegion(size int) (*Region, error) { return nil, unsupported() }

// MapRegion fails: regions need Linux's memfd and /proc.
func MapRegion(pid, fd int32, ino uint64, size int64) (*Region, error) { return nil, unsupported() }

// Close does nothing: no region exists here.
func (r *Region) Close() error { return nil }
