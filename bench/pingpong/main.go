// Command pingpong measures what one Tessera action costs between two
// localities, next to plain Go TCP between two processes doing the same.
//
//	pingpong -mode tessera [-test rtt,bw]   one locality of a 2-locality job
//	                                        (TESSERA_* from the environment;
//	                                        locality 0 measures and prints)
//	pingpong -mode raw [-test rtt,bw]       the baseline: starts its peer as a
//	                                        child process of the same binary
//	pingpong -mode freeport                 prints a free TCP port on 127.0.0.1
//
// Tests:
//
//	rtt  a round trip of a 64-byte []byte: Tessera calls an action that
//	     returns its argument and waits for the reply; raw writes 64 bytes
//	     on a TCP_NODELAY connection and reads the 64 echoed back.
//	rtt-timer  (raw) rtt with a Go timer pending in each process, due in
//	     an hour: what a pending timer costs a round trip
//	rtt-work  (raw) rtt with each side busy for -rtt-work (1µs) of CPU on
//	     each message it reads before it answers: how the round trip of a
//	     program that does a little work per message moves, on a machine
//	     whose idle cores halt
//	rtt-handoff  (raw) rtt with the two goroutine hand-offs of the runtime's
//	     design: in each process a reader goroutine hands each message over
//	     a channel, to a worker goroutine that writes the echo, and to the
//	     caller that waits for its reply.
//	bw   8 MiB blocks one way: Tessera calls an action taking a []float64
//	     of 1Mi elements and returning its length, with -window calls in
//	     flight; raw writes 8 MiB blocks that the peer reads into one reused
//	     buffer. -congestion NAME makes raw's connections use that TCP
//	     congestion control instead of the system's (Linux: TCP_CONGESTION,
//	     e.g. cubic or reno; see net.ipv4.tcp_allowed_congestion_control).
//
// -peer-cpu N starts raw's peer process bound to CPU N (Linux), so that
// with the client bound to another (taskset) the two never share a core.
//
// Tessera only (the parcelports compared, `tessera run --parcelport`):
//
//	rtt-direct  rtt with the echo registered as a direct action
//	       (runtime.RegisterDirect), run by the goroutine that reads it
//	rtt-paired  rtt against raw TCP between the same two processes, in
//	       alternating bursts of -pair-burst round trips: locality 1 also
//	       echoes on a plain TCP connection (blocking reads) that locality
//	       0 dials, and locality 0 times a burst of action calls, then a
//	       burst on the plain connection (the order swapped every other
//	       round), until each has made -rtt-n. Both see the same
//	       processes, threads and placement on the cores at that moment.
//	       Prints a line with the two times of each round (.../round=R), then
//	       the medians over the rounds and the median of the per-round
//	       ratios (and the least and greatest). The localities must share
//	       a machine (the plain connection is on 127.0.0.1).
//	rtt-paired-direct  rtt-paired with the direct action of rtt-direct
//	sweep  for each size of -sweep-sizes (bytes), the time of one call
//	       carrying a []float64 of that size, waited for before the next
//	       (latency), and the payload rate with -window calls in flight
//	many   -many-senders goroutines each make -many-n calls of the 64-byte
//	       echo at once: calls per second, and parcels per write on the
//	       connection (how much the port coalesces small parcels)
//	conns  the connections locality 0 holds: peers in the port's
//	       counters and socket descriptors of the process (listener
//	       included)
//
// Each test warms up, then times -n iterations and prints one line in Go's
// benchmark format, the iterations as its count:
//
//	BenchmarkPingpong/tessera_rtt 20000 23.41 us/rtt
//	BenchmarkPingpong/raw_bw 64 2.315 GB/s
//
// (GB/s is 10^9 bytes per second of payload). -cpuprofile FILE and -trace
// FILE write a CPU profile and an execution trace per process, FILE.L0 and
// FILE.L1 for the localities, FILE.client and FILE.<test>.server for raw.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	goruntime "runtime"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"strings"
	"time"

	"github.com/tessera-amt/tessera/bench/internal/benchline"
	"github.com/tessera-amt/tessera/runtime"
)

type params struct {
	tests      map[string]bool
	rttN       int
	rttWarm    int
	rttSize    int
	rttWork    time.Duration
	bwN        int
	bwWarm     int
	bwElems    int
	window     int
	sweepSizes []int
	manyG      int
	manyN      int
	pairBurst  int
	peerAddr   string
	congestion string
	peerCPU    int
	cpuprofile string
	trace      string
}

