package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	goruntime "runtime"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/tessera-amt/tessera/runtime"
)

// The Tessera tests beyond the single round trip: paired bursts against
// raw TCP between the same processes, payload sweeps, many in flight.

func paired(ctx context.Context, name string, peer runtime.Target, echo runtime.Action[[]byte, []byte], rawEcho runtime.Action[int, int], p params) error {
	if p.pairBurst <= 0 || p.rttN < p.pairBurst || p.rttN%p.pairBurst != 0 {
		return fmt.Errorf("-pair-burst %d must be positive and divide -rtt-n %d", p.pairBurst, p.rttN)
	}
	port, err := runtime.Async(ctx, peer, rawEcho, p.rttSize).Get(ctx)
	if err != nil {
		return err
	}
	nc, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), 10*time.Second)
	if err != nil {
		return err
	}
	c := nc.(*net.TCPConn)
	defer c.Close()
	c.SetNoDelay(true)
	msg := make([]byte, p.rttSize)
	for i := range msg {
		msg[i] = byte(i)
	}
	in := make([]byte, p.rttSize)
	action := func() error {
		r, err := runtime.Async(ctx, peer, echo, msg).Get(ctx)
		if err == nil && len(r) != len(msg) {
			err = fmt.Errorf("echo returned %d bytes, sent %d", len(r), len(msg))
		}
		return err
	}
	plain := func() error {
		if _, err := c.Write(msg); err != nil {
			return err
		}
		_, err := io.ReadFull(c, in)
		return err
	}
	for _, round := range []func() error{action, plain} {
		if _, err := timeRounds(p.rttWarm, 0, round); err != nil {
			return err
		}
	}
	rounds := p.rttN / p.pairBurst
	var tes, raw, ratio []float64
	for r := range rounds {
		var dt, dr time.Duration
		first, second, d1, d2 := action, plain, &dt, &dr
		if r%2 == 1 {
			first, second, d1, d2 = plain, action, &dr, &dt
		}
		if *d1, err = timeRounds(0, p.pairBurst, first); err != nil {
			return err
		}
		if *d2, err = timeRounds(0, p.pairBurst, second); err != nil {
			return err
		}
		t, w := float64(dt.Nanoseconds())/1e3/float64(p.pairBurst), float64(dr.Nanoseconds())/1e3/float64(p.pairBurst)
		tes, raw, ratio = append(tes, t), append(raw, w), append(ratio, t/w)
		result(fmt.Sprintf("%s/round=%d", name, r), "us_per_rtt", fmt.Sprintf("%.3f", t), "raw_us_per_rtt", fmt.Sprintf("%.3f", w))
	}
	result(name, "us_per_rtt", fmt.Sprintf("%.3f", medianOf(tes)), "raw_us_per_rtt", fmt.Sprintf("%.3f", medianOf(raw)),
		"ratio", fmt.Sprintf("%.4f", medianOf(ratio)), "ratio_min", fmt.Sprintf("%.4f", ratio[0]), "ratio_max", fmt.Sprintf("%.4f", ratio[len(ratio)-1]),
		"rounds", rounds, "burst", p.pairBurst)
	return nil
}

// rawEchoServer listens on 127.0.0.1 for one connection, echoes
// size-byte messages on it until the peer closes it, and returns the port
// at once.
func rawEchoServer(size int) (int, error) {
	if size <= 0 {
		return 0, fmt.Errorf("message size %d is not positive", size)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	ln.(*net.TCPListener).SetDeadline(time.Now().Add(30 * time.Second))
	go func() {
		defer ln.Close()
		nc, err := ln.Accept()
		if err != nil {
			fmt.Fprintln(os.Stderr, "pingpong: rtt-paired echo:", err)
			return
		}
		c := nc.(*net.TCPConn)
		defer c.Close()
		c.SetNoDelay(true)
		buf := make([]byte, size)
		for {
			if _, err := io.ReadFull(c, buf); err != nil {
				if !errors.Is(err, io.EOF) {
					fmt.Fprintln(os.Stderr, "pingpong: rtt-paired echo:", err)
				}
				return
			}
			if _, err := c.Write(buf); err != nil {
				fmt.Fprintln(os.Stderr, "pingpong: rtt-paired echo:", err)
				return
			}
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// medianOf returns the median of v (which it sorts).
func medianOf(v []float64) float64 {
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// sweepSize times calls carrying size bytes: one at a time (latency) and
// with p.window in flight (throughput). The number of calls shrinks with
// the size, from 2000 to 8.
func sweepSize(ctx context.Context, rt *runtime.Runtime, sink runtime.Action[[]float64, int], p params, size int) error {
	block := make([]float64, size/8)
	for i := range block {
		block[i] = float64(i)
	}
	n := min(2000, max(8, (256<<20)/size))
	peer := rt.Locality(1)
	call := func() *runtime.Future[int] { return runtime.Async(ctx, peer, sink, block) }
	check := func(f *runtime.Future[int]) error {
		got, err := f.Get(ctx)
		if err == nil && got != len(block) {
			err = fmt.Errorf("sink got %d elements, sent %d", got, len(block))
		}
		return err
	}
	for range max(2, n/10) { // warm up
		if err := check(call()); err != nil {
			return err
		}
	}
	goruntime.GC()
	start := time.Now()
	for range n {
		if err := check(call()); err != nil {
			return err
		}
	}
	lat := time.Since(start)
	goruntime.GC()
	inflight := make([]*runtime.Future[int], p.window)
	start = time.Now()
	for i := range n {
		slot := i % p.window
		if f := inflight[slot]; f != nil {
			if err := check(f); err != nil {
				return err
			}
		}
		inflight[slot] = call()
	}
	for _, f := range inflight {
		if f != nil {
			if err := check(f); err != nil {
				return err
			}
		}
	}
	d := time.Since(start)
	result("tessera_sweep", "size", size, "us_per_call", usPer(lat, n), "gbps", gbps(int64(n)*int64(size), d), "n", n, "window", p.window)
	return nil
}

// many has p.manyG goroutines make p.manyN echo calls each, all at once,
// and reports the call rate and how many parcels went out per write.
func many(ctx context.Context, rt *runtime.Runtime, echo runtime.Action[[]byte, []byte], p params) error {
	peer := rt.Locality(1)
	msg := make([]byte, 64)
	sent := func() (parcels, writes uint64) {
		for _, c := range rt.Counters().Peers {
			if c.Peer == 1 {
				return c.ParcelsSent, c.Writes
			}
		}
		return 0, 0
	}
	run := func(n int) error {
		var wg sync.WaitGroup
		errs := make(chan error, p.manyG)
		for range p.manyG {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range n {
					if _, err := runtime.Async(ctx, peer, echo, msg).Get(ctx); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		select {
		case err := <-errs:
			return err
		default:
			return nil
		}
	}
	if err := run(max(1, p.manyN/10)); err != nil {
		return err
	}
	parcels0, writes0 := sent()
	start := time.Now()
	if err := run(p.manyN); err != nil {
		return err
	}
	d := time.Since(start)
	parcels1, writes1 := sent()
	calls := p.manyG * p.manyN
	result("tessera_many", "calls_per_s", fmt.Sprintf("%.0f", float64(calls)/d.Seconds()),
		"parcels_per_write", fmt.Sprintf("%.2f", float64(parcels1-parcels0)/float64(max(1, writes1-writes0))),
		"senders", p.manyG, "n", calls)
	return nil
}

// socketFDs counts the process's open socket descriptors.
