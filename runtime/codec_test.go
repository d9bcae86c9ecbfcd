package runtime

import (
	"math"
	"reflect"
	"strings"
	"testing"
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
