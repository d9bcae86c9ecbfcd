package runtime

import (
	"context"
	"time"

	"github.com/tessera-amt/tessera/internal/tick"
)

// Mismatches that exchange no message. Sites compare their calls when a
// message arrives, but some mismatched pairs send nothing to each other —
// Gather against Scatter on two sites: each waits for the other. So a site
// whose wait lasts probeAfter sends a probe (its operation and count) to
// the site it waits for. One watchdog goroutine per locality finds the
// long waits (a wait costs no timer of its own, and the watchdog's ticker
// is no Go timer either: see internal/tick): it ticks every
// probeAfter/2 and probes for each wait that has seen two ticks, so a probe
// goes out between probeAfter/2 and probeAfter into a wait. The receiver compares the probe with the call it
// runs, or ran, in that generation — or keeps it until it gets there — and
// on a disagreement fails the generation on every site, as a mismatch found
// on a message does.

const (
	// probeAfter is how long a wait lasts before the waiting site probes.
	probeAfter = 100 * time.Millisecond
	// probeStep marks a probe among a generation's messages.
	probeStep = ^uint32(0)
	// keptGenerations is how many past generations of a communicator a
	// locality remembers its calls for, to answer late probes.
	keptGenerations = 64
)

// collCall is what a locality calls in one generation of a communicator.
type collCall struct {
	c      *Communicator
	op     collOp
	count  uint64
	expect uint64
}

// enter records the call this locality makes in generation gen and checks
// the probes that came before it. It returns the mismatch found, if any.
func (m *collMailbox) enter(c *Communicator, gen uint64, op collOp, count, expect uint64) *MismatchError {
	b := c.box
	m.mu.Lock()
	b.calls[gen%keptGenerations] = keptCall{gen, collCall{c: c, op: op, count: count, expect: expect}}
	var early []collMsg
	if len(b.probes) > 0 {
		early = b.probes[gen]
		delete(b.probes, gen)
	}
	m.mu.Unlock()
	for _, p := range early {
		if e := probeMismatch(c, gen, collCall{op: op, count: count, expect: expect}, p); e != nil {
			return e
		}
	}
	return nil
}

// probe handles a probe from another site: a mismatch with this locality's
// call in that generation fails the generation everywhere.
func (rt *Runtime) probe(b *collBox, p collMsg) {
	m := &rt.coll
	m.mu.Lock()
	kept := b.calls[p.gen%keptGenerations]
	if kept.gen != p.gen || p.gen == 0 {
		if b.probes == nil {
			b.probes = make(map[uint64][]collMsg)
		}
		b.probes[p.gen] = append(b.probes[p.gen], p)
		m.mu.Unlock()
		return
	}
	mine := kept.call
	m.mu.Unlock()
	if e := probeMismatch(mine.c, p.gen, mine, p); e != nil {
		r := &opRun{c: mine.c, gen: p.gen}
		r.abort(e)
	}
}

// probeMismatch compares a probe with this locality's call.
func probeMismatch(c *Communicator, gen uint64, mine collCall, p collMsg) *MismatchError {
	if p.op == mine.op && (mine.expect == anyCount || p.count == anyCount || p.count == mine.expect) {
		return nil
	}
	return &MismatchError{Basename: c.name, Generation: gen, Calls: [2]CollectiveCall{
		{Site: c.here, Locality: c.rt.here, Op: mine.op.String(), Count: countOf(mine.count)},
		{Site: int(p.from), Locality: p.source, Op: p.op.String(), Count: countOf(p.count)},
	}}
}

// await waits for f, the message from site from; while it waits, the
// locality's watchdog may probe that site.
func (r *opRun) await(f *Future[collMsg], from int) (collMsg, error) {
	if f.IsReady() || r.op == opChannel { // a channel's Get may wait for its Set at will
		return f.Get(r.ctx)
	}
	m := &r.c.rt.coll
	m.mu.Lock()
	if m.waits == nil {
		m.waits = make(map[*opRun]collWait)
	}
	m.waits[r] = collWait{from: from, tick: m.tick}
	m.mu.Unlock()
	msg, err := f.Get(r.ctx)
	m.mu.Lock()
	delete(m.waits, r)
	m.mu.Unlock()
	return msg, err
}

// collWait is a run's wait for a message: from which site, since which
// watchdog tick, and whether it has probed already.
type collWait struct {
	from   int
	tick   uint64
	probed bool
}

// watchWaits is the locality's watchdog of collective waits (see the top
// of this file); it runs from the first communicator to the locality's end.
func (rt *Runtime) watchWaits() {
	t := tick.New(probeAfter / 2)
	defer context.AfterFunc(rt.ctx, t.Close)()
	defer t.Close()
	m := &rt.coll
	// Copies of the runs to probe for, taken under m.mu: a run changes
	// itself (its count) only between waits, when it is not in m.waits.
	var due []opRun
	var to []int
	for t.Wait() {
		due, to = due[:0], to[:0]
		m.mu.Lock()
		m.tick++
		for r, w := range m.waits {
			if !w.probed && m.tick-w.tick >= 2 {
				w.probed = true
				m.waits[r] = w
				due, to = append(due, *r), append(to, w.from)
			}
		}
		m.mu.Unlock()
		for i := range due {
			due[i].Send(probeStep, to[i], nil) // best effort: a lost probe only means no diagnosis
		}
	}
}
