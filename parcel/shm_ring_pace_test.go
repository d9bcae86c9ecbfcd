package parcel

import (
	"sync/atomic"
	"testing"
	"time"
)

// A ring reader's yields come further apart while they come back at once,
// and as often as at first again after one that gave the core away.
func TestYieldPaceAdapts(t *testing.T) {
	yields := func(y *yieldPace, looks int) int {
		n := 0
		for i := 1; i <= looks; i++ {
			if y.due(i) {
				n++
			}
		}
		return n
	}
	var fixed *yieldPace // no pace: every ringYieldEvery looks
	if got, want := yields(fixed, 1024), 1024/ringYieldEvery; got != want {
		t.Fatalf("without a pace: %d yields in 1024 looks, want %d", got, want)
	}
	y := new(yieldPace)
	if got, want := yields(y, 1024), 1024/ringYieldEvery; got != want {
		t.Fatalf("a new pace: %d yields in 1024 looks, want %d", got, want)
	}
	for range 16 {
		y.took(time.Microsecond) // quick: nobody else wanted the core
	}
	if y.every != ringYieldEveryMax {
		t.Fatalf("after 16 quick yields the pace is every %d looks, want %d", y.every, ringYieldEveryMax)
	}
	if got, want := yields(y, 1024), 1024/ringYieldEveryMax; got != want {
		t.Fatalf("a slowed pace: %d yields in 1024 looks, want %d", got, want)
	}
	y.took(ringYieldGave) // the core went to another thread
	if got, want := yields(y, 1024), 1024/ringYieldEvery; got != want {
		t.Fatalf("after a yield that gave the core away: %d yields in 1024 looks, want %d", got, want)
	}
	y.took(0)
	if y.every != 2*ringYieldEvery {
		t.Fatalf("one quick yield after a reset: every %d looks, want %d", y.every, 2*ringYieldEvery)
	}

	// The progress loop's pace yields after every look at first.
	loop := &yieldPace{least: 1}
	if got := yields(loop, 100); got != 100 {
		t.Fatalf("the loop's new pace: %d yields in 100 looks, want 100", got)
	}
	for range 16 {
		loop.took(0)
	}
	if got, want := yields(loop, 1024), 1024/ringYieldEveryMax; got != want {
		t.Fatalf("the loop's slowed pace: %d yields in 1024 looks, want %d", got, want)
	}
	loop.took(time.Millisecond)
	if got := yields(loop, 100); got != 100 {
		t.Fatalf("the loop's pace after a yield that gave the core away: %d yields in 100 looks, want 100", got)
	}
}

// A polling reader's pace slows down further while its yields come back
// at once (ringPollYieldEveryMax), and comes back to every
// ringYieldEvery looks after a yield that gave the core away.
func TestPollingYieldPace(t *testing.T) {
	y := new(yieldPace)
	w := ringWait{spin: time.Nanosecond, poll: true, pace: y}
	w.wait(new(atomic.Uint32), new(atomic.Uint32), func() bool { return true }, func() bool { return false })
	if y.most != 0 {
		t.Fatalf("a wait that found its ring ready at once set the pace's ceiling to %d", y.most)
	}
	looks := 0
	w.wait(new(atomic.Uint32), new(atomic.Uint32), func() bool { looks++; return looks > 2 }, func() bool { return false })
	if y.most != ringPollYieldEveryMax {
		t.Fatalf("a polling wait left the pace's ceiling at %d, want %d", y.most, ringPollYieldEveryMax)
	}
	for range 32 {
		y.took(0)
	}
	if y.every != ringPollYieldEveryMax {
		t.Fatalf("after 32 quick yields a polling reader yields every %d looks, want %d", y.every, ringPollYieldEveryMax)
	}
	y.took(ringYieldGave)
	if !y.due(ringYieldEvery - 1) {
		t.Fatalf("after a yield that gave the core away a polling reader does not yield after %d looks", ringYieldEvery)
	}
}