func main() {
	var p params
	mode := flag.String("mode", "", "tessera, raw, raw-peer (internal) or freeport")
	tests := flag.String("test", "rtt,bw", "comma-separated tests: rtt, bw")
	flag.IntVar(&p.rttN, "rtt-n", 20000, "timed round trips")
	flag.IntVar(&p.rttWarm, "rtt-warmup", 2000, "round trips before timing")
	flag.IntVar(&p.rttSize, "rtt-size", 64, "bytes per round-trip message")
	flag.DurationVar(&p.rttWork, "rtt-work", time.Microsecond, "raw rtt-work: processor time each side spends on each message it reads")
	flag.IntVar(&p.bwN, "bw-n", 64, "timed blocks")
	flag.IntVar(&p.bwWarm, "bw-warmup", 8, "blocks before timing")
	flag.IntVar(&p.bwElems, "bw-elems", 1<<20, "float64 elements per block (1Mi = 8 MiB)")
	flag.IntVar(&p.window, "window", 4, "tessera bw and sweep: calls in flight")
	sweep := flag.String("sweep-sizes", "64,4096,262144,4194304,67108864", "tessera sweep: payload sizes in bytes (multiples of 8)")
	flag.IntVar(&p.manyG, "many-senders", 32, "tessera many: goroutines calling at once")
	flag.IntVar(&p.manyN, "many-n", 500, "tessera many: calls per goroutine")
	flag.IntVar(&p.pairBurst, "pair-burst", 1000, "tessera rtt-paired: round trips per burst")
	flag.StringVar(&p.peerAddr, "addr", "", "raw-peer: address to dial")
	flag.StringVar(&p.congestion, "congestion", "", "raw: TCP congestion control of the connection (Linux), e.g. cubic; empty: the system's")
	flag.IntVar(&p.peerCPU, "peer-cpu", -1, "raw: start the peer process bound to this CPU (Linux; -1: unbound)")
	flag.StringVar(&p.cpuprofile, "cpuprofile", "", "write a CPU profile here (tessera: suffixed .L<locality>; raw: .client/.server)")
	flag.StringVar(&p.trace, "trace", "", "write a Go execution trace here (suffixed like -cpuprofile)")
	flag.Parse()
	p.tests = map[string]bool{}
	for _, t := range strings.Split(*tests, ",") {
		if t = strings.TrimSpace(t); t != "" {
			p.tests[t] = true
		}
	}

	for _, v := range strings.Split(*sweep, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 8 || n%8 != 0 {
			fmt.Fprintf(os.Stderr, "pingpong: -sweep-sizes: %q is not a positive multiple of 8\n", v)
			os.Exit(2)
		}
		p.sweepSizes = append(p.sweepSizes, n)
	}

	var err error
	switch *mode {
	case "tessera":
		stop := profile(p, ".L"+os.Getenv("TESSERA_LOCALITY"))
		code := tessera(p)
		stop()
		os.Exit(code)
	case "raw":
		stop := profile(p, ".client")
		err = raw(p)
		stop()
	case "raw-peer":
		stop := profile(p, ".server")
		err = rawPeer(p)
		stop()
	case "freeport":
		err = freePort()
	default:
		err = fmt.Errorf("-mode must be tessera, raw or freeport, not %q", *mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "pingpong:", err)
		os.Exit(1)
	}
}

// profile starts the CPU profile and the execution trace that p asks for,
// in files named with suffix, and returns the function that ends them.
func profile(p params, suffix string) (stop func()) {
	var stops []func()
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "pingpong:", err)
		os.Exit(1)
	}
	if p.cpuprofile != "" {
		f, err := os.Create(p.cpuprofile + suffix)
		if err != nil {
			fail(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fail(err)
		}
		stops = append(stops, func() { pprof.StopCPUProfile(); f.Close() })
	}
	if p.trace != "" {
		f, err := os.Create(p.trace + suffix)
		if err != nil {
			fail(err)
		}
		if err := trace.Start(f); err != nil {
			fail(err)
		}
		stops = append(stops, func() { trace.Stop(); f.Close() })
	}
	return func() {
		for _, s := range stops {
			s()
		}
	}
}

// result prints one line in Go's benchmark format (bench/internal/benchline):
// the name under BenchmarkPingpong, the field "n" as the iteration count,
// "size" as a key of the name, and every other field as a metric (unitOf).
func result(name string, fields ...any) {
	n, ms := 1, []benchline.Metric(nil)
	for i := 0; i+1 < len(fields); i += 2 {
		k, s := fields[i].(string), fmt.Sprint(fields[i+1])
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			panic(fmt.Sprintf("result %s: field %s=%q is not a number", name, k, s))
		}
		switch k {
		case "n":
			n = int(v)
		case "size":
			name += "/size=" + s
		default:
			ms = append(ms, benchline.Metric{Value: v, Unit: unitOf(k)})
		}
	}
	benchline.Print(os.Stdout, "Pingpong/"+name, n, ms...)
}

// unitOf names the unit of the metric in field k: the field's name, but
// for those whose names are not units.
func unitOf(k string) string {
	switch k {
	case "us_per_rtt":
		return "us/rtt"
	case "raw_us_per_rtt":
		return "raw-us/rtt"
	case "us_per_call":
		return "us/call"
	case "gbps":
		return "GB/s"
	case "calls_per_s":
		return "calls/s"
	case "parcels_per_write":
		return "parcels/write"
	}
	return strings.ReplaceAll(k, "_", "-")
}

func usPer(d time.Duration, n int) string {
	return fmt.Sprintf("%.3f", float64(d.Nanoseconds())/1e3/float64(n))
}

