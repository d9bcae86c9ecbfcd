package runtime

import (
	"context"
	"fmt"
	"github.com/tessera-amt/tessera/runtime/internal/slots"
	"time"
)

// Tests that need one event to happen before another wait for the state
// that proves the first one happened — a message held in a mailbox, a
// waiter registered there, a task queued or parked — rather than for a
// length of time, after which the event may or may not have happened.

// waitUntil returns once cond holds, or an error naming what it waited
// for once ctx ends. The sleep is the poll interval, not an order.
func waitUntil(ctx context.Context, what string, cond func() bool) error {
	for !cond() {
		if ctx.Err() != nil {
			return fmt.Errorf("waiting until %s: %w", what, context.Cause(ctx))
		}
		time.Sleep(100 * time.Microsecond)
	}
	return nil
}

// boxState is what the collective mailbox of a locality holds for one
// basename: the messages that arrived and wait for their operation, and
// the keys operations wait for whose message has not arrived.
type boxState struct {
	exists  bool // a message or a Communicator made the box
	claimed bool // a Communicator of the locality holds the basename
	held    []slots.Key
	waited  []slots.Key
}

// heldFrom counts the held messages of generation gen from site from.
func (s boxState) heldFrom(gen uint64, from uint32) int {
	n := 0
	for _, k := range s.held {
		if k.Gen == gen && k.From == from {
			n++
		}
	}
	return n
}

// heldOf counts the held messages of generation gen.
func (s boxState) heldOf(gen uint64) int {
	n := 0
	for _, k := range s.held {
		if k.Gen == gen {
			n++
		}
	}
	return n
}

// waitedOf counts the waits for messages of generation gen.
func (s boxState) waitedOf(gen uint64) int {
	n := 0
	for _, k := range s.waited {
		if k.Gen == gen {
			n++
		}
	}
	return n
}

// mailbox returns the state of rt's mailbox for basename, read from its
// slot machine under the mailbox's lock.
func mailbox(rt *Runtime, basename string) boxState {
	m := &rt.coll
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.boxes[basename]
	if b == nil {
		return boxState{}
	}
	s := boxState{exists: true, claimed: b.claimed}
	s.held, s.waited = b.slots.Waiting()
	return s
}

// awaited reports whether anybody waits for f: a task parked on it, or a
// goroutine (or a second task) on its channel.
func awaited[T any](f *Future[T]) (parked, any bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.waiter != nil, f.waiter != nil || f.wait != nil
}
