//go:build linux

package parcel

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Real processes on the rings: the test binary again, running the same
// test as locality 1 of a job whose locality 0 is the test, with
// SHM_TEST_CHILD saying what it does and SHM_TEST_ADDR where locality 0
// listens.

// shmChild starts the child, which connects to port (locality 0), and
// waits until the pair is on shared memory.
func shmChild(t *testing.T, port *SHM, role string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run", "^"+t.Name()+"$")
	cmd.Env = append(os.Environ(), "SHM_TEST_CHILD="+role, "SHM_TEST_ADDR="+port.Addr())
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("child output:\n%s", out.String())
		}
	})
	deadline := time.Now().Add(hangLimit)
	for !port.SharedMemory(1) {
		if time.Now().After(deadline) {
			t.Fatalf("the child is not on shared memory after %v", hangLimit)
		}
		time.Sleep(time.Millisecond)
	}
	return cmd
}

// shmChildMain is the child's side of a process test, run in its place
// when SHM_TEST_CHILD is set; it reports whether it ran.
func shmChildMain(t *testing.T) bool {
	role := os.Getenv("SHM_TEST_CHILD")
	if role == "" {
		return false
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	port, err := NewSHM(SHMConfig{TCPConfig: TCPConfig{PortConfig: PortConfig{Locality: 1, Listener: ln, Secret: testSecret, Handler: rec}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := port.Connect(context.Background(), 0, os.Getenv("SHM_TEST_ADDR")); err != nil {
		t.Fatal(err)
	}
	switch role {
	case "stream": // 8 MiB parcels until killed
		chunk := pattern8(8<<20, 1)
		for k := uint64(0); ; k++ {
			if err := port.Send(context.Background(), &Parcel{Header: Header{Kind: KindCall, Dest: 0, Request: k}, Chunks: [][]byte{chunk}}); err != nil {
				fmt.Println("child:", err)
				os.Exit(1)
			}
		}
	case "read": // reads until stopped and killed
		time.Sleep(time.Hour)
	}
	return true
}

func pattern8(n, seed int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*131 + i>>11 + seed*17)
	}
	return b
}

// TestSHMPeerKilledMidStream: a peer killed with SIGKILL while it streams
// 8 MiB parcels through its ring (the ring holding part of one, almost
// surely) is reported down within seconds, naming it; the whole parcels
// it sent before arrive intact, and Sends to it fail with ErrPeerDown.
func TestSHMPeerKilledMidStream(t *testing.T) {
	if shmChildMain(t) {
		return
	}
	ports := shmSolo(t, 5*time.Second)
	port, rec := ports.port, ports.rec
	cmd := shmChild(t, port, "stream")
	rec.waitParcels(t, 3)
	time.Sleep(7 * time.Millisecond) // somewhere inside a parcel
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	d := rec.waitDown(t)
	took := time.Since(killed)
	var pe *PeerError
	if d.peer != 1 || !errors.As(d.err, &pe) || pe.Locality != 1 || !errors.Is(d.err, ErrPeerDown) || !strings.Contains(d.err.Error(), "locality 1") {
		t.Fatalf("peer %d down: %v; want locality 1 named and ErrPeerDown", d.peer, d.err)
	}
	if took > 3*time.Second {
		t.Fatalf("the kill was reported after %v", took)
	}
	t.Logf("reported %v after the kill: %v", took, d.err)
	want := pattern8(8<<20, 1)
	for i, p := range rec.received() {
		if p.Header.Request != uint64(i) || len(p.Chunks) != 1 || string(p.Chunks[0]) != string(want) {
			t.Fatalf("parcel %d (request %d) arrived damaged", i, p.Header.Request)
		}
	}
	if err := port.Send(context.Background(), &Parcel{Header: Header{Kind: KindCall, Dest: 1}}); !errors.Is(err, ErrPeerDown) {
		t.Fatalf("Send to the killed peer: %v, want ErrPeerDown", err)
	}
	time.Sleep(100 * time.Millisecond)
	if n := len(rec.peerDowns()); n != 1 {
		t.Fatalf("told %d times", n)
	}
}

// TestSHMPeerStoppedIsSilent: a peer stopped with SIGSTOP neither reads
// its ring nor sends heartbeats: a Send waiting for room in its full ring
// fails with ErrPeerDown, and the peer is reported silent, soon after the
// heartbeat timeout.
func TestSHMPeerStoppedIsSilent(t *testing.T) {
	if shmChildMain(t) {
		return
	}
	const timeout = time.Second
	ports := shmSolo(t, timeout)
	port, rec := ports.port, ports.rec
	cmd := shmChild(t, port, "read")
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	big := make([]byte, 4<<20) // four rings' worth: the writer waits for room
	errc := make(chan error, 1)
	go func() {
		for {
			if err := port.Send(context.Background(), &Parcel{Header: Header{Kind: KindCall, Dest: 1}, Chunks: [][]byte{big}}); err != nil {
				errc <- err
				return
			}
		}
	}()
	select {
	case err := <-errc:
		if !errors.Is(err, ErrPeerDown) {
			t.Fatalf("Send to the stopped peer: %v, want ErrPeerDown", err)
		}
	case <-time.After(timeout + hangLimit):
		t.Fatal("a Send to the stopped peer is still blocked")
	}
	d := rec.waitDown(t)
	if d.peer != 1 || !errors.Is(d.err, ErrPeerDown) || !strings.Contains(d.err.Error(), "silent") {
		t.Fatalf("peer %d down: %v; want locality 1 silent", d.peer, d.err)
	}
	if took := time.Since(stopped); took > timeout+3*time.Second {
		t.Fatalf("the stopped peer was reported after %v", took)
	}
	cmd.Process.Signal(syscall.SIGKILL)
}

type soloPort struct {
	port *SHM
	rec  *recorder
}

// shmSolo starts locality 0 alone, with heartbeat timeout hb.
func shmSolo(t *testing.T, hb time.Duration) soloPort {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	port, err := NewSHM(SHMConfig{TCPConfig: TCPConfig{PortConfig: PortConfig{Locality: 0, Listener: ln, Secret: testSecret, Handler: rec,
		Logger: testLogger(t), HeartbeatInterval: hb / 5, HeartbeatTimeout: hb}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeAll(t, []Parcelport{port}) })
	return soloPort{port, rec}
}
