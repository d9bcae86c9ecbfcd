package runtime

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tessera-amt/tessera/internal/shm"
	"github.com/tessera-amt/tessera/parcel"
	"github.com/tinylib/msgp/msgp"
)

// Control verbs: the runtime's own parcels for meeting and leaving.
//
//	start:  every locality i > 0 connects to 0 and sends register(addr,
//	        node, probe); 0 sends peers(addrs, nodes, probes) to all; i
//	        maps the probes of the localities on its machine, connects to
//	        every 0 < j < i and sends ready(mapped); 0 sends start(mappers)
//	        once all are ready. A probe is a small shared memory segment
//	        (internal/shm): a locality lends its tiles only to the
//	        localities that mapped its probe (shared.go).
//	finish: every locality sends done to 0; 0 sends exit once all are done;
//	        each then closes its port with a goodbye to every peer.
//	abort:  a failing locality tells everyone why before it goes.
//	coll:   a collective operation's message (see communicator.go).
const (
	ctlRegister = "register"
	ctlPeers    = "peers"
	ctlReady    = "ready"
	ctlStart    = "start"
	ctlDone     = "done"
	ctlExit     = "exit"
	ctlAbort    = "abort"
	ctlColl     = "coll"
)

// errFinalized is the cause of a locality's context after a clean finish.
var errFinalized = errors.New("runtime: locality finalized")

type control struct {
	mu         sync.Mutex
	n          uint32
	addrs      []string // root: registered addresses
	registered uint32
	peers      []string   // everyone: the addresses from root
	nodes      []string   // root: registered machines (shm.Node); everyone: the list from root
	probes     []shm.Desc // the same for the localities' probe segments
	mapped     [][]byte   // root: mapped[i][j] = 1 when locality i mapped j's probe
	mappers    []byte     // from start: mappers[i] = 1 when locality i mapped this one's probe
	ready      uint32
	done       []bool
	ndone      uint32

	allRegistered, gotPeers, allReady, started, allDone, exit chan struct{}
	leaving                                                   atomic.Bool
}

func (c *control) init(n uint32) {
	c.n = n
	c.addrs = make([]string, n)
	c.nodes = make([]string, n)
	c.probes = make([]shm.Desc, n)
	c.mapped = make([][]byte, n)
	c.done = make([]bool, n)
	for _, ch := range []*chan struct{}{&c.allRegistered, &c.gotPeers, &c.allReady, &c.started, &c.allDone, &c.exit} {
		*ch = make(chan struct{})
	}
}

func (c *control) exiting() bool { return c.leaving.Load() }

// control handles a control parcel on the reader goroutine.
func (rt *Runtime) control(p *parcel.Parcel) {
	c := &rt.ctl
	from := p.Header.Source
	if p.Header.Action == ctlAbort {
		// Fail here, on the reader, before anything that follows on this
		// connection (its goodbye) is read.
		why, lost := readAbort(p.Header.Args)
		rt.fail(&LocalityError{Locality: from, Reason: "aborted: " + why, lost: lost})
		return
	}
	if p.Header.Action == ctlColl {
		rt.deliverColl(p)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch p.Header.Action {
	case ctlRegister:
		addr, rest, err := msgp.ReadStringBytes(p.Header.Args)
		var node string
		var probe shm.Desc
		if err == nil {
			node, rest, err = msgp.ReadStringBytes(rest)
		}
		if err == nil {
			probe, _, err = readDesc(rest)
		}
		if err != nil || rt.here != 0 || from >= c.n || c.addrs[from] != "" {
			rt.log.Warn("runtime: bad register", "from", from, "err", err)
			return
		}
		c.addrs[from], c.nodes[from], c.probes[from] = addr, node, probe
		if c.registered++; c.registered == c.n-1 {
			closeOnce(c.allRegistered)
		}
	case ctlPeers:
		peers, rest, err := readStrings(p.Header.Args)
		var nodes []string
		var probes []shm.Desc
		if err == nil {
			nodes, rest, err = readStrings(rest)
		}
		if err == nil {
			probes, err = readDescs(rest)
		}
		if err != nil || uint32(len(peers)) != c.n || uint32(len(nodes)) != c.n || uint32(len(probes)) != c.n || c.peers != nil {
			rt.log.Warn("runtime: bad peers list", "from", from, "err", err)
			return
		}
		c.peers, c.nodes, c.probes = peers, nodes, probes
		closeOnce(c.gotPeers)
	case ctlReady:
		mapped, _, err := msgp.ReadBytesBytes(p.Header.Args, nil)
		if err != nil || rt.here != 0 || from >= c.n || c.mapped[from] != nil || uint32(len(mapped)) != c.n {
			rt.log.Warn("runtime: bad ready", "from", from, "err", err)
			return
		}
		c.mapped[from] = mapped
		if c.ready++; c.ready == c.n-1 {
			closeOnce(c.allReady)
		}
	case ctlStart:
		mappers, _, err := msgp.ReadBytesBytes(p.Header.Args, nil)
		if err != nil || uint32(len(mappers)) != c.n {
			rt.log.Warn("runtime: bad start", "from", from, "err", err)
			return
		}
		c.mappers = mappers
		closeOnce(c.started)
	case ctlDone:
		c.markDone(from)
	case ctlExit:
		c.leaving.Store(true)
		closeOnce(c.exit)
	default:
		rt.log.Warn("runtime: unknown control verb", "verb", p.Header.Action, "from", from)
	}
}

// markDone counts a finished locality; c.mu is held.
func (c *control) markDone(l uint32) {
	if l >= c.n || c.done[l] {
		return
	}
	c.done[l] = true
	if c.ndone++; c.ndone == c.n {
		closeOnce(c.allDone)
	}
}

func (rt *Runtime) sendControl(ctx context.Context, to uint32, verb string, args []byte) error {
	p := &parcel.Parcel{Header: parcel.Header{Kind: parcel.KindControl, Dest: to, Action: verb, Args: args}}
	if err := rt.port.Send(ctx, p); err != nil {
		return fmt.Errorf("runtime: locality %d: sending %s to locality %d: %w", rt.here, verb, to, err)
	}
	return nil
}

// abortArgs is what an abort says: why, and which locality's loss made
// the sender fail (lost, or nil), with that loss's own reason: 4 bytes of
// lost's id + 1 (0 for none), 4 bytes of the length of its reason, the
// reason, then why.
func abortArgs(why string, lost *LocalityError) []byte {
	var id uint32
	var reason string
	if lost != nil {
		id, reason = lost.Locality+1, lost.Reason
	}
	b := binary.LittleEndian.AppendUint32(nil, id)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(reason)))
	return append(append(b, reason...), why...)
}

