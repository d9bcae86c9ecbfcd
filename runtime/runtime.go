package runtime

import (
	"context"
	"errors"
	"fmt"
	"github.com/tessera-amt/tessera/runtime/internal/memory"
	"log/slog"
	"net"
	goruntime "runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/tessera-amt/tessera/internal/hugepage"
	"github.com/tessera-amt/tessera/internal/shm"
	"github.com/tessera-amt/tessera/parcel"
	"github.com/tessera-amt/tessera/trace"
)

// Config describes one locality of a job. The zero value of every field
// means what its comment says. Start uses the Config as given and never
// reads the environment; Main fills the fields a program leaves zero from
// it first (`tessera run`'s TESSERA_* variables, or slurm's under srun).
type Config struct {
	// The job: this locality, the job's size (at least 1), and how to
	// reach locality 0. Main takes Locality, NumLocalities, RootAddr,
	// Secret, ListenHost and the node counts below from the environment
	// when NumLocalities is 0.
	Locality      uint32
	NumLocalities uint32
	RootAddr      string // host:port where locality 0 listens
	Secret        []byte // the job secret, at least 16 bytes
	ListenHost    string // host other localities listen on; "" = all interfaces
	// Listener, if set, is this locality's listener (for locality 0 it
	// must be the one at RootAddr). Otherwise locality 0 listens on RootAddr
	// and the others on ListenHost:0.
	Listener net.Listener
	// Parcelport builds the port that delivers to h; nil: the socket
	// parcelport Transport names.
	Parcelport func(h parcel.Handler) (parcel.Parcelport, error)
	// Transport is the socket parcelport opened when Parcelport is nil:
	// ParcelportSHM ("" too: shared memory to localities on this machine,
	// tcp to the others), ParcelportTCP, ParcelportNBIO or ParcelportUCX
	// (`tessera run --parcelport`).
	Transport string

	// Progress is how the locality waits for messages: blocking or
	// busy-polling (progress.go); zero: blocking.
	Progress Progress
	// PointToPointCollectives sends every collective's data in parcels,
	// as between machines, even when all the sites of a communicator
	// share one machine (collective_node.go): for comparisons. Every
	// locality of the job must set the same.
	PointToPointCollectives bool
	// NodeLocalities is how many localities of the job run on this
	// machine, and NodeCPUs how many cores they share there; 0: unknown
	// localities and runtime.NumCPU cores (Main: as the environment says —
	// under `tessera run` all N localities and the launcher's cores, under
	// slurm its tasks on this node and SLURM_CPUS_ON_NODE). With more
	// localities than cores the tcp parcelport reads with raw system calls
	// (parcel.TCPConfig.RawReads).
	NodeLocalities int
	NodeCPUs       int
	// TCPCongestion is the TCP congestion control of the tcp parcelport's
	// connections (parcel.TCPConfig.Congestion); "": the system's default.
	TCPCongestion string

	Registry *Registry    // the actions; nil: none
	Lanes    int          // worker lanes; 0: GOMAXPROCS
	Observer TaskObserver // watches tasks; nil: nobody
	// Trace switches the tracer on (tracing.go); zero: off.
	Trace  TraceConfig
	Logger *slog.Logger // nil: slog.Default()

	// Spans reports a span for every action call sent and served and for
	// StartSpan (trace.NewOTelSpans over a TracerProvider); nil: none, at
	// no cost (spans.go).
	Spans trace.SpanHook
	// Metrics, if set, gets the locality's trace.Collector at Start, and
	// loses it when the locality ends (metrics.go).
	Metrics prometheus.Registerer
	// MetricsAddr is host:port of an HTTP listener serving the locality's
	// metrics at /metrics; locality i listens on port+i (port 0: a port of
	// the kernel's choosing). "": none.
	MetricsAddr string
	// PoisonReleased fills the memory of a released Tile with NaN when it
	// goes back for reuse, so that a slice kept past Release reads NaN
	// instead of the data of the memory's next owner: a check for tests,
	// at the cost of a pass over the memory per release. Shared memory
	// still lent to another locality is left as it is.
	PoisonReleased bool

	RecycleBytes      int           // memory of released tiles kept for reuse; 0: 256 MiB, <0: none
	StartTimeout      time.Duration // limit on the start barrier; 0: 60s
	MaxFrame          int64         // largest parcel accepted; 0: 1 GiB
	HeartbeatInterval time.Duration // 0: 500ms
	HeartbeatTimeout  time.Duration // silence that marks a peer down; 0: 5s
}

