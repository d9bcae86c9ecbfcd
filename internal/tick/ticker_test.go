package tick

import (
	goruntime "runtime"
	"strings"
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
	if blockedInWait() {
		t.Fatal("a goroutine waits for the ticker before anyone called Wait")
	}
	waited := make(chan bool)
	go func() { waited <- tk.Wait() }()
	// Close must end a Wait in progress: close once the goroutine blocks.
	for deadline := time.Now().Add(10 * time.Second); !blockedInWait(); time.Sleep(100 * time.Microsecond) {
		if time.Now().After(deadline) {
			t.Fatal("the goroutine did not block in Wait")
		}
	}
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

// blockedInWait reports whether a goroutine is blocked in Ticker.Wait: in
// the poller, reading the timerfd, or in the fallback's select.
func blockedInWait() bool {
	buf := make([]byte, 1<<20)
	buf = buf[:goruntime.Stack(buf, true)]
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "tick.(*Ticker).Wait") && (strings.Contains(g, "[IO wait") || strings.Contains(g, "[select")) {
			return true
		}
	}
	return false
}
