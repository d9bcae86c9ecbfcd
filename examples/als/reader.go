package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/tessera-amt/tessera/internal/progress"
)

// share is what one locality parsed of its byte range of a ratings file.
type share struct {
	chunks   [][]triple // the ratings, raw ids, one chunk per part of the range, in file order
	lines    int        // lines that start in the range (header included)
	badLine  int        // local line number (1-based) of the first bad line; 0: none
	bad      *lineError
	rangeLen int64 // bytes in the range
}

// count returns the number of ratings held.
func (sh *share) count() int {
	n := 0
	for _, c := range sh.chunks {
		n += len(c)
	}
	return n
}

// readBuffer is how much of the file a reader holds at once (a line
// longer than this grows it).
const readBuffer = 1 << 20

// byteRange returns locality k's bytes [start, stop) of a file of size
// bytes cut in parts.
func byteRange(size int64, k, parts int) (int64, int64) {
	return size * int64(k) / int64(parts), size * int64(k+1) / int64(parts)
}

// readShare parses the lines of the ratings file that start in locality
// k's byte range (a line starts in a range if its first byte does), cut
// into ways parts read at once, one per core: each part is one chunk of
// the share, so the parts are never copied together. It counts the bytes
// it reads in ph.
func readShare(path string, k, parts, ways, bufSize int, ph *progress.Phase) (share, error) {
	f, err := os.Open(path)
	if err != nil {
		return share{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return share{}, err
	}
	start, stop := byteRange(st.Size(), k, parts)
	head := make([]byte, min(4096, st.Size()))
	if _, err := f.ReadAt(head, 0); err != nil && !errors.Is(err, io.EOF) {
		return share{}, err
	}
	fm := detectFormat(head)
	ways = max(1, min(ways, int((stop-start)/int64(bufSize))+1)) // a part of at least a buffer
	got := make([]part, ways)
	var wg sync.WaitGroup
	for w := range ways {
		a, b := byteRange(stop-start, w, ways)
		wg.Go(func() { got[w] = readPart(f, fm, start+a, start+b, bufSize, ph) })
	}
	wg.Wait()
	sh := share{rangeLen: stop - start}
	for _, p := range got {
		if p.err != nil {
			return share{}, p.err
		}
		if p.bad != nil && sh.bad == nil {
			sh.badLine, sh.bad = sh.lines+p.badLine, p.bad
		}
		sh.lines += p.lines
		sh.chunks = append(sh.chunks, p.ratings)
	}
	return sh, nil
}

// part is what readPart parsed.
type part struct {
	ratings []triple
	lines   int
	badLine int // 1-based, within the part
	bad     *lineError
	err     error
}

// readPart parses the lines of f (in format fm) that start in [start,
// stop), reading bufSize bytes at a time. The ratings go into one slice
// sized from the density of lines in the first buffer, which grows only
// if the rest of the part holds more lines than that predicts. After a
// bad line it goes on only counting lines, for the line numbers of what
// follows.
func readPart(f *os.File, fm format, start, stop int64, bufSize int, ph *progress.Phase) part {
	var p part
	// Start at the byte before the range, so that a line starting exactly
	// at start is seen to start there.
	lr := lineReader{f: f, buf: make([]byte, bufSize), off: max(start-1, 0)}
	if start > 0 {
		if _, _, ok, err := lr.next(); err != nil || !ok {
			p.err = err
			return p // the rest of the file is this line: nothing starts in the range
		}
	}
	counted := lr.off
	defer func() { ph.Add(min(lr.off, stop) - counted) }()
	for lr.off < stop {
		if lr.off-counted >= 1<<20 {
			ph.Add(lr.off - counted)
			counted = lr.off
		}
		line, _, ok, err := lr.next()
		if err != nil {
			p.err = err
			return p
		}
		if !ok {
			break
		}
		p.lines++
		if p.lines == 1 {
			// Size the ratings from the first buffer's lines.
			est := int64(float64(stop-start)*float64(bytes.Count(lr.buf[lr.r:lr.w], []byte("\n"))+1)/float64(max(lr.w-lr.r, 1))*1.02) + 16
			p.ratings = make([]triple, 0, est)
		}
		if p.bad != nil {
			continue
		}
		if n := len(line); n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
		if blank(line) {
			continue
		}
		t, perr := fm.parseLine(line)
		if perr != nil {
			if fm.header && start == 0 && p.lines == 1 && perr.col == 1 {
				continue // the header: its first field is not a number
			}
			p.badLine, p.bad = p.lines, perr
			continue
		}
		p.ratings = append(p.ratings, t)
	}
	return p
}

// blank reports whether line holds only spaces and tabs.
func blank(line []byte) bool {
	for _, c := range line {
		if c != ' ' && c != '\t' {
			return false
		}
	}
	return true
}

// lineReader hands out the lines of a file from a fixed buffer.
type lineReader struct {
	f    *os.File
	buf  []byte
	r, w int   // unread bytes: buf[r:w]
	off  int64 // file offset of buf[r]
	eof  bool
}

// next returns the next line without its "\n" (valid until the next
// call) and the file offset of the line's first byte; ok is false at the
// end of the file.
func (lr *lineReader) next() (line []byte, at int64, ok bool, err error) {
	for {
		if i := bytes.IndexByte(lr.buf[lr.r:lr.w], '\n'); i >= 0 {
			line, at = lr.buf[lr.r:lr.r+i], lr.off
			lr.r += i + 1
			lr.off += int64(i + 1)
			return line, at, true, nil
		}
		if lr.eof {
			if lr.r == lr.w {
				return nil, lr.off, false, nil
			}
			line, at = lr.buf[lr.r:lr.w], lr.off
			lr.off += int64(lr.w - lr.r)
			lr.r = lr.w
			return line, at, true, nil
		}
		// Move the partial line to the front, growing the buffer if the
		// line fills it, and read more.
		if lr.r > 0 {
			lr.w = copy(lr.buf, lr.buf[lr.r:lr.w])
			lr.r = 0
		} else if lr.w == len(lr.buf) {
			lr.buf = append(lr.buf, make([]byte, len(lr.buf))...)
		}
		n, err := lr.f.ReadAt(lr.buf[lr.w:], lr.off+int64(lr.w))
		lr.w += n
		if errors.Is(err, io.EOF) {
			lr.eof = true
		} else if err != nil {
			return nil, lr.off, false, err
		}
	}
}

// errorAt is a bad line of a ratings file, as the locality that read it
// reports it.
func errorAt(path string, line int, e *lineError, locality int) error {
	return fmt.Errorf("ratings %s line %d: %s (at column %d of the line; read by locality %d)", path, line, e.msg, e.col, locality)
}
