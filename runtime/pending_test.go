package runtime

import "testing"

func TestPendingTableRingAndOverflow(t *testing.T) {
	var tab pendingTable
	calls := make([]pendingCall, 3*pendingRing)
	// Ids 1 .. 3*pendingRing: each slot of the ring is wanted three times,
	// so two of every three calls go to the overflow map.
	for i := range calls {
		tab.put(uint64(i+1), &calls[i])
	}
	if n := tab.len(); n != len(calls) {
		t.Fatalf("len = %d, want %d", n, len(calls))
	}
	if len(tab.more) != 2*pendingRing {
		t.Fatalf("%d calls in the overflow map, want %d", len(tab.more), 2*pendingRing)
	}
	for i := range calls {
		id := uint64(i + 1)
		if pc := tab.find(id); pc != &calls[i] {
			t.Fatalf("find(%d) = %p, want %p", id, pc, &calls[i])
		}
	}
	// Take every other call; the rest stay findable, the taken ones are gone.
	for i := 0; i < len(calls); i += 2 {
		id := uint64(i + 1)
		if pc := tab.take(id); pc != &calls[i] {
			t.Fatalf("take(%d) = %p, want %p", id, pc, &calls[i])
		}
		if pc := tab.take(id); pc != nil {
			t.Fatalf("second take(%d) = %p, want nil", id, pc)
		}
	}
	for i := 1; i < len(calls); i += 2 {
		if pc := tab.find(uint64(i + 1)); pc != &calls[i] {
			t.Fatalf("find(%d) after takes = %p, want %p", i+1, pc, &calls[i])
		}
	}
	if pc := tab.find(uint64(len(calls) + 1)); pc != nil {
		t.Fatalf("find of an id never put = %p", pc)
	}
	// A slot freed by a take is used again by the next id that maps to it.
	next := uint64(len(calls) + 1)
	var c pendingCall
	tab.put(next, &c)
	if tab.ring[next%pendingRing].Load() != &c && tab.more[next] != &c {
		t.Fatal("the call put last is neither in the ring nor in the map")
	}
	left := tab.drain()
	if want := len(calls)/2 + 1; len(left) != want || tab.len() != 0 {
		t.Fatalf("drain returned %d calls and left %d, want %d and 0", len(left), tab.len(), want)
	}
	if pc := tab.find(next); pc != nil {
		t.Fatal("a call is findable after drain")
	}
}

func TestPendingTableCountsCallsWithBuffers(t *testing.T) {
	var tab pendingTable
	with := &pendingCall{bufs: [][]byte{make([]byte, 8)}}
	without := &pendingCall{}
	tab.put(1, with)
	tab.put(2, without)
	tab.put(1+pendingRing, &pendingCall{bufs: [][]byte{nil}}) // to the map
	if n := tab.bufs.Load(); n != 2 {
		t.Fatalf("bufs = %d with two calls that have buffers, want 2", n)
	}
	tab.take(1)
	tab.take(2)
	if n := tab.bufs.Load(); n != 1 {
		t.Fatalf("bufs = %d after taking one, want 1", n)
	}
	tab.take(1 + pendingRing)
	if n := tab.bufs.Load(); n != 0 {
		t.Fatalf("bufs = %d after taking all, want 0", n)
	}
	tab.put(3, with)
	tab.drain()
	if n := tab.bufs.Load(); n != 0 {
		t.Fatalf("bufs = %d after drain, want 0", n)
	}
}
