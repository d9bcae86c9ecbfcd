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
// taking one touches one slot, without hashing or a lock (a slot is an
// atomic pointer: put fills an empty one, take empties the one holding
// its call); only a call still pending when the ids come round again goes
// to the map, under mu.
type pendingTable struct {
	mu   sync.Mutex
	ring [pendingRing]atomic.Pointer[pendingCall]
	more map[uint64]*pendingCall // calls whose ring slot was taken; guarded by mu
	n    atomic.Int64            // calls held
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
	t.n.Add(1)
	if t.ring[id%pendingRing].CompareAndSwap(nil, pc) {
		return
	}
	t.mu.Lock()
	if t.more == nil {
		t.more = make(map[uint64]*pendingCall)
	}
	t.more[id] = pc
	t.mu.Unlock()
}

// find returns the call held under id, or nil.
func (t *pendingTable) find(id uint64) *pendingCall {
	if pc := t.ring[id%pendingRing].Load(); pc != nil && pc.id == id {
		return pc
	}
	t.mu.Lock()
	pc := t.more[id]
	t.mu.Unlock()
	return pc
}

// take removes and returns the call held under id, or nil.
func (t *pendingTable) take(id uint64) *pendingCall {
	s := &t.ring[id%pendingRing]
	pc := s.Load()
	if pc == nil || pc.id != id || !s.CompareAndSwap(pc, nil) {
		t.mu.Lock()
		if pc = t.more[id]; pc != nil {
			delete(t.more, id)
		}
		t.mu.Unlock()
		if pc == nil {
			return nil
		}
	}
	t.n.Add(-1)
	if len(pc.bufs) > 0 {
		t.bufs.Add(-1)
	}
	return pc
}

// len returns how many calls are held.
func (t *pendingTable) len() int { return int(t.n.Load()) }

// drain removes and returns every call held.
func (t *pendingTable) drain() []*pendingCall {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []*pendingCall
	for i := range t.ring {
		if pc := t.ring[i].Swap(nil); pc != nil {
			out = append(out, pc)
		}
	}
	for _, pc := range t.more {
		out = append(out, pc)
	}
	t.more = nil
	var bufs int64
	for _, pc := range out {
		if len(pc.bufs) > 0 {
			bufs++
		}
	}
	t.n.Add(-int64(len(out)))
	t.bufs.Add(-bufs)
	return out
}
