package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	goruntime "runtime"
	"strings"
	"time"

	"github.com/tessera-amt/tessera/internal/affinity"
	"github.com/tessera-amt/tessera/internal/sockopt"
)

// The raw TCP baselines: ping-pong and stream between two processes of
// their own, with the same socket options as the tcp parcelport.

func socketFDs() (int, error) {
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0, fmt.Errorf("counting sockets: %w", err)
	}
	n := 0
	for _, fd := range fds {
		if target, err := os.Readlink("/proc/self/fd/" + fd.Name()); err == nil && strings.HasPrefix(target, "socket:") {
			n++
		}
	}
	return n, nil
}

// ---- raw Go TCP ----

// raw runs each test against a child process of this binary.
func raw(p params) error {
	for _, test := range []string{"rtt", "rtt-timer", "rtt-work"} {
		if !p.tests[test] {
			continue
		}
		err := withPeer(p, test, func(c *net.TCPConn) error {
			defer pendingTimer(test)()
			msg := make([]byte, p.rttSize)
			in := make([]byte, p.rttSize)
			var work time.Duration // of rtt-work's each message
			if test == "rtt-work" {
				work = p.rttWork
			}
			round := func() error {
				if _, err := c.Write(msg); err != nil {
					return err
				}
				_, err := io.ReadFull(c, in)
				spin(work)
				return err
			}
			took, err := timeRounds(p.rttWarm, p.rttN, round)
			if err != nil {
				return err
			}
			result("raw_"+strings.ReplaceAll(test, "-", "_"), "us_per_rtt", usPer(took, p.rttN), "n", p.rttN)
			return nil
		})
		if err != nil {
			return fmt.Errorf("%s: %w", test, err)
		}
	}
	if p.tests["rtt-handoff"] {
		err := withPeer(p, "rtt-handoff", func(c *net.TCPConn) error {
			// The client's reader goroutine hands each reply to the caller,
			// as a parcel reader fulfils a future that a task waits on.
			replies := make(chan struct{}, 1)
			go func() {
				defer close(replies)
				in := make([]byte, p.rttSize)
				for {
					if _, err := io.ReadFull(c, in); err != nil {
						return
					}
					replies <- struct{}{}
				}
			}()
			msg := make([]byte, p.rttSize)
			round := func() error {
				if _, err := c.Write(msg); err != nil {
					return err
				}
				if _, ok := <-replies; !ok {
					return errors.New("connection ended")
				}
				return nil
			}
			took, err := timeRounds(p.rttWarm, p.rttN, round)
			if err != nil {
				return err
			}
			result("raw_rtt_handoff", "us_per_rtt", usPer(took, p.rttN), "n", p.rttN)
			return nil
		})
		if err != nil {
			return fmt.Errorf("rtt-handoff: %w", err)
		}
	}
	if p.tests["bw"] {
		err := withPeer(p, "bw", func(c *net.TCPConn) error {
			block := make([]byte, p.bwElems*8)
			for i := range block {
				block[i] = byte(i)
			}
			ack := make([]byte, 1)
			// The peer acknowledges with one byte once it has read a phase.
			phase := func(n int) error {
				for range n {
					if _, err := c.Write(block); err != nil {
						return err
					}
				}
				_, err := io.ReadFull(c, ack)
				return err
			}
			if err := phase(p.bwWarm); err != nil {
				return err
			}
			goruntime.GC()
			start := time.Now()
			if err := phase(p.bwN); err != nil {
				return err
			}
			d := time.Since(start)
			result("raw_bw", "gbps", gbps(int64(p.bwN)*int64(len(block)), d), "n", p.bwN)
			return nil
		})
		if err != nil {
			return fmt.Errorf("bw: %w", err)
		}
	}
	return nil
}

