//go:build unix && !linux

package parcel

// osYield does nothing where there is no sched_yield to call.
func osYield() {}