// hooks are what the package's tests change in a locality, out of the
// public Config; the zero value is what programs get.
type hooks struct {
	// mapProbe maps another locality's probe segment in the start barrier
	// (shared.go); nil: shm.Map. Tests make it fail.
	mapProbe func(from uint32, d shm.Desc) error
}

func (c *Config) validate() error {
	if c.NumLocalities == 0 {
		return errors.New("runtime: Config.NumLocalities is 0")
	}
	if c.Locality >= c.NumLocalities {
		return fmt.Errorf("runtime: locality %d out of range for a job of %d", c.Locality, c.NumLocalities)
	}
	if c.NumLocalities > 1<<GUIDLocalityBits {
		return fmt.Errorf("runtime: %d localities, at most %d", c.NumLocalities, 1<<GUIDLocalityBits)
	}
	if c.RootAddr == "" && c.NumLocalities > 1 && c.Parcelport == nil && !(c.Locality == 0 && c.Listener != nil) {
		return errors.New("runtime: Config.RootAddr is empty")
	}
	switch c.Progress {
	case ProgressDefault:
		c.Progress = ProgressBlock
	case ProgressBlock, ProgressPoll:
	default:
		return fmt.Errorf("runtime: locality %d: Config.Progress is %v, not a progress mode", c.Locality, c.Progress)
	}
	if err := checkTransport(c.Transport); err != nil {
		return fmt.Errorf("runtime: locality %d: Config.Transport: %w", c.Locality, err)
	}
	if err := c.Trace.check(); err != nil {
		return fmt.Errorf("runtime: locality %d: %w", c.Locality, err)
	}
	if c.Registry == nil {
		c.Registry = NewRegistry()
	}
	if c.NodeCPUs <= 0 {
		c.NodeCPUs = goruntime.NumCPU()
	}
	if c.Lanes <= 0 {
		c.Lanes = goruntime.GOMAXPROCS(0)
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.StartTimeout <= 0 {
		c.StartTimeout = 60 * time.Second
	}
	return nil
}

// portHandler is a Runtime as its parcelport sees it: the parcel.Handler
// callbacks (Buffer, Receive, PeerDown) are its methods, so they are not
// part of the Runtime a program holds.
type portHandler Runtime

// Runtime is one locality of a running job.
type Runtime struct {
	cfg    Config
	hooks  hooks
	here   uint32
	n      uint32
	reg    *Registry
	port   parcel.Parcelport
	sched  *scheduler
	log    *slog.Logger
	ctx    context.Context // the locality's life; its cause says why it ended
	cancel context.CancelCauseFunc

	reqSeq    atomic.Uint64
	pending   pendingTable
	callsSent atomic.Uint64
	served    atomic.Uint64

	ctl     control
	coll    collMailbox // collective messages and waiters (communicator.go)
	recycle *memory.Pool
	shared  memory.Shared // segments lent to and borrowed from localities on this machine
	nodes   nodeBoards    // the communicators' boards in shared memory (collective_node.go)
	outs    outParcels    // the parcels of calls and replies being sent
	failed  atomic.Bool
	told    chan struct{} // closed once the others were told why we failed
	tracing *tracing      // nil: not tracing (tracing.go)
	metrics metrics       // counter sources and the /metrics listener (metrics.go)
}

type pendingCall struct {
	id     uint64 // request id (pendingTable.put)
	dest   uint32
	action string
	bufs   [][]byte
	to     replier
}

// replier takes the reply to a call: its header and chunks, or the error
// that ended the call.
type replier interface {
	reply(h *parcel.Header, chunks [][]byte, err error)
}

// Start joins the job described by cfg: it opens the parcelport, meets the
// other localities at locality 0, and returns once all of them have passed
// the start barrier. ctx bounds the start only. Start uses cfg as given:
// it reads no environment variable (Main does).
func Start(ctx context.Context, cfg Config) (*Runtime, error) {
	return start(ctx, cfg, hooks{})
}

// start is Start with the tests' hooks.
func start(ctx context.Context, cfg Config, hk hooks) (*Runtime, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	rt := &Runtime{cfg: cfg, hooks: hk, here: cfg.Locality, n: cfg.NumLocalities, reg: cfg.Registry, log: cfg.Logger}
	rt.log = rt.log.With("locality", rt.here)
	keep := cfg.RecycleBytes
	if keep == 0 {
		keep = defaultRecycleBytes
	}
	rt.recycle = memory.NewPool(keep)
	rt.shared.SetLimit(keep)
	rt.ctx, rt.cancel = context.WithCancelCause(context.Background())
	rt.told = make(chan struct{})
	if err := rt.startTracing(&cfg); err != nil {
		return nil, err
	}
	var tr *trace.Tracer
	if rt.tracing != nil {
		tr = rt.tracing.tracer
	}
	rt.sched = newScheduler(rt.ctx, rt.here, cfg.Lanes, tr, cfg.Observer)
	rt.sched.rt = rt
	rt.ctl.init(rt.n)
	rt.reg.freeze()
	port, err := rt.openPort()
	if err != nil {
		rt.sched.close()
		rt.stopTracing()
		return nil, err
	}
	rt.port = port
	rt.startSampler()
	if err := rt.startMetrics(); err != nil {
		rt.shutdown(err)
		return nil, err
	}
	sctx, cancel := context.WithTimeoutCause(ctx, cfg.StartTimeout,
		fmt.Errorf("runtime: locality %d: start barrier not passed within %v", rt.here, cfg.StartTimeout))
	defer cancel()
	if err := rt.rendezvous(sctx); err != nil {
		rt.shutdown(err)
		return nil, err
	}
	return rt, nil
}

// FromContext returns the locality whose task ctx belongs to (an action's,
// a Spawn's or a continuation's ctx, or one derived from it), or nil
// outside any task. Actions use it to call further actions. The locality
// is read off the task, never set in a context: see "What a context
// carries" in the package documentation.
func FromContext(ctx context.Context) *Runtime {
	if t := taskOf(ctx); t != nil {
		return t.s.rt
	}
	return nil
}

// Here returns this locality's id.
func (rt *Runtime) Here() uint32 { return rt.here }

// NumLocalities returns the number of localities in the job.
func (rt *Runtime) NumLocalities() uint32 { return rt.n }

// Locality returns the target for calls to locality id.
func (rt *Runtime) Locality(id uint32) Target { return Target{rt, id} }

// Err returns why the locality failed, or nil while it has not.
func (rt *Runtime) Err() error {
	if rt.ctx.Err() == nil {
		return nil
	}
	err := context.Cause(rt.ctx)
	if errors.Is(err, errFinalized) {
		return nil
	}
	return err
}

// Done is closed when the locality has finalized or failed.
func (rt *Runtime) Done() <-chan struct{} { return rt.ctx.Done() }

// call sends p, an action call, and arranges for pc to get its reply.
func (rt *Runtime) call(ctx context.Context, pc *pendingCall, p *parcel.Parcel) {
	if err := rt.Err(); err != nil {
		pc.to.reply(nil, nil, err)
		return
	}
	id := rt.reqSeq.Add(1)
	p.Header.Request = id
	rt.pending.put(id, pc)
	if err := rt.Err(); err != nil {
		// fail ran between the check above and the insert: it did not see
		// this call, so fail it here.
		if pc := rt.pending.take(id); pc != nil {
			pc.to.reply(nil, nil, err)
		}
		return
	}
	rt.callsSent.Add(1)
	if err := rt.port.Send(ctx, p); err != nil {
		if pc := rt.pending.take(id); pc != nil {
			pc.to.reply(nil, nil, rt.sendError(pc.dest, err))
		}
	}
}

// sendError turns a failed send into the error a future reports.
func (rt *Runtime) sendError(dest uint32, err error) error {
	if cause := rt.Err(); cause != nil {
		return cause
	}
	if errors.Is(err, parcel.ErrPeerDown) {
		return &LocalityError{Locality: dest, Reason: reason(err)}
	}
	if errors.Is(err, parcel.ErrClosed) {
		if rt.ctx.Err() != nil {
			return ErrShutdown
		}
		return &LocalityError{Locality: dest, Reason: "it has closed its connections (finished, or failing)"}
	}
	return err
}

// Buffer implements parcel.Handler: replies go into the memory their caller
// provided; small chunks (parcel.SmallChunks) into the parcel's own room;
// others into memory given back (Tile.Release) or fresh memory aligned for float64.
func (ph *portHandler) Buffer(h *parcel.Header, i int, n int) []byte {
	rt := (*Runtime)(ph)
	// A look-up only while some call waits with memory of its own.
	if h.Kind == parcel.KindReply && rt.pending.bufs.Load() > 0 {
		if pc := rt.pending.find(h.Request); pc != nil && i < len(pc.bufs) && len(pc.bufs[i]) == n {
			return pc.bufs[i]
		}
	}
	if n <= parcel.SmallChunks {
		return nil // the port reads it into the parcel's own room
	}
	// A collective message whose receive was posted goes where it belongs.
	if h.Kind == parcel.KindControl && h.Action == ctlColl && i == 0 && rt.coll.posted.Load() > 0 {
		if b := rt.coll.postedFor(h.Source, h.Args, n); b != nil {
			return b
		}
	}
	if n%8 != 0 {
		return make([]byte, n)
	}
	// Overwritten by the read: recycled memory needs no clearing.
	if b := rt.recycle.Take(n / 8); b != nil {
		return parcel.Float64Bytes(b)
	}
	return parcel.Float64Bytes(hugepage.Float64s(n / 8))
}

// Receive implements parcel.Handler.
func (ph *portHandler) Receive(p *parcel.Parcel) {
	rt := (*Runtime)(ph)
	switch p.Header.Kind {
	case parcel.KindCall:
		rt.serve(p)
	case parcel.KindReply:
		pc := rt.pending.take(p.Header.Request)
		if pc == nil {
			rt.log.Warn("runtime: reply to no pending call", "from", p.Header.Source, "request", p.Header.Request)
			return
		}
		pc.to.reply(&p.Header, p.Chunks, nil)
	case parcel.KindControl:
		rt.control(p)
	}
}

// serve runs the action a call names as a task and replies with its result.
func (rt *Runtime) serve(p *parcel.Parcel) {
	rt.served.Add(1)
	sv := &serving{rt: rt, call: p}
	sv.e = rt.reg.lookup(p.Header.Action)
	if sv.e == nil {
		go sv.fail(parcel.CodeUnknownAction,
			fmt.Errorf("%w %q: not registered on locality %d", ErrUnknownAction, p.Header.Action, rt.here))
		return
	}
	sv.t.job = sv
	if sv.e.direct && rt.sched.runHere(&sv.t, rt.ctx, p.Header.Parent, sv.e.name) {
		return
	}
	rt.sched.submit(&sv.t, rt.ctx, p.Header.Parent, sv.e.name)
}

// serving is a call this locality serves, in one allocation: the task that
// runs its action, and the call.
type serving struct {
	t    task
	rt   *Runtime
	call *parcel.Parcel
	e    *actionEntry
}

// run is the task: it runs the action and replies.
func (sv *serving) run(ctx context.Context) {
	out := sv.rt.outs.get()
	defer sv.rt.outs.put(out)
	sv.reply(ctx, out)
}

// reply runs the action and replies in out.
func (sv *serving) reply(ctx context.Context, out *outParcel) {
	rt, h := sv.rt, &sv.call.Header
	var endSpan func(error)
	if rt.cfg.Spans != nil {
		ctx, endSpan = rt.startServeSpan(ctx, h.Source, sv.e.name, h.Trace)
	}
	args, chunks, code, err := sv.e.serve(ctx, h.Args, sv.call.Chunks, out.args[:0], out.chunks[:0])
	if endSpan != nil {
		endSpan(err)
	}
	if err != nil {
		args, chunks = rt.reg.sentinelOf(err), nil // so errors.Is works on the caller
	}
	sv.send(out, args, chunks, code, err)
}

// drop answers a call whose task will never run.
func (sv *serving) drop(err error) { go sv.fail(parcel.CodeShutdown, err) }

// fail replies to the call with code and err, and no result.
func (sv *serving) fail(code parcel.Code, err error) {
	out := sv.rt.outs.get()
	defer sv.rt.outs.put(out)
	sv.send(out, nil, nil, code, err)
}

// send replies to the call in out, unless its caller wants no reply.
func (sv *serving) send(out *outParcel, args []byte, chunks [][]byte, code parcel.Code, err error) {
	h := &sv.call.Header
	if h.Request == 0 {
		return
	}
	out.p = parcel.Parcel{Header: parcel.Header{Kind: parcel.KindReply, Dest: h.Source, Request: h.Request, Code: code, Args: args}, Chunks: chunks}
	if err != nil {
		out.p.Header.Error = err.Error()
	}
	if err := sv.rt.port.Send(sv.rt.ctx, &out.p); err != nil && sv.rt.Err() == nil {
		sv.rt.log.Warn("runtime: sending reply failed", "action", h.Action, "to", h.Source, "err", err)
	}
}

// PeerDown implements parcel.Handler: a lost peer fails the job.
func (ph *portHandler) PeerDown(peer uint32, err error) {
	rt := (*Runtime)(ph)
	if rt.ctl.exiting() {
		return // everyone is leaving; a closed connection is expected
	}
	rt.fail(&LocalityError{Locality: peer, Reason: reason(err)})
}

func reason(err error) string {
	var pe *parcel.PeerError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return strings.TrimPrefix(err.Error(), parcel.ErrPeerDown.Error()+": ")
}

// fail ends the locality with err: every pending call fails with it, and so
// does every task that asks a future afterwards with a task context. The
// other localities are told why (abort), unless they told us.
func (rt *Runtime) fail(err error) {
	if rt.ctx.Err() != nil || !rt.failed.CompareAndSwap(false, true) {
		return
	}
	rt.cancel(err)
	rt.coll.fail(err)
	rt.log.Error(msgLocalityFailed, "err", err)
	// The root cause, which the abort to the others carries unchanged (so
	// that the messages do not nest), and the locality whose loss it is.
	why := err.Error()
	var le, lost *LocalityError
	if errors.As(err, &le) {
		lost = le // this locality's own loss of a peer
		if r, ok := le.aborted(); ok {
			why, lost = r, le.lost
		}
	}
	for _, pc := range rt.pending.drain() {
		switch {
		case le == nil || le.Locality == pc.dest:
			pc.to.reply(nil, nil, err)
		case lost != nil && lost.Locality == pc.dest:
			// The call's target is lost, and another locality's abort
			// told of it before this one noticed.
			pc.to.reply(nil, nil, lost)
		default:
			// The call's own target may be alive, but the job is over.
			pc.to.reply(nil, nil, fmt.Errorf("job failed: %w", err))
		}
	}
	// Tell the others why, so they report the cause and not only that this
	// locality vanished — even when another locality's abort is the cause:
	// a peer may see this locality close before that abort reaches it. Only
	// now, so that a reply the abort provokes (a call's target failing on
	// it) finds its call answered already. shutdown waits for this before
	// it closes the connections.
	go func() {
		rt.broadcast(ctlAbort, abortArgs(why, lost))
		close(rt.told)
	}()
}

// Abort fails the job on purpose: the other localities are told why and
// fail too, and this one shuts down. Main calls it when the program's body
// returns an error.
func (rt *Runtime) Abort(err error) {
	rt.fail(err)
	rt.shutdown(err)
}

// shutdown releases the port and the workers. After a failure it first lets
// the abort reach the others (a second at most per peer), so that they learn
// the cause before they see this locality's connections close.
func (rt *Runtime) shutdown(cause error) {
	rt.cancel(cause)
	if rt.failed.Load() {
		<-rt.told
	}
	if rt.port != nil {
		rt.port.Close()
	}
	rt.sched.close()
	rt.stopTracing()
	rt.stopMetrics()
	rt.shared.Close()
	rt.nodes.closeAll()
}