// readAbort reads abortArgs. Arguments too short for that layout are the
// text alone.
func readAbort(b []byte) (why string, lost *LocalityError) {
	if len(b) < 8 {
		return string(b), nil
	}
	id, n := binary.LittleEndian.Uint32(b), binary.LittleEndian.Uint32(b[4:])
	if uint64(n) > uint64(len(b)-8) {
		return string(b), nil
	}
	reason, why := string(b[8:8+n]), string(b[8+n:])
	if id == 0 {
		return why, nil
	}
	return why, &LocalityError{Locality: id - 1, Reason: reason}
}

// broadcast sends a control parcel to every other locality, at most a
// second each, ignoring failures: it is used on the way out.
func (rt *Runtime) broadcast(verb string, args []byte) {
	var wg sync.WaitGroup
	for l := uint32(0); l < rt.n; l++ {
		if l == rt.here {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			rt.sendControl(ctx, l, verb, args)
		}()
	}
	wg.Wait()
}

// wait blocks until ch is closed, the locality fails, or ctx ends.
func (rt *Runtime) wait(ctx context.Context, ch <-chan struct{}, what func() string) error {
	select {
	case <-ch:
		return nil
	case <-rt.ctx.Done():
		return context.Cause(rt.ctx)
	case <-ctx.Done():
		return fmt.Errorf("%w while waiting for %s", context.Cause(ctx), what())
	}
}

func (rt *Runtime) rendezvous(ctx context.Context) error {
	c := &rt.ctl
	if rt.n == 1 {
		return nil
	}
	node, probe := shm.Node(), rt.shared.NewProbe()
	defer rt.shared.CloseProbe()
	if rt.here == 0 {
		if err := rt.wait(ctx, c.allRegistered, func() string {
			return "localities " + c.missing(func(i uint32) bool { return c.addrs[i] != "" }) + " to register"
		}); err != nil {
			return err
		}
		c.mu.Lock()
		c.addrs[0], c.nodes[0], c.probes[0] = rt.advertised(), node, probe
		args := appendStrings(nil, c.addrs)
		args = appendStrings(args, c.nodes)
		args = appendDescs(args, c.probes)
		nodes, probes := c.nodes, c.probes
		c.mu.Unlock()
		for l := uint32(1); l < rt.n; l++ {
			if err := rt.sendControl(ctx, l, ctlPeers, args); err != nil {
				return err
			}
		}
		mapped := rt.shared.MapProbes(rt.here, nodes, probes, rt.hooks.mapProbe)
		if err := rt.wait(ctx, c.allReady, func() string { return "all localities to connect to each other" }); err != nil {
			return err
		}
		c.mu.Lock()
		c.mapped[0] = mapped
		// Locality l lends to the localities that mapped its probe: the
		// column l of mapped.
		mappers := make([][]byte, rt.n)
		for l := range mappers {
			mappers[l] = make([]byte, rt.n)
			for i := range mappers[l] {
				mappers[l][i] = c.mapped[i][l]
			}
		}
		c.mu.Unlock()
		// Lending is on here before any locality can lend: they all
		// start after this.
		rt.shared.Enable(rt.here, mappers[0])
		for l := uint32(1); l < rt.n; l++ {
			if err := rt.sendControl(ctx, l, ctlStart, msgp.AppendBytes(nil, mappers[l])); err != nil {
				return err
			}
		}
		return nil
	}
	if err := rt.port.Connect(ctx, 0, rt.cfg.RootAddr); err != nil {
		return fmt.Errorf("runtime: locality %d: reaching locality 0 at %s: %w", rt.here, rt.cfg.RootAddr, err)
	}
	reg := msgp.AppendString(msgp.AppendString(nil, rt.advertised()), node)
	if err := rt.sendControl(ctx, 0, ctlRegister, appendDesc(reg, probe)); err != nil {
		return err
	}
	if err := rt.wait(ctx, c.gotPeers, func() string { return "the address list from locality 0" }); err != nil {
		return err
	}
	c.mu.Lock()
	nodes, probes := c.nodes, c.probes
	c.mu.Unlock()
	mapped := rt.shared.MapProbes(rt.here, nodes, probes, rt.hooks.mapProbe)
	for l := uint32(1); l < rt.here; l++ {
		if err := rt.port.Connect(ctx, l, c.peers[l]); err != nil {
			return fmt.Errorf("runtime: locality %d: connecting to locality %d at %s: %w", rt.here, l, c.peers[l], err)
		}
	}
	if err := rt.sendControl(ctx, 0, ctlReady, msgp.AppendBytes(nil, mapped)); err != nil {
		return err
	}
	if err := rt.wait(ctx, c.started, func() string { return "the start signal from locality 0" }); err != nil {
		return err
	}
	c.mu.Lock()
	mappers := c.mappers
	c.mu.Unlock()
	rt.shared.Enable(rt.here, mappers)
	return nil
}

