package parcel

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// Boundaries of msgpack's encodings: each value is the largest or the
// smallest of one encoding.
var (
	uintEdges = []uint64{0, 1, 127, 128, 255, 256, math.MaxUint16, math.MaxUint16 + 1, math.MaxUint32, math.MaxUint32 + 1, math.MaxUint64}
	lenEdges  = []int{0, 1, 31, 32, 255, 256, math.MaxUint16, math.MaxUint16 + 1}
)

// randomHeader returns a header whose every field is one of the boundary
// values, chosen by r, and chunks whose count and lengths are too.
func randomHeader(r *rand.Rand) (Header, [][]byte) {
	pick := func(vs []uint64, limit uint64) uint64 {
		for {
			if v := vs[r.IntN(len(vs))]; v <= limit {
				return v
			}
		}
	}
	text := func() string { return strings.Repeat("a", lenEdges[r.IntN(len(lenEdges))]) }
	bin := func() []byte {
		for {
			if n := lenEdges[r.IntN(len(lenEdges))]; n <= MaxArgs {
				return bytes.Repeat([]byte{7}, n)
			}
		}
	}
	h := Header{
		Kind:    Kind(1 + r.IntN(int(KindHeartbeat))),
		Source:  uint32(pick(uintEdges, math.MaxUint32)),
		Dest:    uint32(pick(uintEdges, math.MaxUint32)),
		Action:  text(),
		Request: pick(uintEdges, math.MaxUint64),
		Parent:  pick(uintEdges, math.MaxUint64),
		Code:    Code(pick(uintEdges, math.MaxUint8)),
		Error:   text(),
		Args:    bin(),
		Trace:   bin(),
	}
	chunks := make([][]byte, []int{0, 1, 2, 15, 16, 300}[r.IntN(6)])
	for i := range chunks {
		chunks[i] = make([]byte, []int{0, 1, 127, 128, 256, 70000}[r.IntN(6)])
	}
	return h, chunks
}

// sameDecoded is sameHeader, Trace included.
func sameDecoded(a, b *Header) bool { return sameHeader(a, b) && bytes.Equal(a.Trace, b.Trace) }

// TestAppendHeaderMatchesMsgp holds appendHeader to the bytes of the
// generated Header.MarshalMsg, and readHeaderFast to the header that
// DecodeHeader reads from them, over the boundaries of every encoding.
func TestAppendHeaderMatchesMsgp(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	names := &nameCache{}
	for i := range 3000 {
		h, chunks := randomHeader(r)
		want := h
		want.Version = HeaderVersion
		want.Chunks = nil
		for _, c := range chunks {
			want.Chunks = append(want.Chunks, uint64(len(c)))
		}
		wantBytes, err := want.MarshalMsg(nil)
		if err != nil {
			t.Fatal(err)
		}
		got := appendHeader([]byte{0xee}, &h, chunks)
		if got[0] != 0xee || !bytes.Equal(got[1:], wantBytes) {
			t.Fatalf("case %d: appendHeader differs from MarshalMsg for %+v with %d chunks", i, h, len(chunks))
		}
		var fast, slow Header
		if !readHeaderFast(wantBytes, &fast, names) {
			t.Fatalf("case %d: readHeaderFast refused what MarshalMsg wrote", i)
		}
		if err := DecodeHeader(wantBytes, &slow); err != nil {
			t.Fatalf("case %d: DecodeHeader: %v", i, err)
		}
		if !sameDecoded(&fast, &slow) || !sameDecoded(&fast, &want) {
			t.Fatalf("case %d: readHeaderFast read %+v, DecodeHeader %+v, written %+v", i, fast, slow, want)
		}
	}
}

