//go:build ucx

package parcel

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// What arrives through UCX takes the checks of the frame decoder and of
// the sender's token: hand-made active messages, sent on a port's own
// endpoint.

type ucxRecorder struct {
	mu    sync.Mutex
	got   []*Parcel
	downs []error
}

func (r *ucxRecorder) Buffer(*Header, int, int) []byte { return nil }
func (r *ucxRecorder) Receive(p *Parcel) {
	r.mu.Lock()
	r.got = append(r.got, p)
	r.mu.Unlock()
}
func (r *ucxRecorder) PeerDown(_ uint32, err error) {
	r.mu.Lock()
	r.downs = append(r.downs, err)
	r.mu.Unlock()
}

func (r *ucxRecorder) state() (int, []error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got), append([]error(nil), r.downs...)
}

func newUCXPair(t *testing.T) (*UCX, *UCX, *ucxRecorder) {
	t.Setenv("UCX_TLS", "tcp")
	rec := &ucxRecorder{}
	open := func(id uint32, h Handler) *UCX {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		u, err := NewUCX(UCXConfig{PortConfig: PortConfig{Locality: id, Listener: ln, Secret: []byte("tessera-ucx-internal-test-secret"), Handler: h}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { u.Close() })
		return u
	}
	u0 := open(0, rec)
	u1 := open(1, &ucxRecorder{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := u1.Connect(ctx, 0, u0.Addr()); err != nil {
		t.Fatal(err)
	}
	return u0, u1, rec
}

// rawAM sends an AM of header hdr and data from u to peer 0, with u's
// prefix (its id, the inlined flag, the next sequence number and tok).
// A forged one takes no sequence number from the real sender's.
func rawAM(t *testing.T, u *UCX, tok []byte, frame []byte, data []byte, forged bool) {
	p := u.peer(0)
	hdr := make([]byte, ucxPrefix, ucxPrefix+len(frame))
	binary.LittleEndian.PutUint32(hdr, 1)
	binary.LittleEndian.PutUint32(hdr[4:], ucxInlined)
	copy(hdr[16:], tok)
	hdr = append(hdr, frame...)
	v := newUCXIOV([][]byte{data}, true)
	v.pin.Pin(&hdr[0])
	u.w.mu.Lock()
	binary.LittleEndian.PutUint64(hdr[8:], p.seq)
	if !forged {
		p.seq++
	}
	id := u.nextID
	u.nextID++
	done, err := u.w.send(p.ep, ucxPtr(hdr), len(hdr), v, id)
	var op *ucxOp
	if !done {
		op = &ucxOp{done: make(chan error, 1), iov: v}
		u.ops[id] = op
	}
	u.w.mu.Unlock()
	if op != nil {
		u.w.signal()
		err = <-op.done
	} else {
		v.free()
	}
	if err != nil {
		t.Fatalf("raw AM: %v", err)
	}
}

func TestUCXWrongTokenDropped(t *testing.T) {
	u0, u1, rec := newUCXPair(t)
	frame := appendFrame(t, nil, Header{Kind: KindCall, Source: 1, Dest: 0, Action: "forged"}, nil)
	rawAM(t, u1, make([]byte, 16), frame, nil, true)
	// A real parcel after it arrives, and nobody was reported down.
	if err := u1.Send(context.Background(), &Parcel{Header: Header{Kind: KindCall, Dest: 0, Action: "real"}}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		n, downs := rec.state()
		if len(downs) != 0 {
			t.Fatalf("a forged message brought the peer down: %v", downs[0])
		}
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the real parcel did not arrive")
		}
		time.Sleep(time.Millisecond)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.got) != 1 || rec.got[0].Header.Action != "real" {
		t.Fatalf("got %d parcels, the first %q; want only the real one", len(rec.got), rec.got[0].Header.Action)
	}
	_ = u0
}

func TestUCXBadFrameIsPeerDown(t *testing.T) {
	for name, bad := range map[string]func() ([]byte, []byte){
		"chunks longer than the data": func() ([]byte, []byte) {
			h := appendFrame(t, nil, Header{Kind: KindCall, Source: 1, Dest: 0, Action: "x"}, [][]byte{make([]byte, 100)})
			return h[:len(h)-100], make([]byte, 10)
		},
		"header that does not decode": func() ([]byte, []byte) {
			f := binary.LittleEndian.AppendUint64(nil, 4)
			f = binary.LittleEndian.AppendUint32(f, 4)
			return append(f, 0xc1, 0xc1, 0xc1, 0xc1), nil
		},
		"frame over the limit": func() ([]byte, []byte) {
			f := binary.LittleEndian.AppendUint64(nil, 1<<40)
			f = binary.LittleEndian.AppendUint32(f, 4)
			return append(f, 1, 2, 3, 4), nil
		},
	} {
		t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) {
			u0, u1, rec := newUCXPair(t)
			frame, data := bad()
			rawAM(t, u1, u0.peer(1).recvTok[:], frame, data, false)
			deadline := time.Now().Add(10 * time.Second)
			for {
				n, downs := rec.state()
				if n != 0 {
					t.Fatal("a bad frame was delivered")
				}
				if len(downs) == 1 {
					var fe *FrameError
					if !errors.Is(downs[0], ErrPeerDown) || !errors.As(downs[0], &fe) || !strings.Contains(downs[0].Error(), "locality 1") {
						t.Fatalf("PeerDown(%v): want a FrameError naming locality 1, wrapping ErrPeerDown", downs[0])
					}
					if name == "frame over the limit" && !errors.Is(downs[0], ErrFrameTooLarge) {
						t.Fatalf("PeerDown(%v): want ErrFrameTooLarge", downs[0])
					}
					t.Log(downs[0])
					return
				}
				if time.Now().After(deadline) {
					t.Fatal("the peer was not reported down")
				}
				time.Sleep(time.Millisecond)
			}
		})
	}
}
