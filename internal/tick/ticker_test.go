package tick

import (
	goruntime "runtime"
	"testing"
	"time"
)

// A Ticker waits a period per tick, and on Linux it is a timerfd.
func TestTickerTicks(t *testing.T) {
	const period = 3 * time.Millisecond
	tk := New(period)
	defer tk.Close()
	if goruntime.GOOS == "linux" && tk.f == nil {
		t.Fatal("no timerfd on Linux: the ticker fell back to a Go timer")
	}
	start := time.Now()
	for i := range 3 {
		if !tk.Wait() {
			t.Fatalf("tick %d: Wait reported a closed ticker", i)
		}
	}
	if took := time.Since(start); took < 3*period-period/2 {
		t.Fatalf("3 ticks of %v came in %v", period, took)
	}
}

// Close ends a Wait in progress, and Wait after Close returns at once.
func TestTickerCloseEndsWait(t *testing.T) {
	tk := New(time.Hour)
	waited := make(chan bool)
	go func() { waited <- tk.Wait() }()
	time.Sleep(10 * time.Millisecond) // let it block
	tk.Close()
	select {
	case ok := <-waited:
		if ok {
			t.Fatal("Wait ended by Close reported a tick")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end the Wait")
	}
	if tk.Wait() {
		t.Fatal("Wait after Close reported a tick")
	}
	tk.Close() // twice is fine
}
