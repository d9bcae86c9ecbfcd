package parcel

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"unsafe"
)

// The handshake that opens every connection, before any parcel:
//
//	dialer  -> acceptor: hello(dialer)
//	acceptor -> dialer:  hello(acceptor) mac("accept", hello(dialer), hello(acceptor))
//	dialer  -> acceptor: mac("dial", hello(dialer), hello(acceptor))
//	acceptor -> dialer:  one byte: 1 accepted, 0 refused (duplicate, itself)
//
// hello = magic "TSRA", protocol version (u16), byte order probe (the u32
// 0x01020304 in the sender's native order), locality id (u32), 32-byte
// random nonce. mac = HMAC-SHA256 keyed with the job secret. Both sides prove
// the secret over both fresh nonces, so a recorded handshake cannot be
// replayed, and the macs are compared in constant time. Nothing else is read
// from a connection whose handshake failed.

// ProtocolVersion is the version of the handshake and framing.
const ProtocolVersion uint16 = 1

const helloLen = 4 + 2 + 4 + 4 + 32

var helloMagic = [4]byte{'T', 'S', 'R', 'A'}

// ErrHandshake is wrapped by every handshake failure.
var ErrHandshake = errors.New("handshake failed")

type hello struct {
	proto    uint16
	order    [4]byte
	locality uint32
	nonce    [32]byte
}

func nativeOrderProbe() [4]byte {
	v := uint32(0x01020304)
	return *(*[4]byte)(unsafe.Pointer(&v))
}

var littleEndianProbe = [4]byte{4, 3, 2, 1}

func newHello(locality uint32) (hello, error) {
	h := hello{proto: ProtocolVersion, order: nativeOrderProbe(), locality: locality}
	_, err := rand.Read(h.nonce[:])
	return h, err
}

func (h *hello) marshal() []byte {
	b := make([]byte, helloLen)
	copy(b, helloMagic[:])
	binary.LittleEndian.PutUint16(b[4:], h.proto)
	copy(b[6:10], h.order[:])
	binary.LittleEndian.PutUint32(b[10:], h.locality)
	copy(b[14:], h.nonce[:])
	return b
}

func readHello(r io.Reader) (hello, []byte, error) {
	b := make([]byte, helloLen)
	if _, err := io.ReadFull(r, b); err != nil {
		return hello{}, nil, fmt.Errorf("%w: reading hello: %v", ErrHandshake, err)
	}
	if [4]byte(b[:4]) != helloMagic {
		return hello{}, nil, fmt.Errorf("%w: bad magic %q (not a tessera locality)", ErrHandshake, b[:4])
	}
	h := hello{proto: binary.LittleEndian.Uint16(b[4:]), order: [4]byte(b[6:10]), locality: binary.LittleEndian.Uint32(b[10:])}
	copy(h.nonce[:], b[14:])
	if h.proto != ProtocolVersion {
		return h, nil, fmt.Errorf("%w: peer speaks protocol %d, this build %d", ErrHandshake, h.proto, ProtocolVersion)
	}
	if h.order != littleEndianProbe || nativeOrderProbe() != littleEndianProbe {
		return h, nil, fmt.Errorf("%w: byte order mismatch (peer probe %x, local %x); chunks travel little endian", ErrHandshake, h.order, nativeOrderProbe())
	}
	return h, b, nil
}

func handshakeMAC(secret []byte, role string, dialHello, acceptHello []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("tessera-" + role))
	m.Write(dialHello)
	m.Write(acceptHello)
	return m.Sum(nil)
}

// dialHandshake runs the dialer's half on rw, expecting to reach locality
// want. It returns nil once the acceptor has taken the connection.
func dialHandshake(rw io.ReadWriter, self, want uint32, secret []byte) error {
	mine, err := newHello(self)
	if err != nil {
		return err
	}
	mb := mine.marshal()
	if _, err := rw.Write(mb); err != nil {
		return fmt.Errorf("%w: sending hello: %v", ErrHandshake, err)
	}
	theirs, tb, err := readHello(rw)
	if err != nil {
		return err
	}
	if theirs.locality != want {
		return fmt.Errorf("%w: expected locality %d, reached locality %d", ErrHandshake, want, theirs.locality)
	}
	mac := make([]byte, sha256.Size)
	if _, err := io.ReadFull(rw, mac); err != nil {
		return fmt.Errorf("%w: reading proof: %v", ErrHandshake, err)
	}
	if !hmac.Equal(mac, handshakeMAC(secret, "accept", mb, tb)) {
		return fmt.Errorf("%w: locality %d does not know the job secret", ErrHandshake, theirs.locality)
	}
	if _, err := rw.Write(handshakeMAC(secret, "dial", mb, tb)); err != nil {
		return fmt.Errorf("%w: sending proof: %v", ErrHandshake, err)
	}
	var ok [1]byte
	if _, err := io.ReadFull(rw, ok[:]); err != nil {
		return fmt.Errorf("%w: waiting for locality %d to accept: %v", ErrHandshake, want, err)
	}
	if ok[0] != 1 {
		return fmt.Errorf("%w: locality %d refused the connection (already connected?)", ErrHandshake, want)
	}
	return nil
}

// acceptHandshake runs the acceptor's half on rw and returns the peer's
// locality once it has proved the secret. accept decides whether that peer
// may connect (not itself, not twice).
func acceptHandshake(rw io.ReadWriter, self uint32, secret []byte, accept func(peer uint32) error) (uint32, error) {
	theirs, tb, err := readHello(rw)
	if err != nil {
		return 0, err
	}
	mine, err := newHello(self)
	if err != nil {
		return 0, err
	}
	mb := mine.marshal()
	if _, err := rw.Write(append(mb, handshakeMAC(secret, "accept", tb, mb)...)); err != nil {
		return 0, fmt.Errorf("%w: sending hello: %v", ErrHandshake, err)
	}
	mac := make([]byte, sha256.Size)
	if _, err := io.ReadFull(rw, mac); err != nil {
		return 0, fmt.Errorf("%w: reading proof from locality %d: %v", ErrHandshake, theirs.locality, err)
	}
	if !hmac.Equal(mac, handshakeMAC(secret, "dial", tb, mb)) {
		return 0, fmt.Errorf("%w: peer claiming locality %d does not know the job secret", ErrHandshake, theirs.locality)
	}
	if err := accept(theirs.locality); err != nil {
		rw.Write([]byte{0}) // best effort: the dialer learns it was refused
		return 0, fmt.Errorf("%w: locality %d: %v", ErrHandshake, theirs.locality, err)
	}
	if _, err := rw.Write([]byte{1}); err != nil {
		return 0, fmt.Errorf("%w: accepting locality %d: %v", ErrHandshake, theirs.locality, err)
	}
	return theirs.locality, nil
}
