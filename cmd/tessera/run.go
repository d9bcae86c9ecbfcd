package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tessera-amt/tessera/internal/affinity"
	"github.com/tessera-amt/tessera/internal/jobenv"
	"github.com/tessera-amt/tessera/runtime"
)

// runOptions describes one job: N localities of one program.
type runOptions struct {
	N     int           // number of localities
	Grace time.Duration // after a non-zero exit, how long the others may take to exit
	Prog  string        // program to run; looked up in PATH when it has no slash
	Args  []string      // arguments of prog

	// Env is the environment the children start from; nil means
	// os.Environ(). The TESSERA_* variables of the job replace any
	// inherited ones (jobenv.Launch.Environ).
	Env []string

	// Signals delivers the signals to forward to every child still
	// running; nil forwards none.
	Signals <-chan os.Signal

	// Tracing, from --trace, --trace-format and --profile: passed to the
	// localities as TESSERA_TRACE, TESSERA_TRACE_FORMAT and
	// TESSERA_PROFILE (replacing inherited ones); "" leaves them as they are.
	TraceDir, TraceFormat, Profile string

	// Parcelport, from --parcelport: tcp, nbio, shm or ucx, passed to the
	// localities as TESSERA_PARCELPORT; "" leaves it as it is.
	Parcelport string

	// Progress, from --progress: block or poll, passed to the localities
	// as TESSERA_PROGRESS; "" leaves it as it is.
	Progress string

	// Bind, from --bind: none (or "") lets the system place the
	// localities; core binds each to a block of the cores this launcher
	// may use (coreBlocks).
	Bind string

	// TCPCongestion, from --tcp-congestion: the TCP congestion control of
	// the tcp parcelport's connections, passed to the localities as
	// TESSERA_TCP_CONGESTION; "" leaves it as it is.
	TCPCongestion string

	// MetricsAddr, from --metrics-addr: host:port passed to the localities
	// as TESSERA_METRICS_ADDR; locality i serves /metrics on port+i.
	// "" leaves it as it is.
	MetricsAddr string

	// Verbose, from --verbose: the localities print their failures whole
	// (TESSERA_VERBOSE=1) and the launcher notes every locality that
	// exits non-zero, besides its summary of a failed job.
	Verbose bool
}

// options are the job's options the flags set, which every locality gets
// as its TESSERA_* variables (replacing inherited ones); those left ""
// keep their inherited values.
func (o *runOptions) options() jobenv.Options {
	return jobenv.Options{Trace: o.TraceDir, TraceFormat: o.TraceFormat, Profile: o.Profile,
		Parcelport: o.Parcelport, MetricsAddr: o.MetricsAddr, Progress: o.Progress, TCPCongestion: o.TCPCongestion}
}

func (o *runOptions) validate() error {
	switch {
	case o.N < 1:
		return fmt.Errorf("the number of localities (-n) must be at least 1, not %d", o.N)
	case o.Prog == "":
		return errors.New("no program to run")
	case o.Grace < 0:
		return fmt.Errorf("--grace must not be negative, not %v", o.Grace)
	case o.Profile != "" && o.Profile != "screen" && o.Profile != "csv":
		return fmt.Errorf("--profile must be screen or csv, not %q", o.Profile)
	case o.Parcelport != "" && o.Parcelport != runtime.ParcelportTCP && o.Parcelport != runtime.ParcelportNBIO && o.Parcelport != runtime.ParcelportSHM && o.Parcelport != runtime.ParcelportUCX:
		return fmt.Errorf("--parcelport must be %s, %s, %s or %s, not %q", runtime.ParcelportTCP, runtime.ParcelportNBIO, runtime.ParcelportSHM, runtime.ParcelportUCX, o.Parcelport)
	case o.Progress != "" && o.Progress != runtime.ProgressNameBlock && o.Progress != runtime.ProgressNamePoll:
		return fmt.Errorf("--progress must be %s or %s, not %q", runtime.ProgressNameBlock, runtime.ProgressNamePoll, o.Progress)
	case o.Bind != "" && o.Bind != bindNone && o.Bind != bindCore:
		return fmt.Errorf("--bind must be %s or %s, not %q", bindNone, bindCore, o.Bind)
	case o.Bind == bindCore && !affinity.Supported:
		return fmt.Errorf("--bind %s: binding processes to cores is not supported on this system", bindCore)
	}
	if o.MetricsAddr != "" {
		// The last locality has the highest port.
		if _, err := jobenv.MetricsListenAddr(o.MetricsAddr, uint32(o.N-1)); err != nil {
			return fmt.Errorf("--metrics-addr %q for %d localities: %w", o.MetricsAddr, o.N, err)
		}
	}
	if o.TraceFormat != "" {
		for _, f := range strings.Split(o.TraceFormat, ",") {
			if f = strings.TrimSpace(f); f != "otf2" && f != "perfetto" {
				return fmt.Errorf("--trace-format: %q is not otf2 or perfetto", f)
			}
		}
		if o.TraceDir == "" {
			return errors.New("--trace-format needs --trace DIR")
		}
	}
	return nil
}

