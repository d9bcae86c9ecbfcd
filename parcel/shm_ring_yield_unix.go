//go:build unix

package parcel

// ringYield offers the core to the machine's other threads while a ring
// waiter spins (sched_yield on Linux), as the TCP spinner does.
func ringYield() { osYield() }
