//go:build ucx

package parcel

import (
	"context"
	"net"
	"testing"
	"time"
)

// A blocking UCX port wakes up for every message. Over UCX's tcp transport
// a wake-up that came between arming the worker and waiting used to be
// lost, and the round trip waited for the next, unrelated, event (up to a
// heartbeat or for ever). Many round trips, each with a bound far above
// any round trip of a loaded machine, catch such a stall; the spins vary
// where the reply falls against the arm.

// ucxEcho hands what it receives to in; Buffer gives no memory.
type ucxEcho struct{ in chan *Parcel }

func (e *ucxEcho) Buffer(*Header, int, int) []byte { return nil }
func (e *ucxEcho) Receive(p *Parcel)               { e.in <- p }
func (e *ucxEcho) PeerDown(uint32, error)          {}

func TestUCXBlockingRoundTripsDoNotStall(t *testing.T) {
	const (
		trips = 3000
		bound = 500 * time.Millisecond
	)
	for _, tls := range []string{"tcp", "sm,self"} {
		for _, spin := range []time.Duration{0, 20 * time.Microsecond, ucxSpin} {
			t.Run(tls+"/spin="+spin.String(), func(t *testing.T) {
				t.Setenv("UCX_TLS", tls)
				echo, back := &ucxEcho{make(chan *Parcel, 1)}, &ucxEcho{make(chan *Parcel, 1)}
				open := func(id uint32, h Handler) *UCX {
					ln, err := net.Listen("tcp", "127.0.0.1:0")
					if err != nil {
						t.Fatal(err)
					}
					u, err := newUCX(UCXConfig{PortConfig: PortConfig{Locality: id, Listener: ln, Secret: []byte("tessera-ucx-wake-up-test-secret!"), Handler: h}}, spin)
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { u.Close() })
					return u
				}
				u0, u1 := open(0, echo), open(1, back)
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				if err := u1.Connect(ctx, 0, u0.Addr()); err != nil {
					t.Fatal(err)
				}
				go func() {
					for {
						select {
						case p := <-echo.in:
							r := &Parcel{Header: Header{Kind: KindReply, Dest: 1, Action: "echo"}, Chunks: p.Chunks}
							if u0.Send(ctx, r) != nil {
								return
							}
						case <-ctx.Done():
							return
						}
					}
				}()
				var worst time.Duration
				for i := range trips {
					payload := make([]byte, 64)
					payload[0], payload[1] = byte(i), byte(i>>8)
					t0 := time.Now()
					if err := u1.Send(ctx, &Parcel{Header: Header{Kind: KindCall, Dest: 0, Action: "echo"}, Chunks: [][]byte{payload}}); err != nil {
						t.Fatalf("round trip %d: send from locality 1 to 0: %v", i, err)
					}
					select {
					case p := <-back.in:
						if len(p.Chunks) != 1 || len(p.Chunks[0]) != 64 || p.Chunks[0][0] != byte(i) || p.Chunks[0][1] != byte(i>>8) {
							t.Fatalf("round trip %d: locality 1 got back %d chunks, want its own 64 bytes", i, len(p.Chunks))
						}
					case <-time.After(bound):
						t.Fatalf("round trip %d: no reply at locality 1 from locality 0 within %v (UCX_TLS=%s, spin %v): a wake-up was lost", i, bound, tls, spin)
					}
					worst = max(worst, time.Since(t0))
				}
				t.Logf("%d round trips, the slowest %v", trips, worst)
			})
		}
	}
}
