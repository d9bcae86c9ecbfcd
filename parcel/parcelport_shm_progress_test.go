//go:build linux

package parcel

import (
	"context"
	"encoding/binary"
	"net"
	"testing"
	"time"
)

// TestSHMProgressLoop: three localities of this machine, so that each port
// has two ring readers, which wait in the port's progress loop (polling)
// or asleep on their doorbells (blocking here, with more localities than
// cores, or after the loop's window): bursts of parcels with pauses longer
// than the window between them all arrive, in order per sender, and the
// readers did sleep (doorbells were rung) without sleeping through one.
func TestSHMProgressLoop(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  SHMConfig
	}{
		{"poll", SHMConfig{TCPConfig: TCPConfig{PollFor: 50 * time.Microsecond}}},
		{"block", SHMConfig{SpinFor: 50 * time.Microsecond}},
		{"sleep at once", SHMConfig{SpinFor: -1, RingBytes: 64 << 10}},
	} {
		t.Run(c.name, func(t *testing.T) {
			const n, bursts, burst = 3, 40, 25
			ports := make([]*SHM, n)
			recs := make([]*recorder, n)
			pp := make([]Parcelport, n)
			for i := range ports {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				recs[i] = newRecorder()
				cfg := c.cfg
				cfg.PortConfig = PortConfig{Locality: uint32(i), Listener: ln, Secret: testSecret, Handler: recs[i], Logger: testLogger(t)}
				if ports[i], err = NewSHM(cfg); err != nil {
					t.Fatal(err)
				}
				pp[i] = ports[i]
			}
			t.Cleanup(func() { closeAll(t, pp) })
			connectAll(t, pp)
			deadline := time.Now().Add(hangLimit)
			for i := range ports {
				for j := range ports {
					for i != j && !ports[i].SharedMemory(uint32(j)) {
						if time.Now().After(deadline) {
							t.Fatalf("locality %d is not on shared memory with %d after %v", i, j, hangLimit)
						}
						time.Sleep(time.Millisecond)
					}
				}
			}
			ctx := context.Background()
			errs := make(chan error, n)
			for i := range ports {
				go func() {
					for b := range bursts {
						for k := range burst {
							for j := range n {
								if j == i {
									continue
								}
								seq := binary.LittleEndian.AppendUint32(nil, uint32(b*burst+k))
								if err := ports[i].Send(ctx, &Parcel{Header: Header{Kind: KindCall, Dest: uint32(j), Action: "seq", Args: seq}}); err != nil {
									errs <- err
									return
								}
							}
						}
						time.Sleep(300 * time.Microsecond) // longer than the window: the readers sleep
					}
					errs <- nil
				}()
			}
			for range n {
				if err := <-errs; err != nil {
					t.Fatal(err)
				}
			}
			for j, r := range recs {
				r.waitParcels(t, (n-1)*bursts*burst)
				next := map[uint32]uint32{}
				for _, p := range r.received() {
					got := binary.LittleEndian.Uint32(p.Header.Args)
					if got != next[p.Header.Source] {
						t.Fatalf("locality %d got parcel %d from %d, want %d", j, got, p.Header.Source, next[p.Header.Source])
					}
					next[p.Header.Source]++
				}
			}
			bells := uint64(0)
			for _, s := range ports {
				if r := s.progress.readers.Load(); r != n-1 {
					t.Errorf("a port has %d ring readers, want %d", r, n-1)
				}
				for j := range n {
					if p := s.slot(uint32(j), false); p != nil {
						bells += p.ctrlSent.Load()
					}
				}
			}
			// Besides the upgrade's own control parcels (one or two per
			// pair and side), doorbells.
			if bells <= uint64(2*n*(n-1)) {
				t.Errorf("%d control parcels in all: no reader slept on its doorbell", bells)
			}
		})
	}
}
