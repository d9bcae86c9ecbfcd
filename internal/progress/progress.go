// Package progress tells a user how far a long phase of a program has got:
// a live bar (github.com/schollz/progressbar) when the output is a
// terminal, a plain line every few seconds otherwise (a log, a launcher
// that prefixes lines), and nothing when quiet. It measures nothing
// itself: the phase's owner counts with Add.
//
// A phase that ends before the first plain line is due prints nothing, so
// short runs stay as terse as before.
package progress

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"
)

// Unit names what a phase counts ("users", "rows"); Bytes is shown in
// kB, MB and GB.
type Unit string

// Bytes counts bytes.
const Bytes Unit = "bytes"

// Config says where and how progress is shown. Its zero value shows
// nothing.
type Config struct {
	Out      io.Writer     // where lines or the bar go; nil: nowhere
	Terminal bool          // Out is a terminal: draw a live bar
	Every    time.Duration // plain lines' period; 0: 5s
	Quiet    bool          // show nothing
}

// Phase is one long step being counted. Its methods are safe for
// concurrent use; a nil *Phase counts nothing.
type Phase struct {
	cfg   Config
	name  string
	unit  Unit
	total int64
	start time.Time
	done  atomic.Int64

	mu      sync.Mutex
	bar     *progressbar.ProgressBar
	stop    chan struct{}
	stopped chan struct{}
	printed bool // a plain line went out: Finish sums up
}

// Start begins a phase named name, of total units (0 or less: unknown).
func Start(cfg Config, name string, total int64, unit Unit) *Phase {
	if cfg.Quiet || cfg.Out == nil {
		return nil
	}
	if cfg.Every <= 0 {
		cfg.Every = 5 * time.Second
	}
	p := &Phase{cfg: cfg, name: name, unit: unit, total: total, start: time.Now()}
	if cfg.Terminal {
		opts := []progressbar.Option{
			progressbar.OptionSetWriter(cfg.Out),
			progressbar.OptionSetDescription(name),
			progressbar.OptionThrottle(100 * time.Millisecond),
			progressbar.OptionShowCount(),
			progressbar.OptionShowElapsedTimeOnFinish(),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(cfg.Out) }),
		}
		if unit == Bytes {
			opts = append(opts, progressbar.OptionShowBytes(true))
		} else {
			opts = append(opts, progressbar.OptionShowIts(), progressbar.OptionSetItsString(string(unit)))
		}
		if total <= 0 {
			total = -1 // a spinner
		}
		p.bar = progressbar.NewOptions64(total, opts...)
		return p
	}
	p.stop, p.stopped = make(chan struct{}), make(chan struct{})
	go p.tick(p.stop)
	return p
}

// Add counts n more units done.
func (p *Phase) Add(n int64) {
	if p == nil {
		return
	}
	p.done.Add(n)
	if p.bar != nil {
		p.mu.Lock()
		_ = p.bar.Add64(n)
		p.mu.Unlock()
	}
}

// Finish ends the phase: the bar completes, and a phase that printed plain
// lines prints its total and rate. Finishing twice is harmless.
func (p *Phase) Finish() {
	if p == nil {
		return
	}
	if p.bar != nil {
		p.mu.Lock()
		if !p.bar.IsFinished() {
			_ = p.bar.Finish()
		}
		p.mu.Unlock()
		return
	}
	p.mu.Lock()
	stop := p.stop
	p.stop = nil
	p.mu.Unlock()
	if stop == nil {
		return
	}
	close(stop)
	<-p.stopped
	if p.printed {
		fmt.Fprintln(p.cfg.Out, p.line(true))
	}
}

// tick prints a plain line every period until Finish.
func (p *Phase) tick(stop <-chan struct{}) {
	defer close(p.stopped)
	t := time.NewTicker(p.cfg.Every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			fmt.Fprintln(p.cfg.Out, p.line(false))
			p.printed = true
		}
	}
}

// line is the plain report: "name: 120 MB of 528 MB (23%), 24.1 MB/s, 5.0 s".
func (p *Phase) line(final bool) string {
	done := p.done.Load()
	secs := time.Since(p.start).Seconds()
	s := p.name + ": " + p.amount(done)
	if p.total > 0 && !final {
		s += fmt.Sprintf(" of %s (%.0f%%)", p.amount(p.total), 100*float64(done)/float64(p.total))
	}
	if final {
		s += " done"
	}
	if secs > 0 {
		s += ", " + p.amount(int64(float64(done)/secs)) + "/s"
	}
	return s + fmt.Sprintf(", %.1f s", secs)
}

func (p *Phase) amount(n int64) string {
	if p.unit != Bytes {
		return fmt.Sprint(n, " ", p.unit)
	}
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f kB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
