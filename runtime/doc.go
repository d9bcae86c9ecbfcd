// Package runtime is a locality's life in a Tessera job: bootstrap from
// flags, environment or slurm; the start barrier; actions that one locality
// runs on another; futures and their combinators; tasks with job-wide GUIDs
// on a fixed number of worker lanes; failure detection and an orderly,
// never-hanging shutdown; and the performance counters.
//
// It does not move bytes (package parcel does) and does not name objects
// (package agas does); primitives and distributed arrays live above it.
//
// # A program
//
// Every locality runs the same binary (SPMD). Actions are registered, in the
// same way on every locality, before the runtime starts:
//
//	reg := runtime.NewRegistry()
//	greet := runtime.Register(reg, "hello.greet",
//		func(ctx context.Context, from uint32) (string, error) { ... })
//
//	os.Exit(runtime.Main(runtime.Config{Registry: reg},
//		func(ctx context.Context, rt *runtime.Runtime) error {
//			f := runtime.Async(ctx, rt.Locality(1), greet, rt.Here())
//			s, err := f.Get(ctx)
//			...
//		}))
//
// Main starts the locality, runs the body as the root task, finalizes, and
// returns the exit code. It is the one place the environment is read: the
// job comes from `tessera run` (TESSERA_* variables) or slurm (SLURM_*)
// when Config.NumLocalities is 0, and the job's options (TESSERA_TRACE,
// TESSERA_PROGRESS, TESSERA_PARCELPORT, TESSERA_METRICS_ADDR and the like)
// fill the Config fields the program leaves zero; the names and their
// meaning are the launch protocol of the module's internal/jobenv.
// Programs that need more control call Start, then Finalize: Start and
// StartLocal use their Config as given and read no environment, so a
// variable set in a developer's shell never changes an in-process job.
//
// # Tasks and lanes
//
// Every action execution, every Spawn and every continuation (Then,
// Dataflow) is a task: it has a GUID unique in the job — the creating
// locality in the top GUIDLocalityBits bits — and the GUID of its parent,
// carried across parcels. Tasks run on Config.Lanes worker lanes
// (GOMAXPROCS by default, like HPX worker threads). A task that waits in
// Future.Get gives its lane to another task and takes one back when the
// value arrives, so compute never oversubscribes the cores and waiting
// never starves them; a task that waits for a local task not started yet
// runs it itself instead. It waits the same way with its own context and
// with any context derived from it: a WithTimeout child only adds a
// deadline to the wait. A TaskObserver sees every start, stop, yield and
// resume, right after the tracer (when tracing is on).
//
// Caller's duties: pass the task's ctx (or one derived from it) to Get, and
// do not hand a task's ctx to goroutines of your own that call Get: the
// lane accounting belongs to the task's goroutine.
//
// # What a context carries
//
// A context.Context carries cancellation, deadlines and the trace parent —
// the task running (its GUID is the parent of the tasks and calls it
// makes) and, with Config.Spans, its span — and nothing that changes what
// an operation does. What an operation acts on is passed explicitly: the
// Target of a call, the Communicator of a collective, the Reservation
// whose generation a collective takes (Communicator.Reserve; its
// operations are its methods).
//
// The one thing found through a context is the locality: FromContext
// returns the Runtime of the task a context belongs to, so that an action
// handler, whose signature is func(ctx, A) (R, error), can call further
// actions. This is deliberate. The locality is the ambient environment a
// task executes in, like the task itself, not a setting: it is read off
// the task, which a derived context keeps, and no caller can put another
// one in (there is no WithRuntime), so no context makes the same code act
// on a different locality. An explicit parameter would say the same thing
// in every handler's signature (and in those of agas and the primitives),
// where nothing could pass anything but the locality the task runs on.
// Code outside a task gets nil, and takes its Runtime from Start or Main.
//
// # Waiting for messages
//
// Config.Progress chooses how a locality waits for the network: blocking
// in the system's poller (the default), or busy-polling as MPI does
// (`tessera run --progress poll`, TESSERA_PROGRESS=poll), which saves the
// wake-up of a sleeping process per message but keeps a core busy while it
// waits; a polling locality blocks again after 1 ms without messages
// or when it finds its cores shared (progress.go).
//
// # Failure
//
// A locality that dies, aborts or goes silent is detected by every other one
// (closed connection, heartbeats). Every pending call fails with a
// *LocalityError naming it, the runtime's context ends with that cause, and
// Main returns within 3 s. Nothing waits forever for a dead peer.
//
// A failed job is reported once, by the locality where it failed first
// (Main returns ExitFailed there), not by each locality that stopped
// because of it (ExitStopped): each classifies its failure as a failure
// record of the launcher protocol (internal/jobenv), which it writes for
// the launcher (`tessera run`), or, without one, sums up in one line.
package runtime
