package runtime

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// slotStep is one event fed to a slotMachine in a test, with what Ready
// must then hold: deliveries as "waiter:payload" or "waiter:error text",
// drops as "payload:error text".
type slotStep struct {
	ev         slotEvent[int]
	deliveries []string
	drops      []string
}

func msgOf(v float64) collMsg { return collMsg{data: []float64{v}} }

func message(k slotKey, v float64) slotEvent[int] {
	return slotEvent[int]{kind: slotMessage, key: k, msg: msgOf(v)}
}

func waitFor(k slotKey, w int) slotEvent[int] {
	return slotEvent[int]{kind: slotWait, key: k, waiter: w}
}

func describe(ds []slotDelivery[int], drops []slotDrop) (d, p []string) {
	for _, x := range ds {
		s := fmt.Sprint(x.waiter, ":")
		if x.err != nil {
			s += x.err.Error()
		} else {
			s += fmt.Sprint(x.msg.data)
		}
		d = append(d, s)
	}
	for _, x := range drops {
		p = append(p, fmt.Sprint(x.msg.data, ":", x.err))
	}
	slices.Sort(d)
	slices.Sort(p)
	return d, p
}

// The mailbox's state machine, fed events in a fixed order, without
// goroutines: whichever of a message and its waiter comes second
// completes the pair; failures end waiters and drop messages.
func TestSlotMachine(t *testing.T) {
	k1 := slotKey{gen: 1, step: 0, from: 1}
	k1b := slotKey{gen: 1, step: 1, from: 2}
	k2 := slotKey{gen: 2, step: 0, from: 1}
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
			{ev: slotEvent[int]{kind: slotMessage, key: k1, err: lost}},
			{ev: waitFor(k1, 7), deliveries: []string{"7:lent value: gone"}},
		}, 0},
		{"abort ends its generation only", []slotStep{
			{ev: waitFor(k1, 7)},
			{ev: message(k1b, 3)},
			{ev: waitFor(k2, 8)},
			{ev: slotEvent[int]{kind: slotAbort, gen: 1, err: aborted},
				deliveries: []string{"7:generation aborted"}, drops: []string{"[3]:generation aborted"}},
			{ev: waitFor(k1b, 9), deliveries: []string{"9:generation aborted"}},
			{ev: message(k1, 4), drops: []string{"[4]:generation aborted"}},
			{ev: slotEvent[int]{kind: slotAbort, gen: 1, err: errors.New("again")}},
			{ev: message(k2, 5), deliveries: []string{"8:[5]"}},
		}, 0},
		{"fail ends everything, now and later", []slotStep{
			{ev: waitFor(k1, 7)},
			{ev: message(k2, 2)},
			{ev: slotEvent[int]{kind: slotFail, err: down},
				deliveries: []string{"7:locality 3 down"}, drops: []string{"[2]:locality 3 down"}},
			{ev: waitFor(k2, 8), deliveries: []string{"8:locality 3 down"}},
			{ev: message(k1b, 3), drops: []string{"[3]:locality 3 down"}},
			{ev: slotEvent[int]{kind: slotAbort, gen: 1, err: aborted}},
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
			var m slotMachine[int]
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
			if n := m.len(); n != c.left {
				t.Errorf("%d left waiting, want %d", n, c.left)
			}
		})
	}
}

// pending and failed answer what the mailbox asks before it posts a
// receive.
func TestSlotMachineQueries(t *testing.T) {
	var m slotMachine[int]
	k := slotKey{gen: 3, step: 1, from: 0}
	if m.pending(k) || m.failed(3) != nil {
		t.Fatal("an empty machine has a pending slot or a failed generation")
	}
	m.Step(message(k, 1))
	if !m.pending(k) || m.pending(slotKey{gen: 3, step: 2}) {
		t.Error("pending does not tell the message's slot from another")
	}
	m.Step(slotEvent[int]{kind: slotAbort, gen: 3, err: errors.New("mismatch")})
	m.Advance()
	if m.pending(k) || m.failed(3) == nil || m.failed(4) != nil {
		t.Error("after the abort of generation 3: pending or failed wrong")
	}
	m.Step(slotEvent[int]{kind: slotFail, err: errors.New("down")})
	if err := m.failed(4); err == nil || !strings.Contains(err.Error(), "down") {
		t.Errorf("after the locality failed, generation 4: %v", err)
	}
}
