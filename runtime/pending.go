package runtime

import "sync"

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
}

// put holds pc under id.
func (t *pendingTable) put(id uint64, pc *pendingCall) {
	pc.id = id
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
	if s := &t.ring[id%pendingRing]; *s != nil && (*s).id == id {
		pc := *s
		*s = nil
		t.n--
		return pc
	}
	pc := t.more[id]
	if pc != nil {
		delete(t.more, id)
		t.n--
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
	return out
}
