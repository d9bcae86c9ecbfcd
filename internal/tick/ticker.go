package tick

import (
	"os"
	"sync"
	"time"
)

// Ticker ticks at a fixed period until it is closed. One goroutine waits
// for its ticks; any goroutine may close it.
type Ticker struct {
	f      *os.File     // the timerfd (Linux), read through the poller
	t      *time.Ticker // the fallback
	closed chan struct{}
	once   sync.Once
}

// New returns a Ticker that ticks every d, which must be positive.
func New(d time.Duration) *Ticker {
	if d <= 0 {
		panic("tick: non-positive period")
	}
	t := &Ticker{closed: make(chan struct{})}
	if t.f = timerFile(d); t.f == nil {
		t.t = time.NewTicker(d)
	}
	return t
}

// Wait blocks until the next tick and reports true, or reports false once
// t is closed (a Wait in progress then returns at once). Ticks that passed
// while nobody waited count as one.
func (t *Ticker) Wait() bool {
	if t.f != nil {
		var expirations [8]byte
		_, err := t.f.Read(expirations[:])
		return err == nil
	}
	select {
	case <-t.t.C:
		return true
	case <-t.closed:
		return false
	}
}

// Close stops t and releases its descriptor. It may be called more than
// once.
func (t *Ticker) Close() {
	t.once.Do(func() {
		close(t.closed)
		if t.f != nil {
			t.f.Close()
		} else {
			t.t.Stop()
		}
	})
}
