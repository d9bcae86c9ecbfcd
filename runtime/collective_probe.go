package runtime

import (
	"context"
	"errors"
	"time"
)

// Mismatches that exchange no message. Sites compare their calls when a
// message arrives, but some mismatched pairs send nothing to each other —
// Gather against Scatter on two sites: each waits for the other. So a site
// whose wait lasts probeAfter sends a probe (its operation and count) to
// the site it waits for. The receiver compares the probe with the call it
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
	g := genKey{c.name, gen}
	m.mu.Lock()
	if m.calls == nil {
		m.calls = make(map[genKey]collCall)
	}
	m.calls[g] = collCall{c: c, op: op, count: count, expect: expect}
	if gen > keptGenerations {
		delete(m.calls, genKey{c.name, gen - keptGenerations})
	}
	early := m.probes[g]
	delete(m.probes, g)
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
func (rt *Runtime) probe(p collMsg) {
	g := genKey{p.base, p.gen}
	m := &rt.coll
	m.mu.Lock()
	mine, ok := m.calls[g]
	if !ok {
		if m.probes == nil {
			m.probes = make(map[genKey][]collMsg)
		}
		m.probes[g] = append(m.probes[g], p)
		m.mu.Unlock()
		return
	}
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

// await waits for f; if the run has waited for probeAfter since its first
// wait that blocked (this one, or an earlier one), it probes site from
// first. The run's deadline is shared by its waits, so that a wait costs
// no timer of its own; a probe comes no later than probeAfter into a wait.
func (r *opRun) await(f *Future[collMsg], from int) (collMsg, error) {
	if !f.IsReady() && r.op != opChannel { // a channel's Get may wait for its Set at will
		if r.probe == nil || r.probe.Err() != nil {
			r.endProbe()
			r.probe, r.stopProbe = context.WithTimeout(r.ctx, probeAfter)
		}
		msg, err := f.Get(r.probe)
		if err == nil || !errors.Is(err, context.DeadlineExceeded) || r.ctx.Err() != nil {
			return msg, err
		}
		r.send(probeStep, from, nil) // best effort: a lost probe only means no diagnosis
	}
	return f.Get(r.ctx)
}

// endProbe stops the run's probe timer, if it has one.
func (r *opRun) endProbe() {
	if r.stopProbe != nil {
		r.stopProbe()
		r.probe, r.stopProbe = nil, nil
	}
}
