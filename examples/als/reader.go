package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/tessera-amt/tessera/internal/progress"
)

// share is what one locality parsed of its byte range of a ratings file.
type share struct {
	ratings  []triple // raw ids
	lines    int      // lines that start in the range (header included)
	badLine  int      // local line number (1-based) of the first bad line; 0: none
	bad      *lineError
	rangeLen int64 // bytes in the range
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
// k's byte range: a line starts in the range if its first byte does. The
// file is read bufSize bytes at a time; the ratings go into one slice sized
// from the density of lines in the first buffer, which the reader grows
// only if the rest of the range holds more lines than that predicts. After
// a bad line it goes on only counting lines, for the line numbers of the
// ranges after it. It counts the bytes it reads in ph.
func readShare(path string, k, parts int, bufSize int, ph *progress.Phase) (share, error) {
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
	sh := share{rangeLen: stop - start}
	buf := make([]byte, bufSize)
	// The format, from the file's first line.
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return share{}, err
	}
	fm := detectFormat(buf[:n])
	// Start at the byte before the range, so that a line starting exactly
	// at start is seen to start there.
	pos := max(start-1, 0)
	lr := lineReader{f: f, buf: buf, off: pos}
	if start > 0 {
		if _, _, ok, err := lr.next(); err != nil || !ok {
			return share{}, err // the rest of the file is this line: nothing starts in the range
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
			return share{}, err
		}
		if !ok {
			break
		}
		sh.lines++
		if sh.lines == 1 {
			// Size the ratings from the first buffer's lines.
			est := int64(float64(sh.rangeLen)*float64(bytes.Count(lr.buf[lr.r:lr.w], []byte("\n"))+1)/float64(max(lr.w-lr.r, 1))*1.02) + 16
			sh.ratings = make([]triple, 0, est)
		}
		if sh.bad != nil {
			continue
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		t, perr := fm.parseLine(line)
		if perr != nil {
			if fm.header && start == 0 && sh.lines == 1 && perr.col == 1 {
				continue // the header: its first field is not a number
			}
			sh.badLine, sh.bad = sh.lines, perr
			continue
		}
		sh.ratings = append(sh.ratings, t)
	}
	return sh, nil
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