// forwardedSignals are the signals the launcher catches and passes on to the
// localities. SIGHUP and SIGQUIT are among them because the localities have
// process groups of their own and would not see them otherwise.
func forwardedSignals() []os.Signal {
	return []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}
}

// cmdRun is the run subcommand.
func cmdRun(args []string, stdout, stderr io.Writer) int {
	opts, err := parseRunArgs(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return 2
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwardedSignals()...)
	defer signal.Stop(sigs)
	opts.Signals = sigs

	code, err := runJob(context.Background(), opts, stdout, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "tessera run: %v\n", err)
	}
	return code
}

// parseRunArgs parses the arguments of run. Whatever is wrong is reported on
// stderr; the error returned is flag.ErrHelp when help was asked for.
func parseRunArgs(args []string, stderr io.Writer) (runOptions, error) {
	var opts runOptions
	fs := newRunFlagSet(&opts)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage()) }
	if err := fs.Parse(args); err != nil {
		return runOptions{}, err // the flag package has reported it
	}
	if opts.TraceDir != "" {
		abs, err := filepath.Abs(opts.TraceDir)
		if err != nil {
			fmt.Fprintf(stderr, "tessera run: --trace %s: %v\n", opts.TraceDir, err)
			return runOptions{}, err
		}
		opts.TraceDir = abs
	}
	if fs.NArg() > 0 {
		opts.Prog, opts.Args = fs.Arg(0), fs.Args()[1:]
	}
	if err := opts.validate(); err != nil {
		fmt.Fprintf(stderr, "tessera run: %v\n", err)
		return runOptions{}, err
	}
	return opts, nil
}

// child is one locality of a running job.
type child struct {
	loc      int
	cmd      *exec.Cmd
	out, err *prefixWriter
	outR     *os.File // read ends of the output pipes
	errR     *os.File
	waitErr  error // what cmd.Wait returned
	done     bool  // its process has exited
	order    int   // once done: how many localities exited before it
	killed   bool  // the launcher sent its process group SIGKILL
	cpus     []int // the cores its process is bound to; nil: not bound
}

// start starts the locality's process. Its stdout and stderr are pipes
// that two goroutines, counted by output, copy to c.out and c.err until
// every process holding them has closed them.
func (c *child) start(output *sync.WaitGroup) error {
	outR, outW, err := os.Pipe()
	if err != nil {
		return err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return err
	}
	c.cmd.Stdout, c.cmd.Stderr = outW, errW
	if c.cpus != nil {
		err = affinity.StartOn(c.cpus, c.cmd.Start)
	} else {
		err = c.cmd.Start()
	}
	outW.Close() // the child has its own copies
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return err
	}
	c.outR, c.errR = outR, errR
	copyOut := func(r *os.File, w *prefixWriter) {
		defer output.Done()
		_, _ = io.Copy(w, r)
		r.Close()
		w.Flush()
	}
	output.Add(2)
	go copyOut(outR, c.out)
	go copyOut(errR, c.err)
	return nil
}

