//go:build linux

package parcel

import (
	goruntime "runtime"
	"testing"
)

// BenchmarkRingPingPong: a frame of 116 bytes (a 64-byte call's) written
// into one ring of a segment and echoed back through the other, one at a
// time, by two goroutines that spin on the rings as a polling reader does
// (pending, readable, get): the rings' own round trip, the transfers of
// cache lines between the writer's core and the reader's, without the
// port, the decoder or the runtime. Run it with -cpu 2, on a machine
// whose cores are otherwise idle.
func BenchmarkRingPingPong(b *testing.B) {
	if goruntime.GOMAXPROCS(0) < 2 {
		b.Skip("needs two processors: run with -cpu 2")
	}
	seg, err := newRingSegment(DefaultRingBytes, make([]byte, ringTokenLen))
	if err != nil {
		b.Fatal(err)
	}
	defer seg.close()
	// Each side has its own view of the rings: the writer's end of one,
	// the reader's of the other, as two processes would.
	ends := func() (out, in *ring) {
		o, i := seg.rings[0], seg.rings[1]
		return &o, &i
	}
	aOut, aIn := ends()
	bIn, bOut := ends()
	const size = 116
	send := func(r *ring, msg []byte) {
		for len(msg) > 0 {
			free, err := r.writable()
			if err != nil {
				panic(err)
			}
			msg = msg[r.put(msg, free):]
		}
		r.publish()
	}
	recv := func(r *ring, buf []byte) {
		for got := 0; got < len(buf); {
			for !r.pending() {
			}
			avail, err := r.readable()
			if err != nil {
				panic(err)
			}
			got += r.get(buf[got:], avail)
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, size)
		for range b.N {
			recv(bIn, buf)
			send(bOut, buf)
		}
	}()
	msg := make([]byte, size)
	for i := range msg {
		msg[i] = byte(i)
	}
	buf := make([]byte, size)
	b.ResetTimer()
	for range b.N {
		send(aOut, msg)
		recv(aIn, buf)
	}
	b.StopTimer()
	<-done
	if string(buf) != string(msg) {
		b.Fatalf("the echo came back as %v, want %v", buf, msg)
	}
}
