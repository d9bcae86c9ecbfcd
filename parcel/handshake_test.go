package parcel

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// testSecret is the job secret of the tests: 32 bytes.
var testSecret = []byte("tessera-parcel-test-secret-32byt")

var otherSecret = []byte("not-the-job-secret-of-this-test!")

// hangLimit bounds every wait in these tests; it catches hangs and is never
// a timing assertion.
const hangLimit = 10 * time.Second

type handshakeResult struct {
	dialErr    error
	acceptPeer uint32
	acceptErr  error
	accepted   []uint32 // localities the accept callback was asked about
}

// pipeHandshake runs dialHandshake and acceptHandshake against each other
// over net.Pipe. Each side closes its end when its half returns, as the
// parcelport does on failure.
func pipeHandshake(t *testing.T, dialSelf, want uint32, dialSecret []byte, acceptSelf uint32, acceptSecret []byte, accept func(uint32) error) handshakeResult {
	t.Helper()
	dc, ac := net.Pipe()
	dc.SetDeadline(time.Now().Add(hangLimit))
	ac.SetDeadline(time.Now().Add(hangLimit))
	var res handshakeResult
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer ac.Close()
		res.acceptPeer, res.acceptErr = acceptHandshake(ac, acceptSelf, acceptSecret, func(peer uint32) error {
			res.accepted = append(res.accepted, peer)
			if accept != nil {
				return accept(peer)
			}
			return nil
		})
	}()
	res.dialErr = dialHandshake(dc, dialSelf, want, dialSecret)
	dc.Close()
	<-done
	return res
}

func TestHandshakeAccepts(t *testing.T) {
	res := pipeHandshake(t, 5, 2, testSecret, 2, testSecret, nil)
	if res.dialErr != nil || res.acceptErr != nil {
		t.Fatalf("dial: %v; accept: %v", res.dialErr, res.acceptErr)
	}
	if res.acceptPeer != 5 {
		t.Fatalf("acceptor learnt locality %d, want 5", res.acceptPeer)
	}
	if len(res.accepted) != 1 || res.accepted[0] != 5 {
		t.Fatalf("accept callback asked about %v, want [5]", res.accepted)
	}
}

func TestHandshakeWrongSecret(t *testing.T) {
	for _, tc := range []struct {
		name                     string
		dialSecret, acceptSecret []byte
	}{
		{"dialer wrong", otherSecret, testSecret},
		{"acceptor wrong", testSecret, otherSecret},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := pipeHandshake(t, 1, 0, tc.dialSecret, 0, tc.acceptSecret, nil)
			if !errors.Is(res.dialErr, ErrHandshake) {
				t.Errorf("dialer: %v, want an error wrapping ErrHandshake", res.dialErr)
			}
			if !strings.Contains(res.dialErr.Error(), "does not know the job secret") {
				t.Errorf("dialer: %v does not blame the secret", res.dialErr)
			}
			if !errors.Is(res.acceptErr, ErrHandshake) {
				t.Errorf("acceptor: %v, want an error wrapping ErrHandshake", res.acceptErr)
			}
			if len(res.accepted) != 0 {
				t.Errorf("accept callback called for %v before the secret was proved", res.accepted)
			}
		})
	}
}

// rawHello is a hello as the handshake sends it, with every field settable.
func rawHello(magic string, proto uint16, order [4]byte, locality uint32) []byte {
	b := make([]byte, helloLen)
	copy(b, magic)
	binary.LittleEndian.PutUint16(b[4:], proto)
	copy(b[6:10], order[:])
	binary.LittleEndian.PutUint32(b[10:], locality)
	copy(b[14:], "a nonce that is not random at all")
	return b
}

// rawAccept runs acceptHandshake against a peer that sends first and then
// reads whatever comes back until the acceptor closes, or hangs up once it
// has sent.
func rawAccept(t *testing.T, send []byte, hangUp bool, accept func(uint32) error) (uint32, error, []byte) {
	t.Helper()
	dc, ac := net.Pipe()
	dc.SetDeadline(time.Now().Add(hangLimit))
	ac.SetDeadline(time.Now().Add(hangLimit))
	var peer uint32
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer ac.Close()
		peer, err = acceptHandshake(ac, 0, testSecret, accept)
	}()
	if hangUp {
		dc.Write(send)
		dc.Close()
	} else {
		go dc.Write(send)
	}
	got, _ := io.ReadAll(dc)
	dc.Close()
	<-done
	return peer, err, got
}

func TestHandshakeRejectsBadHello(t *testing.T) {
	tests := []struct {
		name   string
		hello  []byte
		hangUp bool
		want   string
	}{
		{"bad magic", rawHello("HTTP", ProtocolVersion, littleEndianProbe, 1), false, "bad magic"},
		{"protocol version", rawHello("TSRA", ProtocolVersion+1, littleEndianProbe, 1), false, "peer speaks protocol 2, this build 1"},
		{"byte order", rawHello("TSRA", ProtocolVersion, [4]byte{1, 2, 3, 4}, 1), false, "byte order"},
		{"short", []byte("TSRA"), true, "reading hello"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			called := false
			_, err, got := rawAccept(t, tt.hello, tt.hangUp, func(uint32) error { called = true; return nil })
			if !errors.Is(err, ErrHandshake) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("acceptor: %v, want an error wrapping ErrHandshake containing %q", err, tt.want)
			}
			if len(got) != 0 {
				t.Fatalf("acceptor answered %d bytes to a bad hello", len(got))
			}
			if called {
				t.Fatal("accept callback called")
			}
		})
	}
}