// runJob starts opts.N localities of opts.Prog, copies their output with
// prefixes to stdout and stderr, forwards opts.Signals to them and waits for
// all of them to exit. It returns the job's exit status: 0 if every
// locality exited 0, otherwise the status of the locality where the job
// failed first (summarize), where death by signal s counts as 128+s unless
// the launcher itself killed the locality; it ends stderr with its summary
// of the failure. When the job could not be run as asked (bad options, a
// program that cannot be started, a --trace directory that is not empty,
// ctx done) err is non-nil and the status is 2; localities already
// started are killed and waited for first. runJob returns once every
// locality has exited and its output has been copied.
func runJob(ctx context.Context, opts runOptions, stdout, stderr io.Writer) (exitCode int, err error) {
	if err := opts.validate(); err != nil {
		return 2, err
	}
	path, err := exec.LookPath(opts.Prog)
	if err != nil {
		return 2, fmt.Errorf("cannot run %q: %w", opts.Prog, err)
	}
	if err := checkTraceDir(opts.TraceDir); err != nil {
		return 2, err
	}
	secret, err := randomHex(32)
	if err != nil {
		return 2, err
	}
	jobID, err := randomHex(8)
	if err != nil {
		return 2, err
	}

	// The root listener is opened here, before any child starts, and
	// handed to locality 0 as fd 3: its address is known to everybody and
	// no other process can take the port in between.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 2, fmt.Errorf("opening the root listener: %w", err)
	}
	rootAddr := ln.Addr().String()
	rootFile, err := ln.(*net.TCPListener).File()
	ln.Close() // rootFile keeps the socket open
	if err != nil {
		return 2, fmt.Errorf("opening the root listener: %w", err)
	}
	defer rootFile.Close() // closed early, once locality 0 has started

	base := opts.Env
	if base == nil {
		base = os.Environ()
	}
	// The localities share this machine's cores: unless the user chose,
	// each gets its share, so N localities never run N times as many
	// threads as there are cores (like slurm's --cpus-per-task).
	if !slices.ContainsFunc(base, func(kv string) bool { return strings.HasPrefix(kv, "GOMAXPROCS=") }) {
		base = append(slices.Clip(base), "GOMAXPROCS="+strconv.Itoa(coresPerLocality(goruntime.NumCPU(), opts.N)))
	}
	// What every locality is told; each its own number, and locality 0 its
	// listener too.
	job := jobenv.Launch{
		Source:         jobenv.Launcher,
		NumLocalities:  uint32(opts.N),
		RootAddr:       rootAddr,
		ListenHost:     "127.0.0.1",
		NodeLocalities: opts.N,
		NodeCPUs:       goruntime.NumCPU(),
		Secret:         secret,
		JobID:          jobID,
		Options:        opts.options(),
	}

	// Where the localities that fail write their reports, which the
	// summary of the job is made of.
	reports, err := os.MkdirTemp("", "tessera-run-")
	if err != nil {
		return 2, fmt.Errorf("making a directory for the localities' reports: %w", err)
	}
	defer os.RemoveAll(reports)
	reportEnv := []string{jobenv.VarFailureDir + "=" + reports}
	if opts.Verbose {
		reportEnv = append(reportEnv, jobenv.VarVerbose+"=1")
	}

	outSink := &syncWriter{w: stdout}
	errSink := &syncWriter{w: stderr}
	note := func(format string, args ...any) {
		errSink.writeLine([]byte("[tessera] " + fmt.Sprintf(format, args...) + "\n"))
	}
	if opts.MetricsAddr != "" {
		for i := range opts.N {
			addr, _ := jobenv.MetricsListenAddr(opts.MetricsAddr, uint32(i)) // checked by validate
			note("locality %d serves metrics at http://%s/metrics", i, addr)
		}
	}

	var blocks [][]int
	if opts.Bind == bindCore {
		cpus, err := affinity.Allowed()
		if err != nil {
			return 2, fmt.Errorf("--bind %s: %w", bindCore, err)
		}
		blocks = coreBlocks(cpus, opts.N)
	}
	children := make([]*child, 0, opts.N)
	exited := make(chan *child, opts.N)
	var output sync.WaitGroup
	defer output.Wait() // when starting a locality failed
	killAll := func() {
		for _, c := range children {
			if !c.done {
				c.killed = true
				_ = signalLocality(c.cmd.Process, os.Kill)
			}
		}
	}
	for i := range opts.N {
		c := &child{
			loc: i,
			cpus: func() []int {
				if blocks == nil {
					return nil
				}
				return blocks[i]
			}(),
			out: newPrefixWriter(outSink, fmt.Sprintf("[L%d] ", i)),
			err: newPrefixWriter(errSink, fmt.Sprintf("[L%d] ", i)),
		}
		cmd := exec.Command(path, opts.Args...)
		cmd.Args[0] = opts.Prog
		loc := job
		loc.Locality = uint32(i)
		if i == 0 {
			loc.RootFD = jobenv.RootFD
			cmd.ExtraFiles = []*os.File{rootFile} // jobenv.RootFD in the child
		}
		cmd.Env = append(loc.Environ(base), reportEnv...)
		cmd.SysProcAttr = childSysProcAttr()
		c.cmd = cmd
		err := c.start(&output)
		if i == 0 {
			rootFile.Close() // locality 0 owns the listener now
		}
		if err != nil {
			killAll()
			for range children {
				<-exited
			}
			return 2, fmt.Errorf("starting locality %d: %w", i, err)
		}
		children = append(children, c)
		go func() {
			c.waitErr = cmd.Wait()
			// Kill what the locality left behind in its process group,
			// which could hold its output open. Right after the wait,
			// the group's id cannot have been reused.
			_ = signalLocality(cmd.Process, os.Kill)
			exited <- c
		}()
	}

	var (
		failed  bool // a locality has exited non-zero
		exits   int  // localities that have exited
		running = len(children)
		graceC  <-chan time.Time
		ctxErr  error
		done    = ctx.Done()
	)
	for running > 0 {
		select {
		case c := <-exited:
			c.done = true
			c.order = exits
			exits++
			running--
			code, desc := exitStatus(c)
			if code == 0 {
				continue
			}
			if opts.Verbose {
				note("locality %d %s", c.loc, desc)
			}
			if failed {
				continue
			}
			failed = true
			if running > 0 {
				others := fmt.Sprintf("%d other localities", running)
				if running == 1 {
					others = "the other locality"
				}
				if opts.Verbose {
					note("waiting up to %v for %s to exit", opts.Grace, others)
				}
				t := time.NewTimer(opts.Grace)
				defer t.Stop()
				graceC = t.C
			}
		case sig := <-opts.Signals:
			for _, c := range children {
				if !c.done {
					_ = signalLocality(c.cmd.Process, sig)
				}
			}
		case <-graceC:
			graceC = nil
			var locs []string
			for _, c := range children {
				if !c.done {
					locs = append(locs, strconv.Itoa(c.loc))
				}
			}
			note("killing localities still running after %v: %s", opts.Grace, strings.Join(locs, " "))
			killAll()
		case <-done:
			done = nil
			ctxErr = ctx.Err()
			killAll()
		}
	}

	// Wait for the output to be copied. Only processes that left the
	// localities' process groups can still hold it open; once ctx is done,
	// give the copying a moment, then stop reading.
	copied := make(chan struct{})
	go func() {
		output.Wait()
		close(copied)
	}()
	select {
	case <-copied:
	case <-ctx.Done():
		ctxErr = ctx.Err()
		t := time.NewTimer(time.Second)
		defer t.Stop()
		select {
		case <-copied:
		case <-t.C:
			for _, c := range children {
				c.outR.Close()
				c.errR.Close()
			}
			<-copied
		}
	}
	if ctxErr != nil {
		return 2, ctxErr
	}
	lines, status := summarize(exitReports(children, reports))
	for _, l := range lines {
		note("%s", l)
	}
	return status, nil
}

// exitStatus returns what an exited child contributes to the job's exit
// status, and says how it exited.
func exitStatus(c *child) (code int, desc string) {
	ps := c.cmd.ProcessState
	if ps == nil {
		return 1, fmt.Sprintf("failed: %v", c.waitErr)
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		if c.killed {
			return 0, "was killed by the launcher"
		}
		code = 128 + int(ws.Signal())
		return code, fmt.Sprintf("was killed by signal %q (status %d)", ws.Signal(), code)
	}
	code = ps.ExitCode()
	return code, fmt.Sprintf("exited with status %d", code)
}

// randomHex returns n random bytes from crypto/rand, hex encoded.
func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("reading random bytes: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// coresPerLocality is each locality's share of cores, at least one.
func coresPerLocality(cores, n int) int { return max(1, cores/n) }
