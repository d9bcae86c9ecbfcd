package runtime

import (
	"bytes"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/tinylib/msgp/msgp"
)

type (
	namedID    uint64
	namedName  string
	namedSmall int8
)

func roundTrip[T any](t *testing.T, v T) {
	t.Helper()
	c, err := codecFor[T]()
	if err != nil {
		t.Fatalf("codecFor[%T]: %v", v, err)
	}
	b, chunks, err := c.encode(v, nil, nil)
	if err != nil {
		t.Fatalf("encode %v: %v", v, err)
	}
	got, err := c.decode(b, chunks)
	if err != nil || !reflect.DeepEqual(got, v) {
		t.Fatalf("round trip of %#v: got %#v, %v", v, got, err)
	}
}

func TestCodecRoundTrips(t *testing.T) {
	roundTrip(t, 42)
	roundTrip(t, "tessera")
	roundTrip(t, uint64(math.MaxUint64))
	roundTrip(t, -1.5)
	roundTrip(t, true)
	roundTrip(t, struct{}{})
	roundTrip(t, []float64{1, 2, 3})
	roundTrip(t, []byte("raw"))
	roundTrip(t, namedID(1<<63+5))
	roundTrip(t, namedName("/base/3"))
	roundTrip(t, namedSmall(-7))
	roundTrip(t, int8(-128))
	roundTrip(t, int16(-30000))
	roundTrip(t, int32(math.MinInt32))
	roundTrip(t, int64(math.MaxInt64))
	roundTrip(t, uint(7))
	roundTrip(t, uint8(255))
	roundTrip(t, uint16(65535))
	roundTrip(t, uint32(math.MaxUint32))
	roundTrip(t, float32(0.25))
}

// TestCodecBasicEncodingIsMsgp checks that basic values go out exactly as
// msgp encodes them (what a peer's msgp reader expects).
func TestCodecBasicEncodingIsMsgp(t *testing.T) {
	for _, v := range []any{"s", true, -3, int8(-3), int16(300), int32(-70000), int64(1 << 40), uint(3), uint8(200),
		uint16(60000), uint32(1 << 31), uint64(1 << 63), float32(1.5), 2.5} {
		want, err := msgp.AppendIntf(nil, v)
		if err != nil {
			t.Fatal(err)
		}
		if got := encodeBasic(nil, v); !bytes.Equal(got, want) {
			t.Errorf("%T %v encodes as %x, msgp as %x", v, v, got, want)
		}
	}
}

// TestCodecAllocations: choosing a codec allocates nothing (layers above
// choose one per message, NewCodec), nor does a basic value's round trip
// into a buffer with room.
func TestCodecAllocations(t *testing.T) {
	buf := make([]byte, 0, 64)
	if n := testing.AllocsPerRun(100, func() {
		c, _ := NewCodec[int64]()
		b, chunks, _ := c.Encode(1<<40, buf[:0])
		if v, err := c.Decode(b, chunks); err != nil || v != 1<<40 {
			t.Fatalf("round trip: %v, %v", v, err)
		}
	}); n != 0 {
		t.Errorf("choosing an int64 codec and a round trip allocate %v times, want 0", n)
	}
}

func TestCodecRefusals(t *testing.T) {
	if _, err := codecFor[map[string]int](); err == nil || !strings.Contains(err.Error(), "cannot travel") {
		t.Errorf("map codec: %v", err)
	}
	c, _ := codecFor[namedSmall]()
	big, _, _ := mustCodec[int64](t).encode(300, nil, nil)
	if _, err := c.decode(big, nil); err == nil {
		t.Errorf("300 decoded into an int8 without error")
	}
}

func mustCodec[T any](t *testing.T) codec[T] {
	c, err := codecFor[T]()
	if err != nil {
		t.Fatal(err)
	}
	return c
}