func appendStrings(b []byte, ss []string) []byte {
	b = msgp.AppendArrayHeader(b, uint32(len(ss)))
	for _, s := range ss {
		b = msgp.AppendString(b, s)
	}
	return b
}

func readStrings(b []byte) ([]string, []byte, error) {
	k, b, err := msgp.ReadArrayHeaderBytes(b)
	if err != nil {
		return nil, b, err
	}
	if int(k) > len(b) {
		return nil, b, fmt.Errorf("a list of %d strings in %d bytes", k, len(b))
	}
	ss := make([]string, k)
	for i := range ss {
		if ss[i], b, err = msgp.ReadStringBytes(b); err != nil {
			return nil, b, err
		}
	}
	return ss, b, nil
}

// missing lists the localities (but 0) for which have is false.
func (c *control) missing(have func(uint32) bool) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := ""
	for i := uint32(1); i < c.n; i++ {
		if !have(i) {
			if s != "" {
				s += ","
			}
			s += fmt.Sprint(i)
		}
	}
	return s
}

// Finalize waits until this locality has no work in flight — every call it
// sent has its reply and every task it spawned has ended, so work the
// program started and did not wait for still finishes — and every locality
// of the job has called Finalize, then shuts this one down. Until
// then it keeps serving actions for the others. It returns the job's
// failure if one happens first.
func (rt *Runtime) Finalize(ctx context.Context) error {
	c := &rt.ctl
	if err := rt.Err(); err != nil {
		rt.shutdown(err)
		return err
	}
	if rt.ctx.Err() != nil {
		return nil // finalized already
	}
	err := rt.quiesce(ctx)
	switch {
	case err != nil:
	case rt.here == 0:
		c.mu.Lock()
		c.markDone(0)
		c.mu.Unlock()
		err = rt.wait(ctx, c.allDone, func() string {
			c.mu.Lock()
			defer c.mu.Unlock()
			s := "localities"
			for i, d := range c.done {
				if !d {
					s += fmt.Sprint(" ", i)
				}
			}
			return s + " to finalize"
		})
		if err == nil {
			c.leaving.Store(true)
			for l := uint32(1); l < rt.n && err == nil; l++ {
				err = rt.sendControl(ctx, l, ctlExit, nil)
			}
		}
	default:
		err = rt.sendControl(ctx, 0, ctlDone, nil)
		if err == nil {
			err = rt.wait(ctx, c.exit, func() string { return "locality 0 to end the job" })
		}
	}
	if err != nil {
		if rt.Err() == nil {
			rt.Abort(err)
		}
		rt.shutdown(err)
		return err
	}
	rt.shutdown(errFinalized)
	return nil
}

// closeOnce closes ch unless it is closed already (a peer repeating itself
// must not crash us).
func closeOnce(ch chan struct{}) {
	select {
	case <-ch:
	default:
		close(ch)
	}
}

// quiesce waits until this locality has no work in flight: every call it
// sent has its reply, and every task it spawned (local calls, Spawn,
// continuations, actions it serves) has ended. It polls: it runs once per
// job, and a wake-up per finished task would cost every task.
func (rt *Runtime) quiesce(ctx context.Context) error {
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		calls := rt.pending.len()
		tasks := rt.sched.spawned.Load() - rt.sched.executed.Load()
		if calls == 0 && tasks == 0 {
			return nil
		}
		select {
		case <-tick.C:
		case <-rt.ctx.Done():
			return context.Cause(rt.ctx)
		case <-ctx.Done():
			return fmt.Errorf("%w while waiting for %d calls and %d tasks to end", context.Cause(ctx), calls, tasks)
		}
	}
}
