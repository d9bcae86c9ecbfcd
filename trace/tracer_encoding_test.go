package trace

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"
)

// The tracer encodes its events in place (laneLog.enter, leave and
// metric); the archive writer appends them (OTF2EventWriter). For the same events they
// must write the same bytes: chunk breaks, TIMESTAMP records only when the
// time moves on, compressed integers of every length, FF for the maximum.
func TestLaneLogEncodesLikeTheEventWriter(t *testing.T) {
	const chunk = 512 // small: many chunk breaks
	var got, want bytes.Buffer
	var l laneLog
	l.init(1, "lane", "lane.evt", nil, chunk, func(b []byte) error { got.Write(b); return nil })
	e := &OTF2EventWriter{id: 1, path: "ref.evt", chunkSize: chunk}
	e.cw = newChunkWriter(func(b []byte) error { want.Write(b); return nil }, chunk, true)

	u64s := []uint64{0, 1, 0xff, 0x100, 0xffff, 0x10000, 1<<44 | 5, 0xfffff<<44 | 0xfffffffffff, math.MaxUint64 - 1, math.MaxUint64}
	u32s := []uint32{0, 1, 0xff, 0x100, 0xffff, 1 << 24, math.MaxUint32 - 1, math.MaxUint32}
	r := rand.New(rand.NewPCG(1, 2))
	now := uint64(1_700_000_000_000_000_000)
	for i := range 2000 {
		guid, parent := u64s[r.IntN(len(u64s))], u64s[r.IntN(len(u64s))]
		region := u32s[i%len(u32s)]
		if r.IntN(3) > 0 { // else the same time as the last event
			now += uint64(r.IntN(1 << 20))
		}
		l.enter(now, region, guid, parent)
		if err := e.Enter(now, region, U64Attr(attrGUIDRef, guid), U64Attr(attrParentRef, parent)); err != nil {
			t.Fatal(err)
		}
		if r.IntN(2) > 0 {
			now++
		}
		l.leave(now, region)
		if err := e.Leave(now, region); err != nil {
			t.Fatal(err)
		}
		if r.IntN(4) == 0 { // a sample's value
			v := U64Metric(u64s[r.IntN(len(u64s))])
			if r.IntN(2) == 0 {
				v = DoubleMetric(r.Float64() * 100)
			}
			l.metric(now, region, v)
			if err := e.Metric(now, region, v); err != nil {
				t.Fatal(err)
			}
		}
	}
	got.Write(l.cw.finish())
	want.Write(e.cw.finish())
	if l.err != nil {
		t.Fatal(l.err)
	}
	if l.events != e.events || l.last != e.lastTime {
		t.Errorf("lane log: %d events, last at %d; event writer: %d, last at %d", l.events, l.last, e.events, e.lastTime)
	}
	if got.Len() <= 4*chunk {
		t.Fatalf("%d bytes: want several chunks", got.Len())
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		n := 0
		for n < min(got.Len(), want.Len()) && got.Bytes()[n] == want.Bytes()[n] {
			n++
		}
		t.Fatalf("the lane log's %d bytes differ from the event writer's %d at offset %d", got.Len(), want.Len(), n)
	}
}

// An event whose time is before the last one's takes the last one's: the
// times of a location never go back, and no TIMESTAMP record is written.
func TestLaneLogKeepsTimeOrder(t *testing.T) {
	var l laneLog
	l.init(1, "lane", "lane.evt", nil, OTF2MinChunkSize, func([]byte) error { return nil })
	l.enter(100, 0, 1, 0)
	before := len(l.cw.cur)
	l.leave(90, 0)
	if l.last != 100 {
		t.Errorf("last time %d after an event at 90, want 100", l.last)
	}
	if n := len(l.cw.cur) - before; n != leaveRecordLen(0) {
		t.Errorf("a Leave without a new time took %d bytes, want %d (no TIMESTAMP)", n, leaveRecordLen(0))
	}
	l.enter(150, 0, 2, 0)
	if l.last != 150 || l.first != 100 || l.events != 3 {
		t.Errorf("first %d, last %d, %d events; want 100, 150, 3", l.first, l.last, l.events)
	}
}

// leaveRecordLen is the length of a LEAVE record of region.
func leaveRecordLen(region uint32) int { return len(appendU32c([]byte{otf2EvtLeave}, region)) }
