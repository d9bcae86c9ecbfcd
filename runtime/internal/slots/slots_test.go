package slots

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// slotStep is one event fed to a Machine in a test, with what Ready
// must then hold: deliveries as "waiter:payload" or "waiter:error text",
// drops as "payload:error text".
type slotStep struct {
	ev         Event[msg, int]
	deliveries []string
	drops      []string
}

// msg is a message in these tests: its payload.
type msg []float64

func msgOf(v float64) msg { return msg{v} }

func message(k Key, v float64) Event[msg, int] {
	return Event[msg, int]{Kind: Message, Key: k, Msg: msgOf(v)}
}

func waitFor(k Key, w int) Event[msg, int] {
	return Event[msg, int]{Kind: Wait, Key: k, Waiter: w}
}

func describe(ds []Delivery[msg, int], drops []Drop[msg]) (d, p []string) {
	for _, x := range ds {
		s := fmt.Sprint(x.Waiter, ":")
		if x.Err != nil {
			s += x.Err.Error()
		} else {
			s += fmt.Sprint(x.Msg)
		}
		d = append(d, s)
	}
	for _, x := range drops {
		p = append(p, fmt.Sprint(x.Msg, ":", x.Err))
	}
	slices.Sort(d)
	slices.Sort(p)
	return d, p
}

// The mailbox's state machine, fed events in a fixed order, without
// goroutines: whichever of a message and its waiter comes second
// completes the pair; failures end waiters and drop messages.
func TestSlotMachine(t *testing.T) {
	k1 := Key{Gen: 1, Step: 0, From: 1}
	k1b := Key{Gen: 1, Step: 1, From: 2}
	k2 := Key{Gen: 2, Step: 0, From: 1}
	aborted := errors.New("generation aborted")
	down := errors.New("locality 3 down")
	lost := errors.New("lent value: gone")
	cases := []struct {
		name  string
		steps []slotStep
		left  int // messages and waiters still waiting at the end
	}{
		{"message first", []slotStep{
			{ev: message(k1, 1)},
			{ev: waitFor(k1, 7), deliveries: []string{"7:[1]"}},
		}, 0},
		{"waiter first", []slotStep{
			{ev: waitFor(k1, 7)},
			{ev: message(k2, 2)},
			{ev: message(k1, 1), deliveries: []string{"7:[1]"}},
		}, 1},
		{"a message that failed on its way", []slotStep{
			{ev: Event[msg, int]{Kind: Message, Key: k1, Err: lost}},
			{ev: waitFor(k1, 7), deliveries: []string{"7:lent value: gone"}},
		}, 0},
		{"abort ends its generation only", []slotStep{
			{ev: waitFor(k1, 7)},
			{ev: message(k1b, 3)},
			{ev: waitFor(k2, 8)},
			{ev: Event[msg, int]{Kind: Abort, Gen: 1, Err: aborted},
				deliveries: []string{"7:generation aborted"}, drops: []string{"[3]:generation aborted"}},
			{ev: waitFor(k1b, 9), deliveries: []string{"9:generation aborted"}},
			{ev: message(k1, 4), drops: []string{"[4]:generation aborted"}},
			{ev: Event[msg, int]{Kind: Abort, Gen: 1, Err: errors.New("again")}},
			{ev: message(k2, 5), deliveries: []string{"8:[5]"}},
		}, 0},
		{"fail ends everything, now and later", []slotStep{
			{ev: waitFor(k1, 7)},
			{ev: message(k2, 2)},
			{ev: Event[msg, int]{Kind: Fail, Err: down},
				deliveries: []string{"7:locality 3 down"}, drops: []string{"[2]:locality 3 down"}},
			{ev: waitFor(k2, 8), deliveries: []string{"8:locality 3 down"}},
			{ev: message(k1b, 3), drops: []string{"[3]:locality 3 down"}},
			{ev: Event[msg, int]{Kind: Abort, Gen: 1, Err: aborted}},
		}, 0},
		{"a second message or waiter of one key", []slotStep{
			{ev: message(k1, 1)},
			{ev: message(k1, 2), drops: []string{"[2]:a message for generation 1, step 0 from site 1 is here already"}},
			{ev: waitFor(k1, 7), deliveries: []string{"7:[1]"}},
			{ev: waitFor(k2, 8)},
			{ev: waitFor(k2, 9), deliveries: []string{"9:the message for generation 2, step 0 from site 1 is awaited already"}},
			{ev: message(k2, 3), deliveries: []string{"8:[3]"}},
		}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var m Machine[msg, int]
			for i, st := range c.steps {
				m.Step(st.ev)
				d, p := describe(m.Ready())
				m.Advance()
				if !slices.Equal(d, st.deliveries) || !slices.Equal(p, st.drops) {
					t.Errorf("step %d: deliveries %q, drops %q; want %q, %q", i, d, p, st.deliveries, st.drops)
				}
				if d, p := describe(m.Ready()); len(d)+len(p) != 0 {
					t.Errorf("step %d: %q, %q still ready after Advance", i, d, p)
				}
			}
			if n := m.Len(); n != c.left {
				t.Errorf("%d left waiting, want %d", n, c.left)
			}
		})
	}
}

// Pending and Failed answer what the mailbox asks before it posts a
// receive.
func TestSlotMachineQueries(t *testing.T) {
	var m Machine[msg, int]
	k := Key{Gen: 3, Step: 1, From: 0}
	if m.Pending(k) || m.Failed(3) != nil {
		t.Fatal("an empty machine has a pending slot or a failed generation")
	}
	m.Step(message(k, 1))
	if !m.Pending(k) || m.Pending(Key{Gen: 3, Step: 2}) {
		t.Error("pending does not tell the message's slot from another")
	}
	if held, waited := m.Waiting(); len(held) != 1 || held[0] != k || len(waited) != 0 {
		t.Errorf("Waiting: held %v, waited %v; want [%v], none", held, waited, k)
	}
	m.Step(Event[msg, int]{Kind: Abort, Gen: 3, Err: errors.New("mismatch")})
	m.Advance()
	if m.Pending(k) || m.Failed(3) == nil || m.Failed(4) != nil {
		t.Error("after the abort of generation 3: pending or failed wrong")
	}
	m.Step(Event[msg, int]{Kind: Fail, Err: errors.New("down")})
	if err := m.Failed(4); err == nil || !strings.Contains(err.Error(), "down") {
		t.Errorf("after the locality failed, generation 4: %v", err)
	}
}