func gbps(bytes int64, d time.Duration) string {
	return fmt.Sprintf("%.4f", float64(bytes)/d.Seconds()/1e9)
}

// ---- Tessera ----

func tessera(p params) int {
	reg := runtime.NewRegistry()
	echo := runtime.Register(reg, "bench.echo", func(ctx context.Context, b []byte) ([]byte, error) {
		return b, nil
	})
	// The same echo as a direct action, run by the goroutine that reads
	// the call instead of a worker (rtt-direct).
	echoDirect := runtime.RegisterDirect(reg, "bench.echo-direct", func(ctx context.Context, b []byte) ([]byte, error) {
		return b, nil
	})
	// rtt-paired: locality 1 listens for one plain TCP connection and
	// echoes messages of the size given on it until it is closed.
	rawEcho := runtime.Register(reg, "bench.raw-echo", func(ctx context.Context, size int) (int, error) {
		return rawEchoServer(size)
	})
	sink := runtime.Register(reg, "bench.sink", func(ctx context.Context, v []float64) (int, error) {
		n := len(v)
		// Done with the block: the next one is read into the same memory.
		runtime.AdoptTile(runtime.FromContext(ctx), v).Release()
		return n, nil
	})
	return runtime.Main(runtime.Config{Registry: reg}, func(ctx context.Context, rt *runtime.Runtime) error {
		if rt.NumLocalities() != 2 {
			return fmt.Errorf("pingpong -mode tessera wants a job of 2 localities, not %d", rt.NumLocalities())
		}
		if rt.Here() != 0 {
			return nil // locality 1 serves the calls until locality 0 finalizes
		}
		peer := rt.Locality(1)
		for _, t := range []struct {
			test, name string
			echo       runtime.Action[[]byte, []byte]
		}{{"rtt", "tessera_rtt", echo}, {"rtt-direct", "tessera_rtt_direct", echoDirect}} {
			if !p.tests[t.test] {
				continue
			}
			msg := make([]byte, p.rttSize)
			for i := range msg {
				msg[i] = byte(i)
			}
			round := func() error {
				r, err := runtime.Async(ctx, peer, t.echo, msg).Get(ctx)
				if err == nil && len(r) != len(msg) {
					err = fmt.Errorf("echo returned %d bytes, sent %d", len(r), len(msg))
				}
				return err
			}
			took, err := timeRounds(p.rttWarm, p.rttN, round)
			if err != nil {
				return err
			}
			result(t.name, "us_per_rtt", usPer(took, p.rttN), "n", p.rttN)
		}
		for _, t := range []struct {
			test, name string
			echo       runtime.Action[[]byte, []byte]
		}{{"rtt-paired", "tessera_rtt_paired", echo}, {"rtt-paired-direct", "tessera_rtt_paired_direct", echoDirect}} {
			if p.tests[t.test] {
				if err := paired(ctx, t.name, peer, t.echo, rawEcho, p); err != nil {
					return fmt.Errorf("%s: %w", t.test, err)
				}
			}
		}
		if p.tests["bw"] {
			block := make([]float64, p.bwElems)
			for i := range block {
				block[i] = float64(i)
			}
			// Keep -window calls in flight: wait for the oldest before the
			// next call. Async returns once the block is on the wire (Send
			// blocks until written), so the block can be sent again.
			stream := func(n int) error {
				inflight := make([]*runtime.Future[int], p.window)
				for i := range n {
					slot := i % p.window
					if f := inflight[slot]; f != nil {
						if got, err := f.Get(ctx); err != nil {
							return err
						} else if got != len(block) {
							return fmt.Errorf("sink got %d elements, sent %d", got, len(block))
						}
					}
					inflight[slot] = runtime.Async(ctx, peer, sink, block)
				}
				for _, f := range inflight {
					if f != nil {
						if err := f.Err(ctx); err != nil {
							return err
						}
					}
				}
				return nil
			}
			if err := stream(p.bwWarm); err != nil {
				return err
			}
			goruntime.GC()
			start := time.Now()
			if err := stream(p.bwN); err != nil {
				return err
			}
			d := time.Since(start)
			result("tessera_bw", "gbps", gbps(int64(p.bwN)*int64(p.bwElems)*8, d), "n", p.bwN, "window", p.window)
		}
		if p.tests["sweep"] {
			for _, size := range p.sweepSizes {
				if err := sweepSize(ctx, rt, sink, p, size); err != nil {
					return fmt.Errorf("sweep, %d bytes: %w", size, err)
				}
			}
		}
		if p.tests["many"] {
			if err := many(ctx, rt, echo, p); err != nil {
				return fmt.Errorf("many: %w", err)
			}
		}
		if p.tests["conns"] {
			sockets, err := socketFDs()
			if err != nil {
				return err
			}
			result("tessera_conns", "peers", len(rt.Counters().Peers), "sockets", sockets)
		}
		return nil
	})
}

// paired times the echo action and a plain TCP echo between the same two
// processes in alternating bursts (see rtt-paired in the command's doc).