func TestHandshakeDialerRejectsBadHello(t *testing.T) {
	// The acceptor is no tessera locality: the dialer refuses its hello
	// and sends nothing more than its own.
	dc, ac := net.Pipe()
	defer ac.Close()
	dc.SetDeadline(time.Now().Add(hangLimit))
	ac.SetDeadline(time.Now().Add(hangLimit))
	go func() {
		io.ReadFull(ac, make([]byte, helloLen))
		ac.Write(rawHello("SSH-", ProtocolVersion, littleEndianProbe, 0))
	}()
	err := dialHandshake(dc, 1, 0, testSecret)
	dc.Close()
	if !errors.Is(err, ErrHandshake) || !strings.Contains(err.Error(), "bad magic") {
		t.Fatalf("dialer: %v", err)
	}
}

func TestHandshakeAcceptorRejectsBadProof(t *testing.T) {
	// A dialer that does not know the secret sends a proof it made up.
	dc, ac := net.Pipe()
	dc.SetDeadline(time.Now().Add(hangLimit))
	ac.SetDeadline(time.Now().Add(hangLimit))
	var called atomic.Bool
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer ac.Close()
		_, err = acceptHandshake(ac, 0, testSecret, func(uint32) error { called.Store(true); return nil })
	}()
	if _, werr := dc.Write(rawHello("TSRA", ProtocolVersion, littleEndianProbe, 4)); werr != nil {
		t.Fatal(werr)
	}
	if _, rerr := io.ReadFull(dc, make([]byte, helloLen+sha256.Size)); rerr != nil {
		t.Fatal(rerr)
	}
	dc.Write(bytes.Repeat([]byte{0x5a}, sha256.Size))
	rest, _ := io.ReadAll(dc)
	dc.Close()
	<-done
	if !errors.Is(err, ErrHandshake) || !strings.Contains(err.Error(), "locality 4 does not know the job secret") {
		t.Fatalf("acceptor: %v", err)
	}
	if len(rest) != 0 {
		t.Fatalf("acceptor sent %q after a bad proof", rest)
	}
	if called.Load() {
		t.Fatal("accept callback called after a bad proof")
	}
}

func TestHandshakeWrongLocality(t *testing.T) {
	res := pipeHandshake(t, 1, 5, testSecret, 3, testSecret, nil)
	if !errors.Is(res.dialErr, ErrHandshake) || !strings.Contains(res.dialErr.Error(), "expected locality 5, reached locality 3") {
		t.Fatalf("dialer: %v", res.dialErr)
	}
	if !errors.Is(res.acceptErr, ErrHandshake) {
		t.Fatalf("acceptor: %v, want an error wrapping ErrHandshake", res.acceptErr)
	}
	if len(res.accepted) != 0 {
		t.Fatalf("accept callback called for %v", res.accepted)
	}
}

func TestHandshakeAcceptRefusesDuplicate(t *testing.T) {
	connected := map[uint32]bool{}
	accept := func(peer uint32) error {
		if connected[peer] {
			return errors.New("already connected")
		}
		connected[peer] = true
		return nil
	}
	first := pipeHandshake(t, 2, 0, testSecret, 0, testSecret, accept)
	if first.dialErr != nil || first.acceptErr != nil {
		t.Fatalf("first: dial %v, accept %v", first.dialErr, first.acceptErr)
	}
	second := pipeHandshake(t, 2, 0, testSecret, 0, testSecret, accept)
	if !errors.Is(second.acceptErr, ErrHandshake) || !strings.Contains(second.acceptErr.Error(), "already connected") {
		t.Fatalf("acceptor: %v", second.acceptErr)
	}
	if !errors.Is(second.dialErr, ErrHandshake) || !strings.Contains(second.dialErr.Error(), "refused") {
		t.Fatalf("dialer: %v", second.dialErr)
	}
}

func TestHandshakeProofsDiffer(t *testing.T) {
	// The two proofs are bound to their role and to both hellos, so one
	// cannot stand in for the other, nor be replayed with other nonces.
	a, b := rawHello("TSRA", 1, littleEndianProbe, 1), rawHello("TSRA", 1, littleEndianProbe, 2)
	macs := [][]byte{
		handshakeMAC(testSecret, "dial", a, b),
		handshakeMAC(testSecret, "accept", a, b),
		handshakeMAC(testSecret, "dial", b, a),
		handshakeMAC(otherSecret, "dial", a, b),
	}
	for i := range macs {
		for j := i + 1; j < len(macs); j++ {
			if bytes.Equal(macs[i], macs[j]) {
				t.Fatalf("proofs %d and %d are equal", i, j)
			}
		}
	}
	h1, _ := newHello(0)
	h2, _ := newHello(0)
	if h1.nonce == h2.nonce {
		t.Fatal("two hellos share a nonce")
	}
}
