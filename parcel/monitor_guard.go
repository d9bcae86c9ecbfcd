package parcel

import "time"

// monitorGuardPeriod bounds how long Go's monitor thread sleeps while the
// port reads with raw system calls (see monitorGuard).
const monitorGuardPeriod = 100 * time.Millisecond

// monitorGuard keeps a Go timer pending while the port reads with raw
// system calls (TCPConfig.RawReads). Go's monitor thread (sysmon) is what
// preempts a goroutine that has run for more than 10 ms; it sleeps, for
// as long as no timer is due, whenever the process has nothing to run, and
// a system call the scheduler is told of is what wakes it. With raw reads
// and writes nothing does: a locality that goes from waiting to computing
// — with one processor (GOMAXPROCS=1, as with more localities than cores)
// and kernels Go cannot preempt by signal (gonum's are assembly) — then
// keeps its readers, writers and heartbeat clock from running for as long
// as it computes, and its peers take it for dead after HeartbeatTimeout
// (Cannon of 4096 x 4096 on 4 localities on 2 cores failed so in 6 of 12
// runs). A ticker wakes the monitor every monitorGuardPeriod.
func (t *TCP) monitorGuard() {
	tk := time.NewTicker(monitorGuardPeriod)
	defer tk.Stop()
	for {
		select {
		case <-tk.C:
		case <-t.stop:
			return
		}
	}
}
