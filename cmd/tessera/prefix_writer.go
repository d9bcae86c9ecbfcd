package main

import (
	"bytes"
	"io"
	"sync"
)

// maxLineBytes bounds the part of a line a prefixWriter holds while it waits
// for the newline. A longer line is emitted in pieces of this size, each
// prefixed and ended with a newline, so a child that writes megabytes
// without a newline cannot make the launcher's memory grow without bound.
const maxLineBytes = 1 << 20

// syncWriter is one destination (the launcher's stdout or stderr) shared by
// the prefixWriters of all children. Every line reaches it with one Write,
// made under its mutex, so lines of different children never interleave.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

// writeLine writes one complete line. Errors are dropped on purpose: a
// launcher that can no longer write its output must still drain its
// children's pipes, or they would block writing to them.
func (s *syncWriter) writeLine(line []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, _ = s.w.Write(line)
}

// prefixWriter turns the byte stream of one child's stdout or stderr into
// lines that start with prefix, and writes each complete line to dst with a
// single Write. It is used by one goroutine at a time: the one copying the
// child's pipe, then the one that calls Flush after the child has exited.
type prefixWriter struct {
	dst    *syncWriter
	prefix []byte
	max    int // most bytes of one line held before it is emitted in pieces

	// buf is empty, or prefix followed by the start of a line that has not
	// seen its newline yet.
	buf []byte
}

func newPrefixWriter(dst *syncWriter, prefix string) *prefixWriter {
	return &prefixWriter{dst: dst, prefix: []byte(prefix), max: maxLineBytes}
}

// Write never fails and always consumes all of p.
func (w *prefixWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if len(w.buf) == 0 {
			w.buf = append(w.buf, w.prefix...)
		}
		room := w.max - (len(w.buf) - len(w.prefix)) // never negative
		i := bytes.IndexByte(p, '\n')
		switch {
		case i >= 0 && i <= room:
			w.buf = append(w.buf, p[:i+1]...)
			p = p[i+1:]
			w.emit()
		case i < 0 && len(p) <= room:
			w.buf = append(w.buf, p...)
			p = nil
		default:
			// The line is longer than max: emit the piece that fits.
			w.buf = append(w.buf, p[:room]...)
			w.buf = append(w.buf, '\n')
			p = p[room:]
			w.emit()
		}
	}
	return n, nil
}

// Flush writes a final line that has no newline, adding the newline.
func (w *prefixWriter) Flush() {
	if len(w.buf) == 0 {
		return
	}
	w.buf = append(w.buf, '\n')
	w.emit()
}

// emit writes buf, which holds a complete line, and empties it.
func (w *prefixWriter) emit() {
	w.dst.writeLine(w.buf)
	if cap(w.buf) > 64<<10 {
		w.buf = nil // do not keep the memory of one long line for good
	} else {
		w.buf = w.buf[:0]
	}
}
