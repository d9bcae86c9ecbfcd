//go:build ucx

package parcel_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/tessera-amt/tessera/parcel"
)

// The UCX port against the TCP port, two ports in one process: a 64-byte
// call and its reply one at a time, and a stream of 8 MiB parcels read
// into memory the handler provides.
//
//	go test -tags ucx -run '^$' -bench 'UCX' -benchtime 2s ./parcel/

type benchPort struct {
	name string
	tls  string // UCX_TLS; "" for the TCP port
	poll bool   // poll (a PollFor of a second)
}

var benchPorts = []benchPort{{"tcp-port", "", false}, {"ucx-tcp", "tcp", false}, {"ucx-sm", "sm,self", false},
	{"tcp-port-poll", "", true}, {"ucx-tcp-poll", "tcp", true}, {"ucx-sm-poll", "sm,self", true}}

func openBenchPair(b *testing.B, bp benchPort, h0, h1 parcel.Handler) (p0, p1 parcel.Parcelport) {
	b.Helper()
	if bp.tls != "" {
		b.Setenv("UCX_TLS", bp.tls)
	}
	open := func(id uint32, h parcel.Handler) parcel.Parcelport {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		cfg := parcel.PortConfig{Locality: id, Listener: ln, Secret: []byte("tessera-benchmark-job-secret-32b"), Handler: h}
		var p parcel.Parcelport
		var poll time.Duration
		if bp.poll {
			poll = time.Second
		}
		if bp.tls == "" {
			p, err = parcel.NewTCP(parcel.TCPConfig{PortConfig: cfg, PollFor: poll})
		} else {
			p, err = parcel.NewUCX(parcel.UCXConfig{PortConfig: cfg, PollFor: poll})
		}
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { p.Close() })
		return p
	}
	p0, p1 = open(0, h0), open(1, h1)
	if err := p1.Connect(context.Background(), 0, p0.Addr()); err != nil {
		b.Fatal(err)
	}
	return p0, p1
}

// benchHandler hands every parcel to in, its chunk 0 read into dst when
// dst has its length.
type benchHandler struct {
	in  chan *parcel.Parcel
	dst []byte
}

func (h *benchHandler) Buffer(_ *parcel.Header, i, n int) []byte {
	if i == 0 && n == len(h.dst) {
		return h.dst
	}
	return nil
}
func (h *benchHandler) Receive(p *parcel.Parcel) { h.in <- p }
func (h *benchHandler) PeerDown(uint32, error)   {}

func BenchmarkUCXRoundTrip64B(b *testing.B) {
	for _, bp := range benchPorts {
		b.Run(bp.name, func(b *testing.B) {
			echo := &benchHandler{in: make(chan *parcel.Parcel, 1)}
			back := &benchHandler{in: make(chan *parcel.Parcel, 1)}
			p0, p1 := openBenchPair(b, bp, echo, back)
			ctx := context.Background()
			done := make(chan struct{})
			defer close(done)
			go func() {
				reply := &parcel.Parcel{Header: parcel.Header{Kind: parcel.KindReply, Dest: 1}, Chunks: [][]byte{make([]byte, 64)}}
				for {
					select {
					case <-echo.in:
					case <-done:
						return
					}
					if p0.Send(ctx, reply) != nil {
						return
					}
				}
			}()
			call := &parcel.Parcel{Header: parcel.Header{Kind: parcel.KindCall, Dest: 0, Action: "echo"}, Chunks: [][]byte{make([]byte, 64)}}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := p1.Send(ctx, call); err != nil {
					b.Fatal(err)
				}
				<-back.in
			}
		})
	}
}

func BenchmarkUCXStream8MiB(b *testing.B) {
	const size = 8 << 20
	for _, bp := range benchPorts {
		b.Run(bp.name, func(b *testing.B) {
			sink := &benchHandler{in: make(chan *parcel.Parcel, 1024), dst: make([]byte, size)}
			_, p1 := openBenchPair(b, bp, sink, &benchHandler{in: make(chan *parcel.Parcel, 1)})
			ctx := context.Background()
			p := &parcel.Parcel{Header: parcel.Header{Kind: parcel.KindCall, Dest: 0, Action: "tile"}, Chunks: [][]byte{make([]byte, size)}}
			got := make(chan int)
			go func() {
				n := 0
				for range b.N {
					if q := <-sink.in; len(q.Chunks) == 1 && len(q.Chunks[0]) == size {
						n++
					}
				}
				got <- n
			}()
			b.SetBytes(size)
			b.ResetTimer()
			for range b.N {
				if err := p1.Send(ctx, p); err != nil {
					b.Fatal(err)
				}
			}
			if n := <-got; n != b.N {
				b.Fatalf("%d of %d parcels arrived whole", n, b.N)
			}
		})
	}
}
