// Command rawcoll is the plain-Go floor of Tessera's collectives: what
// the same algorithms cost with nothing but blocking TCP sockets. It runs
// as N processes (N a power of two) started like a Tessera job,
// `tessera run -n 4 rawcoll -port P`, so that each gets the same
// GOMAXPROCS as a locality; it reads only TESSERA_LOCALITY and
// TESSERA_NUM_LOCALITIES. Process i listens on 127.0.0.1:P+i and every
// pair is connected once (TCP_NODELAY). Two measurements (-test):
//
//   - allreduce1: the one-float64 AllReduce by recursive doubling, as
//     Tessera's small AllReduce: in round k a process writes its partial
//     sum (8 bytes) to process i XOR 2^k, reads that process's, and adds.
//     One goroutine per process, blocking reads.
//   - allgather1mib: the AllGather of 1 MiB per process by the ring, as
//     Tessera's: in each of the N-1 steps a process writes a block to
//     process i+1 from a second goroutine while it reads the block of
//     process i-1 straight into its place in the result.
//
// Process 0 prints
//
//	BenchmarkColl/raw_allreduce1 2000 30.125 us/op
//	BenchmarkColl/raw_allgather1mib 100 2790.412 us/op 0.375791 GB/s
package main

import (
	"cmp"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"github.com/tessera-amt/tessera/bench/internal/benchline"
	"io"
	"math"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"
)

func main() {
	port := flag.Int("port", 0, "base TCP port: process i listens on 127.0.0.1:port+i")
	test := flag.String("test", "allreduce1,allgather1mib", "comma-separated measurements")
	n := flag.Int("n", 2000, "timed operations of the one-float64 AllReduce")
	warm := flag.Int("warmup", 500, "operations before timing, one float64")
	bigN := flag.Int("big-n", 100, "timed operations of 1 MiB")
	bigWarm := flag.Int("big-warmup", 10, "operations before timing, 1 MiB")
	flag.Parse()
	if err := run(*port, strings.Split(*test, ","), *n, *warm, *bigN, *bigWarm); err != nil {
		fmt.Fprintln(os.Stderr, "rawcoll:", err)
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

func run(port int, tests []string, n, warm, bigN, bigWarm int) error {
	for _, t := range tests {
		if t != "allreduce1" && t != "allgather1mib" {
			return fmt.Errorf("unknown measurement %q (allreduce1, allgather1mib)", t)
		}
	}
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
	if slices.Contains(tests, "allreduce1") {
		if err := allReduce1(conns, me, n, warm); err != nil {
			return fmt.Errorf("allreduce1: %w", err)
		}
	}
	if slices.Contains(tests, "allgather1mib") && size > 1 {
		if err := allGather1MiB(conns, me, bigN, bigWarm); err != nil {
			return fmt.Errorf("allgather1mib: %w", err)
		}
	}
	return nil
}

// timeOps runs warm operations, lines the processes up with line (as a
// Barrier does), and returns how long n more took.
func timeOps(n, warm int, op func(i int) error, line func() error) (time.Duration, error) {
	for i := range warm {
		if err := op(i); err != nil {
			return 0, err
		}
	}
	if err := line(); err != nil {
		return 0, err
	}
	start := time.Now()
	for i := range n {
		if err := op(warm + i); err != nil {
			return 0, err
		}
	}
	return time.Since(start), nil
}

func allReduce1(conns []net.Conn, me, n, warm int) error {
	size := len(conns)
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
	line := func() error { _, err := allreduce(0); return err }
	took, err := timeOps(n, warm, op, line)
	if err != nil {
		return err
	}
	if me == 0 {
		benchline.Print(os.Stdout, "Coll/raw_allreduce1", n, benchline.Metric{Value: float64(took.Microseconds()) / float64(n), Unit: "us/op"})
	}
	return nil
}

func allGather1MiB(conns []net.Conn, me, n, warm int) error {
	const m = 1 << 17 // float64s per process
	p := len(conns)
	right, left := conns[(me+1)%p], conns[(me-1+p)%p]
	data := make([]float64, m)
	for i := range data {
		data[i] = float64(me*m + i)
	}
	out := make([]float64, p*m)
	bytes := func(v []float64) []byte { return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*8) }
	wrote := make(chan error, 1)
	op := func(i int) error {
		copy(out[me*m:], data)
		for s := range p - 1 {
			sb, rb := (me-s+2*p)%p, (me-s-1+2*p)%p
			go func() {
				_, err := right.Write(bytes(out[sb*m : (sb+1)*m]))
				wrote <- err
			}()
			_, rerr := io.ReadFull(left, bytes(out[rb*m:(rb+1)*m]))
			if err := cmp.Or(<-wrote, rerr); err != nil {
				return fmt.Errorf("operation %d, step %d: %w", i, s, err)
			}
		}
		// Every block is checked at its ends: element j of the result is j.
		for b := range p {
			if lo, hi := out[b*m], out[(b+1)*m-1]; lo != float64(b*m) || hi != float64((b+1)*m-1) {
				return fmt.Errorf("operation %d: block %d holds %v...%v", i, b, lo, hi)
			}
		}
		return nil
	}
	line := func() error {
		var b [1]byte
		if _, err := right.Write(b[:]); err != nil {
			return err
		}
		_, err := io.ReadFull(left, b[:])
		return err
	}
	took, err := timeOps(n, warm, op, line)
	if err != nil {
		return err
	}
	if me == 0 {
		us := float64(took.Microseconds()) / float64(n)
		benchline.Print(os.Stdout, "Coll/raw_allgather1mib", n, benchline.Metric{Value: us, Unit: "us/op"}, benchline.Metric{Value: float64(m*8) / us / 1e3, Unit: "GB/s"})
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
