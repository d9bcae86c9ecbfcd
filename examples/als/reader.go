package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	goruntime "runtime"
	"sync"

	"github.com/tessera-amt/tessera/internal/progress"
	"github.com/tessera-amt/tessera/runtime"
)

// readRatings reads a MovieLens ratings file on every locality, each
// parsing its own byte range; maps the ids to dense indices in ascending
// id order (see mapIDs) and distributes the ratings to the owners of their
// users and items. Progress is shown on pc, for this locality's share.
func readRatings(ctx context.Context, comm *runtime.Communicator, here, parts int, path string, pc progress.Config) (*ratings, error) {
	var size int64
	if st, err := os.Stat(path); err == nil {
		size = st.Size()
	}
	lo, hi := byteRange(size, here, parts)
	ph := progress.Start(pc, fmt.Sprintf("reading %s (locality %d's share)", filepath.Base(path), here), hi-lo, progress.Bytes)
	sh, err := readShare(path, here, parts, goruntime.GOMAXPROCS(0), readBuffer, ph)
	ph.Finish()
	if err != nil {
		return nil, fmt.Errorf("reading ratings %s on locality %d: %w", path, here, err)
	}
	// Every locality learns every other's line count (for line numbers),
	// whether it found a bad line, and how many ratings it read.
	bad := 0.0
	if sh.bad != nil {
		bad = 1
	}
	counts, err := comm.AllGather(ctx, []float64{float64(sh.lines), bad, float64(sh.count())}).Get(ctx)
	if err != nil {
		return nil, err
	}
	before, total, firstBad := 0, 0, -1
	for d := range parts {
		if d < here {
			before += int(counts[3*d])
		}
		if firstBad < 0 && counts[3*d+1] != 0 {
			firstBad = d
		}
		total += int(counts[3*d+2])
	}
	switch {
	case sh.bad != nil:
		return nil, errorAt(path, before+sh.badLine, sh.bad, here)
	case firstBad >= 0:
		return nil, afterPeer(ctx, comm, fmt.Errorf("ratings %s: locality %d found a bad line", path, firstBad))
	case size == 0:
		return nil, fmt.Errorf("ratings %s line 1: the file is empty (at column 1; read by locality %d)", path, here)
	case total == 0:
		return nil, fmt.Errorf("ratings %s line %d: no ratings, only a header (at column 1; read by locality 0)", path, int(counts[0])+1)
	}
	m, err := mapIDs(ctx, comm, here, parts, sh.chunks)
	if err != nil {
		return nil, fmt.Errorf("ratings %s: %w", path, err)
	}
	if m.users < parts || m.items < parts {
		return nil, fmt.Errorf("ratings %s: %d users and %d items cannot be split over %d localities", path, m.users, m.items, parts)
	}
	local := sh.chunks
	sh.chunks = nil
	byUser, byItem, dup, err := distribute(ctx, comm, here, parts, m.users, m.items, local)
	if err != nil {
		return nil, fmt.Errorf("ratings %s: %w", path, err)
	}
	if err := agreeDuplicate(ctx, comm, here, m.items, dup, m.userIDs, m.itemIDs); err != nil {
		return nil, fmt.Errorf("ratings %s: %w", path, err)
	}
	return &ratings{users: m.users, items: m.items, byUser: byUser, byItem: byItem, userIDs: m.userIDs, itemIDs: m.itemIDs}, nil
}

// afterPeer returns err once the locality that found the problem, which
// reports it, has ended: this one waits for it at a barrier it never
// joins, so that the job's error is the one that names the problem.
func afterPeer(ctx context.Context, comm *runtime.Communicator, err error) error {
	if _, berr := comm.Barrier(ctx).Get(ctx); berr != nil {
		return fmt.Errorf("%w (%v)", err, berr)
	}
	return err
}

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
