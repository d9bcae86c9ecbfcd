//go:build linux

package parcel

import (
	"context"
	"net"
	"testing"
	"time"
)

// Benchmarks of the shared-memory port against TCP between two ports of
// one process (the rings and futexes work as between processes: each port
// maps the segment itself), blocking and polling:
//
//	go test -run '^$' -bench 'BenchmarkSHMvsTCP' -benchtime 2s ./parcel/
//
// Open MPI's counterparts, for the same machine, are bench/mpi/pingpong.c
// and bench/mpi/stream.c (mpirun -n 2 --mca btl self,vader).

type benchPortKind struct {
	name string
	open func(b *testing.B, id uint32, h Handler, poll time.Duration) Parcelport
}

var benchPortKinds = []benchPortKind{
	{"tcp", func(b *testing.B, id uint32, h Handler, poll time.Duration) Parcelport {
		p, err := NewTCP(TCPConfig{PortConfig: benchPortConfig(b, id, h), PollFor: poll})
		if err != nil {
			b.Fatal(err)
		}
		return p
	}},
	{"shm", func(b *testing.B, id uint32, h Handler, poll time.Duration) Parcelport {
		p, err := NewSHM(SHMConfig{TCPConfig: TCPConfig{PortConfig: benchPortConfig(b, id, h), PollFor: poll}})
		if err != nil {
			b.Fatal(err)
		}
		return p
	}},
}

func benchPortConfig(b *testing.B, id uint32, h Handler) PortConfig {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	return PortConfig{Locality: id, Listener: ln, Secret: testSecret, Handler: h, Logger: testLogger(b)}
}

// benchPair starts two ports of kind k, 1 connected to 0, with handlers
// h0 and h1, closed when the benchmark ends.
func benchPair(b *testing.B, k benchPortKind, poll time.Duration, h0, h1 Handler) [2]Parcelport {
	ports := [2]Parcelport{k.open(b, 0, h0, poll), k.open(b, 1, h1, poll)}
	b.Cleanup(func() { closeAll(b, ports[:]) })
	if err := ports[1].Connect(context.Background(), 0, ports[0].Addr()); err != nil {
		b.Fatal(err)
	}
	if s, ok := ports[0].(*SHM); ok {
		for !s.SharedMemory(1) || !ports[1].(*SHM).SharedMemory(0) {
			time.Sleep(time.Millisecond)
		}
	}
	return ports
}

var benchModes = []struct {
	name string
	poll time.Duration
}{{"block", 0}, {"poll", time.Millisecond}}

// replyHandler answers every call from its reader, as a direct action
// does, through port.
type replyHandler struct {
	port  func() Parcelport
	reply *Parcel
}

func (h *replyHandler) Buffer(*Header, int, int) []byte { return nil }
func (h *replyHandler) PeerDown(uint32, error)          {}
func (h *replyHandler) Receive(p *Parcel) {
	h.port().Send(context.Background(), h.reply)
}

// BenchmarkSHMvsTCPRoundTrip64: a call with a 64-byte chunk, answered by
// the callee's reader with 64 bytes, one at a time.
func BenchmarkSHMvsTCPRoundTrip64(b *testing.B) {
	for _, k := range benchPortKinds {
		for _, m := range benchModes {
			b.Run(k.name+"/"+m.name, func(b *testing.B) {
				var ports [2]Parcelport
				echo := &replyHandler{port: func() Parcelport { return ports[0] },
					reply: &Parcel{Header: Header{Kind: KindReply, Dest: 1}, Chunks: [][]byte{make([]byte, 64)}}}
				back := &echoHandler{in: make(chan *Parcel, 1)}
				ports = benchPair(b, k, m.poll, echo, back)
				call := &Parcel{Header: Header{Kind: KindCall, Dest: 0, Action: "echo"}, Chunks: [][]byte{make([]byte, 64)}}
				ctx := context.Background()
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if err := ports[1].Send(ctx, call); err != nil {
						b.Fatal(err)
					}
					<-back.in
				}
			})
		}
	}
}

// sinkHandler reads every chunk into dst and counts parcels.
type sinkHandler struct {
	dst  []byte
	done chan struct{}
}

func (h *sinkHandler) Buffer(_ *Header, _ int, n int) []byte {
	if n == len(h.dst) {
		return h.dst
	}
	return nil
}
func (h *sinkHandler) PeerDown(uint32, error) {}
func (h *sinkHandler) Receive(p *Parcel)      { h.done <- struct{}{} }

// BenchmarkSHMvsTCPStream8MiB: parcels of one 8 MiB chunk, sent one after
// another, read into the receiver's memory.
func BenchmarkSHMvsTCPStream8MiB(b *testing.B) {
	const size = 8 << 20
	for _, k := range benchPortKinds {
		for _, m := range benchModes {
			b.Run(k.name+"/"+m.name, func(b *testing.B) {
				sink := &sinkHandler{dst: make([]byte, size), done: make(chan struct{}, 1024)}
				ports := benchPair(b, k, m.poll, sink, &echoHandler{in: make(chan *Parcel, 1)})
				p := &Parcel{Header: Header{Kind: KindCall, Dest: 0, Action: "stream"}, Chunks: [][]byte{make([]byte, size)}}
				ctx := context.Background()
				b.SetBytes(size)
				b.ResetTimer()
				go func() {
					for i := 0; i < b.N; i++ {
						if err := ports[1].Send(ctx, p); err != nil {
							b.Error(err)
							return
						}
					}
				}()
				for i := 0; i < b.N; i++ {
					<-sink.done
				}
			})
		}
	}
}
