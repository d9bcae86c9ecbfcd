// Command rawallreduce is the plain-Go floor of Tessera's one-float64
// AllReduce: what the same algorithm costs with nothing but blocking TCP
// sockets. It runs as N processes (N a power of two) started like a
// Tessera job, `tessera run -n 4 rawallreduce -port P`, so that each gets
// the same GOMAXPROCS as a locality; it reads only TESSERA_LOCALITY and
// TESSERA_NUM_LOCALITIES. Process i listens on 127.0.0.1:P+i, every pair
// is connected once (TCP_NODELAY), and each operation is recursive
// doubling, as Tessera's small AllReduce: in round k a process writes its
// partial sum (8 bytes) to process i XOR 2^k, reads that process's, and
// adds. One goroutine per process, blocking reads. Process 0 prints
//
//	RESULT name=raw_allreduce1 us=30.125 n=2000 sites=4
package main

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"strconv"
	"time"
)

func main() {
	port := flag.Int("port", 0, "base TCP port: process i listens on 127.0.0.1:port+i")
	n := flag.Int("n", 2000, "timed operations")
	warm := flag.Int("warmup", 500, "operations before timing")
	flag.Parse()
	if err := run(*port, *n, *warm); err != nil {
		fmt.Fprintln(os.Stderr, "rawallreduce:", err)
		os.Exit(1)
	}
}

func envInt(name string) (int, error) {
	v, err := strconv.Atoi(os.Getenv(name))
	if err != nil {
		return 0, fmt.Errorf("%s: %w (start it with tessera run)", name, err)
	}
	return v, nil
}

func run(port, n, warm int) error {
	me, err := envInt("TESSERA_LOCALITY")
	if err != nil {
		return err
	}
	size, err := envInt("TESSERA_NUM_LOCALITIES")
	if err != nil {
		return err
	}
	if size < 1 || size&(size-1) != 0 {
		return fmt.Errorf("%d processes: recursive doubling needs a power of two", size)
	}
	if port <= 0 {
		return errors.New("-port is required")
	}
	conns, err := mesh(me, size, port)
	if err != nil {
		return err
	}
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	var out, in [8]byte
	allreduce := func(v float64) (float64, error) {
		for bit := 1; bit < size; bit <<= 1 {
			c := conns[me^bit]
			binary.LittleEndian.PutUint64(out[:], math.Float64bits(v))
			if _, err := c.Write(out[:]); err != nil {
				return 0, err
			}
			if _, err := io.ReadFull(c, in[:]); err != nil {
				return 0, err
			}
			v += math.Float64frombits(binary.LittleEndian.Uint64(in[:]))
		}
		return v, nil
	}
	// The sum of 1..size is the same everywhere: check it every time.
	want := float64(size * (size + 1) / 2)
	op := func(i int) error {
		got, err := allreduce(float64(me + 1))
		if err != nil {
			return fmt.Errorf("operation %d: %w", i, err)
		}
		if got != want {
			return fmt.Errorf("operation %d: sum %v, want %v", i, got, want)
		}
		return nil
	}
	for i := range warm {
		if err := op(i); err != nil {
			return err
		}
	}
	// Line the processes up before timing, as a Barrier does.
	if _, err := allreduce(0); err != nil {
		return err
	}
	start := time.Now()
	for i := range n {
		if err := op(warm + i); err != nil {
			return err
		}
	}
	took := time.Since(start)
	if me == 0 {
		fmt.Printf("RESULT name=raw_allreduce1 us=%.3f n=%d sites=%d\n", float64(took.Microseconds())/float64(n), n, size)
	}
	return nil
}

// mesh connects this process to every other: it accepts from the higher
// ranks and dials the lower ones, which listen on port+rank. The first 4
// bytes on a connection are the dialer's rank.
func mesh(me, size, port int) ([]net.Conn, error) {
	conns := make([]net.Conn, size)
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port+me))
	if err != nil {
		return nil, err
	}
	defer ln.Close()
	for r := 0; r < me; r++ {
		var c net.Conn
		deadline := time.Now().Add(30 * time.Second)
		for {
			c, err = net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port+r))
			if err == nil || time.Now().After(deadline) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if err != nil {
			return nil, fmt.Errorf("dialing rank %d: %w", r, err)
		}
		var hello [4]byte
		binary.LittleEndian.PutUint32(hello[:], uint32(me))
		if _, err := c.Write(hello[:]); err != nil {
			return nil, err
		}
		c.(*net.TCPConn).SetNoDelay(true)
		conns[r] = c
	}
	ln.(*net.TCPListener).SetDeadline(time.Now().Add(30 * time.Second))
	for range size - 1 - me {
		c, err := ln.Accept()
		if err != nil {
			return nil, fmt.Errorf("accepting: %w", err)
		}
		var hello [4]byte
		if _, err := io.ReadFull(c, hello[:]); err != nil {
			return nil, err
		}
		r := int(binary.LittleEndian.Uint32(hello[:]))
		if r <= me || r >= size || conns[r] != nil {
			return nil, fmt.Errorf("unexpected rank %d connecting", r)
		}
		c.(*net.TCPConn).SetNoDelay(true)
		conns[r] = c
	}
	return conns, nil
}
