// Package slots matches a communicator's messages with the operations
// waiting for them, as a state machine in the shape of raft's: a Machine
// is a plain value fed events by Step — a message arrived, a run waits for
// one, a generation failed, the locality failed — that collects what
// follows from them for Ready: the deliveries to make (a waiter with its
// message or error) and the messages nobody will read. It starts no
// goroutine, takes no lock and calls nothing. The runtime's collective
// mailbox steps a box's machine under its mutex, takes what is ready
// before it lets go of the mutex, and fulfils the waiters' futures
// afterwards; tests feed a machine events in any order, with waiters that
// are plain values.
//
// Whichever of a message and its waiter comes second completes the pair:
// a message that comes first waits in the machine (run-ahead), as does a
// waiter that comes first.
package slots

import "fmt"

// Key names a message of one basename: generation (a channel's tag),
// step and sender site.
type Key struct {
	Gen  uint64
	Step uint32
	From uint32
}

// EventKind says what happened.
type EventKind uint8

const (
	Message EventKind = iota // message Key arrived: Msg, and Err for one that failed on its way
	Wait                     // Waiter waits for message Key
	Abort                    // generation Gen failed with Err
	Fail                     // the locality failed with Err: every wait, now and later
)

// Event is an input of a Machine.
type Event[M any, W comparable] struct {
	Kind   EventKind
	Key    Key
	Gen    uint64 // of Abort
	Msg    M
	Err    error
	Waiter W
}

// Delivery is an output: waiter gets msg, or err.
type Delivery[M any, W comparable] struct {
	Waiter W
	Msg    M
	Err    error
}

// Drop is an output: msg will be read by nobody, for the reason err.
type Drop[M any] struct {
	Msg M
	Err error
}

// entry is the first of a message and its waiter to come.
type entry[M any, W comparable] struct {
	waiting bool // a waiter, else a message (msg and err)
	waiter  W
	msg     M
	err     error
}

// Machine is one basename's messages and waiters; its zero value is
// ready to use.
type Machine[M any, W comparable] struct {
	slots   map[Key]entry[M, W]
	aborted map[uint64]error // by generation
	err     error            // the locality failed

	deliveries []Delivery[M, W]
	drops      []Drop[M]
}

// Step applies one event.
func (s *Machine[M, W]) Step(ev Event[M, W]) {
	switch ev.Kind {
	case Message:
		if err := s.Failed(ev.Key.Gen); err != nil {
			s.drops = append(s.drops, Drop[M]{ev.Msg, err})
			return
		}
		e, ok := s.slots[ev.Key]
		switch {
		case !ok:
			s.put(ev.Key, entry[M, W]{msg: ev.Msg, err: ev.Err})
		case e.waiting:
			delete(s.slots, ev.Key)
			s.deliveries = append(s.deliveries, Delivery[M, W]{e.waiter, ev.Msg, ev.Err})
		default: // a second message under one key: the first one stays
			s.drops = append(s.drops, Drop[M]{ev.Msg, fmt.Errorf("a message for generation %d, step %d from site %d is here already", ev.Key.Gen, ev.Key.Step, ev.Key.From)})
		}
	case Wait:
		if err := s.Failed(ev.Key.Gen); err != nil {
			s.deliveries = append(s.deliveries, Delivery[M, W]{Waiter: ev.Waiter, Err: err})
			return
		}
		e, ok := s.slots[ev.Key]
		switch {
		case !ok:
			s.put(ev.Key, entry[M, W]{waiting: true, waiter: ev.Waiter})
		case !e.waiting:
			delete(s.slots, ev.Key)
			s.deliveries = append(s.deliveries, Delivery[M, W]{ev.Waiter, e.msg, e.err})
		default: // a second waiter for one message: the first one stays
			err := fmt.Errorf("the message for generation %d, step %d from site %d is awaited already", ev.Key.Gen, ev.Key.Step, ev.Key.From)
			s.deliveries = append(s.deliveries, Delivery[M, W]{Waiter: ev.Waiter, Err: err})
		}
	case Abort:
		if s.Failed(ev.Gen) != nil {
			return
		}
		if s.aborted == nil {
			s.aborted = make(map[uint64]error)
		}
		s.aborted[ev.Gen] = ev.Err
		for k, e := range s.slots {
			if k.Gen == ev.Gen {
				delete(s.slots, k)
				s.end(e, ev.Err)
			}
		}
	case Fail:
		if s.err != nil {
			return
		}
		s.err = ev.Err
		for _, e := range s.slots {
			s.end(e, ev.Err)
		}
		s.slots = nil
	}
}

// Ready returns the deliveries and drops that the events since the last
// Advance led to. They stay valid until the next Step or Advance.
func (s *Machine[M, W]) Ready() ([]Delivery[M, W], []Drop[M]) {
	return s.deliveries, s.drops
}

// Advance forgets what Ready returned: the caller has taken it.
func (s *Machine[M, W]) Advance() {
	clear(s.deliveries) // keeps no waiter or payload alive
	clear(s.drops)
	s.deliveries, s.drops = s.deliveries[:0], s.drops[:0]
}

// Failed returns why generation gen can no longer complete, or nil.
func (s *Machine[M, W]) Failed(gen uint64) error {
	if s.err != nil {
		return s.err
	}
	return s.aborted[gen]
}

// Pending reports whether a message or a waiter is in slot k.
func (s *Machine[M, W]) Pending(k Key) bool {
	_, ok := s.slots[k]
	return ok
}

// Len returns the number of messages and waiters waiting for each other.
func (s *Machine[M, W]) Len() int { return len(s.slots) }

func (s *Machine[M, W]) put(k Key, e entry[M, W]) {
	if s.slots == nil {
		s.slots = make(map[Key]entry[M, W])
	}
	s.slots[k] = e
}

// end ends entry e with err: a waiter is told, a message dropped.
func (s *Machine[M, W]) end(e entry[M, W], err error) {
	if e.waiting {
		s.deliveries = append(s.deliveries, Delivery[M, W]{Waiter: e.waiter, Err: err})
	} else {
		s.drops = append(s.drops, Drop[M]{e.msg, err})
	}
}

// Waiting returns the keys of the messages that wait for their waiter
// (held) and of the waiters that wait for their message (waited), in no
// order: the machine's state, for those who wait on it.
func (s *Machine[M, W]) Waiting() (held, waited []Key) {
	for k, e := range s.slots {
		if e.waiting {
			waited = append(waited, k)
		} else {
			held = append(held, k)
		}
	}
	return held, waited
}
