//go:build !unix

package parcel

// ringYield does nothing here: a ring waiter spins with Go's scheduler
// only.
func ringYield() {}
