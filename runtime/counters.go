package runtime

import (
	"github.com/tessera-amt/tessera/parcel"
	"github.com/tessera-amt/tessera/trace"
)

// Counters is a snapshot of a locality's performance counters. They are
// atomics updated as the runtime works; reading them costs a few loads.
type Counters struct {
	Locality      uint32
	TasksSpawned  uint64 // tasks created here (local, continuations, served actions)
	TasksExecuted uint64 // tasks that ran to the end
	TaskYields    uint64 // times a task gave its lane back to wait
	TaskQueueLen  int    // tasks waiting for a lane now
	Lanes         int
	CallsSent     uint64 // action calls sent to other localities
	CallsServed   uint64 // action calls received from other localities
	PendingCalls  int    // calls sent whose reply has not arrived
	BytesLent     uint64 // bytes of shared memory lent to localities on this machine (Channel.Lend), not copied
	BytesBorrowed uint64 // bytes of shared memory other localities lent here
	Peers         []parcel.PeerCounters
	// What the counter sources added with AddCounterSource count: AGAS's
	// work and objects (agas adds it), the distributed arrays' memory
	// (primitives adds it). Nil when no source counts it.
	AGAS   *trace.AGASCounters
	Arrays *trace.ArrayCounters
}

// Counters returns the locality's counters now.
func (rt *Runtime) Counters() Counters {
	pending := rt.pending.len()
	var s trace.Snapshot
	rt.fillSources(&s)
	lent, borrowed := rt.shared.Traffic()
	return Counters{
		Locality:      rt.here,
		TasksSpawned:  rt.sched.spawned.Load(),
		TasksExecuted: rt.sched.executed.Load(),
		TaskYields:    rt.sched.yields.Load(),
		TaskQueueLen:  rt.sched.queueLen(),
		Lanes:         rt.sched.lanes,
		CallsSent:     rt.callsSent.Load(),
		CallsServed:   rt.served.Load(),
		PendingCalls:  pending,
		BytesLent:     lent,
		BytesBorrowed: borrowed,
		Peers:         rt.port.Counters(),
		AGAS:          s.AGAS,
		Arrays:        s.Arrays,
	}
}
