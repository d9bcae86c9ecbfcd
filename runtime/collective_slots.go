package runtime

import "fmt"

// Matching a communicator's messages with their waiters is a state
// machine in the shape of raft's: slotMachine is a plain value fed events
// by Step — a message arrived, a run waits for one, a generation failed,
// the locality failed — that collects what follows from them for Ready:
// the deliveries to make (a waiter with its message or error) and the
// messages nobody will read. It starts no goroutine, takes no lock and
// calls nothing. The mailbox (collMailbox) steps a box's machine under
// its mutex, takes what is ready before it lets go of the mutex, and
// fulfils the waiters' futures afterwards; tests feed a machine events in
// any order, with waiters that are plain values.
//
// Whichever of a message and its waiter comes second completes the pair:
// a message that comes first waits in the machine (run-ahead), as does a
// waiter that comes first.

// slotEventKind says what happened.
type slotEventKind uint8

const (
	slotMessage slotEventKind = iota // message key arrived: msg, and err for one that failed on its way
	slotWait                         // waiter waits for message key
	slotAbort                        // generation gen failed with err
	slotFail                         // the locality failed with err: every wait, now and later
)

// slotEvent is an input of a slotMachine.
type slotEvent[W comparable] struct {
	kind   slotEventKind
	key    slotKey
	gen    uint64 // of slotAbort
	msg    collMsg
	err    error
	waiter W
}

// slotDelivery is an output: waiter gets msg, or err.
type slotDelivery[W comparable] struct {
	waiter W
	msg    collMsg
	err    error
}

// slotDrop is an output: msg will be read by nobody, for the reason err.
type slotDrop struct {
	msg collMsg
	err error
}

// slotEntry is the first of a message and its waiter to come.
type slotEntry[W comparable] struct {
	waiting bool // a waiter, else a message (msg and err)
	waiter  W
	msg     collMsg
	err     error
}

// slotMachine is one basename's messages and waiters; its zero value is
// ready to use.
type slotMachine[W comparable] struct {
	slots   map[slotKey]slotEntry[W]
	aborted map[uint64]error // by generation
	err     error            // the locality failed

	deliveries []slotDelivery[W]
	drops      []slotDrop
}

// Step applies one event.
func (s *slotMachine[W]) Step(ev slotEvent[W]) {
	switch ev.kind {
	case slotMessage:
		if err := s.failed(ev.key.gen); err != nil {
			s.drops = append(s.drops, slotDrop{ev.msg, err})
			return
		}
		e, ok := s.slots[ev.key]
		switch {
		case !ok:
			s.put(ev.key, slotEntry[W]{msg: ev.msg, err: ev.err})
		case e.waiting:
			delete(s.slots, ev.key)
			s.deliveries = append(s.deliveries, slotDelivery[W]{e.waiter, ev.msg, ev.err})
		default: // a second message under one key: the first one stays
			s.drops = append(s.drops, slotDrop{ev.msg, fmt.Errorf("a message for generation %d, step %d from site %d is here already", ev.key.gen, ev.key.step, ev.key.from)})
		}
	case slotWait:
		if err := s.failed(ev.key.gen); err != nil {
			s.deliveries = append(s.deliveries, slotDelivery[W]{waiter: ev.waiter, err: err})
			return
		}
		e, ok := s.slots[ev.key]
		switch {
		case !ok:
			s.put(ev.key, slotEntry[W]{waiting: true, waiter: ev.waiter})
		case !e.waiting:
			delete(s.slots, ev.key)
			s.deliveries = append(s.deliveries, slotDelivery[W]{ev.waiter, e.msg, e.err})
		default: // a second waiter for one message: the first one stays
			err := fmt.Errorf("the message for generation %d, step %d from site %d is awaited already", ev.key.gen, ev.key.step, ev.key.from)
			s.deliveries = append(s.deliveries, slotDelivery[W]{waiter: ev.waiter, err: err})
		}
	case slotAbort:
		if s.failed(ev.gen) != nil {
			return
		}
		if s.aborted == nil {
			s.aborted = make(map[uint64]error)
		}
		s.aborted[ev.gen] = ev.err
		for k, e := range s.slots {
			if k.gen == ev.gen {
				delete(s.slots, k)
				s.end(e, ev.err)
			}
		}
	case slotFail:
		if s.err != nil {
			return
		}
		s.err = ev.err
		for _, e := range s.slots {
			s.end(e, ev.err)
		}
		s.slots = nil
	}
}

// Ready returns the deliveries and drops that the events since the last
// Advance led to. They stay valid until the next Step or Advance.
func (s *slotMachine[W]) Ready() ([]slotDelivery[W], []slotDrop) {
	return s.deliveries, s.drops
}

// Advance forgets what Ready returned: the caller has taken it.
func (s *slotMachine[W]) Advance() {
	clear(s.deliveries) // keeps no waiter or payload alive
	clear(s.drops)
	s.deliveries, s.drops = s.deliveries[:0], s.drops[:0]
}

// failed returns why generation gen can no longer complete, or nil.
func (s *slotMachine[W]) failed(gen uint64) error {
	if s.err != nil {
		return s.err
	}
	return s.aborted[gen]
}

// pending reports whether a message or a waiter is in slot k.
func (s *slotMachine[W]) pending(k slotKey) bool {
	_, ok := s.slots[k]
	return ok
}

// len returns the number of messages and waiters waiting for each other.
func (s *slotMachine[W]) len() int { return len(s.slots) }

func (s *slotMachine[W]) put(k slotKey, e slotEntry[W]) {
	if s.slots == nil {
		s.slots = make(map[slotKey]slotEntry[W])
	}
	s.slots[k] = e
}

// end ends entry e with err: a waiter is told, a message dropped.
func (s *slotMachine[W]) end(e slotEntry[W], err error) {
	if e.waiting {
		s.deliveries = append(s.deliveries, slotDelivery[W]{waiter: e.waiter, err: err})
	} else {
		s.drops = append(s.drops, slotDrop{e.msg, err})
	}
}
