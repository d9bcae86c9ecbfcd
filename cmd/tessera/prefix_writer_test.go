package main

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// callRecorder keeps every Write it gets as one element.
type callRecorder struct{ calls []string }

func (r *callRecorder) Write(p []byte) (int, error) {
	r.calls = append(r.calls, string(p))
	return len(p), nil
}

func TestPrefixWriter(t *testing.T) {
	long := strings.Repeat("x", 200<<10) // longer than bufio.Scanner's 64 KiB
	tests := []struct {
		name   string
		max    int // 0: maxLineBytes
		writes []string
		flush  bool
		want   []string // the Write calls the destination sees, in order
	}{
		{name: "nothing", writes: nil, flush: true, want: nil},
		{name: "empty write", writes: []string{""}, flush: true, want: nil},
		{name: "one line", writes: []string{"hello\n"}, want: []string{"[L0] hello\n"}},
		{name: "empty line", writes: []string{"\n"}, want: []string{"[L0] \n"}},
		{
			name:   "several lines in one write",
			writes: []string{"a\nbb\n\nccc\n"},
			want:   []string{"[L0] a\n", "[L0] bb\n", "[L0] \n", "[L0] ccc\n"},
		},
		{
			name:   "line split over writes",
			writes: []string{"he", "l", "lo\nwor", "ld\n"},
			want:   []string{"[L0] hello\n", "[L0] world\n"},
		},
		{
			name:   "partial line held without flush",
			writes: []string{"done\nno newline"},
			want:   []string{"[L0] done\n"},
		},
		{
			name:   "partial line flushed with a newline",
			writes: []string{"done\nno ", "newline"},
			flush:  true,
			want:   []string{"[L0] done\n", "[L0] no newline\n"},
		},
		{
			name:   "flush after newline adds nothing",
			writes: []string{"a\n"},
			flush:  true,
			want:   []string{"[L0] a\n"},
		},
		{
			name:   "long line in one write",
			writes: []string{long + "\nafter\n"},
			want:   []string{"[L0] " + long + "\n", "[L0] after\n"},
		},
		{
			name:   "long line in many writes",
			writes: chunks(long+"\n", 4096),
			want:   []string{"[L0] " + long + "\n"},
		},
		{
			name:   "long final line flushed",
			writes: chunks(long, 1000),
			flush:  true,
			want:   []string{"[L0] " + long + "\n"},
		},
		{
			name:   "line of exactly max bytes stays whole",
			max:    4,
			writes: []string{"abcd\nefgh", "\n"},
			want:   []string{"[L0] abcd\n", "[L0] efgh\n"},
		},
		{
			name:   "line over max is cut",
			max:    4,
			writes: []string{"abcdefghij\nxy\n"},
			want:   []string{"[L0] abcd\n", "[L0] efgh\n", "[L0] ij\n", "[L0] xy\n"},
		},
		{
			name:   "line over max across writes",
			max:    4,
			writes: []string{"ab", "cde", "f", "\n"},
			want:   []string{"[L0] abcd\n", "[L0] ef\n"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &callRecorder{}
			w := newPrefixWriter(&syncWriter{w: rec}, "[L0] ")
			if tt.max > 0 {
				w.max = tt.max
			}
			for _, s := range tt.writes {
				n, err := w.Write([]byte(s))
				if n != len(s) || err != nil {
					t.Fatalf("Write(%d bytes) = %d, %v", len(s), n, err)
				}
			}
			if tt.flush {
				w.Flush()
			}
			if len(rec.calls) != len(tt.want) {
				t.Fatalf("got %d writes %q, want %d %q", len(rec.calls), short(rec.calls), len(tt.want), short(tt.want))
			}
			for i := range tt.want {
				if rec.calls[i] != tt.want[i] {
					t.Errorf("write %d = %q, want %q", i, short(rec.calls[i:i+1]), short(tt.want[i:i+1]))
				}
			}
		})
	}
}

// TestPrefixWriterConcurrent has several writers share one destination, as
// the children of a job do, and checks that every line arrives whole.
func TestPrefixWriterConcurrent(t *testing.T) {
	const writers, lines = 8, 200
	var out bytes.Buffer
	dst := &syncWriter{w: &out}
	var wg sync.WaitGroup
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := newPrefixWriter(dst, fmt.Sprintf("[L%d] ", i))
			var stream strings.Builder
			for j := range lines {
				fmt.Fprintf(&stream, "line %d of writer %d %s\n", j, i, strings.Repeat("z", j*7))
			}
			// Odd chunk sizes so lines are cut at every possible place.
			for _, c := range chunks(stream.String(), 13+i) {
				w.Write([]byte(c))
			}
			w.Flush()
		}()
	}
	wg.Wait()

	got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(got) != writers*lines {
		t.Fatalf("got %d lines, want %d", len(got), writers*lines)
	}
	next := make([]int, writers) // the line number expected next from each writer
	for _, l := range got {
		var i int
		if _, err := fmt.Sscanf(l, "[L%d]", &i); err != nil || i < 0 || i >= writers {
			t.Fatalf("line without a good prefix: %q", short([]string{l}))
		}
		want := fmt.Sprintf("[L%d] line %d of writer %d %s", i, next[i], i, strings.Repeat("z", next[i]*7))
		if l != want {
			t.Fatalf("line %q, want %q", short([]string{l}), short([]string{want}))
		}
		next[i]++
	}
}

// chunks cuts s into pieces of n bytes.
func chunks(s string, n int) []string {
	var c []string
	for len(s) > n {
		c = append(c, s[:n])
		s = s[n:]
	}
	return append(c, s)
}

// short abbreviates long strings for failure messages.
func short(ss []string) []string {
	r := make([]string, len(ss))
	for i, s := range ss {
		if len(s) > 80 {
			s = fmt.Sprintf("%s...(%d bytes)...%s", s[:30], len(s), s[len(s)-30:])
		}
		r[i] = s
	}
	return r
}
