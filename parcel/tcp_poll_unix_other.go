//go:build unix && !linux

package parcel

// osYield does nothing where there is no sched_yield to call.
func osYield() {}

type pollFD struct{}

// readable lets every try read: there is no cheaper question to ask here.
func readable(*pollFD, uintptr) bool { return true }