// withPeer starts `-mode raw-peer -test test` as a child, accepts its
// connection, runs fn on it, closes it and waits for the child.
func withPeer(p params, test string, fn func(c *net.TCPConn) error) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	args := []string{"-mode", "raw-peer", "-test", test, "-addr", ln.Addr().String(),
		"-rtt-size", fmt.Sprint(p.rttSize), "-rtt-work", p.rttWork.String(), "-bw-n", fmt.Sprint(p.bwN), "-bw-warmup", fmt.Sprint(p.bwWarm),
		"-bw-elems", fmt.Sprint(p.bwElems), "-congestion", p.congestion}
	if p.cpuprofile != "" {
		args = append(args, "-cpuprofile", p.cpuprofile+"."+test)
	}
	if p.trace != "" {
		args = append(args, "-trace", p.trace+"."+test)
	}
	cmd := exec.Command(exe, args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	start := cmd.Start
	if p.peerCPU >= 0 {
		if !affinity.Supported {
			return fmt.Errorf("-peer-cpu %d: binding to CPUs is not supported on this system", p.peerCPU)
		}
		start = func() error { return affinity.StartOn([]int{p.peerCPU}, cmd.Start) }
	}
	if err := start(); err != nil {
		return err
	}
	waited := false
	defer func() {
		if !waited {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	ln.(*net.TCPListener).SetDeadline(time.Now().Add(30 * time.Second))
	nc, err := ln.Accept()
	if err != nil {
		return err
	}
	c := nc.(*net.TCPConn)
	c.SetNoDelay(true)
	if err := setCongestion(c, p.congestion); err != nil {
		c.Close()
		return err
	}
	err = fn(c)
	c.Close()
	waited = true
	if werr := cmd.Wait(); err == nil && werr != nil {
		err = fmt.Errorf("peer: %w", werr)
	}
	return err
}

// rawPeer is the child: it echoes (rtt) or reads and acknowledges (bw).
func rawPeer(p params) error {
	nc, err := net.Dial("tcp", p.peerAddr)
	if err != nil {
		return err
	}
	c := nc.(*net.TCPConn)
	defer c.Close()
	c.SetNoDelay(true)
	if err := setCongestion(c, p.congestion); err != nil {
		return err
	}
	switch {
	case p.tests["rtt"], p.tests["rtt-timer"], p.tests["rtt-work"]:
		if p.tests["rtt-timer"] {
			defer pendingTimer("rtt-timer")()
		}
		var work time.Duration // of rtt-work's each message
		if p.tests["rtt-work"] {
			work = p.rttWork
		}
		buf := make([]byte, p.rttSize)
		for {
			if _, err := io.ReadFull(c, buf); err != nil {
				if errors.Is(err, io.EOF) {
					return nil
				}
				return err
			}
			spin(work)
			if _, err := c.Write(buf); err != nil {
				return err
			}
		}
	case p.tests["rtt-handoff"]:
		// The reader goroutine hands each message to a worker goroutine,
		// which writes the echo: a call handed from a parcel reader to a
		// task on a lane. Strict ping-pong: the next message arrives only
		// after the echo of this one, so one buffer serves.
		buf := make([]byte, p.rttSize)
		work, done := make(chan struct{}, 1), make(chan error, 1)
		go func() {
			for range work {
				if _, err := c.Write(buf); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
		for {
			if _, err := io.ReadFull(c, buf); err != nil {
				close(work)
				if werr := <-done; werr != nil {
					return werr
				}
				if errors.Is(err, io.EOF) {
					return nil
				}
				return err
			}
			work <- struct{}{}
		}
	case p.tests["bw"]:
		buf := make([]byte, p.bwElems*8)
		for _, n := range []int{p.bwWarm, p.bwN} {
			for range n {
				if _, err := io.ReadFull(c, buf); err != nil {
					return err
				}
			}
			if _, err := c.Write([]byte{1}); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("raw-peer: no test")
}

// pendingTimer keeps a Go timer pending, due in an hour, if test is
// rtt-timer, and returns the function that stops it. The Go scheduler's
// poller never waits without a timeout while a timer is pending: this
// measures what that costs the raw ping-pong, which the runtime avoids by
// having none pending while messages flow (internal/tick).
func pendingTimer(test string) (stop func()) {
	if test != "rtt-timer" {
		return func() {}
	}
	t := time.NewTimer(time.Hour)
	return func() { t.Stop() }
}

// spin keeps the processor busy for d, as a program's own work on a
// message would (reading the clock in a loop; no system call).
func spin(d time.Duration) {
	if d <= 0 {
		return
	}
	for start := time.Now(); time.Since(start) < d; {
	}
}

// setCongestion makes c use the TCP congestion control algorithm name, as
// the tcp parcelport does; "" leaves the system's default.
func setCongestion(c *net.TCPConn, name string) error {
	if name == "" {
		return nil
	}
	if err := sockopt.SetCongestion(c, name); err != nil {
		return fmt.Errorf("-congestion: %w", err)
	}
	return nil
}

func freePort() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	ln.Close()
	fmt.Println(port)
	return nil
}

// timeRounds runs round warm times, then n times timed: the time of the n.
func timeRounds(warm, n int, round func() error) (time.Duration, error) {
	for range warm {
		if err := round(); err != nil {
			return 0, err
		}
	}
	start := time.Now()
	for range n {
		if err := round(); err != nil {
			return 0, err
		}
	}
	return time.Since(start), nil
}
