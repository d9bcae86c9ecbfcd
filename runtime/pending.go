package runtime

import (
	"sync"
	"sync/atomic"
)

// pendingRing is how many calls in flight the pending table holds in its
// ring; a call whose slot is taken (by a call sent pendingRing requests
// earlier and not answered yet) goes to its overflow map.
const pendingRing = 256

// pendingTable holds the calls this locality sent whose replies have not
// come, by request id. Request ids are handed out in sequence, so the
// call with id i sits in ring slot i mod pendingRing: putting, finding and
// taking one touches one slot, without hashing; only a call still pending
// when the ids come round again goes to the map.
type pendingTable struct {
	mu   sync.Mutex
	ring [pendingRing]*pendingCall
	more map[uint64]*pendingCall // calls whose ring slot was taken
	n    int                     // calls held
	// bufs counts the calls held that read their reply into the caller's
	// memory (AsyncInto): while it is 0, a reply's chunks need no look-up.
	bufs atomic.Int64
}

// put holds pc under id.
func (t *pendingTable) put(id uint64, pc *pendingCall) {
	pc.id = id
	if len(pc.bufs) > 0 {
		t.bufs.Add(1)
	}
	t.mu.Lock()
	if s := &t.ring[id%pendingRing]; *s == nil {
		*s = pc
	} else {
		if t.more == nil {
			t.more = make(map[uint64]*pendingCall)
		}
		t.more[id] = pc
	}
	t.n++
	t.mu.Unlock()
}

// find returns the call held under id, or nil.
func (t *pendingTable) find(id uint64) *pendingCall {
	t.mu.Lock()
	pc := t.findLocked(id)
	t.mu.Unlock()
	return pc
}

func (t *pendingTable) findLocked(id uint64) *pendingCall {
	if pc := t.ring[id%pendingRing]; pc != nil && pc.id == id {
		return pc
	}
	return t.more[id]
}

// take removes and returns the call held under id, or nil.
func (t *pendingTable) take(id uint64) *pendingCall {
	t.mu.Lock()
	defer t.mu.Unlock()
	pc := t.ring[id%pendingRing]
	if pc != nil && pc.id == id {
		t.ring[id%pendingRing] = nil
	} else if pc = t.more[id]; pc != nil {
		delete(t.more, id)
	} else {
		return nil
	}
	t.n--
	if len(pc.bufs) > 0 {
		t.bufs.Add(-1)
	}
	return pc
}

// len returns how many calls are held.
func (t *pendingTable) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n
}

// drain removes and returns every call held.
func (t *pendingTable) drain() []*pendingCall {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]*pendingCall, 0, t.n)
	for i, pc := range t.ring {
		if pc != nil {
			out = append(out, pc)
			t.ring[i] = nil
		}
	}
	for _, pc := range t.more {
		out = append(out, pc)
	}
	t.more, t.n = nil, 0
	t.bufs.Store(0)
	return out
}
