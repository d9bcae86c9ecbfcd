package progress

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

// buffer is a bytes.Buffer safe for the ticker's writes.
type buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// waitFor waits until out holds want, or fails after a generous bound.
func waitFor(t *testing.T, out *buffer, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in the output:\n%s", want, out)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestPlainLines(t *testing.T) {
	var out buffer
	p := Start(Config{Out: &out, Every: time.Millisecond}, "reading ratings", 4<<20, Bytes)
	p.Add(1 << 20)
	waitFor(t, &out, "reading ratings: 1.0 MB of 4.0 MB (25%), ")
	p.Add(3 << 20)
	p.Finish()
	p.Finish() // harmless
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "reading ratings: 4.0 MB done, ") || !strings.HasSuffix(last, " s") {
		t.Errorf("last line %q, want the phase's total and rate", last)
	}
	if strings.Count(out.String(), " done") != 1 {
		t.Errorf("the total is printed %d times:\n%s", strings.Count(out.String(), " done"), out.String())
	}
}

func TestShortPhaseIsSilent(t *testing.T) {
	var out buffer
	p := Start(Config{Out: &out, Every: time.Hour}, "generating", 10, "rows")
	p.Add(10)
	p.Finish()
	if out.String() != "" {
		t.Errorf("a phase shorter than one period printed %q", out.String())
	}
}

func TestQuietAndNil(t *testing.T) {
	var out buffer
	for _, cfg := range []Config{{Out: &out, Quiet: true, Every: time.Millisecond}, {Out: nil}} {
		p := Start(cfg, "x", 1, "rows")
		if p != nil {
			t.Fatalf("Start(%+v) = %v, want nil", cfg, p)
		}
		p.Add(1) // a nil phase counts nothing and does not panic
		p.Finish()
	}
	if out.String() != "" {
		t.Errorf("quiet printed %q", out.String())
	}
}

func TestTerminalBar(t *testing.T) {
	var out buffer
	p := Start(Config{Out: &out, Terminal: true}, "iterations", 3, "rows")
	for range 3 {
		p.Add(1)
	}
	p.Finish()
	s := out.String()
	if !strings.Contains(s, "iterations") || !strings.Contains(s, "3/3") {
		t.Errorf("the bar shows %q, want the phase's name and 3/3", s)
	}
}

func TestItemsLine(t *testing.T) {
	p := &Phase{name: "users", unit: "users", total: 200, start: time.Now()}
	p.done.Store(50)
	if got := p.line(false); !strings.HasPrefix(got, "users: 50 users of 200 users (25%), ") {
		t.Errorf("line = %q", got)
	}
}
