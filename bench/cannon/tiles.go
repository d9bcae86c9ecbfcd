package main

import (
	"bufio"
	"errors"
	"fmt"
	"github.com/tessera-amt/tessera/bench/internal/benchline"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/tessera-amt/tessera/internal/hugepage"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

// noComm runs Cannon's Dgemms on a q x q grid without communication: it
// starts q² tile processes (this command with -tile-process), waits until
// each has its tiles, then per repetition starts them together and takes
// the slowest one's time. It prints the best repetition and every one.
func noComm(n, q, repeat int, seed uint64) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	type proc struct {
		cmd *exec.Cmd
		in  io.WriteCloser
		out *bufio.Reader
	}
	procs := make([]proc, q*q)
	defer func() {
		for _, p := range procs {
			if p.cmd != nil {
				p.in.Close()
				p.cmd.Wait()
			}
		}
	}()
	for i := range procs {
		cmd := exec.Command(self, "-n", strconv.Itoa(n), "-grid", strconv.Itoa(q), "-tile-process",
			"-seed", strconv.FormatUint(seed+uint64(i), 10))
		cmd.Stderr = os.Stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			return err
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			return err
		}
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("starting tile process %d: %w", i, err)
		}
		procs[i] = proc{cmd, in, bufio.NewReader(out)}
	}
	for i, p := range procs {
		if line, err := p.out.ReadString('\n'); err != nil || line != "ready\n" {
			return fmt.Errorf("tile process %d did not get ready: %q, %v", i, line, err)
		}
	}
	var times []float64
	for range repeat {
		for _, p := range procs {
			if _, err := io.WriteString(p.in, "go\n"); err != nil {
				return err
			}
		}
		slowest := 0.0
		for i, p := range procs {
			line, err := p.out.ReadString('\n')
			if err != nil {
				return fmt.Errorf("tile process %d: %w", i, err)
			}
			s, err := strconv.ParseFloat(strings.TrimSpace(line), 64)
			if err != nil {
				return fmt.Errorf("tile process %d answered %q", i, line)
			}
			slowest = max(slowest, s)
		}
		times = append(times, slowest)
	}
	best := times[0]
	list := make([]string, len(times))
	for i, s := range times {
		best = min(best, s)
		list[i] = fmt.Sprintf("%.6f", s)
	}
	fmt.Printf("nocomm: Cannon's Dgemms of %d x %d on a %dx%d grid in %d processes at once, no communication: %.4f s\n", n, n, q, q, q*q, best)
	benchline.Print(os.Stdout, fmt.Sprintf("Nocomm/n=%d", n), len(list), benchline.Metric{Value: best, Unit: "s/op"}, benchline.Metric{Value: gflops(n, best), Unit: "GFLOP/s"})
	return nil
}

// tileProcess is one of noComm's processes: it makes q pairs of m x m
// tiles, says "ready", and for every "go" on in multiplies them into its
// tile of C (the first product setting it, the others adding to it, as
// Cannon's steps do) and answers with the seconds that took. Its tile of C
// is cleared and reused in every repetition, as a locality reuses the
// memory of the product it released (runtime.NewTile).
func tileProcess(m, q int, seed uint64, in io.Reader, out io.Writer) error {
	rng := rand.New(rand.NewPCG(seed, 1))
	as, bs := make([]blas64.General, q), make([]blas64.General, q)
	for s := range q {
		as[s], bs[s] = randomMatrix(rng, m, m), randomMatrix(rng, m, m)
	}
	if _, err := io.WriteString(out, "ready\n"); err != nil {
		return err
	}
	c := blas64.General{Rows: m, Cols: m, Stride: m, Data: hugepage.Float64s(m * m)}
	r := bufio.NewReader(in)
	for {
		line, err := r.ReadString('\n')
		if errors.Is(err, io.EOF) && line == "" {
			return nil
		}
		if err != nil || line != "go\n" {
			return fmt.Errorf("tile process: got %q, %v; want \"go\"", line, err)
		}
		start := time.Now()
		clear(c.Data)
		for s := range q {
			beta := 1.0
			if s == 0 {
				beta = 0
			}
			blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, as[s], bs[s], beta, c)
		}
		if _, err := fmt.Fprintf(out, "%.6f\n", time.Since(start).Seconds()); err != nil {
			return err
		}
	}
}