// TestReadHeaderLeavesOtherFormsToMsgp: headers that msgp reads but that
// are not in appendHeader's forms, or that are malformed, decode (or fail)
// exactly as DecodeHeader says.
func TestReadHeaderLeavesOtherFormsToMsgp(t *testing.T) {
	h := Header{Version: HeaderVersion, Kind: KindCall, Source: 1, Dest: 2, Action: "tile.add", Request: 9, Args: []byte{1, 2}, Chunks: []uint64{8}}
	canon := encodeHeader(t, h)
	// Source 1 as a signed int8 (0xd0 0x01), which msgp also reads.
	at := bytes.Index(canon, []byte{byte(KindCall), 1, 2})
	wide := append(append(append([]byte(nil), canon[:at+1]...), 0xd0, 1), canon[at+2:]...)
	for name, b := range map[string][]byte{
		"wide int":     wide,
		"truncated":    canon[:len(canon)-1],
		"stray byte":   append(append([]byte(nil), canon...), 0),
		"kind 9":       bytes.Replace(canon, []byte{0x9c, HeaderVersion, byte(KindCall)}, []byte{0x9c, HeaderVersion, 9}, 1),
		"version 1":    bytes.Replace(canon, []byte{0x9c, HeaderVersion}, []byte{0x9c, 1}, 1),
		"not an array": {0xa1, 'x'},
		"empty":        nil,
	} {
		var got, want Header
		err := readHeader(b, &got, &nameCache{})
		werr := DecodeHeader(b, &want)
		switch {
		case (err == nil) != (werr == nil):
			t.Errorf("%s: readHeader: %v, DecodeHeader: %v", name, err, werr)
		case err != nil && err.Error() != werr.Error():
			t.Errorf("%s: readHeader: %v, DecodeHeader: %v", name, err, werr)
		case err == nil && !sameDecoded(&got, &want):
			t.Errorf("%s: readHeader read %+v, DecodeHeader %+v", name, got, want)
		}
	}
	var got Header
	if err := readHeader(wide, &got, nil); err != nil || got.Source != 1 {
		t.Errorf("wide int: Source %d, err %v; want 1, nil", got.Source, err)
	}
}

// TestReadHeaderReusesNames: a call naming an action the connection saw
// before costs no allocation, and a cache stops growing at its bound.
func TestReadHeaderReusesNames(t *testing.T) {
	b := encodeHeader(t, Header{Version: HeaderVersion, Kind: KindCall, Action: "bench.echo", Request: 7, Args: []byte{0x90}, Chunks: []uint64{64}})
	var names nameCache
	var args [32]byte
	var lens [2]uint64
	var h Header
	allocs := testing.AllocsPerRun(100, func() {
		h = Header{Args: args[:0], Chunks: lens[:0]}
		if err := readHeader(b, &h, &names); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 || h.Action != "bench.echo" {
		t.Errorf("%v allocations per header, action %q; want 0 and bench.echo", allocs, h.Action)
	}
	for i := range 2 * maxCachedNames {
		names.name([]byte(strings.Repeat("x", i%100) + string(rune('a'+i%26)) + itoa(uint64(i))))
	}
	if n := len(names.names); n != maxCachedNames {
		t.Errorf("cache holds %d names, want its bound %d", n, maxCachedNames)
	}
	long := []byte(strings.Repeat("y", maxCachedNameLen+1))
	if s := names.name(long); s != string(long) || len(names.names) != maxCachedNames {
		t.Error("a name longer than the bound was cached or changed")
	}
}

// FuzzReadHeader: whatever readHeaderFast accepts, DecodeHeader accepts as
// the same header.
func FuzzReadHeader(f *testing.F) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 20 {
		h, chunks := randomHeader(r)
		if len(h.Action)+len(h.Error)+len(h.Args)+len(h.Trace) > 1024 || len(chunks) > 16 {
			continue
		}
		f.Add(appendHeader(nil, &h, chunks))
	}
	f.Add(encodeHeader(f, Header{Version: HeaderVersion, Kind: KindReply, Request: 5, Code: CodeActionError, Error: "boom"}))
	f.Add([]byte{0x9c, HeaderVersion, 1, 0xd0, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		var fast, slow Header
		ok := readHeaderFast(data, &fast, &nameCache{})
		err := DecodeHeader(data, &slow)
		if ok && err != nil {
			t.Fatalf("readHeaderFast accepted what DecodeHeader refuses: %v", err)
		}
		if ok && !sameDecoded(&fast, &slow) {
			t.Fatalf("readHeaderFast read %+v, DecodeHeader %+v", fast, slow)
		}
	})
}
